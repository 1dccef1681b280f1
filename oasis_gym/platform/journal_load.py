"""Reading a journal back: its meta rows (`read_meta`) and the exact in-memory Platform it
records (`load_platform`, what `Platform.from_db` does for a journal)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from itertools import chain
from pathlib import Path

import numpy as np

from ..errors import JournalError
from .config import PlatformConfig
from .integrity import first_inconsistency
from .journal_file import busy, connect_read, require_journal
from .journal_lock import JournalLock
from .journal_schema import RELATION_TABLES
from .kinds import REPOST
from .platform import Platform
from .store import GrowArray, PairSet, pair_keys


@contextlib.contextmanager
def held_to_resume(path: str | Path):
    """Read a journal this process is about to resume (to write) under its writer's lock: what is
    read is read in place (`read_uri`), never a private copy of the whole file. `JournalError`
    if another writer holds it."""
    lock = JournalLock(str(path))
    try:
        yield
    finally:
        lock.release()


def read_meta(path: str | Path) -> dict:
    """The meta rows of a journal (step, minute, configs, generator states ...). Raises
    `JournalError` if `path` holds no oasis-gym journal or its meta is not readable."""
    require_journal(path)
    try:
        conn = connect_read(path)
        try:
            return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
        finally:
            conn.close()
    except (sqlite3.Error, ValueError, RecursionError) as err:
        raise JournalError(busy(path, err) or f"{path}: the journal's meta is damaged ({err})") from err


def load_platform(path: str | Path) -> Platform:
    """Rebuild a Platform's exact in-memory state from a journal (see Platform.from_db; what
    `run --resume` and `oasis_gym.app.run.resume` load). Raises `JournalError` if `path` holds no
    oasis-gym journal, or a damaged one: unreadable rows, or rows that contradict each other
    (an id naming no row, an unknown code: `integrity`), found before a run goes on from it."""
    require_journal(path)
    try:
        pf = _load_platform(path)
    except (sqlite3.Error, ValueError, TypeError, IndexError, OverflowError, RecursionError) as err:  # (chained)
        raise JournalError(busy(path, err) or f"{path}: the journal is damaged and cannot be loaded ({err!r})") from err
    problem = first_inconsistency(pf)
    if problem:
        raise JournalError(f"{path}: the journal is damaged: {problem}")
    return pf


def _load_platform(path: str | Path) -> Platform:
    conn = connect_read(path, isolation_level=None)
    try:
        conn.execute("BEGIN")  # one snapshot of every table, even while another process commits steps
        meta = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
        config = PlatformConfig(
            **{k: (tuple(v) if isinstance(v, list) else v) for k, v in meta.get("platform_config", {}).items()}
        )
        pf = Platform(config, start_minute=int(meta.get("minute", 0)))
        pf.step = int(meta.get("step", 0))
        _load_users(conn, pf)
        _load_posts(conn, pf)
        _load_comments(conn, pf)
        for name, (table, id_col, col_a, col_b) in RELATION_TABLES.items():
            n = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            # streamed into one array: no list of row tuples (27M follow rows at 1M users)
            rows = np.fromiter(
                chain.from_iterable(conn.execute(f"SELECT {col_a}, {col_b}, {id_col} FROM {table}")),
                dtype=np.int64,
                count=3 * n,
            ).reshape(n, 3)
            pf.rel[name] = PairSet(pair_keys(rows[:, 0], rows[:, 1]), rows[:, 2])
            pf.next_row_id[name] = int(meta.get("next_row_id", {}).get(name, rows[:, 2].max(initial=-1) + 1))
        reposts = pf.p_kind.a == REPOST
        pf.rel["repost"] = PairSet(pair_keys(pf.p_author.a[reposts], pf.p_root.a[reposts]))
    finally:
        conn.close()
    return pf


def _columns(conn, sql: str, n: int, table: str) -> list:
    """The result columns of `sql`, whose first column must be the ids 0..rows-1."""
    rows = conn.execute(sql).fetchall()
    cols = [list(c) for c in zip(*rows)] if rows else [[] for _ in range(n)]
    if cols[0] != list(range(len(rows))):
        raise ValueError(f"{table} ids in the journal are not 0..n-1")
    return cols


def _load_users(conn, pf: Platform) -> None:
    cols = _columns(
        conn,
        "SELECT u.user_id, user_name, name, bio, persona, signed_up, suspended, is_core,"
        " IFNULL((SELECT o.opinion FROM opinion o WHERE o.user_id = u.user_id"
        "  ORDER BY o.step DESC, o.rowid DESC LIMIT 1), p.opinion),"
        " interests, activity, num_followers, num_followings,"
        " CAST(ROUND((julianday(created_at) - julianday('2026-01-01')) * 1440) AS INTEGER)"
        " FROM user u JOIN user_profile p ON p.user_id = u.user_id ORDER BY u.user_id",
        14,
        "user",
    )
    n = len(cols[0])
    pf.u_user_name.extend(cols[1])
    pf.u_name.extend(cols[2])
    pf.u_bio.extend(cols[3])
    pf.u_persona.extend(cols[4])  # noqa: E702
    _extend(cols, 5, pf.u_signed_up, pf.u_suspended, pf.u_is_core, pf.u_opinion)
    pf.u_interests.extend(np.array(cols[9], dtype=np.int64).astype(np.uint64))
    pf.u_activity.extend(np.frombuffer(b"".join(cols[10]), dtype=np.float32).reshape(n, 24) if n else np.zeros((0, 24)))
    _extend(cols, 11, pf.u_followers, pf.u_followings, pf.u_created_minute)
    pf.u_posts.append_fill(n)
    pf.u_last_post.append_fill(n)


def _load_posts(conn, pf: Platform) -> None:
    cols = _columns(
        conn,
        "SELECT post_id, user_id, IFNULL(original_post_id, -1), content, quote_content, kind, step,"
        " minute, num_likes, num_dislikes, num_shares, num_reports, num_comments, IFNULL(stance, 'nan'),"
        " label, status FROM post ORDER BY post_id",
        16,
        "post",
    )
    n = len(cols[0])
    authors = np.array(cols[1], dtype=np.int64)
    pf.p_author.extend(authors)
    pf.p_root.extend(np.array(cols[2], dtype=np.int64))
    pf.p_content.extend(cols[3])
    pf.p_quote.extend(cols[4])  # noqa: E702
    counters = (pf.p_likes, pf.p_dislikes, pf.p_shares, pf.p_reports, pf.p_comments)
    _extend(cols, 5, pf.p_kind, pf.p_step, pf.p_minute, *counters, pf.p_stance, pf.p_label, pf.p_status)
    prev, last = _chain(authors, pf.n_users)
    pf.u_posts.a[:] = np.bincount(authors, minlength=pf.n_users)
    pf.p_prev_by_author.extend(prev)
    pf.u_last_post.a[:] = last
    pf.p_last_comment.append_fill(n)


def _load_comments(conn, pf: Platform) -> None:
    cols = _columns(
        conn,
        "SELECT comment_id, post_id, user_id, content, step, minute, num_likes, num_dislikes,"
        " IFNULL(stance, 'nan') FROM comment ORDER BY comment_id",
        9,
        "comment",
    )
    posts = np.array(cols[1], dtype=np.int64)
    pf.c_post.extend(posts)
    pf.c_author.extend(np.array(cols[2], dtype=np.int64))
    pf.c_content.extend(cols[3])
    _extend(cols, 4, pf.c_step, pf.c_minute, pf.c_likes, pf.c_dislikes, pf.c_stance)
    prev, last = _chain(posts, pf.n_posts)
    pf.c_prev_on_post.extend(prev)
    pf.p_last_comment.a[:] = last


def _extend(cols: list, first: int, *columns: GrowArray) -> None:
    """Append the result columns `cols[first]`, `cols[first + 1]`, ... to `columns`, each in its
    column's dtype (float columns read NULL and 'nan' as NaN)."""
    for k, col in enumerate(columns, first):
        col.extend(np.array(cols[k], dtype=np.float64 if col.dtype.kind == "f" else None))


def _chain(owner: np.ndarray, n_owners: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-owner linked lists over items in id order: (previous item of the same owner or -1,
    last item of each owner or -1). Vectorized with a stable sort."""
    ids = np.arange(len(owner), dtype=np.int64)
    order = np.argsort(owner, kind="stable")
    prev = np.full(len(owner), -1, dtype=np.int64)
    same = owner[order][1:] == owner[order][:-1]
    prev[order[1:][same]] = order[:-1][same]
    last = np.full(n_owners, -1, dtype=np.int64)
    np.maximum.at(last, owner, ids)
    return prev, last
