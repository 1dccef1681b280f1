"""The social platform: columnar in-memory state and one batched `apply` per step.

`Platform` holds every user, post, comment and relation as columns (`store.GrowArray`,
`text.TextColumn`, `store.PairSet`). Its parts live beside it, one concept each:
- `config.py`: `PlatformConfig`, moderation states, fact-check labels, simulated time;
- `records.py`: `ActionBatch` in, `StepLog` / `TraceRows` out to the journal;
- `apply.py`: `apply` (the rules of one step, OASIS's semantics, the phase order);
- `queries.py`: followees, visibility, trends, search, `most_followed`, recent comments;
- `checkpoint.py`: a step's exact rollback (this module records in-place writes for it).
Their public names are importable from here too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..actions import NUM_ACTIONS
from .apply import (
    ADD_PHASE,
    CREATE_PHASE,
    JOURNALED_RELATIONS,
    PHASES,
    RELATION_OF,
    RELATIONS,
    REMOVE_PHASE,
    ApplyActions,
)
from .checkpoint import capture, restore
from .config import (
    DOWNRANKED,
    EPOCH,
    LABELLED,
    MISINFO_LABEL,
    MODERATION_NAMES,
    REMOVED,
    TRUE_LABEL,
    UNKNOWN_LABEL,
    VISIBLE,
    PlatformConfig,
    datetime_text,
)
from .kinds import ORIGINAL, QUOTE, REPOST
from .queries import PlatformQueries
from .records import (
    TRACE_CREATED_KEY,
    TRACE_TARGET_KEY,
    TRACE_TEXT_KEY,
    ActionBatch,
    StepLog,
    TraceRows,
    action_name,
    action_names,
)
from .store import GrowArray, PairSet, pair_keys, unpack_keys
from .text import TextColumn

if TYPE_CHECKING:
    from .checkpoint import Checkpoint

__all__ = [
    "ADD_PHASE",
    "CREATE_PHASE",
    "DOWNRANKED",
    "EPOCH",
    "JOURNALED_RELATIONS",
    "LABELLED",
    "MISINFO_LABEL",
    "MODERATION_NAMES",
    "ORIGINAL",
    "PHASES",
    "QUOTE",
    "RELATIONS",
    "RELATION_OF",
    "REMOVED",
    "REMOVE_PHASE",
    "REPOST",
    "TRACE_CREATED_KEY",
    "TRACE_TARGET_KEY",
    "TRACE_TEXT_KEY",
    "TRUE_LABEL",
    "UNKNOWN_LABEL",
    "VISIBLE",
    "ActionBatch",
    "Platform",
    "PlatformConfig",
    "StepLog",
    "TraceRows",
    "action_name",
    "action_names",
]


_CHUNK = 1 << 22  # pairs per chunk of the follow seeding's temporaries


def _valid_follow_keys(src, dst, offset: int, n: int) -> np.ndarray:
    """`pair_keys(src + offset, dst + offset)` of the pairs with both ids in [0, n) and no
    self-follow, in input order; built chunk by chunk (one int64 array of the result's size).
    A chunk whose pairs are all valid (checked by its bounds: a population's usual case) is
    packed in place, with no temporary of its size."""
    m = len(src)
    keys = np.empty(m, dtype=np.int64)
    keep = None  # (made at the first chunk with an invalid pair)
    for at in range(0, m, _CHUNK):
        a = np.asarray(src[at : at + _CHUNK], dtype=np.int64)
        b = np.asarray(dst[at : at + _CHUNK], dtype=np.int64)
        out = keys[at : at + len(a)]
        if len(a) and min(a.min(), b.min()) + offset >= 0 and max(a.max(), b.max()) + offset < n and (a != b).all():
            pair_keys(a, b, offset, out=out)
            continue
        if keep is None:
            keep = np.ones(m, dtype=bool)
        a, b = a + offset, b + offset
        keep[at : at + len(a)] = (a != b) & (a >= 0) & (b >= 0) & (a < n) & (b < n)
        pair_keys(a, b, out=out)
    return keys if keep is None or keep.all() else keys[keep]


def _drop_repeats(keys: np.ndarray) -> np.ndarray:
    """Sorted keys without their repeats."""
    if len(keys) < 2:
        return keys
    fresh = np.empty(len(keys), dtype=bool)
    fresh[0] = True
    np.not_equal(keys[1:], keys[:-1], out=fresh[1:])
    return keys if fresh.all() else keys[fresh]


def _counters(k: int) -> tuple[GrowArray, ...]:
    """`k` counter columns (int32, 0 for new rows)."""
    return tuple(GrowArray(np.int32) for _ in range(k))


class Platform(ApplyActions, PlatformQueries):
    """All users, posts, comments and relations of one simulated platform.

    The columns, the population, platform-side actions (moderation, opinions) and the
    step's bookkeeping are here; `apply` comes from `apply.ApplyActions`, the questions about
    the state (feeds, search, `most_followed`) from `queries.PlatformQueries`.
    """

    def __init__(self, config: PlatformConfig | None = None, start_minute: int = 0):
        self.config = config or PlatformConfig()
        self.step = 0
        self.minute = start_minute
        # users
        self.u_signed_up = GrowArray(bool)
        self.u_suspended = GrowArray(bool)
        self.u_is_core = GrowArray(bool)
        self.u_followers, self.u_followings, self.u_posts = _counters(3)
        self.u_last_post = GrowArray(np.int64, fill=-1)
        self.u_opinion = GrowArray(np.float32)
        self.u_interests = GrowArray(np.uint64)
        self.u_activity = GrowArray(np.float32, width=24)
        self.u_created_minute = GrowArray(np.int64)
        self.u_user_name = TextColumn()
        self.u_name = TextColumn()
        self.u_bio = TextColumn()
        self.u_persona = TextColumn()
        # posts
        self.p_author = GrowArray(np.int64)
        self.p_root = GrowArray(np.int64, fill=-1)
        self.p_kind = GrowArray(np.int8)
        self.p_minute = GrowArray(np.int64)
        self.p_step = GrowArray(np.int32)
        self.p_likes, self.p_dislikes, self.p_shares, self.p_reports, self.p_comments = _counters(5)
        self.p_stance = GrowArray(np.float32, fill=np.nan)
        self.p_label = GrowArray(np.int8, fill=UNKNOWN_LABEL)
        self.p_status = GrowArray(np.int8)
        self.p_prev_by_author = GrowArray(np.int64, fill=-1)
        self.p_last_comment = GrowArray(np.int64, fill=-1)
        self.p_content: list[str] = []
        self.p_quote: list[str | None] = []
        # comments
        self.c_post = GrowArray(np.int64)
        self.c_author = GrowArray(np.int64)
        self.c_minute = GrowArray(np.int64)
        self.c_step = GrowArray(np.int32)
        self.c_likes, self.c_dislikes = _counters(2)
        self.c_stance = GrowArray(np.float32, fill=np.nan)
        self.c_prev_on_post = GrowArray(np.int64, fill=-1)
        self.c_content: list[str] = []
        # relations: (user, target) pairs
        # Each journaled pair keeps its row id (follow_id, like_id, ...), numbered by the platform
        # like posts are: the journal appends new rows and deletes by row id, and needs no pair
        # index during the run (kept up row by row, random pairs cost a third of a step's writes).
        self.rel = {name: PairSet(values=[]) if name in JOURNALED_RELATIONS else PairSet() for name in RELATIONS}
        self.next_row_id = dict.fromkeys(JOURNALED_RELATIONS, 0)
        self.available = np.zeros(NUM_ACTIONS, dtype=bool)
        self.available[list(self.config.available_actions)] = True
        self.pending = StepLog()
        # (column, rows, old values) of every in-place write since `checkpoint()`, or None
        self._undo: list | None = None

    # ------------------------------------------------------------------ step atomicity
    def checkpoint(self) -> Checkpoint:
        """Start recording: `rollback(cp)` then restores exactly the state of now (a step that
        fails midway leaves no trace). Costs O(columns) now and O(rows written) per write:
        appended rows are undone by length, rows written in place keep their old values."""

        self._undo = []
        return capture(self)

    def rollback(self, cp: Checkpoint) -> None:
        """Restore the state of `checkpoint()` and stop recording."""

        undo, self._undo = self._undo or [], None
        restore(self, cp, undo)

    def release(self) -> None:
        """Stop recording (the step went through)."""
        self._undo = None

    def _saving(self, col: GrowArray, rows) -> None:
        """Call before writing `col.a[rows]` in place: keeps the old values for a rollback."""
        if self._undo is not None:
            rows = np.array(rows, dtype=np.int64, copy=True) if not isinstance(rows, slice) else rows
            self._undo.append((col, rows, col.a[rows].copy()))

    # ------------------------------------------------------------------ sizes
    @property
    def n_users(self) -> int:
        """Users, signed up or not."""
        return len(self.u_signed_up)

    @property
    def n_posts(self) -> int:
        """Posts of every kind, removed ones included."""
        return len(self.p_author)

    @property
    def n_comments(self) -> int:
        """Comments."""
        return len(self.c_post)

    # ------------------------------------------------------------------ population
    def add_users(self, population, signed_up: bool = True) -> np.ndarray:
        """Add every user of a Population (see oasis_gym.population); returns their ids."""
        n = population.n
        first = self.n_users
        for col, fill in (
            (self.u_signed_up, signed_up),
            (self.u_suspended, False),
            (self.u_followers, 0),
            (self.u_followings, 0),
            (self.u_posts, 0),
            (self.u_last_post, -1),
        ):
            col.append_fill(n)
            if fill:
                col.a[first:] = fill
        self.u_is_core.extend(population.is_core)
        self.u_opinion.extend(population.opinion)
        self.u_interests.extend(population.interests)
        self.u_activity.extend(population.activity)
        self.u_created_minute.extend(np.full(n, self.minute, dtype=np.int64))
        for column, values in (
            (self.u_user_name, population.user_name),
            (self.u_name, population.name),
            (self.u_bio, population.bio),
            (self.u_persona, population.persona),
        ):
            if len(column) == 0:
                column.__init__(values)  # keep a lazy base sequence as it is
            else:
                column.extend(values[i] for i in range(n))
        ids = np.arange(first, first + n, dtype=np.int64)
        self.pending.new_users.append(ids)
        if len(population.follow_src):
            self._seed_follows(population.follow_src, population.follow_dst, offset=first)
        for author, text in population.previous_posts:
            self.create_posts(np.array([author + first]), [text])
        return ids

    def _seed_follows(self, src: np.ndarray, dst: np.ndarray, offset: int = 0) -> None:
        """Follow pairs (src + offset, dst + offset): self-follows, ids out of range, duplicates
        and pairs already followed are dropped; the rest are added in (follower, followee) order.

        ~21 bytes a pair at the peak beyond the inputs (the keys, their row ids, the stable
        sort's buffer), 16 kept (the follow set and the step log share the two arrays).
        """
        n = self.n_users
        keys = _valid_follow_keys(src, dst, offset, n)
        keys.sort(kind="stable")  # in place; runs of sorted edges make it fast
        keys = _drop_repeats(keys)
        if len(self.rel["follow"]):
            keys = keys[~self.rel["follow"].contains_keys(keys)]
        self._add_pairs("follow", keys)
        followings, followers = np.zeros(n, np.int64), np.zeros(n, np.int64)
        for at in range(0, len(keys), _CHUNK):
            a, b = unpack_keys(keys[at : at + _CHUNK])
            followings += np.bincount(a, minlength=n)
            followers += np.bincount(b, minlength=n)
        self._saving(self.u_followings, slice(None))
        self._saving(self.u_followers, slice(None))
        self.u_followings.a[:] += followings.astype(np.int32)
        self.u_followers.a[:] += followers.astype(np.int32)
        # (the edges join users added in this same step: their rows are written with these counts)

    def create_posts(self, authors: np.ndarray, texts: list[str], stance=None, label=None) -> np.ndarray:
        """Seed original posts outside of agent actions (scenario roots, previous tweets)."""
        authors = np.asarray(authors, dtype=np.int64)
        ids = self._new_posts(authors, ORIGINAL, np.full(len(authors), -1), list(texts), [None] * len(authors), stance)
        if label is not None:
            self.p_label.a[ids] = label
        return ids

    # ------------------------------------------------------------------ platform-side actions
    def set_opinions(self, users: np.ndarray, values: np.ndarray) -> None:
        """Set users' opinions; journaled (table `opinion`)."""
        users = np.asarray(users, dtype=np.int64)
        self._saving(self.u_opinion, users)
        self.u_opinion.a[users] = values
        self.pending.opinions.append((users.copy(), self.u_opinion.a[users].copy()))

    def moderate(self, post_ids: np.ndarray, status: int) -> None:
        """Set a moderation status (LABELLED, DOWNRANKED, REMOVED) on posts; journaled."""
        post_ids = np.asarray(post_ids, dtype=np.int64)
        self._saving(self.p_status, post_ids)
        self.p_status.a[post_ids] = status
        self.pending.touched_posts.append(post_ids)
        self.pending.moderation.append(("post", post_ids, MODERATION_NAMES[status]))

    def suspend(self, user_ids: np.ndarray) -> None:
        """Suspend users (they can no longer act, their posts are hidden); journaled."""
        user_ids = np.asarray(user_ids, dtype=np.int64)
        self._saving(self.u_suspended, user_ids)
        self.u_suspended.a[user_ids] = True
        self.pending.touched_users.append(user_ids)
        self.pending.moderation.append(("user", user_ids, "suspend"))

    def advance(self, minutes: int) -> None:
        """Move the clock on to the next step, `minutes` later."""
        self.step += 1
        self.minute += minutes

    def created_at(self, minute: int | None = None) -> str:
        """Simulated wall time of a minute offset, as OASIS's DATETIME text."""
        return datetime_text(self.minute if minute is None else int(minute))

    _db_loader: ClassVar[Callable[[Any], Platform]]  # set by loading.py (the package imports it)

    @classmethod
    def from_db(cls, path) -> Platform:
        """Restore the exact in-memory state from a journal written by `Journal`, or load a
        database written by OASIS (read-only; see `oasis_import.load_oasis`: its rows stay
        pending, so a new `Journal` commit writes them all)."""
        # the loaders live in modules that import this one (loading.py registers itself when
        # the package is imported), so the platform does not import its journal
        return cls._db_loader(path)

    def reset_pending(self) -> StepLog:
        """Hand over what changed since the last commit (the journal wrote it) and start a new log."""
        log, self.pending = self.pending, StepLog()
        return log
