"""SQLite journal: the OASIS tables, written once per step in ONE transaction, and read back.

Table and column names are OASIS's (user, post, comment, follow, mute, like, dislike,
comment_like, comment_dislike, report, trace, rec), so SQL written for OASIS databases runs on
ours (`user` is a view that reads like OASIS's table; see the schema). Our extra columns
(moderation status, stance, opinion, ...) and tables (opinion, moderation, meta, metrics) sit
beside them. Ids are 0-based and equal to the in-memory ids (OASIS's AUTOINCREMENT ids start
at 1; ours are inserted explicitly).

Speed: a step's rows go in multi-row statements (`RowWriter`), executed and committed in
place or on a writer thread while the simulation goes on (`Journal`); the WAL is copied into
the database off the step (`_checkpoint_if_due`). During the run, rows only append (relation
rows carry the platform's row ids, so deletes go by id) and no index is kept up; `close`
builds the indexes analysis queries use.

Files (`journal_file`): a Journal creates or replaces only oasis-gym journals (replacing one
only when asked, or one a run left before its first commit), holds a one-writer lock on the
journal file while open, and takes any legal file name. A journal appears complete (schema
and id), so a run killed before its first commit leaves one that holds nothing, which the
next new run replaces; a failed first commit (disk full) raises a one-line `JournalError`
and leaves the journal so.

Durability: WAL mode with synchronous=NORMAL. A process killed at any point (SIGKILL
included) leaves a database holding exactly the committed steps; only an OS crash or power
loss may lose the last few commits (synchronous=FULL closes that gap at some cost).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from ..errors import JournalError
from ..signal_hold import deferred
from .follow_seed import FollowSeed
from .journal_bulk import BackgroundCheckpoint, StatementStream, wal_pages
from .journal_file import (
    JOURNAL,
    MISSING,
    busy,
    create_new,
    prepare_new,
    require_journal,
    schema_sql,
    what_is,
)
from .journal_load import load_platform, read_meta
from .journal_lock import JournalLock
from .journal_rows import meta_json, write_step
from .journal_schema import AUTOCHECKPOINT_PAGES, QUERY_INDEX_NAMES, SCHEMA, connect, query_indexes
from .platform import Platform
from .row_writer import rows_sql

__all__ = ["Journal", "JournalError", "load_platform", "read_meta"]


class Journal:
    """Writes a Platform's per-step changes to SQLite, one transaction per step.

    Pipelined (the default), a step's rows are built on the calling thread, then executed and
    committed on a writer thread while the caller computes the next step: SQLite releases the
    GIL while it runs a statement, and each statement carries thousands of rows, so the
    journal's SQL and I/O overlap with the simulation on a second core. Every use of `conn`
    (and the next `commit_step`, `flush`, `close`) first waits for that write, so what reads
    through the journal sees every step handed to it. A write that fails there (disk full, say) raises
    `JournalError` then and on every later use; the database holds exactly the steps before
    it (`Platform.from_db` resumes from them). `pipelined=False` commits before returning; a
    write that fails then raises `JournalError` at once and leaves the step pending (the
    platform untouched), to be committed again. The simulation pipelines runs of 100,000 users
    and more only (`sim.config.pipelined`): in smaller ones the writer thread costs more
    than it saves.
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
        `overwrite=True`, its id is `own_journal_id` (the caller's own, from an earlier
        episode), or it holds nothing (no step was ever committed). Anything at `path` that
        is not an oasis-gym journal is refused, never deleted (see `journal_file`). The writer
        holds the journal's lock until `close`: a second writer gets a `JournalError` (`lock`:
        the lock of `path`, taken by the caller to read the journal first, handed over).
        """
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"the journal's path must be a str or os.PathLike, got {type(path).__name__}")
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
                    prepare_new(self.path, overwrite, own_journal_id, self._lock)
                elif (what := what_is(self.path)) == MISSING:
                    create_new(self.path, self._lock)
                elif what != JOURNAL:
                    require_journal(self.path)
                else:
                    self._lock.take()  # (a lock handed over: still the file at the path, one name)
            self._conn = connect(self.path)
            # a WAL restarted after a copy is cut back to the mark: its size tells what it holds since
            self._conn.execute(f"PRAGMA journal_size_limit={AUTOCHECKPOINT_PAGES * 4096}")
            self._open_schema()
        except BaseException as err:
            if self._conn is not None:
                self._conn.close()
            if self._lock is not None:
                self._lock.release()
            if isinstance(err, (OSError, sqlite3.Error)):  # (SQLite's lock held: busy, not damaged)
                raise JournalError(busy(self.path, err) or f"cannot open the journal {self.path}: {err}") from err
            raise
        self._thread_prefix = f"oasis-gym-journal-{id(self):x}"
        self._writer = ThreadPoolExecutor(1, thread_name_prefix=self._thread_prefix) if pipelined else None
        self._in_flight: Future | None = None
        self._stream: StatementStream | None = None  # the first commit's statements, on the stream's thread
        self._checkpoint: BackgroundCheckpoint | None = None  # the WAL, being copied (`_checkpoint_if_due`)
        self._copies = 0  # copies begun since the WAL last restarted
        self._failed: JournalError | None = None
        self._step_failed = False  # SQLite refused the last step committed in place
        self._closed = False
        # steps this journal has taken (committed in place, or handed to the writer thread):
        # counted together with the taking, so a step a signal arrives with is never undone
        self.steps_taken = 0

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
        if fresh:  # in memory (a journal file is created with its schema: `create_new`)
            conn.executescript(f"BEGIN; {schema_sql()} COMMIT;")
        else:
            conn.executescript(SCHEMA)
        self._follow = FollowSeed(conn)
        row = conn.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()
        self.journal_id: str | None = row[0] if row else None  # (the JSON text: compared, never parsed)
        self._started = conn.execute("SELECT 1 FROM meta WHERE key = 'step'").fetchone() is not None  # resuming
        if self._started:  # the run goes on appending: its indexes are rebuilt at close
            conn.executescript("".join(f"DROP INDEX IF EXISTS {name};" for name in QUERY_INDEX_NAMES))

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
            if self._stream is not None:  # a first commit begun and never finished (stopped in between)
                self.abort_step()
            self.flush()
            if query_indexes and self._started and not self._step_failed:  # (see build_query_indexes)
                self.build_query_indexes()
        finally:
            if self._writer is not None:
                self._writer.shutdown()
            try:
                if self._checkpoint is not None:
                    self._checkpoint.wait()
                if self.path != ":memory:" and self._failed is None:
                    with contextlib.suppress(sqlite3.Error):  # (a full disk: the -wal keeps the steps)
                        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._conn.close()
            finally:
                if self._lock is not None:
                    self._lock.release()  # after the connection: the next writer finds the file at rest

    def build_query_indexes(self) -> None:
        """Index what analysis queries look up: relation pairs, posts by user or root,
        comments by post, trace by step, recommendations by user, opinions by user. Idempotent;
        `close` calls it unless the last step failed to commit (a full disk: its error is the one
        to see). SQLite failing here is a `JournalError` (the steps are kept: a resume builds them)."""
        try:
            self.conn.executescript(query_indexes(self._follow.compact))
        except sqlite3.Error as err:
            raise JournalError(
                f"{self.path}: its query indexes could not be built ({err}); it holds every step committed,"
                " and a run resuming it builds them at its end"
            ) from err

    def set_meta(self, conn: sqlite3.Connection, values: dict) -> None:
        """Write `values` (JSON-able) to the meta table through `conn`, inside the caller's
        transaction (a step hook's `conn`): they commit with the step; `read_meta` reads them."""
        conn.executemany(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [(k, json.dumps(v)) for k, v in values.items()]
        )

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
        the writer thread; the first commit (a bulk load) is always written in place (streamed
        to a thread of its own as it is built, `journal_bulk.StatementStream`).
        """
        taken = self.steps_taken
        statements = self.begin_step(platform, advance_minutes, extra, meta)
        try:
            self.finish_step(statements)
        finally:
            if self.steps_taken != taken:  # the journal has the step (a signal may come with it): memory follows
                platform.reset_pending()
                if advance_minutes is not None:
                    platform.advance(advance_minutes)
            elif self._stream is not None:  # (a signal before finish_step took the stream over)
                self.abort_step()

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

        def meta_rows_now() -> list:  # after `extra`: the row ids it used (a hook's reports) count
            return [
                (k, meta_json(v))
                for k, v in {
                    "step": step,
                    "minute": minute,
                    "next_row_id": platform.next_row_id,
                    "platform_config": platform.config,
                    **(meta or {}),
                }.items()
            ]

        conn = self._conn
        handoff = self._writer is not None and self._started
        statements: list[tuple[str, list]] = []
        conn.execute("BEGIN")
        writing = False  # (an error of `extra`'s own SQL is raised as it is)
        try:
            if extra is not None:  # first: what it changes on the platform (a scenario's posts) joins the step
                extra(conn)
            meta_rows = meta_rows_now()
            if handoff:
                emit = lambda sql, params: statements.append((sql, params))  # noqa: E731
            elif self._writer is not None:  # the first commit: executed on the stream's thread as it is made
                self._stream = StatementStream(conn)
                emit = self._stream.emit
            else:
                emit = conn.execute
            writing = True
            write_step(conn, platform, platform.pending, emit, follow=self._follow, first=not self._started)
            emit(
                rows_sql("INSERT OR REPLACE INTO meta(key, value) VALUES ", 2, len(meta_rows), ""),
                [x for row in meta_rows for x in row],
            )
        except BaseException as err:
            self.abort_step()
            self._raise_commit_error(err, writing)
            raise
        return statements

    def finish_step(self, statements: list) -> None:
        """Commit a step `begin_step` built: in place, or handed to the writer thread (pipelined,
        after the first commit). A failure in place rolls the step back and raises."""
        # From the hand-off (or the COMMIT) on, a signal waits until the step is counted as taken
        # (`signal_hold.deferred`): a step the journal has is never rolled back in memory.
        if self._writer is not None and self._started:
            with deferred():
                self._in_flight = self._writer.submit(self._finish, statements)
                self.steps_taken += 1
            return
        taken = self.steps_taken
        try:
            if self._stream is not None:
                self._stream.finish()
                self._stream = None
            with deferred():
                self._finish(statements)
                self._follow.committed()
                self._started, self._step_failed = True, False
                self.steps_taken += 1
        except BaseException as err:
            if self.steps_taken == taken:
                self.abort_step()
                self._raise_commit_error(err, writing=True)
            raise

    def _checkpoint_if_due(self) -> None:
        """Copy the WAL into the database once it holds more than AUTOCHECKPOINT_PAGES pages
        since its last restart (after which it is cut back to that size: `journal_size_limit`).
        SQLite's automatic checkpoint is off (`connect`): it ran inside the COMMIT that crossed
        the mark, a 60-100 ms step every ~300 steps of 100 users. The copy runs on a thread of
        its own (`BackgroundCheckpoint`), one at a time. The WAL restarts only when a copy has
        finished before the next step begins; if two copies in a row could not get it to
        restart and it has grown past four times the mark, the next copy is made here, after
        the COMMIT (nothing is written meanwhile, so it completes): the WAL stays bounded."""
        if self.path == ":memory:" or (self._checkpoint is not None and self._checkpoint.running()):
            return
        pages = wal_pages(self.path)
        if pages <= AUTOCHECKPOINT_PAGES:
            self._copies = 0  # (restarted and cut back since the last copy)
            return
        if self._copies >= 2 and pages > 4 * AUTOCHECKPOINT_PAGES:
            with contextlib.suppress(sqlite3.Error):  # (after the COMMIT: never fails the step; retried)
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._copies = 0
            return
        with contextlib.suppress(RuntimeError):  # (no thread to spare: copied at close)
            self._checkpoint = BackgroundCheckpoint(self.path)
            self._copies += 1

    def _raise_commit_error(self, err: BaseException, writing: bool) -> None:
        """A commit that SQLite failed (a full disk, say) as one line. The first: the journal
        holds no step, so a new run replaces it without --overwrite. A later one made in place:
        the journal holds the steps before it and nothing of this one, which stays pending
        (the platform is untouched) and goes in once there is room."""
        if not isinstance(err, sqlite3.Error):
            return
        if not self._started:
            raise JournalError(
                f"{self.path}: the journal's first commit failed ({err}); it holds no step, so a new run "
                "replaces it without --overwrite"
            ) from err
        if writing:
            self._step_failed = True  # (until a step commits: `close` then builds no index)
            raise JournalError(
                f"{self.path}: a step failed to commit ({err}); the journal holds the steps before it and "
                "nothing of this one, which can be committed again once the cause is fixed"
            ) from err

    def abort_step(self) -> None:
        """Roll back a step `begin_step` opened (nothing of it reaches the database)."""
        if self._stream is not None:  # the stream's thread lets go of the connection first
            self._stream.stop()
            self._stream = None
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        self._follow.aborted()

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
        self._checkpoint_if_due()
