"""Cascade statistics and curves over a repost forest given as a parent array.

Definitions follow the OASIS paper (arXiv:2411.11581) and the Twitter15/16 propagation data
it compares against: *scale* is the number of unique users in a cascade (root author
included), *depth* the largest hop distance from the root, *max breadth* the largest number
of nodes at one depth >= 1 (so a lone root has breadth 0), and *structural virality* is Goel
et al. (2016, "The structural virality of online diffusion", Management Science 62(1)) mean
shortest-path distance over all pairs of nodes. Cost is O(n log n), no per-node Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .arrays import FloatArray, IntArray, as_floats, as_ints, run_starts
from .repost_trees import cascade_parents, subtree_sizes, tree_depths

__all__ = [
    "CascadeStats",
    "CascadeCurves",
    "cascade_stats",
    "cascade_stats_from_posts",
    "cascade_curves",
    "cascade_summary",
]


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
    parent = as_ints(parent)
    roots, cid, depth = _cascade_index(parent)
    n_casc = roots.size
    size = np.bincount(cid, minlength=n_casc).astype(np.int64)
    max_depth = np.zeros(n_casc, dtype=np.int64)
    np.maximum.at(max_depth, cid, depth)
    users = np.arange(parent.size, dtype=np.int64) if user is None else as_ints(user)
    o = np.lexsort((users, cid))
    scale = np.bincount(cid[o][run_starts(cid[o], users[o])], minlength=n_casc).astype(np.int64)
    breadth = np.zeros(n_casc, dtype=np.int64)
    deep = np.flatnonzero(depth > 0)
    o = deep[np.lexsort((depth[deep], cid[deep]))]
    starts = np.flatnonzero(run_starts(cid[o], depth[o]))
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
    parent = as_ints(parent)
    tm = as_floats(minute)
    roots, cid, depth = _cascade_index(parent)
    n_casc, width = roots.size, int(horizon) + 1
    rel = np.floor(tm - tm[roots][cid])
    keep = rel <= horizon
    rel = np.clip(np.nan_to_num(rel, nan=horizon + 1.0), 0, None).astype(np.int64)
    keep &= np.isfinite(tm)
    users = np.arange(parent.size, dtype=np.int64) if user is None else as_ints(user)
    idx = np.flatnonzero(keep)
    c, r, d, u = cid[idx], rel[idx], depth[idx], users[idx]

    o = np.lexsort((r, u, c))  # first appearance of each (cascade, user)
    first = run_starts(c[o], u[o])
    new_users = np.bincount(c[o][first] * width + r[o][first], minlength=n_casc * width)
    scale = np.cumsum(new_users.reshape(n_casc, width), axis=1)

    depth_c = np.zeros(n_casc * width, dtype=np.int64)
    np.maximum.at(depth_c, c * width + r, d)
    depth_c = np.maximum.accumulate(depth_c.reshape(n_casc, width), axis=1)

    breadth = np.zeros(n_casc * width, dtype=np.int64)
    sel = d > 0
    c2, r2, d2 = c[sel], r[sel], d[sel]
    o = np.lexsort((r2, d2, c2))
    starts = run_starts(c2[o], d2[o])
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
