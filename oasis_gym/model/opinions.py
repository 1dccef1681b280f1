"""Opinion change: the home of every opinion model of both paths (issue 51), vectorized.

Two families, each a *named* model (they are different models, not two versions of one):
the five classic models of the platform's ABM users (`policies/abm.py` calls
`update_opinions`), on every known stance of a user's feed, and `pull_push`, the fast path's
tasks' change (`oasis_gym.batched.users`), on the stances a user engaged with. Their
per-block kernels and argument checks are `model/opinion_kernels.py`.

HiSim (Mou et al. 2024, arXiv:2402.16333) drives its many ordinary users with classic
opinion-dynamics models instead of an LLM; these are the models, as pure numpy functions
called once per step for all ABM users at once (loops run over the K feed slots of one step
and over blocks of users, never over single users).

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

from dataclasses import dataclass

import numpy as np

from .opinion_kernels import (
    apply_order,
    as_opinions,
    check_exposures,
    check_matrix,
    dw_kernel,
    hk_kernel,
    lorenz_kernel,
    model_inputs,
    model_param,
    ra_kernel,
    run_blocked,
    sj_kernel,
)

# the classic models: what the ABM façade (`policies/abm_dynamics.py`) re-exports; pull_push is the tasks'
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
]


def deffuant_weisbuch(
    x, exposed, mask, mu=0.125, eps=0.2, rng: np.random.Generator | None = None, order: str = "slot", weights=None
) -> np.ndarray:
    """Bounded confidence (Deffuant, Neau, Amblard & Weisbuch 2000), receiver-only.

    For each exposure j, in slot order: if |x_i - x_j| < eps then x_i += mu (x_j - x_i), using
    the opinion left by the previous exposure (strict inequality, as in Deffuant et al.).
    """
    x, exposed, mask, weights = model_inputs(x, exposed, mask, weights, order, rng)
    n = x.shape[0]
    (out,) = run_blocked(
        dw_kernel, n, 1, (x, exposed, mask, weights, model_param(mu, n, "mu"), model_param(eps, n, "eps")), {}
    )
    return out


def hegselmann_krause(x, exposed, mask, alpha=0.175, eps=0.1, weights=None, include_self: bool = True) -> np.ndarray:
    """Hegselmann-Krause (2002) bounded confidence, relaxed by alpha, synchronous.

    The in-bound set is {j : |x_i - x_j| <= eps} (non-strict, as in HK 2002) over the user's
    exposures, plus the user's own opinion with weight 1 when ``include_self`` (classic HK).
    x_i += alpha * (weighted mean of the in-bound set - x_i); alpha = 1 is classic HK. With
    ``include_self=False`` a user with no in-bound exposure does not move.
    """
    x, exposed, mask, weights = model_inputs(x, exposed, mask, weights)
    n = x.shape[0]
    (out,) = run_blocked(
        hk_kernel,
        n,
        1,
        (x, exposed, mask, weights, model_param(alpha, n, "alpha"), model_param(eps, n, "eps")),
        {"include_self": bool(include_self)},
    )
    return out


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
    x = as_opinions(x)
    u = np.asarray(u, dtype=np.float64)
    if u.ndim == 0:
        u = np.full(x.shape, float(u))
    if u.shape != x.shape:
        raise ValueError(f"u must be a scalar or shape {x.shape}, got {u.shape}")
    exposed, mask, weights = check_exposures(x, exposed, mask, weights)
    n = x.shape[0]
    exposed_u = np.asarray(exposed_u, dtype=np.float64)
    if exposed_u.ndim == 0:
        exposed_u = np.full(exposed.shape, float(exposed_u))
    check_matrix("exposed_u", exposed_u, n, exposed.shape[1])
    exposed, exposed_u, mask, weights = apply_order(order, rng, exposed, exposed_u, mask, weights)
    x_new, u_new = run_blocked(ra_kernel, n, 2, (x, u, exposed, exposed_u, mask, weights, model_param(mu, n, "mu")), {})
    return x_new, u_new


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
    x, exposed, mask, weights = model_inputs(x, exposed, mask, weights)
    n = x.shape[0]
    acc, rej = model_param(lat_accept, n, "lat_accept"), model_param(lat_reject, n, "lat_reject")
    if np.any(np.asarray(acc) > np.asarray(rej)):
        raise ValueError("lat_accept must not exceed lat_reject")
    exposed, mask, weights = apply_order(order, rng, exposed, mask, weights)
    (out,) = run_blocked(sj_kernel, n, 1, (x, exposed, mask, weights, model_param(mu, n, "mu"), acc, rej), {})
    return out


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
    x, exposed, mask, weights = model_inputs(x, exposed, mask, weights, order, rng)
    n = x.shape[0]
    lam_k = None if lam is None else float(lam) ** float(k)
    (out,) = run_blocked(
        lorenz_kernel,
        n,
        1,
        (x, exposed, mask, weights, model_param(alpha, n, "alpha"), model_param(rho, n, "rho")),
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


def pull_push(o, stance, engaged, arousal, pull: float, confidence: float, push: float) -> np.ndarray:
    """The tasks' opinion change (`Dynamics.opinion_pull`, `opinion_confidence`,
    `opinion_arousal_push`); returns the new opinions (M,), clipped to [-1, 1].

    `o` (M,) are M visitors' opinions; `stance`, `arousal` (the true arousal) (M, S) of the
    posts they were served, `engaged` (M, S) which they engaged with. Bounded-confidence pull
    towards the engaged stances within `confidence` of the opinion, plus an outward push of
    aroused engagement with posts on the user's side, each a mean over the engaged posts:
    o + pull * mean(stance - o over close) + push * mean(arousal * sign(stance) over agreeing).
    Lasting: nothing pulls opinions back.
    """
    o = o[:, None]
    close = np.abs(stance - o) < confidence
    agree = np.sign(stance) == np.sign(o)
    n_eng = np.maximum(engaged.sum(1), 1)
    pulled = (engaged * close * (stance - o)).sum(1) / n_eng
    pushed = (engaged * agree * arousal * np.sign(stance)).sum(1) / n_eng
    return np.clip(o[:, 0] + pull * pulled + push * pushed, -1.0, 1.0)
