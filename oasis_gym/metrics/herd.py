"""Herd effect: mean final score per treatment group of seeded first votes."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .arrays import as_floats

__all__ = ["herd_effect"]


def herd_effect(group: ArrayLike, score: ArrayLike) -> dict[str, float]:
    """Mean score per treatment group (Muchnik et al. 2013, Science, "Social influence bias").

    ``group`` labels each item (e.g. "up", "down", "control" for comments whose first vote
    was seeded up, down or not at all); ``score`` is the item's final likes - dislikes.
    Items with a NaN score are left out. Keys are the labels as strings.
    """
    g = np.asarray(group).reshape(-1)
    sc = as_floats(score)
    ok = np.isfinite(sc)
    labels, inv = np.unique(g[ok], return_inverse=True)
    sums = np.bincount(inv, weights=sc[ok], minlength=labels.size)
    cnt = np.bincount(inv, minlength=labels.size)
    return {str(lab): float(s / c) for lab, s, c in zip(labels.tolist(), sums, cnt)}
