"""Agent-controlled recsys: a linear score whose weights are the recommender agent's action.

Candidates per served user: the recent-window pool (newest `pool_size` originals/quotes)
plus the latest `in_network_per_followee` visible posts of each followee (reposts surface
their root). Each candidate has the features of `CANDIDATE_FEATURES`, in this order:

    recency      exp(-age_minutes / recency_tau)                       in (0, 1]
    popularity   log_1000(1 + likes + shares)                          >= 0 (1 at 999)
    author_fans  log_1000(1 + author followers)                        >= 0 (2 at 1M)
    similarity   cosine(E_post, E_user) (see EmbeddingIndex)           in [-1, 1]
    in_network   1 if the author is followed or a followee shared it   {0, 1}
    controversy  min(likes, dislikes) / max(likes, dislikes), 0 if none in [0, 1]
    reports      log_1000(1 + reports)                                 >= 0

score = features @ w, with w set each step by `set_weights` (default `DEFAULT_WEIGHTS`).
E.g. w = e_recency gives newest first; a negative `reports` weight buries reported posts.
Downranked posts: the score is multiplied by `downrank_factor` when positive and divided
by it when negative. Ties prefer the newer post.

`candidate_pool_stats(platform)` returns the mean and std of every feature (14 float32:
7 means then 7 stds) for the recommender agent's observation: the post-only features
over the current pool; similarity and in_network over the (user, pool post) cells of the
last `recommend` call (zeros before the first call).
"""

from __future__ import annotations

import numpy as np

from .base import (
    BaseRecommender,
    as_users,
    blocked_cells,
    cells_by_row,
    chunk_cells,
    chunked_rows,
    demote,
    downranked,
    empty_feed,
    expand_ranges,
    followee_items,
    pool_topk,
    recent_pool,
    segmented_topk,
)

CANDIDATE_FEATURES: tuple[str, ...] = (
    "recency", "popularity", "author_fans", "similarity", "in_network", "controversy", "reports",
)
N_FEATURES = len(CANDIDATE_FEATURES)
F = {name: i for i, name in enumerate(CANDIDATE_FEATURES)}
DEFAULT_WEIGHTS = np.array([1.0, 0.5, 0.25, 1.0, 0.5, 0.0, 0.0], dtype=np.float32)
_LOG1000 = np.log(1000.0)


def post_features(platform, posts: np.ndarray, recency_tau: float) -> np.ndarray:
    """(len(posts), N_FEATURES) float32; similarity and in_network columns left at 0."""
    posts = np.asarray(posts, dtype=np.int64)
    x = np.zeros((len(posts), N_FEATURES), dtype=np.float32)
    if not len(posts):
        return x
    likes = platform.p_likes.a[posts].astype(np.float64)
    dislikes = platform.p_dislikes.a[posts].astype(np.float64)
    age = np.maximum(platform.minute - platform.p_minute.a[posts], 0)
    x[:, F["recency"]] = np.exp(-age / recency_tau)
    x[:, F["popularity"]] = np.log1p(likes + platform.p_shares.a[posts]) / _LOG1000
    x[:, F["author_fans"]] = np.log1p(platform.u_followers.a[platform.p_author.a[posts]]) / _LOG1000
    hi = np.maximum(likes, dislikes)
    x[:, F["controversy"]] = np.minimum(likes, dislikes) / np.where(hi > 0, hi, 1.0)
    x[:, F["reports"]] = np.log1p(platform.p_reports.a[posts]) / _LOG1000
    return x


class AgentControlledRecommender(BaseRecommender):
    name = "agent"

    def __init__(self, weights: np.ndarray | None = None, pool_size: int | None = 4000,
                 pool_minutes: int | None = None, in_network_per_followee: int = 3,
                 recency_tau: float = 180.0, chunk: int = 256, **base):
        super().__init__(**base)
        self.pool_size = pool_size
        self.pool_minutes = pool_minutes
        self.in_network_per_followee = in_network_per_followee
        self.recency_tau = recency_tau
        self.chunk = chunk
        self.weights = DEFAULT_WEIGHTS.copy()
        if weights is not None:
            self.set_weights(weights)
        self._cell_stats = np.zeros(4, dtype=np.float64)  # sim mean, sim std, in-net mean, in-net std

    def set_weights(self, w: np.ndarray) -> None:
        """The ranking weights for the next `recommend` calls, one per CANDIDATE_FEATURES."""
        w = np.asarray(w, dtype=np.float32).reshape(-1)
        if w.shape != (N_FEATURES,):
            raise ValueError(f"expected {N_FEATURES} weights {CANDIDATE_FEATURES}, got shape {w.shape}")
        if not np.all(np.isfinite(w)):
            raise ValueError("weights must be finite")
        self.weights = w.copy()

    def reset(self, platform, rng: np.random.Generator | None = None) -> None:
        super().reset(platform, rng)
        self._cell_stats[:] = 0.0

    def pool(self, platform) -> np.ndarray:
        return recent_pool(platform, self.pool_size, self.pool_minutes)

    def candidate_pool_stats(self, platform) -> np.ndarray:
        """(2 * N_FEATURES,) float32: feature means then stds (see the module docstring)."""
        x = post_features(platform, self.pool(platform), self.recency_tau)
        mean = x.mean(axis=0) if len(x) else np.zeros(N_FEATURES, np.float32)
        std = x.std(axis=0) if len(x) else np.zeros(N_FEATURES, np.float32)
        for i, name in enumerate(("similarity", "in_network")):
            mean[F[name]], std[F[name]] = self._cell_stats[2 * i], self._cell_stats[2 * i + 1]
        return np.concatenate([mean, std]).astype(np.float32)

    # ---------------------------------------------------------------- ranking
    def recommend(self, platform, users, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        users = as_users(users)
        if not len(users) or k <= 0:
            return empty_feed(len(users), k)
        self.index.sync(platform)
        pool = self.pool(platform)
        irow, ishown, _ = followee_items(platform, users, self.in_network_per_followee)
        rows, posts, scores = [], [], []
        if len(pool):
            ids, vals = self._pool_topk(platform, users, pool, irow, ishown, k)
            ok = ids >= 0
            rows.append(np.nonzero(ok)[0])
            posts.append(ids[ok])
            scores.append(vals[ok].astype(np.float64))
        extra = ~np.isin(ishown, pool) if len(pool) else np.ones(len(ishown), bool)
        if extra.any():
            r, p = irow[extra], ishown[extra]
            rows.append(r)
            posts.append(p)
            scores.append(self._sparse_scores(platform, users, r, p))
        if not rows:
            return empty_feed(len(users), k)
        return segmented_topk(np.concatenate(rows), np.concatenate(posts), np.concatenate(scores), len(users), k)

    def _in_network_cells(self, platform, users, pool, irow, ishown) -> tuple[np.ndarray, np.ndarray]:
        """(row, pool column) cells whose post is by a followee or was shared by one."""
        order = np.argsort(platform.p_author.a[pool], kind="stable")
        sorted_a = platform.p_author.a[pool][order]
        frow, fol = platform.followees(users)
        r, pos = expand_ranges(np.searchsorted(sorted_a, fol, "left"), np.searchsorted(sorted_a, fol, "right"))
        rows, cols = [frow[r]], [order[pos]]
        at = np.searchsorted(pool, ishown)
        hit = at < len(pool)
        hit[hit] = pool[at[hit]] == ishown[hit]
        rows.append(irow[hit])
        cols.append(at[hit])
        return np.concatenate(rows), np.concatenate(cols)

    def _pool_topk(self, platform, users, pool, irow, ishown, k) -> tuple[np.ndarray, np.ndarray]:
        w = self.weights
        x = post_features(platform, pool, self.recency_tau)
        base = (x @ w).astype(np.float32)
        pvec = np.ascontiguousarray(self.index.post_matrix[pool])
        dr = downranked(platform, pool)
        brow, bcol = cells_by_row(*blocked_cells(platform, users, platform.p_author.a[pool]))
        nrow, ncol = cells_by_row(*self._in_network_cells(platform, users, pool, irow, ishown))
        out_ids = np.full((len(users), k), -1, np.int64)
        out_val = np.full((len(users), k), -np.inf, np.float32)
        acc = np.zeros(3, dtype=np.float64)  # cells, sum sim, sum sim^2
        n_in = 0
        for sl in chunked_rows(len(users), self.chunk):
            sim = self.index.user_vectors(platform, users[sl]) @ pvec.T
            r, c = chunk_cells(nrow, ncol, sl)
            inn = np.zeros(sim.shape, dtype=bool)
            inn[r, c] = True
            score = base + w[F["similarity"]] * sim + w[F["in_network"]] * inn
            if dr.any():
                score = demote(score, dr[None, :], self.downrank_factor)
            r, c = chunk_cells(brow, bcol, sl)
            score[r, c] = -np.inf
            vis = np.isfinite(score)
            acc += (vis.sum(), sim[vis].sum(dtype=np.float64), np.square(sim[vis], dtype=np.float64).sum())
            n_in += int((inn & vis).sum())
            ids, vals = pool_topk(score, pool, k)
            out_ids[sl, : ids.shape[1]] = ids
            out_val[sl, : vals.shape[1]] = vals
        if acc[0]:
            mean = acc[1] / acc[0]
            share = n_in / acc[0]
            self._cell_stats[:] = (mean, np.sqrt(max(acc[2] / acc[0] - mean * mean, 0.0)),
                                   share, np.sqrt(share * (1 - share)))
        return out_ids, out_val

    def _sparse_scores(self, platform, users, rows, posts) -> np.ndarray:
        """Scores of in-network candidates outside the pool (in_network = 1)."""
        x = post_features(platform, posts, self.recency_tau)
        x[:, F["in_network"]] = 1.0
        served, inv = np.unique(rows, return_inverse=True)
        uvec = self.index.user_vectors(platform, users[served])[inv]
        x[:, F["similarity"]] = np.einsum("nd,nd->n", self.index.post_vectors(posts), uvec)
        score = (x @ self.weights).astype(np.float64)
        return demote(score, downranked(platform, posts), self.downrank_factor)
