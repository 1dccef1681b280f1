"""In-network candidates: the latest visible posts of each served user's followees."""

from __future__ import annotations

import numpy as np

from ..platform import REMOVED, REPOST


def followee_items(
    platform,
    users: np.ndarray,
    per_followee: int,
    max_depth: int | None = None,
    prune_k: int | None = None,
    prune_score=None,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The latest visible posts of each user's followees: (row, shown post, share post).

    Walks every followee's newest-first post list (`u_last_post`, `p_prev_by_author`) for
    all (user, followee) pairs at once, until `per_followee` visible items were found for
    the pair or its list ends (at most `max_depth` steps, default 4 * per_followee + 16,
    so a followee with long runs of invisible posts cannot stall a step). A repost shows
    its root ("shown"); "share" is the followee's own post id (its time is the share time).
    Pairs whose followee the user muted are skipped. Cost ~ followee pairs x depth walked.
    `pairs` may pass `platform.followees(users)` when the caller already has it.

    With `prune_k` (newest-first feeds), a pair stops as soon as its next post cannot beat
    the user's k-th best distinct item found so far. Items are scored by
    `prune_score(shown, share) -> int64` (default 2 * share + 1), which must never exceed
    2 * share + 1: a pair whose next post is `cur` can then score at most 2 * cur + 1.
    """
    score_of = prune_score or (lambda shown, share: 2 * share + 1)
    empty = np.empty(0, np.int64)
    if per_followee <= 0 or not len(users) or not platform.n_posts:
        return empty, empty, empty
    row, fol = pairs if pairs is not None else platform.followees(users)
    has_mutes = len(platform.rel["mute"]) > 0
    if has_mutes and len(row):
        keep = ~platform.muted_mask(users[row], fol)
        row, fol = row[keep], fol[keep]
    cur = platform.u_last_post.a[fol]
    live = cur >= 0
    row, cur = row[live], cur[live]
    need = np.full(len(row), per_followee, dtype=np.int64)
    kind, root_of = platform.p_kind.a, platform.p_root.a
    author, status, prev = platform.p_author.a, platform.p_status.a, platform.p_prev_by_author.a
    out_r, out_p, out_s = [], [], []
    depth = 0
    limit = max_depth if max_depth is not None else 4 * per_followee + 16
    while len(cur) and depth < limit:
        shown = np.where(kind[cur] == REPOST, root_of[cur], cur)
        viewer = users[row]
        a = author[shown]
        vis = (status[shown] != REMOVED) & (a != viewer)
        if has_mutes:
            vis &= ~platform.muted_mask(viewer, a)
        out_r.append(row[vis])
        out_p.append(shown[vis])
        out_s.append(cur[vis])
        need -= vis
        cur = prev[cur]
        keep = (cur >= 0) & (need > 0)
        if prune_k and depth in (0, 1, 3):  # after steps 1, 2 and 4: most pairs stop early
            shown_all, share_all = np.concatenate(out_p), np.concatenate(out_s)
            floor = _kth_best(
                np.concatenate(out_r), shown_all, share_all, score_of(shown_all, share_all), len(users), prune_k
            )
            keep &= 2 * cur + 1 >= floor[row]
        row, cur, need = row[keep], cur[keep], need[keep]
        depth += 1
    if not out_r:
        return empty, empty, empty
    return np.concatenate(out_r), np.concatenate(out_p), np.concatenate(out_s)


def _kth_best(
    rows: np.ndarray, shown: np.ndarray, share: np.ndarray, score: np.ndarray, n_rows: int, k: int
) -> np.ndarray:
    """Per row, a lower bound of the k-th best score over distinct shown posts: the exact
    k-th best over the items that are not reposts (each such post is listed once per
    row, so no dedupe sort is needed); a very low value where a row has fewer than k."""
    floor = np.full(n_rows, np.iinfo(np.int64).min, dtype=np.int64)
    own = shown == share
    rows, score = rows[own], score[own]
    if not len(rows):
        return floor
    lo, hi = int(score.min()), int(score.max())
    if hi - lo >= 1 << 34 or n_rows >= 1 << 28:  # out of the packed-key range: be conservative
        return floor
    key = np.sort((rows << 34) | (hi - score))
    r = key >> 34
    start = np.searchsorted(r, np.arange(n_rows))
    full = np.flatnonzero(np.bincount(r, minlength=n_rows) >= k)
    floor[full] = hi - (key[start[full] + k - 1] & ((1 << 34) - 1))
    return floor
