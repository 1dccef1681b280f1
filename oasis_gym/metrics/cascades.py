"""Cascades: the incremental repost forest of a running simulation and the per-minute curves.

A repost or quote of post r by user u attaches to the most recent earlier sharer
of r that u follows *at the time of the share*, else to r (formulas.infer_repost_parents
with the graph as of each share); a repost of a quote hangs under the quote, so every
cascade is rooted at an original post. The ``cascade_curve(post_id, minute, scale, depth,
max_breadth)`` table holds, for every post that was ever tracked, its cumulative curve at
every minute since the root was posted (``MetricsRecorder`` writes it; ``read_cascade_curves``
reads it back).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..platform.platform import ORIGINAL
from ..platform.store import GrowArray, PairSet, pair_keys, unpack_keys
from . import formulas as F

if TYPE_CHECKING:  # pragma: no cover
    from ..platform import Platform

__all__ = ["CascadeForest", "CASCADE_CURVE_SCHEMA", "CASCADE_TREE_SCHEMA", "read_cascade_curves"]

IntArray = NDArray[np.int64]

CASCADE_CURVE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS cascade_curve (post_id INTEGER, minute INTEGER, scale INTEGER,"
    " depth INTEGER, max_breadth INTEGER, PRIMARY KEY (post_id, minute))"
)
# The tree parent the forest gave each share, as of the share: the follow graph it was
# attributed with is gone after unfollows, so a resumed run reads the parents back.
CASCADE_TREE_SCHEMA = "CREATE TABLE IF NOT EXISTS cascade_tree (post_id INTEGER PRIMARY KEY, parent_id INTEGER)"

_HIGH = np.int64(32)


# --------------------------------------------------------------------------- small structures


def _expand_ranges(lo: IntArray, hi: IntArray) -> tuple[IntArray, IntArray]:
    """(row, position) for every position in [lo[row], hi[row]), vectorized."""
    counts = np.maximum(hi - lo, 0)
    rows = np.repeat(np.arange(lo.size, dtype=np.int64), counts)
    start = np.repeat(lo - (np.cumsum(counts) - counts), counts)
    return rows, start + np.arange(int(counts.sum()), dtype=np.int64)


class _IntMap:
    """int64 key -> int64 value with vectorized get / set, stored LSM-style.

    A sorted base plus a small sorted delta that is merged into the base once it outgrows a
    sixteenth of it, so a batch of k updates costs O(k log k + delta) amortized instead of
    rewriting the whole map. Keys are packed pairs (``pair_keys``), so all entries of one
    first id form a contiguous range: `prefix_items` lists them.
    """

    def __init__(self) -> None:
        empty = np.empty(0, dtype=np.int64)
        self._bk, self._bv, self._dk, self._dv = empty, empty, empty, empty

    def __len__(self) -> int:
        return int(self._bk.size + self._dk.size)  # upper bound: a key may sit in both parts

    def get(self, keys: ArrayLike, default: int = -1) -> IntArray:
        keys = np.asarray(keys, dtype=np.int64)
        out = np.full(keys.shape, default, dtype=np.int64)
        for k, v in ((self._bk, self._bv), (self._dk, self._dv)):  # delta last: it wins
            if k.size:
                pos = np.minimum(np.searchsorted(k, keys), k.size - 1)
                hit = k[pos] == keys
                out[hit] = v[pos[hit]]
        return out

    def set(self, keys: ArrayLike, values: ArrayLike) -> None:
        """Store values; of equal keys in one call the last wins, and new values replace old."""
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        if not keys.size:
            return
        self._dk, self._dv = _merge_last(
            np.r_[self._dk, keys], np.r_[self._dv, np.asarray(values, dtype=np.int64).reshape(-1)]
        )
        if self._dk.size > max(4096, self._bk.size >> 4):
            self._bk, self._bv = _merge_last(np.r_[self._bk, self._dk], np.r_[self._bv, self._dv])
            self._dk, self._dv = self._dk[:0], self._dv[:0]

    def prefix_count(self, first: IntArray) -> IntArray:
        """Number of stored entries whose key's first id is ``first`` (upper bound)."""
        lo, hi = first << _HIGH, (first + 1) << _HIGH
        return sum(
            (np.searchsorted(k, hi) - np.searchsorted(k, lo) for k in (self._bk, self._dk)),
            np.zeros(first.size, dtype=np.int64),
        )

    def prefix_items(self, first: IntArray) -> tuple[IntArray, IntArray, IntArray]:
        """(row into ``first``, second id, value) of every entry under each first id."""
        out = []
        lo, hi = first << _HIGH, (first + 1) << _HIGH
        for k, v in ((self._bk, self._bv), (self._dk, self._dv)):
            rows, pos = _expand_ranges(np.searchsorted(k, lo), np.searchsorted(k, hi))
            out.append((rows, unpack_keys(k[pos])[1], v[pos]))
        return tuple(np.concatenate(parts) for parts in zip(*out))  # type: ignore[return-value]


def _merge_last(keys: IntArray, values: IntArray) -> tuple[IntArray, IntArray]:
    """Sort by key keeping, of equal keys, the value that came last."""
    order = np.argsort(keys, kind="stable")
    k, v = keys[order], values[order]
    last = np.r_[k[1:] != k[:-1], True] if k.size else np.zeros(0, bool)
    return k[last], v[last]


def _grow(col: GrowArray, n: int) -> None:
    if n > len(col):
        col.append_fill(n - len(col))


# --------------------------------------------------------------------------- cascades


class CascadeForest:
    """Incremental repost forest over every post of a platform, with per-cascade statistics.

    `update(platform)` takes the posts created since the previous call: originals become
    cascade roots; a share (repost or quote, ``p_root >= 0``) gets its tree parent by the
    rule of formulas.infer_repost_parents, using the follow graph as it is now (the graph
    as of the share). Per cascade (indexed by its root post id) it keeps size (nodes),
    scale (unique users), depth, max breadth and the two sums that give structural virality
    without a tree walk: with s_v the subtree size under node v, the pair-distance sum is
    W = n * sum_v s_v - sum_v s_v^2 over non-root nodes (each edge lies on s(n-s) paths),
    and SV = 2W / (n(n-1)) (Goel et al. 2016). Adding a node only changes s on its path to
    the root, so a step costs O(new posts x depth), never O(all posts).
    """

    def __init__(self, sharer_scan: int = 1024) -> None:
        self.sharer_scan = int(sharer_scan)  # earlier sharers a share may check against the follow set
        self.n_seen = 0
        self.parent = GrowArray(np.int64, fill=-1)
        self.top = GrowArray(np.int64, fill=-1)  # cascade root of each post
        self.depth = GrowArray(np.int64)
        self.sub = GrowArray(np.int64)  # subtree size
        # per cascade, indexed by the root post id (meaningful for roots only)
        self.size = GrowArray(np.int64)
        self.scale = GrowArray(np.int64)
        self.max_depth = GrowArray(np.int64)
        self.max_breadth = GrowArray(np.int64)
        self.depth_sum = GrowArray(np.int64)  # sum_v s_v = sum of node depths
        self.sq_sum = GrowArray(np.int64)  # sum_v s_v^2
        self._latest = _IntMap()  # (shared post, sharer) -> latest share id
        self._levels = _IntMap()  # (cascade, depth) -> nodes at that depth
        self._users = PairSet()  # (cascade, sharer) pairs, root authors aside
        # running aggregates over cascades with at least one share
        self.spread_count = 0
        self.scale_sum = 0.0
        self.sv_sum = 0.0
        self.best = {"scale": 0, "depth": 0, "max_breadth": 0}
        self.top_ids = np.empty(0, dtype=np.int64)  # largest cascades, best first

    # ---------------------------------------------------------------- update
    def update(self, pf: Platform, n_top: int = 0, parents: IntArray | None = None) -> tuple[IntArray, int]:
        """Fold the posts created since the last call in; returns (touched cascades, new shares).

        Posts of different minutes (a forest built over a resumed or pre-filled platform) are
        folded in minute by minute, so each share only sees strictly earlier sharers.
        `parents` (by post id, -1: unknown) gives the shares' parents as attributed before
        (a resumed run's cascade_tree); the others are attributed now."""
        n0, n1 = self.n_seen, pf.n_posts
        if n1 <= n0:
            return np.empty(0, dtype=np.int64), 0
        for col in (
            self.parent,
            self.top,
            self.depth,
            self.sub,
            self.size,
            self.scale,
            self.max_depth,
            self.max_breadth,
            self.depth_sum,
            self.sq_sum,
        ):
            _grow(col, n1)
        minute = pf.p_minute.a[n0:n1]
        cuts = (n0 + np.flatnonzero(minute[1:] != minute[:-1]) + 1).tolist()
        touched, new_shares = [], 0
        for lo, hi in zip([n0, *cuts], [*cuts, n1]):
            t, k = self._update_batch(pf, np.arange(lo, hi, dtype=np.int64), parents)
            touched.append(t)
            new_shares += k
            self.n_seen = hi
        touched = np.unique(np.concatenate(touched))
        if n_top:
            self._update_top(touched, n_top)
        return touched, new_shares

    def _update_batch(self, pf: Platform, ids: IntArray, parents: IntArray | None = None) -> tuple[IntArray, int]:
        """Fold in the posts `ids` (one minute)."""
        root = pf.p_root.a[ids]
        is_share = (pf.p_kind.a[ids] != ORIGINAL) & (root >= 0)
        orig, shares = ids[~is_share], ids[is_share]
        self._add_roots(orig)
        if shares.size:
            known = parents[shares] if parents is not None else np.full(shares.size, -1, dtype=np.int64)
            todo = known < 0
            if todo.any():
                known[todo] = self._attribute(pf, shares[todo])
            self.parent.a[shares] = known
            self._place(shares)
            self._latest.set(pair_keys(pf.p_root.a[shares], pf.p_author.a[shares]), shares)
        touched = np.unique(self.top.a[shares])
        before = (self.virality(touched), self.scale.a[touched].copy(), self.size.a[touched] >= 2)
        self._add_shares(pf, shares)
        self._update_aggregates(touched, *before)
        return touched, int(shares.size)

    def _add_roots(self, orig: IntArray) -> None:
        self.top.a[orig] = orig
        self.size.a[orig] = 1
        self.scale.a[orig] = 1
        self.sub.a[orig] = 1
        if orig.size:
            self.best["scale"] = max(self.best["scale"], 1)

    def _attribute(self, pf: Platform, shares: IntArray) -> IntArray:
        """Tree parent of each share: the latest earlier share of the same post by a user the
        sharer follows, else the shared post. Per share, one side is enumerated: the post's
        earlier sharers (checked against the follow set), or, for a post with more than
        max(sharer_scan, the user's followee count) sharers, the user's followees (looked up in
        the sharer map), so a viral post costs at most the user's followees."""
        r, u = pf.p_root.a[shares], pf.p_author.a[shares]
        minute = pf.p_minute.a[shares]
        best = np.full(shares.size, -1, dtype=np.int64)
        n_sharers = self._latest.prefix_count(r)
        deg = pf.u_followings.a[u]
        # enumerating followees needs the follow set's adjacency (a full merge of its pending
        # inserts), so it is only worth it against a post with very many sharers
        by_followees = (n_sharers > np.maximum(deg, self.sharer_scan)) & (deg > 0)
        by_sharers = (n_sharers > 0) & (deg > 0) & ~by_followees
        i = np.flatnonzero(by_sharers)
        if i.size:
            row, sharer, share = self._latest.prefix_items(r[i])
            ok = pf.rel["follow"].contains(u[i][row], sharer) & (pf.p_minute.a[share] < minute[i][row])
            np.maximum.at(best, i[row[ok]], share[ok])
        j = np.flatnonzero(by_followees)
        if j.size:
            row, followee = pf.followees(u[j])
            share = self._latest.get(pair_keys(r[j][row], followee))
            ok = share >= 0
            ok[ok] = pf.p_minute.a[share[ok]] < minute[j][row[ok]]
            np.maximum.at(best, j[row[ok]], share[ok])
        return np.where(best >= 0, best, r)

    def _place(self, shares: IntArray) -> None:
        """Depth and cascade of each share, in generations (a parent created in this same
        batch is placed first)."""
        parent, top, depth = self.parent.a, self.top.a, self.depth.a
        todo = shares
        while todo.size:
            p = parent[todo]
            ready = top[p] >= 0
            if not ready.any():
                raise RuntimeError("repost parents form a cycle or point to unknown posts")
            done = todo[ready]
            depth[done] = depth[p[ready]] + 1
            top[done] = top[p[ready]]
            todo = todo[~ready]

    def _add_shares(self, pf: Platform, shares: IntArray) -> None:
        if not shares.size:
            return
        top, depth, parent, sub = self.top.a[shares], self.depth.a[shares], self.parent.a, self.sub.a
        np.add.at(self.size.a, top, 1)
        np.add.at(self.depth_sum.a, top, depth)
        np.maximum.at(self.max_depth.a, top, depth)
        author = pf.p_author.a[shares]
        other = author != pf.p_author.a[top]  # the root's author is already in its scale
        keys = np.unique(pair_keys(top[other], author[other]))
        new = keys[~self._users.contains_keys(keys)]
        self._users.add_keys(new)
        np.add.at(self.scale.a, unpack_keys(new)[0], 1)
        level, count = np.unique(pair_keys(top, depth), return_counts=True)
        count = self._levels.get(level, 0) + count
        self._levels.set(level, count)
        np.maximum.at(self.max_breadth.a, unpack_keys(level)[0], count)
        # every new node adds 1 to its own subtree and to each non-root ancestor's
        path, a = [], shares
        while a.size:
            path.append(a)
            a = parent[a]
            a = a[parent[a] >= 0]
        v, c = np.unique(np.concatenate(path), return_counts=True)
        old = sub[v]
        np.add.at(self.sq_sum.a, self.top.a[v], (old + c) ** 2 - old**2)
        sub[v] = old + c

    def _update_aggregates(
        self, touched: IntArray, old_sv: np.ndarray, old_scale: IntArray, was_spread: np.ndarray
    ) -> None:
        """Running sums over spread cascades (size >= 2): touched ones replace their old terms."""
        if not touched.size:
            return
        self.sv_sum += float(self.virality(touched).sum() - np.where(was_spread, old_sv, 0.0).sum())
        self.spread_count += int((~was_spread).sum())
        self.scale_sum += float(self.scale.a[touched].sum() - np.where(was_spread, old_scale, 0).sum())
        for name, arr in (("scale", self.scale), ("depth", self.max_depth), ("max_breadth", self.max_breadth)):
            self.best[name] = max(self.best[name], int(arr.a[touched].max()))

    def virality(self, tops: IntArray) -> np.ndarray:
        """Structural virality of the given cascades (NaN for a lone root)."""
        n = self.size.a[tops].astype(np.float64)
        w = n * self.depth_sum.a[tops] - self.sq_sum.a[tops]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(n >= 2, 2.0 * w / (n * (n - 1.0)), np.nan)

    def _update_top(self, touched: IntArray, n_top: int) -> None:
        """Sizes only grow, so the new top-N is within the old top-N and this step's touched."""
        cand = np.union1d(self.top_ids, touched)
        cand = cand[self.size.a[cand] >= 2]
        order = np.lexsort((cand, -self.size.a[cand]))
        self.top_ids = cand[order[:n_top]]

    # ---------------------------------------------------------------- reads
    def stats(self, tops: IntArray) -> dict[str, np.ndarray]:
        """scale, depth, max_breadth, structural_virality, size of the given cascades."""
        tops = np.asarray(tops, dtype=np.int64)
        return {
            "scale": self.scale.a[tops],
            "depth": self.max_depth.a[tops],
            "max_breadth": self.max_breadth.a[tops],
            "structural_virality": self.virality(tops),
            "size": self.size.a[tops],
        }

    def aggregates(self) -> dict[str, Any]:
        """The running aggregates (JSON), saved with every step: a resumed run restores them
        bit for bit (`set_aggregates`) rather than re-summing the floats in another order."""
        return {
            "spread_count": self.spread_count,
            "scale_sum": self.scale_sum,
            "sv_sum": self.sv_sum,
            "best": dict(self.best),
            "top_ids": self.top_ids.tolist(),
        }

    def set_aggregates(self, saved: Mapping[str, Any]) -> None:
        """Restore what `aggregates` saved (on resume, or after a rolled-back step)."""
        self.spread_count, self.scale_sum, self.sv_sum = saved["spread_count"], saved["scale_sum"], saved["sv_sum"]
        self.best = dict(saved["best"])
        self.top_ids = np.asarray(saved["top_ids"], dtype=np.int64)

    def summary(self) -> dict[str, float]:
        """``cascade/*`` over every cascade so far: the largest scale, depth and max breadth (NaN before
        the first post), structural virality and scale averaged over cascades with a share (NaN
        with none), and the count of those."""
        nan = float("nan")
        k = self.spread_count
        return {
            "cascade/scale": float(self.best["scale"]) if self.n_seen else nan,
            "cascade/depth": float(self.best["depth"]) if self.n_seen else nan,
            "cascade/max_breadth": float(self.best["max_breadth"]) if self.n_seen else nan,
            "cascade/structural_virality": self.sv_sum / k if k else nan,
            "cascade/spread_count": float(k),
            "cascade/mean_scale": self.scale_sum / k if k else nan,
        }

    def members(self, root: int) -> IntArray:
        """Post ids of one cascade, in id (= time) order. O(posts after the root)."""
        return np.flatnonzero(self.top.a[root : self.n_seen] == root) + root

    def curve(self, pf: Platform, root: int, horizon: int) -> F.CascadeCurves:
        """Per-minute cumulative curves of one cascade from its stored tree (formulas)."""
        nodes = self.members(root)
        parent = np.searchsorted(nodes, self.parent.a[nodes])
        parent[0] = -1
        return F.cascade_curves(parent, pf.p_minute.a[nodes], horizon, user=pf.p_author.a[nodes])


def read_cascade_curves(conn: sqlite3.Connection) -> dict[int, dict[str, np.ndarray]]:
    """post_id -> {"minute", "scale", "depth", "max_breadth"} arrays from a run's journal."""
    rows = conn.execute(
        "SELECT post_id, minute, scale, depth, max_breadth FROM cascade_curve ORDER BY post_id, minute"
    ).fetchall()
    out: dict[int, dict[str, np.ndarray]] = {}
    if not rows:
        return out
    arr = np.asarray(rows, dtype=np.int64)
    cuts = np.flatnonzero(np.diff(arr[:, 0])) + 1
    for block in np.split(arr, cuts):
        out[int(block[0, 0])] = {k: block[:, i + 1] for i, k in enumerate(("minute", "scale", "depth", "max_breadth"))}
    return out
