"""Metric sinks: TensorBoard event files (tensorboardX) and an SQLite ``metrics`` table.

Both take the same ``{tag: value}`` dicts with stable, caller-chosen tags such as
"actions/like_post", "cascade/max_depth", "opinion/std", "network/follower_gini" or
"exposure/misinfo_share", so a run's curves can be watched live in TensorBoard and read
back from the run's SQLite journal afterwards (``oasis_gym.metrics.report``).
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "TensorBoardLogger",
    "MetricsTable",
    "create_schema",
    "insert",
    "read_metrics",
    "flatten_config",
    "layout_of",
    "MAIN_CURVES",
]

_HPARAM_TYPES = (bool, int, float, str)


def flatten_config(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts -> one level with dotted keys ("env.num_users"); leaves are untouched."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten_config(value, name + "."))
        else:
            out[name] = value
    return out


def _hparam_value(value: Any) -> bool | int | float | str:
    """Value as the hparams plugin can hold it: numbers/bools/str as is, the rest as text.

    An integer beyond 64 bits (a ``--seed`` of 2**64) is text: tensorboardX takes it through a
    numpy array, which has no number type for it.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        return str(value)
    if isinstance(value, _HPARAM_TYPES):
        return value
    return json.dumps(value, default=str) if isinstance(value, (list, tuple)) else str(value)


#: the Custom Scalars layout of a run (TensorBoardLogger.log_layout): tag regexes per chart
MAIN_CURVES: dict[str, dict[str, list[str]]] = {
    "1 opinions": {
        "opinion spread and polarization": [r"opinion/(std|esteban_ray|bimodality)"],
        "users moving to the extremes / to moderation": [r"opinion/to_.*_share"],
    },
    "2 exposure": {
        "misinformation and cross-cutting shares of the served feeds": [r"exposure/.*_share"],
        "feed diversity": [r"exposure/feed_diversity"],
    },
    "3 engagement and activity": {
        "engagement rate": [r"engagement/.*"],
        "active and acting users": [r"activity/(active|acting)_users"],
        "posts, shares and comments created": [r"activity/.*_created"],
    },
    "4 cascades": {
        "cascade size and shape": [r"cascade/(scale|depth|max_breadth|structural_virality)"],
        "new shares and spreading cascades": [r"cascade/(new_shares|spread_count)"],
    },
    "5 actions": {
        "actions per step (do_nothing apart)": [r"actions/(?!do_nothing)(?!invalid).*"],
        "do_nothing per step": [r"actions/do_nothing"],
        "rejected actions by reason": [r"invalid/.*"],
    },
    "6 network": {"inequality": [r"network/.*_gini"], "follows": [r"network/(new_follows|unfollows)"]},
}


def layout_of(tags: Iterable[str], layout: Mapping[str, Mapping[str, list[str]]] | None = None) -> dict:
    """`layout` (default `MAIN_CURVES`) with each chart's tag regexes replaced by the `tags` they
    match, sorted; a chart that matches none and a section left empty are dropped. Given the
    tags with a value other than 0 (`MetricsTable.nonzero_tags`), it is the layout a recorder
    writes at the end of an episode: the main curves without the series that stayed 0."""
    tags = sorted(set(tags))
    out: dict[str, dict[str, list[str]]] = {}
    for section, charts in (MAIN_CURVES if layout is None else layout).items():
        for chart, patterns in charts.items():
            matched = [t for t in tags if any(re.fullmatch(p, t) for p in patterns)]
            if matched:
                out.setdefault(section, {})[chart] = matched
    return out


class TensorBoardLogger:
    """Writes scalars, histograms and the run config to a TensorBoard log directory.

    Usage::

        with TensorBoardLogger("runs/exp1") as tb:
            tb.log_config(cfg)
            tb.log_scalars(step, {"opinion/std": 0.4})
    """

    def __init__(self, logdir: str | Path, *, flush_secs: int = 30, max_queue: int = 1000) -> None:
        from tensorboardX import SummaryWriter  # imported here: only loggers need it

        self.logdir = Path(logdir)
        self._writer = SummaryWriter(logdir=str(self.logdir), flush_secs=flush_secs, max_queue=max_queue)

    def log_scalars(self, step: int, values: Mapping[str, float]) -> None:
        """One scalar per tag at ``step``.

        NaN ("undefined this step", e.g. structural virality with no spread cascade) is
        skipped, leaving a gap in the curve; tensorboardX would otherwise warn on each.
        """
        for tag, value in values.items():
            v = float(value)
            if not math.isnan(v):
                self._writer.add_scalar(tag, v, global_step=int(step))

    def log_layout(self, layout: Mapping[str, Mapping[str, list[str]]] | None = None) -> None:
        """The Custom Scalars dashboard's layout: {section: {chart: [tag regexes]}}, each chart
        a multi-line plot of the tags it matches (default `MAIN_CURVES`: the main curves of a
        run grouped by what they measure, `do_nothing` apart from the actions). Written again,
        the latest one is what TensorBoard shows (its data provider keeps a run's last point)."""
        layout = MAIN_CURVES if layout is None else layout
        self._writer.add_custom_scalars(
            {
                section: {chart: ["Multiline", list(tags)] for chart, tags in charts.items()}
                for section, charts in layout.items()
            }
        )

    def log_histogram(self, tag: str, values: ArrayLike, step: int) -> None:
        """Histogram of the finite entries of ``values``; nothing is written when none is finite."""
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
        arr = arr[np.isfinite(arr)]
        if arr.size:
            self._writer.add_histogram(tag, arr, global_step=int(step))

    def log_config(self, config: Mapping[str, Any], metric_tags: tuple[str, ...] = ()) -> None:
        """Record the run configuration as text ("config" tag) and in the HParams dashboard.

        The hparams summaries go into this run's own event file (tensorboardX's
        ``add_hparams`` would open a separate sub-run), so the HParams table links the
        config to this run's scalars; ``metric_tags`` are the scalar tags listed as its
        metric columns.
        """
        from tensorboardX.summary import hparams

        flat = flatten_config(config)
        text = "```json\n" + json.dumps(dict(config), indent=2, sort_keys=True, default=str) + "\n```"
        self._writer.add_text("config", text, global_step=0)
        hp = {k: _hparam_value(v) for k, v in flat.items() if v is not None}
        if hp:
            exp, ssi, sei = hparams(hp, {tag: 0.0 for tag in metric_tags})
            fw = self._writer._get_file_writer()
            for summary in (exp, ssi, sei):
                fw.add_summary(summary)

    def flush(self) -> None:
        """Write pending events to disk."""
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self._writer.close()

    def __enter__(self) -> TensorBoardLogger:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class MetricsTable:
    """The SQLite ``metrics(step, tag, value)`` table that mirrors the TensorBoard scalars.

    It lives in the run's journal database so a report can be made from the DB alone. The
    caller owns the transaction (the simulator writes one transaction per step): nothing
    here commits. NaN is stored as NULL (SQLite has no NaN) and read back as NaN.
    """

    TABLE = "metrics"

    @staticmethod
    def create_schema(conn: sqlite3.Connection) -> None:
        """Create the table and its (tag, step) index if missing."""
        conn.execute("CREATE TABLE IF NOT EXISTS metrics (step INTEGER, tag TEXT, value REAL)")
        conn.execute("CREATE INDEX IF NOT EXISTS metrics_tag_step ON metrics (tag, step)")

    @staticmethod
    def insert(conn: sqlite3.Connection, step: int, values: Mapping[str, float]) -> None:
        """Insert one row per tag at ``step`` (NaN as NULL), in the caller's transaction."""
        rows = [(int(step), str(tag), _sql_float(v)) for tag, v in values.items()]
        conn.executemany("INSERT INTO metrics (step, tag, value) VALUES (?, ?, ?)", rows)

    @staticmethod
    def nonzero_tags(conn: sqlite3.Connection) -> list[str]:
        """The tags with at least one value other than 0 (NaN, stored as NULL, is none)."""
        return [r[0] for r in conn.execute("SELECT tag FROM metrics GROUP BY tag HAVING MAX(ABS(value)) > 0")]

    @staticmethod
    def read(conn: sqlite3.Connection) -> dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]]:
        """tag -> (steps, values), each sorted by step."""
        rows = conn.execute("SELECT tag, step, value FROM metrics ORDER BY tag, step").fetchall()
        if not rows:
            return {}
        tags = np.array([r[0] for r in rows], dtype=object)
        steps = np.array([r[1] for r in rows], dtype=np.int64)
        vals = np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=np.float64)
        cuts = np.flatnonzero(tags[1:] != tags[:-1]) + 1
        starts = np.r_[0, cuts]
        ends = np.r_[cuts, len(rows)]
        return {str(tags[s]): (steps[s:e], vals[s:e]) for s, e in zip(starts, ends)}


def _sql_float(value: float) -> float | None:
    v = float(value)
    return None if math.isnan(v) else v


# module-level spellings of the MetricsTable operations
create_schema = MetricsTable.create_schema
insert = MetricsTable.insert
read_metrics = MetricsTable.read
