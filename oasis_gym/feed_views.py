"""What LLM users read: feed views as dicts (posts, comments, users in view, memory), previews.

A mixin of ``Simulation``: views of active users come from their current observation, views
of any other user from a side-effect-free preview (same seed, same run).
"""

from __future__ import annotations

import numpy as np

from .actions import ACTION_NAMES, NUM_ACTIONS
from .batches import ObsBatch
from .platform import REMOVED
from .platform.platform import MODERATION_NAMES


class FeedViews:
    """``Simulation.feed_views``, ``preview``, ``profile_views`` and agent-name lookup."""

    def user_id(self, agent: str) -> int:
        """The user id of the agent named `user_<id>`; KeyError naming the agent if this
        env has no such user (`user_-1`, `user_007`, `user_999` of 50 users, ...)."""
        if isinstance(agent, str) and agent.startswith("user_"):
            digits = agent[len("user_") :]
            if digits.isascii() and digits.isdigit() and (digits == "0" or digits[0] != "0"):
                if self.platform is not None and int(digits) < self.platform.n_users:
                    return int(digits)
        n = self.platform.n_users if self.platform is not None else 0
        raise KeyError(f"no agent {agent!r} in this env (its users are user_0 .. user_{n - 1})")

    def _check_users(self, users) -> np.ndarray:
        if self.platform is None:
            raise RuntimeError("no episode: call reset() first")
        users = np.asarray(users).reshape(-1)
        if users.size and (
            not np.issubdtype(users.dtype, np.integer) or users.min() < 0 or users.max() >= self.platform.n_users
        ):
            bad = [u for u in users.tolist() if not (isinstance(u, int) and 0 <= u < self.platform.n_users)]
            raise KeyError(f"no user(s) {bad[:5]} in this env (user ids are 0 .. {self.platform.n_users - 1})")
        return users.astype(np.int64)

    def profile_views(self, users: np.ndarray) -> list[dict]:
        """Feed views with an empty feed, for any user (active or not): an interview asks a
        user about themselves without serving a feed (which would draw from the generators)."""
        users = self._check_users(users)
        n = len(users)
        batch = self._features(users, np.full((n, self.K), -1, np.int64), np.full((n, self.S), -1, np.int64))
        return self.feed_views(users, obs=batch)

    def preview(self, users: np.ndarray) -> ObsBatch:
        """The observations `users` would get from a refresh now, with no side effect: the
        recommender ranks with a copy of its generator and its state is restored after, and
        pending info-action views stay pending. So reading an inactive user's feed never
        changes the run (same seed, same run)."""
        users = self._check_users(users)
        pf, n = self.platform, len(users)
        rng = np.random.Generator(type(self.rng_recsys.bit_generator)())
        rng.bit_generator.state = self.rng_recsys.bit_generator.state
        saved = self.recsys.checkpoint() if hasattr(self.recsys, "checkpoint") else None
        try:
            post_ids = self.recsys.recommend(pf, users, self.K, rng) if n else np.empty((0, self.K), np.int64)
            post_ids = np.asarray(post_ids, dtype=np.int64).reshape(n, self.K).copy()
            valid = post_ids >= 0
            if valid.any():
                valid &= pf.visible_posts_mask(users[:, None], post_ids)
                post_ids[~valid] = -1
            return self._features(users, post_ids, np.full((n, self.S), -1, dtype=np.int64))
        finally:
            if saved is not None:
                self.recsys.rollback(saved)

    def feed_views(
        self, users: np.ndarray, memories: dict[int, list[str]] | None = None, obs: ObsBatch | None = None
    ) -> list[dict]:
        """What an LLM user reads, one dict per user (slot order): an active user's current
        observation; any other user's is what a refresh would show them now (`preview`)."""
        users = self._check_users(users)
        pf, obs = self.platform, (obs if obs is not None else self.obs)
        source = {u: (obs, r) for r, u in enumerate(obs.users.tolist())}
        missing = np.unique([u for u in users.tolist() if u not in source]).astype(np.int64)
        if len(missing):
            extra = self.preview(missing)
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
                for cs in range(slot * self.C, (slot + 1) * self.C):
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
