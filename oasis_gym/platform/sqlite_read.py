"""Reading a user's SQLite file as SQLite would, without writing it, and stoppably.

- What is read is the file's committed state. A database read while nothing is beside it is
  read in place (``immutable=1``: no lock, no file made). One with a rollback journal
  (``-journal``: a writer killed, or still writing, mid-transaction) or a write-ahead log
  (``-wal``) beside it is copied with them into a private temporary folder, and the copy is
  opened normally once, so SQLite rolls the copy back or replays the copy's log there
  (`committed_copy`). The user's file, its siblings (the ``-shm`` is never opened) and its
  folder stay as they were: opening the original would roll it back or checkpoint it, and a
  read-only connection to a WAL database leaves a ``-shm`` beside it. A copy is made once per
  state of the files (cached by their inode, size and time) and removed at exit.
- A copy is taken consistently while a writer works: the database and its rollback journal
  must be unchanged over the copy, and a log must not restart (its header, which a restart
  changes, is the same before the database is copied and in the log copied after it: the
  log's frames then hold every page a checkpoint wrote meanwhile). Else it is taken again,
  and after a few tries `ReadBusy` says so.
- `StoppableConnection`: SIGINT / SIGTERM end a read at once. A query runs in SQLite's C code,
  where Python's signal handlers never run; SQLite's progress handler calls back into Python
  every few thousand steps, the pending handler runs there and its KeyboardInterrupt (the
  command's `interrupts.Stopped`) is kept, the query is interrupted, and the kept exception
  is raised where the read was called (SQLite would turn it into an "interrupted" error).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import stat
import tempfile
import urllib.parse

from ..errors import OasisGymError

__all__ = ["ReadBusy", "StoppableConnection", "committed_copy", "file_uri", "is_wal"]

_BESIDE = ("-journal", "-wal")  # what SQLite reads beside a database to know its committed state
_TRIES = 5
_COPIES: dict[str, tuple[tuple, str]] = {}  # real path -> (signature of its files, private folder)


class ReadBusy(OasisGymError, OSError):
    """A database changed at every try to copy it (a writer restarting its log), or its copy failed."""


def file_uri(path: str | os.PathLike, mode: str = "ro") -> str:
    """A `file:` URI of `path` (every character of the name quoted) opened with `mode`."""
    return "file:" + urllib.parse.quote(os.path.abspath(os.fspath(path))) + f"?mode={mode}"


def is_wal(path: str) -> bool:
    """Whether `path` is a SQLite WAL file (its magic number). SQLite never locks a -wal file,
    so opening and closing it here cannot drop a lock of this process's connections."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # (opening a FIFO would block)
            return False
        with open(path, "rb") as f:
            return f.read(4) in (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")
    except OSError:
        return False


def _signature(path: str) -> tuple:
    """(inode, size, mtime) of the database and of each regular file beside it that SQLite reads."""
    out = []
    for name in (path, *(path + s for s in _BESIDE)):
        try:
            st = os.stat(name)
        except FileNotFoundError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) and st.st_size else None)
    return tuple(out)


def _head(path: str) -> bytes:
    """The first 32 bytes of a file (a WAL header: its salts change when the log restarts)."""
    try:
        with open(path, "rb") as f:
            return f.read(32)
    except OSError:
        return b""


def committed_copy(path: str | os.PathLike) -> str | None:
    """A private file holding the committed state of the database at `path`, or None when
    nothing beside it counts (read `path` itself, ``immutable=1``). `ReadBusy` if no
    consistent copy could be taken. Never writes beside `path` (see the module's docstring)."""
    path = os.path.realpath(os.fspath(path))
    sig = _signature(path)
    if sig[0] is None or sig[1:] == (None, None):
        return None
    cached = _COPIES.get(path)
    if cached is not None and cached[0] == sig:
        return os.path.join(cached[1], "db")
    _forget(path)
    folder = tempfile.mkdtemp(prefix="oasis_gym_read_")
    try:
        sig = _copy(path, folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    _COPIES[path] = (sig, folder)
    return os.path.join(folder, "db")


def _copy(path: str, folder: str) -> tuple:
    """Copy `path` and what is beside it into `folder` until a copy is consistent, then let
    SQLite bring the copy to its committed state; the signature of the files copied."""
    copy = os.path.join(folder, "db")
    for _ in range(_TRIES):
        before, head = _signature(path), _head(path + "-wal")
        try:
            shutil.copyfile(path, copy)
            for suffix, sig in zip(_BESIDE, before[1:]):
                if sig is not None:
                    shutil.copyfile(path + suffix, copy + suffix)
                elif os.path.exists(copy + suffix):
                    os.remove(copy + suffix)
        except FileNotFoundError:  # a writer ended meanwhile (its -journal or -wal gone): again
            continue
        except OSError as err:
            why = err.strerror or err
            raise ReadBusy(f"cannot read {path}: copying it to a private folder failed ({why})") from err
        after = _signature(path)
        if before[2] is None and after == before:  # no log: the database and its journal as they were
            break
        same_file = None not in (before[0], after[0]) and before[0][0] == after[0][0]
        if before[2] is not None and same_file and after[1] == before[1] and _head(copy + "-wal") == head:
            break  # a log that did not restart: its frames hold what a checkpoint wrote meanwhile
    else:
        raise ReadBusy(f"cannot read {path}: it changed at each of {_TRIES} tries to read it; try again")
    conn = sqlite3.connect(copy, isolation_level=None)  # the copy: rolled back or its log replayed here
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            conn.execute("PRAGMA journal_mode = DELETE")  # the log into the copy: read with immutable=1
    except sqlite3.DatabaseError:
        pass  # not a database (or a damaged one): the reader says so
    finally:
        conn.close()
    return before


def _forget(path: str) -> None:
    """Remove the earlier copy of `path`, if any."""
    entry = _COPIES.pop(path, None)
    if entry is not None:
        shutil.rmtree(entry[1], ignore_errors=True)


@atexit.register
def _forget_all() -> None:
    for path in list(_COPIES):
        _forget(path)


def _watch(stops: list):
    """The progress handler's body (a generator, resumed by SQLite): the pending signal handler
    runs where it resumes, inside the try, so its KeyboardInterrupt is kept and the query stopped."""
    while True:
        try:
            while True:
                yield 0
        except KeyboardInterrupt as err:
            stops.append(err)
            while True:
                yield 1


class StoppableConnection(sqlite3.Connection):
    """A connection whose reads end at SIGINT / SIGTERM with the command's KeyboardInterrupt."""

    def __init__(self, *args, **kwargs) -> None:
        """As `sqlite3.Connection`, with the progress handler that lets a signal through."""
        super().__init__(*args, **kwargs)
        self._stops: list[BaseException] = []
        watch = _watch(self._stops)
        next(watch)
        self.set_progress_handler(watch.__next__, 2000)

    def _raise_stop(self) -> None:
        if self._stops:
            raise self._stops[0]

    def cursor(self, factory=None):
        """A cursor whose reads raise the signal that stopped them."""
        return super().cursor(factory or _StoppableCursor)

    def execute(self, sql, parameters=(), /):
        """`sqlite3.Connection.execute`, stoppable."""
        return self.cursor().execute(sql, parameters)


class _StoppableCursor(sqlite3.Cursor):
    """Each read raises the kept KeyboardInterrupt instead of SQLite's "interrupted"."""

    def _call(self, method, *args):
        try:
            return method(self, *args)
        except sqlite3.OperationalError:
            self.connection._raise_stop()
            raise

    def execute(self, sql, parameters=(), /):
        """`sqlite3.Cursor.execute`, stoppable."""
        return self._call(sqlite3.Cursor.execute, sql, parameters)

    def fetchone(self):
        """`sqlite3.Cursor.fetchone`, stoppable."""
        return self._call(sqlite3.Cursor.fetchone)

    def fetchmany(self, size=None):
        """`sqlite3.Cursor.fetchmany`, stoppable."""
        return self._call(sqlite3.Cursor.fetchmany, self.arraysize if size is None else size)

    def fetchall(self):
        """`sqlite3.Cursor.fetchall`, stoppable."""
        return self._call(sqlite3.Cursor.fetchall)

    def __next__(self):
        """`next(cursor)`, stoppable."""
        return self._call(sqlite3.Cursor.__next__)
