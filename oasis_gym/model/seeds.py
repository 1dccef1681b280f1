"""Episode seeds: which seeds are for training and which for evaluation, and the chain of
training episodes, one home for both paths.

Evaluation uses seeds below `TRAIN_SEEDS_FROM`; every episode an env starts without being given
a seed (training) draws one at or above it, so no training episode replays an evaluation one.
The fast path's envs chain their unseeded episodes with `next_episode_seed` (an env alone and
the same env inside a vector env play the same episodes); the platform path draws them from
its env's generator within ``[TRAIN_SEEDS_FROM, 2**31 - 1)``.
"""

from __future__ import annotations

import numpy as np

from .rng import hash64

TRAIN_SEEDS_FROM = 2**20  # unseeded episodes draw seeds >= this; evaluation uses seeds below (both paths)


def next_episode_seed(seed) -> np.ndarray:
    """The seed of the episode after one with `seed` when the next reset names none: a fixed
    function, so an env alone and the same env inside a vector env play the same chain of
    episodes, always >= TRAIN_SEEDS_FROM (never an evaluation seed)."""
    return (TRAIN_SEEDS_FROM + hash64(np.asarray(seed, np.int64).astype(np.uint64), 0x5EED) % np.uint64(2**40)).astype(
        np.int64
    )


def training_seeds(seed: int, runner: int, k: int) -> np.ndarray:
    """The first episode seeds of the k sub-envs of env runner `runner` in a run seeded `seed`
    (RLlib's env runners on the fast path), all >= TRAIN_SEEDS_FROM."""
    h = hash64(np.uint64(seed), np.uint64(runner), np.arange(k, dtype=np.uint64), 0x7A1)
    return (TRAIN_SEEDS_FROM + h % np.uint64(2**40)).astype(np.int64)


def draw_training_seed(generator: np.random.Generator) -> int:
    """A training episode's seed drawn from `generator`, in [TRAIN_SEEDS_FROM, 2**31 - 1) (the
    platform path: an env's unseeded reset, RLlib's platform-agent env)."""
    return int(generator.integers(TRAIN_SEEDS_FROM, 2**31 - 1))
