"""SQLite journal: the OASIS tables, written once per step in ONE transaction, and read back.

Table and column names are OASIS's (user, post, comment, follow, mute, like, dislike,
comment_like, comment_dislike, report, trace, rec), so SQL written for OASIS databases runs on
ours (`user` is a view that reads like OASIS's table; see the schema). Our extra columns
(moderation status, stance, opinion, ...) and tables (opinion, moderation, meta, metrics) sit
beside them. Ids are 0-based and equal to the in-memory ids (OASIS's AUTOINCREMENT ids start
at 1; ours are inserted explicitly).

Speed: a step's rows go in multi-row statements (`RowWriter`), executed and committed on a
writer thread while the simulation goes on (`Journal`). During the run, rows only append
(relation rows carry the platform's row ids, so deletes go by id) and no index is kept up;
`close` builds the indexes analysis queries use.

Files (`journal_file`): a Journal creates or replaces only oasis-gym journals (replacing one
only when asked), holds a one-writer lock while open, and takes any legal file name.

Durability: WAL mode with synchronous=NORMAL. A process killed at any point (SIGKILL
included) leaves a database holding exactly the committed steps; only an OS crash or power
loss may lose the last few commits (synchronous=FULL closes that gap at some cost).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sqlite3
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import chain, islice
from json.encoder import encode_basestring  # json.dumps(str, ensure_ascii=False), in C
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..actions import NUM_ACTIONS, RESULT_NAMES
from .journal_file import (
    APPLICATION_ID,
    JOURNAL,
    MISSING,
    JournalError,
    JournalLock,
    connect_readonly,
    create_empty,
    prepare_new,
    require_journal,
    what_is,
)
from .platform import (
    REPOST,
    TRACE_CREATED_KEY,
    TRACE_TARGET_KEY,
    TRACE_TEXT_KEY,
    Platform,
    PlatformConfig,
    StepLog,
    TraceRows,
    action_name,
)
from .store import PairSet, pair_keys, unpack_keys

__all__ = ["Journal", "JournalError", "RowWriter", "Same", "connect", "load_platform", "read_meta"]

SCHEMA = """
-- OASIS's `user` is a view (below) over two tables: the account columns, written once, and the
-- counters and flags, which each step updates for thousands of users. Kept narrow, those
-- updates dirty a few hundred pages instead of about one page per user: they were 40% of a
-- step's write volume.
CREATE TABLE IF NOT EXISTS user_account (
    user_id INTEGER PRIMARY KEY, agent_id INTEGER, user_name TEXT, name TEXT, bio TEXT, created_at DATETIME);
CREATE TABLE IF NOT EXISTS user_state (
    user_id INTEGER PRIMARY KEY, num_followings INTEGER DEFAULT 0, num_followers INTEGER DEFAULT 0,
    signed_up INTEGER DEFAULT 1, suspended INTEGER DEFAULT 0);
CREATE VIEW IF NOT EXISTS user AS
    SELECT a.user_id, a.agent_id, a.user_name, a.name, a.bio, a.created_at, s.num_followings, s.num_followers,
           s.signed_up, s.suspended
    FROM user_account a JOIN user_state s ON s.user_id = a.user_id;
-- written once per user, like user_account
CREATE TABLE IF NOT EXISTS user_profile (
    user_id INTEGER PRIMARY KEY, persona TEXT, is_core INTEGER DEFAULT 0, interests INTEGER,
    activity BLOB, opinion REAL);
CREATE TABLE IF NOT EXISTS post (
    post_id INTEGER PRIMARY KEY, user_id INTEGER, original_post_id INTEGER, content TEXT DEFAULT '',
    image_path TEXT, quote_content TEXT, created_at DATETIME, num_likes INTEGER DEFAULT 0,
    num_dislikes INTEGER DEFAULT 0, num_shares INTEGER DEFAULT 0, num_reports INTEGER DEFAULT 0,
    num_comments INTEGER DEFAULT 0, kind INTEGER DEFAULT 0, step INTEGER, minute INTEGER,
    stance REAL, label INTEGER DEFAULT -1, status INTEGER DEFAULT 0);
CREATE TABLE IF NOT EXISTS comment (
    comment_id INTEGER PRIMARY KEY, post_id INTEGER, user_id INTEGER, content TEXT,
    created_at DATETIME, num_likes INTEGER DEFAULT 0, num_dislikes INTEGER DEFAULT 0,
    step INTEGER, minute INTEGER, stance REAL);
-- follow_id is the platform's edge id: new follows append, an unfollow deletes by row id, and
-- the pair indexes are built at close (kept up during the run, random-pair inserts were a
-- third of a step's write volume)
CREATE TABLE IF NOT EXISTS follow (follow_id INTEGER PRIMARY KEY, follower_id INTEGER, followee_id INTEGER,
    created_at DATETIME);
CREATE TABLE IF NOT EXISTS mute (mute_id INTEGER PRIMARY KEY, muter_id INTEGER, mutee_id INTEGER, created_at DATETIME);
CREATE TABLE IF NOT EXISTS "like" (like_id INTEGER PRIMARY KEY, user_id INTEGER, post_id INTEGER, created_at DATETIME);
CREATE TABLE IF NOT EXISTS dislike (dislike_id INTEGER PRIMARY KEY, user_id INTEGER, post_id INTEGER,
    created_at DATETIME);
CREATE TABLE IF NOT EXISTS comment_like (comment_like_id INTEGER PRIMARY KEY, user_id INTEGER, comment_id INTEGER,
    created_at DATETIME);
CREATE TABLE IF NOT EXISTS comment_dislike (comment_dislike_id INTEGER PRIMARY KEY, user_id INTEGER,
    comment_id INTEGER, created_at DATETIME);
CREATE TABLE IF NOT EXISTS report (report_id INTEGER PRIMARY KEY, user_id INTEGER, post_id INTEGER,
    report_reason TEXT, created_at DATETIME);
CREATE TABLE IF NOT EXISTS trace (user_id INTEGER, created_at DATETIME, action TEXT, info TEXT, step INTEGER,
    result TEXT);
CREATE TABLE IF NOT EXISTS rec (user_id INTEGER, post_id INTEGER, step INTEGER);
CREATE TABLE IF NOT EXISTS opinion (step INTEGER, user_id INTEGER, opinion REAL);
CREATE TABLE IF NOT EXISTS moderation (step INTEGER, target TEXT, target_id INTEGER, action TEXT, created_at DATETIME);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS interview (step INTEGER, user_id INTEGER, question TEXT, answer TEXT, created_at DATETIME);
"""

# What analysis queries need, built by Journal.build_query_indexes at close(). None is kept up
# during the run: row by row, random keys dirty a page each, and the pair indexes alone were
# a third of a step's write volume.
QUERY_INDEXES = """
CREATE INDEX IF NOT EXISTS idx_follow_pair ON follow(follower_id, followee_id);
CREATE INDEX IF NOT EXISTS idx_mute_pair ON mute(muter_id, mutee_id);
CREATE INDEX IF NOT EXISTS idx_like_pair ON "like"(post_id, user_id);
CREATE INDEX IF NOT EXISTS idx_dislike_pair ON dislike(post_id, user_id);
CREATE INDEX IF NOT EXISTS idx_comment_like_pair ON comment_like(comment_id, user_id);
CREATE INDEX IF NOT EXISTS idx_comment_dislike_pair ON comment_dislike(comment_id, user_id);
CREATE INDEX IF NOT EXISTS idx_report_pair ON report(post_id, user_id);
CREATE INDEX IF NOT EXISTS idx_post_user ON post(user_id);
CREATE INDEX IF NOT EXISTS idx_post_original ON post(original_post_id);
CREATE INDEX IF NOT EXISTS idx_comment_post ON comment(post_id);
CREATE INDEX IF NOT EXISTS idx_trace_step ON trace(step);
CREATE INDEX IF NOT EXISTS idx_rec_user ON rec(user_id);
CREATE INDEX IF NOT EXISTS idx_opinion_user ON opinion(user_id, step);
"""

# (table, row id column, first column, second column) of each journaled relation
RELATION_TABLES = {
    "follow": ("follow", "follow_id", "follower_id", "followee_id"),
    "mute": ("mute", "mute_id", "muter_id", "mutee_id"),
    "like": ('"like"', "like_id", "user_id", "post_id"),
    "dislike": ("dislike", "dislike_id", "user_id", "post_id"),
    "comment_like": ("comment_like", "comment_like_id", "user_id", "comment_id"),
    "comment_dislike": ("comment_dislike", "comment_dislike_id", "user_id", "comment_id"),
    "report": ("report", "report_id", "user_id", "post_id"),
}


def connect(path: str | Path) -> sqlite3.Connection:
    # the multi-row statements come in about 150 sizes (see RowWriter): keep them all prepared
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, cached_statements=1024)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=OFF")
    # index pages of large tables must stay cached, or every step pays random I/O
    conn.execute("PRAGMA cache_size=-262144")  # KiB: 256 MiB
    conn.execute("PRAGMA temp_store=MEMORY")
    # pages (64 MiB): fewer, larger checkpoints. They run inside the COMMIT that crosses the mark,
    # on the writer thread when the journal is pipelined.
    conn.execute("PRAGMA wal_autocheckpoint=16384")
    return conn


class Journal:
    """Writes a Platform's per-step changes to SQLite, one transaction per step.

    Pipelined (the default), a step's rows are built on the calling thread, then executed and
    committed on a writer thread while the caller computes the next step: SQLite releases the
    GIL while it runs a statement, and each statement carries thousands of rows, so the
    journal's SQL and I/O overlap with the simulation on a second core. Every use of `conn`
    (and the next `commit_step`, `flush`, `close`) first waits for that write, so what reads
    through the journal sees every step handed to it. A write that fails there (disk full, say) raises
    `JournalError` then and on every later use; the database holds exactly the steps before
    it (`Platform.from_db` resumes from them). `pipelined=False` commits before returning.
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        pipelined: bool = True,
        *,
        new: bool = False,
        overwrite: bool = False,
        own_journal_id: str | None = None,
        lock: JournalLock | None = None,
    ):
        """Open the journal at `path` to continue it, or create it if nothing is there.

        `new=True` starts a new journal: an existing journal at `path` is an error unless
        `overwrite=True` or its id is `own_journal_id` (the caller's own, from an earlier
        episode). Anything at `path` that is not an oasis-gym journal is refused, never
        deleted (see `journal_file`). The writer holds the journal's lock until `close`: a
        second writer gets a `JournalError` (`lock`: the lock of `path`, taken by the caller
        to read the journal first, handed over).
        """
        self.path = str(path)
        self._lock: JournalLock | None = None
        self._closed = True  # until the connection is open
        if self.path not in (":memory:", ""):
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise JournalError(f"cannot create the folder of the journal {self.path}: {err}") from err
            self._lock = lock or JournalLock(self.path)
        self._conn: sqlite3.Connection | None = None
        try:
            if self._lock is not None:
                if new or overwrite:
                    prepare_new(self.path, overwrite, own_journal_id)
                elif (what := what_is(self.path)) == MISSING:
                    create_empty(self.path)
                elif what != JOURNAL:
                    require_journal(self.path)
            self._conn = connect(self.path)
            self._open_schema()
        except BaseException as err:
            if self._conn is not None:
                self._conn.close()
            if self._lock is not None:
                self._lock.release()
            if isinstance(err, (OSError, sqlite3.Error)):
                raise JournalError(f"cannot open the journal {self.path}: {err}") from err
            raise
        self._thread_prefix = f"oasis-gym-journal-{id(self):x}"
        self._writer = ThreadPoolExecutor(1, thread_name_prefix=self._thread_prefix) if pipelined else None
        self._in_flight: Future | None = None
        self._failed: JournalError | None = None
        self._closed = False

    def _open_schema(self) -> None:
        """Create the schema (a new journal: with its application id and journal id, in one
        transaction) or check and complete it (a continued one)."""
        conn = self._conn
        if conn.execute("SELECT type FROM sqlite_master WHERE name = 'user'").fetchone() == ("table",):
            raise JournalError(
                f"{self.path}: written by an older oasis-gym or another program (its `user` is a "
                "table), which this version cannot continue"
            )
        fresh = conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
        if fresh:
            conn.executescript(
                f"BEGIN; PRAGMA application_id = {APPLICATION_ID}; {SCHEMA} "
                f"INSERT INTO meta(key, value) VALUES ('journal_id', '\"{uuid.uuid4().hex}\"'); COMMIT;"
            )
            if self.path not in (":memory:", ""):  # into the main file: its header says what it is
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        else:
            conn.executescript(SCHEMA)
        row = conn.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()
        self.journal_id: str | None = row[0] if row else None  # (the JSON text: compared, never parsed)
        self._started = conn.execute("SELECT 1 FROM meta WHERE key = 'step'").fetchone() is not None  # resuming
        if self._started:  # the run goes on appending: its indexes are rebuilt at close
            conn.executescript("".join(f"DROP INDEX IF EXISTS {name};" for name in _index_names(QUERY_INDEXES)))

    @property
    def conn(self) -> sqlite3.Connection:
        """The journal's connection, once every handed-off step is committed."""
        self.flush()
        return self._conn

    def flush(self) -> None:
        """Wait until the last handed-off step is committed; raise `JournalError` if it failed."""
        if self._in_flight is not None:
            error = self._in_flight.exception()  # waits (an interrupt here leaves the step in flight)
            self._in_flight = None
            if error is not None:
                self._failed = JournalError(
                    f"{self.path}: a step failed to commit ({error!r}); the journal holds"
                    " the steps before it, memory is ahead of it"
                )
                raise self._failed from error
        if self._failed is not None:
            raise self._failed

    def close(self, query_indexes: bool = True) -> None:
        """Close the journal, first building the query indexes (skip that for a journal about
        to be deleted). Raises `JournalError` if a handed-off step failed; closed all the same,
        and a second call does nothing."""
        if self._closed or threading.current_thread().name.startswith(self._thread_prefix):
            return  # (a garbage-collected owner on our own writer thread: waiting would deadlock)
        self._closed = True
        try:
            self.flush()
            if query_indexes:
                self.build_query_indexes()
        finally:
            if self._writer is not None:
                self._writer.shutdown()
            try:
                if self.path != ":memory:" and self._failed is None:
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._conn.close()
            finally:
                if self._lock is not None:
                    self._lock.release()  # after the connection: the next writer finds the file at rest

    def build_query_indexes(self) -> None:
        """Index what analysis queries look up: relation pairs, posts by user or root,
        comments by post, trace by step, recommendations by user, opinions by user. Idempotent;
        `close` calls it."""
        self.conn.executescript(QUERY_INDEXES)

    def set_meta(self, conn: sqlite3.Connection, values: dict) -> None:
        conn.executemany(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [(k, json.dumps(v)) for k, v in values.items()]
        )

    def get_meta(self) -> dict:
        return {k: json.loads(v) for k, v in self.conn.execute("SELECT key, value FROM meta")}

    def commit_step(
        self, platform: Platform, advance_minutes: int | None = None, extra=None, meta: dict | None = None
    ) -> None:
        """Write everything pending on `platform` (plus `extra(conn)` and `meta`) atomically.

        `extra(conn)` runs first, in the calling thread: it sees the journal as of the steps
        before, and the platform changes it makes are written with this step. With
        `advance_minutes`, the platform clock moves on to the next step, and the meta row
        names that step, so a journal always says where a resumed run starts. A failure while
        the step is built (a raising hook, say) rolls it back, and memory and journal still
        agree: the changes stay pending and the clock stays. Pipelined, the step is handed to
        the writer thread; the first commit (a bulk load) is always written in place.
        """
        statements = self.begin_step(platform, advance_minutes, extra, meta)
        self.finish_step(statements)
        platform.reset_pending()
        if advance_minutes is not None:
            platform.advance(advance_minutes)

    def begin_step(
        self, platform: Platform, advance_minutes: int | None = None, extra=None, meta: dict | None = None
    ) -> list:
        """The first half of `commit_step`: open the step's transaction, run `extra(conn)` and
        build the step's statements (returned for `finish_step`). Nothing is committed and the
        platform is not touched (its pending log and clock are the caller's to move on): the
        caller may still do work that can fail, then `finish_step` or `abort_step`. A failure
        in here rolls the transaction back and raises."""
        self.flush()
        step = platform.step + (1 if advance_minutes is not None else 0)
        minute = platform.minute + (advance_minutes or 0)
        meta_rows = [
            (k, json.dumps(v))
            for k, v in {
                "step": step,
                "minute": minute,
                "next_row_id": platform.next_row_id,
                "platform_config": dataclasses.asdict(platform.config),
                **(meta or {}),
            }.items()
        ]
        conn = self._conn
        handoff = self._writer is not None and self._started
        statements: list[tuple[str, list]] = []
        conn.execute("BEGIN")
        try:
            if extra is not None:  # first: what it changes on the platform (a scenario's posts) joins the step
                extra(conn)
            self._write(
                conn,
                platform,
                platform.pending,
                (lambda sql, params: statements.append((sql, params))) if handoff else conn.execute,
            )
            statements.append(
                (
                    _rows_sql("INSERT OR REPLACE INTO meta(key, value) VALUES ", 2, len(meta_rows), ""),
                    [x for row in meta_rows for x in row],
                )
            )
        except BaseException:
            self.abort_step()
            raise
        return statements

    def finish_step(self, statements: list) -> None:
        """Commit a step `begin_step` built: in place, or handed to the writer thread (pipelined,
        after the first commit). A failure in place rolls the step back and raises."""
        if self._writer is not None and self._started:
            self._in_flight = self._writer.submit(self._finish, statements)
        else:
            self._finish(statements)
        self._started = True

    def abort_step(self) -> None:
        """Roll back a step `begin_step` opened (nothing of it reaches the database)."""
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def _finish(self, statements: list[tuple[str, list]]) -> None:
        """Run the rest of a step's statements and commit it (on the writer thread, pipelined)."""
        conn = self._conn
        try:
            for sql, params in statements:
                conn.execute(sql, params)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _write(self, conn: sqlite3.Connection, pf: Platform, log: StepLog, emit: Callable[[str, list], object]) -> None:
        """Build the step's statements and pass each to `emit(sql, params)`."""
        now = pf.created_at()
        step = pf.step
        sql = RowWriter(conn, emit)
        if log.new_users:
            ids = np.unique(np.concatenate(log.new_users))  # a sign-up may repeat a new user
            _write_users(conn, sql, pf, ids, now)
        if log.new_posts:
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
                    [pf.created_at(m) for m in minutes.tolist()],
                    pf.p_kind.a[ids],
                    pf.p_step.a[ids],
                    minutes,
                    _nan_to_null(pf.p_stance.a[ids]),
                    pf.p_label.a[ids],
                    pf.p_status.a[ids],
                ],
            )
        if log.new_comments:
            ids = np.concatenate(log.new_comments)
            minutes = pf.c_minute.a[ids]
            sql.rows(
                "INSERT INTO comment(comment_id, post_id, user_id, content, created_at, step, minute, stance) VALUES ",
                [
                    ids,
                    pf.c_post.a[ids],
                    pf.c_author.a[ids],
                    [pf.c_content[c] for c in ids.tolist()],
                    [pf.created_at(m) for m in minutes.tolist()],
                    pf.c_step.a[ids],
                    minutes,
                    _nan_to_null(pf.c_stance.a[ids]),
                ],
            )
        for name, chunks in log.inserts.items():
            table, id_col, col_a, col_b = RELATION_TABLES[name]
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
            sql.rows(f"DELETE FROM {table} WHERE {id_col} IN (VALUES ", [np.concatenate(chunks)], ")")
        # Counter updates as upserts of rows that exist (written at creation, earlier in this
        # transaction at the latest): half the cost of UPDATE ... FROM (VALUES ...), which
        # materializes and joins the values first.
        if log.touched_posts:
            ids = np.unique(np.concatenate(log.touched_posts))
            sql.rows(
                "INSERT INTO post(post_id, num_likes, num_dislikes, num_shares, num_reports, num_comments, status)"
                " VALUES ",
                [
                    ids,
                    pf.p_likes.a[ids],
                    pf.p_dislikes.a[ids],
                    pf.p_shares.a[ids],
                    pf.p_reports.a[ids],
                    pf.p_comments.a[ids],
                    pf.p_status.a[ids],
                ],
                " ON CONFLICT(post_id) DO UPDATE SET num_likes=excluded.num_likes, num_dislikes=excluded.num_dislikes,"
                " num_shares=excluded.num_shares, num_reports=excluded.num_reports,"
                " num_comments=excluded.num_comments, status=excluded.status",
            )
        if log.touched_comments:
            ids = np.unique(np.concatenate(log.touched_comments))
            sql.rows(
                "INSERT INTO comment(comment_id, num_likes, num_dislikes) VALUES ",
                [ids, pf.c_likes.a[ids], pf.c_dislikes.a[ids]],
                " ON CONFLICT(comment_id) DO UPDATE SET num_likes=excluded.num_likes,"
                " num_dislikes=excluded.num_dislikes",
            )
        if log.touched_users:
            ids = np.unique(np.concatenate(log.touched_users))
            sql.rows(
                "INSERT INTO user_state(user_id, num_followers, num_followings, suspended) VALUES ",
                [ids, pf.u_followers.a[ids], pf.u_followings.a[ids], pf.u_suspended.a[ids].astype(int)],
                " ON CONFLICT(user_id) DO UPDATE SET num_followers=excluded.num_followers,"
                " num_followings=excluded.num_followings, suspended=excluded.suspended",
            )
        for tr in log.traces:
            sql.rows(
                "INSERT INTO trace(user_id, created_at, action, info, step, result) VALUES ",
                [
                    tr.user,
                    Same(now),
                    [action_name(a) for a in tr.action.tolist()],
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


def _index_names(script: str) -> list[str]:
    return [line.split()[5] for line in script.strip().splitlines()]  # CREATE INDEX IF NOT EXISTS <name>


def _nan_to_null(values: np.ndarray) -> list:
    return [None if x != x else x for x in values.tolist()]


# Rows per statement, at most (and never more bound values than the connection allows: 32766
# by default since SQLite 3.32, 999 before).
MAX_STATEMENT_ROWS = 4096


@functools.lru_cache(maxsize=1024)
def _rows_sql(head: str, width: int, rows: int, tail: str) -> str:
    return head + ",".join(["(" + ",".join("?" * width) + ")"] * rows) + tail


class Same(NamedTuple):
    """A column with one value in every row (created_at, step ...)."""

    value: object


class RowWriter:
    """Writes rows as statements of many rows each, `head` + "(?,..),(?,..)" + `tail`.

    One `execute` binds all of a statement's rows in one C call, where `executemany` pays the
    Python per-row overhead (about half of a row's cost). Statement sizes are a multiple of
    the largest size plus powers of two, so a few dozen SQL texts cover every step and stay
    in the connection's statement cache. Columns become Python values one statement at a
    time, and each statement goes to `emit(sql, params)` (default: `conn.execute`) as soon as
    it is built, so the initial follow graph of a million users (27M edges) streams in
    bounded memory.
    """

    def __init__(self, conn: sqlite3.Connection, emit: Callable[[str, list], object] | None = None):
        self.emit = emit or conn.execute
        self.max_values = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)  # bound values per statement

    def rows(self, head: str, columns: list, tail: str = "") -> None:
        """Write the rows of `columns`: numpy arrays, lists, `Same` values or iterators (taken
        lazily); the first column gives the row count."""
        width = len(columns)
        n = len(columns[0])
        columns = [c if isinstance(c, (np.ndarray, list, Same)) else iter(c) for c in columns]
        most = 1 << min(MAX_STATEMENT_ROWS, self.max_values // width).bit_length() - 1
        start = 0
        while start < n:
            size = most if n - start >= most else 1 << (n - start).bit_length() - 1
            flat = [None] * (width * size)
            for k, col in enumerate(columns):
                flat[k::width] = _take(col, start, size)
            self.emit(_rows_sql(head, width, size, tail), flat)
            start += size


def _take(col, start: int, size: int) -> list:
    if isinstance(col, np.ndarray):
        return col[start : start + size].tolist()
    if isinstance(col, list):
        return col[start : start + size]
    if isinstance(col, Same):
        return [col.value] * size
    return list(islice(col, size))


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
    for g in np.unique(group).tolist():
        rows = np.flatnonzero(group == g)
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
    idx = new.tolist()
    sql.rows(
        "INSERT INTO user_account(user_id, agent_id, user_name, name, bio, created_at) VALUES ",
        [
            new,
            new,
            pf.u_user_name.take(idx),
            pf.u_name.take(idx),
            pf.u_bio.take(idx),
            (pf.created_at(m) for m in pf.u_created_minute.a[new].tolist()),
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
    act = pf.u_activity.a
    sql.rows(
        "INSERT INTO user_profile(user_id, persona, is_core, interests, activity, opinion) VALUES ",
        [
            new,
            pf.u_persona.take(idx),
            pf.u_is_core.a[new].astype(int),
            pf.u_interests.a[new].astype(np.int64),
            (act[i].tobytes() for i in idx),
            pf.u_opinion.a[new],
        ],
    )


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
