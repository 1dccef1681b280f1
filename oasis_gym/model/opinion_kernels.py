"""The opinion models' kernels and the machinery that runs them over blocks of users.

Part of the home of opinion change (issue 51, with `model/opinions.py`, which holds the public
models and calls these): argument checks, a kernel run over blocks of users (a block's working
set stays in cache; nothing loops over single users), and the five classic models' per-block
kernels, each over a slot-major (K, b) block. The ABM's behaviour (`policies/behaviour.py`)
uses the same checks and row blocks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

BLOCK_ROWS = 16_384  # users per block: a block's (K, b) working set stays in cache


def as_opinions(x: np.ndarray) -> np.ndarray:
    """Opinions as a float64 (n,) array; a clear error for any other shape."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"x must be 1-D (n,), got shape {x.shape}")
    return x


def check_matrix(name: str, a: np.ndarray | None, n: int, k: int | None = None) -> None:
    """Check that `a` (when given) is an (n, K) matrix, or (n, k) when `k` is given."""
    if a is None:
        return
    if a.ndim != 2 or a.shape[0] != n or (k is not None and a.shape[1] != k):
        want = f"({n}, {k if k is not None else 'K'})"
        raise ValueError(f"{name} must have shape {want}, got {a.shape}")


def check_exposures(x: np.ndarray, exposed, mask, weights=None):
    """Validate and coerce the (n, K) exposure block; weights default to None (all 1)."""
    exposed = np.asarray(exposed, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    n = x.shape[0]
    check_matrix("exposed", exposed, n)
    check_matrix("mask", mask, n, exposed.shape[1])
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        check_matrix("weights", weights, n, exposed.shape[1])
    return exposed, mask, weights


def model_param(v, n: int, name: str):
    """A model parameter: a Python float, or a float64 (n,) array for per-user values."""
    a = np.asarray(v, dtype=np.float64)
    if a.ndim == 0:
        return float(a)
    if a.shape != (n,):
        raise ValueError(f"{name} must be a scalar or shape ({n},), got {a.shape}")
    return a


def take_rows(v, sl: slice):
    """Rows `sl` of a per-user argument (arrays), or the argument itself (scalars, None)."""
    return v[sl] if isinstance(v, np.ndarray) else v


def _block_arg(a, sl: slice):
    """A block of a row-aligned argument; (n, K) matrices become private slot-major (K, b)
    copies, because numpy is ~10x slower on a strided column than on a contiguous row."""
    if not isinstance(a, np.ndarray):
        return a
    return a[sl].T.copy() if a.ndim == 2 else a[sl]


def run_blocked(kernel: Callable, n: int, n_out: int, row_args: tuple, scalars: dict) -> tuple:
    """Run ``kernel`` over blocks of users; row_args are (n,) / (n, K) arrays, scalars or None."""
    outs = tuple(np.empty(n, dtype=np.float64) for _ in range(n_out))
    for start in range(0, n, BLOCK_ROWS):
        sl = slice(start, min(n, start + BLOCK_ROWS))
        res = kernel(*(_block_arg(a, sl) for a in row_args), **scalars)
        for o, r in zip(outs, res):
            o[sl] = r
    return outs


def zero_nan(a: np.ndarray) -> np.ndarray:
    """Set NaNs of ``a`` to 0 in place (arithmetically: boolean indexing is ~10x slower)."""
    bad = np.isnan(a)
    if bad.any():
        np.fmax(a, -np.finfo(a.dtype).max, out=a)  # fmax maps NaN to the finite bound
        a *= ~bad
    return bad


def clean_block(e: np.ndarray, m: np.ndarray, w: np.ndarray | None, *extra_bad) -> np.ndarray:
    """Drop NaN exposures from a (K, b) block in place: value 0, mask False, NaN weight 0.

    Afterwards every update can be applied as ``x += step * mask`` with finite numbers only
    (numpy's masked ``where=`` ufunc path is ~10x slower than a multiply).
    """
    bad = zero_nan(e)
    for b in extra_bad:
        bad |= b
    m &= ~bad
    if w is not None:
        zero_nan(w)
    return m


def apply_order(order: str, rng: np.random.Generator | None, *mats):
    """Reorder every (n, K) matrix's slots per user: "slot" keeps feed order, "random" shuffles."""
    if order == "slot":
        return mats
    if order != "random":
        raise ValueError(f"order must be 'slot' or 'random', got {order!r}")
    if rng is None:
        raise ValueError("order='random' needs an rng")
    n, k = mats[0].shape
    perm = rng.permuted(np.broadcast_to(np.arange(k), (n, k)), axis=1)
    return tuple(None if m is None else np.take_along_axis(m, perm, axis=1) for m in mats)


def model_inputs(x, exposed, mask, weights, order: str | None = None, rng: np.random.Generator | None = None):
    """Checked opinions (n,) and exposure matrices (n, K); with `order`, slots reordered per user."""
    x = as_opinions(x)
    exposed, mask, weights = check_exposures(x, exposed, mask, weights)
    if order is not None:
        exposed, mask, weights = apply_order(order, rng, exposed, mask, weights)
    return x, exposed, mask, weights


def step_size(mu, w_col):
    """Per-exposure step size: mu, or min(1, mu * w) with weights."""
    if w_col is None:
        return mu
    return np.minimum(1.0, mu * np.maximum(w_col, 0.0))


def dw_kernel(x, e, m, w, mu, eps):
    """Deffuant-Weisbuch on one (K, b) block, slot by slot."""
    m = clean_block(e, m, w)
    x = x.copy()
    d, ad = np.empty_like(x), np.empty_like(x)
    inb = np.empty(x.shape, dtype=bool)
    for k in range(e.shape[0]):
        np.subtract(e[k], x, out=d)
        np.less(np.abs(d, out=ad), eps, out=inb)
        inb &= m[k]
        d *= step_size(mu, None if w is None else w[k])
        d *= inb
        x += d
    return (np.clip(x, -1.0, 1.0, out=x),)


def hk_kernel(x, e, m, w, alpha, eps, include_self):
    """Hegselmann-Krause on one (K, b) block: all exposures at once."""
    m = clean_block(e, m, w)
    inb = np.abs(e - x) <= eps
    inb &= m
    wt = inb.astype(np.float64)
    if w is not None:
        wt *= np.maximum(w, 0.0)
    num = (wt * e).sum(axis=0)
    den = wt.sum(axis=0)
    if include_self:
        num += x
        den += 1.0
    has = den > 0
    target = np.where(has, num / np.where(has, den, 1.0), x)
    return (np.clip(x + alpha * (target - x), -1.0, 1.0),)


def ra_kernel(x, u, e, eu, m, w, mu):
    """Relative agreement on one (K, b) block, slot by slot; returns (x, u)."""
    m = clean_block(e, m, w, zero_nan(eu), eu <= 0)
    eu *= m
    eu += ~m  # u_j = 1 where the slot is ignored: h / u_j finite
    x, u = x.copy(), u.copy()
    h, t1, t2 = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    ok = np.empty(x.shape, dtype=bool)
    for k in range(e.shape[0]):
        xj, uj = e[k], eu[k]
        np.minimum(np.add(x, u, out=t1), np.add(xj, uj, out=t2), out=h)
        h -= np.maximum(np.subtract(x, u, out=t1), np.subtract(xj, uj, out=t2), out=t1)
        np.greater(h, uj, out=ok)
        ok &= m[k]
        h /= uj
        h -= 1.0
        h *= step_size(mu, None if w is None else w[k])
        h *= ok  # h is now mu (h_ij / u_j - 1), or 0
        np.multiply(np.subtract(xj, x, out=t1), h, out=t1)
        np.multiply(np.subtract(uj, u, out=t2), h, out=t2)
        x += t1
        u += t2
    return np.clip(x, -1.0, 1.0, out=x), u


def sj_kernel(x, e, m, w, mu, acc, rej):
    """Social judgment on one (K, b) block, slot by slot, clipped after each exposure."""
    m = clean_block(e, m, w)
    x = x.copy()
    d, ad, sign = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    for k in range(e.shape[0]):
        np.subtract(e[k], x, out=d)
        np.abs(d, out=ad)
        np.less(ad, acc, out=sign, casting="unsafe")  # assimilation: +1
        sign -= ad > rej  # contrast: -1
        sign *= m[k]
        d *= sign
        d *= step_size(mu, None if w is None else w[k])
        x += d
        np.clip(x, -1.0, 1.0, out=x)
    return (x,)


def lorenz_kernel(x, e, m, w, alpha, rho, lam_k, k_exp, polarity):
    """Lorenz et al. 2021 on one (K, b) block, slot by slot, clipped after each exposure."""
    m = clean_block(e, m, w)
    x = x.copy()
    for k in range(e.shape[0]):
        xj = e[k]
        delta = xj - rho * x  # rho = 0 contagion, rho = 1 assimilation
        if lam_k is not None:
            dist = np.abs(xj - x)
            delta *= lam_k / (lam_k + dist**k_exp)  # motivated cognition
        if polarity:
            delta *= 1.0 - x * x  # polarity factor (M^2 - a^2)/M^2, M = 1
        delta *= step_size(alpha, None if w is None else w[k])
        delta *= m[k]
        x += delta
        np.clip(x, -1.0, 1.0, out=x)
    return (x,)
