"""The report's plots: PNGs drawn from a run's metric series and journal tables.

Drawn with matplotlib's object API on an Agg canvas (no pyplot, no global backend switch), so
importing this module never changes the caller's matplotlib state. A missing or unreadable
table skips its plot and says why in ``notes`` (summary.txt lists them).

Made to be read by people, under `oasis_gym.figures`' rules: steps and counts on whole-number
axes, titles and y-labels in words with their units (`metric_label`), `do_nothing` in a
panel of its own (it would flatten every other action), y-ranges no tighter than 10% of the
values' size (a series varying by less than 1% says "nearly flat" in its title instead of
magnifying noise), no line across steps where a series has no value, no panel for a series
that never changes (its value is said under the panels), a legend on every panel with
several lines, each line in its own colour, line style and marker.
"""

from __future__ import annotations

import sqlite3
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oasis_gym.figures import (
    COUNT,
    PALETTE,
    coincide_groups,
    coincide_note,
    new_figure,
    save_png,
    series_style,
    visual_tolerance,
)
from oasis_gym.figures import whole_numbers as _whole
from oasis_gym.metrics.metric_units import GROUP_WORDS, group_of, legend_label, metric_label, panel_key

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
    "constant_series",
    "opinion_heatmap",
    "cascade_curves_plot",
    "follower_ccdf",
    "NEARLY_FLAT",
]

#: {tag: (steps, values)}, as read_metrics returns
Metrics = dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]]

_OPINION_BINS = 41
_FETCH_ROWS = 500_000
#: the most panels in one figure (2 columns of 4): more go into a second file
MAX_PANELS = 8
#: a series whose range is under this share of its size is "nearly flat" (its title says so)
NEARLY_FLAT = 0.01
#: y-ranges are no tighter than this share of the values' size (noise is not magnified)
_MIN_SPAN = 0.1
_CURVE_UNITS = {"scale": f"posts {COUNT}", "depth": f"levels {COUNT}", "max breadth": f"posts {COUNT}"}


def steady_ylim(ax, values: np.ndarray) -> str:
    """Widen the y-range to at least 10% of the values' size (never magnify noise); returns
    " (nearly flat: lo to hi, within 1%)" for the title when the values vary by less than
    `NEARLY_FLAT` (1%) of their size, else "" (a series falling from 0.99 to 0.92 is not flat)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return ""
    lo, hi = float(v.min()), float(v.max())
    size = max(abs(lo), abs(hi))
    floor = _MIN_SPAN * size
    if hi - lo >= floor or floor == 0.0:
        return ""
    mid = 0.5 * (lo + hi)
    ax.set_ylim(mid - floor / 2, mid + floor / 2)
    return f" (nearly flat: {lo:.4g} to {hi:.4g}, within 1%)" if hi - lo < NEARLY_FLAT * size else ""


def _save(fig, path: Path) -> Path:
    return save_png(fig, path)


def table_exists(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the database has a table or view of that name."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?", (name,)).fetchone()
    return row is not None


# --------------------------------------------------------------------------- plots


def _on_grid(metrics: Metrics, tags: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{tag: its series on the steps its group was logged at}, NaN where the tag has no row
    (an LLM tag at a step where no LLM user acted), so no line is drawn across the missing steps."""
    grids: dict[str, np.ndarray] = {}
    out = {}
    for tag in tags:
        group = group_of(tag)
        if group not in grids:
            grids[group] = np.unique(np.concatenate([s for t, (s, _) in metrics.items() if group_of(t) == group]))
        steps, vals = metrics[tag]
        full = np.full(grids[group].size, np.nan)
        full[np.searchsorted(grids[group], steps)] = vals
        out[tag] = (grids[group], full)
    return out


def _draw_lines(ax, lines: Sequence[tuple[str, str, np.ndarray, np.ndarray]], ylabel: str) -> None:
    """(label, gid, x, y) lines on one axes, each in its own `series_style` (the gid names the
    tag); a legend when there are several, titled with the ones that coincide; whole-number
    ticks on a count's axis."""
    for i, (label, gid, x, y) in enumerate(lines):
        ax.plot(x, y, label=label, gid=gid, linewidth=1.2, **series_style(i))
    ax.set_ylabel(ylabel)
    if ylabel.endswith(COUNT):
        _whole(ax.yaxis)
    if len(lines) > 1:
        ys = [y for *_, y in lines]
        note = coincide_note(coincide_groups([n for n, *_ in lines], ys, visual_tolerance(ys)))
        outside = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)} if len(lines) > 4 else {"loc": "best"}
        ax.legend(title=note or None, **outside)


def actions_figure(metrics: Metrics, tags: Sequence[str]):
    """Actions per step: the actions on one axes, `do_nothing` in a panel of its own below
    (its 60-80 a step would flatten every other line)."""
    panels = [
        ("Actions per step", [t for t in tags if t != "actions/do_nothing"]),
        ("Users doing nothing (do_nothing actions)", [t for t in tags if t == "actions/do_nothing"]),
    ]
    panels = [(title, group) for title, group in panels if group]
    fig, axes = new_figure(len(panels), stacked=True, panel=(5.0, 4.0))
    series = _on_grid(metrics, tags)
    for ax, (title, group) in zip(axes, panels):
        _draw_lines(ax, [(legend_label(t), t, *series[t]) for t in group], f"actions per step {COUNT}")
        ax.set_xlabel("step")
        _whole(ax.xaxis)
        ax.set_title(title)
    fig.set_layout_engine("constrained")  # room for a legend beside the axes
    return fig


def series_figure(metrics: Metrics, tags: Sequence[str], title: str, constant: dict[str, float] | None = None):
    """One panel per tag, or per `panel_key` (the tags that share a unit and a scale), titled
    and labelled in words; the `constant` tags ({tag: value}) are named under the panels."""
    panels: dict[str, tuple[str, list[str]]] = {}
    for tag in tags:
        key, panel_title = panel_key(tag)
        panels.setdefault(key, (panel_title, []))[1].append(tag)
    fig, axes = new_figure(len(panels))
    series = _on_grid(metrics, tags)
    steps = np.concatenate([series[t][0] for t in tags])
    for ax, (panel_title, group) in zip(axes, panels.values()):
        lines = [(legend_label(t), t, *series[t]) for t in group]
        ax.set_xlim(steps.min() - 0.5, steps.max() + 0.5)  # every panel over the same steps
        _draw_lines(ax, lines, metric_label(group[0])[1])
        flat = steady_ylim(ax, np.concatenate([y for *_, y in lines]))
        ax.set_title(textwrap.fill(panel_title, 52) + (f"\n{flat.strip()}" if flat else ""))
        ax.set_xlabel("step")
        _whole(ax.xaxis)
    fig.set_layout_engine("constrained")  # room for the suptitle above the panels' titles
    fig.suptitle(title)
    if constant:
        fig.supxlabel(_constant_text(constant), fontsize=9, wrap=True)
    return fig


def _constant_text(constant: dict[str, float]) -> str:
    said = [f"{metric_label(t)[0].split(': ', 1)[1]} = {v:.4g}" for t, v in constant.items()]
    return "The same at every step, not drawn: " + "; ".join(said)


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
    fig, (ax,) = new_figure(1, panel=(5.0, 4.5))
    # column edges from the recorded steps, so opinions sampled every k steps stay in place
    last_width = steps[-1] - steps[-2] if steps.size > 1 else 1
    x_edges = np.r_[steps, steps[-1] + last_width].astype(np.float64)
    im = ax.pcolormesh(x_edges, edges, grid.T, cmap="viridis", shading="flat")
    fig.colorbar(im, ax=ax, label="share of users (0-1)")
    _whole(ax.xaxis)
    ax.set_xlabel("step")
    ax.set_ylabel("opinion (-1 to 1)")
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
        curves = {
            post: np.asarray(
                conn.execute(
                    "SELECT minute, scale, depth, max_breadth FROM cascade_curve WHERE post_id = ? ORDER BY minute",
                    (post,),
                ).fetchall(),
                dtype=np.float64,
            ).reshape(-1, 4)
            for post in posts
        }
        measures = ((1, "scale"), (2, "depth"), (3, "max breadth"))
        drawn = [(c, n) for c, n in measures if not _constant(np.concatenate([r[:, c] for r in curves.values()]))]
        if not drawn:
            notes.append("the tracked cascades' curves are the same at every minute: per-minute curves skipped")
            return None
        fig, axes = new_figure(len(drawn))
        for ax, (col, name) in zip(axes, drawn):
            lines = [(f"post {p}", f"post_{p}", r[:, 0], r[:, col]) for p, r in curves.items()]
            _draw_lines(ax, lines, _CURVE_UNITS[name])
            ax.set_title(f"Cascade {name} of the {len(posts)} largest cascades")
            ax.set_xlabel("minutes since the root post")
        if len(drawn) < len(measures):
            same = {n: float(np.nanmax(curves[posts[0]][:, c])) for c, n in measures if (c, n) not in drawn}
            fig.supxlabel("The same in every cascade at every minute, not drawn: "
                          + "; ".join(f"{n} = {v:.4g}" for n, v in same.items()), fontsize=9)  # fmt: skip
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
    fig, (ax,) = new_figure(1, panel=(5.0, 4.5))
    ax.loglog(k, ccdf, marker="o", markersize=3, linestyle="-", linewidth=1)
    ax.set_xlabel("followers k")
    ax.set_ylabel("share of users with >= k followers (0-1)")
    ax.set_title(f"Follower degree CCDF ({followers.size} users, {followers.size - pos.size} with none)")
    return _save(fig, path)


def _constant(values: np.ndarray) -> bool:
    """Whether a series holds one value only (NaNs aside; at least one finite value)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return bool(v.size) and bool(np.all(v == v[0]))


def zero_series(metrics: Metrics) -> list[str]:
    """The tags whose series are 0 at every step (NaNs aside), in order: left out of the plots
    and of summary.txt's final values, and named there in one line."""
    return [t for t in sorted(metrics) if not np.any(np.nan_to_num(metrics[t][1]) != 0)]


def constant_series(metrics: Metrics) -> dict[str, float]:
    """{tag: value} of the series other than zero that hold one value at two or more steps
    (NaNs aside), in order, where every series of their panel (`panel_key`) does: not drawn (a
    flat line says nothing its number does not), named under their figure's panels and in
    summary.txt. (A constant line beside one that changes is drawn: the two compare.)"""
    same: dict[str, float] = {}
    for tag in sorted(metrics):
        v = metrics[tag][1][np.isfinite(metrics[tag][1])]
        if v.size >= 2 and _constant(v) and v[0] != 0:
            same[tag] = float(v[0])
    zero = set(zero_series(metrics))
    changing = {panel_key(t)[0] for t in metrics if t not in same and t not in zero}
    return {t: v for t, v in same.items() if panel_key(t)[0] not in changing}


def _files(group: str, tags: list[str]) -> list[tuple[str, str, list[str]]]:
    """(file stem, title, tags) of a group's figures: cascade.png and cascade_tracked.png for
    the cascades, metrics_<group>.png for any other."""
    title = GROUP_WORDS.get(group, group.capitalize())
    if group != "cascade":
        return [(f"metrics_{group}", title, tags)]
    tracked = [t for t in tags if t.count("/") == 2]
    return [
        ("cascade", title, [t for t in tags if t not in tracked]),
        ("cascade_tracked", "Tracked cascades (the largest at each step)", tracked),
    ]


def plan_metric_plots(metrics: Metrics, notes: list[str]) -> list[tuple[str, Callable[[], Any]]]:
    """(file name, a function drawing its figure) of every metric plot the report draws:
    actions.png (the non-zero "actions/*" series on one axes), cascade.png (the "cascade/*"
    measures of all cascades), cascade_tracked.png (those of the tracked cascades,
    "cascade/top<k>/*" and "cascade/post_<id>/*", one line each) and metrics_<group>.png for
    every other tag group, one panel per tag (or per `panel_key`), at most `MAX_PANELS` a file
    (then metrics_<group>_2.png, ...); series that are 0 at every step are left out
    (`zero_series` names them), and so are those that are constant (`constant_series`, named
    under the panels); a group with nothing left gets no file."""
    zero, constant = set(zero_series(metrics)), constant_series(metrics)
    plans: list[tuple[str, Callable[[], Any]]] = []
    actions = [t for t in sorted(metrics) if t.startswith("actions/") and t not in zero and t not in constant]
    if actions:
        plans.append(("actions.png", lambda: actions_figure(metrics, actions)))
    elif metrics:
        notes.append("no 'actions/' series that changes: actions plot skipped")
    groups = sorted({group_of(t) for t in metrics} - {"actions"})
    if metrics and "cascade" not in groups:
        notes.append("no 'cascade/' series: cascade plot skipped")
    for g in groups:
        for stem, title, tags in _files(g, [t for t in sorted(metrics) if group_of(t) == g and t not in zero]):
            drawn = [t for t in tags if t not in constant]
            same = {t: constant[t] for t in tags if t in constant}
            keys = list(dict.fromkeys(panel_key(t)[0] for t in drawn))
            for k in range(0, len(keys), MAX_PANELS):
                part = [t for t in drawn if panel_key(t)[0] in keys[k : k + MAX_PANELS]]
                name = f"{stem}.png" if k == 0 else f"{stem}_{k // MAX_PANELS + 1}.png"
                said = same if k == 0 else None
                plans.append((name, lambda p=part, t=title, s=said: series_figure(metrics, p, t, s)))
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
