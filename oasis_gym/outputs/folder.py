"""`OutputDir`: the folder a command writes its files into, under the output rule
(`oasis_gym.outputs`): its marker, staged writes, transactions, the lock on the folder."""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..app.interrupts import deferred
from .files import (
    SIGNATURE,
    TMP_PREFIX,
    FolderBusy,
    OutputError,
    check_writable,
    clear_stale,
    file_sha256,
    hold_folder,
    is_regular_file,
    let_go,
    missing_folders,
    remove_empty,
    rename_into_place,
    tmp_name,
    walk_files,
)

_MAX_MARKER = 64 << 20
_STAGED: dict[Path, Path] = {}  # an output folder -> its staging folder, while its `transaction` is open


def staged_path(path: Path) -> Path:
    """Where `path` is written, and read back until the command ends: inside the staging folder
    of an open `transaction` on it or on a folder above it, else itself."""
    absolute = Path(os.path.abspath(path))
    for root, stage in _STAGED.items():
        if absolute == root or root in absolute.parents:
            return stage / absolute.relative_to(root)
    return path


class OutputDir:
    """The folder a command writes its files into, under the module's rule.

    `files`: the names (glob patterns, relative, ``runs/*.json`` for one sub-folder) the command
    may write there; `trees`: sub-folders whose files other code writes (SB3's ``tb``), owned
    whole once claimed (`claim_trees`). `overwrite`: its own earlier files may be replaced;
    `resume`: they may be written again without it (a sweep continued). `settings` are kept in
    the marker (`stored_settings`). `check` refuses before anything is written and holds the
    folder's writer lock until `release` (or the process's end); `staging` yields a temporary
    folder whose files are installed at the same relative names."""

    def __init__(
        self,
        path: str | os.PathLike,
        command: str,
        files: Sequence[str] = (),
        trees: Sequence[str] = (),
        *,
        overwrite: bool = False,
        resume: bool = False,
        settings: Any = None,
        option: str = "--out",
        own_hint: str = "pass --overwrite to replace it",
    ):
        self.path, self.command = staged_path(Path(path)), command
        self.files, self.trees = tuple(files), tuple(trees)
        self.overwrite, self.resume, self.settings = overwrite, resume, settings
        self.option, self.own_hint = option, own_hint
        self.marker = self.path / f".oasis-gym-{command}.json"
        self._cache: tuple[tuple, dict] | None = None
        self._held: tuple | None = None

    def _hold(self) -> None:
        """Create the folder if missing and hold its writer lock (one command at a time)."""
        if self._held is not None:
            return
        made = missing_folders(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            self._held = hold_folder(self.path, made) or ()
        except FolderBusy as busy:
            remove_empty(made)
            who = f" (pid {', '.join(map(str, busy.pids))})" if busy.pids else ""
            raise OutputError(
                f"{self.path} is being written by another oasis-gym command{who}: one command writes a folder "
                f"at a time; wait for it to end, or choose another {self.option}"
            ) from None

    def release(self) -> None:
        """Let go of the folder's writer lock (the process's end does too); a folder the check
        created and nothing was written into goes."""
        held, self._held = self._held, None
        if held:
            let_go(held)

    def _foreign(self, path: Path) -> OutputError:
        return OutputError(
            f"{path} is not an output of oasis-gym {self.command}: it is never replaced (not even with "
            f"--overwrite); move it, or choose another {self.option}"
        )

    def _load(self) -> dict:
        """The marker's content (empty without one; a copy: the last one read or written is
        kept while the file is unchanged); a file of its name that is not ours is refused."""
        if not os.path.lexists(self.marker):
            return {"files": {}, "trees": []}
        try:
            st = os.lstat(self.marker)
            if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_MARKER:
                raise ValueError
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
            data = self._cache[1] if self._cache and self._cache[0] == key else None
            if data is None:
                data = json.loads(self.marker.read_text(encoding="utf-8"))
            ok = isinstance(data, dict) and data.get(SIGNATURE) == self.command
            if not (ok and isinstance(data.get("files"), dict) and isinstance(data.get("trees"), list)):
                raise ValueError
        except (OSError, ValueError, RecursionError):
            raise self._foreign(self.marker) from None
        self._cache = (key, data)
        return {**data, "files": dict(data["files"]), "trees": list(data["trees"])}

    def stored_settings(self) -> Any:
        """The settings the marker holds (None without a marker or settings)."""
        return self._load().get("settings") if self.path.is_dir() else None

    def _matches(self) -> Iterator[tuple[str, Path]]:
        """(relative name, path) of every existing entry a file pattern matches."""
        folders: dict[str, list[str]] = {}
        for pattern in self.files:
            folder, _, name = pattern.rpartition("/")
            folders.setdefault(folder, []).append(name)
        for folder, names in folders.items():
            where = self.path / folder if folder else self.path
            if folder and os.path.lexists(where) and (where.is_symlink() or not where.is_dir()):
                yield folder, where  # a folder we need is something else
                continue
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                for entry in sorted(os.listdir(where)):
                    if any(fnmatch.fnmatchcase(entry, n) for n in names) and not entry.startswith(TMP_PREFIX):
                        yield f"{folder}/{entry}" if folder else entry, where / entry

    def _own(self, rel: str, path: Path, manifest: dict) -> bool:
        return is_regular_file(path) and file_sha256(path) in manifest["files"].get(rel, [])

    def check(self) -> OutputDir:
        """Refuse (`OutputError`, naming the path) unless every path the command would write is
        missing or its own earlier output (`overwrite` / `resume` then allowing it)."""
        if os.path.lexists(self.path) and not self.path.is_dir():
            raise OutputError(f"{self.option} {self.path} exists and is not a folder: choose another {self.option}")
        check_writable(self.path, self.option)
        self._hold()
        try:
            self._check_files()
        except BaseException:
            self.release()
            raise
        return self

    def _check_files(self) -> None:
        manifest = self._load()
        may_replace = self.overwrite or self.resume
        for rel, path in self._matches():
            if not self._own(rel, path, manifest):
                raise self._foreign(path)
            if not may_replace:
                raise OutputError(f"{path} holds an earlier output of oasis-gym {self.command}: {self.own_hint}")
        for tree in self._tree_names():
            if self._tree_files(tree, manifest) and not may_replace:
                raise OutputError(
                    f"{self.path / tree} holds an earlier output of oasis-gym {self.command}: {self.own_hint}"
                )

    def _tree_names(self) -> list[str]:
        """The existing sub-folders (and other entries) that a tree pattern (``seed_*``) names."""
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            names = os.listdir(self.path)
            return sorted(n for n in names if any(fnmatch.fnmatchcase(n, t) for t in self.trees))
        return []

    def _tree_files(self, tree: str, manifest: dict) -> list[Path]:
        """The files in sub-folder `tree`; `OutputError` if it is something else, or holds files
        and is not this command's."""
        where = self.path / tree
        if not os.path.lexists(where):
            return []
        files = [] if where.is_symlink() or not where.is_dir() else list(walk_files(where))
        owned = any(fnmatch.fnmatchcase(tree, t) for t in manifest["trees"])
        if not owned and (where.is_symlink() or not where.is_dir() or files):
            raise self._foreign(files[0] if files else where)
        return files

    def _save(self, manifest: dict) -> None:
        manifest = {SIGNATURE: self.command, **{k: v for k, v in manifest.items() if k != SIGNATURE}}
        if self.settings is not None:
            manifest["settings"] = self.settings
        tmp = self.path / tmp_name(".json")
        tmp.write_text(json.dumps(manifest), encoding="utf-8")
        os.replace(tmp, self.marker)
        st = os.lstat(self.marker)
        self._cache = ((st.st_ino, st.st_mtime_ns, st.st_size), manifest)

    def _open(self) -> dict:
        self._hold()
        clear_stale(self.path)
        return self._load()

    def claim_trees(self) -> OutputDir:
        """Create the folder and record its `trees` as this command's, before other code writes
        them: each must be missing, empty or already this command's (else `OutputError`)."""
        manifest = self._open()
        for tree in self._tree_names():
            self._tree_files(tree, manifest)
        manifest["trees"] = sorted(set(manifest["trees"]) | set(self.trees))
        self._save(manifest)
        return self

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Path]:
        """A whole command's output at once. Until the block ends, every `OutputDir` of this
        folder, or of a folder in it, writes into one hidden staging folder here (yielded;
        `tensorboard --logdir` on this folder shows what SB3 streams there as it is written).
        When the block ends without an exception, its files are installed as `staging` installs
        them and each claimed tree (``tb/``, a seed's folder) is swapped in whole; stopped or
        failed, the staging folder goes and the earlier output stays as it was (a folder the
        check created goes too, when the command ends: `release`)."""
        self._open()
        stage = self.path / tmp_name()
        stage.mkdir()
        root = Path(os.path.abspath(self.path))
        _STAGED[root] = stage
        try:
            yield stage
            del _STAGED[root]
            with deferred():
                self.claim_trees()
                (stage / self.marker.name).unlink(missing_ok=True)  # the staging folder's own marker
                trees = [n for n in sorted(os.listdir(stage)) if any(fnmatch.fnmatchcase(n, t) for t in self.trees)]
                for name in trees:
                    self._swap_tree(stage / name, name)
                self._install_all(stage, ())
        finally:
            _STAGED.pop(root, None)
            shutil.rmtree(stage, ignore_errors=True)

    def _swap_tree(self, new: Path, name: str) -> None:
        """Put the folder `new` in place of the tree `name` (this command's, checked again now):
        the old one is renamed aside first and removed after (a kill between the two renames
        leaves the tree missing, never half old and half new)."""
        target = self.path / name
        self._tree_files(name, self._load())
        aside = self.path / tmp_name()
        if os.path.lexists(target):
            os.rename(target, aside)
        os.rename(new, target)
        shutil.rmtree(aside, ignore_errors=True)

    @contextlib.contextmanager
    def staging(self, prune: Sequence[str] = ()) -> Iterator[Path]:
        """A new temporary folder inside the output folder; when the block ends without an
        exception, every file written there is installed at its relative name (own files
        matching `prune` that it does not write again are removed; a signal waits until all are
        renamed); the folder always goes, and so do the folders it created when nothing was
        installed."""
        made, installed = missing_folders(self.path), False
        self._open()
        tmp = self.path / tmp_name()
        tmp.mkdir()
        try:
            yield tmp
            with deferred():
                self._install_all(tmp, prune)
                installed = True
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            if not installed:
                remove_empty(made)

    def write(self, rel: str, data: bytes) -> Path:
        """Write one file `rel` (its bytes `data`) under the rule; returns its path."""
        with self.staging() as tmp:
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(data)
        return self.path / rel

    def _install_all(self, tmp: Path, prune: Sequence[str]) -> None:
        manifest = self._load()
        new = {p.relative_to(tmp).as_posix(): p for p in walk_files(tmp)}  # (sorted)
        hashes = {rel: file_sha256(p) for rel, p in new.items()}
        old: dict[str, str] = {}
        for rel in new:  # the rule again, now: something may have appeared since `check`
            target = self.path / rel
            if os.path.lexists(target):
                if not self._own(rel, target, manifest):
                    raise self._foreign(target)
                old[rel] = file_sha256(target)
        pruned = [r for r in manifest["files"] if r not in new and any(fnmatch.fnmatchcase(r, p) for p in prune)]
        stale = [r for r in pruned if os.path.lexists(self.path / r) and self._own(r, self.path / r, manifest)]
        for rel, h in hashes.items():  # before the renames: the old and the new bytes are both ours
            manifest["files"][rel] = sorted({h, *([old[rel]] if rel in old else [])})
        self._save(manifest)
        for rel, p in new.items():
            (self.path / rel).parent.mkdir(parents=True, exist_ok=True)
            rename_into_place(p, self.path / rel, replace=rel in old)
        for rel in stale:
            os.remove(self.path / rel)
            del manifest["files"][rel]
        for rel, h in hashes.items():
            manifest["files"][rel] = [h]
        self._save(manifest)
