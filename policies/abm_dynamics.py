"""Vectorized engine of the rule-based (ABM) user policy: opinion dynamics, diffusion, behaviour.

HiSim (Mou et al. 2024, arXiv:2402.16333) drives its many ordinary users with classic
opinion-dynamics models instead of an LLM. This module holds the maths of that policy as pure
numpy functions over a batch of users; the env and the Policy wrapper call them once per step
for all ABM users at once. Nothing here loops over users: loops run over the K feed slots of
one step (K ~ 10-20) and, for cache locality, over blocks of 16,384 users.

Conventions shared by every opinion model
-----------------------------------------
* Opinions / stances live in [-1, 1] (-1 strongly against the topic, +1 strongly for).
* ``x`` (n,) are the opinions of the users being updated; ``exposed`` (n, K) are the
  stances of the posts / authors each user saw this step, in feed order (slot 0 = top of the
  feed, read first); ``mask`` (n, K) says which slots are real. A NaN exposure (unknown
  stance) is ignored exactly like a masked slot.
* Optional ``weights`` (n, K) >= 0 scale each exposure's influence (e.g. source credibility,
  tie strength); the step size of an exposure becomes ``min(1, mu * w)``.
* Model parameters may be scalars or per-user (n,) arrays (heterogeneous agents).
* Only the receiving user moves (the author of a post is not influenced by being read).
* Outputs are new float64 arrays, clipped to [-1, 1]; inputs are never modified.

Combining several exposures in one step: the sequential models (Deffuant-Weisbuch, relative
agreement, social judgment, Lorenz 2021) process a user's exposures one after another in
slot order (``order="slot"``; ``order="random"`` shuffles each user's slots with the given
rng), each interaction using the opinion left by the previous one -- the classic pairwise
definition applied to a feed. Hegselmann-Krause is synchronous by definition: one move
towards the mean of all in-bound exposures (and the user's own opinion).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from oasis_gym.actions import NUM_ACTIONS, ActionType

# 4. template texts and 5. lexicon stance live in the core, which needs them; re-exported here
from oasis_gym.content import _TEMPLATES, STANCE_LABELS, lexicon_stance, stance_label, template_text  # noqa: F401

BLOCK_ROWS = 16_384  # users per block: a block's (K, b) working set stays in cache

__all__ = [
    "DWParams",
    "HKParams",
    "RAParams",
    "SJParams",
    "LorenzParams",
    "MODEL_PARAMS",
    "MODEL_ALIASES",
    "deffuant_weisbuch",
    "hegselmann_krause",
    "relative_agreement",
    "social_judgment",
    "lorenz2021",
    "update_opinions",
    "independent_cascade",
    "linear_threshold",
    "sample_thresholds",
    "BehaviourParams",
    "choose_actions",
    "ENGAGE_ACTIONS",
    "template_text",
    "lexicon_stance",
    "STANCE_LABELS",
    "stance_label",
]


# --------------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------------


def _as_opinions(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"x must be 1-D (n,), got shape {x.shape}")
    return x


def _check_matrix(name: str, a: np.ndarray | None, n: int, k: int | None = None) -> None:
    if a is None:
        return
    if a.ndim != 2 or a.shape[0] != n or (k is not None and a.shape[1] != k):
        want = f"({n}, {k if k is not None else 'K'})"
        raise ValueError(f"{name} must have shape {want}, got {a.shape}")


def _exposures(x: np.ndarray, exposed, mask, weights=None):
    """Validate and coerce the (n, K) exposure block; weights default to None (all 1)."""
    exposed = np.asarray(exposed, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    n = x.shape[0]
    _check_matrix("exposed", exposed, n)
    _check_matrix("mask", mask, n, exposed.shape[1])
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        _check_matrix("weights", weights, n, exposed.shape[1])
    return exposed, mask, weights


def _param(v, n: int, name: str):
    """A model parameter: a Python float, or a float64 (n,) array for per-user values."""
    a = np.asarray(v, dtype=np.float64)
    if a.ndim == 0:
        return float(a)
    if a.shape != (n,):
        raise ValueError(f"{name} must be a scalar or shape ({n},), got {a.shape}")
    return a


def _rows(v, sl: slice):
    return v[sl] if isinstance(v, np.ndarray) else v


def _block_arg(a, sl: slice):
    """A block of a row-aligned argument; (n, K) matrices become private slot-major (K, b)
    copies, because numpy is ~10x slower on a strided column than on a contiguous row."""
    if not isinstance(a, np.ndarray):
        return a
    return a[sl].T.copy() if a.ndim == 2 else a[sl]


def _blocked(kernel: Callable, n: int, n_out: int, row_args: tuple, scalars: dict) -> tuple:
    """Run ``kernel`` over blocks of users; row_args are (n,) / (n, K) arrays, scalars or None."""
    outs = tuple(np.empty(n, dtype=np.float64) for _ in range(n_out))
    for start in range(0, n, BLOCK_ROWS):
        sl = slice(start, min(n, start + BLOCK_ROWS))
        res = kernel(*(_block_arg(a, sl) for a in row_args), **scalars)
        for o, r in zip(outs, res):
            o[sl] = r
    return outs


def _zero_nan(a: np.ndarray) -> np.ndarray:
    """Set NaNs of ``a`` to 0 in place (arithmetically: boolean indexing is ~10x slower)."""
    bad = np.isnan(a)
    if bad.any():
        np.fmax(a, -np.finfo(a.dtype).max, out=a)  # fmax maps NaN to the finite bound
        a *= ~bad
    return bad


def _clean_block(e: np.ndarray, m: np.ndarray, w: np.ndarray | None, *extra_bad) -> np.ndarray:
    """Drop NaN exposures from a (K, b) block in place: value 0, mask False, NaN weight 0.

    Afterwards every update can be applied as ``x += step * mask`` with finite numbers only
    (numpy's masked ``where=`` ufunc path is ~10x slower than a multiply).
    """
    bad = _zero_nan(e)
    for b in extra_bad:
        bad |= b
    m &= ~bad
    if w is not None:
        _zero_nan(w)
    return m


def _apply_order(order: str, rng: np.random.Generator | None, *mats):
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


def _step_size(mu, w_col):
    """Per-exposure step size: mu, or min(1, mu * w) with weights."""
    if w_col is None:
        return mu
    return np.minimum(1.0, mu * np.maximum(w_col, 0.0))


# --------------------------------------------------------------------------------------------
# 1. opinion dynamics
# --------------------------------------------------------------------------------------------


def _dw_kernel(x, e, m, w, mu, eps):
    """Deffuant-Weisbuch on one (K, b) block, slot by slot."""
    m = _clean_block(e, m, w)
    x = x.copy()
    d, ad = np.empty_like(x), np.empty_like(x)
    inb = np.empty(x.shape, dtype=bool)
    for k in range(e.shape[0]):
        np.subtract(e[k], x, out=d)
        np.less(np.abs(d, out=ad), eps, out=inb)
        inb &= m[k]
        d *= _step_size(mu, None if w is None else w[k])
        d *= inb
        x += d
    return (np.clip(x, -1.0, 1.0, out=x),)


def deffuant_weisbuch(
    x, exposed, mask, mu=0.125, eps=0.2, rng: np.random.Generator | None = None, order: str = "slot", weights=None
) -> np.ndarray:
    """Bounded confidence (Deffuant, Neau, Amblard & Weisbuch 2000), receiver-only.

    For each exposure j, in slot order: if |x_i - x_j| < eps then x_i += mu (x_j - x_i), using
    the opinion left by the previous exposure (strict inequality, as in Deffuant et al.).
    """
    x = _as_opinions(x)
    exposed, mask, weights = _exposures(x, exposed, mask, weights)
    n = x.shape[0]
    exposed, mask, weights = _apply_order(order, rng, exposed, mask, weights)
    (out,) = _blocked(_dw_kernel, n, 1, (x, exposed, mask, weights, _param(mu, n, "mu"), _param(eps, n, "eps")), {})
    return out


def _hk_kernel(x, e, m, w, alpha, eps, include_self):
    """Hegselmann-Krause on one (K, b) block: all exposures at once."""
    m = _clean_block(e, m, w)
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


def hegselmann_krause(x, exposed, mask, alpha=0.175, eps=0.1, weights=None, include_self: bool = True) -> np.ndarray:
    """Hegselmann-Krause (2002) bounded confidence, relaxed by alpha, synchronous.

    The in-bound set is {j : |x_i - x_j| <= eps} (non-strict, as in HK 2002) over the user's
    exposures, plus the user's own opinion with weight 1 when ``include_self`` (classic HK).
    x_i += alpha * (weighted mean of the in-bound set - x_i); alpha = 1 is classic HK. With
    ``include_self=False`` a user with no in-bound exposure does not move.
    """
    x = _as_opinions(x)
    exposed, mask, weights = _exposures(x, exposed, mask, weights)
    n = x.shape[0]
    (out,) = _blocked(
        _hk_kernel,
        n,
        1,
        (x, exposed, mask, weights, _param(alpha, n, "alpha"), _param(eps, n, "eps")),
        {"include_self": bool(include_self)},
    )
    return out


def _ra_kernel(x, u, e, eu, m, w, mu):
    """Relative agreement on one (K, b) block, slot by slot; returns (x, u)."""
    m = _clean_block(e, m, w, _zero_nan(eu), eu <= 0)
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
        h *= _step_size(mu, None if w is None else w[k])
        h *= ok  # h is now mu (h_ij / u_j - 1), or 0
        np.multiply(np.subtract(xj, x, out=t1), h, out=t1)
        np.multiply(np.subtract(uj, u, out=t2), h, out=t2)
        x += t1
        u += t2
    return np.clip(x, -1.0, 1.0, out=x), u


def relative_agreement(
    x, u, exposed, exposed_u, mask, mu=0.125, rng: np.random.Generator | None = None, order: str = "slot", weights=None
) -> tuple[np.ndarray, np.ndarray]:
    """Relative agreement (Deffuant, Amblard, Weisbuch & Faure 2002, JASSS 5(4)); returns (x, u).

    Each user i has opinion x_i and uncertainty u_i > 0; exposure j brings (x_j, u_j). The
    overlap is h = min(x_i + u_i, x_j + u_j) - max(x_i - u_i, x_j - u_j). If h > u_j (the
    influencer's uncertainty is the denominator, as in the paper where i influences j with
    h_ij > u_i), the receiver moves: x_i += mu (h/u_j - 1)(x_j - x_i) and
    u_i += mu (h/u_j - 1)(u_j - u_i), both from the pre-interaction values. Sequential in
    slot order; exposures with u_j <= 0 or NaN are ignored.
    """
    x = _as_opinions(x)
    u = np.asarray(u, dtype=np.float64)
    if u.ndim == 0:
        u = np.full(x.shape, float(u))
    if u.shape != x.shape:
        raise ValueError(f"u must be a scalar or shape {x.shape}, got {u.shape}")
    exposed, mask, weights = _exposures(x, exposed, mask, weights)
    n = x.shape[0]
    exposed_u = np.asarray(exposed_u, dtype=np.float64)
    if exposed_u.ndim == 0:
        exposed_u = np.full(exposed.shape, float(exposed_u))
    _check_matrix("exposed_u", exposed_u, n, exposed.shape[1])
    exposed, exposed_u, mask, weights = _apply_order(order, rng, exposed, exposed_u, mask, weights)
    x_new, u_new = _blocked(_ra_kernel, n, 2, (x, u, exposed, exposed_u, mask, weights, _param(mu, n, "mu")), {})
    return x_new, u_new


def _sj_kernel(x, e, m, w, mu, acc, rej):
    """Social judgment on one (K, b) block, slot by slot, clipped after each exposure."""
    m = _clean_block(e, m, w)
    x = x.copy()
    d, ad, sign = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    for k in range(e.shape[0]):
        np.subtract(e[k], x, out=d)
        np.abs(d, out=ad)
        np.less(ad, acc, out=sign, casting="unsafe")  # assimilation: +1
        sign -= ad > rej  # contrast: -1
        sign *= m[k]
        d *= sign
        d *= _step_size(mu, None if w is None else w[k])
        x += d
        np.clip(x, -1.0, 1.0, out=x)
    return (x,)


def social_judgment(
    x,
    exposed,
    mask,
    mu=0.1,
    lat_accept=0.3,
    lat_reject=1.0,
    rng: np.random.Generator | None = None,
    order: str = "slot",
    weights=None,
) -> np.ndarray:
    """Social judgment theory (Jager & Amblard 2005), receiver-only, sequential.

    With d = x_j - x_i: if |d| < lat_accept, assimilation x_i += mu d; if |d| > lat_reject,
    contrast x_i -= mu d (move away); otherwise (non-commitment) nothing. The opinion is
    clipped to [-1, 1] after every exposure, since contrast can push it out of the scale.
    """
    x = _as_opinions(x)
    exposed, mask, weights = _exposures(x, exposed, mask, weights)
    n = x.shape[0]
    acc, rej = _param(lat_accept, n, "lat_accept"), _param(lat_reject, n, "lat_reject")
    if np.any(np.asarray(acc) > np.asarray(rej)):
        raise ValueError("lat_accept must not exceed lat_reject")
    exposed, mask, weights = _apply_order(order, rng, exposed, mask, weights)
    (out,) = _blocked(_sj_kernel, n, 1, (x, exposed, mask, weights, _param(mu, n, "mu"), acc, rej), {})
    return out


def _lorenz_kernel(x, e, m, w, alpha, rho, lam_k, k_exp, polarity):
    """Lorenz et al. 2021 on one (K, b) block, slot by slot, clipped after each exposure."""
    m = _clean_block(e, m, w)
    x = x.copy()
    for k in range(e.shape[0]):
        xj = e[k]
        delta = xj - rho * x  # rho = 0 contagion, rho = 1 assimilation
        if lam_k is not None:
            dist = np.abs(xj - x)
            delta *= lam_k / (lam_k + dist**k_exp)  # motivated cognition
        if polarity:
            delta *= 1.0 - x * x  # polarity factor (M^2 - a^2)/M^2, M = 1
        delta *= _step_size(alpha, None if w is None else w[k])
        delta *= m[k]
        x += delta
        np.clip(x, -1.0, 1.0, out=x)
    return (x,)


def lorenz2021(
    x,
    exposed,
    mask,
    alpha=0.1,
    rho=1.0,
    lam=0.3,
    k=2.0,
    polarity: bool = False,
    theta=0.0,
    idio_sd=1.0 / 3.5,
    rng: np.random.Generator | None = None,
    order: str = "slot",
    weights=None,
) -> np.ndarray:
    """Lorenz, Neumann & Schröder (2021, Psych. Review) attitude change, on the [-1, 1] scale.

    Per exposure (sequential): x_i += alpha * (x_j - rho x_i) * lam^k / (lam^k + |x_j - x_i|^k)
    [* (1 - x_i^2) with ``polarity``], clipped to [-1, 1] after each exposure. rho is the degree
    of assimilation (0 pure contagion, 1 pull towards the message); lam, k the latitude and
    sharpness of motivated cognition (lam=None turns it off, factor 1). theta is the
    idiosyncrasy probability: per step, with probability theta a user's opinion is instead
    redrawn from N(0, idio_sd) clipped to [-1, 1] (the paper's N(0, 1) on M = 3.5 rescaled),
    and its exposures are ignored that step. The paper's scale M = 3.5 maps to 1 here, so its
    lam = 0.5 corresponds to lam ~ 0.14.
    """
    x = _as_opinions(x)
    exposed, mask, weights = _exposures(x, exposed, mask, weights)
    n = x.shape[0]
    exposed, mask, weights = _apply_order(order, rng, exposed, mask, weights)
    lam_k = None if lam is None else float(lam) ** float(k)
    (out,) = _blocked(
        _lorenz_kernel,
        n,
        1,
        (x, exposed, mask, weights, _param(alpha, n, "alpha"), _param(rho, n, "rho")),
        {"lam_k": lam_k, "k_exp": float(k), "polarity": bool(polarity)},
    )
    if np.any(np.asarray(theta) > 0):
        if rng is None:
            raise ValueError("theta > 0 needs an rng")
        redraw = rng.random(n) < theta
        fresh = np.clip(rng.normal(0.0, idio_sd, n), -1.0, 1.0)
        out = np.where(redraw, fresh, out)
    return out


@dataclass(frozen=True)
class DWParams:
    """Deffuant-Weisbuch; HiSim's calibrated ranges: mu 0.1-0.15, eps 0.1-0.3 (midpoints here).

    The ranges are used as-is on this module's [-1, 1] scale; on a [0, 1] attitude scale the
    same eps would be twice as wide here, so recalibrate eps if HiSim's scale differs.
    """

    mu: float = 0.125
    eps: float = 0.2
    order: str = "slot"


@dataclass(frozen=True)
class HKParams:
    """Hegselmann-Krause with relaxation; HiSim's calibrated ranges: alpha 0.1-0.25, eps 0.1."""

    alpha: float = 0.175
    eps: float = 0.1
    include_self: bool = True


@dataclass(frozen=True)
class RAParams:
    """Relative agreement; u0 is the uncertainty used when the caller gives none."""

    mu: float = 0.125
    u0: float = 0.3
    order: str = "slot"


@dataclass(frozen=True)
class SJParams:
    """Social judgment: accept closer than lat_accept, reject farther than lat_reject (of 2)."""

    mu: float = 0.1
    lat_accept: float = 0.3
    lat_reject: float = 1.0
    order: str = "slot"


@dataclass(frozen=True)
class LorenzParams:
    """Lorenz et al. 2021 on [-1, 1]: assimilation with motivated cognition, no idiosyncrasy."""

    alpha: float = 0.1
    rho: float = 1.0
    lam: float | None = 0.3
    k: float = 2.0
    polarity: bool = False
    theta: float = 0.0
    idio_sd: float = 1.0 / 3.5
    order: str = "slot"


MODEL_PARAMS: dict[str, type] = {
    "deffuant_weisbuch": DWParams,
    "hegselmann_krause": HKParams,
    "relative_agreement": RAParams,
    "social_judgment": SJParams,
    "lorenz2021": LorenzParams,
}
MODEL_ALIASES: dict[str, str] = {
    "bc": "deffuant_weisbuch",
    "dw": "deffuant_weisbuch",
    "deffuant": "deffuant_weisbuch",
    "bounded_confidence": "deffuant_weisbuch",
    "hk": "hegselmann_krause",
    "ra": "relative_agreement",
    "sj": "social_judgment",
    "social_judgement": "social_judgment",
    "lorenz": "lorenz2021",
    **{name: name for name in MODEL_PARAMS},
}


def update_opinions(
    model: str,
    x,
    exposed,
    mask,
    params=None,
    *,
    weights=None,
    u=None,
    exposed_u=None,
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Dispatch one opinion step to ``model`` (a name or alias); returns (x_new, u_new).

    ``params`` defaults to the model's dataclass with HiSim-style defaults. u_new is only
    computed by relative agreement (uncertainties default to params.u0 for users and
    exposures when not given); for the other models u is passed through unchanged.
    """
    name = MODEL_ALIASES.get(model.lower())
    if name is None:
        raise ValueError(f"unknown opinion model {model!r}; known: {sorted(MODEL_ALIASES)}")
    p = params if params is not None else MODEL_PARAMS[name]()
    if not isinstance(p, MODEL_PARAMS[name]):
        raise TypeError(f"{name} needs {MODEL_PARAMS[name].__name__}, got {type(p).__name__}")
    if name == "deffuant_weisbuch":
        return deffuant_weisbuch(x, exposed, mask, p.mu, p.eps, rng, p.order, weights), u
    if name == "hegselmann_krause":
        return hegselmann_krause(x, exposed, mask, p.alpha, p.eps, weights, p.include_self), u
    if name == "social_judgment":
        return social_judgment(x, exposed, mask, p.mu, p.lat_accept, p.lat_reject, rng, p.order, weights), u
    if name == "lorenz2021":
        return lorenz2021(
            x, exposed, mask, p.alpha, p.rho, p.lam, p.k, p.polarity, p.theta, p.idio_sd, rng, p.order, weights
        ), u
    u_in = p.u0 if u is None else u
    eu = p.u0 if exposed_u is None else exposed_u
    return relative_agreement(x, u_in, exposed, eu, mask, p.mu, rng, p.order, weights)


# --------------------------------------------------------------------------------------------
# 2. information diffusion (for calibration against real cascades)
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# 3. behaviour: one action per user per step
# --------------------------------------------------------------------------------------------

# Feed-engagement actions in the fixed order used for sampling (after CREATE_POST).
ENGAGE_ACTIONS: tuple[ActionType, ...] = (
    ActionType.LIKE_POST,
    ActionType.DISLIKE_POST,
    ActionType.REPOST,
    ActionType.QUOTE_POST,
    ActionType.CREATE_COMMENT,
    ActionType.FOLLOW,
)
_TEXT_OUT = (ActionType.CREATE_POST, ActionType.QUOTE_POST, ActionType.CREATE_COMMENT)


@dataclass(frozen=True)
class BehaviourParams:
    """Per-exposure engagement rates of the ABM user, and what drives them.

    The rate of action a on feed slot k is
        rate_a * pref_a(agree) * (1 + popularity_weight * log1p(likes))
               * (1 + fame_weight_a * log1p(author followers)) * [unknown_stance_weight]
    with agree = 1 - |x - s| / 2 in [0, 1] and pref = agree^agreement_power for like, repost,
    quote, follow; (1 - agree)^p for dislike; max(agree, 1 - agree)^p for comment (people
    comment on what they feel strongly about, either way). Follow ignores post popularity and
    uses follow_fame_weight. With small rates, rate ~ P(this action on this slot this step).
    Defaults give a user with a 10-post feed of agreeing, little-liked posts about a 50 %
    chance of some engagement per step; post_rate is supplied per user by the caller.
    """

    like_rate: float = 0.03
    dislike_rate: float = 0.01
    repost_rate: float = 0.008
    quote_rate: float = 0.002
    comment_rate: float = 0.008
    follow_rate: float = 0.004
    agreement_power: float = 2.0
    popularity_weight: float = 0.15
    fame_weight: float = 0.05
    follow_fame_weight: float = 0.25
    unknown_stance_weight: float = 0.5  # NaN stance: agreement computed against 0, weight x0.5
    stance_noise: float = 0.1  # sd of the noise on the stance of written texts

    def rate_of(self, action: ActionType) -> float:
        return {
            ActionType.LIKE_POST: self.like_rate,
            ActionType.DISLIKE_POST: self.dislike_rate,
            ActionType.REPOST: self.repost_rate,
            ActionType.QUOTE_POST: self.quote_rate,
            ActionType.CREATE_COMMENT: self.comment_rate,
            ActionType.FOLLOW: self.follow_rate,
        }[action]


CHOICE_BLOCK_ROWS = 16_384  # choose_actions works on blocks of users (cache-resident temporaries)


def _opt_mask(a, shape) -> np.ndarray | None:
    if a is None:
        return None
    a = np.asarray(a, dtype=bool)
    if a.shape != shape:
        raise ValueError(f"mask must have shape {shape}, got {a.shape}")
    return a


def _log_boost(counts: np.ndarray, weight: float) -> np.ndarray:
    """1 + weight * log1p(max(counts, 0)) as float32."""
    v = counts.astype(np.float32)
    np.maximum(v, 0, out=v)
    np.log1p(v, out=v)
    v *= np.float32(weight)
    v += np.float32(1)
    return v


def _pow_inplace(a: np.ndarray, p: float) -> np.ndarray:
    return np.square(a, out=a) if p == 2.0 else np.power(a, np.float32(p), out=a)


def _engagement_weights(
    params: BehaviourParams, x, stance, fmask, likes, followers, liked, followed, disliked, reposted, own
) -> dict:
    """Per-action (b, K) float32 rates of one block of users, zero where the action is impossible.

    Written with in-place ufuncs and multiplications by boolean masks: numpy's boolean
    indexing and masked ``where=`` paths are several times slower on these small blocks.
    """
    f32 = np.float32
    agree = stance.astype(f32)  # a copy: worked on in place
    unknown = np.isnan(agree)
    np.fmax(agree, f32(-1), out=agree)  # clip to [-1, 1]; fmax maps NaN to -1 ...
    np.fmin(agree, f32(1), out=agree)
    agree *= ~unknown  # ... and this to 0: unknown read as neutral
    agree -= np.clip(x, -1.0, 1.0).astype(f32)[:, None]
    np.abs(agree, out=agree)
    agree *= f32(-0.5)
    agree += f32(1)  # 1 - |x - s| / 2, in [0, 1]
    disagree = f32(1) - agree
    p = float(params.agreement_power)
    pref_com = _pow_inplace(np.maximum(agree, disagree), p)
    _pow_inplace(disagree, p)
    _pow_inplace(agree, p)
    base = unknown * f32(params.unknown_stance_weight - 1.0)
    base += f32(1)
    base *= fmask
    fame = followers.astype(f32)
    np.maximum(fame, 0, out=fame)
    np.log1p(fame, out=fame)
    follow_base = fame * f32(params.follow_fame_weight)
    follow_base += f32(1)
    follow_base *= base
    fame *= f32(params.fame_weight)
    fame += f32(1)
    post_base = _log_boost(likes, params.popularity_weight)
    post_base *= fame
    post_base *= base

    def keep(w: np.ndarray, *excluded) -> np.ndarray:
        for m in excluded:
            if m is not None:
                w *= ~m
        return w

    pos = agree * post_base
    return {
        ActionType.LIKE_POST: keep(pos.copy(), liked, disliked, own),
        ActionType.DISLIKE_POST: keep(np.multiply(disagree, post_base, out=disagree), liked, disliked, own),
        ActionType.REPOST: keep(pos.copy(), reposted, own),
        ActionType.QUOTE_POST: keep(pos, own),
        ActionType.CREATE_COMMENT: np.multiply(pref_com, post_base, out=pref_com),
        ActionType.FOLLOW: keep(np.multiply(agree, follow_base, out=agree), followed, own),
    }


def _sample_slots(w: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One slot per row, with probability proportional to w (rows have a positive sum)."""
    c = np.cumsum(w, axis=1, dtype=np.float64)
    target = u * c[:, -1]
    slot = (c <= target[:, None]).sum(axis=1)
    last_pos = w.shape[1] - 1 - np.argmax(w[:, ::-1] > 0, axis=1)  # guard rounding at u ~ 1
    return np.minimum(slot, last_pos)


_PICK_CODES = np.array([ActionType.CREATE_POST, *ENGAGE_ACTIONS, ActionType.DO_NOTHING], dtype=np.int8)


def _choose_block(
    params: BehaviourParams, allowed: np.ndarray, p_post: np.ndarray, u_act, u_slot, *feed
) -> tuple[np.ndarray, np.ndarray]:
    """choose_actions on one block of users with pre-drawn uniforms; returns (action, slot)."""
    w = _engagement_weights(params, *feed)
    b, k = feed[2].shape
    ones = np.ones(k, dtype=np.float32)
    totals = [(w[a] @ ones).astype(np.float64) * (params.rate_of(a) * allowed[..., a]) for a in ENGAGE_ACTIONS]
    scale = (1.0 - p_post) / np.maximum(1.0, np.sum(totals, axis=0))
    bound = p_post.copy()  # cumulative category bounds
    pick = (bound <= u_act).astype(np.int64)  # 0 create_post, 1.. engage, last nothing
    for t in totals:
        bound += t * scale
        pick += bound <= u_act
    action = _PICK_CODES[pick]
    slot = np.full(b, -1, dtype=np.int64)
    for a in ENGAGE_ACTIONS:
        rows = np.flatnonzero(action == a)
        if rows.size:
            slot[rows] = _sample_slots(w[a][rows], u_slot[rows])
    return action, slot


def choose_actions(
    rng: np.random.Generator,
    params: BehaviourParams,
    opinion,
    feed_stance,
    feed_mask,
    feed_likes,
    feed_author_followers,
    post_rate,
    allowed,
    already_liked,
    already_followed_author,
    *,
    already_disliked=None,
    already_reposted=None,
    own_post=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One action per user: create a post, engage with one feed slot, or do nothing.

    P(create_post) = post_rate (if allowed). Otherwise each engagement action a has total
    weight S_a = sum_k rate_a[k] (see BehaviourParams), and with S = sum_a S_a,
    P(a) = (1 - post_rate) * S_a / max(1, S); the rest is do_nothing. Given a, the target slot
    is drawn with probability proportional to rate_a[k] (inverse CDF of one uniform). Never
    chosen: masked slots, actions not in ``allowed`` ((NUM_ACTIONS,) or per-user
    (n, NUM_ACTIONS) bool), liking an already-liked post, following an already-followed
    author; the optional masks also exclude disliking a liked/disliked post, reposting a
    reposted post and targeting one's own post (commenting on it stays possible). do_nothing
    is the fallback even when it is not in ``allowed``. Opinions and stances are assumed in
    [-1, 1]; counts (likes, followers) below 0 count as 0.

    Returns (action (n,) int8 ActionType codes, slot (n,) int64 or -1, stance (n,) float32:
    opinion + N(0, stance_noise) clipped to [-1, 1] for create_post / quote_post /
    create_comment, NaN otherwise). Randomness: exactly three (n,) draws from ``rng``
    (action uniform, slot uniform, stance normal), so results depend only on the seed.
    """
    opinion = _as_opinions(opinion)
    n = opinion.shape[0]
    feed_mask = np.asarray(feed_mask, dtype=bool)
    if feed_mask.ndim != 2 or feed_mask.shape[0] != n:
        raise ValueError(f"feed_mask must be (n, K) with n={n}, got {feed_mask.shape}")
    shape = feed_mask.shape
    feed = [
        opinion,
        np.asarray(feed_stance),
        feed_mask,
        np.asarray(feed_likes),
        np.asarray(feed_author_followers),
        np.asarray(already_liked, dtype=bool),
        np.asarray(already_followed_author, dtype=bool),
        _opt_mask(already_disliked, shape),
        _opt_mask(already_reposted, shape),
        _opt_mask(own_post, shape),
    ]
    names = (
        "feed_stance",
        "feed_mask",
        "feed_likes",
        "feed_author_followers",
        "already_liked",
        "already_followed_author",
    )
    for name, a in zip(names, feed[1:7]):
        if a.shape != shape:
            raise ValueError(f"{name} must have shape {shape}, got {a.shape}")
    allowed = np.asarray(allowed, dtype=bool)
    if allowed.shape not in ((NUM_ACTIONS,), (n, NUM_ACTIONS)):
        raise ValueError(f"allowed must be ({NUM_ACTIONS},) or ({n}, {NUM_ACTIONS}), got {allowed.shape}")
    p_post = np.broadcast_to(np.clip(np.asarray(post_rate, dtype=np.float64), 0.0, 1.0), (n,))
    p_post = p_post * allowed[..., ActionType.CREATE_POST]
    u_act, u_slot = rng.random(n), rng.random(n)
    noise = rng.standard_normal(n)

    action = np.empty(n, dtype=np.int8)
    slot = np.empty(n, dtype=np.int64)
    for start in range(0, n, CHOICE_BLOCK_ROWS):
        sl = slice(start, min(n, start + CHOICE_BLOCK_ROWS))
        allowed_b = allowed[sl] if allowed.ndim == 2 else allowed
        action[sl], slot[sl] = _choose_block(
            params, allowed_b, p_post[sl], u_act[sl], u_slot[sl], *(_rows(a, sl) for a in feed)
        )
    is_text = np.isin(action, np.array(_TEXT_OUT, dtype=np.int8))
    stance = np.where(is_text, np.clip(opinion + params.stance_noise * noise, -1.0, 1.0), np.nan)
    return action, slot, stance.astype(np.float32)
