"""A training run's output folder (`--out`) under the rule of `oasis_gym.outputs`.

Its own files are model.zip, its observation statistics, eval.json and learning_curve.png,
written under temporary names and renamed into place; SB3 streams its TensorBoard logs and
checkpoints into the sub-folders ``tb/`` and ``checkpoints/``, which the run owns whole
(claimed in the folder's marker before SB3 writes them). A user's file of those names, or
files in those sub-folders that an earlier run did not claim, are refused before training.
"""

from __future__ import annotations

from pathlib import Path

from oasis_gym.outputs import OutputDir

__all__ = ["FILES", "TREES", "train_output"]

FILES = ("model.zip", "model.obs_norm.npz", "eval.json", "learning_curve.png")
TREES = ("tb", "checkpoints")


def train_output(out: str | Path, overwrite: bool = False) -> OutputDir:
    """The folder `out` of a training run (not yet checked: call `.check()`); its earlier
    output is replaced only with `overwrite`."""
    return OutputDir(out, "train", FILES, TREES, overwrite=overwrite)
