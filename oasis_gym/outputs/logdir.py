"""A TensorBoard folder (`run --logdir`, a scenario run) under the output rule of
`oasis_gym.outputs`: it may hold only event files and its oasis-gym marker, and the marker says
whose output it is: the journal of the one run that writes there. A resumed run adds its event
files to its own folder; a new run of that journal replaces them only with ``--overwrite``; no
other run writes there (TensorBoard would show two runs in one folder as one run). The default
folder of a journal ``run.db`` is ``runs/run``, else the first of ``runs/run-2``, ``runs/run-3``,
... that this run may write (`logdir_for`)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from itertools import count
from pathlib import Path

from .file import OutputFile
from .files import (
    TMP_PREFIX,
    OutputError,
    check_writable,
    is_regular_file,
    is_signed,
    signed,
    tmp_name,
    walk_files,
)

__all__ = ["check_logdir", "claim_logdir", "logdir_for"]

_EVENTS = "events.out.tfevents."
_LOGDIR_MARKER = ".oasis-gym-tensorboard.json"


def _owner(marker: Path) -> str | None:
    """The journal named in a folder's marker (None: no such marker, or one of an older
    version, which named none)."""
    if not (os.path.lexists(marker) and is_signed("tensorboard")(marker)):
        return None
    with contextlib.suppress(OSError, ValueError):
        owner = json.loads(marker.read_text(encoding="utf-8")).get("journal")
        return owner if isinstance(owner, str) else None
    return None


def check_logdir(
    path: str | os.PathLike, journal: str | os.PathLike | None = None, *, overwrite: bool = False, resume: bool = False
) -> Path:
    """Refuse (`OutputError`, one line) a TensorBoard folder that is not a folder, holds anything
    but its oasis-gym marker and event files (a folder without the marker: only if empty), or,
    given the run's `journal`, holds the event files of another journal's run, or of an earlier
    run of this one unless the run resumes it or `overwrite`."""
    p = Path(path)
    if os.path.lexists(p) and not p.is_dir():
        raise OutputError(f"--logdir {p} exists and is not a folder: choose another --logdir")
    check_writable(p, "--logdir")
    if not os.path.lexists(p):
        return p
    marker = p / _LOGDIR_MARKER
    ours = os.path.lexists(marker) and is_signed("tensorboard")(marker)
    events = False
    for entry in walk_files(p):
        if entry == marker or entry.name.startswith(TMP_PREFIX):
            continue
        if not (ours and is_regular_file(entry) and entry.name.startswith(_EVENTS)):
            raise OutputError(
                f"--logdir {p} holds {entry}, which is not an oasis-gym TensorBoard file: "
                "it is never written into; choose another --logdir"
            )
        events = True
    if journal is None or not events:
        return p
    owner = _owner(marker)
    if owner != os.path.realpath(journal):
        whose = f"the run of {owner}" if owner else "another run"
        raise OutputError(
            f"--logdir {p} holds the TensorBoard logs of {whose}, and two runs in one folder show as "
            "one in TensorBoard: choose another --logdir"
        )
    if not (resume or overwrite):
        raise OutputError(
            f"--logdir {p} holds the TensorBoard logs of an earlier run of {journal}: pass --overwrite "
            "to replace them, or choose another --logdir"
        )
    return p


def logdir_for(
    journal: str | os.PathLike,
    given: str | os.PathLike | None = None,
    *,
    overwrite: bool = False,
    resume: bool = False,
    root: str = "runs",
) -> Path:
    """The TensorBoard folder of the run journaled in `journal`: `given` (``--logdir``), checked
    by `check_logdir`, else the first of ``<root>/<journal stem>``, ``<root>/<stem>-2``, ... that
    this run may write (a new folder, or this journal's own)."""
    if given is not None:
        return check_logdir(given, journal, overwrite=overwrite, resume=resume)
    stem = Path(journal).stem
    for k in count(1):
        path = Path(root) / (stem if k == 1 else f"{stem}-{k}")
        if not os.path.lexists(path):
            return check_logdir(path, journal)  # a folder no command could write: one line
        with contextlib.suppress(OutputError):
            return check_logdir(path, journal, overwrite=overwrite, resume=resume)
    raise AssertionError("unreachable")  # pragma: no cover


def claim_logdir(
    path: str | os.PathLike, journal: str | os.PathLike | None = None, *, overwrite: bool = False, resume: bool = False
) -> Path:
    """`check_logdir`, then create the folder and its marker naming `journal`; a new run of the
    journal (not `resume`) first removes what its earlier run left in the folder our marker
    names as ours (moved aside to a temporary name, then deleted)."""
    p = check_logdir(path, journal, overwrite=overwrite, resume=resume)
    p.mkdir(parents=True, exist_ok=True)
    marked = os.path.lexists(p / _LOGDIR_MARKER) and is_signed("tensorboard")(p / _LOGDIR_MARKER)
    if journal is not None and not resume and marked:  # (in a folder without our marker: nothing of ours)
        for entry in sorted(p.iterdir()):
            if entry.name != _LOGDIR_MARKER and not entry.name.startswith(TMP_PREFIX):
                aside = p / tmp_name()
                entry.rename(aside)
                shutil.rmtree(aside) if aside.is_dir() else aside.unlink()
    owner = None if journal is None else os.path.realpath(journal)
    if not os.path.lexists(p / _LOGDIR_MARKER) or (owner is not None and _owner(p / _LOGDIR_MARKER) != owner):
        note = {"note": "TensorBoard event files of the oasis-gym run of the journal below", "journal": owner}
        with OutputFile(
            p / _LOGDIR_MARKER, "tensorboard", is_signed("tensorboard"), overwrite=True, option="--logdir"
        ).staging() as tmp:
            tmp.write_text(json.dumps(signed(note, "tensorboard")), encoding="utf-8")
    return p
