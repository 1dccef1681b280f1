"""A step's rows: what `Journal` writes of a Platform's `StepLog`, as multi-row statements
(new users, posts, comments and relation rows, deleted relation rows, counter upserts, trace
rows with their OASIS-style info JSON, opinions, moderation)."""

from __future__ import annotations

import dataclasses
import functools
import json
import sqlite3
from collections.abc import Callable
from json.encoder import encode_basestring  # json.dumps(str, ensure_ascii=False), in C

import numpy as np

from ..actions import NUM_ACTIONS, RESULT_NAMES
from .follow_seed import FollowSeed
from .journal_schema import RELATION_TABLES
from .platform import Platform
from .records import TRACE_CREATED_KEY, TRACE_TARGET_KEY, TRACE_TEXT_KEY, StepLog, TraceRows, action_names
from .row_writer import RowWriter, Same, nan_to_null
from .store import unpack_keys

# The state columns a step may change in place, (journal column -> Platform column) by table.
_POST_STATE = {
    "num_likes": "p_likes",
    "num_dislikes": "p_dislikes",
    "num_shares": "p_shares",
    "num_reports": "p_reports",
    "num_comments": "p_comments",
    "status": "p_status",
}
_COMMENT_STATE = {"num_likes": "c_likes", "num_dislikes": "c_dislikes"}
_USER_STATE = {"num_followers": "u_followers", "num_followings": "u_followings", "suspended": "u_suspended"}


@functools.cache
def _upsert_sql(table: str, key: str, columns: tuple[str, ...]) -> tuple[str, str]:
    """(head, tail) of an upsert setting `columns` of the rows keyed by `key`."""
    head = f"INSERT INTO {table}({key}, {', '.join(columns)}) VALUES "
    return head, f" ON CONFLICT({key}) DO UPDATE SET " + ", ".join(f"{c}=excluded.{c}" for c in columns)


def write_step(
    conn: sqlite3.Connection,
    pf: Platform,
    log: StepLog,
    emit: Callable[[str, list], object],
    follow: FollowSeed | None = None,
    first: bool = False,
) -> None:
    """Build the step's statements and pass each to `emit(sql, params)`. `follow`: how the
    journal stores follows (plain when None); `first`: a new journal's first commit (which
    may seed the follow graph compactly)."""
    now = pf.created_at()
    step = pf.step
    sql = RowWriter(conn, emit)
    if log.new_users:
        ids = np.unique(np.concatenate(log.new_users))  # a sign-up may repeat a new user
        _write_users(conn, sql, pf, ids, now)
    _write_posts(sql, pf, log)
    _write_comments(sql, pf, log)
    _write_relations(sql, log, now, follow, first)
    _write_counters(sql, pf, log)
    _write_history(sql, log, now, step)


def _write_posts(sql: RowWriter, pf: Platform, log: StepLog) -> None:
    """The step's new posts (reposts and quotes included)."""
    if not log.new_posts:
        return
    ids = np.concatenate(log.new_posts)
    minutes = pf.p_minute.a[ids]
    sql.rows(
        "INSERT INTO post(post_id, user_id, original_post_id, content, quote_content, created_at, kind,"
        " step, minute, stance, label, status) VALUES ",
        [
            ids,
            pf.p_author.a[ids],
            [None if r < 0 else r for r in pf.p_root.a[ids].tolist()],
            [pf.p_content[p] for p in ids.tolist()],
            [pf.p_quote[p] for p in ids.tolist()],
            _created(pf, minutes),
            pf.p_kind.a[ids],
            pf.p_step.a[ids],
            minutes,
            nan_to_null(pf.p_stance.a[ids]),
            pf.p_label.a[ids],
            pf.p_status.a[ids],
        ],
    )


def _write_comments(sql: RowWriter, pf: Platform, log: StepLog) -> None:
    """The step's new comments."""
    if not log.new_comments:
        return
    ids = np.concatenate(log.new_comments)
    minutes = pf.c_minute.a[ids]
    sql.rows(
        "INSERT INTO comment(comment_id, post_id, user_id, content, created_at, step, minute, stance) VALUES ",
        [
            ids,
            pf.c_post.a[ids],
            pf.c_author.a[ids],
            [pf.c_content[c] for c in ids.tolist()],
            _created(pf, minutes),
            pf.c_step.a[ids],
            minutes,
            nan_to_null(pf.c_stance.a[ids]),
        ],
    )


def _write_relations(sql: RowWriter, log: StepLog, now: str, follow: FollowSeed | None, first: bool) -> None:
    """Relation rows (follow, like, mute, report, ...) added and deleted by their row ids."""
    for name, chunks in log.inserts.items():
        table, id_col, col_a, col_b = RELATION_TABLES[name]
        if name == "follow" and follow is not None:
            chunks = follow.write_seed(sql, chunks, now) if first else chunks
            table = follow.table
            if not chunks:
                continue
        a, b = unpack_keys(np.concatenate([keys for keys, _ in chunks]))
        ids = np.concatenate([ids for _, ids in chunks])
        if name == "report":
            sql.rows(
                f"INSERT INTO {table}({id_col}, {col_a}, {col_b}, report_reason, created_at) VALUES ",
                [ids, a, b, log.report_reasons, Same(now)],
            )
        else:
            sql.rows(f"INSERT INTO {table}({id_col}, {col_a}, {col_b}, created_at) VALUES ", [ids, a, b, Same(now)])
    for name, chunks in log.deletes.items():
        table, id_col, _, _ = RELATION_TABLES[name]
        if name == "follow" and follow is not None:
            follow.delete(sql, np.concatenate(chunks))
        else:
            sql.rows(f"DELETE FROM {table} WHERE {id_col} IN (VALUES ", [np.concatenate(chunks)], ")")


def _write_counters(sql: RowWriter, pf: Platform, log: StepLog) -> None:
    """The counters of the posts, comments and users the step touched."""
    # Counter updates as upserts of rows that exist (written at creation, earlier in this
    # transaction at the latest): half the cost of UPDATE ... FROM (VALUES ...), which
    # materializes and joins the values first.
    for table, key, touched, columns in (
        ("post", "post_id", log.touched_posts, _POST_STATE),
        ("comment", "comment_id", log.touched_comments, _COMMENT_STATE),
        ("user_state", "user_id", log.touched_users, _USER_STATE),
    ):
        if touched:
            ids = np.unique(np.concatenate(touched))
            head, tail = _upsert_sql(table, key, tuple(columns))
            sql.rows(head, [ids, *(getattr(pf, attr).a[ids].astype(np.int64) for attr in columns.values())], tail)


def _write_history(sql: RowWriter, log: StepLog, now: str, step: int) -> None:
    """The step's trace rows, opinion records and moderation records."""
    for tr in log.traces:
        sql.rows(
            "INSERT INTO trace(user_id, created_at, action, info, step, result) VALUES ",
            [
                tr.user,
                Same(now),
                action_names(tr.action),
                trace_infos(tr),
                Same(step),
                [RESULT_NAMES[r] for r in tr.result.tolist()],
            ],
        )
    for users, values in log.opinions:
        sql.rows("INSERT INTO opinion(user_id, step, opinion) VALUES ", [users, Same(step), values])
    for kind, ids, action in log.moderation:
        sql.rows(
            "INSERT INTO moderation(target_id, step, target, action, created_at) VALUES ",
            [ids, Same(step), Same(kind), Same(action), Same(now)],
        )


@functools.cache
def _info_format(action: int, created: bool, text: bool, error: bool) -> str:
    """The %-format of an info JSON with the given parts, in a fixed order: target, created
    id, text, error."""
    parts = []
    if action < NUM_ACTIONS and TRACE_TARGET_KEY[action]:
        parts.append(f'"{TRACE_TARGET_KEY[action]}": %d')
    if created:
        parts.append(f'"{TRACE_CREATED_KEY[action]}": %d')
    if text:
        parts.append(f'"{TRACE_TEXT_KEY[action]}": %s')
    if error:
        parts.append('"error": "%s"')
    return "{" + ", ".join(parts) + "}"


def trace_infos(tr: TraceRows) -> list[str]:
    """Each trace row's info JSON, OASIS-style: {"post_id": 3}, {"post_id": 9, "content": ...},
    with "error" naming the reason of a rejected action. Rows are grouped by which parts they
    have (a few dozen groups per step), and each group is formatted in one comprehension."""
    n = len(tr.action)
    code = np.where((tr.action >= 0) & (tr.action < NUM_ACTIONS), tr.action, NUM_ACTIONS)  # invalid: no keys
    has_text = np.zeros(n, dtype=bool)
    has_text[list(tr.texts)] = True
    created, error = tr.new_id >= 0, tr.result != 0
    group = ((code * 2 + created) * 2 + has_text) * 2 + error
    out = np.empty(n, dtype=object)
    order = np.argsort(group, kind="stable")  # each group's rows in row order
    ordered = group[order]
    starts = np.flatnonzero(np.diff(ordered, prepend=-1))
    for g, lo, hi in zip(ordered[starts].tolist(), starts.tolist(), [*starts[1:].tolist(), n]):
        rows = order[lo:hi]
        a, c, t, e = g >> 3, bool(g & 4), bool(g & 2), bool(g & 1)
        fmt = _info_format(a, c, t, e)
        cols = []
        if a < NUM_ACTIONS and TRACE_TARGET_KEY[a]:
            cols.append(tr.target[rows].tolist())
        if c:
            cols.append(tr.new_id[rows].tolist())
        if t:
            cols.append([encode_basestring(tr.texts[k]) for k in rows.tolist()])
        if e:
            cols.append([RESULT_NAMES[r] for r in tr.result[rows].tolist()])
        out[rows] = [fmt % args for args in zip(*cols)] if cols else fmt
    return out.tolist()


def _write_users(conn: sqlite3.Connection, sql: RowWriter, pf: Platform, ids: np.ndarray, now: str) -> None:
    existing = conn.execute("SELECT COUNT(*) FROM user_account").fetchone()[0]
    new = ids[ids >= existing]
    signed_again = ids[ids < existing]
    if len(signed_again):
        sql.rows("UPDATE user_state SET signed_up=1 WHERE user_id IN (VALUES ", [signed_again], ")")
    if not len(new):
        return
    for lo in range(0, len(new), _USER_BLOCK):  # in blocks: the texts of 10M users never all at once
        _write_new_users(sql, pf, new[lo : lo + _USER_BLOCK])


_USER_BLOCK = 1 << 16  # small: a first commit's statement thread writes one block while the next is made


def _write_new_users(sql: RowWriter, pf: Platform, new: np.ndarray) -> None:
    """The account, state and profile rows of users new to the journal."""
    sql.rows(
        "INSERT INTO user_account(user_id, agent_id, user_name, name, bio, created_at) VALUES ",
        [
            new,
            new,
            pf.u_user_name.texts(new),
            pf.u_name.texts(new),
            pf.u_bio.texts(new),
            _created(pf, pf.u_created_minute.a[new]),
        ],
    )
    sql.rows(
        "INSERT INTO user_state(user_id, num_followings, num_followers, signed_up, suspended) VALUES ",
        [
            new,
            pf.u_followings.a[new],
            pf.u_followers.a[new],
            pf.u_signed_up.a[new].astype(int),
            pf.u_suspended.a[new].astype(int),
        ],
    )
    act = np.ascontiguousarray(pf.u_activity.a[new])
    sql.rows(
        "INSERT INTO user_profile(user_id, persona, is_core, interests, activity, opinion) VALUES ",
        [
            new,
            pf.u_persona.texts(new),
            pf.u_is_core.a[new].astype(int),
            pf.u_interests.a[new].astype(np.int64),
            act.view(np.dtype((np.void, act.shape[1] * act.itemsize))).reshape(-1).tolist(),  # each row's bytes
            pf.u_opinion.a[new],
        ],
    )


def _created(pf: Platform, minutes: np.ndarray) -> Same | list[str]:
    """The DATETIME texts of `minutes`: one `Same` value where all are one minute (a step's
    new rows, a start's users), else each distinct minute formatted once."""
    if len(minutes) and minutes.min() == minutes.max():
        return Same(pf.created_at(int(minutes[0])))
    distinct, at = np.unique(minutes, return_inverse=True)
    texts = np.empty(len(distinct), dtype=object)
    texts[:] = [pf.created_at(m) for m in distinct.tolist()]
    return texts[at.reshape(-1)].tolist()


_SETTINGS_JSON: dict[tuple[type, str], str] = {}


def meta_json(value) -> str:
    """A meta row's value as JSON. A settings dataclass (a run's configs, written with every
    step and the same all run long) is encoded once per distinct repr: asdict + dumps cost
    ~45 us a step at 100 users."""
    if not dataclasses.is_dataclass(value):
        return json.dumps(value)
    key = (type(value), repr(value))
    text = _SETTINGS_JSON.get(key)
    if text is None:
        if len(_SETTINGS_JSON) >= 64:
            _SETTINGS_JSON.clear()
        text = _SETTINGS_JSON[key] = json.dumps(dataclasses.asdict(value))
    return text
