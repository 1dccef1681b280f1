"""Information diffusion of the ABM users: independent cascade and linear threshold, vectorized
(used to calibrate spread against real cascades)."""

from __future__ import annotations

import numpy as np

__all__ = ["independent_cascade", "linear_threshold", "sample_thresholds"]


def independent_cascade(rng: np.random.Generator, exposures, p, eligible=None) -> np.ndarray:
    """Independent cascade: each exposure to an item independently triggers a repost w.p. p.

    ``exposures`` (n, M): how many times each user was exposed to each candidate item this
    step (ints; a bool mask counts as 0/1). ``p`` is a scalar or broadcasts to (n, M) (e.g.
    per-item virality (M,)). Item m triggers for user i with probability 1 - (1 - p)^count.
    Returns (n,) int64: the item reposted, chosen uniformly among the triggered ones, or -1.
    Randomness: one uniform U per (user, item) with a positive count (row-major order);
    triggered iff U < q, and U / q is then uniform on [0, 1) and independent across items,
    so the smallest U / q picks uniformly among the triggered items.
    """
    cnt = np.asarray(exposures)
    if cnt.ndim != 2:
        raise ValueError(f"exposures must be (n, M), got shape {cnt.shape}")
    if np.any(cnt < 0):
        raise ValueError("exposure counts must be >= 0")
    p = np.asarray(p, dtype=np.float64)
    if np.any((p < 0) | (p > 1)):
        raise ValueError("p must lie in [0, 1]")
    n, m = cnt.shape
    live = cnt > 0
    if eligible is not None:
        live &= np.asarray(eligible, dtype=bool)
    idx = np.flatnonzero(live)
    c = cnt.reshape(-1)[idx].astype(np.float64)
    p_at = np.broadcast_to(p, cnt.shape).reshape(-1)[idx] if p.ndim else p
    q = -np.expm1(c * np.log1p(-p_at)) if np.all(p < 1) else 1.0 - np.power(1.0 - p_at, c)
    draw = rng.random(idx.size)
    hit = draw < q
    idx, key = idx[hit], draw[hit] / q[hit]
    rows = idx // m if m else idx
    order = np.lexsort((key, rows))  # by row, then smallest key first
    rows, idx = rows[order], idx[order]
    first = np.ones(rows.size, dtype=bool)
    first[1:] = rows[1:] != rows[:-1]
    out = np.full(n, -1, dtype=np.int64)
    out[rows[first]] = idx[first] - rows[first] * m
    return out


def sample_thresholds(rng: np.random.Generator, n: int) -> np.ndarray:
    """Linear-threshold thresholds ~ U(0, 1] (Kempe, Kleinberg & Tardos 2003); never 0."""
    return 1.0 - rng.random(n)


def linear_threshold(frac_shared, thresholds, eligible=None) -> np.ndarray:
    """Linear threshold: user i reposts item k once frac_shared[i, k] >= thresholds[i].

    ``frac_shared`` (n, K): fraction (or total influence weight) of i's followees who shared
    candidate item k. An item no followee shared (0) never triggers, even at threshold 0.
    Among the triggered items the one with the largest fraction is reposted (ties: lowest
    slot), at most one per user per step. Returns (n,) int64 slot or -1. Deterministic.
    """
    f = np.asarray(frac_shared, dtype=np.float64)
    th = np.asarray(thresholds, dtype=np.float64)
    if f.ndim != 2 or th.shape != (f.shape[0],):
        raise ValueError(f"need frac_shared (n, K) and thresholds (n,), got {f.shape}, {th.shape}")
    on = (f >= th[:, None]) & (f > 0)  # NaN -> False
    if eligible is not None:
        on &= np.asarray(eligible, dtype=bool)
    score = np.where(on, f, -np.inf)
    choice = np.argmax(score, axis=1) if f.shape[1] else np.zeros(f.shape[0], dtype=np.int64)
    return np.where(on.any(axis=1), choice, -1).astype(np.int64)
