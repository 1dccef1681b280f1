"""Online metrics: the emergent, society-level measures of a running simulation, every step.

This module holds the recorder; its parts: the repost forest in ``metrics.cascades`` (re-exported
here), the per-interval counters in ``metrics.interval``, the tracked cascades' tags and curves
in ``metrics.tracked_cascades``, the full-step measures in ``metrics.society``, the running
state a resume continues from in ``metrics.recorder_state``.

`MetricsRecorder.attach(sim, logdir)` registers a step hook on a `Simulation`. The hook runs
inside the step's single SQLite transaction, computes the metrics from the in-memory state
(the formulas of ``oasis_gym.metrics.formulas``) and writes each value twice: to TensorBoard
(`TensorBoardLogger`, one run folder ``<logdir>/episode_<k>`` per episode) and to the
``metrics(step, tag, value)`` table of the run's journal, in the step's own transaction, so
the database alone holds a complete, consistent record that ``make_report(db)`` can plot.

Step numbers are the platform step being committed, the same ``step`` as the trace rows.

Cost per step. Everything computed every step is O(this step's activity): action and result
counts come from the StepOutcome, exposure from the feeds served this step (``sim.obs``),
cascades from an incremental repost forest that only touches the posts created since the
previous step (and their ancestors). The metrics that must look at every user or edge
(opinion statistics, Gini coefficients, assortativity) run only every ``every_full`` steps
(default: every step on a small platform, every FULL_AUTO_EVERY = 10 steps once users +
follow edges exceed FULL_AUTO_SIZE = 200k). Measured at 100k users (1.1M follow edges),
1% active: ~4 ms CPU per light step, ~70 ms per full step, on a ~55 ms simulation step.

Usage::

    rec = MetricsRecorder.attach(env.sim, "runs/exp1")   # or MetricsRecorder(logdir).attach(sim)
    for t in range(T):
        rec.record_llm(llm_stats)                          # optional
        env.step(actions)
    rec.finalize()                                         # before the next reset (close() too)
    env.reset(seed=1); rec.on_reset(env.sim)               # next episode (optional: auto-detected)

The tags it writes, and how to read them back: docs/metrics.md.

Cascades (the repost forest, the ``cascade_curve`` table): see ``metrics.cascades``; the
curves are dense from minute 0 to the last step a cascade was tracked, and ``finalize()``
completes every curve to the last step.
"""

from __future__ import annotations

import math
import sqlite3
import time
import traceback
import warnings
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .cascades import CASCADE_CURVE_SCHEMA, CASCADE_TREE_SCHEMA, CascadeForest, read_cascade_curves
from .herd import herd_values
from .interval import Interval as _Interval
from .interval import count_actions, count_exposure, interval_values
from .llm_stats import llm_rates
from .recorder_state import RecorderState
from .society import society_values
from .tensorboard import MetricsTable, TensorBoardLogger, layout_of
from .tracked_cascades import TrackedCascades

if TYPE_CHECKING:  # pragma: no cover
    from ..platform import Platform
    from ..sim import Simulation, StepOutcome

__all__ = ["MetricsRecorder", "CascadeForest", "CASCADE_CURVE_SCHEMA", "read_cascade_curves"]

IntArray = NDArray[np.int64]

# every_full=None: the full (O(users + edges + posts)) metrics run at every logged step while
# users + follow edges stay below FULL_AUTO_SIZE, else every FULL_AUTO_EVERY steps
FULL_AUTO_SIZE = 200_000
FULL_AUTO_EVERY = 10


# --------------------------------------------------------------------------- recorder


class _ClassOrInstanceMethod:
    """A method that runs one function when called on the class, another on an instance:
    ``MetricsRecorder.attach(sim, logdir, ...)`` creates and attaches, ``rec.attach(sim)``
    attaches an existing recorder."""

    def __init__(self, on_class, on_instance) -> None:
        self.on_class, self.on_instance = on_class, on_instance
        self.__doc__ = on_class.__doc__

    def __get__(self, obj, cls=None):
        if obj is None:
            return self.on_class.__get__(cls, type(cls))
        return self.on_instance.__get__(obj, cls)


class MetricsRecorder(RecorderState, TrackedCascades):
    """Streams a Simulation's emergent metrics to TensorBoard and the journal every step.

    Create with `MetricsRecorder.attach(sim, logdir)`. Every `Simulation.reset` starts a new
    journal: call `on_reset(sim)` right after it, or let the hook notice the new journal on
    the first step (it then reads the episode's starting opinions back from the journal's
    user_profile table). The same holds after `Simulation.resume`: the metrics continue at
    the resumed step, the cascade forest is rebuilt from the restored posts. Call
    `finalize()` at the end of an episode, BEFORE the next reset (a reset replaces the
    database file), to complete the cascade curves and flush TensorBoard.

    Args:
        logdir: TensorBoard folder (episode k logs into ``<logdir>/episode_<k>``); None
            writes the journal's metrics table only.
        every: log every `every` steps; counts cover the steps since the previous log.
        every_full: run the O(users + edges + posts) metrics (opinion/*, the Gini, assortativity
            and neighbourhood tags) every `every_full` steps, a multiple of `every`. None: at
            every logged step while users + follow edges <= FULL_AUTO_SIZE, else every
            FULL_AUTO_EVERY steps. `finalize()` adds them for the last step if it had none.
        tracked_posts: original posts whose cascades get per-post tags and curves; None: the
            `n_top` largest cascades (by nodes, then lower id), tagged by rank.
        histograms_every: opinion / follower histograms at the first logged step and then at
            logged steps at least that many steps after the previous ones.
        herd_groups, herd_kind: treatment groups of post or comment ids (`set_herd_groups`).
        strict: re-raise a failure of the hook (it aborts the step's commit). Otherwise a
            failure is warned about, counted in `errors`, and the step is journaled without
            its metrics: metrics must never cost a run its journal.
        flush_secs: TensorBoard flush interval.
    """

    def __init__(
        self,
        logdir: str | Path | None,
        *,
        every: int = 1,
        every_full: int | None = None,
        tracked_posts: ArrayLike | None = None,
        n_top: int = 3,
        histograms_every: int = 10,
        herd_groups: Mapping[str, ArrayLike] | None = None,
        herd_kind: str = "post",
        strict: bool = False,
        flush_secs: int = 30,
    ) -> None:
        if every < 1 or (every_full is not None and every_full < 1) or histograms_every < 1:
            raise ValueError("every, every_full and histograms_every must be >= 1")
        if (every_full or every) % every:
            raise ValueError("every_full must be a multiple of every")
        self.logdir = None if logdir is None else str(logdir)
        self.every, self.histograms_every = every, histograms_every
        self.every_full_option = every_full
        self.every_full = every_full or every
        self.tracked = None if tracked_posts is None else np.unique(np.asarray(tracked_posts, dtype=np.int64))
        self.n_top = 0 if self.tracked is not None else int(n_top)
        self.strict, self.flush_secs = strict, flush_secs
        self.herd_groups: dict[str, IntArray] = {}
        self.herd_kind = "post"
        if herd_groups:
            self.set_herd_groups(herd_groups, herd_kind)
        self.episode = -1
        self.errors = 0
        self.hook_seconds: deque[float] = deque(maxlen=100_000)  # wall time of each hook call
        self.sim: Simulation | None = None
        self.tb: TensorBoardLogger | None = None
        self._conn: sqlite3.Connection | None = None
        self._started_at: int | None = None
        self._llm: dict[str, float] = {}
        self._episode_started_in_step = False

    # ---------------------------------------------------------------- lifecycle
    def _attach_new(cls, sim: Simulation, logdir: str | Path | None, **options: Any) -> MetricsRecorder:
        """``MetricsRecorder.attach(sim, logdir, ...)``: create a recorder and attach it to `sim`.
        Options: every, every_full, tracked_posts, n_top, histograms_every, herd_groups,
        herd_kind, strict, flush_secs (see the class)."""
        return cls(logdir, **options)._attach(sim)

    def _attach(self, sim: Simulation) -> MetricsRecorder:
        """``recorder.attach(sim)``: register the hook on ``sim.step_hooks``; a running episode
        (a journal already open) starts being recorded now."""
        self.sim = sim
        if self not in sim.step_hooks:
            sim.step_hooks.append(self)
        if sim.journal is not None:
            self.on_reset(sim)
        return self

    attach = _ClassOrInstanceMethod(_attach_new, _attach)

    def detach(self) -> None:
        """Finish the episode (see `close`) and unregister the hook."""
        if self.sim is not None and self in self.sim.step_hooks:
            self.sim.step_hooks.remove(self)
        self.close()

    def episode_logdir(self) -> str:
        """The TensorBoard folder of the current episode, ``<logdir>/episode_<k>``."""
        return str(Path(self.logdir) / f"episode_{self.episode}")

    def on_reset(self, sim: Simulation) -> None:
        """Start an episode on the journal `sim.reset()` (or `sim.resume()`) just opened: schema,
        opinion baseline, the cascade forest over the posts that exist now, the run config."""
        if sim.journal.conn is self._conn and self._started_at == sim.platform.step:
            return  # this episode already started here (e.g. attach followed by on_reset)
        self._start_episode(sim, sim.journal.conn, from_journal=sim.platform.step > 0)

    def _start_episode(self, sim: Simulation, conn: sqlite3.Connection, from_journal: bool = True) -> None:
        self._close_writer()
        self.sim, self._conn, self._started_at = sim, conn, sim.platform.step
        self.episode += 1
        pf = sim.platform
        MetricsTable.create_schema(conn)
        conn.execute(CASCADE_CURVE_SCHEMA)
        conn.execute(CASCADE_TREE_SCHEMA)
        self._load_state(sim, conn, from_journal)
        config = {
            "config": dict(vars(sim.config)),
            "seed": sim.seed,
            "episode": self.episode,
            "n_users": pf.n_users,
            "metrics": self.settings(),
        }
        sim.journal.set_meta(conn, {"metrics_config": self.settings()})
        if self.logdir is not None:
            self.tb = TensorBoardLogger(self.episode_logdir(), flush_secs=self.flush_secs)
            self.tb.log_config(config, metric_tags=("opinion/std", "cascade/scale", "exposure/misinfo_share"))
            self.tb.log_layout()  # the Custom Scalars page: the main curves, grouped

    def _writer(self) -> TensorBoardLogger | None:
        """The episode's TensorBoard writer, reopened if `finalize` closed it mid-episode."""
        if self.tb is None and self.logdir is not None and self.episode >= 0:
            self.tb = TensorBoardLogger(self.episode_logdir(), flush_secs=self.flush_secs)
        return self.tb

    def _auto_every_full(self, pf: Platform) -> int:
        """Every logged step for small platforms; every FULL_AUTO_EVERY steps (rounded up to a
        multiple of `every`) once users + follow edges exceed FULL_AUTO_SIZE."""
        if pf.n_users + len(pf.rel["follow"]) <= FULL_AUTO_SIZE:
            return self.every
        return self.every * -(-FULL_AUTO_EVERY // self.every)

    def settings(self) -> dict[str, Any]:
        """The recorder's options as JSON-able values (journaled in meta ``metrics_config``)."""
        return {
            "every": self.every,
            "every_full": self.every_full,
            "histograms_every": self.histograms_every,
            "tracked_posts": None if self.tracked is None else self.tracked.tolist(),
            "n_top": self.n_top,
            "herd_groups": sorted(self.herd_groups),
            "herd_kind": self.herd_kind,
        }

    def finalize(self) -> None:
        """End of episode: write what the last step has not logged yet (the open interval of
        counters when ``every`` > 1, the full metrics when ``every_full`` > 1), complete every
        tracked cascade's curve to the last step, write the Custom Scalars layout again without
        the series that stayed 0 (`layout_of`), flush and close TensorBoard (steps taken after
        it reopen the writer). Call it before the next reset; safe to call twice."""
        sim, conn = self.sim, self._conn
        if (
            sim is not None
            and conn is not None
            and sim.journal is not None
            and sim.journal.conn is conn
            and self._last_step is not None
        ):
            pf, step = sim.platform, self._last_step
            conn.execute("BEGIN")
            try:
                self._write_curves(conn, pf, sorted(self._ever_tracked), self._last_minute, final=True)
                interval, full = self._last_logged_step != step, self._last_full_step != step
                if interval or full:
                    self._log(conn, pf, step, self._last_tracked, interval=interval, full=full)
                self._save_state(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            if self._writer() is not None:  # the main curves again, without the series that stayed 0
                self.tb.log_layout(layout_of(MetricsTable.nonzero_tags(conn)))
        self._close_writer()

    def close(self) -> None:
        """`finalize()` when the episode's journal is still open; the TensorBoard writer is
        closed in any case."""
        self.finalize()

    def _close_writer(self) -> None:
        if self.tb is not None:
            self.tb.close()
            self.tb = None

    # ---------------------------------------------------------------- inputs from the caller
    def record_llm(self, stats: Mapping[str, Any]) -> None:
        """LLM call statistics (tokens, seconds, counts); numeric values are summed until the
        next logged step and written as ``llm/<key>``, plus their rates (:func:`llm_rates`)."""
        for k, v in stats.items():
            if isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)) and math.isfinite(v):
                self._llm[k] = self._llm.get(k, 0.0) + float(v)

    def set_herd_groups(self, groups: Mapping[str, ArrayLike], kind: str = "post") -> None:
        """Treatment groups of posts or comments (kind "post" / "comment") for herd/<group>_mean_score."""
        if kind not in ("post", "comment"):
            raise ValueError(f"herd kind must be 'post' or 'comment', got {kind!r}")
        self.herd_kind = kind
        self.herd_groups = {str(g): np.asarray(ids, dtype=np.int64).reshape(-1) for g, ids in groups.items()}

    # ---------------------------------------------------------------- the hook
    def __call__(self, sim: Simulation, out: StepOutcome, conn: sqlite3.Connection) -> None:
        """The step hook: count, fold and log this step inside its transaction (see the class)."""
        t0 = time.perf_counter()
        self._episode_started_in_step = conn is not self._conn
        try:
            if self._episode_started_in_step:
                self._start_episode(sim, conn)
            self._step(sim, out, conn)
        except Exception:
            if self.strict:
                raise
            self.errors += 1
            warnings.warn(
                f"metrics hook failed (step kept, metrics skipped):\n{traceback.format_exc()}",
                RuntimeWarning,
                stacklevel=2,
            )
        self.hook_seconds.append(time.perf_counter() - t0)

    def _step(self, sim: Simulation, out: StepOutcome, conn: sqlite3.Connection) -> None:
        pf, step = sim.platform, int(sim.platform.step)
        acc = self._acc
        count_actions(acc, out, sim.obs.users)
        count_exposure(acc, pf, sim.obs)
        acc.n["new_shares"] += self._fold(pf, conn)
        tracked = self._tracked_roots(pf)
        self._write_curves(conn, pf, tracked, int(pf.minute))
        self._last_step, self._last_minute, self._last_tracked = step, int(pf.minute), tracked
        if step % self.every == 0:
            self._log(conn, pf, step, tracked, interval=True, full=step % self.every_full == 0)
        self._save_state(conn)

    def _log(
        self, conn: sqlite3.Connection, pf: Platform, step: int, tracked: IntArray, *, interval: bool, full: bool
    ) -> None:
        """Write one metrics row set (inside the caller's transaction) and the same to TensorBoard."""
        values: dict[str, float] = {}
        if interval:
            values = interval_values(self._acc, pf)
            values |= self.forest.summary()
            values |= self._tracked_values(tracked)
            values |= herd_values(pf, self.herd_groups, self.herd_kind)
            values |= {f"llm/{k}": v for k, v in self._llm.items()}
            values |= {f"llm/{k}": v for k, v in llm_rates(self._llm).items()}
        if full:
            values |= self._full_metrics(pf)
        conn.execute("SAVEPOINT metrics")
        try:
            MetricsTable.insert(conn, step, values)
            conn.execute("RELEASE metrics")
        except BaseException:
            conn.execute("ROLLBACK TO metrics")
            conn.execute("RELEASE metrics")
            raise
        if interval:
            self._acc, self._llm, self._last_logged_step = _Interval(), {}, step
        if full:
            self._last_full_step = step
        tb = self._writer()
        if tb is not None:
            tb.log_scalars(step, values)
            last = self._last_hist_step
            if interval and (last is None or step - last >= self.histograms_every):
                tb.log_histogram("opinion/values", pf.u_opinion.a, step)
                tb.log_histogram("network/followers", pf.u_followers.a, step)
                self._last_hist_step = step

    # ---------------------------------------------------------------- per-step pieces
    def _full_metrics(self, pf: Platform) -> dict[str, float]:
        """The O(users + edges + posts) metrics of a full step (metrics.society)."""
        op = pf.u_opinion.a
        if self.baseline.size < op.size:  # users added mid-episode have no baseline
            self.baseline = np.r_[self.baseline, np.full(op.size - self.baseline.size, np.nan)]
        return society_values(pf, self.baseline)
