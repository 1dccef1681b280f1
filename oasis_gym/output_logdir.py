"""A TensorBoard folder (`run --logdir`, `sweep`) under the output rule of `oasis_gym.outputs`:
it may hold only event files and its oasis-gym marker; runs add their event files to it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .output_files import TMP_PREFIX, OutputError, check_writable, is_regular_file, is_signed, signed, walk_files
from .outputs import OutputFile

__all__ = ["check_logdir", "claim_logdir"]

_EVENTS = "events.out.tfevents."
_LOGDIR_MARKER = ".oasis-gym-tensorboard.json"


def check_logdir(path: str | os.PathLike) -> Path:
    """Refuse a TensorBoard folder that is not a folder, or holds anything but its oasis-gym
    marker and event files (a folder without the marker: only if empty)."""
    p = Path(path)
    if os.path.lexists(p) and not p.is_dir():
        raise OutputError(f"--logdir {p} exists and is not a folder: choose another --logdir")
    check_writable(p, "--logdir")
    if not os.path.lexists(p):
        return p
    marker = p / _LOGDIR_MARKER
    ours = os.path.lexists(marker) and is_signed("tensorboard")(marker)
    for entry in walk_files(p):
        if entry == marker or entry.name.startswith(TMP_PREFIX):
            continue
        if not (ours and is_regular_file(entry) and entry.name.startswith(_EVENTS)):
            raise OutputError(
                f"--logdir {p} holds {entry}, which is not an oasis-gym TensorBoard file: "
                "it is never written into; choose another --logdir"
            )
    return p


def claim_logdir(path: str | os.PathLike) -> Path:
    """`check_logdir`, then create the folder and its marker (runs add event files to it)."""
    p = check_logdir(path)
    p.mkdir(parents=True, exist_ok=True)
    if not os.path.lexists(p / _LOGDIR_MARKER):
        note = {"note": "TensorBoard event files of oasis-gym runs: runs add theirs here"}
        with OutputFile(p / _LOGDIR_MARKER, "tensorboard", is_signed("tensorboard")).staging() as tmp:
            tmp.write_text(json.dumps(signed(note, "tensorboard")), encoding="utf-8")
    return p
