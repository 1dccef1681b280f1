"""Offline report of a finished run: PNG plots and a text summary from its SQLite journal.

Reads only the database (the ``metrics`` table written by MetricsTable, an optional
``opinion(step, user_id, opinion)`` table and the OASIS ``user``/``post`` tables), so a
report can be made for any run, on any machine, after the fact. A database without recorded
metrics (one written by OASIS, or a run without a recorder) gets the curves its tables allow,
recomputed by ``metrics.offline`` with the online recorder's code; summary.txt says which
ones it cannot have (opinions, exposure). Every part is optional: a
missing, empty or differently shaped table skips its plot and says so in summary.txt.

Plots are drawn with matplotlib's object API on an Agg canvas (no pyplot, no global
backend switch), so importing this module never changes the caller's matplotlib state.
"""

from __future__ import annotations

import argparse
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from oasis_gym.metrics.formulas import gini
from oasis_gym.metrics.tensorboard import read_metrics

__all__ = ["make_report", "main"]

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


def _table_exists(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?", (name,)).fetchone()
    return row is not None


def _count(conn: sqlite3.Connection, table: str, notes: list[str], note_missing: bool = True) -> int | None:
    if not _table_exists(conn, table):
        if note_missing:
            notes.append(f"no '{table}' table")
        return None
    try:
        return int(conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])
    except sqlite3.DatabaseError as exc:
        notes.append(f"table '{table}' unreadable: {exc}")
        return None


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
    if _table_exists(conn, "user_profile"):
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


def _opinion_heatmap(conn: sqlite3.Connection, path: Path, notes: list[str]) -> Path | None:
    """Step x opinion-bin heatmap of the share of all users (see `opinion_grid`)."""
    if not _table_exists(conn, "opinion"):
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


def _cascade_curves(conn: sqlite3.Connection, path: Path, notes: list[str], top: int = 5) -> Path | None:
    """Per-minute scale / depth / max breadth of the largest tracked cascades (table
    `cascade_curve`, written by the metrics recorder)."""
    if not _table_exists(conn, "cascade_curve"):  # optional: only runs with a metrics recorder have it
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


def _followers(conn: sqlite3.Connection, notes: list[str]) -> NDArray[np.float64] | None:
    if not _table_exists(conn, "user"):
        notes.append("no 'user' table: follower distribution skipped")
        return None
    try:
        vals = np.array(
            [r[0] for r in conn.execute("SELECT num_followers FROM user WHERE num_followers IS NOT NULL")],
            dtype=np.float64,
        )
    except (sqlite3.DatabaseError, TypeError, ValueError) as exc:
        notes.append(f"'user.num_followers' unreadable ({exc}): follower distribution skipped")
        return None
    if vals.size == 0:
        notes.append("'user' table is empty: follower distribution skipped")
        return None
    return vals


def _follower_ccdf(followers: NDArray[np.float64], path: Path, notes: list[str]) -> Path | None:
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


# --------------------------------------------------------------------------- summary


def _fmt(v: float) -> str:
    return "nan" if not np.isfinite(v) else (f"{v:.0f}" if float(v).is_integer() else f"{v:.4g}")


def _summary_lines(
    db_path: Path,
    metrics: Metrics,
    users: int | None,
    posts: int | None,
    reposts: int | None,
    followers: NDArray[np.float64] | None,
    written: list[Path],
    notes: list[str],
) -> list[str]:
    lines = [f"oasis-gym run report for {db_path}", ""]
    if metrics:
        all_steps = np.unique(np.concatenate([s for s, _ in metrics.values()]))
        lines.append(f"steps: {all_steps.size} (step {all_steps[0]} to {all_steps[-1]})")
    else:
        lines.append("steps: unknown (no metrics)")
    lines.append(f"users: {'unknown' if users is None else users}")
    post_line = f"posts: {'unknown' if posts is None else posts}"
    if reposts is not None:
        post_line += f" ({reposts} reposts/quotes)"
    lines.append(post_line)
    if followers is not None:
        lines.append(f"follower gini: {_fmt(gini(followers))}; max followers: {_fmt(followers.max())}")
    action_tags = [t for t in metrics if t.startswith("actions/")]
    if action_tags:
        lines += ["", "action totals over the run:"]
        totals = {t: float(np.nansum(metrics[t][1])) for t in action_tags}
        for t in sorted(action_tags, key=lambda t: -totals[t]):
            if totals[t] > 0:
                lines.append(f"  {t.split('/', 1)[1]}: {_fmt(totals[t])}")
    other = sorted(t for t in metrics if not t.startswith("actions/"))
    if other:
        lines += ["", "final values (last step with a value):"]
        for t in other:
            steps, vals = metrics[t]
            ok = np.flatnonzero(np.isfinite(vals))
            last = f"{_fmt(vals[ok[-1]])} at step {steps[ok[-1]]}" if ok.size else "nan"
            lines.append(f"  {t}: {last}")
    lines += ["", "plots:"] + [f"  {p.name}" for p in written]
    if not written:
        lines.append("  (none)")
    if notes:
        lines += ["", "notes:"] + [f"  - {n}" for n in notes]
    return lines


def _reposts(conn: sqlite3.Connection) -> int | None:
    try:
        return int(conn.execute("SELECT COUNT(*) FROM post WHERE original_post_id IS NOT NULL").fetchone()[0])
    except sqlite3.DatabaseError:
        return None


# --------------------------------------------------------------------------- entry points


def _read_metric_table(conn: sqlite3.Connection, notes: list[str]) -> Metrics:
    if not _table_exists(conn, "metrics"):
        notes.append("no 'metrics' table: action, cascade and metric curves skipped")
        return {}
    try:
        metrics = read_metrics(conn)
    except sqlite3.DatabaseError as exc:
        notes.append(f"'metrics' table unreadable ({exc}): curves skipped")
        return {}
    if not metrics:
        notes.append("'metrics' table is empty: action, cascade and metric curves skipped")
    return metrics


def _offline_metrics(db_path: Path, notes: list[str]) -> Metrics:
    """No recorded metrics (an OASIS database, or a run without a recorder): the curves the
    tables allow, computed by the online recorder's code (metrics.offline)."""
    from oasis_gym.metrics.offline import offline_metrics
    from oasis_gym.platform.oasis_import import OasisImportError, is_oasis_db

    try:
        metrics, more = offline_metrics(db_path)
    except (sqlite3.DatabaseError, OasisImportError, ValueError, KeyError) as exc:
        notes.append(f"curves could not be computed from the tables either ({exc})")
        return {}
    source = "the OASIS tables" if is_oasis_db(db_path) else "the journal's tables"
    notes[:] = [n for n in notes if not n.startswith(("no 'metrics' table", "'metrics' table is empty"))]
    notes.append(f"no recorded metrics: curves computed from {source} (trace, post, follow, ...)")
    notes.extend(more)
    return metrics


def _with_imported_steps(metrics: Metrics, db_path: Path, notes: list[str]) -> Metrics:
    """Recorded metrics of a run that continued an imported OASIS run, preceded by the
    imported steps' curves computed from the tables."""
    first = min(int(steps[0]) for steps, _ in metrics.values() if len(steps))
    extra: list[str] = []
    before = _offline_metrics(db_path, extra)
    merged = dict(metrics)
    for tag, (steps, values) in before.items():
        keep = steps < first
        if not keep.any():
            continue
        own = metrics.get(tag, (np.empty(0, np.int64), np.empty(0)))
        merged[tag] = (np.r_[steps[keep], own[0]], np.r_[values[keep], own[1]])
    notes.append(f"steps before {first} (the imported OASIS run): computed from the tables")
    notes.extend(n for n in extra if not n.startswith("no recorded metrics"))
    return merged


def _metric_plots(metrics: Metrics, out: Path, notes: list[str]) -> list[Path]:
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


def make_report(db_path: str | Path, out_dir: str | Path) -> list[Path]:
    """Write the run's plots (PNG) and summary.txt into ``out_dir``; return their paths.

    Plots: actions.png (tags "actions/*"), cascade.png ("cascade/*"), metrics_<group>.png
    for every other tag group ("opinion/*", "network/*", ...), opinion_heatmap.png (table
    ``opinion``) and follower_ccdf.png (``user.num_followers``). The database is opened
    read-only; FileNotFoundError if it does not exist.
    """
    db_path = Path(db_path)
    if not db_path.is_file():
        raise FileNotFoundError(db_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    conn = sqlite3.connect(db_path.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            notes.append(f"not a readable SQLite database: {exc}")
            metrics, users, posts, reposts, followers, written = {}, None, None, None, None, []
        else:
            metrics = _read_metric_table(conn, notes)
            if _table_exists(conn, "trace") and _table_exists(conn, "post"):
                if not metrics:
                    metrics = _offline_metrics(db_path, notes)
                elif _table_exists(conn, "oasis_id_map"):  # an imported OASIS run, continued with a recorder
                    metrics = _with_imported_steps(metrics, db_path, notes)
            written = _metric_plots(metrics, out, notes)
            heat = _opinion_heatmap(conn, out / "opinion_heatmap.png", notes)
            followers = _followers(conn, notes)
            ccdf = None if followers is None else _follower_ccdf(followers, out / "follower_ccdf.png", notes)
            curves = _cascade_curves(conn, out / "cascade_curves.png", notes)
            written += [p for p in (heat, ccdf, curves) if p is not None]
            users = _count(conn, "user", notes, note_missing=False)  # noted above
            posts = _count(conn, "post", notes)
            reposts = _reposts(conn) if posts is not None else None
    finally:
        conn.close()
    summary = out / "summary.txt"
    lines = _summary_lines(db_path, metrics, users, posts, reposts, followers, written, notes)
    summary.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return written + [summary]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m oasis_gym.metrics.report RUN.db OUT_DIR``: print the written paths."""
    ap = argparse.ArgumentParser(description="Plots and a summary from an oasis-gym run database.")
    ap.add_argument("db", type=Path, help="the run's SQLite database")
    ap.add_argument("out_dir", type=Path, help="folder for the PNGs and summary.txt")
    args = ap.parse_args(argv)
    for path in make_report(args.db, args.out_dir):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
