"""Chronological timeline: followees' posts, newest first (the no-algorithm baseline).

Exact: the k newest visible items of a user's followees are among the k newest visible
items of each followee, so `followee_items` walks each followee's post list k items deep
(vectorized over all followee pairs, stopping early where lists end). A followee's repost
shows its root at the time of the share; a root shared by several followees appears once,
at its newest share. Users who follow nobody (or whose followees never posted) get -1.

Downranked posts rank as if shared `downrank_minutes` earlier (default 6 hours).
"""

from __future__ import annotations

import numpy as np

from .base import BaseRecommender, as_users, downranked, empty_feed, followee_items, segmented_topk


class ChronologicalRecommender(BaseRecommender):
    name = "chronological"

    def __init__(self, downrank_minutes: int = 360, **base):
        super().__init__(**base)
        self.downrank_minutes = downrank_minutes

    def recommend(self, platform, users, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        users = as_users(users)
        if not len(users) or k <= 0:
            return empty_feed(len(users), k)
        row, shown, share = followee_items(platform, users, k)
        if not len(row):
            return empty_feed(len(users), k)
        # post ids grow with time: the share's id is its exact position in time
        score = share.astype(np.float64)
        dr = downranked(platform, shown)
        if dr.any() and self.downrank_minutes:
            earlier = platform.p_minute.a[share[dr]] - self.downrank_minutes
            score[dr] = np.searchsorted(platform.p_minute.a, earlier, side="left") - 0.5
        return segmented_topk(row, shown, score, len(users), k)
