"""The report's plots: PNGs drawn from a run's metric series and journal tables.

Drawn with matplotlib's object API on an Agg canvas (no pyplot, no global backend switch), so
importing this module never changes the caller's matplotlib state. A missing or unreadable
table skips its plot and says why in ``notes`` (summary.txt lists them).

Made to be read by people: steps and depths on whole-number axes, titles and axis labels in
words (`metric_label`), `do_nothing` in a panel of its own (it would flatten every other
action), y-ranges no tighter than 10% of the values' size (a nearly flat series says its
range in its title instead of magnifying noise), a legend on every panel with several lines,
and the Okabe-Ito colour-blind-safe palette.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "PALETTE",
    "Metrics",
    "metric_label",
    "actions_figure",
    "series_figure",
    "steady_ylim",
    "table_exists",
    "opinion_grid",
    "metric_plots",
    "plan_metric_plots",
    "zero_series",
    "opinion_heatmap",
    "cascade_curves_plot",
    "follower_ccdf",
]

#: {tag: (steps, values)}, as read_metrics returns
Metrics = dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]]

_OPINION_BINS = 41
_FETCH_ROWS = 500_000
#: Okabe & Ito (2008), distinguishable with every common colour-vision deficiency
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
# words for the tag groups and the units of their values (the y-axis labels)
_GROUP_WORDS = {
    "activity": ("Activity", "count"),
    "cascade": ("Cascades", "value"),
    "engagement": ("Engagement", "rate"),
    "exposure": ("Exposure of the served feeds", "share"),
    "herd": ("Herd effect", "mean score"),
    "invalid": ("Rejected actions", "actions rejected"),
    "llm": ("LLM users", "value"),
    "network": ("Follow network", "value"),
    "opinion": ("Opinions", "value"),
}
# names whose unit the name itself says
_UNIT_SUFFIXES = (
    ("_share", "share of all (0-1)"),
    ("_rate", "rate"),
    ("_gini", "Gini (0-1)"),
    ("_per_s", "per second"),
)
# names whose unit their group does not say
_EXACT_UNITS = {"invalid/rate": "share of actions rejected (0-1)", "engagement/per_active_user": "per active user"}
_CASCADE_UNITS = {"scale": "posts in the cascade", "depth": "depth (reposts)", "max breadth": "posts"}


def _figure(n_panels: int = 1, width: float = 8.0, height: float = 4.5, stacked: bool = False):
    """Figure on an Agg canvas with n axes in a grid of 2 columns (`stacked`: one column),
    each with the colour-blind-safe palette; no empty panel is made."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = 1 if n_panels == 1 or stacked else 2
    rows = -(-n_panels // cols)
    fig = Figure(figsize=(width if cols == 1 else 1.25 * width, height if rows == 1 else 0.7 * height * rows))
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(n_panels)]
    for ax in axes:
        ax.set_prop_cycle(color=PALETTE)
    return fig, axes


def _whole_numbers(axis) -> None:
    """Ticks at whole numbers only (steps, depths): no 2.5 on an axis of whole steps."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def metric_label(tag: str) -> tuple[str, str]:
    """(title, y-axis label) in words for a metric tag: "opinion/to_extreme_share" ->
    ("Opinions: to extreme share", "share of all (0-1)")."""
    group, _, name = tag.partition("/") if "/" in tag else ("misc", "", tag)
    words, unit = _GROUP_WORDS.get(group, (group.capitalize(), "value"))
    for suffix, said in _UNIT_SUFFIXES:
        if name.endswith(suffix):
            unit = said
    return f"{words}: {name.replace('_', ' ')}", _EXACT_UNITS.get(tag, unit)


def steady_ylim(ax, values: np.ndarray) -> str:
    """Widen the y-range to at least 10% of the values' size (never magnify noise); returns
    " (nearly flat: lo to hi)" for the title when the values vary less than that, else ""."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return ""
    lo, hi = float(v.min()), float(v.max())
    floor = 0.1 * max(abs(lo), abs(hi))
    if hi - lo >= floor or floor == 0.0:
        return ""
    mid = 0.5 * (lo + hi)
    ax.set_ylim(mid - floor / 2, mid + floor / 2)
    return f" (nearly flat: {lo:.4g} to {hi:.4g})"


def _save(fig, path: Path) -> Path:
    if fig.get_layout_engine() is None:  # (a figure with a suptitle has the constrained layout)
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


def actions_figure(metrics: Metrics, tags: Sequence[str]):
    """Actions per step: the actions on one axes, `do_nothing` in a panel of its own below
    (its 60-80 a step would flatten every other line)."""
    panels = [
        ("Actions per step", [t for t in tags if t != "actions/do_nothing"]),
        ("Users doing nothing (do_nothing actions)", [t for t in tags if t == "actions/do_nothing"]),
    ]
    panels = [(title, group) for title, group in panels if group]
    fig, axes = _figure(len(panels), stacked=True)
    for ax, (title, group) in zip(axes, panels):
        for tag in group:
            steps, vals = metrics[tag]
            marker = "o" if len(steps) == 1 else None  # one-point series: a marker
            ax.plot(steps, vals, label=tag.split("/", 1)[-1].replace("_", " "), linewidth=1.2, marker=marker)
        ax.set_xlabel("step")
        ax.set_ylabel("actions per step")
        _whole_numbers(ax.xaxis)
        if len(group) > 1:
            ax.legend(fontsize=7, ncol=2 if len(group) > 8 else 1, loc="upper left")
        ax.set_title(title)
    return fig


def series_figure(metrics: Metrics, tags: Sequence[str], title: str):
    """One panel per tag (mixed scales), each titled and labelled in words."""
    fig, axes = _figure(len(tags))
    for ax, tag in zip(axes, tags):
        steps, vals = metrics[tag]
        ax.plot(steps, vals, linewidth=1.2, marker="o" if len(steps) == 1 else None)  # one-point series: a marker
        name, unit = metric_label(tag)
        ax.set_title(name + steady_ylim(ax, vals), fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.set_ylabel(unit, fontsize=8)
        _whole_numbers(ax.xaxis)
        ax.tick_params(labelsize=7)
    fig.set_layout_engine("constrained")  # room for the suptitle above the panels' titles
    fig.suptitle(title)
    return fig


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
    _whole_numbers(ax.xaxis)
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
                ax.set_title(f"Cascade {name} of the {len(posts)} largest cascades", fontsize=9)
                ax.set_xlabel("minutes since the root post", fontsize=8)
                ax.set_ylabel(_CASCADE_UNITS[name], fontsize=8)
                _whole_numbers(ax.yaxis)  # scale, depth and breadth are whole numbers
        for ax in axes:  # one legend per panel: each reads on its own
            ax.legend(fontsize=7)
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


def _flat_zero(values: np.ndarray) -> bool:
    """Whether a series holds no value but 0 (NaNs aside): nothing to see in a plot."""
    v = np.asarray(values, dtype=np.float64)
    return not np.any(v[np.isfinite(v)] != 0)


def zero_series(metrics: Metrics) -> list[str]:
    """The tags whose series are 0 at every step (NaNs aside), in order: left out of the plots
    and of summary.txt's final values, and named there in one line."""
    return [t for t in sorted(metrics) if _flat_zero(metrics[t][1])]


def plan_metric_plots(metrics: Metrics, notes: list[str]) -> list[tuple[str, Callable[[], Any]]]:
    """(file name, a function drawing its figure) of every metric plot the report draws:
    actions.png (the non-zero "actions/*" series on one axes), cascade.png ("cascade/*") and
    metrics_<group>.png for every other tag group, one panel per tag; series that are 0 at every
    step are left out (a group with nothing else gets no file; `zero_series` names them)."""
    zero = set(zero_series(metrics))
    plans: list[tuple[str, Callable[[], Any]]] = []
    actions = [t for t in sorted(metrics) if t.startswith("actions/") and t not in zero]
    if actions:
        plans.append(("actions.png", lambda: actions_figure(metrics, actions)))
    elif metrics:
        notes.append("no non-zero 'actions/' series: actions plot skipped")
    groups = sorted({_group(t) for t in metrics} - {"actions"})
    if metrics and "cascade" not in groups:
        notes.append("no 'cascade/' series: cascade plot skipped")
    for g in groups:
        tags = [t for t in sorted(metrics) if _group(t) == g and t not in zero]
        title = _GROUP_WORDS.get(g, (g.capitalize(),))[0]
        name = "cascade.png" if g == "cascade" else f"metrics_{g}.png"
        if tags:
            plans.append((name, lambda tags=tags, title=title: series_figure(metrics, tags, title)))
    return plans


def metric_plots(
    metrics: Metrics, out: Path, notes: list[str], on_file: Callable[[str], None] | None = None
) -> list[Path]:
    """Draw `plan_metric_plots`' files into `out`; returns their paths (`on_file(name)` after each)."""
    written: list[Path] = []
    for name, draw in plan_metric_plots(metrics, notes):
        written.append(_save(draw(), out / name))
        if on_file is not None:
            on_file(name)
    return written
