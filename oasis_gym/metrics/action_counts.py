"""Per-step action counts as one scalar per action type."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..actions import ACTION_NAMES, NUM_ACTIONS
from .arrays import as_ints

__all__ = ["action_count_scalars"]


def action_count_scalars(action_type: ArrayLike, prefix: str = "actions/") -> dict[str, float]:
    """Count of each action code in one step, one tag per action (zeros included).

    Every action always gets a tag so the TensorBoard/SQLite series have no gaps.
    """
    codes = as_ints(action_type)
    counts = np.bincount(codes[(codes >= 0) & (codes < NUM_ACTIONS)], minlength=NUM_ACTIONS)
    return {prefix + name: float(c) for name, c in zip(ACTION_NAMES, counts)}
