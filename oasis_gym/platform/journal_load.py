"""Reading a journal back: its meta rows (`read_meta`) and the exact in-memory Platform it
records (`load_platform`, what `Platform.from_db` does for a journal)."""

from __future__ import annotations

import json
import sqlite3
from itertools import chain
from pathlib import Path

import numpy as np

from .config import PlatformConfig
from .journal_file import JournalError, connect_readonly, require_journal
from .journal_schema import RELATION_TABLES
from .kinds import REPOST
from .platform import Platform
from .store import PairSet, pair_keys


def read_meta(path: str | Path) -> dict:
    """The meta rows of a journal (step, minute, configs, generator states ...). Raises
    `JournalError` if `path` holds no oasis-gym journal or its meta is not readable."""
    require_journal(path)
    try:
        conn = connect_readonly(path)
        try:
            return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
        finally:
            conn.close()
    except (sqlite3.Error, ValueError, RecursionError) as err:
        raise JournalError(f"{path}: the journal's meta is damaged ({err})") from err


def load_platform(path: str | Path) -> Platform:
    """Rebuild a Platform's exact in-memory state from a journal (see Platform.from_db).
    Raises `JournalError` if `path` holds no oasis-gym journal or a damaged one."""
    require_journal(path)
    try:
        return _load_platform(path)
    except (sqlite3.Error, ValueError, TypeError) as err:  # what a damaged journal raises here (chained)
        raise JournalError(f"{path}: the journal is damaged and cannot be loaded ({err!r})") from err


def _load_platform(path: str | Path) -> Platform:
    conn = connect_readonly(path, isolation_level=None)
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
    pf.u_signed_up.extend(np.array(cols[5], dtype=bool))
    pf.u_suspended.extend(np.array(cols[6], dtype=bool))
    pf.u_is_core.extend(np.array(cols[7], dtype=bool))
    pf.u_opinion.extend(np.array(cols[8], dtype=np.float32))
    pf.u_interests.extend(np.array(cols[9], dtype=np.int64).astype(np.uint64))
    pf.u_activity.extend(np.frombuffer(b"".join(cols[10]), dtype=np.float32).reshape(n, 24) if n else np.zeros((0, 24)))
    pf.u_followers.extend(np.array(cols[11], dtype=np.int32))
    pf.u_followings.extend(np.array(cols[12], dtype=np.int32))
    pf.u_created_minute.extend(np.array(cols[13], dtype=np.int64))
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
    for col, k, dtype in (
        (pf.p_kind, 5, np.int8),
        (pf.p_step, 6, np.int32),
        (pf.p_minute, 7, np.int64),
        (pf.p_likes, 8, np.int32),
        (pf.p_dislikes, 9, np.int32),
        (pf.p_shares, 10, np.int32),
        (pf.p_reports, 11, np.int32),
        (pf.p_comments, 12, np.int32),
        (pf.p_stance, 13, np.float32),
        (pf.p_label, 14, np.int8),
        (pf.p_status, 15, np.int8),
    ):
        col.extend(np.array(cols[k], dtype=np.float64 if dtype == np.float32 else None).astype(dtype))
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
    pf.c_step.extend(np.array(cols[4], dtype=np.int32))
    pf.c_minute.extend(np.array(cols[5], dtype=np.int64))
    pf.c_likes.extend(np.array(cols[6], dtype=np.int32))
    pf.c_dislikes.extend(np.array(cols[7], dtype=np.int32))
    pf.c_stance.extend(np.array(cols[8], dtype=np.float64).astype(np.float32))
    prev, last = _chain(posts, pf.n_posts)
    pf.c_prev_on_post.extend(prev)
    pf.p_last_comment.a[:] = last


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
