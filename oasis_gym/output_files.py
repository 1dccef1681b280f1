"""The file operations of the output rule (`oasis_gym.outputs`): temporary names in the
folder written to, a rename into place that never replaces a name that appeared meanwhile
(a hard link), the removal of what killed commands left, and of the folders a failed
command created and left empty.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from .errors import OasisGymError

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
    "remove_empty",
]

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


def remove_empty(folders: Sequence[Path]) -> None:
    """Remove `folders` (deepest first) while they are empty: a failed command's own."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            return
