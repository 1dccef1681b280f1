"""Offline report of a finished run: PNG plots and a text summary from its SQLite journal.

Reads only the database (the ``metrics`` table written by MetricsTable, an optional
``opinion(step, user_id, opinion)`` table and the OASIS ``user``/``post`` tables), so a
report can be made for any run, on any machine, after the fact. A database without recorded
metrics (one written by OASIS, or a run without a recorder) gets the curves its tables allow,
recomputed by ``metrics.offline`` with the online recorder's code; summary.txt says which
ones it cannot have (opinions, exposure). Every part is optional: a
missing, empty or differently shaped table skips its plot and says so in summary.txt.
This module reads the tables and writes the summary; the plots are ``metrics.report_plots``;
the report as a command's output (``make_report``: the output rule) is ``oasis_gym.cli.report``'s.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from oasis_gym.metrics.formulas import gini
from oasis_gym.metrics.offline import offline_metrics
from oasis_gym.metrics.report_plots import (
    Metrics,
    cascade_curves_plot,
    constant_series,
    follower_ccdf,
    metric_plots,
    opinion_grid,
    opinion_heatmap,
    plan_metric_plots,
    table_exists,
    zero_series,
)
from oasis_gym.metrics.tensorboard import read_metrics
from oasis_gym.platform.journal_file import connect_read
from oasis_gym.platform.oasis_import import OasisImportError, is_oasis_db

__all__ = ["write_report", "opinion_grid", "REPORT_FILES"]

#: the names a report writes (its output rule: `oasis_gym.cli.report.make_report`, whose docstring lists them)
REPORT_FILES = ("summary.txt", "actions.png", "cascade.png", "metrics_*.png", "opinion_heatmap.png")
REPORT_FILES += ("follower_ccdf.png", "cascade_curves.png", "cascade_tracked.png")


def _count(conn: sqlite3.Connection, table: str, notes: list[str], note_missing: bool = True) -> int | None:
    if not table_exists(conn, table):
        if note_missing:
            notes.append(f"no '{table}' table")
        return None
    try:
        return int(conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])
    except sqlite3.DatabaseError as exc:
        notes.append(f"table '{table}' unreadable: {exc}")
        return None


def _followers(conn: sqlite3.Connection, notes: list[str]) -> NDArray[np.float64] | None:
    if not table_exists(conn, "user"):
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
    lines = [_title(db_path), ""]
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
    zero = zero_series(metrics)
    other = sorted(t for t in metrics if not t.startswith("actions/") and t not in zero)
    if other:
        lines += ["", "final values (last step with a value):"]
        for t in other:
            steps, vals = metrics[t]
            ok = np.flatnonzero(np.isfinite(vals))
            last = f"{_fmt(vals[ok[-1]])} at step {steps[ok[-1]]}" if ok.size else "nan"
            lines.append(f"  {t}: {last}")
    if zero:
        lines += ["", f"zero at every step (left out of the plots and the values above; {len(zero)} series):"]
        lines += [f"  {line}" for line in _by_group(zero)]
    constant = constant_series(metrics)
    if constant:
        lines += ["", f"the same at every step (not drawn; {len(constant)} series):"]
        lines += [f"  {t}: {_fmt(v)}" for t, v in constant.items()]
    lines += ["", "plots:"] + [f"  {p.name}" for p in written]
    if not written:
        lines.append("  (none)")
    if notes:
        lines += ["", "notes:"] + [f"  - {n}" for n in notes]
    return lines


def _title(db_path: Path) -> str:
    """What the report is of: a run's journal, an imported OASIS run, or OASIS's own database."""
    if is_oasis_db(db_path):
        return f"Report of the OASIS database {db_path} (written by OASIS: curves computed from its tables)"
    try:
        imported = bool(_tables(db_path) & {"oasis_id_map"})
    except sqlite3.DatabaseError:
        return f"Report of {db_path} (not a readable database)"
    if imported:
        return f"Report of the oasis-gym journal {db_path} (an OASIS run converted by oasis-gym import)"
    return f"Report of the oasis-gym run journaled in {db_path}"


def _tables(db_path: Path) -> set[str]:
    conn = connect_read(db_path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    finally:
        conn.close()


def _by_group(tags: list[str]) -> list[str]:
    """Tags as "group: name, name, ..." lines, one a group."""
    groups: dict[str, list[str]] = {}
    for t in tags:
        group, _, name = t.rpartition("/")
        groups.setdefault(group, []).append(name)
    return [f"{g}: {', '.join(names)}" if g else ", ".join(names) for g, names in groups.items()]


def _reposts(conn: sqlite3.Connection) -> int | None:
    try:
        return int(conn.execute("SELECT COUNT(*) FROM post WHERE original_post_id IS NOT NULL").fetchone()[0])
    except sqlite3.DatabaseError:
        return None


# --------------------------------------------------------------------------- entry points


def _read_metric_table(conn: sqlite3.Connection, notes: list[str]) -> Metrics:
    if not table_exists(conn, "metrics"):
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


_AFTER_METRICS = ("opinion_heatmap.png", "follower_ccdf.png", "cascade_curves.png", "summary.txt")


def write_report(db_path: Path, out: Path, progress: Callable[[str, int], None]) -> list[Path]:
    """Write the report of `db_path` into the folder `out` (the staging folder of
    `oasis_gym.cli.report.make_report`, which applies the output rule); return the written paths.
    `progress(part, parts)` is called after each part."""
    notes: list[str] = []
    conn = connect_read(db_path)  # leaves no -wal / -shm beside a journal
    parts = 1 + len(_AFTER_METRICS)
    try:
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            notes.append(f"not a readable SQLite database: {exc}")
            metrics, users, posts, reposts, followers, written = {}, None, None, None, None, []
        else:
            metrics = _read_metric_table(conn, notes)
            if table_exists(conn, "trace") and table_exists(conn, "post"):
                if not metrics:
                    metrics = _offline_metrics(db_path, notes)
                elif table_exists(conn, "oasis_id_map"):  # an imported OASIS run, continued with a recorder
                    metrics = _with_imported_steps(metrics, db_path, notes)
            parts += len(plan_metric_plots(metrics, []))
            progress("the tables read", parts)
            written = metric_plots(metrics, out, notes, on_file=lambda name: progress(name, parts))
            heat = opinion_heatmap(conn, out / "opinion_heatmap.png", notes)
            progress("opinion_heatmap.png", parts)
            followers = _followers(conn, notes)
            ccdf = None if followers is None else follower_ccdf(followers, out / "follower_ccdf.png", notes)
            progress("follower_ccdf.png", parts)
            curves = cascade_curves_plot(conn, out / "cascade_curves.png", notes)
            progress("cascade_curves.png", parts)
            written += [p for p in (heat, ccdf, curves) if p is not None]
            users = _count(conn, "user", notes, note_missing=False)  # noted above
            posts = _count(conn, "post", notes)
            reposts = _reposts(conn) if posts is not None else None
    finally:
        conn.close()
    summary = out / "summary.txt"
    lines = _summary_lines(db_path, metrics, users, posts, reposts, followers, written, notes)
    summary.write_text("\n".join(lines) + "\n", encoding="utf-8")
    progress("summary.txt", parts)
    return written + [summary]
