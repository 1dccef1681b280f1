"""The journal's file: what may be created, replaced or read at a path, and its one-writer lock.

What a user can rely on (README, "Guarantees"):

- Nothing is deleted or truncated that is not a regular file holding an oasis-gym journal
  (a text file, a profile file, a foreign SQLite database, a device node, a directory are
  refused with an error naming them), and a journal is replaced only when asked
  (`overwrite=True`, `--overwrite`) or when it is the one the same Simulation wrote in an
  earlier episode (`reset` starts a new episode at the same path).
- One writer per journal: a writer holds an exclusive `flock` on `<journal>-lock` (next to
  the resolved path) while its Journal is open. The OS drops the lock when the process dies,
  so a killed run never blocks its resume. The lock file is a sidecar, never the database:
  closing a second descriptor of the database would drop SQLite's own POSIX locks.
- Any legal file name works: writers open the path as a plain file name, readers quote it
  in their `file:` URI (`?`, `#`, `%` and spaces are data, not URI syntax).

A journal is recognized by the application id in its SQLite header (set when it is
created), or, for journals of older versions, by its `meta`, `post` and `trace` tables.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import urllib.parse
import weakref
from collections.abc import Mapping
from pathlib import Path

from ..errors import OasisGymError

try:
    import fcntl
except ImportError:  # not POSIX: no lock (documented)
    fcntl = None

APPLICATION_ID = 0x4F47594D  # "OGYM": PRAGMA application_id of every journal oasis-gym creates
SIBLINGS = ("-wal", "-shm")  # SQLite's files beside a WAL database
LOCK_SUFFIX = "-lock"
_LOCK_MARK = b"oasis-gym journal lock\n"
JOURNAL, MISSING = "an oasis-gym journal", "missing"
OVERWRITE_HINT = "--overwrite (overwrite=True in Python)"


class JournalError(OasisGymError, RuntimeError):
    """The journal cannot be used: its path holds something else, another run writes it, it
    is damaged, or a pipelined step failed to commit (then the journal holds the steps before
    it and memory is ahead)."""


def file_uri(path: str | os.PathLike, mode: str = "ro") -> str:
    """A `file:` URI of `path` (every character of the name quoted) opened with `mode`."""
    return "file:" + urllib.parse.quote(os.path.abspath(os.fspath(path))) + f"?mode={mode}"


def read_uri(path: str | os.PathLike) -> str:
    """A read-only `file:` URI of `path` that leaves nothing beside it. A database with no WAL
    file beside it (nothing is writing it) is read as it is: ``immutable=1``, so SQLite makes
    no -wal or -shm file (a plain ``mode=ro`` connection to a WAL journal leaves both behind).
    With a WAL file, through it (``mode=ro``): its commits are part of the database."""
    return file_uri(path, "ro") + ("" if _is_wal(f"{os.fspath(path)}-wal") else "&immutable=1")


def connect_readonly(path: str | os.PathLike, **kwargs) -> sqlite3.Connection:
    """A connection that only reads the existing database at `path` (PRAGMA query_only).
    Opened read-write where the OS allows, so that, closing last, it removes the -wal and
    -shm files SQLite makes beside a WAL database (a mode=ro connection leaves them)."""
    try:
        conn = sqlite3.connect(file_uri(path, "rw"), uri=True, **kwargs)
    except sqlite3.OperationalError:
        return sqlite3.connect(file_uri(path, "ro"), uri=True, **kwargs)
    conn.execute("PRAGMA query_only = 1")
    return conn


def what_is(path: str | os.PathLike) -> str:
    """`JOURNAL`, `MISSING`, or what else is at `path` (for error messages)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return MISSING
    except OSError as err:
        return f"not readable ({err.strerror})"
    if stat.S_ISDIR(st.st_mode):
        return "a directory"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a device, pipe or socket)"
    wal = _is_wal(f"{path}-wal")
    if st.st_size == 0 and not wal:
        return "an empty file"
    try:
        # read_uri: no -wal or -shm is opened without a WAL, so a user's files of those names stay untouched
        conn = sqlite3.connect(read_uri(path), uri=True)
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return "not a SQLite database"
    if app_id == APPLICATION_ID or {"meta", "post", "trace"} <= tables:
        if wal:
            connect_readonly(path).close()  # ours: closing last, SQLite removes the -shm it made
        return JOURNAL
    if not tables:
        return "an empty SQLite database"
    if "user" in tables:  # OASIS's own databases, and the first oasis-gym journals, have a `user` table
        return "a database of an older oasis-gym or of another program (its `user` is a table)"
    return "a SQLite database of another program"


def require_journal(path: str | os.PathLike) -> None:
    """Raise `JournalError` unless `path` holds an oasis-gym journal."""
    what = what_is(path)
    if what == MISSING:
        raise JournalError(f"no journal at {path}")
    if what != JOURNAL:
        raise JournalError(f"{path} is {what}, not an oasis-gym journal")


def check_distinct(db_path: str | os.PathLike | None, inputs: Mapping[str, object]) -> None:
    """Refuse a journal path that is also one of the run's inputs ({what: path})."""
    if db_path is None or str(db_path) in ("", ":memory:"):
        return
    for what, path in inputs.items():
        if isinstance(path, (str, os.PathLike)) and str(path) and _same_file(db_path, path):
            raise JournalError(f"the journal path {db_path} is also the {what}: choose another journal path")


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return os.path.realpath(a) == os.path.realpath(b)


def _is_wal(path: str) -> bool:
    """Whether `path` is a SQLite WAL file (its magic number). SQLite never locks a -wal file,
    so opening and closing it here cannot drop a lock of this process's connections."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # (opening a FIFO would block)
            return False
        with open(path, "rb") as f:
            return f.read(4) in (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")
    except OSError:
        return False


def prepare_new(path: str, overwrite: bool, own_journal_id: str | None = None) -> None:
    """Make way for a new journal at `path` (the caller holds its lock): nothing there, or a
    journal that may be replaced (`overwrite`, or the caller's own from an earlier episode),
    whose files are then deleted. Anything else is refused with `JournalError`."""
    what = what_is(path)
    if what == MISSING:
        create_empty(path)
        return
    if what == "an empty file" and overwrite:
        pass  # nothing to lose
    elif what != JOURNAL:
        raise JournalError(
            f"{path} exists and is {what}, not an oasis-gym journal: it is never replaced; choose another journal path"
        )
    elif not overwrite and (own_journal_id is None or _journal_id(path) != own_journal_id):
        raise JournalError(
            f"{path} exists and is an oasis-gym journal: pass {OVERWRITE_HINT} to replace it, "
            "or resume it (oasis-gym run --resume)"
        )
    for suffix in SIBLINGS:
        sibling = path + suffix
        if os.path.lexists(sibling):
            if not stat.S_ISREG(os.lstat(sibling).st_mode):
                raise JournalError(f"{sibling} is not a regular file: it is never deleted; remove it yourself")
            os.remove(sibling)
    os.remove(path)  # last: a crash before leaves a journal, never a stray -wal
    create_empty(path)


def create_empty(path: str) -> None:
    """Create the empty file of a new journal, failing if anything appeared at `path` (so
    SQLite opens our file, never one that came in between), or if a -wal or -shm of some
    earlier database is there (SQLite would replay, reset or delete it)."""
    for sibling in (path + suffix for suffix in SIBLINGS):
        if os.path.lexists(sibling):
            raise JournalError(
                f"{sibling} exists without {path} (left over from a deleted database?): "
                "it is never deleted; remove it yourself"
            )
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except FileExistsError:
        raise JournalError(f"{path} appeared while the journal was being created: it is left as it is") from None


def _journal_id(path: str) -> str | None:
    try:
        conn = connect_readonly(path)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return row[0] if row else None


# realpath -> lock, for the journals this process writes (a clearer message for a second writer)
_HELD: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class JournalLock:
    """An exclusive, non-blocking `flock` on `<journal>-lock`, held by one writer."""

    def __init__(self, path: str):
        self.db_path = path
        self.path = str(lock_path(path))
        self._file = None
        if fcntl is None:
            return
        if os.path.lexists(self.path) and not stat.S_ISREG(os.lstat(self.path).st_mode):
            raise JournalError(f"{self.path} (the lock of the journal {path}) is not a regular file")
        while True:
            try:
                f = open(self.path, "a+b")  # never truncates (a user's file of that name stays as it is)
            except OSError as err:
                raise JournalError(f"cannot create the lock file of the journal {path}: {err}") from err
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                f.seek(0)
                holder = f.read(200)
                f.close()
                raise JournalError(self._busy_message(holder)) from None
            try:  # the file we locked must still be the one at the path (a releasing writer unlinks it)
                same = os.path.samestat(os.fstat(f.fileno()), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            f.close()
        self._file = f
        f.seek(0)
        if os.fstat(f.fileno()).st_size == 0 or f.read(len(_LOCK_MARK)) == _LOCK_MARK:
            f.truncate(0)
            f.write(_LOCK_MARK + f"pid {os.getpid()}\n".encode())
            f.flush()
        _HELD[os.path.realpath(path)] = self

    def _busy_message(self, holder: bytes) -> str:
        if os.path.realpath(self.db_path) in _HELD:
            who = "another env or Journal of this process (close it first: env.close())"
        else:
            pid = holder[len(_LOCK_MARK) :].decode(errors="replace").strip() if holder.startswith(_LOCK_MARK) else ""
            who = f"another process ({pid})" if pid else "another process"
        return f"{self.db_path} is being written by {who}: a journal has one writer"

    def release(self) -> None:
        """Unlock, deleting the lock file if it is ours (it carries our mark)."""
        f, self._file = self._file, None
        if f is None:
            return
        try:
            f.seek(0)
            if f.read(len(_LOCK_MARK)) == _LOCK_MARK:
                os.remove(self.path)  # while locked: a waiter that locked the old file sees it is gone
        except OSError:
            pass
        finally:
            f.close()
            if _HELD.get(os.path.realpath(self.db_path)) is self:
                del _HELD[os.path.realpath(self.db_path)]


def lock_path(db_path: str | os.PathLike) -> Path:
    """Where the writer's lock of the journal at `db_path` lives."""
    return Path(os.path.realpath(db_path) + LOCK_SUFFIX)
