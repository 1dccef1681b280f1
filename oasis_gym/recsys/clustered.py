"""Clustered out-of-network retrieval: candidates shared per cluster of posts, not every
served user against every pool post.

The exact out-of-network ranking (`TwitterRecommender`, ``retrieval="exact"``) scores every
served user against the whole pool: cost users x pool x dim (at 100k active users and a
4000-post pool, ~2e11 flops a step). Clustered retrieval is an inverted-file index (IVF, as
in FAISS or ScaNN), rebuilt for each call because the pool moves every step:

1. posts with the same vector (the same text: the engine's template posts, say) are one
   *distinct vector*; the distinct vectors are grouped by direction into `n_clusters`
   clusters (spherical k-means: a deterministic farthest-point start, then `rounds` rounds;
   cost distinct vectors x clusters x dim, whatever the number of users; nothing is drawn
   from a generator);
2. each user is compared with the centroids (users x clusters x dim) and *probes* the
   `n_probe` clusters it matches best;
3. in a probed cluster, each distinct vector offers the user its k best posts for the sign
   of the user's cosine + eps with it (the highest priors R x F when positive, the lowest
   when negative: within a vector the score follows the prior), and the `n_fallback` posts
   of highest prior are offered to every user (where a user matches few posts, the score
   falls back to R x F); these candidates are scored R x F x (S + eps), with the exact
   path's downranking, hiding and tie rules (score desc, then the newer post); the best k
   form the feed.

Cost ~ users x (n_clusters + the candidates of n_probe clusters + n_fallback): 3.6x (free
texts) to 5.4x (template texts) less CPU than exact at 30k served users and the defaults
(64 clusters, 6 probed, 32 fallback, a 4000-post pool). It is an approximation: a post of
an unprobed cluster that the exact ranking would show is missed. `bench/research/recsys_recall.py`
measures it against the exact ranking (recall@k of the exact top-k, the share of identical
feeds, the score ratio) on template and free-text pools; `TwitterRecommender`'s docstring
gives the figures. Probing every cluster (``n_probe >= n_clusters``) ranks as the exact
path does, up to float rounding (the score is computed as prior x (cosine + eps) here, in
one fused product there).
"""

from __future__ import annotations

import sys

import numpy as np

from ..blas import matmul
from ..model.ranking import demote
from .topk import empty_feed

_ID_BITS = np.int64(32)
_LITTLE = sys.byteorder == "little"


def score_keys(scores: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """int64 keys ordered as (score, col): the float32 score's bits made order-preserving in
    the high half, the column (< 2**31) in the low half. One integer compare then ranks by
    score and breaks ties towards the higher column (the newer post of an ascending pool)."""
    bits = np.asarray(scores, dtype=np.float32) + np.float32(0.0)  # a copy; -0.0 becomes 0.0
    bits = bits.view(np.int32)
    bits ^= (bits >> 31) & np.int32(0x7FFFFFFF)  # negative floats: reverse their order
    if _LITTLE:  # the two halves written in place of shifts and ors
        keys = np.empty(bits.shape + (2,), dtype=np.int32)
        keys[..., 0] = cols
        keys[..., 1] = bits
        return keys.view(np.int64)[..., 0]
    return (bits.astype(np.int64) << _ID_BITS) | np.asarray(cols, dtype=np.int64)


def key_cols(keys: np.ndarray) -> np.ndarray:
    """The column of keys made by `score_keys`."""
    return keys & np.int64((1 << 32) - 1)


_THIN = 8  # vectors per cluster below which one product with every vector is cheaper
_NEG_INF_KEY = int(score_keys(np.array([-np.inf], np.float32), np.zeros(1, np.int64))[0])


def best_keys(keys: np.ndarray, k: int) -> np.ndarray:
    """The k largest keys of each row, in no order (rows of at most k keys keep all)."""
    w = keys.shape[1]
    return np.partition(keys, w - k, axis=1)[:, w - k :] if k < w else keys


def top_keys(keys: np.ndarray, k: int) -> np.ndarray:
    """The k largest keys of each row, largest first (rows of at most k keys keep all)."""
    return -np.sort(-best_keys(keys, k), axis=1)


def distinct_rows(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct rows in order of first appearance, the distinct row of each row): rows
    are grouped by a 64-bit hash of their bytes, then checked equal to their group's first."""
    rows = np.ascontiguousarray(vectors)
    words = rows.view(np.uint8).reshape(len(rows), -1)
    pad = (-words.shape[1]) % 8
    if pad:
        words = np.concatenate([words, np.zeros((len(rows), pad), np.uint8)], axis=1)
    words = words.view(np.uint64)
    mult = (np.arange(words.shape[1], dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    h = (words * mult).sum(axis=1, dtype=np.uint64)  # wraps around: a hash, order-dependent
    _, first, group = np.unique(h, return_index=True, return_inverse=True)
    group = group.reshape(-1)
    if not np.array_equal(rows[first[group]], rows):  # a collision (never seen): sort the rows instead
        distinct, group = np.unique(rows, axis=0, return_inverse=True)
        return distinct, group.reshape(-1)
    by_first = np.argsort(first, kind="stable")
    renumber = np.empty(len(first), dtype=np.int64)
    renumber[by_first] = np.arange(len(first))
    return rows[first[by_first]], renumber[group]


def spherical_kmeans(vectors: np.ndarray, n_clusters: int, rounds: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(centroids (c, dim), cluster of each row) of unit (or zero) row vectors.

    Deterministic: the first centroid is row 0, each next one the row least similar to the
    centroids so far (farthest-point start: distinct texts get clusters of their own), then
    `rounds` rounds of assigning each row to its most similar centroid and re-centring
    (mean direction). Zero rows match every centroid equally (0): they go to cluster 0.
    """
    n = len(vectors)
    c = max(1, min(int(n_clusters), n))
    chosen = [0]
    best = matmul(vectors, vectors[0][:, None])[:, 0]
    for _ in range(1, c):
        nxt = int(np.argmin(best))
        if best[nxt] >= 1.0 - 1e-6:  # every row equals a centroid already: no more distinct ones
            break
        chosen.append(nxt)
        np.maximum(best, matmul(vectors, vectors[nxt][:, None])[:, 0], out=best)
    centroids = vectors[chosen].copy()
    assign = np.argmax(matmul(vectors, centroids.T), axis=1)
    for _ in range(rounds):
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, vectors)
        norm = np.sqrt(np.einsum("cd,cd->c", sums, sums))
        live = norm > 0
        centroids[live] = sums[live] / norm[live, None]
        assign = np.argmax(matmul(vectors, centroids.T), axis=1)
    return centroids, assign


def clustered_topk(
    user_vectors: np.ndarray,
    post_vectors: np.ndarray,
    prior: np.ndarray,
    k: int,
    *,
    tie_epsilon: float,
    n_clusters: int,
    n_probe: int,
    n_fallback: int,
    hidden: tuple[np.ndarray, np.ndarray],
    downranked: np.ndarray,
    downrank_factor: float,
    rounds: int = 3,
) -> np.ndarray:
    """(len(user_vectors), k) pool columns of the best scores, best first, -1 padded.

    user_vectors: (users, dim) and post_vectors: (pool, dim) unit (or zero) rows; prior:
    (pool,) R x F; the score is demote(prior x (cosine + tie_epsilon)). hidden: (row, col)
    cells never shown (the user's own posts, muted authors); downranked: (pool,) bool, the
    posts whose scores `demote` penalizes by `downrank_factor`.
    """
    n_u, n_p = len(user_vectors), len(post_vectors)
    out = empty_feed(n_u, k)
    if not n_u or not n_p or k <= 0:
        return out
    prior = np.asarray(prior, dtype=np.float32)
    eps = np.float32(tie_epsilon)
    # posts with the same vector (the same text) differ only by prior: each user meets a
    # vector once, and only its k best posts for the sign of (cosine + eps) can make a feed
    distinct, vec_of = distinct_rows(post_vectors)
    centroids, vec_cluster = spherical_kmeans(distinct, n_clusters, rounds)
    n_c = len(centroids)
    probe = min(int(n_probe), n_c)
    # the fallback: the posts of highest prior (ties: the newer), scored for every user
    n_fb = min(int(n_fallback), n_p) if probe < n_c else 0
    fb = np.sort(key_cols(top_keys(score_keys(prior, np.arange(n_p))[None, :], n_fb)[0])) if n_fb else np.zeros(0, int)
    in_fb = np.zeros(n_p, dtype=bool)
    in_fb[fb] = True
    hrow, hcol = hidden
    # candidates: a post is offered when it is among the k best of its vector for users on
    # either side of it (k more per hidden post a user may meet there)
    n_hidden = np.unique(hrow * len(distinct) + vec_of[hcol], return_counts=True)[1].max(initial=0)
    one = np.ones(n_p, dtype=np.float32)
    offered = np.zeros(n_p, dtype=bool)
    for sign in (one, -one):
        offered |= _best_per_vector(vec_of, _demoted(prior, sign, downranked, downrank_factor), k + int(n_hidden))
    offered &= ~in_fb
    cols_of = _group(np.flatnonzero(offered), vec_cluster[vec_of[offered]], n_c)  # ascending in each
    h_cluster = vec_cluster[vec_of[hcol]]
    h_order = np.argsort(h_cluster, kind="stable")  # hidden cells grouped by cluster
    hrow, hcol = hrow[h_order], hcol[h_order]
    h_bounds = np.searchsorted(h_cluster[h_order], np.arange(n_c + 1))
    if probe < n_c:
        sims = matmul(user_vectors, centroids.T)  # the best `probe` (ties: the higher cluster)
        probed = key_cols(best_keys(score_keys(sims, np.broadcast_to(np.arange(n_c), sims.shape)), probe))
    else:
        probed = np.broadcast_to(np.arange(n_c), (n_u, n_c))
    flat = probed.ravel()
    order = np.argsort(flat, kind="stable")  # (user, slot) pairs grouped by cluster, users ascending
    bounds = np.searchsorted(flat[order], np.arange(n_c + 1))
    # few vectors per cluster make thin products: then one product of every user with every vector
    all_cos = matmul(user_vectors, distinct.T) if len(distinct) < _THIN * n_c else None
    cand = np.full((n_u * probe, k), _NEG_INF_KEY, dtype=np.int64)  # k per (user, probed cluster)
    for c in range(n_c):
        pairs, cols = order[bounds[c] : bounds[c + 1]], cols_of[c]
        if not len(pairs) or not len(cols):
            continue
        rows = pairs // probe
        vecs, local = np.unique(vec_of[cols], return_inverse=True)
        cos = all_cos[rows][:, vecs] if all_cos is not None else matmul(user_vectors[rows], distinct[vecs].T)
        cos += eps
        scores = cos[:, local.reshape(-1)]
        scores *= prior[cols][None, :]
        lo, hi = h_bounds[c], h_bounds[c + 1]
        scores = _adjust(scores, rows, cols, hrow[lo:hi], hcol[lo:hi], downranked, downrank_factor)
        best = best_keys(score_keys(scores, np.broadcast_to(cols, scores.shape)), k)
        cand[pairs, : best.shape[1]] = best
    cand = cand.reshape(n_u, probe * k)
    if n_fb:
        used, local = np.unique(vec_of[fb], return_inverse=True)
        cos = all_cos[:, used] if all_cos is not None else matmul(user_vectors, distinct[used].T)
        cos += eps
        scores = cos[:, local.reshape(-1)] * prior[fb][None, :]
        scores = _adjust(scores, np.arange(n_u), fb, *hidden, downranked, downrank_factor)
        cand = np.concatenate([cand, score_keys(scores, np.broadcast_to(fb, scores.shape))], axis=1)
    best = top_keys(cand, k)
    out[:, : best.shape[1]] = np.where((best >> _ID_BITS) == (_NEG_INF_KEY >> 32), -1, key_cols(best))
    return out


def _demoted(prior: np.ndarray, sign: np.ndarray, downranked: np.ndarray, factor: float) -> np.ndarray:
    """The score of each post at cosine + eps = sign (+1 or -1): the order of a vector's
    posts for users on that side of it."""
    return demote(prior * sign, downranked, "factor", factor)


def _best_per_vector(vec_of: np.ndarray, score: np.ndarray, k: int) -> np.ndarray:
    """Whether each column is among the k best of its vector (score desc, then column desc)."""
    cols = np.arange(len(vec_of))
    order = np.lexsort((-cols, -score, vec_of))
    v = vec_of[order]
    best = np.zeros(len(vec_of), dtype=bool)
    best[order[np.arange(len(order)) - np.searchsorted(v, v) < k]] = True
    return best


def _group(items: np.ndarray, group: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """`items` split by `group` (0..n_groups-1), keeping their order within each group."""
    order = np.argsort(group, kind="stable")
    return np.split(items[order], np.searchsorted(group[order], np.arange(1, n_groups)))


def _adjust(scores, rows, cols, hrow, hcol, downranked, factor) -> np.ndarray:
    """Downrank and hide in a (rows, cols) block of scores; rows and cols ascending."""
    if downranked.any():
        scores = demote(scores, downranked[cols][None, :], "factor", factor)
    if len(hrow):
        r = np.minimum(np.searchsorted(rows, hrow), len(rows) - 1)
        c = np.minimum(np.searchsorted(cols, hcol), len(cols) - 1)
        hit = (rows[r] == hrow) & (cols[c] == hcol)
        scores[r[hit], c[hit]] = -np.inf
    return scores
