"""What the platform answers about its state, for feeds, observations and search: followees,
mutes, visibility, trends, search, the most-followed users, recent comments (mixed into
`Platform` as `PlatformQueries`)."""

from __future__ import annotations

import numpy as np

from .config import REMOVED
from .kinds import REPOST
from .search_index import post_index, top_visible_posts, user_index


class PlatformQueries:
    """Read-only questions about a `Platform`'s state; part of `Platform`."""

    def followees(self, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index into users, followee id) for all followees of `users`."""
        return self.rel["follow"].partners(np.asarray(users, dtype=np.int64))

    def muted_mask(self, viewers: np.ndarray, authors: np.ndarray) -> np.ndarray:
        """True where viewer muted author (same shapes, broadcast)."""
        viewers, authors = np.broadcast_arrays(np.asarray(viewers, np.int64), np.asarray(authors, np.int64))
        if len(self.rel["mute"]) == 0:
            return np.zeros(viewers.shape, dtype=bool)
        return self.rel["mute"].contains(viewers.ravel(), authors.ravel()).reshape(viewers.shape)

    def visible_posts_mask(self, viewers: np.ndarray, posts: np.ndarray) -> np.ndarray:
        """Posts a viewer may see: exist, not removed, not own, author neither suspended nor
        muted by the viewer."""
        viewers, posts = np.broadcast_arrays(np.asarray(viewers, np.int64), np.asarray(posts, np.int64))
        ok = (posts >= 0) & (posts < self.n_posts)
        p = np.where(ok, posts, 0)
        authors = self.p_author.a[p] if self.n_posts else np.zeros_like(p)
        ok &= authors != viewers
        ok &= self.p_status.a[p] != REMOVED if self.n_posts else ok
        ok &= ~self.u_suspended.a[authors] if self.n_posts else ok  # a suspended account's posts are hidden
        ok &= ~self.muted_mask(viewers, authors)
        return ok

    def trending(self, viewer: int, k: int | None = None) -> np.ndarray:
        """Most-liked visible posts created within the trend window, best first."""
        k = k or self.config.search_limit
        start = np.searchsorted(self.p_minute.a, self.minute - self.config.trend_window_minutes)
        cand = np.arange(start, self.n_posts, dtype=np.int64)
        cand = cand[self.visible_posts_mask(viewer, cand) & (self.p_kind.a[cand] != REPOST)]
        order = np.lexsort((-cand, -self.p_likes.a[cand]))
        return cand[order[:k]]

    def search_posts(self, viewer: int, query: str, k: int | None = None) -> np.ndarray:
        """Posts whose text contains every query word (case-insensitive), ranked by
        engagement then recency. The query is data: it is matched, never executed."""
        k = k or self.config.search_limit
        words = _words(query)
        if not words:
            return np.empty(0, dtype=np.int64)
        lo = max(0, self.n_posts - self.config.search_scan_limit)
        cand = post_index(self).match(words)  # non-repost posts holding every word (sorted ids)
        return top_visible_posts(self, viewer, cand[np.searchsorted(cand, lo) :], k)

    def search_users(self, viewer: int, query: str, k: int | None = None) -> np.ndarray:
        """Users whose user name, name or bio contains every query word, most followed first."""
        k = k or self.config.search_limit
        words = _words(query)
        if not words:
            return np.empty(0, dtype=np.int64)
        cand = user_index(self).match(words)  # users whose "user_name name bio" holds every word
        cand = cand[cand != viewer]
        return self.most_followed(k, among=cand[~self.muted_mask(viewer, cand)])

    def most_followed(self, k: int | None = None, among=None) -> np.ndarray:
        """User ids with the most followers first, ties broken by the lower id: the top `k`
        (all when `k` is None; none when `k` <= 0) of every user, or of the ids in `among`.

        Counts every user as it is, signed up, suspended or not (filter with `among`). An
        empty platform or an empty `among` gives an empty array; `among` ids outside
        0..n_users-1 are a `ValueError`. Returns int64 ids.
        """
        ids = np.arange(self.n_users, dtype=np.int64) if among is None else np.asarray(among, dtype=np.int64).ravel()
        if len(ids) and (ids.min() < 0 or ids.max() >= self.n_users):
            raise ValueError(f"most_followed: user ids must lie in 0..{self.n_users - 1}")
        order = np.lexsort((ids, -self.u_followers.a[ids]))
        return ids[order if k is None else order[: max(k, 0)]]

    def _post_text(self, p: int) -> str:
        q = self.p_quote[p]
        return self.p_content[p] if q is None else f"{q} {self.p_content[p]}"

    def recent_comments(self, posts: np.ndarray, depth: int) -> np.ndarray:
        """(len(posts), depth) newest comment ids per post, -1 padded (vectorized walk)."""
        posts = np.asarray(posts, dtype=np.int64)
        out = np.full((len(posts), depth), -1, dtype=np.int64)
        if not self.n_comments or not len(posts):
            return out
        cur = np.where(posts >= 0, self.p_last_comment.a[np.maximum(posts, 0)], -1)
        prev = self.c_prev_on_post.a
        for d in range(depth):
            out[:, d] = cur
            cur = np.where(cur >= 0, prev[np.maximum(cur, 0)], -1)
        return out


def _words(query: str) -> list[str]:
    """A search query's words, lower case (the query is data: matched, never executed)."""
    return str(query).lower().split()
