"""Online metrics: the emergent, society-level measures of a running simulation, every step.

`MetricsRecorder.attach(sim, logdir)` registers a step hook on a `Simulation`. The hook runs
inside the step's single SQLite transaction, computes the metrics from the in-memory state
(the formulas of ``oasis_gym.metrics.formulas``) and writes each value twice: to TensorBoard
(`TensorBoardLogger`, one run folder ``<logdir>/episode_<k>`` per episode) and to the
``metrics(step, tag, value)`` table of the run's journal, in the step's own transaction, so
the database alone holds a complete, consistent record that ``make_report(db)`` can plot.

Step numbers are the platform step being committed, the same ``step`` as the trace rows.

Cost per step. Everything computed every step is O(this step's activity): action and result
counts come from the StepOutcome, exposure from the feeds served this step (``sim.obs``),
cascades from an incremental repost forest that only touches the posts created since the
previous step (and their ancestors). The metrics that must look at every user or edge
(opinion statistics, Gini coefficients, assortativity) run only every ``every_full`` steps
(default: every step on a small platform, every FULL_AUTO_EVERY = 10 steps once users +
follow edges exceed FULL_AUTO_SIZE = 200k). Measured at 100k users (1.1M follow edges),
1% active: ~4 ms CPU per light step, ~70 ms per full step, on a ~55 ms simulation step.

Usage::

    rec = MetricsRecorder.attach(env.sim, "runs/exp1")   # or MetricsRecorder(logdir).attach(sim)
    for t in range(T):
        rec.record_llm(llm_stats)                          # optional
        env.step(actions)
    rec.finalize()                                         # before the next reset (close() too)
    env.reset(seed=1); rec.on_reset(env.sim)               # next episode (optional: auto-detected)

Tags (counts cover the steps since the previous logged step; with ``every=1`` one step):

* ``actions/<name>``: applied actions by type, every ActionType, zeros included, plus
  ``actions/invalid`` for codes outside the action set; equal to the trace rows.
* ``activity/active_users`` (users served a feed), ``activity/acting_users`` (applied
  valid actions other than do_nothing), ``activity/posts_created`` (accepted create_post),
  ``activity/shares_created`` (accepted repost + quote_post), ``activity/comments_created``,
  ``activity/posts_total``.
* ``engagement/rate``: accepted post interactions (like, dislike, repost, quote, comment)
  per impression; ``engagement/per_active_user``: accepted engagement actions (those plus
  comment likes/dislikes and follows) per active user.
* ``invalid/rate``: rejected / applied actions; ``invalid/<result name>`` counts for every
  non-OK Result; ``invalid/inactive`` also counts actions sent by inactive users (ignored
  by the simulation, never traced).
* ``cascade/scale``, ``cascade/depth``, ``cascade/max_breadth`` (largest over all
  cascades), ``cascade/structural_virality`` (mean over cascades with a share),
  ``cascade/spread_count``, ``cascade/mean_scale`` (over cascades with a share),
  ``cascade/new_shares``; per tracked post ``cascade/post_<id>/<stat>`` (explicit
  ``tracked_posts``) or ``cascade/top<rank>/<stat>`` (default: the ``n_top`` largest).
* ``opinion/mean|std|bimodality|esteban_ray|to_extreme_share|to_moderation_share`` (full
  steps; shifts are against the opinions at episode start), histogram ``opinion/values``.
* ``network/follower_gini``, ``network/attention_gini`` (likes received per author),
  ``network/opinion_assortativity``, ``network/neighbourhood_correlation`` (full steps),
  ``network/new_follows``, ``network/unfollows``, ``network/follow_edges`` (every step).
* ``exposure/impressions``, ``exposure/misinfo_share`` (share of ALL impressions showing a
  post labelled misinformation or whose root is), ``exposure/cross_cutting_share``,
  ``exposure/feed_diversity`` (see formulas for both).
* ``herd/<group>_mean_score``: mean likes - dislikes of each treatment group.
* ``llm/<key>``: what ``record_llm`` received since the previous logged step, summed.

Cascades. A repost or quote of post r by user u attaches to the most recent earlier sharer
of r that u follows *at the time of the share*, else to r (formulas.infer_repost_parents
with the graph as of each share); a repost of a quote hangs under the quote, so every
cascade is rooted at an original post. The ``cascade_curve(post_id, minute, scale, depth,
max_breadth)`` table holds, for every post that was ever tracked, its cumulative curve at
every minute since the root was posted (dense, minute 0 to the last step it was tracked;
``finalize()`` completes every curve to the last step).
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
import traceback
import warnings
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..actions import ACTION_NAMES, NUM_ACTIONS, RESULT_NAMES, ActionType as A, Result as R
from ..platform.platform import MISINFO_LABEL, ORIGINAL
from ..platform.store import GrowArray, PairSet, pair_keys, unpack_keys
from . import formulas as F
from .tensorboard import MetricsTable, TensorBoardLogger

if TYPE_CHECKING:  # pragma: no cover
    from ..platform import Platform
    from ..simulation import Simulation, StepOutcome

__all__ = ["MetricsRecorder", "CascadeForest", "CASCADE_CURVE_SCHEMA", "read_cascade_curves"]

IntArray = NDArray[np.int64]

POST_ENGAGEMENT = (A.LIKE_POST, A.DISLIKE_POST, A.REPOST, A.QUOTE_POST, A.CREATE_COMMENT)
OTHER_ENGAGEMENT = (A.LIKE_COMMENT, A.DISLIKE_COMMENT, A.FOLLOW)
CASCADE_STATS = ("scale", "depth", "max_breadth", "structural_virality")
# every_full=None: the full (O(users + edges + posts)) metrics run at every logged step while
# users + follow edges stay below FULL_AUTO_SIZE, else every FULL_AUTO_EVERY steps
FULL_AUTO_SIZE = 200_000
FULL_AUTO_EVERY = 10

CASCADE_CURVE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS cascade_curve (post_id INTEGER, minute INTEGER, scale INTEGER,"
    " depth INTEGER, max_breadth INTEGER, PRIMARY KEY (post_id, minute))"
)
# The tree parent the forest gave each share, as of the share: the follow graph it was
# attributed with is gone after unfollows, so a resumed run reads the parents back.
CASCADE_TREE_SCHEMA = "CREATE TABLE IF NOT EXISTS cascade_tree (post_id INTEGER PRIMARY KEY, parent_id INTEGER)"
# meta key of the recorder's running state after each step (what a resume continues from)
STATE_KEY = "metrics_state"

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
        self._dk, self._dv = _merge_last(np.r_[self._dk, keys],
                                         np.r_[self._dv, np.asarray(values, dtype=np.int64).reshape(-1)])
        if self._dk.size > max(4096, self._bk.size >> 4):
            self._bk, self._bv = _merge_last(np.r_[self._bk, self._dk], np.r_[self._bv, self._dv])
            self._dk, self._dv = self._dk[:0], self._dv[:0]

    def prefix_count(self, first: IntArray) -> IntArray:
        """Number of stored entries whose key's first id is ``first`` (upper bound)."""
        lo, hi = first << _HIGH, (first + 1) << _HIGH
        return sum((np.searchsorted(k, hi) - np.searchsorted(k, lo) for k in (self._bk, self._dk)),
                   np.zeros(first.size, dtype=np.int64))

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
        self.top = GrowArray(np.int64, fill=-1)        # cascade root of each post
        self.depth = GrowArray(np.int64)
        self.sub = GrowArray(np.int64)                 # subtree size
        # per cascade, indexed by the root post id (meaningful for roots only)
        self.size = GrowArray(np.int64)
        self.scale = GrowArray(np.int64)
        self.max_depth = GrowArray(np.int64)
        self.max_breadth = GrowArray(np.int64)
        self.depth_sum = GrowArray(np.int64)           # sum_v s_v = sum of node depths
        self.sq_sum = GrowArray(np.int64)              # sum_v s_v^2
        self._latest = _IntMap()                       # (shared post, sharer) -> latest share id
        self._levels = _IntMap()                       # (cascade, depth) -> nodes at that depth
        self._users = PairSet()                        # (cascade, sharer) pairs, root authors aside
        # running aggregates over cascades with at least one share
        self.spread_count = 0
        self.scale_sum = 0.0
        self.sv_sum = 0.0
        self.best = {"scale": 0, "depth": 0, "max_breadth": 0}
        self.top_ids = np.empty(0, dtype=np.int64)     # largest cascades, best first

    # ---------------------------------------------------------------- update
    def update(self, pf: "Platform", n_top: int = 0, parents: IntArray | None = None) -> tuple[IntArray, int]:
        """Fold the posts created since the last call in; returns (touched cascades, new shares).

        Posts of different minutes (a forest built over a resumed or pre-filled platform) are
        folded in minute by minute, so each share only sees strictly earlier sharers.
        `parents` (by post id, -1: unknown) gives the shares' parents as attributed before
        (a resumed run's cascade_tree); the others are attributed now."""
        n0, n1 = self.n_seen, pf.n_posts
        if n1 <= n0:
            return np.empty(0, dtype=np.int64), 0
        for col in (self.parent, self.top, self.depth, self.sub, self.size, self.scale, self.max_depth,
                    self.max_breadth, self.depth_sum, self.sq_sum):
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

    def _update_batch(self, pf: "Platform", ids: IntArray, parents: IntArray | None = None) -> tuple[IntArray, int]:
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

    def _attribute(self, pf: "Platform", shares: IntArray) -> IntArray:
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

    def _add_shares(self, pf: "Platform", shares: IntArray) -> None:
        if not shares.size:
            return
        top, depth, parent, sub = self.top.a[shares], self.depth.a[shares], self.parent.a, self.sub.a
        np.add.at(self.size.a, top, 1)
        np.add.at(self.depth_sum.a, top, depth)
        np.maximum.at(self.max_depth.a, top, depth)
        author = pf.p_author.a[shares]
        other = author != pf.p_author.a[top]           # the root's author is already in its scale
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
        np.add.at(self.sq_sum.a, self.top.a[v], (old + c) ** 2 - old ** 2)
        sub[v] = old + c

    def _update_aggregates(self, touched: IntArray, old_sv: np.ndarray, old_scale: IntArray,
                           was_spread: np.ndarray) -> None:
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
        return {"scale": self.scale.a[tops], "depth": self.max_depth.a[tops],
                "max_breadth": self.max_breadth.a[tops], "structural_virality": self.virality(tops),
                "size": self.size.a[tops]}

    def aggregates(self) -> dict[str, Any]:
        """The running aggregates (JSON), saved with every step: a resumed run restores them
        bit for bit (`set_aggregates`) rather than re-summing the floats in another order."""
        return {"spread_count": self.spread_count, "scale_sum": self.scale_sum, "sv_sum": self.sv_sum,
                "best": dict(self.best), "top_ids": self.top_ids.tolist()}

    def set_aggregates(self, saved: Mapping[str, Any]) -> None:
        self.spread_count, self.scale_sum, self.sv_sum = saved["spread_count"], saved["scale_sum"], saved["sv_sum"]
        self.best = dict(saved["best"])
        self.top_ids = np.asarray(saved["top_ids"], dtype=np.int64)

    def summary(self) -> dict[str, float]:
        nan = float("nan")
        k = self.spread_count
        return {"cascade/scale": float(self.best["scale"]) if self.n_seen else nan,
                "cascade/depth": float(self.best["depth"]) if self.n_seen else nan,
                "cascade/max_breadth": float(self.best["max_breadth"]) if self.n_seen else nan,
                "cascade/structural_virality": self.sv_sum / k if k else nan,
                "cascade/spread_count": float(k),
                "cascade/mean_scale": self.scale_sum / k if k else nan}

    def members(self, root: int) -> IntArray:
        """Post ids of one cascade, in id (= time) order. O(posts after the root)."""
        return np.flatnonzero(self.top.a[root:self.n_seen] == root) + root

    def curve(self, pf: "Platform", root: int, horizon: int) -> F.CascadeCurves:
        """Per-minute cumulative curves of one cascade from its stored tree (formulas)."""
        nodes = self.members(root)
        parent = np.searchsorted(nodes, self.parent.a[nodes])
        parent[0] = -1
        return F.cascade_curves(parent, pf.p_minute.a[nodes], horizon, user=pf.p_author.a[nodes])


# --------------------------------------------------------------------------- recorder

class _ClassOrInstanceMethod:
    """A method that runs one function when called on the class, another on an instance:
    ``MetricsRecorder.attach(sim, logdir, ...)`` creates and attaches, ``rec.attach(sim)``
    attaches an existing recorder."""

    def __init__(self, on_class, on_instance) -> None:
        self.on_class, self.on_instance = on_class, on_instance
        self.__doc__ = on_class.__doc__

    def __get__(self, obj, cls=None):
        if obj is None:
            return self.on_class.__get__(cls, type(cls))
        return self.on_instance.__get__(obj, cls)


class _Interval:
    """Counters summed over the steps since the previous logged step."""

    def __init__(self) -> None:
        self.actions = np.zeros(NUM_ACTIONS + 1, dtype=np.int64)   # last: codes outside the action set
        self.results = np.zeros(len(RESULT_NAMES), dtype=np.int64)
        self.n: dict[str, float] = dict.fromkeys(
            ("applied", "ignored", "active", "acting", "posts", "shares", "comments", "follows", "unfollows",
             "eng_post", "eng_all", "impressions", "misinfo", "cc_num", "cc_den", "div_sum", "div_cnt",
             "new_shares"), 0.0)


class MetricsRecorder:
    """Streams a Simulation's emergent metrics to TensorBoard and the journal every step.

    Create with `MetricsRecorder.attach(sim, logdir)`. Every `Simulation.reset` starts a new
    journal: call `on_reset(sim)` right after it, or let the hook notice the new journal on
    the first step (it then reads the episode's starting opinions back from the journal's
    user_profile table). The same holds after `Simulation.resume`: the metrics continue at
    the resumed step, the cascade forest is rebuilt from the restored posts. Call
    `finalize()` at the end of an episode, BEFORE the next reset (a reset replaces the
    database file), to complete the cascade curves and flush TensorBoard.

    Args:
        logdir: TensorBoard folder (episode k logs into ``<logdir>/episode_<k>``); None
            writes the journal's metrics table only.
        every: log every `every` steps; counts cover the steps since the previous log.
        every_full: run the O(users + edges + posts) metrics (opinion/*, the Gini, assortativity
            and neighbourhood tags) every `every_full` steps, a multiple of `every`. None: at
            every logged step while users + follow edges <= FULL_AUTO_SIZE, else every
            FULL_AUTO_EVERY steps. `finalize()` adds them for the last step if it had none.
        tracked_posts: original posts whose cascades get per-post tags and curves; None: the
            `n_top` largest cascades (by nodes, then lower id), tagged by rank.
        histograms_every: opinion / follower histograms at the first logged step and then at
            logged steps at least that many steps after the previous ones.
        herd_groups, herd_kind: treatment groups of post or comment ids (`set_herd_groups`).
        strict: re-raise a failure of the hook (it aborts the step's commit). Otherwise a
            failure is warned about, counted in `errors`, and the step is journaled without
            its metrics: metrics must never cost a run its journal.
        flush_secs: TensorBoard flush interval.
    """

    def __init__(self, logdir: str | Path | None, *, every: int = 1, every_full: int | None = None,
                 tracked_posts: ArrayLike | None = None, n_top: int = 3, histograms_every: int = 10,
                 herd_groups: Mapping[str, ArrayLike] | None = None, herd_kind: str = "post",
                 strict: bool = False, flush_secs: int = 30) -> None:
        if every < 1 or (every_full is not None and every_full < 1) or histograms_every < 1:
            raise ValueError("every, every_full and histograms_every must be >= 1")
        if (every_full or every) % every:
            raise ValueError("every_full must be a multiple of every")
        self.logdir = None if logdir is None else str(logdir)
        self.every, self.histograms_every = every, histograms_every
        self.every_full_option = every_full
        self.every_full = every_full or every
        self.tracked = None if tracked_posts is None else np.unique(np.asarray(tracked_posts, dtype=np.int64))
        self.n_top = 0 if self.tracked is not None else int(n_top)
        self.strict, self.flush_secs = strict, flush_secs
        self.herd_groups: dict[str, IntArray] = {}
        self.herd_kind = "post"
        if herd_groups:
            self.set_herd_groups(herd_groups, herd_kind)
        self.episode = -1
        self.errors = 0
        self.hook_seconds: deque[float] = deque(maxlen=100_000)  # wall time of each hook call
        self.sim: "Simulation | None" = None
        self.tb: TensorBoardLogger | None = None
        self._conn: sqlite3.Connection | None = None
        self._started_at: int | None = None
        self._llm: dict[str, float] = {}
        self._episode_started_in_step = False

    # ---------------------------------------------------------------- lifecycle
    def _attach_new(cls, sim: "Simulation", logdir: str | Path | None, *, every: int = 1,
                    tracked_posts: ArrayLike | None = None, histograms_every: int = 10,
                    **options: Any) -> "MetricsRecorder":
        """``MetricsRecorder.attach(sim, logdir, ...)``: create a recorder and attach it to `sim`.
        Options: every_full, n_top, herd_groups, herd_kind, strict, flush_secs (see the class)."""
        rec = cls(logdir, every=every, tracked_posts=tracked_posts, histograms_every=histograms_every, **options)
        return rec._attach(sim)

    def _attach(self, sim: "Simulation") -> "MetricsRecorder":
        """``recorder.attach(sim)``: register the hook on ``sim.step_hooks``; a running episode
        (a journal already open) starts being recorded now."""
        self.sim = sim
        if self not in sim.step_hooks:
            sim.step_hooks.append(self)
        if sim.journal is not None:
            self.on_reset(sim)
        return self

    attach = _ClassOrInstanceMethod(_attach_new, _attach)

    def detach(self) -> None:
        """Finish the episode (see `close`) and unregister the hook."""
        if self.sim is not None and self in self.sim.step_hooks:
            self.sim.step_hooks.remove(self)
        self.close()

    def episode_logdir(self) -> str:
        return str(Path(self.logdir) / f"episode_{self.episode}")

    def on_reset(self, sim: "Simulation") -> None:
        """Start an episode on the journal `sim.reset()` (or `sim.resume()`) just opened: schema,
        opinion baseline, the cascade forest over the posts that exist now, the run config."""
        if sim.journal.conn is self._conn and self._started_at == sim.platform.step:
            return  # this episode already started here (e.g. attach followed by on_reset)
        self._start_episode(sim, sim.journal.conn, from_journal=sim.platform.step > 0)

    def _baseline(self, pf: "Platform", conn: sqlite3.Connection, from_journal: bool) -> np.ndarray:
        """Opinions at episode start: the platform's now, or (first noticed mid-step, or after a
        resume) the journal's user_profile rows, written once by the reset commit."""
        now = pf.u_opinion.a.astype(np.float64)
        if not from_journal:
            return now
        try:
            rows = conn.execute("SELECT user_id, opinion FROM user_profile ORDER BY user_id").fetchall()
        except sqlite3.DatabaseError:
            return now
        if len(rows) != now.size:
            return now
        return np.array([np.nan if r[1] is None else r[1] for r in rows], dtype=np.float64)

    def _start_episode(self, sim: "Simulation", conn: sqlite3.Connection, from_journal: bool = True) -> None:
        self._close_writer()
        self.sim, self._conn, self._started_at = sim, conn, sim.platform.step
        self.episode += 1
        pf = sim.platform
        MetricsTable.create_schema(conn)
        conn.execute(CASCADE_CURVE_SCHEMA)
        conn.execute(CASCADE_TREE_SCHEMA)
        self._load_state(sim, conn, from_journal)
        config = {"config": dict(vars(sim.config)), "seed": sim.seed, "episode": self.episode,
                  "n_users": pf.n_users, "metrics": self.settings()}
        sim.journal.set_meta(conn, {"metrics_config": self.settings()})
        if self.logdir is not None:
            self.tb = TensorBoardLogger(self.episode_logdir(), flush_secs=self.flush_secs)
            self.tb.log_config(config, metric_tags=("opinion/std", "cascade/scale", "exposure/misinfo_share"))

    def _load_state(self, sim: "Simulation", conn: sqlite3.Connection, from_journal: bool) -> None:
        """The recorder's state as of the journal's last step: fresh at an episode's start; on
        a resumed run (or after a failed step) the state that step saved (`_save_state`), the
        cascade forest rebuilt with the parents of cascade_tree, and the curves written so
        far read back from cascade_curve. So a resumed run logs exactly what the
        uninterrupted one does."""
        pf = sim.platform
        saved = self._read_meta(conn, STATE_KEY) if from_journal else None
        self.every_full = self.every_full_option or self._auto_every_full(pf)
        self.baseline = self._baseline(pf, conn, from_journal)
        self.forest = CascadeForest()
        self._acc = _Interval()
        self._curves: dict[int, tuple[int, tuple[int, int, int]]] = {}  # root -> (last minute, values)
        self._ever_tracked: set[int] = set()
        self._curve_live: set[int] = set()
        self._last_step: int | None = None
        self._last_logged_step: int | None = None
        self._last_full_step: int | None = None
        self._last_hist_step: int | None = None
        self._last_minute = int(pf.minute)
        self._last_tracked = np.empty(0, dtype=np.int64)
        parents = None
        if from_journal:
            parents = np.full(pf.n_posts, -1, dtype=np.int64)
            rows = np.asarray(conn.execute("SELECT post_id, parent_id FROM cascade_tree").fetchall(), dtype=np.int64)
            rows = rows.reshape(-1, 2)
            rows = rows[rows[:, 0] < pf.n_posts]
            parents[rows[:, 0]] = rows[:, 1]
        self._fold(pf, conn, parents)
        if saved is None:
            return
        self.every_full = int(saved["every_full"])
        self.forest.set_aggregates(saved["forest"])
        self._acc.actions[:] = saved["acc"]["actions"]
        self._acc.results[:] = saved["acc"]["results"]
        self._acc.n.update(saved["acc"]["n"])
        self._llm = dict(saved["llm"])
        (self._last_step, self._last_minute, self._last_logged_step, self._last_full_step,
         self._last_hist_step) = (saved[k] for k in ("last_step", "last_minute", "last_logged_step",
                                                    "last_full_step", "last_hist_step"))
        self._last_tracked = np.asarray(saved["last_tracked"], dtype=np.int64)
        self._curve_live = set(saved["curve_live"])
        for c, minute, *values in conn.execute(
                "SELECT post_id, minute, scale, depth, max_breadth FROM cascade_curve c WHERE minute ="
                " (SELECT MAX(minute) FROM cascade_curve d WHERE d.post_id = c.post_id)"):
            self._curves[c] = (minute, tuple(values))
            self._ever_tracked.add(c)

    def _fold(self, pf: "Platform", conn: sqlite3.Connection, parents: IntArray | None = None) -> int:
        """Fold the new posts into the forest, journal the parents of new shares (those not
        in `parents` already); returns the new shares."""
        n0 = self.forest.n_seen
        _, new_shares = self.forest.update(pf, self.n_top, parents)
        ids = np.arange(n0, self.forest.n_seen, dtype=np.int64)
        par = self.forest.parent.a[ids]
        new = (par >= 0) if parents is None else (par >= 0) & (parents[ids] < 0)
        if new.any():
            conn.executemany("INSERT OR REPLACE INTO cascade_tree (post_id, parent_id) VALUES (?, ?)",
                             zip(ids[new].tolist(), par[new].tolist()))
        return new_shares

    @staticmethod
    def _read_meta(conn: sqlite3.Connection, key: str) -> Any:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def _save_state(self, conn: sqlite3.Connection) -> None:
        """What a resume needs beyond the tables (see `_load_state`), in the step's transaction."""
        acc = self._acc
        self.sim.journal.set_meta(conn, {STATE_KEY: {
            "every_full": self.every_full, "forest": self.forest.aggregates(),
            "acc": {"actions": acc.actions.tolist(), "results": acc.results.tolist(),
                    "n": {k: float(v) for k, v in acc.n.items()}},
            "llm": self._llm, "last_step": self._last_step, "last_minute": self._last_minute,
            "last_logged_step": self._last_logged_step, "last_full_step": self._last_full_step,
            "last_hist_step": self._last_hist_step, "last_tracked": np.asarray(self._last_tracked).tolist(),
            "curve_live": sorted(self._curve_live)}})

    def rollback_step(self, sim: "Simulation") -> None:
        """A step this hook ran in failed and was rolled back: return to the state of the
        journal's last step (an episode first noticed in that step starts again)."""
        if self._episode_started_in_step:
            self._conn, self._started_at = None, None
            self.episode -= 1
            self._close_writer()
        elif sim.journal is not None and self._conn is sim.journal.conn:
            self._load_state(sim, self._conn, from_journal=True)

    def _writer(self) -> TensorBoardLogger | None:
        """The episode's TensorBoard writer, reopened if `finalize` closed it mid-episode."""
        if self.tb is None and self.logdir is not None and self.episode >= 0:
            self.tb = TensorBoardLogger(self.episode_logdir(), flush_secs=self.flush_secs)
        return self.tb

    def _auto_every_full(self, pf: "Platform") -> int:
        """Every logged step for small platforms; every FULL_AUTO_EVERY steps (rounded up to a
        multiple of `every`) once users + follow edges exceed FULL_AUTO_SIZE."""
        if pf.n_users + len(pf.rel["follow"]) <= FULL_AUTO_SIZE:
            return self.every
        return self.every * -(-FULL_AUTO_EVERY // self.every)

    def settings(self) -> dict[str, Any]:
        return {"every": self.every, "every_full": self.every_full, "histograms_every": self.histograms_every,
                "tracked_posts": None if self.tracked is None else self.tracked.tolist(), "n_top": self.n_top,
                "herd_groups": sorted(self.herd_groups), "herd_kind": self.herd_kind}

    def finalize(self) -> None:
        """End of episode: write what the last step has not logged yet (the open interval of
        counters when ``every`` > 1, the full metrics when ``every_full`` > 1), complete every
        tracked cascade's curve to the last step, flush and close TensorBoard (steps taken
        after it reopen the writer). Call it before the next reset; safe to call twice."""
        sim, conn = self.sim, self._conn
        if sim is not None and conn is not None and sim.journal is not None and sim.journal.conn is conn \
                and self._last_step is not None:
            pf, step = sim.platform, self._last_step
            conn.execute("BEGIN")
            try:
                self._write_curves(conn, pf, sorted(self._ever_tracked), self._last_minute, final=True)
                interval, full = self._last_logged_step != step, self._last_full_step != step
                if interval or full:
                    self._log(conn, pf, step, self._last_tracked, interval=interval, full=full)
                self._save_state(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        self._close_writer()

    def close(self) -> None:
        """`finalize()` when the episode's journal is still open; the TensorBoard writer is
        closed in any case."""
        self.finalize()

    def _close_writer(self) -> None:
        if self.tb is not None:
            self.tb.close()
            self.tb = None

    # ---------------------------------------------------------------- inputs from the caller
    def record_llm(self, stats: Mapping[str, Any]) -> None:
        """LLM call statistics (tokens, seconds, counts); numeric values are summed until the
        next logged step and written as ``llm/<key>``, plus ``llm/completion_tokens_per_s``."""
        for k, v in stats.items():
            if isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)) and math.isfinite(v):
                self._llm[k] = self._llm.get(k, 0.0) + float(v)

    def set_herd_groups(self, groups: Mapping[str, ArrayLike], kind: str = "post") -> None:
        """Treatment groups of posts or comments (kind "post" / "comment") for herd/<group>_mean_score."""
        if kind not in ("post", "comment"):
            raise ValueError(f"herd kind must be 'post' or 'comment', got {kind!r}")
        self.herd_kind = kind
        self.herd_groups = {str(g): np.asarray(ids, dtype=np.int64).reshape(-1) for g, ids in groups.items()}

    # ---------------------------------------------------------------- the hook
    def __call__(self, sim: "Simulation", out: "StepOutcome", conn: sqlite3.Connection) -> None:
        t0 = time.perf_counter()
        self._episode_started_in_step = conn is not self._conn
        try:
            if self._episode_started_in_step:
                self._start_episode(sim, conn)
            self._step(sim, out, conn)
        except Exception:
            if self.strict:
                raise
            self.errors += 1
            warnings.warn(f"metrics hook failed (step kept, metrics skipped):\n{traceback.format_exc()}",
                          RuntimeWarning, stacklevel=2)
        self.hook_seconds.append(time.perf_counter() - t0)

    def _step(self, sim: "Simulation", out: "StepOutcome", conn: sqlite3.Connection) -> None:
        pf, step = sim.platform, int(sim.platform.step)
        acc = self._acc
        self._count_actions(acc, out, len(sim.obs.users))
        self._count_exposure(acc, pf, sim.obs)
        acc.n["new_shares"] += self._fold(pf, conn)
        tracked = self._tracked_roots(pf)
        self._write_curves(conn, pf, tracked, int(pf.minute))
        self._last_step, self._last_minute, self._last_tracked = step, int(pf.minute), tracked
        if step % self.every == 0:
            self._log(conn, pf, step, tracked, interval=True, full=step % self.every_full == 0)
        self._save_state(conn)

    def _log(self, conn: sqlite3.Connection, pf: "Platform", step: int, tracked: IntArray, *,
             interval: bool, full: bool) -> None:
        """Write one metrics row set (inside the caller's transaction) and the same to TensorBoard."""
        values: dict[str, float] = {}
        if interval:
            values = self._interval_values(self._acc, pf)
            values |= self.forest.summary()
            values |= self._tracked_values(tracked)
            values |= self._herd_values(pf)
            values |= {f"llm/{k}": v for k, v in self._llm.items()}
            if self._llm.get("latency_s"):
                values["llm/completion_tokens_per_s"] = self._llm.get("completion_tokens", 0.0) / self._llm["latency_s"]
        if full:
            values |= self._full_metrics(pf)
        conn.execute("SAVEPOINT metrics")
        try:
            MetricsTable.insert(conn, step, values)
            conn.execute("RELEASE metrics")
        except BaseException:
            conn.execute("ROLLBACK TO metrics")
            conn.execute("RELEASE metrics")
            raise
        if interval:
            self._acc, self._llm, self._last_logged_step = _Interval(), {}, step
        if full:
            self._last_full_step = step
        tb = self._writer()
        if tb is not None:
            tb.log_scalars(step, values)
            last = self._last_hist_step
            if interval and (last is None or step - last >= self.histograms_every):
                tb.log_histogram("opinion/values", pf.u_opinion.a, step)
                tb.log_histogram("network/followers", pf.u_followers.a, step)
                self._last_hist_step = step

    # ---------------------------------------------------------------- per-step pieces
    @staticmethod
    def _count_actions(acc: _Interval, out: "StepOutcome", n_active: int) -> None:
        codes = np.asarray(out.actions, dtype=np.int64)
        bad = (codes < 0) | (codes >= NUM_ACTIONS)     # traced as action "invalid"
        codes = np.where(bad, NUM_ACTIONS, codes)
        res = np.asarray(out.results, dtype=np.int64)
        acc.actions += np.bincount(codes, minlength=NUM_ACTIONS + 1)
        acc.results += np.bincount(res, minlength=len(RESULT_NAMES))[:len(RESULT_NAMES)]
        ok = np.bincount(codes[res == R.OK], minlength=NUM_ACTIONS + 1)
        n = acc.n
        n["applied"] += codes.size
        n["ignored"] += len(out.ignored)
        n["active"] += n_active
        n["acting"] += int(((codes != A.DO_NOTHING) & ~bad).sum())
        n["posts"] += ok[A.CREATE_POST]
        n["shares"] += ok[A.REPOST] + ok[A.QUOTE_POST]
        n["comments"] += ok[A.CREATE_COMMENT]
        n["follows"] += ok[A.FOLLOW]
        n["unfollows"] += ok[A.UNFOLLOW]
        n["eng_post"] += ok[list(POST_ENGAGEMENT)].sum()
        n["eng_all"] += ok[list(POST_ENGAGEMENT + OTHER_ENGAGEMENT)].sum()

    @staticmethod
    def _count_exposure(acc: _Interval, pf: "Platform", obs) -> None:
        """Impressions = the feeds served this step (sim.obs during the step's commit)."""
        rows, slots = np.nonzero(obs.post_ids >= 0)
        if not rows.size:
            return
        posts = obs.post_ids[rows, slots]
        n = acc.n
        n["impressions"] += posts.size
        root = pf.p_root.a[posts]
        label = pf.p_label.a
        mis = (label[posts] == MISINFO_LABEL) | ((root >= 0) & (label[np.maximum(root, 0)] == MISINFO_LABEL))
        n["misinfo"] += int(mis.sum())
        viewer_sign = np.sign(pf.u_opinion.a[obs.users[rows]].astype(np.float64))
        stance = pf.p_stance.a[posts].astype(np.float64)
        post_sign = np.sign(stance)
        known = np.isfinite(post_sign) & np.isfinite(viewer_sign) & (viewer_sign != 0) & (post_sign != 0)
        n["cc_den"] += int(known.sum())
        n["cc_num"] += int((viewer_sign[known] != post_sign[known]).sum())
        # feed diversity: std of known stances per viewer with >= 2 of them
        ok = np.isfinite(stance)
        r, s = rows[ok], stance[ok]
        cnt = np.bincount(r, minlength=len(obs.users))
        mean = np.bincount(r, weights=s, minlength=len(obs.users)) / np.maximum(cnt, 1)
        var = np.bincount(r, weights=(s - mean[r]) ** 2, minlength=len(obs.users)) / np.maximum(cnt, 1)
        has = cnt >= 2
        n["div_sum"] += float(np.sqrt(var[has]).sum())
        n["div_cnt"] += int(has.sum())

    @staticmethod  # (also used offline: metrics.offline)
    def _interval_values(acc: _Interval, pf: "Platform") -> dict[str, float]:
        n, nan = acc.n, float("nan")
        values = {f"actions/{name}": float(c) for name, c in zip((*ACTION_NAMES, "invalid"), acc.actions)}
        rejected = acc.results.sum() - acc.results[R.OK]
        values["activity/active_users"] = n["active"]
        values["activity/acting_users"] = n["acting"]
        values["activity/posts_created"] = float(n["posts"])
        values["activity/shares_created"] = float(n["shares"])
        values["activity/comments_created"] = float(n["comments"])
        values["activity/posts_total"] = float(pf.n_posts)
        values["engagement/rate"] = n["eng_post"] / n["impressions"] if n["impressions"] else nan
        values["engagement/per_active_user"] = n["eng_all"] / n["active"] if n["active"] else nan
        values["invalid/rate"] = float(rejected) / n["applied"] if n["applied"] else nan
        for code, name in enumerate(RESULT_NAMES):
            if code != R.OK:
                values[f"invalid/{name}"] = float(acc.results[code])
        values["invalid/inactive"] += n["ignored"]
        values["network/new_follows"] = float(n["follows"])
        values["network/unfollows"] = float(n["unfollows"])
        values["network/follow_edges"] = float(len(pf.rel["follow"]))
        values["exposure/impressions"] = n["impressions"]
        values["exposure/misinfo_share"] = n["misinfo"] / n["impressions"] if n["impressions"] else nan
        values["exposure/cross_cutting_share"] = n["cc_num"] / n["cc_den"] if n["cc_den"] else nan
        values["exposure/feed_diversity"] = n["div_sum"] / n["div_cnt"] if n["div_cnt"] else nan
        values["cascade/new_shares"] = n["new_shares"]
        return {k: float(v) for k, v in values.items()}

    def _full_metrics(self, pf: "Platform") -> dict[str, float]:
        """The O(users + edges + posts) metrics of a full step."""
        op = pf.u_opinion.a
        base = self.baseline
        if base.size < op.size:  # users added mid-episode have no baseline
            base = self.baseline = np.r_[base, np.full(op.size - base.size, np.nan)]
        values = F.opinion_summary(op)
        values["opinion/to_extreme_share"], values["opinion/to_moderation_share"] = F.opinion_shift_shares(base, op)
        values["network/follower_gini"] = F.gini(pf.u_followers.a)
        likes = F.received_per_user(pf.p_author.a, pf.n_users, pf.p_likes.a)
        values["network/attention_gini"] = F.gini(likes)
        src, dst = unpack_keys(pf.rel["follow"].keys())
        values["network/opinion_assortativity"] = F.opinion_assortativity(src, dst, op)
        values["network/neighbourhood_correlation"] = F.neighbourhood_correlation(src, dst, op)
        return values

    def _tracked_roots(self, pf: "Platform") -> IntArray:
        if self.tracked is None:
            return self.forest.top_ids
        ids = self.tracked[self.tracked < self.forest.n_seen]
        return np.unique(self.forest.top.a[ids])

    def _tracked_values(self, tracked: IntArray) -> dict[str, float]:
        values: dict[str, float] = {}
        if self.tracked is None:
            st = self.forest.stats(tracked)
            for rank in range(self.n_top):
                for name in CASCADE_STATS:
                    values[f"cascade/top{rank + 1}/{name}"] = float(st[name][rank]) if rank < tracked.size else math.nan
            return values
        exists = self.tracked < self.forest.n_seen
        roots = np.where(exists, self.forest.top.a[np.where(exists, self.tracked, 0)], 0)
        st = self.forest.stats(roots)
        for k, p in enumerate(self.tracked.tolist()):
            for name in CASCADE_STATS:
                values[f"cascade/post_{p}/{name}"] = float(st[name][k]) if exists[k] else math.nan
        return values

    def _herd_values(self, pf: "Platform") -> dict[str, float]:
        if not self.herd_groups:
            return {}
        likes, dislikes = (pf.p_likes.a, pf.p_dislikes.a) if self.herd_kind == "post" else (pf.c_likes.a, pf.c_dislikes.a)
        labels, scores = [], []
        for g, ids in self.herd_groups.items():
            ids = ids[(ids >= 0) & (ids < likes.size)]
            labels.append(np.full(ids.size, g, dtype=object))
            scores.append((likes[ids] - dislikes[ids]).astype(np.float64))
        means = F.herd_effect(np.concatenate(labels), np.concatenate(scores)) if labels else {}
        return {f"herd/{g}_mean_score": means.get(g, math.nan) for g in self.herd_groups}

    def _write_curves(self, conn: sqlite3.Connection, pf: "Platform", roots: Sequence[int] | IntArray,
                      now: int, final: bool = False) -> None:
        """Extend the dense per-minute curves of the tracked cascades to the current minute.

        A cascade tracked at the previous step gets the minutes since then appended; one that
        was not (newly tracked, or dropped and now completed by `finalize`) gets its whole
        curve rebuilt from the tree (formulas.cascade_curves)."""
        rows: list[tuple[int, ...]] = []
        f = self.forest
        for c in np.asarray(roots, dtype=np.int64).tolist():
            rel = now - int(pf.p_minute.a[c])
            cur = (int(f.scale.a[c]), int(f.max_depth.a[c]), int(f.max_breadth.a[c]))
            last = self._curves.get(c)
            if last is not None and last[0] >= rel:        # already written up to this minute
                if last[1] != cur:
                    rows.append((c, rel, *cur))
            elif last is not None and c in self._curve_live:
                rows += [(c, m, *last[1]) for m in range(last[0] + 1, rel)]
                rows.append((c, rel, *cur))
            else:
                curve = f.curve(pf, c, rel)
                rows += zip([c] * (rel + 1), range(rel + 1), curve.scale[0].tolist(), curve.depth[0].tolist(),
                            curve.max_breadth[0].tolist())
            self._curves[c] = (rel, cur)
            self._ever_tracked.add(c)
        if not final:
            self._curve_live = set(np.asarray(roots, dtype=np.int64).tolist())
        if rows:
            conn.executemany("INSERT OR REPLACE INTO cascade_curve (post_id, minute, scale, depth, max_breadth)"
                             " VALUES (?,?,?,?,?)", rows)


def read_cascade_curves(conn: sqlite3.Connection) -> dict[int, dict[str, np.ndarray]]:
    """post_id -> {"minute", "scale", "depth", "max_breadth"} arrays from a run's journal."""
    rows = conn.execute("SELECT post_id, minute, scale, depth, max_breadth FROM cascade_curve"
                        " ORDER BY post_id, minute").fetchall()
    out: dict[int, dict[str, np.ndarray]] = {}
    if not rows:
        return out
    arr = np.asarray(rows, dtype=np.int64)
    cuts = np.flatnonzero(np.diff(arr[:, 0])) + 1
    for block in np.split(arr, cuts):
        out[int(block[0, 0])] = {k: block[:, i + 1] for i, k in enumerate(("minute", "scale", "depth", "max_breadth"))}
    return out
