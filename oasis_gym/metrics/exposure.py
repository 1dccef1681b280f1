"""Exposure: what the served feeds showed, as shares of impressions.

An impression is one (viewer, post) pair of a served feed. Shares are NaN when nothing is
left to count (no impression, or none with the needed labels known).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .arrays import as_floats, as_ints

__all__ = ["misinformation_share", "cross_cutting_share", "feed_diversity"]


def misinformation_share(impression_post: ArrayLike, post_is_misinfo: ArrayLike) -> float:
    """Share of impressions that showed misinformation.

    ``post_is_misinfo`` is per post: bool, or float with NaN for unlabelled posts
    (impressions of unlabelled posts are left out of numerator and denominator).
    """
    lab = as_floats(post_is_misinfo)[as_ints(impression_post)]
    lab = lab[np.isfinite(lab)]
    return float((lab != 0).mean()) if lab.size else float("nan")


def cross_cutting_share(
    impression_viewer: ArrayLike, impression_post: ArrayLike, viewer_opinion: ArrayLike, post_stance: ArrayLike
) -> float:
    """Share of impressions whose post stance has the opposite sign to the viewer's opinion.

    Impressions where either side is 0 (neutral) or NaN (unknown) are left out (Bakshy et
    al. 2015, Science, cross-cutting exposure).
    """
    a = np.sign(as_floats(viewer_opinion)[as_ints(impression_viewer)])
    b = np.sign(as_floats(post_stance)[as_ints(impression_post)])
    ok = np.isfinite(a) & np.isfinite(b) & (a != 0) & (b != 0)
    return float((a[ok] != b[ok]).mean()) if ok.any() else float("nan")


def feed_diversity(impression_viewer: ArrayLike, impression_post: ArrayLike, post_stance: ArrayLike) -> float:
    """Mean over viewers of the standard deviation (ddof=0) of the stances they were shown.

    Stance spread, rather than author entropy, is chosen because it measures exposure to
    differing views, which is what echo-chamber questions ask; a feed of many authors who
    agree scores 0. Viewers with fewer than two impressions of known stance are left out.
    """
    v = as_ints(impression_viewer)
    s = as_floats(post_stance)[as_ints(impression_post)]
    ok = np.isfinite(s)
    v, s = v[ok], s[ok]
    if v.size == 0:
        return float("nan")
    n = int(v.max()) + 1
    cnt = np.bincount(v, minlength=n)
    mean = np.bincount(v, weights=s, minlength=n) / np.maximum(cnt, 1)
    var = np.bincount(v, weights=(s - mean[v]) ** 2, minlength=n) / np.maximum(cnt, 1)
    has = cnt >= 2
    return float(np.sqrt(var[has]).mean()) if has.any() else float("nan")
