"""What LLM users read: feed views as dicts (posts, comments, users in view, memory), previews.

`FeedViews` is the simulation's collaborator that renders them, from the platform, the
current observations and the recommender given as arguments: views of active users come
from their current observation, views of any other user from a side-effect-free preview
(same seed, same run).
"""

from __future__ import annotations

import numpy as np

from ..actions import ACTION_NAMES, NUM_ACTIONS
from ..platform import REMOVED, Platform
from ..platform.platform import MODERATION_NAMES
from .batches import ObsBatch
from .observation import Observer


def user_id(pf: Platform | None, agent: str) -> int:
    """The user id of the agent named `user_<id>`; KeyError naming the agent if this env has
    no such user (`user_-1`, `user_007`, `user_999` of 50 users, ...)."""
    if isinstance(agent, str) and agent.startswith("user_"):
        digits = agent[len("user_") :]
        if digits.isascii() and digits.isdigit() and (digits == "0" or digits[0] != "0"):
            if pf is not None and int(digits) < pf.n_users:
                return int(digits)
    n = pf.n_users if pf is not None else 0
    raise KeyError(f"no agent {agent!r} in this env (its users are user_0 .. user_{n - 1})")


def check_users(pf: Platform | None, users) -> np.ndarray:
    """`users` as int64 ids of the platform, or KeyError naming the ones it has not."""
    if pf is None:
        raise RuntimeError("no episode: call reset() first")
    users = np.asarray(users).reshape(-1)
    if users.size and (not np.issubdtype(users.dtype, np.integer) or users.min() < 0 or users.max() >= pf.n_users):
        bad = [u for u in users.tolist() if not (isinstance(u, int) and 0 <= u < pf.n_users)]
        raise KeyError(f"no user(s) {bad[:5]} in this env (user ids are 0 .. {pf.n_users - 1})")
    return users.astype(np.int64)


class FeedViews:
    """Renders feed views, previews and profile views with an `Observer`'s slot sizes."""

    def __init__(self, observer: Observer):
        self.observer = observer

    def profile_views(self, pf: Platform, recsys, users: np.ndarray) -> list[dict]:
        """Feed views with an empty feed, for any user (active or not): an interview asks a
        user about themselves without serving a feed (which would draw from the generators)."""
        users = check_users(pf, users)
        n, ob = len(users), self.observer
        batch = ob.features(pf, recsys, users, np.full((n, ob.K), -1, np.int64), np.full((n, ob.S), -1, np.int64))
        return self.feed_views(pf, batch, recsys, None, users)

    def preview(self, pf: Platform, recsys, rng: np.random.Generator, users: np.ndarray) -> ObsBatch:
        """The observations `users` would get from a refresh now, with no side effect: the
        recommender ranks with a copy of `rng` and its state is restored after, and pending
        info-action views stay pending. So reading an inactive user's feed never changes the
        run (same seed, same run)."""
        users = check_users(pf, users)
        n, K, S = len(users), self.observer.K, self.observer.S
        copy = np.random.Generator(type(rng.bit_generator)())
        copy.bit_generator.state = rng.bit_generator.state
        saved = recsys.checkpoint() if hasattr(recsys, "checkpoint") else None
        try:
            post_ids = recsys.recommend(pf, users, K, copy) if n else np.empty((0, K), np.int64)
            post_ids = np.asarray(post_ids, dtype=np.int64).reshape(n, K).copy()
            valid = post_ids >= 0
            if valid.any():
                valid &= pf.visible_posts_mask(users[:, None], post_ids)
                post_ids[~valid] = -1
            return self.observer.features(pf, recsys, users, post_ids, np.full((n, S), -1, dtype=np.int64))
        finally:
            if saved is not None:
                recsys.rollback(saved)

    def feed_views(
        self,
        pf: Platform,
        obs: ObsBatch,
        recsys,
        rng: np.random.Generator | None,
        users: np.ndarray,
        memories: dict[int, list[str]] | None = None,
    ) -> list[dict]:
        """What an LLM user reads, one dict per user (slot order): an active user's view of
        `obs` (the current observations); any other user's is what a refresh would show them
        now (`preview`, ranking with a copy of `rng`)."""
        users = check_users(pf, users)
        C = self.observer.C
        source = {u: (obs, r) for r, u in enumerate(obs.users.tolist())}
        missing = np.unique([u for u in users.tolist() if u not in source]).astype(np.int64)
        if len(missing):
            extra = self.preview(pf, recsys, rng, missing)
            source.update({u: (extra, r) for r, u in enumerate(missing.tolist())})
        out = []
        time = pf.created_at()[:16]
        allowed_all = [ACTION_NAMES[a] for a in range(NUM_ACTIONS)]
        for u in users.tolist():
            obs, r = source[u]
            posts = []
            for slot, p in enumerate(obs.post_ids[r].tolist()):
                if p < 0:
                    continue
                a = int(pf.p_author.a[p])
                comments = []
                for cs in range(slot * C, (slot + 1) * C):
                    c = int(obs.comment_ids[r, cs])
                    if c >= 0:
                        comments.append(
                            {
                                "slot": cs,
                                "comment_id": c,
                                "author_name": pf.u_user_name[int(pf.c_author.a[c])],
                                "text": pf.c_content[c],
                                "likes": int(pf.c_likes.a[c]),
                            }
                        )
                status = int(pf.p_status.a[p])
                posts.append(
                    {
                        "slot": slot,
                        "post_id": p,
                        "author_id": a,
                        "author_name": pf.u_user_name[a],
                        "text": pf.p_content[p] if pf.p_quote[p] is None else pf.p_quote[p],
                        "quoted_text": pf.p_content[p] if pf.p_quote[p] is not None else None,
                        "likes": int(pf.p_likes.a[p]),
                        "dislikes": int(pf.p_dislikes.a[p]),
                        "reposts": int(pf.p_shares.a[p]),
                        "comments": int(pf.p_comments.a[p]),
                        "label": MODERATION_NAMES[status] if status and status != REMOVED else None,
                        "top_comments": comments,
                    }
                )
            users_list = [
                {"slot": s, "user_id": int(v), "user_name": pf.u_user_name[int(v)], "bio": pf.u_bio[int(v)]}
                for s, v in enumerate(obs.user_ids[r].tolist())
                if v >= 0
            ]
            out.append(
                {
                    "agent": f"user_{u}",
                    "user_id": u,
                    "user_name": pf.u_user_name[u],
                    "name": pf.u_name[u],
                    "persona": pf.u_persona[u] or pf.u_bio[u],
                    "step": pf.step,
                    "time": time,
                    "allowed_actions": [allowed_all[a] for a in np.flatnonzero(obs.mask_type[r])],
                    "posts": posts,
                    "users": users_list,
                    "memory": list((memories or {}).get(u, [])),
                }
            )
        return out
