"""Repost trees: the tree parent of every post of a cascade, and depths and subtree sizes.

A cascade is the tree of reposts under one original post (OASIS paper, arXiv:2411.11581).
OASIS stores a repost of a repost against the root post, so the tree is either given by an
explicit parent (``cascade_parents``) or reconstructed from the follow graph and the share
times (``infer_repost_parents``). Everything is vectorized: the only loops run over tree depth
levels, pointer-jumping rounds or memory-bounded chunks. Ids follow ``metrics.arrays``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .arrays import FloatArray, IntArray, as_floats, as_ints, post_rows

__all__ = ["tree_depths", "subtree_sizes", "cascade_parents", "infer_repost_parents"]

# (root, author) pairs are packed into one int64 sort key below this product of sizes
_PAIR_KEY_LIMIT = 2**62


def tree_depths(parent: ArrayLike) -> tuple[IntArray, IntArray]:
    """Root node and depth of every node of a forest given as a parent array (-1 = root).

    Pointer jumping (Wyllie list ranking): each round doubles the jump of every node, so
    the whole forest is solved in ceil(log2(max depth)) vectorized rounds. Raises
    ValueError on an out-of-range parent or a cycle.
    """
    parent = as_ints(parent)
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
    parent = as_ints(parent)
    depth = tree_depths(parent)[1] if depth is None else as_ints(depth)
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
    pid = None if post_id is None else as_ints(post_id)
    root_ids = as_ints(post_root)
    own = np.arange(root_ids.size, dtype=np.int64) if pid is None else pid
    is_root = (root_ids < 0) | (root_ids == own)
    root_pos = post_rows(np.where(is_root, -1, root_ids), pid)
    if post_parent is None:
        parent_pos = root_pos
    else:
        par_ids = as_ints(post_parent)
        par_ids = np.where(par_ids == own, -1, par_ids)
        parent_pos = post_rows(par_ids, pid)
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
    pid = None if post_id is None else as_ints(post_id)
    root_ids, author, minute = as_ints(post_root), as_ints(post_author), as_floats(post_minute)
    n = root_ids.size
    rows = np.arange(n, dtype=np.int64)
    own = rows if pid is None else pid
    is_root = (root_ids < 0) | (root_ids == own)
    root_pos = np.where(is_root, rows, post_rows(np.where(is_root, -1, root_ids), pid))
    parent = np.where(is_root, -1, root_pos).astype(np.int64)
    reposts = np.flatnonzero(~is_root)
    if reposts.size == 0:
        return parent
    fsrc, fdst = as_ints(follow_src), as_ints(follow_dst)
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
