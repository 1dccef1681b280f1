"""Network measures: inequality (Gini of followers or attention) and opinion homophily of follows.

Follow edges run follower (``src``) -> followee (``dst``), ids index the per-user arrays.
Empty or undefined inputs give NaN (a Gini of all zeros is 0: everyone has the same).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .arrays import FloatArray, as_floats, as_ints, pearson

__all__ = ["gini", "received_per_user", "opinion_assortativity", "neighbourhood_correlation"]


def gini(values: ArrayLike) -> float:
    """Gini coefficient of non-negative amounts (followers, likes received, impressions).

    G = sum_i (2i - n - 1) x_(i) / (n sum x) over ascending x_(1..n): 0 when everyone has
    the same, (n-1)/n when one holds everything. 0 for an all-zero vector, NaN when empty.
    """
    x = as_floats(values)
    x = x[np.isfinite(x)]
    n = x.size
    if n == 0:
        return float("nan")
    if np.any(x < 0):
        raise ValueError("gini needs non-negative values")
    total = x.sum()
    if total == 0:
        return 0.0
    x = np.sort(x)
    i = np.arange(1, n + 1, dtype=np.float64)
    return float(((2.0 * i - n - 1.0) * x).sum() / (n * total))


def received_per_user(recipient: ArrayLike, n_users: int, amount: ArrayLike | None = None) -> FloatArray:
    """Total ``amount`` (default 1 each) received per user, e.g. likes on each author's posts.

    Feed it the author of every liked post (or of every impression) to get the attention
    vector whose Gini measures attention inequality.
    """
    w = None if amount is None else as_floats(amount)
    return np.bincount(as_ints(recipient), weights=w, minlength=int(n_users)).astype(np.float64)


def opinion_assortativity(src: ArrayLike, dst: ArrayLike, opinion: ArrayLike) -> float:
    """Pearson correlation of the opinions at the two ends of directed follow edges.

    Positive values mean users follow like-minded users (an echo-chamber signal; Newman
    2003 assortative mixing by a scalar property). Edges with an unknown end are skipped.
    """
    op = as_floats(opinion)
    return pearson(op[as_ints(src)], op[as_ints(dst)])


def neighbourhood_correlation(src: ArrayLike, dst: ArrayLike, opinion: ArrayLike) -> float:
    """Correlation between a user's opinion and the mean opinion of the users they follow.

    Edges run follower (``src``) -> followee (``dst``). Users without a followee with a
    known opinion are left out (Cinelli et al. 2021, PNAS, echo-chamber "leaning vs
    neighbourhood leaning").
    """
    op = as_floats(opinion)
    s, d = as_ints(src), as_ints(dst)
    v = op[d]
    ok = np.isfinite(v)
    n = op.size
    cnt = np.bincount(s[ok], minlength=n)
    tot = np.bincount(s[ok], weights=v[ok], minlength=n)
    has = cnt > 0
    return pearson(op[has], tot[has] / cnt[has])
