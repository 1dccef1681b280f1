"""The file operations of the output rule (`oasis_gym.outputs`): temporary names in the
folder written to, a rename into place that never replaces a name that appeared meanwhile
(a hard link), the removal of what killed commands left, and of the folders a failed
command created and left empty; the signature that marks a JSON output as ours (`signed`,
`is_signed`); and one writer per output folder (`hold_folder`).

One writer per output folder: a command holds an exclusive, non-blocking `flock` on the
folder itself (its inode, so every name of it sees the lock and no file beside or inside it
can be deleted to free it) from its check until it ends; a second command, in another
process, is refused (`FolderBusy`). Several `OutputDir`s of one process share the lock (a
count). The lock dies with its process, so a killed command never blocks the next.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from ..errors import OasisGymError
from ..platform.journal_lock import flock_holders

try:
    import fcntl
except ImportError:  # not POSIX: no lock
    fcntl = None

__all__ = [
    "TMP_PREFIX",
    "OutputError",
    "file_sha256",
    "tmp_name",
    "clear_stale",
    "rename_into_place",
    "is_regular_file",
    "walk_files",
    "missing_folders",
    "check_writable",
    "remove_empty",
    "FolderBusy",
    "hold_folder",
    "let_go",
    "flock_holders",
    "SIGNATURE",
    "signed",
    "is_signed",
]

SIGNATURE = "oasis_gym_output"  # the first key of our JSON outputs and markers
TMP_PREFIX = ".oasis-gym-tmp-"
TMP_RE = re.compile(r"^\.oasis-gym-tmp-(\d+)-[0-9a-f]+")


class OutputError(OasisGymError, FileExistsError):
    """A path a command would write holds what it may not replace (the message names it)."""


def file_sha256(path: Path) -> str:
    """The SHA-256 of the file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tmp_name(suffix: str = "") -> str:
    """A new temporary name, naming this process (`clear_stale` removes it once the process is gone)."""
    return f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}{suffix}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (another user's process)
        pass
    return True


def clear_stale(folder: Path) -> None:
    """Remove the temporary entries killed commands left in `folder` (their process is gone)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            m = TMP_RE.match(name)
            if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
                path = folder / name
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.remove(path)


def rename_into_place(tmp: Path, final: Path, replace: bool) -> None:
    """Give the written file `tmp` its name `final`: replacing (os.replace) or, for a new name,
    by a hard link that fails if anything appeared there."""
    appeared = OutputError(f"{final} appeared while it was being written: it is left as it is")
    if replace:
        os.replace(tmp, final)
        return
    try:
        os.link(tmp, final)
    except FileExistsError:
        raise appeared from None
    except OSError:  # no hard links here: the name is checked, then taken
        if os.path.lexists(final):
            raise appeared from None
        os.replace(tmp, final)
    else:
        os.remove(tmp)


def is_regular_file(path: Path) -> bool:
    """Whether `path` is a regular file itself (a link to one is not)."""
    return stat.S_ISREG(os.lstat(path).st_mode)


def walk_files(folder: Path) -> Iterator[Path]:
    """Every entry but folders under `folder` (links included, not followed), in sorted order."""
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        yield from (Path(root) / n for n in sorted(names + [d for d in dirs if os.path.islink(Path(root) / d)]))


def missing_folders(path: Path) -> list[Path]:
    """`path` and its parents that do not exist, deepest first (what ``mkdir(parents=True)``
    creates)."""
    out = []
    while not os.path.lexists(path) and path != path.parent:
        out.append(path)
        path = path.parent
    return out


def check_writable(folder: Path, what: str) -> None:
    """Refuse (`OutputError`, one line) a folder no command could write into: `folder`, or the
    nearest existing folder above it when it is missing, must take a new entry (probed with an
    empty temporary folder, removed at once), so a path under a file, in a read-only place or
    in /proc is refused before anything is computed, not by a traceback after it."""
    missing = missing_folders(folder)
    base = missing[-1].parent if missing else folder
    if not base.is_dir():
        raise OutputError(f"{what} {folder}: {base} is not a folder")
    probe = base / tmp_name()
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as err:
        raise OutputError(f"cannot write {what} {folder}: {err.strerror or err} (in {base})") from None


def remove_empty(folders: Sequence[Path]) -> None:
    """Remove `folders` (deepest first) while they are empty: a failed command's own."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            return


class FolderBusy(OSError):
    """Another process holds the writer lock of an output folder (`pids`: the ones found)."""

    def __init__(self, pids: list[int]):
        super().__init__(f"held by pid {', '.join(map(str, pids))}" if pids else "held by another process")
        self.pids = pids


# (device, inode) of an output folder this process holds -> [its descriptor, holders, folders to remove if empty]
_HELD: dict[tuple[int, int], list] = {}


def hold_folder(folder: Path, made: Sequence[Path] = ()) -> tuple[int, int] | None:
    """Hold the writer lock of the existing folder `folder` (see the module's docstring) until
    `let_go` of the key returned, or the process's end; `made`: the folders the command created
    for it (deepest first), removed when the last holder lets go and they are empty. Raises
    `FolderBusy` if another process holds it; None where no lock can be taken (not POSIX)."""
    if fcntl is None:
        return None
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    st = os.fstat(fd)
    key = (st.st_dev, st.st_ino)
    if key in _HELD:  # this process holds it already
        os.close(fd)
        _HELD[key][1] += 1
        _HELD[key][2] += [m for m in made if m not in _HELD[key][2]]
        return key
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise FolderBusy(flock_holders(st)) from None
    except OSError:  # a file system without flock: no lock
        os.close(fd)
        return None
    _HELD[key] = [fd, 1, list(made)]
    return key


def let_go(key: tuple[int, int] | None) -> None:
    """One holder of the lock `key` (`hold_folder`'s) lets go; the last one removes the folders
    the command made and left empty, then frees the lock."""
    held = _HELD.get(key) if key is not None else None
    if held is None:
        return
    held[1] -= 1
    if held[1] <= 0:
        del _HELD[key]
        remove_empty(held[2])
        os.close(held[0])


@atexit.register
def _let_go_all() -> None:
    for key in list(_HELD):
        _HELD[key][1] = 1
        let_go(key)


def signed(obj: dict, command: str) -> dict:
    """`obj` with our signature as its first key (how `is_signed` recognises the JSON file)."""
    return {SIGNATURE: command, **{k: v for k, v in obj.items() if k != SIGNATURE}}


def is_signed(command: str) -> Callable[[Path], bool]:
    """A test of whether a JSON file begins with the signature of `command` (see `signed`)."""
    head = re.compile(r'\A\s*\{\s*"' + SIGNATURE + r'"\s*:\s*' + re.escape(json.dumps(command)))

    def test(path: Path) -> bool:
        try:
            with open(path, "rb") as f:
                return bool(head.match(f.read(4096).decode("utf-8", "replace")))
        except OSError:
            return False

    return test
