"""The recommender interface and the vectorized building blocks every recsys shares.

Conventions (all recommenders):
- A feed is a (len(users), k) int64 array of post ids, best first, padded with -1.
- Never shown: the viewer's own posts, removed posts (p_status == REMOVED), posts of
  suspended accounts (from the pools; the env filters in-network ones with the platform's
  rule) and posts whose author the viewer muted (`Platform.visible_posts_mask`).
- Reposts are never candidates themselves: a repost *surfaces its root*. Out-of-network
  pools hold only originals and quotes (a quote is a post of its own); in-network feeds turn
  a followee's repost into its root (ranked at the time of the share), and a root reached
  twice appears once. The root's author decides visibility (own / muted / removed); a muted
  followee's reposts are hidden too.
- Downranked posts (p_status == DOWNRANKED) stay eligible but their score is penalized; each
  recommender documents how (`model.ranking.demote` for scores where higher is better).
- Ties are broken towards the newer post (higher id); all randomness comes from the rng
  argument, so the same seed gives the same feeds.
- Cost scales with the served (active) users and the candidate posts: nothing here loops
  over, or allocates per, all users of the platform.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ..platform import DOWNRANKED, REMOVED, REPOST
from .embed import Embedder
from .embedding_index import EmbeddingIndex
from .in_network import followee_items
from .topk import dense_topk, empty_feed, merge_feeds, pool_topk, rowwise_dot, segmented_topk


@runtime_checkable
class Recommender(Protocol):
    """What the environment calls, once per episode (`reset`) and once per step."""

    name: str

    def reset(self, platform, rng: np.random.Generator) -> None:
        """Start an episode on `platform` (caches rebuilt; `rng` for any randomness)."""

    def update(self, platform) -> None:
        """Catch up with the platform after a step (e.g. embed new posts)."""

    def recommend(self, platform, users: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """(len(users), k) post ids, best first, -1 padded."""

    def similarity(self, platform, users: np.ndarray, posts: np.ndarray) -> np.ndarray:
        """(len(users), k) float32 cosine of each user's interest vector with each post; 0 at -1."""


class BaseRecommender:
    """Shared state: the embedding index (for `similarity`, and for ranking where used)."""

    name = "base"

    def __init__(
        self,
        embedder: Embedder | str | None = None,
        index: EmbeddingIndex | None = None,
        downrank_factor: float = 0.1,
        **index_params,
    ):
        if not 0.0 < downrank_factor <= 1.0:
            raise ValueError(f"downrank_factor must be in (0, 1], got {downrank_factor}")
        self.index = index if index is not None else EmbeddingIndex(embedder, **index_params)
        self.downrank_factor = downrank_factor

    def reset(self, platform, rng: np.random.Generator | None = None) -> None:
        """New episode: re-embed every post of `platform` (the index is per platform)."""
        self.index.reset(platform)

    def update(self, platform) -> None:
        """Embed the posts created since the last call."""
        self.index.sync(platform)

    def checkpoint(self) -> tuple:
        """The state a step may change (small arrays copied; the index by its length), for
        `rollback` when the step fails (see oasis_gym.sim.step_atomic)."""
        state = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(self).items()}
        return state, self.index.n_posts

    def rollback(self, checkpoint: tuple) -> None:
        """Restore the state of a `checkpoint` (embedded posts beyond it are dropped)."""
        state, n_posts = checkpoint
        vars(self).clear()
        vars(self).update({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()})
        self.index.truncate(n_posts)

    def similarity(self, platform, users: np.ndarray, posts: np.ndarray) -> np.ndarray:
        """(len(users), k) float32 cosine of each user's interest vector with each post; 0 at -1."""
        users = as_users(users)
        posts = np.asarray(posts, dtype=np.int64)
        if posts.ndim != 2 or len(posts) != len(users):
            raise ValueError(f"posts must be (len(users), k), got {posts.shape} for {len(users)} users")
        if not posts.size:
            return np.zeros(posts.shape, np.float32)
        self.index.sync(platform)
        u = self.index.user_vectors(platform, users)
        sim = np.zeros(posts.shape, dtype=np.float32)
        # the few distinct posts of the feeds gathered once (a cache-sized matrix, a zero row
        # last for -1), then by blocks of users and column by column: each block's user rows
        # and gathered post rows stay in the CPU cache, no (users, k, dim) temporary
        shown, local = dense_ranks(posts, platform.n_posts)
        vecs = self.index.post_vectors(np.append(shown, -1))
        for lo in range(0, len(users), _SIM_BLOCK):
            hi = min(len(users), lo + _SIM_BLOCK)
            for j in range(posts.shape[1]):
                sim[lo:hi, j] = np.einsum("ud,ud->u", vecs[local[lo:hi, j]], u[lo:hi])
        sim[posts < 0] = 0.0
        return sim

    def recommend(self, platform, users: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """(len(users), k) post ids, best first, -1 padded (each recommender defines it)."""
        raise NotImplementedError


# --------------------------------------------------------------------------- helpers


_SIM_BLOCK = 2048  # users per block of `similarity` (2 MB of user rows)


def dense_ranks(ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct ids >= 0 of `ids`, ascending; each entry's position among them, and
    len(distinct) where the id is -1). Ids are < n: a mark per id, no sort."""
    present = np.zeros(n + 1, dtype=bool)
    present[ids.reshape(-1) + 1] = True  # (-1 marks slot 0)
    rank = np.cumsum(present[1:]) - 1
    distinct = np.flatnonzero(present[1:])
    return distinct, np.where(ids >= 0, rank[np.maximum(ids, 0)], len(distinct))


def as_users(users) -> np.ndarray:
    """User ids as a flat int64 array."""
    return np.asarray(users, dtype=np.int64).reshape(-1)


def eligible_posts(platform, lo: int = 0) -> np.ndarray:
    """Ids >= lo of posts that may be recommended at all: not reposts, not removed, not by a
    suspended account."""
    kind = platform.p_kind.a[lo:]
    status = platform.p_status.a[lo:]
    suspended = platform.u_suspended.a[platform.p_author.a[lo:]]
    return np.flatnonzero((kind != REPOST) & (status != REMOVED) & ~suspended) + lo


def recent_pool(platform, size: int | None, minutes: int | None = None) -> np.ndarray:
    """The newest `size` eligible posts (ascending ids), optionally only those of the last
    `minutes`. Post ids grow with time, so this scans only the tail of the post arrays."""
    n = platform.n_posts
    lo = 0
    if minutes is not None:
        lo = int(np.searchsorted(platform.p_minute.a, platform.minute - minutes, side="left"))
    if size is None:
        return eligible_posts(platform, lo)
    scan = size
    while True:  # reposts and removed posts are skipped, so widen the scan until full
        start = max(lo, n - scan)
        pool = eligible_posts(platform, start)
        if len(pool) >= size or start == lo:
            return pool[-size:] if size else pool[:0]
        scan *= 2


def blocked_cells(platform, users: np.ndarray, authors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) cells of a len(users) x len(authors) grid where the author is the user
    or was muted by the user. Cost ~ len(users) + mutes of those users + matches."""
    order = np.argsort(authors, kind="stable")
    sorted_a = authors[order]
    rows = np.arange(len(users), dtype=np.int64)
    who = users
    if len(platform.rel["mute"]):
        mrow, mutee = platform.rel["mute"].partners(users)
        rows, who = np.concatenate([rows, mrow]), np.concatenate([who, mutee])
    lo = np.searchsorted(sorted_a, who, side="left")
    hi = np.searchsorted(sorted_a, who, side="right")
    r, pos = expand_ranges(lo, hi)
    return rows[r], order[pos]


def expand_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges [lo_i, hi_i): (i, position) of every position in them, vectorized."""
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    owner = np.repeat(np.arange(len(lo), dtype=np.int64), counts)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, np.repeat(lo, counts) + offsets


def downranked(platform, posts: np.ndarray) -> np.ndarray:
    """Whether each post is downranked by the moderator."""
    return platform.p_status.a[posts] == DOWNRANKED


def chunked_rows(n: int, size: int):
    """Row slices of at most `size` rows (bounds the dense users x pool matrices)."""
    for lo in range(0, n, size):
        yield slice(lo, min(n, lo + size))


def cells_by_row(rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort (row, col) cells by row so each chunk of rows is one contiguous slice."""
    order = np.argsort(rows, kind="stable")
    return rows[order], cols[order]


def chunk_cells(rows: np.ndarray, cols: np.ndarray, sl: slice) -> tuple[np.ndarray, np.ndarray]:
    """The cells of sorted (row, col) lists that fall in the row slice, rows made local."""
    lo, hi = np.searchsorted(rows, [sl.start, sl.stop])
    return rows[lo:hi] - sl.start, cols[lo:hi]


# the top-k and in-network blocks live in `topk` and `in_network`; importable from here too
__all__ = [
    "Recommender",
    "BaseRecommender",
    "as_users",
    "dense_ranks",
    "empty_feed",
    "eligible_posts",
    "recent_pool",
    "blocked_cells",
    "expand_ranges",
    "downranked",
    "chunked_rows",
    "cells_by_row",
    "chunk_cells",
    "segmented_topk",
    "rowwise_dot",
    "merge_feeds",
    "dense_topk",
    "pool_topk",
    "followee_items",
]
