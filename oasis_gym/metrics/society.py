"""Whole-platform measures of one moment: the opinion distribution, inequality and homophily.

They look at every user, follow edge and post (O(users + edges + posts)), so the recorder runs
them only at its full steps (``every_full``); ``metrics.offline`` takes the inequality part at
a finished run's last step. Values follow the formulas' conventions (NaN when undefined).
"""

from __future__ import annotations

import numpy as np

from ..platform.store import unpack_keys
from .network import gini, neighbourhood_correlation, opinion_assortativity, received_per_user
from .opinions import opinion_shift_shares, opinion_summary

__all__ = ["inequality_values", "society_values"]


def inequality_values(pf) -> dict[str, float]:
    """``network/follower_gini`` and ``network/attention_gini`` (Gini of likes received per author)."""
    likes = received_per_user(pf.p_author.a, pf.n_users, pf.p_likes.a)
    return {"network/follower_gini": gini(pf.u_followers.a), "network/attention_gini": gini(likes)}


def society_values(pf, baseline: np.ndarray) -> dict[str, float]:
    """``opinion/*`` (mean, std, bimodality, Esteban-Ray, and the shares moved toward the
    extremes / moderation since ``baseline``, the opinions at episode start, one per user) and
    ``network/*`` (the two Gini coefficients, opinion assortativity of follow edges,
    neighbourhood correlation)."""
    op = pf.u_opinion.a
    values = opinion_summary(op)
    values["opinion/to_extreme_share"], values["opinion/to_moderation_share"] = opinion_shift_shares(baseline, op)
    values |= inequality_values(pf)
    src, dst = unpack_keys(pf.rel["follow"].keys())
    values["network/opinion_assortativity"] = opinion_assortativity(src, dst, op)
    values["network/neighbourhood_correlation"] = neighbourhood_correlation(src, dst, op)
    return values
