"""A training run's output folder (`--out`) under the rule of `oasis_gym.outputs`.

Its own files are model.zip, its observation statistics, eval.json and learning_curve.png,
written under temporary names and renamed into place; SB3 streams its TensorBoard logs and
checkpoints into the sub-folders ``tb/`` and ``checkpoints/``, which the run owns whole
(claimed in the folder's marker before SB3 writes them). A user's file of those names, or
files in those sub-folders that an earlier run did not claim, are refused before training.
The command line writes all of it through one `OutputDir.transaction`: it appears when the
command ends, or not at all (the earlier output stays).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from oasis_gym.outputs import OutputDir

__all__ = ["FILES", "TREES", "RLLIB_FILES", "train_output", "benchmark_output", "rllib_output", "staged_training"]

FILES = ("model.zip", "model.obs_norm.npz", "eval.json", "learning_curve.png")
TREES = ("tb", "checkpoints")
BENCHMARK_FILES = ("results.md", "results.json", "learning_curves.png")
BENCHMARK_TREES = ("tb_band", "seed_*")  # the band's TensorBoard run; each seed's training output
RLLIB_FILES = ("rllib_curve.json", "rllib_curve.png")  # an RLlib run's learning curve (train/rllib.py)


def train_output(out: str | Path, overwrite: bool = False) -> OutputDir:
    """The folder `out` of a training run (not yet checked: call `.check()`); its earlier
    output is replaced only with `overwrite`."""
    return OutputDir(out, "train", FILES, TREES, overwrite=overwrite)


def benchmark_output(out: str | Path, overwrite: bool = False) -> OutputDir:
    """The folder `out` of `oasis-gym benchmark`: its tables and plot, the band's TensorBoard
    run and one training output per seed (``seed_<i>/``), owned whole."""
    return OutputDir(out, "train", BENCHMARK_FILES, BENCHMARK_TREES, overwrite=overwrite)


def rllib_output(out: str | Path, overwrite: bool = False) -> OutputDir:
    """The folder `out` of an RLlib run's learning curve (`train/rllib.py --out`; not yet
    checked: call `.check()`)."""
    return OutputDir(out, "rllib", RLLIB_FILES, overwrite=overwrite)


@contextlib.contextmanager
def staged_training(output: OutputDir, say: Callable[[str], None]) -> Iterator[None]:
    """A training command's whole output (`output`, checked) in one `OutputDir.transaction`:
    it appears when the block ends, or not at all; `say` tells where TensorBoard shows it meanwhile."""
    with output.transaction():
        say(f"TensorBoard while it trains: tensorboard --logdir {output.path}")
        yield
