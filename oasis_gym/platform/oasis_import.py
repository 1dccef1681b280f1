"""Read a database written by OASIS (camel-ai/oasis) into a Platform, and convert it to a journal.

OASIS keeps its state in SQLite tables that ours mirror (user, post, comment, follow, mute,
like, dislike, comment_like, comment_dislike, report, trace), without our `meta` table and
with these differences, which the loader maps:

- ids: OASIS numbers posts, comments and relation rows from 1 (AUTOINCREMENT) and users by
  agent id; ours are 0..n-1 in the same order (`IdMaps` keeps the correspondence).
- kinds: a post with `original_post_id` NULL is an original, with `quote_content` NULL a
  repost, else a quote. A repost row has empty content in OASIS; ours carries the shared
  post's content and quote (what a reader of the repost sees).
- time: `created_at` holds the time step as text (OASIS's Twitter clock) or a datetime
  (its Reddit clock). A step becomes minute `start_minute + step * minutes_per_step`; a
  datetime becomes minutes since the database's earliest time, and its step is
  minute // minutes_per_step.
- `post.num_comments` does not exist in OASIS: it is counted from the comment rows.

Counters are checked against the rows (num_likes against `like`, num_shares against the
posts sharing it, num_followers against `follow`, ...). Rows are the truth: a counter that
disagrees is listed in `OasisImport.mismatches` and recomputed (`strict=True` raises
instead). Relation rows naming a user, post or comment that does not exist (OASIS inserts a
follow of a missing user) or repeating an earlier pair are left out and counted in
`OasisImport.dropped`; posts or comments of missing users or posts are an error.

The OASIS file is read as SQLite would read it, its committed state, and never written
(`journal_file.connect_read`); a name of an OASIS table that is not a table (a view) is refused.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import JournalError, OasisGymError
from .config import MINUTE_RANGE, PlatformConfig, datetime_text
from .journal import Journal
from .journal_file import JOURNAL, SIBLINGS, connect_read, what_is
from .journal_load import read_meta
from .kinds import ORIGINAL, QUOTE, REPOST
from .oasis_rows import OASIS_RELATIONS, OasisProfiles, id_column, int_column, map_ids, time_steps
from .platform import Platform
from .store import PairSet, pair_keys, unpack_keys

__all__ = ["OasisImportError", "OasisImport", "is_oasis_db", "load_oasis", "write_import", "time_steps"]


class OasisImportError(OasisGymError, ValueError):
    """The file is not an OASIS database we can read, or (strict) its counters disagree with its rows."""


@dataclass
class IdMaps:
    """OASIS id of each of our users / posts / comments (ours are positions)."""

    user: np.ndarray
    post: np.ndarray
    comment: np.ndarray


@dataclass
class OasisImport:
    """A Platform loaded from an OASIS database, and what the loader found."""

    platform: Platform
    ids: IdMaps
    time_kind: str  # "steps", "datetime" or "none"
    mismatches: dict = field(default_factory=dict)  # counter -> number of rows whose counter was wrong
    examples: list = field(default_factory=list)  # a few (table, id, column, stored, counted)
    dropped: dict = field(default_factory=dict)  # table -> rows naming a missing user/post/comment
    counts: dict = field(default_factory=dict)  # table -> rows loaded
    trace_step: np.ndarray | None = None  # step / minute offset of each trace row (rowid order)
    trace_minute: np.ndarray | None = None

    def summary(self) -> dict:
        """What the import found, as JSON-able values (kept in the journal's meta by `import_oasis`)."""
        return {
            "counts": self.counts,
            "counter_mismatches": self.mismatches,
            "examples": self.examples[:10],
            "dropped_rows": self.dropped,
            "time": self.time_kind,
            "step": self.platform.step,
        }


def _tables(conn: sqlite3.Connection) -> dict[str, str]:
    return {
        name: kind for name, kind in conn.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table','view')")
    }


def check_tables(path: str | Path, tables: dict[str, str] | None = None) -> None:
    """Refuse (`OasisImportError`, one line) a database holding views (`tables`: name -> kind,
    read from `path` if not given): OASIS makes none, and a view in place of a table could
    compute rows without end."""
    if tables is None:
        conn = connect_read(path)
        try:
            tables = _tables(conn)
        finally:
            conn.close()
    views = [f"`{name}`" for name, kind in tables.items() if kind != "table"]
    if views:
        are = "is a view" if len(views) == 1 else "are views"
        raise OasisImportError(
            f"{path}: not an OASIS database: {', '.join(sorted(views))} {are}, where OASIS has only tables"
        )


def is_oasis_db(path: str | Path) -> bool:
    """True for a database with OASIS's tables (`user` a table, `post`) and no oasis-gym `meta`."""
    if not Path(path).is_file():
        return False
    conn = connect_read(path)
    try:
        tables = _tables(conn)
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()
    return tables.get("user") == "table" and "post" in tables and "meta" not in tables


def load_oasis(
    path: str | Path,
    *,
    minutes_per_step: int = 3,
    start_minute: int = 8 * 60,
    platform: str | None = None,
    strict: bool = False,
) -> OasisImport:
    """Load every user, post, comment and relation of an OASIS database into a Platform whose
    clock stands after the last recorded step. The file is opened read-only."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no database at {path}")
    conn = connect_read(path)
    try:
        try:
            tables = _tables(conn)
        except sqlite3.DatabaseError as err:
            raise OasisImportError(f"{path}: not an SQLite database ({err})") from err
        missing = [t for t in ("user", "post") if t not in tables]
        if missing:
            raise OasisImportError(f"{path}: not an OASIS database (no {', '.join(missing)} table)")
        check_tables(path, tables)
        return _load(conn, tables, minutes_per_step, start_minute, platform, strict)
    except sqlite3.Error as err:  # text that is no UTF-8 (a lone surrogate too), a damaged file
        raise OasisImportError(f"{path}: a row cannot be read ({err})") from err
    except ValueError as err:  # an id column holding text, a clock past the year 9999 (not an OasisImportError)
        if isinstance(err, OasisImportError):
            raise
        raise OasisImportError(f"{path}: {err}") from err
    finally:
        conn.close()


def _load(conn, tables, minutes_per_step, start_minute, platform, strict) -> OasisImport:
    users = conn.execute(
        "SELECT user_id, user_name, name, bio, created_at, num_followers, num_followings FROM user ORDER BY user_id"
    ).fetchall()
    posts = conn.execute(
        "SELECT post_id, user_id, original_post_id, content, quote_content, created_at, num_likes,"
        " num_dislikes, num_shares, num_reports FROM post ORDER BY post_id"
    ).fetchall()
    comments = (
        conn.execute(
            "SELECT comment_id, post_id, user_id, content, created_at, num_likes, num_dislikes"
            " FROM comment ORDER BY comment_id"
        ).fetchall()
        if "comment" in tables
        else []
    )
    trace_times = (
        [r[0] for r in conn.execute("SELECT created_at FROM trace ORDER BY rowid")] if "trace" in tables else []
    )
    # one clock for every table: steps, or minutes since the earliest datetime anywhere
    all_times = [r[4] for r in users] + [r[5] for r in posts] + [r[4] for r in comments] + trace_times
    step_all, minute_all, time_kind = time_steps(all_times, minutes_per_step)
    first, last = start_minute + minute_all.min(initial=0), start_minute + minute_all.max(initial=0) + minutes_per_step
    if first < MINUTE_RANGE[0] or last > MINUTE_RANGE[1]:
        raise OasisImportError(
            f"its clock (steps x --minutes-per-step {minutes_per_step}) reaches minute {max(-first, last):,}"
            f" from the start, before the year 1 or past the year 9999: lower --minutes-per-step"
        )
    cuts = np.cumsum([len(users), len(posts), len(comments)])
    u_min, p_min, c_min, t_min = np.split(minute_all, cuts)
    p_step, c_step, t_step = np.split(step_all, cuts)[1:]
    last_step = int(step_all.max(initial=-1))

    ids = IdMaps(
        id_column(users, "user.user_id"), id_column(posts, "post.post_id"), id_column(comments, "comment.comment_id")
    )
    name = platform or ("reddit" if time_kind == "datetime" else "twitter")
    pf = Platform(PlatformConfig(name=name), start_minute=start_minute)
    out = OasisImport(pf, ids, time_kind)
    out.trace_step, out.trace_minute = t_step, t_min
    n_u = len(users)
    pf.add_users(OasisProfiles(users))
    pf.pending.new_users.clear()  # written below, with everything else, by the caller's journal
    pf.u_created_minute.a[:] = start_minute + u_min

    # posts: kinds, roots, content as ours (a repost carries what it shares)
    author = map_ids(ids.user, int_column(posts, 1, label="post.user_id"))
    root_oasis = int_column(posts, 2, label="post.original_post_id")
    root = np.where(root_oasis >= 0, map_ids(ids.post, root_oasis), -1)
    keep = author >= 0
    bad_root = (root_oasis >= 0) & (root < 0)
    if not keep.all():
        raise OasisImportError(f"{int((~keep).sum())} posts name users missing from the user table")
    _drop(out, "post.original_post_id", int(bad_root.sum()))  # kept as originals
    kind = np.where(root < 0, ORIGINAL, np.where([r[4] is None for r in posts], REPOST, QUOTE)).astype(np.int8)
    content = [r[3] if r[3] is not None else "" for r in posts]
    quote = [r[4] for r in posts]
    for p in np.flatnonzero(kind == REPOST).tolist():  # ids ascend: a shared post comes first
        if root[p] < p:
            content[p], quote[p] = content[root[p]], quote[root[p]]
    k = len(posts)
    p_min = np.maximum.accumulate(p_min) if k else p_min  # feeds and trends need time-ordered ids
    pf._new_posts(np.maximum(author, 0), ORIGINAL, root, content, quote)
    pf.p_kind.a[:] = kind
    pf.p_minute.a[:] = start_minute + p_min
    pf.p_step.a[:] = p_step
    pf.pending.new_posts.clear()

    # comments
    c_post = map_ids(ids.post, int_column(comments, 1, label="comment.post_id"))
    c_author = map_ids(ids.user, int_column(comments, 2, label="comment.user_id"))
    bad = (c_post < 0) | (c_author < 0)
    if bad.any():
        raise OasisImportError(f"{int(bad.sum())} comments name posts or users missing from their tables")
    if comments:
        pf._new_comments(c_author, c_post, [r[3] or "" for r in comments], np.full(len(comments), np.nan, np.float32))
        pf.c_minute.a[:] = start_minute + np.maximum.accumulate(c_min)
        pf.c_step.a[:] = c_step
        pf.pending.new_comments.clear()

    # relations, numbered 0.. in OASIS row order
    for rel, (table, id_col, col_a, col_b, kind_a, kind_b) in OASIS_RELATIONS.items():
        if table.strip('"') not in tables:
            pf.rel[rel] = PairSet(values=[])
            continue
        extra = ", report_reason" if rel == "report" else ""
        rows = conn.execute(f"SELECT {col_a}, {col_b}{extra} FROM {table} ORDER BY {id_col}").fetchall()
        maps = {"user": ids.user, "post": ids.post, "comment": ids.comment}
        name = table.strip('"')
        a = map_ids(maps[kind_a], int_column(rows, 0, label=f"{name}.{col_a}"))
        b = map_ids(maps[kind_b], int_column(rows, 1, label=f"{name}.{col_b}"))
        keys = pair_keys(np.maximum(a, 0), np.maximum(b, 0))
        ok = (a >= 0) & (b >= 0)
        valid = np.flatnonzero(ok)
        ok[valid] = False  # then only the first row of each pair
        ok[valid[np.unique(keys[valid], return_index=True)[1]]] = True
        _drop(out, name, int((~ok).sum()))
        keys = keys[ok]
        pf._add_pairs(rel, keys)
        if rel == "report":
            pf.pending.report_reasons.extend(r[2] or "" for r, good in zip(rows, ok.tolist()) if good)
        out.counts[name] = int(ok.sum())
    reposts = pf.p_kind.a == REPOST
    pf.rel["repost"] = PairSet(pair_keys(pf.p_author.a[reposts], pf.p_root.a[reposts]))

    _check_counters(out, users, posts, comments)
    if strict and out.mismatches:
        raise OasisImportError(f"counters disagree with the rows: {out.mismatches} (e.g. {out.examples[:3]})")
    out.counts.update(user=n_u, post=k, comment=len(comments), trace=len(trace_times))
    pf.step = last_step + 1
    pf.minute = start_minute + (int(minute_all.max(initial=0)) // minutes_per_step + 1) * minutes_per_step
    # every row is new to the journal that will hold it
    pf.pending.new_users.append(np.arange(n_u, dtype=np.int64))
    pf.pending.new_posts.append(np.arange(k, dtype=np.int64))
    pf.pending.new_comments.append(np.arange(len(comments), dtype=np.int64))
    pf.pending.touched_posts.append(np.arange(k, dtype=np.int64))
    pf.pending.touched_comments.append(np.arange(len(comments), dtype=np.int64))
    return out


def _drop(out: OasisImport, table: str, n: int) -> None:
    if n:
        out.dropped[table] = out.dropped.get(table, 0) + n


def _check_counters(out: OasisImport, users, posts, comments) -> None:
    """Compare each stored counter with the rows; the rows win."""
    pf = out.platform

    def count(rel: str, side: int, n: int) -> np.ndarray:
        keys = pf.rel[rel].keys()
        return np.bincount(unpack_keys(keys)[side], minlength=n).astype(np.int32)

    n_u, n_p, n_c = pf.n_users, pf.n_posts, pf.n_comments
    shares = np.bincount(pf.p_root.a[pf.p_root.a >= 0], minlength=n_p).astype(np.int32)
    checks = [
        ("user", users, 5, "num_followers", pf.u_followers, count("follow", 1, n_u)),
        ("user", users, 6, "num_followings", pf.u_followings, count("follow", 0, n_u)),
        ("post", posts, 6, "num_likes", pf.p_likes, count("like", 1, n_p)),
        ("post", posts, 7, "num_dislikes", pf.p_dislikes, count("dislike", 1, n_p)),
        ("post", posts, 8, "num_shares", pf.p_shares, shares),
        ("post", posts, 9, "num_reports", pf.p_reports, count("report", 1, n_p)),
        ("comment", comments, 5, "num_likes", pf.c_likes, count("comment_like", 1, n_c)),
        ("comment", comments, 6, "num_dislikes", pf.c_dislikes, count("comment_dislike", 1, n_c)),
    ]
    for table, rows, k, column, col, counted in checks:
        stored = int_column(rows, k, fill=0, label=f"{table}.{column}")
        wrong = np.flatnonzero(stored != counted)
        if wrong.size:
            out.mismatches[f"{table}.{column}"] = int(wrong.size)
            out.examples += [(table, int(rows[i][0]), column, int(stored[i]), int(counted[i])) for i in wrong[:3]]
        col.a[:] = counted
    pf.p_comments.a[:] = np.bincount(pf.c_post.a, minlength=n_p).astype(np.int32)


def journal_path(src: str | Path, out: str | Path) -> Path:
    """Where `import_oasis(src, out)` writes: `out`, or inside it when it names a folder (it
    ends with a slash, or is one): ``<out>/<src's stem>.db``."""
    text = str(out)
    if text.endswith(("/", os.sep)) or os.path.isdir(text):
        return Path(text) / f"{Path(src).stem}.db"
    return Path(text)


def is_import(path: Path) -> bool:
    """Whether `path` holds a journal `import_oasis` wrote that no run has continued since."""
    try:
        if what_is(path) != JOURNAL:
            return False
        meta = read_meta(path)
    except JournalError:
        return False
    done = meta.get("oasis_import")
    return isinstance(done, dict) and done.get("step") == meta.get("step")


def write_import(src: str | Path, path: str | Path, *, meta: dict | None = None, **load_kwargs) -> OasisImport:
    """Convert the OASIS database `src` (only read) into a new oasis-gym journal at `path`, a
    name nothing else uses (the command's staged name: `oasis-gym import` applies the output rule
    and renames the journal into place): every row, the id maps (table `oasis_id_map`) and
    OASIS's trace (with our step and result='ok'; OASIS traces only accepted actions).
    `Platform.from_db` then restores the state and a run can go on from it."""
    src = Path(src)
    result = load_oasis(src, **load_kwargs)
    pf = result.platform

    def extra(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE oasis_id_map (kind TEXT, id INTEGER, oasis_id INTEGER, PRIMARY KEY (kind, id))")
        for kind, arr in (("user", result.ids.user), ("post", result.ids.post), ("comment", result.ids.comment)):
            conn.executemany(
                "INSERT INTO oasis_id_map VALUES (?, ?, ?)", [(kind, i, int(o)) for i, o in enumerate(arr.tolist())]
            )
        _copy_trace(src, conn, result, load_kwargs.get("start_minute", 8 * 60))

    journal = Journal(path, pipelined=False)
    try:
        journal.commit_step(
            pf, extra=extra, meta={"oasis_import": {"source": str(src), **result.summary()}, **(meta or {})}
        )
    finally:
        journal.close()
    if any(os.path.exists(f"{path}{suffix}") for suffix in SIBLINGS):  # (closed: SQLite removed them)
        raise JournalError(f"{path}: the new journal was not closed cleanly")
    return result


def _copy_trace(src: Path, conn: sqlite3.Connection, result: OasisImport, start_minute: int) -> None:
    """OASIS's trace rows, in order, with our user ids, step, time text and result 'ok' (their
    info JSON keeps OASIS's ids)."""
    s = connect_read(src)
    try:
        if s.execute("SELECT 1 FROM sqlite_master WHERE name = 'trace'").fetchone() is None:
            return
        rows = s.execute("SELECT user_id, action, info FROM trace ORDER BY rowid").fetchall()
    finally:
        s.close()
    user = map_ids(result.ids.user, int_column(rows, 0, label="trace.user_id"))
    conn.executemany(
        "INSERT INTO trace(user_id, created_at, action, info, step, result) VALUES (?, ?, ?, ?, ?, 'ok')",
        [
            (int(u) if u >= 0 else r[0], datetime_text(start_minute + int(m)), r[1], r[2], int(st))
            for r, u, m, st in zip(rows, user.tolist(), result.trace_minute.tolist(), result.trace_step.tolist())
        ],
    )
