"""The report's plots: PNGs drawn from a run's metric series and journal tables.

Drawn with matplotlib's object API on an Agg canvas (no pyplot, no global backend switch), so
importing this module never changes the caller's matplotlib state. A missing or unreadable
table skips its plot and says why in ``notes`` (summary.txt lists them).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Metrics",
    "table_exists",
    "opinion_grid",
    "metric_plots",
    "opinion_heatmap",
    "cascade_curves_plot",
    "follower_ccdf",
]

#: {tag: (steps, values)}, as read_metrics returns
Metrics = dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]]

_OPINION_BINS = 41
_FETCH_ROWS = 500_000


def _figure(n_panels: int = 1, width: float = 8.0, height: float = 4.5):
    """Figure on an Agg canvas with n stacked-in-a-grid axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = 1 if n_panels == 1 else 2
    rows = -(-n_panels // cols)
    fig = Figure(figsize=(width if cols == 1 else 1.25 * width, height if rows == 1 else 0.7 * height * rows))
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(n_panels)]
    return fig, axes


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    return path


def table_exists(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the database has a table or view of that name."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?", (name,)).fetchone()
    return row is not None


def _group(tag: str) -> str:
    return tag.split("/", 1)[0] if "/" in tag else "misc"


# --------------------------------------------------------------------------- plots


def _plot_series(metrics: Metrics, tags: Sequence[str], title: str, path: Path, one_axes: bool) -> Path:
    """Lines over steps: all tags on one axes (counts) or one panel per tag (mixed scales)."""
    if one_axes:
        fig, (ax,) = _figure(1)
        for tag in tags:
            steps, vals = metrics[tag]
            ax.plot(steps, vals, label=tag.split("/", 1)[-1], linewidth=1.2, marker="o" if len(steps) == 1 else None)
        ax.set_xlabel("step")
        ax.set_ylabel("count per step")
        ax.legend(fontsize=7, ncol=2 if len(tags) > 8 else 1, loc="upper left")
        ax.set_title(title)
        return _save(fig, path)
    fig, axes = _figure(len(tags))
    for ax, tag in zip(axes, tags):
        steps, vals = metrics[tag]
        ax.plot(steps, vals, linewidth=1.2, marker="o" if len(steps) == 1 else None)  # one-point series: a marker
        ax.set_title(tag, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(title)
    return _save(fig, path)


def opinion_grid(conn: sqlite3.Connection) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(steps, bin edges, share-of-users grid [step, bin]) over ALL users: the journal's
    `opinion` table holds only the users whose opinion changed at a step, so the current
    opinions (starting from `user_profile.opinion`) are carried forward and binned after
    each recorded step. None when there is no opinion history."""
    steps = np.array(
        [r[0] for r in conn.execute("SELECT DISTINCT step FROM opinion WHERE opinion IS NOT NULL ORDER BY step")],
        dtype=np.int64,
    )
    if steps.size == 0:
        return None
    size = int(conn.execute("SELECT MAX(user_id) FROM opinion").fetchone()[0]) + 1
    base = np.zeros((0, 2))
    if table_exists(conn, "user_profile"):
        base = np.asarray(
            conn.execute("SELECT user_id, opinion FROM user_profile WHERE opinion IS NOT NULL").fetchall(),
            dtype=np.float64,
        ).reshape(-1, 2)
        size = max(size, int(base[:, 0].max()) + 1 if len(base) else 0)
    current = np.full(size, np.nan)
    current[base[:, 0].astype(np.int64)] = base[:, 1]
    edges = np.linspace(-1.0, 1.0, _OPINION_BINS + 1)
    grid = np.zeros((steps.size, _OPINION_BINS), dtype=np.float64)
    cur = conn.execute("SELECT step, user_id, opinion FROM opinion WHERE opinion IS NOT NULL ORDER BY step, rowid")
    k = 0
    while rows := cur.fetchmany(_FETCH_ROWS):
        arr = np.asarray(rows, dtype=np.float64)
        for step in np.unique(arr[:, 0]).astype(np.int64):  # a chunk may span steps
            while steps[k] < step:
                grid[k] = _share_hist(current, edges)
                k += 1
            sel = arr[:, 0] == step
            current[arr[sel, 1].astype(np.int64)] = arr[sel, 2]
    grid[k] = _share_hist(current, edges)
    return steps, edges, grid


def opinion_heatmap(conn: sqlite3.Connection, path: Path, notes: list[str]) -> Path | None:
    """Step x opinion-bin heatmap of the share of all users (see `opinion_grid`)."""
    if not table_exists(conn, "opinion"):
        notes.append("no 'opinion' table: opinion heatmap skipped")
        return None
    try:
        result = opinion_grid(conn)
    except (sqlite3.DatabaseError, TypeError, ValueError, IndexError) as exc:
        notes.append(f"'opinion' table unreadable ({exc}): opinion heatmap skipped")
        return None
    if result is None:
        notes.append("'opinion' table is empty: opinion heatmap skipped")
        return None
    steps, edges, grid = result
    fig, (ax,) = _figure(1)
    # column edges from the recorded steps, so opinions sampled every k steps stay in place
    last_width = steps[-1] - steps[-2] if steps.size > 1 else 1
    x_edges = np.r_[steps, steps[-1] + last_width].astype(np.float64)
    im = ax.pcolormesh(x_edges, edges, grid.T, cmap="viridis", shading="flat")
    fig.colorbar(im, ax=ax, label="share of users")
    ax.set_xlabel("step")
    ax.set_ylabel("opinion")
    ax.set_title("Opinion distribution over time")
    return _save(fig, path)


def cascade_curves_plot(conn: sqlite3.Connection, path: Path, notes: list[str], top: int = 5) -> Path | None:
    """Per-minute scale / depth / max breadth of the largest tracked cascades (table
    `cascade_curve`, written by the metrics recorder)."""
    if not table_exists(conn, "cascade_curve"):  # optional: only runs with a metrics recorder have it
        return None
    try:
        posts = [
            r[0]
            for r in conn.execute(
                "SELECT post_id FROM cascade_curve GROUP BY post_id ORDER BY MAX(scale) DESC, post_id LIMIT ?", (top,)
            )
        ]
        if not posts:
            notes.append("'cascade_curve' table is empty: per-minute cascade curves skipped")
            return None
        fig, axes = _figure(3)
        for post in posts:
            rows = np.asarray(
                conn.execute(
                    "SELECT minute, scale, depth, max_breadth FROM cascade_curve WHERE post_id = ? ORDER BY minute",
                    (post,),
                ).fetchall(),
                dtype=np.float64,
            )
            for ax, col, name in zip(axes, (1, 2, 3), ("scale", "depth", "max breadth")):
                ax.plot(rows[:, 0], rows[:, col], linewidth=1.2, label=f"post {post}")
                ax.set_title(f"cascade {name}", fontsize=9)
                ax.set_xlabel("minutes since the root post", fontsize=8)
        axes[0].legend(fontsize=7)
    except (sqlite3.DatabaseError, TypeError, ValueError, IndexError) as exc:
        notes.append(f"'cascade_curve' table unreadable ({exc}): per-minute cascade curves skipped")
        return None
    return _save(fig, path)


def _share_hist(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    v = np.clip(values[np.isfinite(values)], edges[0], edges[-1])
    counts = np.histogram(v, bins=edges)[0].astype(np.float64)
    return counts / max(counts.sum(), 1.0)


def follower_ccdf(followers: NDArray[np.float64], path: Path, notes: list[str]) -> Path | None:
    """Log-log CCDF P(followers >= k) over users with at least one follower."""
    pos = np.sort(followers[followers > 0])
    if pos.size == 0:
        notes.append("no user has a follower: follower CCDF skipped")
        return None
    k, first = np.unique(pos, return_index=True)
    ccdf = (pos.size - first) / followers.size  # share of all users with >= k
    fig, (ax,) = _figure(1)
    ax.loglog(k, ccdf, marker="o", markersize=3, linestyle="-", linewidth=1)
    ax.set_xlabel("followers k")
    ax.set_ylabel("P(followers >= k)")
    ax.set_title(f"Follower degree CCDF ({followers.size} users, {followers.size - pos.size} with none)")
    return _save(fig, path)


def metric_plots(metrics: Metrics, out: Path, notes: list[str]) -> list[Path]:
    """actions.png (the non-zero "actions/*" series on one axes), cascade.png ("cascade/*") and
    metrics_<group>.png for every other tag group, one panel per tag; returns the paths."""
    written: list[Path] = []
    actions = [t for t in sorted(metrics) if t.startswith("actions/")]
    active = [t for t in actions if np.nansum(np.abs(metrics[t][1])) > 0]
    if active:
        written.append(_plot_series(metrics, active, "Actions per step", out / "actions.png", True))
    elif metrics:
        notes.append("no non-zero 'actions/' series: actions plot skipped")
    cascade = [t for t in sorted(metrics) if t.startswith("cascade/")]
    if cascade:
        written.append(_plot_series(metrics, cascade, "Cascades", out / "cascade.png", False))
    elif metrics:
        notes.append("no 'cascade/' series: cascade plot skipped")
    groups = sorted({_group(t) for t in metrics} - {"actions", "cascade"})
    for g in groups:
        tags = [t for t in sorted(metrics) if _group(t) == g]
        written.append(_plot_series(metrics, tags, g, out / f"metrics_{g}.png", False))
    return written
