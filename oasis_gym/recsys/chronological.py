"""Chronological timeline: followees' posts, newest first (the no-algorithm baseline).

Exact: the k newest visible items of a user's followees are among the k newest visible
items of each followee, so `followee_items` walks each followee's post list up to k items
deep (vectorized over all followee pairs), dropping a pair as soon as its next post is
older than the user's k-th newest item found so far, or its list ends. A followee's repost
shows its root at the time of the share; a root shared by several followees appears once,
at its newest share. Users who follow nobody (or whose followees never posted) get -1.

Downranked posts rank as if shared `downrank_minutes` earlier (default 6 hours).
"""

from __future__ import annotations

import numpy as np

from .base import BaseRecommender, as_users, downranked
from .in_network import followee_items
from .topk import empty_feed, segmented_topk


class ChronologicalRecommender(BaseRecommender):
    """Followees' posts, newest first (the no-algorithm baseline)."""

    name = "chronological"

    def __init__(self, downrank_minutes: int = 360, **base):
        super().__init__(**base)
        self.downrank_minutes = downrank_minutes

    def recommend(self, platform, users, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """The k newest visible items of each user's followees."""
        users = as_users(users)
        if not len(users) or k <= 0:
            return empty_feed(len(users), k)
        row, shown, share = followee_items(
            platform, users, k, prune_k=k, prune_score=lambda p, s: self._score(platform, p, s)
        )
        if not len(row):
            return empty_feed(len(users), k)
        score = self._score(platform, shown, share)
        return segmented_topk(row, shown, score, len(users), k, maybe_dup=shown != share)

    def _score(self, platform, shown: np.ndarray, share: np.ndarray) -> np.ndarray:
        """Post ids grow with time, so 2 * share id + 1 is the exact position of the share in
        time; a demoted share sits just before the first post of `downrank_minutes` earlier."""
        score = 2 * share + 1
        dr = downranked(platform, shown)
        if dr.any() and self.downrank_minutes:
            earlier = platform.p_minute.a[share[dr]] - self.downrank_minutes
            score[dr] = 2 * np.searchsorted(platform.p_minute.a, earlier, side="left") - 1
        return score
