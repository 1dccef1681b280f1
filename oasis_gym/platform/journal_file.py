"""The journal's file: what may be created, replaced or read at a path, and its one-writer lock.

What a user can rely on (README, "Guarantees"):

- Nothing is deleted or truncated that is not a regular file holding an oasis-gym journal
  (a text file, a profile file, a foreign SQLite database, a device node, a directory are
  refused with an error naming them), and a journal is replaced only when asked
  (`overwrite=True`, `--overwrite`), when the same Simulation wrote it in an earlier episode
  (`reset`), or when it holds nothing: no step, no row (what a run killed before its first
  commit, or whose first commit failed, leaves).
- A new journal appears complete (header, application id, schema, journal id): written to
  `<journal>-new`, then linked to its name; a killed run's `-new` is cleared by the next one.
- One writer per journal: a writer holds an exclusive `flock` on the journal file itself (its
  inode) while its Journal is open, so removing files beside it frees nothing and every name
  of the file sees the lock; a file with two names (hard links) is never opened as a writer
  (SQLite keeps a -wal beside each name). The lock dies with the process (and the children it
  forked), so a killed run never blocks its resume.
- Any legal file name works: writers open the path as a plain file name, readers quote it
  in their `file:` URI (`?`, `#`, `%` and spaces are data, not URI syntax).

Why `flock` on the database is safe: SQLite locks it with POSIX `fcntl` locks, which belong to
the process, and a process loses them when it closes ANY descriptor of the file. `flock`
locks belong to the open file description and, on Linux and the BSDs, never interact with
`fcntl` locks (NFS emulates `flock` with them; WAL needs a local filesystem anyway). So the
lock's descriptor stays open for the writer's lifetime and is closed after the writer's
connection (a reader of the journal in the same process loses its SQLite lock then), a second
writer in the same process is refused before it opens the file, and one refused because
another process holds the lock opens none when /proc/locks names that process.

A journal is recognized by the application id in its SQLite header (set when it is
created), or, for journals of older versions, by its `meta`, `post` and `trace` tables.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import tempfile
import uuid
from collections.abc import Mapping

from ..errors import JournalError
from .journal_lock import NEW_SUFFIX, JournalLock, held_here
from .journal_schema import SCHEMA
from .sqlite_read import StoppableConnection, committed_copy, file_uri, is_wal

try:
    import fcntl
except ImportError:  # not POSIX: no lock (documented)
    fcntl = None

APPLICATION_ID = 0x4F47594D  # "OGYM": PRAGMA application_id of every journal oasis-gym creates
SIBLINGS = ("-wal", "-shm")  # SQLite's files beside a WAL database
JOURNAL, MISSING = "an oasis-gym journal", "missing"
OVERWRITE_HINT = "--overwrite (overwrite=True in Python)"


# SQLITE_BUSY, SQLITE_LOCKED, SQLITE_PROTOCOL: a reader that a writer's lock kept out (a run
# suspended, Ctrl-Z, while it held one): the file is fine, it is busy
_LOCK_CODES = (5, 6, 15)
BUSY = "busy"  # what_is: SQLite's lock kept the reader out


def busy(path: str | os.PathLike, err: BaseException | None = None) -> str | None:
    """One line saying the journal at `path` is busy, not damaged (another process holds
    SQLite's lock on it); None if `err` is another error (not one of SQLite's lock errors)."""
    if err is not None and getattr(err, "sqlite_errorcode", None) not in _LOCK_CODES:
        return None
    return (
        f"{path} is busy: the process writing it holds SQLite's lock{f' ({err})' if err else ''}; "
        "a run suspended (Ctrl-Z) holds it until it continues. Try again then"
    )


def read_uri(path: str | os.PathLike) -> str:
    """A read-only `file:` URI of the committed state of `path` that writes nothing beside it
    (`sqlite_read`): the file itself (``immutable=1``), or with a -journal or -wal beside it a
    private copy SQLite has brought to that state. A journal this process writes (it holds its
    lock) is never copied (closing a descriptor of it would drop its writer's SQLite locks):
    read through its -wal if it has one (``mode=ro``), else as it is."""
    if _written_here(path):
        return file_uri(path, "ro") + ("" if is_wal(f"{os.fspath(path)}-wal") else "&immutable=1")
    return file_uri(committed_copy(path) or path, "ro") + "&immutable=1"


def connect_read(path: str | os.PathLike, **kwargs) -> sqlite3.Connection:
    """A connection that reads the committed state of `path` (`read_uri`) and that SIGINT /
    SIGTERM stop (`sqlite_read.StoppableConnection`). `ReadBusy` (an `OasisGymError`) if no
    consistent copy could be taken."""
    return sqlite3.connect(read_uri(path), uri=True, factory=StoppableConnection, **kwargs)


def what_is(path: str | os.PathLike) -> str:
    """`JOURNAL`, `MISSING`, or what else is at `path` (for error messages)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return f"a symbolic link to a missing file ({os.readlink(path)})"
        return MISSING
    except OSError as err:
        return f"not readable ({err.strerror})"
    if stat.S_ISDIR(st.st_mode):
        return "a directory"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a device, pipe or socket)"
    wal = is_wal(f"{path}-wal")
    if st.st_size == 0 and not wal:
        return "an empty file"
    try:
        conn = connect_read(path)  # (nothing is opened or made beside the user's file)
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as err:
        return BUSY if busy(path, err) else "not a SQLite database"
    if app_id == APPLICATION_ID or {"meta", "post", "trace"} <= tables:
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
    if what == BUSY:
        raise JournalError(busy(path))
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


def _written_here(path: str | os.PathLike) -> bool:
    """Whether a Journal of this process writes the file at `path` (it holds its lock)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return held_here(st)


def schema_sql(journal_id: str | None = None) -> str:
    """The statements that make a new journal: its application id, schema and journal id."""
    journal_id = journal_id or uuid.uuid4().hex
    return (
        f"PRAGMA application_id = {APPLICATION_ID}; {SCHEMA} "
        f"INSERT INTO meta(key, value) VALUES ('journal_id', '\"{journal_id}\"');"
    )


def _contents(path: str | os.PathLike) -> tuple[str | None, bool]:
    """The id of the journal at `path`, and whether it holds nothing: no meta but its id, no
    row in any table (what a run whose first commit never happened leaves: replacing it loses
    nothing). (None, False) if it cannot be read."""
    try:
        conn = connect_read(path)
        try:
            meta = dict(conn.execute("SELECT key, CASE key WHEN 'journal_id' THEN value END FROM meta"))
            tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'") if t != "meta"]
            rows = any(conn.execute(f'SELECT 1 FROM "{t.replace(chr(34), chr(34) * 2)}"').fetchone() for t in tables)
        finally:
            conn.close()
    except sqlite3.Error:
        return None, False
    return meta.get("journal_id"), set(meta) <= {"journal_id"} and not rows


def refusal(path: str, overwrite: bool, own_journal_id: str | None = None) -> tuple[str, str | None]:
    """What is at `path` (`what_is`) and, if a new journal may not be made there, why (one
    line): anything but nothing, an empty file (with `overwrite`), or a journal that may be
    replaced (`overwrite`, the caller's own from an earlier episode, or one that holds
    nothing). Checked again under the lock by `prepare_new`; callers check it first to refuse
    before any compute."""
    what = what_is(path)
    if what == MISSING or (what == "an empty file" and overwrite):
        return what, None
    if what == BUSY:
        return what, busy(path)
    if what != JOURNAL:
        return what, f"{path} exists and is {what}, not an oasis-gym journal: it is never replaced; choose another path"
    if not overwrite:
        journal_id, empty = _contents(path)
        if not empty and (own_journal_id is None or journal_id != own_journal_id):
            return what, (
                f"{path} exists and is an oasis-gym journal: pass {OVERWRITE_HINT} to replace it, "
                "or resume it (oasis-gym run --resume)"
            )
    return what, None


def prepare_new(path: str, overwrite: bool, own_journal_id: str | None, lock: JournalLock) -> None:
    """Make way for a new journal at `path` and create it, locked by `lock` (which holds the
    file at `path`, if any): nothing there, or a journal that may be replaced (`refusal`),
    whose files are then deleted. Anything else is refused with `JournalError`."""
    lock.take()  # (the file at the path now, should it have changed since the lock was made)
    what, refused = refusal(path, overwrite, own_journal_id)
    if refused:
        raise JournalError(refused)
    if what == MISSING:
        create_new(path, lock)
        return
    for suffix in SIBLINGS:
        sibling = path + suffix
        if os.path.lexists(sibling):
            if not stat.S_ISREG(os.lstat(sibling).st_mode):
                raise JournalError(f"{sibling} is not a regular file: it is never deleted; remove it yourself")
            os.remove(sibling)
    os.remove(path)  # last: a crash before leaves a journal, never a stray -wal
    create_new(path, lock)  # (the old file stays locked until the new one is)


def create_new(path: str, lock: JournalLock) -> None:
    """Create a new journal at `path`, complete (schema and journal id) from its first
    appearance, and hand it to `lock`. Fails if anything appeared at `path` (so SQLite opens
    our file, never one that came in between), or if a -wal or -shm of some earlier database
    is there (SQLite would replay, reset or delete it)."""
    for sibling in (path + suffix for suffix in SIBLINGS):
        if os.path.lexists(sibling):
            raise JournalError(
                f"{sibling} exists without {path} (left over from a deleted database?): "
                "it is never deleted; remove it yourself"
            )
    new = path + NEW_SUFFIX
    _clear_leftover(new, path)
    image = _new_image()
    f = _write_locked(new, image)
    try:
        os.link(new, path)  # never replaces: fails if anything appeared at `path`
    except OSError:  # that (then refused here too), or no hard links on this filesystem: written in place
        f.close()
        f = _write_locked(path, image)  # (a kill in there may leave a partial file)
    finally:
        with contextlib.suppress(OSError):
            os.remove(new)
    lock.adopt(f)


def _new_image() -> bytes:
    """The bytes of a new journal file: header (a WAL database, our application id), schema, id."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(schema_sql())
        if hasattr(conn, "serialize"):
            image = bytearray(conn.serialize())
        else:  # a SQLite without the serialize API: through a file of our own
            with tempfile.TemporaryDirectory(prefix="oasis_gym_") as folder:
                conn.execute("VACUUM INTO ?", (os.path.join(folder, "new.db"),))
                with open(os.path.join(folder, "new.db"), "rb") as f:
                    image = bytearray(f.read())
    finally:
        conn.close()
    image[18:20] = b"\x02\x02"  # the file format versions: 2, WAL (what `PRAGMA journal_mode=WAL` writes)
    return bytes(image)


def _write_locked(name: str, data: bytes):
    """A new file `name` holding `data`, locked (its file object); removed if that fails."""
    try:
        f = open(os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666), "r+b", buffering=0)
    except FileExistsError:
        raise JournalError(f"{name} appeared while the journal was being created: it is left as it is") from None
    try:
        if fcntl is not None:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        view = memoryview(data)
        while view:
            view = view[f.write(view) :]
    except BaseException as err:
        f.close()
        with contextlib.suppress(OSError):
            os.remove(name)
        if isinstance(err, OSError):
            raise JournalError(f"cannot create the journal {name}: {err.strerror or err}") from err
        raise
    return f


def _clear_leftover(new: str, path: str) -> None:
    """Remove `new` (`<journal>-new`) if a killed run left it there: a new journal that never
    got its name (no one holds its lock, and it holds nothing). Anything else is refused."""
    if not os.path.lexists(new):
        return
    if not stat.S_ISREG(os.lstat(new).st_mode):
        raise JournalError(f"{new} is not a regular file: it is never deleted; remove it yourself")
    with open(os.open(new, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:  # (no connection of ours has it open)
        if fcntl is not None:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise JournalError(f"{path} is being created by another process: a journal has one writer") from None
        if what_is(new) != JOURNAL or not _contents(new)[1]:
            raise JournalError(f"{new} exists and is not a new journal left by a killed run: remove it yourself")
        os.remove(new)
