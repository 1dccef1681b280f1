"""`OutputFile`: one file a command writes (a figures JSON, an imported journal), under the
output rule (`oasis_gym.outputs`)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..app.interrupts import deferred
from .files import (
    OutputError,
    check_writable,
    clear_stale,
    is_regular_file,
    missing_folders,
    remove_empty,
    rename_into_place,
    tmp_name,
)


@dataclass
class OutputFile:
    """One file a command writes (a figures JSON, an imported journal), under the module's rule:
    missing, or recognised as its own by `is_ours(path)` (then replaced only with `overwrite`).
    `siblings` are the suffixes of files that belong to it (a journal's -wal, -shm): refused
    beside a missing file, removed with the file they belong to when it is replaced."""

    path: Path
    command: str
    is_ours: Callable[[Path], bool]
    overwrite: bool = False
    siblings: Sequence[str] = ()
    option: str = "--out"

    def __post_init__(self):
        self.path = Path(self.path)

    def check(self) -> OutputFile:
        """Refuse (`OutputError`, naming the path) unless the file is missing, or is our own
        earlier output and `overwrite` is given."""
        p = self.path
        if not os.path.lexists(p):
            for sibling in self._siblings():  # a stray -wal would be read into the new file
                raise OutputError(f"{sibling} exists without {p}: it is never replaced; remove it yourself")
            check_writable(p.parent, f"the folder of {self.option}")
            return self
        if not is_regular_file(p) or not self.is_ours(p):
            raise OutputError(
                f"{p} exists and is not an output of oasis-gym {self.command}: it is never replaced "
                f"(not even with --overwrite); choose another {self.option}"
            )
        if not self.overwrite:
            raise OutputError(f"{p} exists and holds an earlier output of oasis-gym {self.command}: pass --overwrite")
        for sibling in self._siblings():
            if not is_regular_file(sibling):
                raise OutputError(f"{sibling} is not a regular file: it is never replaced; remove it yourself")
        return self

    def _siblings(self) -> list[Path]:
        return [Path(f"{self.path}{s}") for s in self.siblings if os.path.lexists(f"{self.path}{s}")]

    @contextlib.contextmanager
    def staging(self) -> Iterator[Path]:
        """A temporary path in a new hidden folder beside the file; when the block ends without an
        exception, the file written there is checked again and renamed into place (a signal
        waits for the rename); the folders it created go again when nothing was installed."""
        folder = self.path.parent
        made, installed = missing_folders(folder), False
        folder.mkdir(parents=True, exist_ok=True)
        clear_stale(folder)
        tmp = folder / tmp_name()
        tmp.mkdir()
        try:
            yield tmp / self.path.name
            with deferred():
                self.check()
                replace = os.path.lexists(self.path)
                for sibling in self._siblings() if replace else ():  # the earlier file's own (a -wal): they go first
                    os.remove(sibling)
                rename_into_place(tmp / self.path.name, self.path, replace=replace)
                installed = True
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            if not installed:
                remove_empty(made)
