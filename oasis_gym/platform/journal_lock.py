"""A journal's one writer: an exclusive `flock` on the journal file itself, and who holds it.

`JournalLock` is taken by a writer (a `Journal`, a resume) before it opens the file and held
until it closes; `writers` names the other processes holding it (from /proc/locks, Linux),
`being_written` says so in one line. Why a `flock` on the database file is safe beside
SQLite's own locks: `journal_file`'s docstring. `flock_holders` also serves the output
folders' lock (`oasis_gym.outputs.files.hold_folder`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import weakref

from ..errors import JournalError

try:
    import fcntl
except ImportError:  # not POSIX: no lock (documented)
    fcntl = None

NEW_SUFFIX = "-new"  # a new journal's name while its first bytes are written (`journal_file.create_new`)


def flock_holders(st: os.stat_result) -> list[int]:
    """The other processes /proc/locks (Linux) names as holding a `flock` on the file of `st`."""
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks") as f:  # "1: FLOCK ADVISORY WRITE <pid> <major:minor:inode> 0 EOF"
            pids = {int(x[4]) for x in map(str.split, f) if x[1:2] == ["FLOCK"] and x[5:6] == [dev] and x[4].isdigit()}
    except (OSError, IndexError):
        return []
    return sorted(pids - {os.getpid()})


def being_written(path: str | os.PathLike, who: str | list[int]) -> str:
    """The line saying the journal at `path` is being written by `who` (a text, or the pids
    holding its lock)."""
    if not isinstance(who, str):
        who = f"another process (pid {who[0]})" if who else "another process"
    return f"{path} is being written by {who}: a journal has one writer"


def writers(path: str | os.PathLike) -> list[int]:
    """The other processes holding the writer's lock of the journal at `path` (Linux; [] elsewhere)."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    return flock_holders(st) if stat.S_ISREG(st.st_mode) else []


# (st_dev, st_ino) -> lock, for the journal files this process writes: a second writer here is
# refused before it opens the file (closing its descriptor would drop SQLite's POSIX locks)
_HELD: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def held_here(st: os.stat_result) -> bool:
    """Whether a `JournalLock` of this process holds the file of `st`."""
    return (st.st_dev, st.st_ino) in _HELD


class JournalLock:
    """An exclusive, non-blocking `flock` on the journal file at `path` (its inode), held by
    one writer until `release`; nothing is held while no regular file is at `path` (the
    journal created there is handed over: `adopt`). See the module's docstring."""

    def __init__(self, path: str):
        self.db_path = str(path)
        self._file = None
        self.take()

    def take(self) -> None:
        """Lock the regular file now at the path, unless this lock holds it already (then only
        check its names). `JournalError` if another writer holds it or it has two names."""
        while fcntl is not None:
            try:
                st = os.stat(self.db_path)
            except OSError:  # missing or unreadable (`what_is` says which)
                return
            if not stat.S_ISREG(st.st_mode):
                return  # never opened (a FIFO would block): `what_is` refuses it
            if self._file is not None and os.path.samestat(os.fstat(self._file.fileno()), st):
                break
            if (st.st_dev, st.st_ino) in _HELD:
                raise JournalError(self._busy("another env or Journal of this process (close it first: env.close())"))
            if pids := flock_holders(st):
                raise JournalError(self._busy(pids))
            try:
                f = open(os.open(self.db_path, os.O_RDONLY | os.O_NONBLOCK), "rb", buffering=0)
            except OSError as err:
                raise JournalError(f"cannot open the journal {self.db_path}: {err.strerror or err}") from err
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                f.close()
                raise JournalError(self._busy(flock_holders(st))) from None
            try:  # the file locked must still be the one at the path (a writer replacing it unlinks it)
                same = os.path.samestat(os.fstat(f.fileno()), os.stat(self.db_path))
            except OSError:
                same = False
            if same:
                self.adopt(f)
                break
            f.close()
        if self._file is not None and os.fstat(self._file.fileno()).st_nlink > 1:
            new = self.db_path + NEW_SUFFIX
            with contextlib.suppress(OSError):  # a second name a killed `create_new` left: it adds nothing
                if stat.S_ISREG(os.lstat(new).st_mode) and os.path.samefile(new, self.db_path):
                    os.remove(new)
            if (links := os.fstat(self._file.fileno()).st_nlink) > 1:
                self.release()
                raise JournalError(
                    f"{self.db_path} has {links} names (hard links): a journal has one name (SQLite keeps its "
                    "-wal beside the name it is opened by, so two names are two writers); remove the others"
                )

    def _busy(self, who: str | list[int]) -> str:
        return being_written(self.db_path, who)

    def adopt(self, f) -> None:
        """Hold the locked file object `f` (a journal just created at the path) from now on."""
        if fcntl is None:  # no lock to hold (and an open file could not be replaced)
            f.close()
            return
        old, self._file = self._file, f
        st = os.fstat(f.fileno())
        _HELD[(st.st_dev, st.st_ino)] = self
        if old is not None:
            self._close(old)

    def release(self) -> None:
        """Unlock (closing the lock's descriptor: call it after the writer's connection closed)."""
        f, self._file = self._file, None
        if f is not None:
            self._close(f)

    def _close(self, f) -> None:
        key = (lambda st: (st.st_dev, st.st_ino))(os.fstat(f.fileno()))
        if _HELD.get(key) is self:
            del _HELD[key]
        f.close()
