"""Random recommendations (OASIS `rec_sys_random`), vectorized and visibility-aware.

Each served user gets k distinct posts drawn uniformly from the eligible posts (originals
and quotes, not removed; `pool_size` limits them to the newest ones), minus their own and
their muted authors' posts. OASIS samples from every post, reposts included, and gives
each user the whole table when it has at most k posts; we never show reposts (their root is
eligible itself) and never show invisible posts.

Downranked posts: in the exact (dense) path each candidate's random key is multiplied by
`downrank_factor`; in the sampling path a drawn downranked post is kept with probability
`downrank_factor`. Both make a downranked post roughly `downrank_factor` times as likely
to be shown.
"""

from __future__ import annotations

import numpy as np

from ..model.ranking import demote
from .base import BaseRecommender, as_users, blocked_cells, downranked, recent_pool
from .topk import dense_topk, empty_feed, segmented_topk


class RandomRecommender(BaseRecommender):
    """k distinct eligible posts per user, drawn uniformly (OASIS `rec_sys_random`)."""

    name = "random"

    def __init__(
        self,
        pool_size: int | None = None,
        pool_minutes: int | None = None,
        dense_limit: int = 4_000_000,
        rounds: int = 6,
        **base,
    ):
        super().__init__(**base)
        self.pool_size = pool_size
        self.pool_minutes = pool_minutes
        self.dense_limit = dense_limit  # users x pool cells up to which sampling is exact
        self.rounds = rounds

    def recommend(self, platform, users, k: int, rng: np.random.Generator) -> np.ndarray:
        """k random visible posts of the pool per user (fewer when the pool is short)."""
        users = as_users(users)
        pool = recent_pool(platform, self.pool_size, self.pool_minutes)
        if not len(users) or k <= 0 or not len(pool):
            return empty_feed(len(users), k)
        if len(pool) <= 4 * k + 16 or len(users) * len(pool) <= self.dense_limit:
            return self._dense(platform, users, pool, k, rng)
        return self._sampled(platform, users, pool, k, rng)

    def _dense(self, platform, users, pool, k, rng) -> np.ndarray:
        """Exact: a random key per (user, post), invisible cells -inf, top k keys."""
        keys = rng.random((len(users), len(pool)), dtype=np.float32)
        keys = demote(keys, downranked(platform, pool)[None, :], "factor", self.downrank_factor)
        r, c = blocked_cells(platform, users, platform.p_author.a[pool])
        keys[r, c] = -np.inf
        cols, vals = dense_topk(keys, k)
        out = np.where(np.isneginf(vals), -1, pool[cols])
        return np.concatenate([out, empty_feed(len(users), k - out.shape[1])], axis=1)

    def _sampled(self, platform, users, pool, k, rng) -> np.ndarray:
        """Draws with replacement, rejecting invisible posts and repeats, until rows fill."""
        out = empty_feed(len(users), k)
        todo = np.arange(len(users))
        has_mutes = len(platform.rel["mute"]) > 0
        for _ in range(self.rounds):
            n, m = len(todo), 2 * k + 8
            posts = pool[rng.integers(0, len(pool), (n, m))]
            viewer = users[todo][:, None]
            author = platform.p_author.a[posts]
            ok = author != viewer
            if has_mutes:
                ok &= ~platform.muted_mask(viewer, author)
            dr = downranked(platform, posts)
            if dr.any():
                ok &= ~(dr & (rng.random(posts.shape) >= self.downrank_factor))
            # keep what the rows already hold first, then new draws in draw order
            cand = np.concatenate([out[todo], np.where(ok, posts, -1)], axis=1)
            rows = np.repeat(np.arange(n), cand.shape[1])
            flat = cand.ravel()
            rank = -np.tile(np.arange(cand.shape[1], dtype=np.float64), n)
            valid = flat >= 0
            out[todo] = segmented_topk(rows[valid], flat[valid], rank[valid], n, k)
            todo = todo[out[todo, k - 1] < 0]
            if not len(todo):
                return out
        out[todo] = self._dense(platform, users[todo], pool, k, rng)  # rare: heavy blockers
        return out
