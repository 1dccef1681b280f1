"""Array plumbing shared by the metric formulas: coercion, run starts, correlation, id maps.

Conventions of every formula module: ids are non-negative int64 positions (user ids index
per-user arrays, post ids index per-post arrays) unless a function takes an explicit
``post_id`` array; NaN marks "unknown" in float inputs and is ignored; a metric undefined for
its input (too few values, zero variance, nothing to count) is NaN rather than an error.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["IntArray", "FloatArray", "as_ints", "as_floats", "ratio", "run_starts", "pearson", "post_rows"]

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


def as_ints(a: ArrayLike) -> IntArray:
    """``a`` as a flat int64 array."""
    return np.asarray(a, dtype=np.int64).reshape(-1)


def as_floats(a: ArrayLike) -> FloatArray:
    """``a`` as a flat float64 array."""
    return np.asarray(a, dtype=np.float64).reshape(-1)


def ratio(num: float, den: float) -> float:
    """num / den as a float; NaN when ``den`` is 0: the empty-input convention of every share."""
    return float(num) / float(den) if den else float("nan")


def run_starts(*sorted_keys: NDArray[Any]) -> NDArray[np.bool_]:
    """True where a new run of equal key tuples begins in lexicographically sorted keys."""
    n = sorted_keys[0].size
    new = np.zeros(n, dtype=bool)
    if n:
        new[0] = True
        for k in sorted_keys:
            new[1:] |= k[1:] != k[:-1]
    return new


def pearson(a: FloatArray, b: FloatArray) -> float:
    """Pearson correlation of paired finite values; NaN when undefined (n < 2 or no spread)."""
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if a.size < 2:
        return float("nan")
    da, db = a - a.mean(), b - b.mean()
    den = np.sqrt((da * da).sum() * (db * db).sum())
    return float((da * db).sum() / den) if den > 0 else float("nan")


def post_rows(ids: IntArray, post_id: IntArray | None) -> IntArray:
    """Map post ids to row positions (ids < 0 stay -1). Without ``post_id``, ids are rows."""
    if post_id is None:
        return ids.copy()
    wanted = ids >= 0
    if post_id.size == 0:
        if wanted.any():
            raise ValueError("a referenced post id is not in post_id")
        return np.full(ids.size, -1, dtype=np.int64)
    order = np.argsort(post_id, kind="stable")
    sorted_ids = post_id[order]
    at = np.minimum(np.searchsorted(sorted_ids, ids), sorted_ids.size - 1)
    found = wanted & (sorted_ids[at] == ids)
    if np.any(wanted & ~found):
        raise ValueError("a referenced post id is not in post_id")
    return np.where(found, order[at], -1).astype(np.int64)
