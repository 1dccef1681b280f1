"""A large journal's first commit (a population's users and follow graph: gigabytes at 10M
users) without the two waits it used to cost: its statements run on a thread of their own
as they are made (`StatementStream`: SQLite works on one core while Python makes the next
rows on the other), and the write-ahead log it leaves (and every later one past the mark:
`Journal._checkpoint_if_due`) is copied into the database by a thread of its own
(`BackgroundCheckpoint`) while the run goes on.

Both keep the journal's guarantees: the first commit is one transaction, committed or
rolled back as before (a failure raises where it did); a WAL not yet copied is a complete
journal (SQLite reads through it, a killed process loses nothing of what was committed),
and a PASSIVE checkpoint never blocks the writer.
"""

from __future__ import annotations

import os
import queue
import threading
from concurrent.futures import Future

from .journal_schema import connect

_DEPTH = 8  # statements made ahead of the writer, at most (bounded memory)
_STOP = None


class StatementStream:
    """`emit(sql, params)` hands a statement to a thread of the stream's own, which executes
    them in order on `conn` (inside the caller's open transaction); `finish` waits for the
    last one and raises the first error; `stop` ends the stream after a failure (the caller
    rolls back). The caller must not use `conn` between the first `emit` and `finish` /
    `stop`. The thread is a daemon: a stream its caller abandons (a signal landing between
    two of the caller's statements) never holds the interpreter's exit, and what it wrote
    stays uncommitted."""

    def __init__(self, conn):
        self._queue: queue.Queue = queue.Queue(maxsize=_DEPTH)
        self._conn = conn
        self._done: Future = Future()
        threading.Thread(target=self._main, name="oasis-gym-journal-stream", daemon=True).start()

    def _main(self) -> None:
        try:
            while (item := self._queue.get()) is not _STOP:
                self._conn.execute(*item)
        except BaseException as err:  # (handed to the caller by finish / emit)
            self._done.set_exception(err)
        else:
            self._done.set_result(None)

    def _put(self, item) -> None:
        while True:
            if self._done.done():  # the writer stopped (an error): nothing more goes in
                self._done.result()
                raise RuntimeError("the journal's statement stream has ended")
            try:
                self._queue.put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    def emit(self, sql: str, params) -> None:
        """Hand one statement to the writer thread (waits while `_DEPTH` are queued)."""
        self._put((sql, params))

    def finish(self) -> None:
        """Wait until every statement ran; raise the writer's error if one failed."""
        if not self._done.done():
            self._put(_STOP)
        self._done.result()

    def stop(self) -> None:
        """End the stream, whatever happened: queued statements are dropped, the writer
        thread is done with `conn` when this returns."""
        while not self._done.done():
            try:
                self._queue.get_nowait()
            except queue.Empty:
                pass
            try:
                self._queue.put(_STOP, timeout=0.05)
                break
            except queue.Full:
                continue
        self._done.exception()  # waits; the error (if any) is the caller's to report


class BackgroundCheckpoint:
    """Copies the WAL of the journal at `path` into the database (PRAGMA wal_checkpoint
    (PASSIVE)) on a thread with a connection of its own; `wait` joins it."""

    def __init__(self, path: str):
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(path,), name="oasis-gym-checkpoint", daemon=True)
        self._thread.start()

    def _run(self, path: str) -> None:
        try:
            conn = connect(path)
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            finally:
                conn.close()
        except BaseException as err:  # (a full disk, say: the WAL keeps everything; close retries)
            self.error = err

    def wait(self) -> None:
        """Until the copy is done."""
        self._thread.join()

    def running(self) -> bool:
        """Whether the copy is still going on."""
        return self._thread.is_alive()


def wal_pages(path: str) -> int:
    """Pages in the WAL beside the journal at `path` (0 without one)."""
    try:
        size = os.path.getsize(f"{path}-wal")
    except OSError:
        return 0
    return size // 4096
