"""What the metrics recorder carries from step to step, and how a resume or a failed step
gets it back: the opinion baseline, the cascade forest rebuilt from ``cascade_tree``, the
interval counters and the curves so far, saved in the journal's meta after every step.

A mixin of ``MetricsRecorder`` (metrics.online): a resumed run logs exactly what the
uninterrupted one does.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .cascades import CascadeForest
from .interval import Interval as _Interval

if TYPE_CHECKING:  # pragma: no cover
    from ..platform import Platform
    from ..sim import Simulation

IntArray = NDArray[np.int64]

# meta key of the recorder's running state after each step (what a resume continues from)
STATE_KEY = "metrics_state"


class RecorderState:
    """Load, save and roll back the recorder's running state (see ``MetricsRecorder``)."""

    def _baseline(self, pf: Platform, conn: sqlite3.Connection, from_journal: bool) -> np.ndarray:
        """Opinions at episode start: the platform's now, or (first noticed mid-step, or after a
        resume) the journal's user_profile rows, written once by the reset commit."""
        now = pf.u_opinion.a.astype(np.float64)
        if not from_journal:
            return now
        try:
            rows = conn.execute("SELECT user_id, opinion FROM user_profile ORDER BY user_id").fetchall()
        except sqlite3.DatabaseError:
            return now
        if len(rows) != now.size:
            return now
        return np.array([np.nan if r[1] is None else r[1] for r in rows], dtype=np.float64)

    def _load_state(self, sim: Simulation, conn: sqlite3.Connection, from_journal: bool) -> None:
        """The recorder's state as of the journal's last step: fresh at an episode's start; on
        a resumed run (or after a failed step) the state that step saved (`_save_state`), the
        cascade forest rebuilt with the parents of cascade_tree, and the curves written so
        far read back from cascade_curve. So a resumed run logs exactly what the
        uninterrupted one does."""
        pf = sim.platform
        saved = self._read_meta(conn, STATE_KEY) if from_journal else None
        self.every_full = self.every_full_option or self._auto_every_full(pf)
        self.baseline = self._baseline(pf, conn, from_journal)
        self.forest = CascadeForest()
        self._acc = _Interval()
        self._curves: dict[int, tuple[int, tuple[int, int, int]]] = {}  # root -> (last minute, values)
        self._ever_tracked: set[int] = set()
        self._curve_live: set[int] = set()
        self._last_step: int | None = None
        self._last_logged_step: int | None = None
        self._last_full_step: int | None = None
        self._last_hist_step: int | None = None
        self._last_minute = int(pf.minute)
        self._last_tracked = np.empty(0, dtype=np.int64)
        parents = None
        if from_journal:
            parents = np.full(pf.n_posts, -1, dtype=np.int64)
            rows = np.asarray(conn.execute("SELECT post_id, parent_id FROM cascade_tree").fetchall(), dtype=np.int64)
            rows = rows.reshape(-1, 2)
            rows = rows[rows[:, 0] < pf.n_posts]
            parents[rows[:, 0]] = rows[:, 1]
        self._fold(pf, conn, parents)
        if saved is None:
            return
        self.every_full = int(saved["every_full"])
        self.forest.set_aggregates(saved["forest"])
        self._acc.actions[:] = saved["acc"]["actions"]
        self._acc.results[:] = saved["acc"]["results"]
        self._acc.n.update(saved["acc"]["n"])
        for key, ids in saved["acc"].get("users", {}).items():  # the interval's distinct users so far
            self._acc.users[key] = np.asarray(ids, dtype=np.int64)
        self._llm = dict(saved["llm"])
        (self._last_step, self._last_minute, self._last_logged_step, self._last_full_step, self._last_hist_step) = (
            saved[k] for k in ("last_step", "last_minute", "last_logged_step", "last_full_step", "last_hist_step")
        )
        self._last_tracked = np.asarray(saved["last_tracked"], dtype=np.int64)
        self._curve_live = set(saved["curve_live"])
        for c, minute, *values in conn.execute(
            "SELECT post_id, minute, scale, depth, max_breadth FROM cascade_curve c WHERE minute ="
            " (SELECT MAX(minute) FROM cascade_curve d WHERE d.post_id = c.post_id)"
        ):
            self._curves[c] = (minute, tuple(values))
            self._ever_tracked.add(c)

    def _fold(self, pf: Platform, conn: sqlite3.Connection, parents: IntArray | None = None) -> int:
        """Fold the new posts into the forest, journal the parents of new shares (those not
        in `parents` already); returns the new shares."""
        n0 = self.forest.n_seen
        _, new_shares = self.forest.update(pf, self.n_top, parents)
        ids = np.arange(n0, self.forest.n_seen, dtype=np.int64)
        par = self.forest.parent.a[ids]
        new = (par >= 0) if parents is None else (par >= 0) & (parents[ids] < 0)
        if new.any():
            conn.executemany(
                "INSERT OR REPLACE INTO cascade_tree (post_id, parent_id) VALUES (?, ?)",
                zip(ids[new].tolist(), par[new].tolist()),
            )
        return new_shares

    @staticmethod
    def _read_meta(conn: sqlite3.Connection, key: str) -> Any:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def _save_state(self, conn: sqlite3.Connection) -> None:
        """What a resume needs beyond the tables (see `_load_state`), in the step's transaction."""
        acc = self._acc
        self.sim.journal.set_meta(
            conn,
            {
                STATE_KEY: {
                    "every_full": self.every_full,
                    "forest": self.forest.aggregates(),
                    "acc": {
                        "actions": acc.actions.tolist(),
                        "results": acc.results.tolist(),
                        "n": {k: float(v) for k, v in acc.n.items()},
                        "users": {k: v.tolist() for k, v in acc.users.items()},
                    },
                    "llm": self._llm,
                    "last_step": self._last_step,
                    "last_minute": self._last_minute,
                    "last_logged_step": self._last_logged_step,
                    "last_full_step": self._last_full_step,
                    "last_hist_step": self._last_hist_step,
                    "last_tracked": np.asarray(self._last_tracked).tolist(),
                    "curve_live": sorted(self._curve_live),
                }
            },
        )

    def rollback_step(self, sim: Simulation) -> None:
        """A step this hook ran in failed and was rolled back: return to the state of the
        journal's last step (an episode first noticed in that step starts again)."""
        if self._episode_started_in_step:
            self._conn, self._started_at = None, None
            self.episode -= 1
            self._close_writer()
        elif sim.journal is not None and self._conn is sim.journal.conn:
            self._load_state(sim, self._conn, from_journal=True)
