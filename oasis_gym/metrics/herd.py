"""Herd effect: mean final score (likes - dislikes) per treatment group of seeded first votes."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from .arrays import as_floats, as_ints

__all__ = ["herd_effect", "group_mean_scores", "herd_values"]


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


def herd_values(pf, groups: Mapping[str, ArrayLike], kind: str = "post") -> dict[str, float]:
    """``herd/<group>_mean_score`` of a platform: mean likes - dislikes of each treatment group.

    ``groups`` maps a label to post ids (``kind="post"``) or comment ids (``kind="comment"``);
    ids outside the platform are left out, and a group with no item left is NaN. No groups:
    an empty dict.
    """
    if not groups:
        return {}
    likes, dislikes = (pf.p_likes.a, pf.p_dislikes.a) if kind == "post" else (pf.c_likes.a, pf.c_dislikes.a)
    return {f"herd/{g}_mean_score": v for g, v in group_mean_scores(likes, dislikes, groups).items()}


def group_mean_scores(likes: ArrayLike, dislikes: ArrayLike, groups: Mapping[str, ArrayLike]) -> dict[str, float]:
    """{label: mean likes - dislikes over the group's items} (``likes``/``dislikes`` per item id).

    Ids outside the arrays are left out; a group with no item left is NaN.
    """
    likes, dislikes = np.asarray(likes), np.asarray(dislikes)
    labels, scores = [], []
    for g, ids in groups.items():
        ids = as_ints(ids)
        ids = ids[(ids >= 0) & (ids < likes.size)]
        labels.append(np.full(ids.size, g, dtype=object))
        scores.append((likes[ids] - dislikes[ids]).astype(np.float64))
    means = herd_effect(np.concatenate(labels), np.concatenate(scores)) if labels else {}
    return {g: means.get(str(g), math.nan) for g in groups}
