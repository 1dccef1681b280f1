"""Society-level metric formulas over plain numpy arrays.

Every function here is pure and vectorized: it takes columnar arrays (ids, opinions, counts)
and never the platform object, so the same code serves the live simulation, a finished run's
SQLite journal and the tests. Cost is O(n log n) in the input size; there is no Python loop
per node, user or edge (the only loops run over tree depth levels or pointer-jumping rounds).

Conventions
-----------
* Ids are non-negative int64 positions (user ids index per-user arrays, post ids index
  per-post arrays) unless a function takes an explicit ``post_id`` array to map ids.
* NaN marks "unknown" in float inputs and is ignored; a metric that is undefined for the
  given input (too few values, zero variance) returns NaN rather than raising.

Cascade definitions follow the OASIS paper (arXiv:2411.11581) and the Twitter15/16
propagation data it compares against: a cascade is the tree of reposts under one original
post; *scale* is the number of unique users in it (root author included), *depth* the
largest hop distance from the root, *max breadth* the largest number of nodes at one depth
>= 1 (so a lone root has breadth 0), and *structural virality* is Goel et al. (2016, "The
structural virality of online diffusion", Management Science 62(1)) mean shortest-path
distance over all pairs of nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oasis_gym.actions import ACTION_NAMES, NUM_ACTIONS

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

#: Esteban & Ray (1994, Econometrica 62(4), "On the measurement of polarization") admit the
#: "polarization sensitivity" alpha in (0, 1.6]; 1.6 is the top of that range, the setting
#: that rewards within-group identification the most, and the common default in opinion-
#: dynamics papers that report ER polarization.
ESTEBAN_RAY_ALPHA = 1.6

# (root, author) pairs are packed into one int64 sort key below this product of sizes
_PAIR_KEY_LIMIT = 2**62

__all__ = [
    "CascadeStats",
    "CascadeCurves",
    "tree_depths",
    "subtree_sizes",
    "cascade_parents",
    "infer_repost_parents",
    "cascade_stats",
    "cascade_stats_from_posts",
    "cascade_curves",
    "cascade_summary",
    "opinion_mean",
    "opinion_std",
    "bimodality_coefficient",
    "esteban_ray_polarization",
    "opinion_shift_shares",
    "opinion_summary",
    "gini",
    "received_per_user",
    "opinion_assortativity",
    "neighbourhood_correlation",
    "misinformation_share",
    "cross_cutting_share",
    "feed_diversity",
    "herd_effect",
    "action_count_scalars",
    "ESTEBAN_RAY_ALPHA",
]


# --------------------------------------------------------------------------- helpers


def _ints(a: ArrayLike) -> IntArray:
    return np.asarray(a, dtype=np.int64).reshape(-1)


def _floats(a: ArrayLike) -> FloatArray:
    return np.asarray(a, dtype=np.float64).reshape(-1)


def _run_starts(*sorted_keys: NDArray[Any]) -> NDArray[np.bool_]:
    """True where a new run of equal key tuples begins in lexicographically sorted keys."""
    n = sorted_keys[0].size
    new = np.zeros(n, dtype=bool)
    if n:
        new[0] = True
        for k in sorted_keys:
            new[1:] |= k[1:] != k[:-1]
    return new


def _pearson(a: FloatArray, b: FloatArray) -> float:
    """Pearson correlation of paired finite values; NaN when undefined (n < 2 or no spread)."""
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if a.size < 2:
        return float("nan")
    da, db = a - a.mean(), b - b.mean()
    den = np.sqrt((da * da).sum() * (db * db).sum())
    return float((da * db).sum() / den) if den > 0 else float("nan")


def _positions(ids: IntArray, post_id: IntArray | None) -> IntArray:
    """Map post ids to row positions (ids < 0 stay -1). Without ``post_id``, ids are rows."""
    if post_id is None:
        return ids.copy()
    wanted = ids >= 0
    if post_id.size == 0:
        if wanted.any():
            raise ValueError("a referenced post id is not in post_id")
        return np.full(ids.size, -1, dtype=np.int64)
    order = np.argsort(post_id, kind="stable")
    sorted_ids = post_id[order]
    at = np.minimum(np.searchsorted(sorted_ids, ids), sorted_ids.size - 1)
    found = wanted & (sorted_ids[at] == ids)
    if np.any(wanted & ~found):
        raise ValueError("a referenced post id is not in post_id")
    return np.where(found, order[at], -1).astype(np.int64)


# --------------------------------------------------------------------------- cascade trees


@dataclass(frozen=True)
class CascadeStats:
    """Per-cascade statistics; row c describes the cascade rooted at node ``root[c]``."""

    root: IntArray
    size: IntArray
    scale: IntArray
    depth: IntArray
    max_breadth: IntArray
    structural_virality: FloatArray


@dataclass(frozen=True)
class CascadeCurves:
    """Cumulative curves, shape (n_cascades, horizon + 1); column t = t minutes after root."""

    root: IntArray
    scale: IntArray
    depth: IntArray
    max_breadth: IntArray


def tree_depths(parent: ArrayLike) -> tuple[IntArray, IntArray]:
    """Root node and depth of every node of a forest given as a parent array (-1 = root).

    Pointer jumping (Wyllie list ranking): each round doubles the jump of every node, so
    the whole forest is solved in ceil(log2(max depth)) vectorized rounds. Raises
    ValueError on an out-of-range parent or a cycle.
    """
    parent = _ints(parent)
    n = parent.size
    if np.any(parent >= n) or np.any(parent < -1):
        raise ValueError("parent ids must be -1 or a node index")
    is_root = parent < 0
    nxt = np.where(is_root, np.arange(n, dtype=np.int64), parent)
    dist = (~is_root).astype(np.int64)
    for _ in range(int(n).bit_length() + 1):
        jumped = nxt[nxt]
        if np.array_equal(jumped, nxt):
            break
        dist = dist + dist[nxt]
        nxt = jumped
    if n and not np.all(is_root[nxt]):
        raise ValueError("parent array contains a cycle")
    return nxt, dist


def subtree_sizes(parent: ArrayLike, depth: ArrayLike | None = None) -> IntArray:
    """Number of nodes in the subtree under each node (itself included).

    Children are folded into parents one depth level at a time, deepest first, so the
    loop runs max-depth times with O(level size) work each.
    """
    parent = _ints(parent)
    depth = tree_depths(parent)[1] if depth is None else _ints(depth)
    size = np.ones(parent.size, dtype=np.int64)
    if parent.size == 0:
        return size
    order = np.argsort(-depth, kind="stable")
    d_sorted = depth[order]
    cuts = np.flatnonzero(np.diff(d_sorted)) + 1
    for level in np.split(order, cuts):
        if depth[level[0]] == 0:
            break
        np.add.at(size, parent[level], size[level])
    return size


def cascade_parents(
    post_root: ArrayLike, post_parent: ArrayLike | None = None, *, post_id: ArrayLike | None = None
) -> IntArray:
    """Tree parent (row position, -1 for roots) of every post when the parent is explicit.

    ``post_root[i]`` is the id of the original post that post i spreads (-1, or i's own id,
    for an original). In OASIS a repost of a repost is stored against the root post, so
    the root alone does not give the tree; ``post_parent[i]`` is the post from which the
    reposter received it (-1 when unknown, which attaches the repost to the root, i.e. a
    star). Ids are row positions unless ``post_id`` maps them.
    """
    pid = None if post_id is None else _ints(post_id)
    root_ids = _ints(post_root)
    own = np.arange(root_ids.size, dtype=np.int64) if pid is None else pid
    is_root = (root_ids < 0) | (root_ids == own)
    root_pos = _positions(np.where(is_root, -1, root_ids), pid)
    if post_parent is None:
        parent_pos = root_pos
    else:
        par_ids = _ints(post_parent)
        par_ids = np.where(par_ids == own, -1, par_ids)
        parent_pos = _positions(par_ids, pid)
        parent_pos = np.where(parent_pos < 0, root_pos, parent_pos)
    return np.where(is_root, -1, parent_pos).astype(np.int64)


def _csr(src: IntArray, dst: IntArray, n: int) -> tuple[IntArray, IntArray]:
    order = np.argsort(src)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=offsets[1:])
    return offsets, dst[order]


def _expand_neighbours(users: IntArray, offsets: IntArray, nbrs: IntArray) -> tuple[IntArray, IntArray]:
    """(row index into ``users``, neighbour) for every out-edge of every user, vectorized."""
    counts = offsets[users + 1] - offsets[users]
    total = int(counts.sum())
    rows = np.repeat(np.arange(users.size, dtype=np.int64), counts)
    first = np.repeat(offsets[users] - (np.cumsum(counts) - counts), counts)
    return rows, nbrs[first + np.arange(total, dtype=np.int64)]


def infer_repost_parents(
    post_root: ArrayLike,
    post_author: ArrayLike,
    post_minute: ArrayLike,
    follow_src: ArrayLike,
    follow_dst: ArrayLike,
    *,
    post_id: ArrayLike | None = None,
    max_pairs: int = 4_000_000,
) -> IntArray:
    """Tree parent of every post when only root, author, time and the follow graph are known.

    A repost of root r by user u at minute t is attributed to the most recent earlier
    sharer of r (strictly earlier minute; same minute broken by the later row) whom u
    follows (edge u -> sharer in ``follow_src -> follow_dst``); if u follows none of them,
    to the root. This is the "most recent followed adopter" reconstruction used for
    retweet cascades whose API data only names the root (Twitter15/16-style trees, Goel et
    al. 2016, Vosoughi et al. 2018). The follow graph given is used for every repost, so
    pass the graph as of the reposts (the final graph adds edges made later).

    Vectorized as a sort-merge "as-of" join: the (repost, followee) pairs and all sharing
    events are sorted together by (root, author, minute) and each pair picks up the last
    event before it. ``max_pairs`` bounds the pairs held in memory at once.
    Returns row positions, -1 for roots.
    """
    pid = None if post_id is None else _ints(post_id)
    root_ids, author, minute = _ints(post_root), _ints(post_author), _floats(post_minute)
    n = root_ids.size
    rows = np.arange(n, dtype=np.int64)
    own = rows if pid is None else pid
    is_root = (root_ids < 0) | (root_ids == own)
    root_pos = np.where(is_root, rows, _positions(np.where(is_root, -1, root_ids), pid))
    parent = np.where(is_root, -1, root_pos).astype(np.int64)
    reposts = np.flatnonzero(~is_root)
    if reposts.size == 0:
        return parent
    fsrc, fdst = _ints(follow_src), _ints(follow_dst)
    n_users = int(max(author.max(initial=-1), fsrc.max(initial=-1), fdst.max(initial=-1))) + 1
    # only edges from a reposter to someone who shared anything can attribute a repost
    reposter, sharer = np.zeros(n_users, bool), np.zeros(n_users, bool)
    reposter[author[reposts]] = True
    sharer[author] = True
    useful = reposter[fsrc] & sharer[fdst]
    offsets, nbrs = _csr(fsrc[useful], fdst[useful], n_users)
    # chunk reposts (ordered by root, so a chunk touches few cascades) by pair budget
    reposts = reposts[np.argsort(root_pos[reposts], kind="stable")]
    deg = offsets[author[reposts] + 1] - offsets[author[reposts]]
    chunk_id = np.cumsum(deg) // max(int(max_pairs), 1)
    for chunk in np.split(reposts, np.flatnonzero(np.diff(chunk_id)) + 1):
        _attribute_chunk(chunk, root_pos, author, minute, offsets, nbrs, parent, n_users)
    return parent


def _attribute_chunk(
    chunk: IntArray,
    root_pos: IntArray,
    author: IntArray,
    minute: FloatArray,
    offsets: IntArray,
    nbrs: IntArray,
    parent: IntArray,
    n_users: int,
) -> None:
    """Fill ``parent`` for the reposts in ``chunk`` (see infer_repost_parents)."""
    q_row, q_followee = _expand_neighbours(author[chunk], offsets, nbrs)
    if q_row.size == 0:
        return
    q_post = chunk[q_row]
    in_chunk = np.zeros(root_pos.size, bool)
    in_chunk[root_pos[chunk]] = True
    events = np.flatnonzero(in_chunk[root_pos])
    k_root = np.concatenate([root_pos[q_post], root_pos[events]])
    k_auth = np.concatenate([q_followee, author[events]])
    k_min = np.concatenate([minute[q_post], minute[events]])
    # tie key: queries (-1) sort before events at an equal minute -> strict "earlier";
    # events sort by row so the later row of one minute is the more recent share
    k_tie = np.concatenate([np.full(q_post.size, -1, np.int64), events])
    if root_pos.size * n_users < _PAIR_KEY_LIMIT:  # one int64 key for (root, author)
        k_pair = k_root * n_users + k_auth
        order = np.lexsort((k_tie, k_min, k_pair))
    else:
        k_pair = None
        order = np.lexsort((k_tie, k_min, k_auth, k_root))
    is_event = k_tie[order] >= 0
    last = np.maximum.accumulate(np.where(is_event, np.arange(order.size), -1))
    q_at = np.flatnonzero(~is_event)
    cand = last[q_at]
    ok = cand >= 0
    a, b = order[np.where(ok, cand, 0)], order[q_at]
    if k_pair is not None:
        same = ok & (k_pair[a] == k_pair[b])
    else:
        same = ok & (k_root[a] == k_root[b]) & (k_auth[a] == k_auth[b])
    rep = q_post[b[same]]  # b < q_post.size: the query block
    ev_post = events[a[same] - q_post.size]
    # per repost keep the most recent matching sharer (latest minute, then latest row)
    best = np.lexsort((ev_post, minute[ev_post], rep))
    rep, ev_post = rep[best], ev_post[best]
    last_of_rep = np.r_[rep[1:] != rep[:-1], True] if rep.size else np.zeros(0, bool)
    parent[rep[last_of_rep]] = ev_post[last_of_rep]


def _cascade_index(parent: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """(root rows sorted, cascade index per node, depth per node)."""
    root_of, depth = tree_depths(parent)
    roots = np.flatnonzero(parent < 0)
    return roots, np.searchsorted(roots, root_of), depth


def cascade_stats(parent: ArrayLike, user: ArrayLike | None = None) -> CascadeStats:
    """Scale, depth, max breadth and structural virality of every cascade in a forest.

    ``parent`` holds each node's tree parent (-1 for a cascade root); ``user`` the user
    behind each node (defaults to one user per node, so scale = size). Structural virality
    (Goel et al. 2016) is the mean distance over all pairs, computed in O(n) from subtree
    sizes: every edge whose lower side holds s of the n nodes lies on s*(n-s) of the
    shortest paths, so W = 2/(n(n-1)) * sum_edges s*(n-s). It is NaN for a lone root.
    """
    parent = _ints(parent)
    roots, cid, depth = _cascade_index(parent)
    n_casc = roots.size
    size = np.bincount(cid, minlength=n_casc).astype(np.int64)
    max_depth = np.zeros(n_casc, dtype=np.int64)
    np.maximum.at(max_depth, cid, depth)
    users = np.arange(parent.size, dtype=np.int64) if user is None else _ints(user)
    o = np.lexsort((users, cid))
    scale = np.bincount(cid[o][_run_starts(cid[o], users[o])], minlength=n_casc).astype(np.int64)
    breadth = np.zeros(n_casc, dtype=np.int64)
    deep = np.flatnonzero(depth > 0)
    o = deep[np.lexsort((depth[deep], cid[deep]))]
    starts = np.flatnonzero(_run_starts(cid[o], depth[o]))
    np.maximum.at(breadth, cid[o][starts], np.diff(np.r_[starts, o.size]))
    sub = subtree_sizes(parent, depth)
    n_of = size[cid].astype(np.float64)
    edge_w = np.where(parent >= 0, sub * (n_of - sub), 0.0)
    pair_sum = np.bincount(cid, weights=edge_w, minlength=n_casc)
    nf = size.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        sv = np.where(size >= 2, 2.0 * pair_sum / (nf * (nf - 1.0)), np.nan)
    return CascadeStats(roots, size, scale, max_depth, breadth, sv)


def cascade_stats_from_posts(
    post_root: ArrayLike,
    post_author: ArrayLike,
    post_parent: ArrayLike | None = None,
    *,
    post_id: ArrayLike | None = None,
) -> CascadeStats:
    """cascade_stats over a post table: roots are originals, reposts hang on ``post_parent``.

    ``root`` in the result holds row positions of the original posts.
    """
    parent = cascade_parents(post_root, post_parent, post_id=post_id)
    return cascade_stats(parent, post_author)


def cascade_curves(parent: ArrayLike, minute: ArrayLike, horizon: int, user: ArrayLike | None = None) -> CascadeCurves:
    """Cumulative scale / depth / max-breadth curves per cascade over minutes since the root.

    Column t counts every node whose time is at most t minutes after its root (fractional
    minutes are floored; nodes before the root count at 0; nodes after ``horizon`` are
    left out). Same definitions as cascade_stats, so the last column equals the final
    statistics when nothing falls beyond the horizon. Memory is n_cascades x (horizon + 1).
    """
    parent = _ints(parent)
    tm = _floats(minute)
    roots, cid, depth = _cascade_index(parent)
    n_casc, width = roots.size, int(horizon) + 1
    rel = np.floor(tm - tm[roots][cid])
    keep = rel <= horizon
    rel = np.clip(np.nan_to_num(rel, nan=horizon + 1.0), 0, None).astype(np.int64)
    keep &= np.isfinite(tm)
    users = np.arange(parent.size, dtype=np.int64) if user is None else _ints(user)
    idx = np.flatnonzero(keep)
    c, r, d, u = cid[idx], rel[idx], depth[idx], users[idx]

    o = np.lexsort((r, u, c))  # first appearance of each (cascade, user)
    first = _run_starts(c[o], u[o])
    new_users = np.bincount(c[o][first] * width + r[o][first], minlength=n_casc * width)
    scale = np.cumsum(new_users.reshape(n_casc, width), axis=1)

    depth_c = np.zeros(n_casc * width, dtype=np.int64)
    np.maximum.at(depth_c, c * width + r, d)
    depth_c = np.maximum.accumulate(depth_c.reshape(n_casc, width), axis=1)

    breadth = np.zeros(n_casc * width, dtype=np.int64)
    sel = d > 0
    c2, r2, d2 = c[sel], r[sel], d[sel]
    o = np.lexsort((r2, d2, c2))
    starts = _run_starts(c2[o], d2[o])
    start_pos = np.maximum.accumulate(np.where(starts, np.arange(o.size), 0))
    running = np.arange(o.size) - start_pos + 1  # level size reached at this node's time
    np.maximum.at(breadth, c2[o] * width + r2[o], running)
    breadth = np.maximum.accumulate(breadth.reshape(n_casc, width), axis=1)
    return CascadeCurves(roots, scale.astype(np.int64), depth_c, breadth)


def cascade_summary(stats: CascadeStats, prefix: str = "cascade/", min_size: int = 2) -> dict[str, float]:
    """Scalars for logging: count, max scale/depth/breadth, mean/max structural virality.

    Structural virality is averaged over cascades with at least ``min_size`` nodes (a lone
    root has none); values are NaN when no cascade qualifies.
    """
    n = stats.root.size
    big = stats.size >= max(min_size, 2)
    sv = stats.structural_virality[big]
    out = {
        "count": float(n),
        "spread_count": float(np.count_nonzero(stats.size >= 2)),
        "max_scale": float(stats.scale.max()) if n else float("nan"),
        "mean_scale": float(stats.scale.mean()) if n else float("nan"),
        "max_depth": float(stats.depth.max()) if n else float("nan"),
        "max_breadth": float(stats.max_breadth.max()) if n else float("nan"),
        "mean_structural_virality": float(sv.mean()) if sv.size else float("nan"),
        "max_structural_virality": float(sv.max()) if sv.size else float("nan"),
    }
    return {prefix + k: v for k, v in out.items()}


# --------------------------------------------------------------------------- opinions


def opinion_mean(opinion: ArrayLike) -> float:
    """Bias: mean opinion over users with a known (finite) opinion."""
    x = _floats(opinion)
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else float("nan")


def opinion_std(opinion: ArrayLike) -> float:
    """Diversity: population standard deviation (ddof=0) of the known opinions."""
    x = _floats(opinion)
    x = x[np.isfinite(x)]
    return float(x.std()) if x.size else float("nan")


def bimodality_coefficient(opinion: ArrayLike) -> float:
    """Sample bimodality coefficient BC = (G1^2 + 1) / (G2 + 3(n-1)^2 / ((n-2)(n-3))).

    G1 and G2 are the bias-corrected sample skewness and excess kurtosis (the SAS / Pfister
    et al. 2013, Front. Psychol. 4:700 form): G1 = sqrt(n(n-1))/(n-2) * g1 and
    G2 = (n-1)/((n-2)(n-3)) * ((n+1) g2 + 6) with g1 = m3/m2^1.5, g2 = m4/m2^2 - 3.
    BC > 5/9 (the uniform's value) hints at a bimodal distribution; 1 is two point masses.
    NaN for n < 4 or zero variance.
    """
    x = _floats(opinion)
    x = x[np.isfinite(x)]
    n = x.size
    if n < 4:
        return float("nan")
    d = x - x.mean()
    m2, m3, m4 = (d**2).mean(), (d**3).mean(), (d**4).mean()
    if m2 <= 0:
        return float("nan")
    g1, g2 = m3 / m2**1.5, m4 / m2**2 - 3.0
    skew = np.sqrt(n * (n - 1.0)) / (n - 2.0) * g1
    kurt = (n - 1.0) / ((n - 2.0) * (n - 3.0)) * ((n + 1.0) * g2 + 6.0)
    return float((skew**2 + 1.0) / (kurt + 3.0 * (n - 1.0) ** 2 / ((n - 2.0) * (n - 3.0))))


def esteban_ray_polarization(
    opinion: ArrayLike,
    *,
    bins: int | ArrayLike = 10,
    value_range: tuple[float, float] = (-1.0, 1.0),
    alpha: float = ESTEBAN_RAY_ALPHA,
) -> float:
    """Esteban-Ray polarization P = K * sum_i sum_j pi_i^(1+alpha) pi_j |y_i - y_j|.

    Opinions are binned (``bins`` equal bins over ``value_range``, or explicit edges;
    values outside the range are clipped into the end bins); pi_i is the share of users in
    bin i and y_i its centre. K = 2^(1+alpha) / (y_last - y_first) scales the result so that
    an even split between the two end bins, the most polarized histogram, scores 1 and a
    single group scores 0. ``alpha`` defaults to 1.6, the top of Esteban & Ray's range.
    """
    x = _floats(opinion)
    x = x[np.isfinite(x)]
    if np.ndim(bins) == 0:
        edges = np.linspace(value_range[0], value_range[1], int(bins) + 1)
    else:
        edges = _floats(bins)
    if x.size == 0 or edges.size < 3:
        return float("nan") if x.size == 0 else 0.0
    counts, _ = np.histogram(np.clip(x, edges[0], edges[-1]), bins=edges)
    pi = counts / counts.sum()
    y = 0.5 * (edges[:-1] + edges[1:])
    span = y[-1] - y[0]
    k = 2.0 ** (1.0 + alpha) / span
    return float(k * ((pi ** (1.0 + alpha))[:, None] * pi[None, :] * np.abs(y[:, None] - y[None, :])).sum())


def opinion_shift_shares(before: ArrayLike, after: ArrayLike, tol: float = 0.0) -> tuple[float, float]:
    """Shares of users moved toward the extremes and toward moderation between two snapshots.

    Extremes: |after| > |before| + tol; moderation: |after| < |before| - tol (opinions
    centred on 0). Shares are over users with both opinions known; NaN if there are none.
    """
    x0, x1 = _floats(before), _floats(after)
    ok = np.isfinite(x0) & np.isfinite(x1)
    if not ok.any():
        return float("nan"), float("nan")
    a0, a1 = np.abs(x0[ok]), np.abs(x1[ok])
    return float(np.mean(a1 > a0 + tol)), float(np.mean(a1 < a0 - tol))


def opinion_summary(opinion: ArrayLike, prefix: str = "opinion/", **er_kwargs: Any) -> dict[str, float]:
    """Scalars for logging: mean, std, bimodality coefficient, Esteban-Ray polarization."""
    return {
        prefix + "mean": opinion_mean(opinion),
        prefix + "std": opinion_std(opinion),
        prefix + "bimodality": bimodality_coefficient(opinion),
        prefix + "esteban_ray": esteban_ray_polarization(opinion, **er_kwargs),
    }


# --------------------------------------------------------------------------- network


def gini(values: ArrayLike) -> float:
    """Gini coefficient of non-negative amounts (followers, likes received, impressions).

    G = sum_i (2i - n - 1) x_(i) / (n sum x) over ascending x_(1..n): 0 when everyone has
    the same, (n-1)/n when one holds everything. 0 for an all-zero vector, NaN when empty.
    """
    x = _floats(values)
    x = x[np.isfinite(x)]
    n = x.size
    if n == 0:
        return float("nan")
    if np.any(x < 0):
        raise ValueError("gini needs non-negative values")
    total = x.sum()
    if total == 0:
        return 0.0
    x = np.sort(x)
    i = np.arange(1, n + 1, dtype=np.float64)
    return float(((2.0 * i - n - 1.0) * x).sum() / (n * total))


def received_per_user(recipient: ArrayLike, n_users: int, amount: ArrayLike | None = None) -> FloatArray:
    """Total ``amount`` (default 1 each) received per user, e.g. likes on each author's posts.

    Feed it the author of every liked post (or of every impression) to get the attention
    vector whose Gini measures attention inequality.
    """
    w = None if amount is None else _floats(amount)
    return np.bincount(_ints(recipient), weights=w, minlength=int(n_users)).astype(np.float64)


def opinion_assortativity(src: ArrayLike, dst: ArrayLike, opinion: ArrayLike) -> float:
    """Pearson correlation of the opinions at the two ends of directed follow edges.

    Positive values mean users follow like-minded users (an echo-chamber signal; Newman
    2003 assortative mixing by a scalar property). Edges with an unknown end are skipped.
    """
    op = _floats(opinion)
    return _pearson(op[_ints(src)], op[_ints(dst)])


def neighbourhood_correlation(src: ArrayLike, dst: ArrayLike, opinion: ArrayLike) -> float:
    """Correlation between a user's opinion and the mean opinion of the users they follow.

    Edges run follower (``src``) -> followee (``dst``). Users without a followee with a
    known opinion are left out (Cinelli et al. 2021, PNAS, echo-chamber "leaning vs
    neighbourhood leaning").
    """
    op = _floats(opinion)
    s, d = _ints(src), _ints(dst)
    v = op[d]
    ok = np.isfinite(v)
    n = op.size
    cnt = np.bincount(s[ok], minlength=n)
    tot = np.bincount(s[ok], weights=v[ok], minlength=n)
    has = cnt > 0
    return _pearson(op[has], tot[has] / cnt[has])


# --------------------------------------------------------------------------- exposure


def misinformation_share(impression_post: ArrayLike, post_is_misinfo: ArrayLike) -> float:
    """Share of impressions that showed misinformation.

    ``post_is_misinfo`` is per post: bool, or float with NaN for unlabelled posts
    (impressions of unlabelled posts are left out of numerator and denominator).
    """
    lab = _floats(post_is_misinfo)[_ints(impression_post)]
    lab = lab[np.isfinite(lab)]
    return float((lab != 0).mean()) if lab.size else float("nan")


def cross_cutting_share(
    impression_viewer: ArrayLike, impression_post: ArrayLike, viewer_opinion: ArrayLike, post_stance: ArrayLike
) -> float:
    """Share of impressions whose post stance has the opposite sign to the viewer's opinion.

    Impressions where either side is 0 (neutral) or NaN (unknown) are left out (Bakshy et
    al. 2015, Science, cross-cutting exposure).
    """
    a = np.sign(_floats(viewer_opinion)[_ints(impression_viewer)])
    b = np.sign(_floats(post_stance)[_ints(impression_post)])
    ok = np.isfinite(a) & np.isfinite(b) & (a != 0) & (b != 0)
    return float((a[ok] != b[ok]).mean()) if ok.any() else float("nan")


def feed_diversity(impression_viewer: ArrayLike, impression_post: ArrayLike, post_stance: ArrayLike) -> float:
    """Mean over viewers of the standard deviation (ddof=0) of the stances they were shown.

    Stance spread, rather than author entropy, is chosen because it measures exposure to
    differing views, which is what echo-chamber questions ask; a feed of many authors who
    agree scores 0. Viewers with fewer than two impressions of known stance are left out.
    """
    v = _ints(impression_viewer)
    s = _floats(post_stance)[_ints(impression_post)]
    ok = np.isfinite(s)
    v, s = v[ok], s[ok]
    if v.size == 0:
        return float("nan")
    n = int(v.max()) + 1
    cnt = np.bincount(v, minlength=n)
    mean = np.bincount(v, weights=s, minlength=n) / np.maximum(cnt, 1)
    var = np.bincount(v, weights=(s - mean[v]) ** 2, minlength=n) / np.maximum(cnt, 1)
    has = cnt >= 2
    return float(np.sqrt(var[has]).mean()) if has.any() else float("nan")


# --------------------------------------------------------------------------- herd effect


def herd_effect(group: ArrayLike, score: ArrayLike) -> dict[str, float]:
    """Mean score per treatment group (Muchnik et al. 2013, Science, "Social influence bias").

    ``group`` labels each item (e.g. "up", "down", "control" for comments whose first vote
    was seeded up, down or not at all); ``score`` is the item's final likes - dislikes.
    Items with a NaN score are left out. Keys are the labels as strings.
    """
    g = np.asarray(group).reshape(-1)
    sc = _floats(score)
    ok = np.isfinite(sc)
    labels, inv = np.unique(g[ok], return_inverse=True)
    sums = np.bincount(inv, weights=sc[ok], minlength=labels.size)
    cnt = np.bincount(inv, minlength=labels.size)
    return {str(lab): float(s / c) for lab, s, c in zip(labels.tolist(), sums, cnt)}


# --------------------------------------------------------------------------- actions


def action_count_scalars(action_type: ArrayLike, prefix: str = "actions/") -> dict[str, float]:
    """Count of each action code in one step, one tag per action (zeros included).

    Every action always gets a tag so the TensorBoard/SQLite series have no gaps.
    """
    codes = _ints(action_type)
    counts = np.bincount(codes[(codes >= 0) & (codes < NUM_ACTIONS)], minlength=NUM_ACTIONS)
    return {prefix + name: float(c) for name, c in zip(ACTION_NAMES, counts)}
