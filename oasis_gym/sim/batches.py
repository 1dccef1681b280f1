"""The arrays that cross the engine's boundary: observations, actions, step outcomes.

``Simulation`` builds an :class:`ObsBatch` for all active users at once and takes one
columnar :class:`ActionArrays` batch per step; policies and envs speak these types. The
users' default reward is in `rewards.py`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

FEED_FEATURES = (
    "followed_author",
    "likes",
    "dislikes",
    "shares",
    "comments",
    "age_minutes",
    "reports",
    "moderation",
    "author_followers",
    "similarity",
    "stance",
    "stance_known",
    "liked_by_me",
    "disliked_by_me",
    "reposted_by_me",
    "is_quote",
)
COMMENT_FEATURES = ("likes", "dislikes", "liked_by_me", "disliked_by_me", "stance")
# the users in a user's view (not the ranking's user features, `model.ranking.USER_FEATURES`)
VIEW_USER_FEATURES = ("followers", "followed_by_me", "muted_by_me", "from_search")
SELF_FEATURES = ("followers", "followings", "posts", "opinion", "hour", "step")
FEED_INDEX = {name: i for i, name in enumerate(FEED_FEATURES)}


@dataclass
class ObsBatch:
    """Observations of a batch of users, as arrays with one row per user."""

    users: np.ndarray  # (n,) user ids
    post_ids: np.ndarray  # (n, K) int64, -1 padded
    feed: np.ndarray  # (n, K, len(FEED_FEATURES)) float32
    comment_ids: np.ndarray  # (n, K*C) int64, -1 padded (C newest comments of each slot)
    comments: np.ndarray  # (n, K*C, len(COMMENT_FEATURES)) float32
    user_ids: np.ndarray  # (n, U) int64: feed authors (K) then search results (S)
    user_feats: np.ndarray  # (n, U, len(VIEW_USER_FEATURES)) float32
    self_feats: np.ndarray  # (n, len(SELF_FEATURES)) float32
    mask_type: np.ndarray  # (n, NUM_ACTIONS) int8
    mask_post: np.ndarray  # (n, K) int8
    mask_comment: np.ndarray  # (n, K*C) int8
    mask_user: np.ndarray  # (n, U) int8

    def __len__(self) -> int:
        return len(self.users)

    def take(self, rows: np.ndarray) -> ObsBatch:
        """The observations of a subset of rows (e.g. the users one policy drives)."""
        return ObsBatch(*(getattr(self, f.name)[rows] for f in dataclasses.fields(self)))


@dataclass
class ActionArrays:
    """A batch of slot-based actions (the fast path): one row per acting user."""

    users: np.ndarray
    type: np.ndarray
    post: np.ndarray | None = None
    comment: np.ndarray | None = None
    user: np.ndarray | None = None
    text: Sequence[str | None] | None = None
    stance: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.users)

    @classmethod
    def empty(cls) -> ActionArrays:
        """A batch of no actions."""
        return cls(np.empty(0, np.int64), np.empty(0, np.int64))

    def column(self, name: str) -> np.ndarray:
        """Column `name` as a new array (int64; float32 for `stance`), filled where the batch
        leaves it out: do_nothing / slot 0 for the integer columns, NaN (unknown) stance."""
        values = getattr(self, name)
        dtype = np.float32 if name == "stance" else np.int64
        if values is None:
            return np.full(len(self), np.nan if name == "stance" else 0, dtype=dtype)
        return np.array(values, dtype=dtype)

    def texts(self) -> list[str | None]:
        """The text column as a new list (None where the batch has no texts)."""
        return list(self.text) if self.text is not None else [None] * len(self)

    @classmethod
    def concat(cls, parts: Sequence[ActionArrays]) -> ActionArrays:
        """Join the actions of several policies into one batch (missing columns filled)."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        cols = {name: np.concatenate([p.column(name) for p in parts]) for name in _ARRAY_COLUMNS}
        return cls(**cols, text=[t for p in parts for t in p.texts()])


_ARRAY_COLUMNS = ("users", "type", "post", "comment", "user", "stance")


@dataclass
class StepOutcome:
    """What one step did: the applied actions, their results and the rewards."""

    users: np.ndarray  # users whose actions were applied
    actions: np.ndarray  # their action codes
    targets: np.ndarray  # resolved target ids
    results: np.ndarray  # Result code per action
    new_ids: np.ndarray  # created post/comment ids or -1
    rewards: np.ndarray  # (n_users,) float32
    ignored: np.ndarray  # users who sent an action while inactive (not applied)
    platform_rewards: dict = field(default_factory=dict)  # the platform agents' rewards, by name
