"""Reddit "hot" ranking: one global hot list per call, filtered per user (vectorized).

Two formulas, selectable with `formula`:

- "paper" (OASIS paper, arXiv:2411.11581, eq. for Reddit):
      h = log10(max(|u - d|, 1)) + sign(u - d) * (t - 1134028003) / 45000
- "code" (OASIS `calculate_hot_score`, Reddit's original):
      h = sign(s) * log10(max(|s|, 1)) + (t - 1134028003) / 45000,  s = u - d

u = likes, d = dislikes, t = creation time in Unix seconds. Platform time is a minute offset
from 2026-01-01 00:00 UTC (`oasis_gym.platform.platform.EPOCH`), so t = 1767225600 + 60 * minute.
The two agree whenever u > d; they differ when u <= d: with s = 0 the paper's time term
vanishes (h = 0, older than any liked post), with s < 0 the paper's time term turns
negative (newer disliked posts sink lower), while the code variant keeps time increasing
for all posts and only subtracts log10|s|. (OASIS also rounds h to 7 decimals; at |h| ~ 1e4
that is below float64 resolution anyway, so we do not.)

OASIS gives every user the same top list; we rank the global list once per call and then
drop, per user, their own posts, removed posts and posts of authors they muted, walking
down the list until k remain (rows that run out look further down, so the result is
exactly the user's top k visible posts). Reposts are not ranked (their root is).
Downranked posts lose `downrank_penalty` hot units (1.0 = ten times fewer net votes, or
12.5 hours older).
"""

from __future__ import annotations

import calendar

import numpy as np

from ..platform.platform import EPOCH
from .base import BaseRecommender, as_users, blocked_cells, downranked, recent_pool
from .topk import empty_feed

REDDIT_EPOCH_SECONDS = 1134028003
HOT_SECONDS = 45000.0
EPOCH_SECONDS = calendar.timegm(EPOCH.timetuple())  # 2026-01-01 00:00 UTC = 1767225600
FORMULAS = ("paper", "code")


def post_seconds(minutes: np.ndarray) -> np.ndarray:
    """Unix seconds of platform minute offsets."""
    return EPOCH_SECONDS + 60.0 * np.asarray(minutes, dtype=np.float64)


def hot_score(likes: np.ndarray, dislikes: np.ndarray, seconds: np.ndarray, formula: str = "code") -> np.ndarray:
    """Hot score (float64) of posts from their vote counts and creation time (Unix s)."""
    s = np.asarray(likes, dtype=np.float64) - np.asarray(dislikes, dtype=np.float64)
    order = np.log10(np.maximum(np.abs(s), 1.0))
    age = (np.asarray(seconds, dtype=np.float64) - REDDIT_EPOCH_SECONDS) / HOT_SECONDS
    if formula == "paper":
        return order + np.sign(s) * age
    if formula == "code":
        return np.sign(s) * order + age
    raise ValueError(f"formula must be one of {FORMULAS}, got {formula!r}")


class RedditRecommender(BaseRecommender):
    """Reddit "hot" ranking: one global hot list, filtered per user."""

    name = "reddit"

    def __init__(
        self,
        formula: str = "code",
        pool_size: int | None = None,
        pool_minutes: int | None = None,
        downrank_penalty: float = 1.0,
        **base,
    ):
        if formula not in FORMULAS:
            raise ValueError(f"formula must be one of {FORMULAS}, got {formula!r}")
        super().__init__(**base)
        self.formula = formula
        self.pool_size = pool_size  # None: every post, as OASIS
        self.pool_minutes = pool_minutes
        self.downrank_penalty = downrank_penalty

    def hot_list(self, platform) -> np.ndarray:
        """Eligible post ids sorted by hot score, best first (ties: newer first)."""
        pool = recent_pool(platform, self.pool_size, self.pool_minutes)
        h = hot_score(
            platform.p_likes.a[pool], platform.p_dislikes.a[pool], post_seconds(platform.p_minute.a[pool]), self.formula
        )
        h = h - self.downrank_penalty * downranked(platform, pool)
        return pool[np.lexsort((-pool, -h))]

    def recommend(self, platform, users, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """The k hottest posts each user may see."""
        users = as_users(users)
        ranked = self.hot_list(platform)
        out = empty_feed(len(users), k)
        if not len(users) or k <= 0 or not len(ranked):
            return out
        todo = np.arange(len(users))
        depth = min(len(ranked), 2 * k + 16)
        while len(todo):
            short = self._fill(platform, users, todo, ranked[:depth], k, out)
            if depth >= len(ranked):
                break
            todo = todo[short]
            depth = min(len(ranked), depth * 4)
        return out

    @staticmethod
    def _fill(platform, users, todo, top, k, out) -> np.ndarray:
        """Write each row's first k visible posts of `top`; True where a row got fewer."""
        n, m = len(todo), len(top)
        ok = np.ones((n, m), dtype=bool)
        r, c = blocked_cells(platform, users[todo], platform.p_author.a[top])
        ok[r, c] = False
        rank = np.cumsum(ok, axis=1) - 1
        take = ok & (rank < k)
        rr, cc = np.nonzero(take)
        out[todo[rr], rank[rr, cc]] = top[cc]
        return ok.sum(axis=1) < k
