"""Twitter-like recsys: in-network posts from followees plus out-of-network R x F x S.

Out-of-network (OASIS `rec_sys_personalized_twh`, paper Sec. 2.3): every candidate of a
recent-window pool is scored for every served user as

    Score = R x F x S
    R = ln((271.8 - age) / 100)                 recency, age in `age_unit_minutes` units
    F = max(1, log_1000(author_followers + 1))  the author's audience
    S = cosine(E_post, E_user)                  interest similarity (`EmbeddingIndex`)

R is 1 at age 0 and reaches 0 at age 171.8; OASIS's formula becomes negative beyond that
(multiplying S, so an *older* post would rank higher the *less* it matches) and undefined
(log of a negative number -> NaN) past 271.8. We clip: R = max(ln((271.8 - age)/100),
`recency_floor`), with the age clipped below 271.8 so the log is always defined; the default
floor 0.01 keeps old posts at a small positive recency weight so the ranking stays
increasing in S. `recency_floor=-4.6` reproduces OASIS's raw values up to age 270.8.
OASIS measures age in time steps (its twitter clock counts rounds); we use simulated
minutes by default (`age_unit_minutes=1`); pass the step length to count in steps.
S gets a 1e-6 offset (`tie_epsilon`) so the frequent exact ties at S = 0 (no shared words)
fall back to R x F. OASIS's sampled 4000-post "coarse filter" is replaced by a
deterministic pool of the newest `pool_size` posts (optionally only the last
`pool_minutes`): retrieval cost is users x pool, not users x all posts.

Retrieval (`retrieval`): "exact" scores every served user against every pool post (cost
users x pool x dim: 52% of a 1M-user step); "clustered" scores each user against the posts
of the `n_probe` of `n_clusters` post clusters it matches best plus the `n_fallback` posts
of highest prior (see `clustered.py`). "auto" (the default) is exact below
`clustered_min_users` (250,000) users on the platform and clustered from there, so every
run of a smaller population ranks exactly as before; pass ``retrieval="exact"`` to rank
exactly at any size, or "clustered" at any size. Measured by `bench/research/recsys_recall.py`
(100k users, 30k served, k = 10, a 4000-post pool; load ~5 on 2 cores): template posts
(the engine's texts) recall@10 0.98 of the exact top-10, 93% identical feeds, score ratio
0.998, 5.4x less CPU; free texts (8-30 random words of a 20k vocabulary: hash-embedding
cosines are mostly collision noise) recall@10 0.68, score ratio 0.95, 3.6x less CPU.

In-network: each followee's latest `in_network_per_followee` visible posts (a repost
surfaces its root) are ranked by popularity (likes of the shown post, as OASIS's
"ORDER BY num_likes DESC") then recency (time of the share), and the best
`following_post_count` (OASIS default 3) lead the feed; out-of-network posts fill the rest
of the k slots, duplicates dropped. OASIS's own "twitter" recsys
(`rec_sys_personalized_with_trace`) reads `trace['post_id']`, a column its trace table does
not have (the post id sits inside the JSON `info`), so it raises KeyError as soon as a
served user has liked a post; we read the user's history from the platform's columns
(their latest posts enter E_user) instead of the trace.

Downranked posts: their score (R x F x S, or likes for in-network) is multiplied by
`downrank_factor` when positive and divided by it when negative (`demote`).
"""

from __future__ import annotations

import numpy as np

from ..blas import matmul
from ..model.ranking import demote
from .base import (
    BaseRecommender,
    as_users,
    blocked_cells,
    cells_by_row,
    chunk_cells,
    chunked_rows,
    downranked,
    recent_pool,
)
from .clustered import clustered_topk
from .in_network import followee_items
from .topk import empty_feed, merge_feeds, pool_topk, segmented_topk

RETRIEVALS = ("auto", "exact", "clustered")
CLUSTERED_MIN_USERS = 250_000  # "auto": clustered retrieval from this many users on
R_OFFSET = 271.8
R_SCALE = 100.0


def recency_score(age: np.ndarray, floor: float = 0.01) -> np.ndarray:
    """R = ln((271.8 - age) / 100), floored at `floor` (age clipped so the log is defined)."""
    max_age = R_OFFSET - R_SCALE * np.exp(floor)
    age = np.clip(np.asarray(age, dtype=np.float64), 0.0, max_age)
    return np.log((R_OFFSET - age) / R_SCALE)


def fan_score(followers: np.ndarray) -> np.ndarray:
    """F = max(1, log_1000(followers + 1))."""
    return np.maximum(1.0, np.log(np.asarray(followers, dtype=np.float64) + 1.0) / np.log(1000.0))


class TwitterRecommender(BaseRecommender):
    """In-network posts from followees, then out-of-network posts by R x F x S (OASIS)."""

    name = "twitter"

    def __init__(
        self,
        following_post_count: int = 3,
        in_network_per_followee: int = 3,
        pool_size: int | None = 4000,
        pool_minutes: int | None = None,
        age_unit_minutes: float = 1.0,
        recency_floor: float = 0.01,
        tie_epsilon: float = 1e-6,
        chunk: int = 256,
        retrieval: str = "auto",
        clustered_min_users: int = CLUSTERED_MIN_USERS,
        n_clusters: int = 64,
        n_probe: int = 6,
        n_fallback: int = 32,
        **base,
    ):
        super().__init__(**base)
        if retrieval not in RETRIEVALS:
            raise ValueError(f"retrieval must be one of {RETRIEVALS}, got {retrieval!r}")
        for name, value in (("n_clusters", n_clusters), ("n_probe", n_probe)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
        if isinstance(n_fallback, bool) or not isinstance(n_fallback, (int, np.integer)) or n_fallback < 0:
            raise ValueError(f"n_fallback must be a whole number >= 0, got {n_fallback!r}")
        self.retrieval = retrieval
        self.clustered_min_users = clustered_min_users
        self.n_clusters, self.n_probe, self.n_fallback = int(n_clusters), int(n_probe), int(n_fallback)
        self.following_post_count = following_post_count
        self.in_network_per_followee = in_network_per_followee
        self.pool_size = pool_size
        self.pool_minutes = pool_minutes
        self.age_unit_minutes = age_unit_minutes
        self.recency_floor = recency_floor
        self.tie_epsilon = tie_epsilon
        self.chunk = chunk

    # ---------------------------------------------------------------- scores
    def post_prior(self, platform, posts: np.ndarray) -> np.ndarray:
        """R x F of posts (the user-independent factor of the score)."""
        age = (platform.minute - platform.p_minute.a[posts]) / self.age_unit_minutes
        fans = platform.u_followers.a[platform.p_author.a[posts]]
        return recency_score(age, self.recency_floor) * fan_score(fans)

    def in_network(self, platform, users: np.ndarray, count: int) -> np.ndarray:
        """(len(users), count) in-network feed: likes desc, then newest share first."""
        row, shown, share = followee_items(platform, users, self.in_network_per_followee)
        if not len(row) or count <= 0:
            return empty_feed(len(users), count)
        likes = platform.p_likes.a[shown].astype(np.int64)  # integer scores sort faster
        dr = downranked(platform, shown)
        if dr.any():
            likes = demote(likes.astype(np.float64), dr, "factor", self.downrank_factor)
        return segmented_topk(row, shown, likes, len(users), count, tiebreak=share, maybe_dup=shown != share)

    def clustered(self, platform) -> bool:
        """Whether out-of-network ranking uses clustered retrieval on `platform` (see the
        module docstring): "clustered", or "auto" with at least `clustered_min_users` users."""
        if self.retrieval == "auto":
            return platform.n_users >= self.clustered_min_users
        return self.retrieval == "clustered"

    def out_of_network(self, platform, users: np.ndarray, k: int) -> np.ndarray:
        """(len(users), k) best pool posts by R x F x S, visible ones only."""
        pool = recent_pool(platform, self.pool_size, self.pool_minutes)
        out = empty_feed(len(users), k)
        if not len(pool) or k <= 0:
            return out
        self.index.sync(platform)
        prior = self.post_prior(platform, pool).astype(np.float32)
        dr = downranked(platform, pool)
        hidden = blocked_cells(platform, users, platform.p_author.a[pool])
        if self.clustered(platform):
            cols = clustered_topk(
                self.index.user_vectors(platform, users),
                self.index.post_matrix[pool],
                prior,
                k,
                tie_epsilon=self.tie_epsilon,
                n_clusters=self.n_clusters,
                n_probe=self.n_probe,
                n_fallback=self.n_fallback,
                hidden=hidden,
                downranked=dr,
                downrank_factor=self.downrank_factor,
            )
            return np.where(cols >= 0, pool[np.maximum(cols, 0)], -1)
        # one matmul gives prior * (S + eps): users get an extra eps column, posts a prior one
        pmat = np.empty((len(pool), self.index.dim + 1), dtype=np.float32)
        np.multiply(self.index.post_matrix[pool], prior[:, None], out=pmat[:, :-1])
        pmat[:, -1] = prior
        umat = np.empty((len(users), self.index.dim + 1), dtype=np.float32)
        umat[:, :-1] = self.index.user_vectors(platform, users)
        umat[:, -1] = self.tie_epsilon
        brow, bcol = cells_by_row(*hidden)
        for sl in chunked_rows(len(users), self.chunk):
            score = matmul(umat[sl], pmat.T)
            if dr.any():
                score = demote(score, dr[None, :], "factor", self.downrank_factor)
            r, c = chunk_cells(brow, bcol, sl)
            score[r, c] = -np.inf
            ids, _ = pool_topk(score, pool, k)
            out[sl, : ids.shape[1]] = ids
        return out

    def recommend(self, platform, users, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """In-network items first, the best out-of-network posts after them."""
        users = as_users(users)
        if not len(users) or k <= 0:
            return empty_feed(len(users), k)
        inn = self.in_network(platform, users, min(self.following_post_count, k))
        oon = self.out_of_network(platform, users, k)
        return merge_feeds([inn, oon], k)
