"""Metrics of a finished run recomputed from its tables: for OASIS databases (which have no
`metrics` table) and journals written without a metrics recorder.

One implementation: each step's values come from the online recorder's own code
(`metrics.interval`'s `count_actions` / `interval_values` over the step's trace rows, the
incremental `CascadeForest` over the posts created up to the step) and `metrics.society`.

What the tables allow, per step: `actions/*` and `invalid/*` (from `trace`; OASIS traces only
accepted actions), `activity/*` (active users = users with a trace row in the step),
`engagement/per_active_user`, `network/new_follows|unfollows`, `cascade/*` (from
`post.original_post_id` and `created_at`); at the last step `network/follower_gini` and
`network/attention_gini`. What they do not allow is listed in the notes: opinions (OASIS
stores none), exposure and engagement per impression (no history of served feeds), and
cascade parents use the follow graph as it is at the end (unfollowed edges are deleted).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from ..actions import ACTION_BY_NAME, RESULT_NAMES
from ..platform import Platform
from ..platform.journal_file import connect_read
from ..platform.oasis_import import is_oasis_db, load_oasis
from .cascades import CascadeForest
from .interval import Interval as _Interval
from .interval import count_actions, interval_values
from .society import inequality_values

__all__ = ["offline_metrics"]

# tags whose inputs the tables do not hold (they need served feeds or the graph over time)
_UNAVAILABLE = ("engagement/rate", "exposure/", "network/follow_edges")
_RESULT = {name: k for k, name in enumerate(RESULT_NAMES)}


class _UpTo:
    """The platform with only its first `n_posts` posts visible (the posts up to a step)."""

    def __init__(self, pf: Platform, n_posts: int):
        self._pf, self.n_posts = pf, n_posts

    def __getattr__(self, name: str):
        return getattr(self._pf, name)


def offline_metrics(db_path: str | Path) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], list[str]]:
    """{tag: (steps, values)} and notes, from an OASIS database or an oasis-gym journal."""
    db_path = Path(db_path)
    notes: list[str] = []
    oasis = is_oasis_db(db_path)
    if oasis:
        loaded = load_oasis(db_path)
        pf, trace = loaded.platform, _oasis_trace(db_path, loaded.trace_step)
        if loaded.mismatches:
            notes.append(f"stored counters that disagree with the rows (the rows are used): {loaded.mismatches}")
        notes.append("no opinions in an OASIS database: opinion heatmap and opinion/* not available")
        notes.append("OASIS traces accepted actions only: invalid/* not available")
    else:
        pf, trace = Platform.from_db(db_path), _journal_trace(db_path)
        if trace.pop("imported"):
            notes.append("the steps imported from OASIS hold accepted actions only (OASIS traces no rejections)")
    notes.append(
        "not computable from the tables: engagement/rate and exposure/* (no history of served feeds), "
        "network/follow_edges over time (unfollowed edges are deleted); cascade parents use the "
        "final follow graph; active users = users with a trace row in the step"
    )
    skipped = sorted({name for name in trace["name"] if name not in ACTION_BY_NAME and name != "invalid"})
    if skipped:
        notes.append(f"trace actions outside the oasis-gym action set, not counted: {', '.join(skipped)}")
    if not len(trace["step"]) and not pf.n_posts:
        return {}, notes
    post_step = np.maximum.accumulate(pf.p_step.a) if pf.n_posts else pf.p_step.a
    steps = np.unique(np.r_[trace["step"], post_step]).astype(np.int64)
    codes = np.array([ACTION_BY_NAME[n] if n in ACTION_BY_NAME else -1 for n in trace["name"]], dtype=np.int64)
    known = (codes >= 0) | (np.asarray(trace["name"], dtype=object) == "invalid")
    results = np.array([_RESULT.get(r, 0) for r in trace["result"]], dtype=np.int64)
    series: dict[str, list[float]] = defaultdict(list)
    forest = CascadeForest()
    for s in steps.tolist():
        rows = np.flatnonzero((trace["step"] == s) & known)
        acc = _Interval()
        out = SimpleNamespace(actions=codes[rows], results=results[rows], users=trace["user"][rows], ignored=())
        count_actions(acc, out, np.unique(trace["user"][rows]))
        view = _UpTo(pf, int(np.searchsorted(post_step, s, side="right")))
        _, new_shares = forest.update(view)
        acc.n["new_shares"] += new_shares
        values = interval_values(acc, view) | forest.summary()
        for tag, v in values.items():
            if not tag.startswith(_UNAVAILABLE) and not (oasis and tag.startswith("invalid/")):
                series[tag].append(v)
    metrics = {tag: (steps, np.asarray(v, dtype=np.float64)) for tag, v in series.items()}
    last = steps[-1:]
    for tag, value in inequality_values(pf).items():
        metrics[tag] = (last, np.array([value]))
    return metrics, notes


def _oasis_trace(path: Path, steps: np.ndarray) -> dict:
    conn = connect_read(path)
    try:
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'trace'").fetchone()
        rows = conn.execute("SELECT user_id, action FROM trace ORDER BY rowid").fetchall() if has else []
    finally:
        conn.close()
    return {
        "user": np.array([r[0] for r in rows], dtype=np.int64),
        "name": [r[1] for r in rows],
        "result": ["ok"] * len(rows),
        "step": np.asarray(steps, dtype=np.int64),
    }


def _journal_trace(path: Path) -> dict:
    conn = connect_read(path)
    try:
        rows = conn.execute("SELECT user_id, action, result, step FROM trace").fetchall()
        imported = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'oasis_id_map'").fetchone() is not None
    finally:
        conn.close()
    return {
        "user": np.array([r[0] for r in rows], dtype=np.int64),
        "name": [r[1] for r in rows],
        "result": [r[2] or "ok" for r in rows],
        "step": np.array([r[3] for r in rows], dtype=np.int64),
        "imported": imported,
    }
