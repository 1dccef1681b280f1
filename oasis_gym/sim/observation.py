"""Observations: each active user's feed, comments, users in view, own state and action masks.

`Observer` is the simulation's collaborator that builds them: given the platform, the
recommender (and its generator) and the pending info-action views, one vectorized pass for
all the users of a step. It holds only the slot sizes and the clock; every other input is
an argument.
"""

from __future__ import annotations

import numpy as np

from ..actions import NUM_ACTIONS, KindMask
from ..actions import ActionType as A
from ..actions import Result as R
from ..platform import Platform
from ..platform.platform import QUOTE
from .batches import COMMENT_FEATURES, FEED_FEATURES, FEED_INDEX, VIEW_USER_FEATURES, ObsBatch
from .clock import Clock

# Info-action view kinds shaping a user's next observation
_VIEW_TREND, _VIEW_SEARCH_POSTS, _VIEW_SEARCH_USERS = 1, 2, 3
_SHOWS_VIEW = KindMask((A.TREND, A.SEARCH_POSTS, A.SEARCH_USER))  # what record_views remembers


class Observer:
    """Builds `ObsBatch`es: K post slots (C comments each), U = K + S user slots."""

    def __init__(self, feed_size: int, comments_per_post: int, search_size: int, clock: Clock):
        self.K, self.C, self.S = feed_size, comments_per_post, search_size
        self.U = self.K + self.S
        self.clock = clock

    def record_views(self, pf: Platform, views: dict, users, action, texts, res) -> None:
        """Remember in `views` what the users' successful trend / search actions showed:
        their next observation is that view."""
        K, S = self.K, self.S
        ok = res == int(R.OK)  # (plain ints in numpy: an enum costs ~2.5 us an operation)
        for i in np.flatnonzero(ok & _SHOWS_VIEW(action)):
            u, a = int(users[i]), action[i]
            if a == A.TREND:
                views[u] = (_VIEW_TREND, pf.trending(u, K))
            elif a == A.SEARCH_POSTS:
                views[u] = (_VIEW_SEARCH_POSTS, pf.search_posts(u, texts[i], K))
            else:
                views[u] = (_VIEW_SEARCH_USERS, pf.search_users(u, texts[i], S))

    def observe(self, pf: Platform, recsys, rng: np.random.Generator, views: dict, users: np.ndarray) -> ObsBatch:
        """The observations of `users`: the recommender's feeds (drawing from `rng`), or the
        view an info action asked for (popped from `views`)."""
        K, S = self.K, self.S
        users = np.asarray(users, dtype=np.int64)
        n = len(users)
        post_ids = recsys.recommend(pf, users, K, rng) if n else np.empty((0, K), np.int64)
        post_ids = np.asarray(post_ids, dtype=np.int64).reshape(n, K).copy()
        search_users = np.full((n, S), -1, dtype=np.int64)
        if views:
            for row, u in enumerate(users.tolist()):
                view = views.pop(u, None)
                if view is None:
                    continue
                kind, ids = view
                if kind == _VIEW_SEARCH_USERS:
                    search_users[row, : min(S, len(ids))] = ids[:S]
                else:
                    post_ids[row] = -1
                    post_ids[row, : min(K, len(ids))] = ids[:K]
        # a view computed earlier may name posts removed since
        valid = post_ids >= 0
        if valid.any():
            valid &= pf.visible_posts_mask(users[:, None], post_ids)
            post_ids[~valid] = -1
        return self.features(pf, recsys, users, post_ids, search_users)

    def features(
        self, pf: Platform, recsys, users: np.ndarray, post_ids: np.ndarray, search_users: np.ndarray
    ) -> ObsBatch:
        """The observations of `users` shown `post_ids` (n, K) and `search_users` (n, S)."""
        K, C = self.K, self.C
        n = len(users)
        has = post_ids >= 0
        p = np.where(has, post_ids, 0)
        feed = np.zeros((n, K, len(FEED_FEATURES)), dtype=np.float32)
        authors = np.full((n, K), -1, dtype=np.int64)
        if pf.n_posts and has.any():
            authors = np.where(has, pf.p_author.a[p], -1)
            uu = np.broadcast_to(users[:, None], (n, K))
            rows = np.broadcast_to(np.arange(n)[:, None], (n, K))
            f = feed
            # follows looked up among the users' own followees (`contains_among`): a few million
            # pairs instead of the whole follow graph
            f[..., FEED_INDEX["followed_author"]] = pf.rel["follow"].contains_among(users, rows, np.maximum(authors, 0))
            f[..., FEED_INDEX["likes"]] = pf.p_likes.a[p]
            f[..., FEED_INDEX["dislikes"]] = pf.p_dislikes.a[p]
            f[..., FEED_INDEX["shares"]] = pf.p_shares.a[p]
            f[..., FEED_INDEX["comments"]] = pf.p_comments.a[p]
            f[..., FEED_INDEX["age_minutes"]] = pf.minute - pf.p_minute.a[p]
            f[..., FEED_INDEX["reports"]] = pf.p_reports.a[p]
            f[..., FEED_INDEX["moderation"]] = pf.p_status.a[p]
            f[..., FEED_INDEX["author_followers"]] = pf.u_followers.a[np.maximum(authors, 0)]
            f[..., FEED_INDEX["similarity"]] = recsys.similarity(pf, users, post_ids)
            stance = pf.p_stance.a[p]
            f[..., FEED_INDEX["stance_known"]] = ~np.isnan(stance)
            f[..., FEED_INDEX["stance"]] = np.nan_to_num(stance)
            f[..., FEED_INDEX["liked_by_me"]] = pf.rel["like"].contains(uu, p)
            f[..., FEED_INDEX["disliked_by_me"]] = pf.rel["dislike"].contains(uu, p)
            f[..., FEED_INDEX["reposted_by_me"]] = pf.rel["repost"].contains(uu, p)
            f[..., FEED_INDEX["is_quote"]] = pf.p_kind.a[p] == QUOTE
            feed[~has] = 0.0
        # comments: the C newest of each post slot, hiding authors the viewer muted
        comment_ids = pf.recent_comments(post_ids.reshape(-1), C).reshape(n, K * C)
        cm = comment_ids >= 0
        comments = np.zeros((n, K * C, len(COMMENT_FEATURES)), dtype=np.float32)
        if cm.any():
            c = np.where(cm, comment_ids, 0)
            uc = np.broadcast_to(users[:, None], (n, K * C))
            cm &= ~pf.muted_mask(uc, pf.c_author.a[c])
            comment_ids[~cm] = -1
            comments[..., 0] = pf.c_likes.a[c]
            comments[..., 1] = pf.c_dislikes.a[c]
            comments[..., 2] = pf.rel["comment_like"].contains(uc, c)
            comments[..., 3] = pf.rel["comment_dislike"].contains(uc, c)
            comments[..., 4] = np.nan_to_num(pf.c_stance.a[c])
            comments[~cm] = 0.0
        # user slots: feed authors then search results
        user_ids = np.concatenate([authors, search_users], axis=1)
        um = (user_ids >= 0) & (user_ids != users[:, None])
        user_ids = np.where(um, user_ids, -1)
        user_feats = np.zeros((n, self.U, len(VIEW_USER_FEATURES)), dtype=np.float32)
        if um.any():
            q = np.maximum(user_ids, 0)
            uu = np.broadcast_to(users[:, None], q.shape)
            user_feats[..., 0] = pf.u_followers.a[q]
            user_feats[..., 1] = pf.rel["follow"].contains_among(
                users, np.broadcast_to(np.arange(n)[:, None], q.shape), q
            )
            user_feats[..., 2] = pf.rel["mute"].contains(uu, q)
            user_feats[:, self.K :, 3] = 1.0
            user_feats[~um] = 0.0
        self_feats = np.stack(
            [
                pf.u_followers.a[users],
                pf.u_followings.a[users],
                pf.u_posts.a[users],
                pf.u_opinion.a[users],
                np.full(n, self.clock.hour(pf.minute)),
                np.full(n, pf.step),
            ],
            axis=1,
        ).astype(np.float32)
        mask_type = type_mask(pf.available, n, has, feed, cm, comments, um, user_feats)
        return ObsBatch(
            users,
            post_ids,
            feed,
            comment_ids,
            comments,
            user_ids,
            user_feats,
            self_feats,
            mask_type,
            has.astype(np.int8),
            cm.astype(np.int8),
            um.astype(np.int8),
        )


_ALWAYS = [A.DO_NOTHING, A.REFRESH, A.TREND, A.SEARCH_POSTS, A.SEARCH_USER, A.CREATE_POST]
_ON_ANY_POST = [A.QUOTE_POST, A.CREATE_COMMENT, A.REPORT_POST]
# per slot kind: (feature columns of what the user did to a slot, the types possible on a slot
# not yet done, those possible on a slot done)
_POST_FLAGS = (
    [FEED_INDEX[k] for k in ("liked_by_me", "disliked_by_me", "reposted_by_me")],
    [A.LIKE_POST, A.DISLIKE_POST, A.REPOST],
    [A.UNLIKE_POST, A.UNDO_DISLIKE_POST],
)
_COMMENT_FLAGS = ([2, 3], [A.LIKE_COMMENT, A.DISLIKE_COMMENT], [A.UNLIKE_COMMENT, A.UNDO_DISLIKE_COMMENT])
_USER_FLAGS = ([1, 2], [A.FOLLOW, A.MUTE], [A.UNFOLLOW, A.UNMUTE])


def type_mask(avail: np.ndarray, n: int, has, feed, cm, comments, um, user_feats) -> np.ndarray:
    """Which action types can succeed for each user given what they see (joint validity of a
    type with a particular slot is checked when the action is applied); `avail`: the
    platform's available actions. E.g. like_post: a filled post slot not liked yet; unlike_post:
    a liked one. Counted per row: a type is possible where fewer filled slots are done than
    filled (do) or where any is done (undo)."""
    m = np.zeros((n, NUM_ACTIONS), dtype=bool)
    m[:, _ALWAYS] = True
    for filled, feats, (cols, do, undo) in (
        (has, feed, _POST_FLAGS),
        (cm, comments, _COMMENT_FLAGS),
        (um, user_feats, _USER_FLAGS),
    ):
        done = ((feats[..., cols] > 0) & filled[..., None]).sum(axis=1)  # (n, flags): slots done, per flag
        shown = filled.sum(axis=1)[:, None]
        m[:, do] = done < shown
        m[:, undo] = done[:, : len(undo)] > 0
    m[:, _ON_ANY_POST] = has.any(axis=1)[:, None]
    m &= avail[None, :]
    m[:, A.DO_NOTHING] = True
    return m.astype(np.int8)
