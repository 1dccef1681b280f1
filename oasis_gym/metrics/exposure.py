"""Exposure: what the served feeds showed, counted once and turned into shares of impressions.

An impression is one (viewer, post) pair of a served feed. ``impression_exposure`` is the one
implementation of the counts; the live recorder (``served_exposure`` over ``sim.obs``), the
platform-agent rewards and the array formulas below all use it.

Empty-input convention: every share is ``ratio(numerator, denominator)``, NaN when the
denominator is 0 (no impression, or none with the needed labels known), never 0: "nothing
shown" is not "nothing harmful shown". A caller that needs a number (a reward term) replaces
the NaN itself, e.g. ``np.nan_to_num(share)``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..platform import MISINFO_LABEL
from .arrays import as_floats, as_ints, ratio

if TYPE_CHECKING:  # pragma: no cover
    from ..platform import Platform

__all__ = [
    "Exposure",
    "ratio",
    "impression_exposure",
    "served_exposure",
    "misinformation_share",
    "cross_cutting_share",
    "feed_diversity",
]


@dataclass(frozen=True)
class Exposure:
    """Counts over a set of impressions; ``a + b`` pools two sets (e.g. the steps of an interval).

    Attributes:
        impressions: all impressions.
        misinfo: impressions of misinformation; ``labelled``: those whose label is known.
        cross_cutting: impressions whose post stance has the opposite sign to the viewer's
            opinion; ``signed``: those where both signs are known and non-zero.
        diversity_sum: sum over viewers of the std (ddof=0) of the known stances they were
            shown; ``diversity_viewers``: viewers with at least two such impressions.
    """

    impressions: int = 0
    misinfo: int = 0
    labelled: int = 0
    cross_cutting: int = 0
    signed: int = 0
    diversity_sum: float = 0.0
    diversity_viewers: int = 0

    def __add__(self, other: Exposure) -> Exposure:
        return Exposure(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def misinfo_share(self) -> float:
        """Share of labelled impressions showing misinformation; NaN when none is labelled."""
        return ratio(self.misinfo, self.labelled)

    @property
    def cross_cutting_share(self) -> float:
        """Share of signed impressions that cut across the viewer's side (Bakshy et al. 2015,
        Science); NaN when none is signed."""
        return ratio(self.cross_cutting, self.signed)

    @property
    def feed_diversity(self) -> float:
        """Mean over viewers of the stance std of their feed; NaN when no viewer qualifies."""
        return ratio(self.diversity_sum, self.diversity_viewers)


def impression_exposure(
    viewer: ArrayLike, viewer_opinion: ArrayLike, stance: ArrayLike, is_misinfo: ArrayLike
) -> Exposure:
    """Exposure counts of impressions given per impression (all arrays of one length).

    ``viewer``: a non-negative group key per impression (user id, or feed row) for feed
    diversity; ``viewer_opinion`` and ``stance``: the viewer's opinion and the post's stance
    (0 neutral, NaN unknown: left out of the cross-cutting counts); ``is_misinfo``: bool, or
    float with NaN for an unlabelled post (left out of ``labelled``).

    Feed diversity uses stance spread rather than author entropy because it measures
    exposure to differing views, which is what echo-chamber questions ask; a feed of many
    authors who agree scores 0.
    """
    v, op, st, mis = as_ints(viewer), as_floats(viewer_opinion), as_floats(stance), as_floats(is_misinfo)
    known_label = np.isfinite(mis)
    a, b = np.sign(op), np.sign(st)
    signed = np.isfinite(a) & np.isfinite(b) & (a != 0) & (b != 0)
    ok = np.isfinite(st)
    vk, sk = v[ok], st[ok]
    n = int(vk.max()) + 1 if vk.size else 0
    cnt = np.bincount(vk, minlength=n)
    mean = np.bincount(vk, weights=sk, minlength=n) / np.maximum(cnt, 1)
    var = np.bincount(vk, weights=(sk - mean[vk]) ** 2, minlength=n) / np.maximum(cnt, 1)
    has = cnt >= 2
    return Exposure(
        impressions=int(v.size),
        misinfo=int((mis[known_label] != 0).sum()),
        labelled=int(known_label.sum()),
        cross_cutting=int((a[signed] != b[signed]).sum()),
        signed=int(signed.sum()),
        diversity_sum=float(np.sqrt(var[has]).sum()),
        diversity_viewers=int(has.sum()),
    )


def served_exposure(pf: Platform, obs) -> Exposure:
    """Exposure of the feeds just served (``sim.obs``: ``users`` and ``post_ids``, -1 = empty slot).

    A post counts as misinformation when it or its cascade root is labelled MISINFO_LABEL, so
    every copy of a rumour counts; every impression is labelled (unknown = not misinformation).
    """
    rows, slots = np.nonzero(obs.post_ids >= 0)
    posts = obs.post_ids[rows, slots]
    label, root = pf.p_label.a, pf.p_root.a[posts]
    mis = (label[posts] == MISINFO_LABEL) | ((root >= 0) & (label[np.maximum(root, 0)] == MISINFO_LABEL))
    return impression_exposure(rows, pf.u_opinion.a[obs.users[rows]], pf.p_stance.a[posts], mis)


def misinformation_share(impression_post: ArrayLike, post_is_misinfo: ArrayLike) -> float:
    """Share of impressions that showed misinformation.

    ``post_is_misinfo`` is per post: bool, or float with NaN for unlabelled posts
    (impressions of unlabelled posts are left out of numerator and denominator); NaN when
    no impression is labelled.
    """
    p = as_ints(impression_post)
    nan = np.full(p.size, np.nan)
    return impression_exposure(np.zeros(p.size), nan, nan, as_floats(post_is_misinfo)[p]).misinfo_share


def cross_cutting_share(
    impression_viewer: ArrayLike, impression_post: ArrayLike, viewer_opinion: ArrayLike, post_stance: ArrayLike
) -> float:
    """Share of impressions whose post stance has the opposite sign to the viewer's opinion.

    Impressions where either side is 0 (neutral) or NaN (unknown) are left out (Bakshy et
    al. 2015, Science, cross-cutting exposure); NaN when none is left.
    """
    v, p = as_ints(impression_viewer), as_ints(impression_post)
    op, st = as_floats(viewer_opinion)[v], as_floats(post_stance)[p]
    return impression_exposure(v, op, st, np.full(p.size, np.nan)).cross_cutting_share


def feed_diversity(impression_viewer: ArrayLike, impression_post: ArrayLike, post_stance: ArrayLike) -> float:
    """Mean over viewers of the standard deviation (ddof=0) of the stances they were shown.

    Viewers with fewer than two impressions of known stance are left out; NaN when none is
    left (see ``impression_exposure``).
    """
    v, p = as_ints(impression_viewer), as_ints(impression_post)
    st = as_floats(post_stance)[p]
    return impression_exposure(v, np.full(p.size, np.nan), st, np.full(p.size, np.nan)).feed_diversity
