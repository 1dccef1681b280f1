"""Agent-controlled recsys: a linear score whose weights are the recommender agent's action.

Candidates per served user: the recent-window pool (newest `pool_size` originals/quotes)
plus the latest `in_network_per_followee` visible posts of each followee (reposts surface
their root). Each candidate has the features of `model.ranking.V0_FEATURES` (computed by the
model's feature functions with this recommender's constants), in this order:

    recency      exp(-age_minutes / recency_tau)                       in (0, 1]
    popularity   log_1000(1 + likes + shares)                          >= 0 (1 at 999)
    author_fans  log_1000(1 + author followers)                        >= 0 (2 at 1M)
    similarity   cosine(E_post, E_user) (see EmbeddingIndex)           in [-1, 1]
    in_network   1 if the author is followed or a followee shared it   {0, 1}
    controversy  min(likes, dislikes) / max(likes, dislikes), 0 if none in [0, 1]
    reports      log_1000(1 + reports)                                 >= 0
    alignment    opinion(user) * stance(post) (0 if the stance is unknown) in [-1, 1]

score = features @ w, with w set each step by `set_weights` (default `V0_DEFAULT_WEIGHTS`).
E.g. w = e_recency gives newest first; a negative `reports` weight buries reported posts;
a positive `alignment` weight is an echo chamber, a negative one shows users the other side.

Per-user weights: `set_weights` also takes a (len(V0_USER_FEATURES), N_FEATURES) matrix W;
then user u's weights are z(u) @ W with z(u) = (1, opinion, |opinion|) (`V0_USER_FEATURES`),
so one shared scoring function ranks every user's candidates differently (e.g. extreme
users get less alignment). A 1-D w is the global ranking (W with one row, z = 1).
Downranked posts: the score is multiplied by `downrank_factor` when positive and divided
by it when negative (`model.ranking.demote`, rule "factor"). Ties prefer the newer post.

`candidate_pool_stats(platform)` returns the mean and std of every feature (16 float32:
8 means then 8 stds) for the recommender agent's observation: the post-only features
over the current pool; similarity, in_network and alignment over the (user, pool post)
cells of the last `recommend` call (all its users x pool cells, the few own/muted ones included;
similarity over a strided sample of at most 1024 x 1024 of them; zeros before the first
call).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..blas import matmul
from ..model.ranking import (
    V0_DEFAULT_WEIGHTS,
    V0_FEATURES,
    V0_USER_FEATURES,
    FeatureSpec,
    demote,
    post_features,
    user_features,
)
from ..platform.store import pair_keys, unpack_keys
from .base import (
    BaseRecommender,
    as_users,
    blocked_cells,
    cells_by_row,
    chunk_cells,
    chunked_rows,
    downranked,
    expand_ranges,
    recent_pool,
)
from .in_network import followee_items
from .topk import empty_feed, pool_topk, rowwise_dot, segmented_topk

N_FEATURES = len(V0_FEATURES.names)
F = {name: i for i, name in enumerate(V0_FEATURES.names)}


def pool_features(platform, posts: np.ndarray, spec: FeatureSpec = V0_FEATURES) -> np.ndarray:
    """(len(posts), N_FEATURES) float32 of `spec` (`V0_FEATURES` with the recommender's
    `recency_tau`, age in minutes; `model.ranking.post_features`); similarity and in_network
    columns left at 0, the alignment column holds the post's stance (the user's opinion
    multiplies it per cell)."""
    posts = np.asarray(posts, dtype=np.int64)
    return post_features(
        spec,
        age=np.maximum(platform.minute - platform.p_minute.a[posts], 0),
        likes=platform.p_likes.a[posts].astype(np.float64),
        dislikes=platform.p_dislikes.a[posts].astype(np.float64),
        shares=platform.p_shares.a[posts],
        author_fans=platform.u_followers.a[platform.p_author.a[posts]],
        reports=platform.p_reports.a[posts],
        stance=platform.p_stance.a[posts],
    )


def v0_user_features(platform, users: np.ndarray, n: int) -> np.ndarray:
    """(len(users), n) float32: the first n of V0_USER_FEATURES (n = 1: the global ranking)."""
    return user_features(platform.u_opinion.a[users])[:, :n]


class AgentControlledRecommender(BaseRecommender):
    """A linear candidate score whose weights are `recommender_0`'s action (`set_weights`)."""

    name = "agent"

    def __init__(
        self,
        weights: np.ndarray | None = None,
        pool_size: int | None = 4000,
        pool_minutes: int | None = None,
        in_network_per_followee: int = 3,
        recency_tau: float = V0_FEATURES.recency_tau,
        chunk: int = 256,
        **base,
    ):
        super().__init__(**base)
        self.pool_size = pool_size
        self.pool_minutes = pool_minutes
        self.in_network_per_followee = in_network_per_followee
        self.recency_tau = recency_tau
        self.feature_spec = replace(V0_FEATURES, recency_tau=recency_tau)
        self.chunk = chunk
        self.weights = V0_DEFAULT_WEIGHTS.copy()
        if weights is not None:
            self.set_weights(weights)
        self.initial_weights = self.weights.copy()  # restored on reset: episodes replay exactly
        self._cell_stats = np.zeros(6, dtype=np.float64)  # mean, std of similarity, in_network, alignment

    def set_weights(self, w: np.ndarray) -> None:
        """The ranking weights for the next `recommend` calls: one per V0_FEATURES name
        (global), or a (len(V0_USER_FEATURES), N_FEATURES) matrix (per user, see the module doc)."""
        w = np.asarray(w, dtype=np.float32)
        if w.shape not in ((N_FEATURES,), (len(V0_USER_FEATURES), N_FEATURES)):
            raise ValueError(
                f"expected {N_FEATURES} weights {V0_FEATURES.names} or a "
                f"({len(V0_USER_FEATURES)}, {N_FEATURES}) matrix, got shape {w.shape}"
            )
        if not np.all(np.isfinite(w)):
            raise ValueError("weights must be finite")
        self.weights = w.copy()

    def user_weights(self, platform, users: np.ndarray) -> np.ndarray:
        """(len(users), N_FEATURES) effective weights: z(u) @ W, the alignment weight times
        the user's opinion (the post side of that feature is the stance)."""
        W = self.weights.reshape(-1, N_FEATURES)
        wu = matmul(v0_user_features(platform, users, len(W)), W)
        wu[:, F["alignment"]] *= platform.u_opinion.a[users]
        return wu

    def reset(self, platform, rng: np.random.Generator | None = None) -> None:
        """Start an episode: the initial weights, no cell statistics yet."""
        super().reset(platform, rng)
        self.weights = self.initial_weights.copy()
        self._cell_stats[:] = 0.0

    def pool(self, platform) -> np.ndarray:
        """The recent-window candidate pool (post ids, ascending)."""
        return recent_pool(platform, self.pool_size, self.pool_minutes)

    def candidate_pool_stats(self, platform) -> np.ndarray:
        """(2 * N_FEATURES,) float32: feature means then stds (see the module docstring)."""
        x = pool_features(platform, self.pool(platform), self.feature_spec)
        mean = x.mean(axis=0) if len(x) else np.zeros(N_FEATURES, np.float32)
        std = x.std(axis=0) if len(x) else np.zeros(N_FEATURES, np.float32)
        for i, name in enumerate(("similarity", "in_network", "alignment")):
            mean[F[name]], std[F[name]] = self._cell_stats[2 * i], self._cell_stats[2 * i + 1]
        return np.concatenate([mean, std]).astype(np.float32)

    # ---------------------------------------------------------------- ranking
    def recommend(self, platform, users, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """Top-k feeds of `users` by the current weights over pool and in-network candidates."""
        users = as_users(users)
        if not len(users) or k <= 0:
            return empty_feed(len(users), k)
        self.index.sync(platform)
        pool = self.pool(platform)
        uvec = self.index.user_vectors(platform, users)
        follows = platform.followees(users)
        irow, ishown, ishare = followee_items(platform, users, self.in_network_per_followee, pairs=follows)
        ids, vals = self._pool_topk(platform, users, uvec, pool, follows, (irow, ishown, ishare), k)
        extra = ~np.isin(ishown, pool)
        r, p, sc, repost = self._extra_scores(
            platform, uvec, irow[extra], ishown[extra], ishare[extra], vals[:, -1], self.user_weights(platform, users)
        )
        ok = ids >= 0
        rows = np.concatenate([np.nonzero(ok)[0], r])
        # pool posts are distinct per row and never extras; only reposted extras can repeat
        maybe_dup = np.concatenate([np.zeros(int(ok.sum()), bool), repost])
        return segmented_topk(
            rows,
            np.concatenate([ids[ok], p]),
            np.concatenate([vals[ok].astype(np.float64), sc]),
            len(users),
            k,
            maybe_dup=maybe_dup,
        )

    def _in_network_cells(self, platform, users, pool, follows, items) -> list[tuple[np.ndarray, np.ndarray]]:
        """(row, pool column) cells whose post is by a followee, and those shared by one
        whose author is not followed: two disjoint lists, each sorted by row."""
        authors = platform.p_author.a[pool]
        order = np.argsort(authors, kind="stable")
        sorted_a = authors[order]
        frow, fol = follows  # platform.followees(users): grouped by row, rows ascending
        r, pos = expand_ranges(np.searchsorted(sorted_a, fol, "left"), np.searchsorted(sorted_a, fol, "right"))
        irow, ishown, ishare = items
        at = np.searchsorted(pool, ishown)
        hit = at < len(pool)
        hit[hit] = pool[at[hit]] == ishown[hit]
        srow, scol = irow[hit], at[hit]
        followed = ishown[hit] == ishare[hit]  # the followee's own post; reposts need a look-up
        rep = np.flatnonzero(~followed)
        followed[rep] = platform.rel["follow"].contains(users[srow[rep]], authors[scol[rep]])
        shared = unpack_keys(np.unique(pair_keys(srow[~followed], scol[~followed])))  # sorted by row
        return [(frow[r], order[pos]), shared]

    def _pool_topk(self, platform, users, uvec, pool, follows, items, k) -> tuple[np.ndarray, np.ndarray]:
        """Best k pool posts per user and their scores (-1 / -inf where fewer)."""
        out_ids = np.full((len(users), k), -1, np.int64)
        out_val = np.full((len(users), k), -np.inf, np.float32)
        if not len(pool):
            return out_ids, out_val
        wu = self.user_weights(platform, users)
        x = pool_features(platform, pool, self.feature_spec)
        stance = x[:, F["alignment"]].copy()
        per_cell = [F["similarity"], F["in_network"], F["alignment"]]
        x[:, per_cell] = 0.0
        pvec = self.index.post_matrix[pool]
        # one matmul gives the whole score: user rows [w_sim(u) * E_u, w_align(u) * op_u, 1],
        # post rows [E_p, stance_p, base_p]; with per-user weights the base term is a sum
        # over the user features: z(u) . (W x_p)
        W = self.weights.reshape(-1, N_FEATURES)
        nz, dim = len(W), self.index.dim
        pmat = np.empty((len(pool), dim + 1 + nz), dtype=np.float32)
        pmat[:, :dim] = pvec
        pmat[:, dim] = stance
        pmat[:, dim + 1 :] = matmul(x, W.T)
        umat = np.empty((len(users), dim + 1 + nz), dtype=np.float32)
        np.multiply(uvec, wu[:, F["similarity"], None], out=umat[:, :dim])
        umat[:, dim] = wu[:, F["alignment"]]
        umat[:, dim + 1 :] = v0_user_features(platform, users, nz)
        w_in = wu[:, F["in_network"]]
        dr = downranked(platform, pool)
        brow, bcol = cells_by_row(*blocked_cells(platform, users, platform.p_author.a[pool]))
        in_cells = self._in_network_cells(platform, users, pool, follows, items)
        n_in = 0
        for sl in chunked_rows(len(users), self.chunk):
            score = matmul(umat[sl], pmat.T)
            for rows, cols in in_cells:  # disjoint cell lists: each cell gets the weight once
                r, c = chunk_cells(rows, cols, sl)
                score[r, c] += w_in[sl][r]
                n_in += len(r)
            if dr.any():
                score = demote(score, dr[None, :], "factor", self.downrank_factor)
            r, c = chunk_cells(brow, bcol, sl)
            score[r, c] = -np.inf
            ids, vals = pool_topk(score, pool, k)
            out_ids[sl, : ids.shape[1]] = ids
            out_val[sl, : vals.shape[1]] = vals
        self._update_cell_stats(uvec, pvec, n_in)
        op = platform.u_opinion.a[users].astype(np.float64)
        st = stance.astype(np.float64)
        mean = op.mean() * st.mean()
        sq = np.mean(op * op) * np.mean(st * st)
        self._cell_stats[4:] = (mean, np.sqrt(max(sq - mean * mean, 0.0)))
        return out_ids, out_val

    def _update_cell_stats(self, uvec: np.ndarray, pvec: np.ndarray, n_in: int, sample: int = 1024) -> None:
        """Mean/std of similarity and in_network over the (user, pool post) cells, without
        the cells: sum S = (sum U).(sum P), sum S^2 = <U'U, P'P>. Similarity is taken over
        an evenly strided sample of at most `sample` users x `sample` posts (exact when
        fewer); in_network over all cells."""
        share = n_in / (len(uvec) * len(pvec))
        uvec = uvec[:: max(1, len(uvec) // sample)]
        pvec = pvec[:: max(1, len(pvec) // sample)]
        n = len(uvec) * len(pvec)
        mean = float(matmul(uvec.sum(axis=0, dtype=np.float64), pvec.sum(axis=0, dtype=np.float64))) / n
        sq = float(np.sum(matmul(uvec.T, uvec).astype(np.float64) * matmul(pvec.T, pvec))) / n
        self._cell_stats[:4] = (mean, np.sqrt(max(sq - mean * mean, 0.0)), share, np.sqrt(share * (1 - share)))

    def _extra_scores(self, platform, uvec, rows, posts, shares, kth, wu) -> tuple[np.ndarray, ...]:
        """Scores of in-network candidates outside the pool (in_network = 1). Candidates whose
        best possible score (|similarity| <= 1) is below the row's k-th pool score are skipped."""
        empty = np.empty(0, np.int64)
        if not len(rows):
            return empty, empty, np.empty(0), np.empty(0, bool)
        uniq, inv = np.unique(posts, return_inverse=True)
        x = pool_features(platform, uniq, self.feature_spec)
        x[:, F["in_network"]] = 1.0
        w_sim = wu[rows, F["similarity"]].astype(np.float64)
        base = np.einsum("ij,ij->i", x[inv].astype(np.float64), wu[rows].astype(np.float64))
        keep = base + np.abs(w_sim) >= kth[rows]
        rows, posts, shares, base, w_sim = rows[keep], posts[keep], shares[keep], base[keep], w_sim[keep]
        sim = rowwise_dot(uvec, rows, self.index.post_matrix, posts)
        score = base + w_sim * sim
        return rows, posts, demote(score, downranked(platform, posts), "factor", self.downrank_factor), posts != shares
