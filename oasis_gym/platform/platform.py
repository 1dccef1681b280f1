"""The social platform: columnar in-memory state and one batched `apply` per step.

Semantics follow OASIS where OASIS is right:
- a repost / like / dislike / comment / report / quote aimed at a repost resolves to the
  root post (quotes are posts of their own and are rated as such);
- a quote of a quote quotes the quoted post's root, and the share counts there, as in
  OASIS (`PlatformConfig.nested_quotes=True` keeps the quote of a quote pointing at the
  quote, a deeper cascade tree; see README "Deviations from OASIS");
- duplicate like / dislike / follow / mute / report / repost are rejected; unlike, undo,
  unfollow and unmute only succeed after the matching action;
- counters (num_likes, num_followers, ...) stay exact; self-rating is an option.
And fixed where OASIS is wrong: following or muting yourself or a user who does not exist is
rejected; mute hides the mutee's posts and comments from the muter (feeds, search, trends).

Conflicts inside one step are resolved in a fixed, documented order (`PHASES`): first
sign-ups, then content creation (create_post, repost, quote_post, create_comment), then the
relation additions (follow, mute, like/dislike post, like/dislike comment, report), then the
relation removals (unfollow, unmute, unlike, undo dislike, ...); within one action type,
actions keep their batch order, and of two identical ones the first wins. Targets must exist
when the step starts: a post created in this step cannot be liked in this same step.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from ..actions import (
    ACTION_NAMES,
    ALL_ACTIONS,
    COMMENT_TARGET,
    NUM_ACTIONS,
    POST_TARGET,
    TEXT_ACTIONS,
    USER_TARGET,
)
from ..actions import (
    ActionType as A,
)
from ..actions import (
    Result as R,
)
from .kinds import ORIGINAL, QUOTE, REPOST
from .search_index import post_index, top_visible_posts, user_index
from .store import GrowArray, PairSet, pair_keys, sorted_unique, unpack_keys
from .text import TextColumn, check_text, is_storable

if TYPE_CHECKING:
    from .checkpoint import Checkpoint

# Moderation states. (The post kinds ORIGINAL / REPOST / QUOTE live in kinds.py, which
# search_index reads too; imported above, so `platform.REPOST` still works.)
VISIBLE, LABELLED, DOWNRANKED, REMOVED = 0, 1, 2, 3
MODERATION_NAMES = ("none", "label", "downrank", "remove")
UNKNOWN_LABEL, TRUE_LABEL, MISINFO_LABEL = -1, 0, 1

CREATE_PHASE = (A.CREATE_POST, A.REPOST, A.QUOTE_POST, A.CREATE_COMMENT)
ADD_PHASE = (A.FOLLOW, A.MUTE, A.LIKE_POST, A.DISLIKE_POST, A.LIKE_COMMENT, A.DISLIKE_COMMENT, A.REPORT_POST)
REMOVE_PHASE = (A.UNFOLLOW, A.UNMUTE, A.UNLIKE_POST, A.UNDO_DISLIKE_POST, A.UNLIKE_COMMENT, A.UNDO_DISLIKE_COMMENT)
PHASES = ((A.SIGN_UP,), CREATE_PHASE, ADD_PHASE, REMOVE_PHASE)

# relation name (= OASIS table) for each relation action, and the inverse of each removal
RELATION_OF = {
    A.FOLLOW: "follow",
    A.UNFOLLOW: "follow",
    A.MUTE: "mute",
    A.UNMUTE: "mute",
    A.LIKE_POST: "like",
    A.UNLIKE_POST: "like",
    A.DISLIKE_POST: "dislike",
    A.UNDO_DISLIKE_POST: "dislike",
    A.LIKE_COMMENT: "comment_like",
    A.UNLIKE_COMMENT: "comment_like",
    A.DISLIKE_COMMENT: "comment_dislike",
    A.UNDO_DISLIKE_COMMENT: "comment_dislike",
    A.REPORT_POST: "report",
}
RELATIONS = ("follow", "mute", "like", "dislike", "comment_like", "comment_dislike", "report", "repost")
JOURNALED_RELATIONS = RELATIONS[:-1]  # each has a journal table; repost pairs derive from the posts


@dataclass
class PlatformConfig:
    """Platform rules. `available_actions` is the action set agents may use."""

    name: str = "twitter"
    available_actions: tuple[int, ...] = tuple(int(a) for a in ALL_ACTIONS)
    allow_self_rating: bool = True
    max_text_length: int = 5000
    trend_window_minutes: int = 24 * 60
    search_limit: int = 10
    search_scan_limit: int = 200_000  # newest posts a text search scans
    # False (OASIS): a quote of a quote points at (and is counted on) the quoted post's
    # root; True: at the quote itself (nested quote chains)
    nested_quotes: bool = False


@dataclass
class ActionBatch:
    """One step's actions as columns. `target` is a post, comment or user id by action type
    (-1 when unused); `text` holds post/comment/quote text, search queries, report reasons."""

    user: np.ndarray
    action: np.ndarray
    target: np.ndarray
    text: list | None = None
    stance: np.ndarray | None = None

    @classmethod
    def of(cls, rows: list[tuple]) -> ActionBatch:
        """Build from (user, action, target[, text[, stance]]) tuples (tests, small runs)."""
        user = np.array([r[0] for r in rows], dtype=np.int64)
        action = np.array([int(r[1]) for r in rows], dtype=np.int64)
        target = np.array([r[2] if len(r) > 2 and r[2] is not None else -1 for r in rows], dtype=np.int64)
        text = [r[3] if len(r) > 3 else None for r in rows]
        stance = np.array([r[4] if len(r) > 4 and r[4] is not None else np.nan for r in rows], dtype=np.float32)
        return cls(user, action, target, text, stance)

    def __len__(self) -> int:
        return len(self.user)


@dataclass
class StepLog:
    """Everything a step changed, waiting to be journaled in one transaction."""

    new_users: list = field(default_factory=list)
    new_posts: list = field(default_factory=list)
    new_comments: list = field(default_factory=list)
    inserts: dict = field(default_factory=dict)  # relation -> list of (pair keys, row ids)
    deletes: dict = field(default_factory=dict)  # relation -> list of row ids
    report_reasons: list = field(default_factory=list)
    touched_posts: list = field(default_factory=list)
    touched_comments: list = field(default_factory=list)
    touched_users: list = field(default_factory=list)
    traces: list = field(default_factory=list)  # TraceRows, one per apply
    opinions: list = field(default_factory=list)  # (user ids, values)
    moderation: list = field(default_factory=list)  # (kind, ids, action)


class TraceRows(NamedTuple):
    """One apply's trace: every action as given (raw code), its resolved target, the id it
    created or -1, its result, and {row: text} for text-carrying actions."""

    user: np.ndarray
    action: np.ndarray
    target: np.ndarray
    new_id: np.ndarray
    result: np.ndarray
    texts: dict


# JSON keys of a trace row's info, by action code (the journal renders info from these)
TRACE_TARGET_KEY = [
    (
        "post_id"
        if a in POST_TARGET
        else "comment_id"
        if a in COMMENT_TARGET
        else "user_id"
        if a in USER_TARGET
        else None
    )
    for a in range(NUM_ACTIONS)
]
TRACE_CREATED_KEY = [
    "comment_id" if a == A.CREATE_COMMENT else "post_id" if a == A.CREATE_POST else "new_post_id"
    for a in range(NUM_ACTIONS)
]
TRACE_TEXT_KEY = [
    (
        "query"
        if a in (A.SEARCH_POSTS, A.SEARCH_USER)
        else "reason"
        if a == A.REPORT_POST
        else "content"
        if a in TEXT_ACTIONS
        else None
    )
    for a in range(NUM_ACTIONS)
]
_HAS_TEXT_KEY = np.array([k is not None for k in TRACE_TEXT_KEY])
_REPORT_POST = int(A.REPORT_POST)  # a plain int: enum attribute lookups are slow in per-row loops


def _rejected_text_note(text: object, code: int) -> str:
    """What the trace keeps of a rejected action's text: the text itself when it is storable
    and short, a 200-character preview when too long, a repr when it cannot be stored as
    UTF-8 text (non-str, NUL, unpaired surrogates)."""
    if isinstance(text, str) and code == R.TEXT_TOO_LONG:
        preview = text[:200]
        return f"{preview if is_storable(preview) else repr(preview)}... ({len(text)} characters)"
    if not isinstance(text, str) or not is_storable(text):
        return repr(text)[:200]
    return text


EPOCH = dt.datetime(2026, 1, 1)  # simulated time 0 (minute offsets are added to it)


class Platform:
    """All users, posts, comments and relations of one simulated platform."""

    def __init__(self, config: PlatformConfig | None = None, start_minute: int = 0):
        self.config = config or PlatformConfig()
        self.step = 0
        self.minute = start_minute
        # users
        self.u_signed_up = GrowArray(bool)
        self.u_suspended = GrowArray(bool)
        self.u_is_core = GrowArray(bool)
        self.u_followers = GrowArray(np.int32)
        self.u_followings = GrowArray(np.int32)
        self.u_posts = GrowArray(np.int32)
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
        self.p_likes = GrowArray(np.int32)
        self.p_dislikes = GrowArray(np.int32)
        self.p_shares = GrowArray(np.int32)
        self.p_reports = GrowArray(np.int32)
        self.p_comments = GrowArray(np.int32)
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
        self.c_likes = GrowArray(np.int32)
        self.c_dislikes = GrowArray(np.int32)
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
        from .checkpoint import capture

        self._undo = []
        return capture(self)

    def rollback(self, cp: Checkpoint) -> None:
        """Restore the state of `checkpoint()` and stop recording."""
        from .checkpoint import restore

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
        return len(self.u_signed_up)

    @property
    def n_posts(self) -> int:
        return len(self.p_author)

    @property
    def n_comments(self) -> int:
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
            self._seed_follows(population.follow_src + first, population.follow_dst + first)
        for author, text in population.previous_posts:
            self.create_posts(np.array([author + first]), [text])
        return ids

    def _seed_follows(self, src: np.ndarray, dst: np.ndarray) -> None:
        keep = (src != dst) & (src >= 0) & (dst >= 0) & (src < self.n_users) & (dst < self.n_users)
        keys = sorted_unique(pair_keys(src[keep], dst[keep]))
        if len(self.rel["follow"]):
            keys = keys[~self.rel["follow"].contains_keys(keys)]
        self._add_pairs("follow", keys)
        a, b = unpack_keys(keys)
        n = self.n_users
        self._saving(self.u_followings, slice(None))
        self._saving(self.u_followers, slice(None))
        self.u_followings.a[:] += np.bincount(a, minlength=n).astype(np.int32)
        self.u_followers.a[:] += np.bincount(b, minlength=n).astype(np.int32)
        # (the edges join users added in this same step: their rows are written with these counts)

    def _add_pairs(self, name: str, keys: np.ndarray) -> None:
        """Add absent pairs to a journaled relation, numbered in the given order, and log them."""
        first = self.next_row_id[name]
        ids = np.arange(first, first + len(keys), dtype=np.int64)
        self.next_row_id[name] += len(keys)
        if len(self.rel[name]) == 0:  # e.g. the initial follow graph: a bulk build
            self.rel[name] = PairSet(keys, ids)
        else:
            self.rel[name].add_keys(keys, ids)
        self.pending.inserts.setdefault(name, []).append((keys, ids))

    def create_posts(self, authors: np.ndarray, texts: list[str], stance=None, label=None) -> np.ndarray:
        """Seed original posts outside of agent actions (scenario roots, previous tweets)."""
        authors = np.asarray(authors, dtype=np.int64)
        ids = self._new_posts(authors, ORIGINAL, np.full(len(authors), -1), list(texts), [None] * len(authors), stance)
        if label is not None:
            self.p_label.a[ids] = label
        return ids

    # ------------------------------------------------------------------ apply
    def apply(self, batch: ActionBatch) -> tuple[np.ndarray, np.ndarray]:
        """Apply one step's actions. Returns (result code per action, new post/comment id or -1)."""
        n = len(batch)
        user = np.asarray(batch.user, dtype=np.int64).reshape(-1)
        act = np.asarray(batch.action, dtype=np.int64).reshape(-1)
        target = np.asarray(batch.target, dtype=np.int64).reshape(-1)
        if len(act) != n or len(target) != n:
            raise ValueError(f"ActionBatch columns differ in length: user {n}, action {len(act)}, target {len(target)}")
        texts = batch.text if batch.text is not None else [None] * n
        if len(texts) != n:
            raise ValueError(f"ActionBatch.text has {len(texts)} entries for {n} actions")
        stance = (
            np.asarray(batch.stance, dtype=np.float32)
            if batch.stance is not None
            else np.full(n, np.nan, dtype=np.float32)
        )
        res = np.zeros(n, dtype=np.int8)
        new_id = np.full(n, -1, dtype=np.int64)
        n_users, n_posts, n_comments = self.n_users, self.n_posts, self.n_comments

        bad = (act < 0) | (act >= NUM_ACTIONS)
        raw_act = act
        res[bad] = R.INVALID_ACTION
        act = np.where(bad, A.DO_NOTHING, act)
        known = (user >= 0) & (user < n_users)
        res[(res == 0) & ~known] = R.UNKNOWN_USER
        if n_users:
            u = np.where(known, user, 0)
            res[(res == 0) & ~self.u_signed_up.a[u] & (act != A.SIGN_UP)] = R.UNKNOWN_USER
            res[(res == 0) & self.u_suspended.a[u]] = R.USER_SUSPENDED
        res[(res == 0) & ~self.available[act]] = R.ACTION_UNAVAILABLE

        # resolve and check targets by kind
        is_post_t = np.isin(act, list(POST_TARGET))
        is_comment_t = np.isin(act, list(COMMENT_TARGET))
        is_user_t = np.isin(act, list(USER_TARGET))
        t = target.copy()
        ok = res == 0
        m = ok & is_post_t
        res[m & ((t < 0) | (t >= n_posts))] = R.UNKNOWN_POST
        m &= res == 0
        if m.any():
            kinds = self.p_kind.a[t[m]]
            roots = self.p_root.a[t[m]]
            shift = kinds == REPOST
            if not self.config.nested_quotes:  # OASIS: a quote of a quote quotes its root
                shift |= (kinds == QUOTE) & (act[m] == A.QUOTE_POST)
            t[m] = np.where(shift, roots, t[m])
            res[np.flatnonzero(m)[self.p_status.a[t[m]] == REMOVED]] = R.POST_REMOVED
        m = ok & is_comment_t
        res[m & ((t < 0) | (t >= n_comments))] = R.UNKNOWN_COMMENT
        m &= res == 0
        if m.any():
            res[np.flatnonzero(m)[self.p_status.a[self.c_post.a[t[m]]] == REMOVED]] = R.POST_REMOVED
        m = ok & is_user_t
        res[m & ((t < 0) | (t >= n_users))] = R.UNKNOWN_TARGET_USER
        m &= res == 0
        res[m & (t == user) & np.isin(act, [A.FOLLOW, A.MUTE, A.UNFOLLOW, A.UNMUTE])] = R.SELF_TARGET
        if not self.config.allow_self_rating:
            for codes, author in (
                ([A.LIKE_POST, A.DISLIKE_POST], self.p_author.a),
                ([A.LIKE_COMMENT, A.DISLIKE_COMMENT], self.c_author.a),
            ):
                i = np.flatnonzero((res == 0) & np.isin(act, codes))
                res[i[author[t[i]] == user[i]]] = R.SELF_TARGET

        # text checks (only the few text-carrying actions pay a Python loop)
        max_len = self.config.max_text_length
        rows = np.flatnonzero((res == 0) & np.isin(act, list(TEXT_ACTIONS)))
        res[rows] = [
            check_text(texts[i], max_len, allow_empty=a == _REPORT_POST)
            for i, a in zip(rows.tolist(), act[rows].tolist())
        ]

        # phases
        sel = lambda code: np.flatnonzero((res == 0) & (act == code))  # noqa: E731
        i = sel(A.SIGN_UP)
        if len(i):
            res[i[self.u_signed_up.a[user[i]] | ~_first_occurrence(user[i])]] = R.ALREADY_SIGNED_UP
            i = i[res[i] == 0]
            self._saving(self.u_signed_up, user[i])
            self.u_signed_up.a[user[i]] = True
            self.pending.new_users.append(user[i])
        i = sel(A.CREATE_POST)
        new_id[i] = self._new_posts(
            user[i], ORIGINAL, np.full(len(i), -1), [texts[k] for k in i], [None] * len(i), stance[i]
        )
        i = sel(A.REPOST)
        if len(i):
            keys = pair_keys(user[i], t[i])
            dup = self.rel["repost"].contains_keys(keys) | ~_first_occurrence(keys)
            res[i[dup]] = R.ALREADY_DONE
            i, keys = i[~dup], keys[~dup]
            self.rel["repost"].add_keys(np.sort(keys))
            new_id[i] = self._new_posts(
                user[i],
                REPOST,
                t[i],
                [self.p_content[p] for p in t[i]],
                [self.p_quote[p] for p in t[i]],
                self.p_stance.a[t[i]],
            )
            self._bump(self.p_shares, t[i], 1, self.pending.touched_posts)
        i = sel(A.QUOTE_POST)
        if len(i):
            new_id[i] = self._new_posts(
                user[i], QUOTE, t[i], [self.p_content[p] for p in t[i]], [texts[k] for k in i], stance[i]
            )
            self._bump(self.p_shares, t[i], 1, self.pending.touched_posts)
        i = sel(A.CREATE_COMMENT)
        if len(i):
            new_id[i] = self._new_comments(user[i], t[i], [texts[k] for k in i], stance[i])
            self._bump(self.p_comments, t[i], 1, self.pending.touched_posts)

        for code in ADD_PHASE + REMOVE_PHASE:
            i = sel(code)
            if len(i):
                self._relation(code, i, user, t, res, texts)

        self._trace(user, act, raw_act, t, res, new_id, texts)
        return res, new_id

    def _relation(self, code: A, i: np.ndarray, user, t, res, texts) -> None:
        name = RELATION_OF[code]
        rel = self.rel[name]
        keys = pair_keys(user[i], t[i])
        adding = code in ADD_PHASE
        exists = rel.contains_keys(keys)
        bad = (exists if adding else ~exists) | ~_first_occurrence(keys)
        res[i[bad]] = R.ALREADY_DONE if adding else R.NOT_DONE
        i, keys = i[~bad], keys[~bad]
        if not len(i):
            return
        sign = 1 if adding else -1
        if adding:
            self._add_pairs(name, keys)
        else:
            self.pending.deletes.setdefault(name, []).append(rel.values_of(keys))
            rel.remove_keys(keys)
        if name == "report":
            self.pending.report_reasons.extend(texts[k] or "" for k in i)
        tg = t[i]
        log = self.pending
        if name == "follow":
            self._bump(self.u_followings, user[i], sign, log.touched_users)
            self._bump(self.u_followers, tg, sign, log.touched_users)
        elif name == "like":
            self._bump(self.p_likes, tg, sign, log.touched_posts)
        elif name == "dislike":
            self._bump(self.p_dislikes, tg, sign, log.touched_posts)
        elif name == "report":
            self._bump(self.p_reports, tg, sign, log.touched_posts)
        elif name == "comment_like":
            self._bump(self.c_likes, tg, sign, log.touched_comments)
        elif name == "comment_dislike":
            self._bump(self.c_dislikes, tg, sign, log.touched_comments)

    def _bump(self, col: GrowArray, ids: np.ndarray, delta: int, touched: list) -> None:
        self._saving(col, ids)
        np.add.at(col.a, ids, delta)
        touched.append(ids)

    def _new_posts(self, authors, kind, roots, contents, quotes, stance=None) -> np.ndarray:
        k = len(authors)
        if not k:
            return np.empty(0, dtype=np.int64)
        ids = self.p_author.extend(authors)
        self.p_root.extend(roots)
        self.p_kind.extend(np.full(k, kind))
        self.p_minute.extend(np.full(k, self.minute))
        self.p_step.extend(np.full(k, self.step))
        for col in (self.p_likes, self.p_dislikes, self.p_shares, self.p_reports, self.p_comments, self.p_status):
            col.append_fill(k)
        self.p_stance.extend(stance if stance is not None else np.full(k, np.nan))
        self.p_label.extend(self.p_label.a[roots] if kind != ORIGINAL else np.full(k, UNKNOWN_LABEL))
        self.p_last_comment.append_fill(k)
        # per-author linked list of posts, newest first; authors may repeat within a batch
        prev = np.empty(k, dtype=np.int64)
        self._saving(self.u_last_post, authors)
        self._saving(self.u_posts, authors)
        last = self.u_last_post.a
        for j in range(k):  # sequential by nature; k is the number of posts created this step
            a = authors[j]
            prev[j] = last[a]
            last[a] = ids[j]
        self.p_prev_by_author.extend(prev)
        np.add.at(self.u_posts.a, authors, 1)
        self.p_content.extend(contents)
        self.p_quote.extend(quotes)
        self.pending.new_posts.append(ids)
        return ids

    def _new_comments(self, authors, posts, contents, stance) -> np.ndarray:
        k = len(authors)
        ids = self.c_post.extend(posts)
        self.c_author.extend(authors)
        self.c_minute.extend(np.full(k, self.minute))
        self.c_step.extend(np.full(k, self.step))
        self.c_likes.append_fill(k)
        self.c_dislikes.append_fill(k)
        self.c_stance.extend(stance)
        prev = np.empty(k, dtype=np.int64)
        self._saving(self.p_last_comment, posts)
        last = self.p_last_comment.a
        for j in range(k):
            prev[j] = last[posts[j]]
            last[posts[j]] = ids[j]
        self.c_prev_on_post.extend(prev)
        self.c_content.extend(contents)
        self.pending.new_comments.append(ids)
        return ids

    def _trace(self, user, act, raw_act, t, res, new_id, texts) -> None:
        """Trace rows: OASIS's (user_id, action, info) for every action, rejected ones too.

        Kept as columns; the journal renders each row's `info` JSON, like OASIS's
        ({"post_id": 3}, {"content": ..., "post_id": 9}), never with feed dumps. Only the
        text-carrying rows are looked at here, to pick the text the trace keeps.
        """
        with_text = _HAS_TEXT_KEY[act]
        notes = {k: texts[k] for k in np.flatnonzero(with_text & (res == 0)).tolist() if texts[k] is not None}
        for k in np.flatnonzero(with_text & (res != 0)).tolist():
            if texts[k] is not None:
                notes[k] = _rejected_text_note(texts[k], int(res[k]))
        self.pending.traces.append(TraceRows(user.copy(), raw_act.copy(), t.copy(), new_id.copy(), res.copy(), notes))

    # ------------------------------------------------------------------ platform-side actions
    def set_opinions(self, users: np.ndarray, values: np.ndarray) -> None:
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
        user_ids = np.asarray(user_ids, dtype=np.int64)
        self._saving(self.u_suspended, user_ids)
        self.u_suspended.a[user_ids] = True
        self.pending.touched_users.append(user_ids)
        self.pending.moderation.append(("user", user_ids, "suspend"))

    def advance(self, minutes: int) -> None:
        self.step += 1
        self.minute += minutes

    # ------------------------------------------------------------------ queries
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
        words = [w for w in str(query).lower().split() if w]
        if not words:
            return np.empty(0, dtype=np.int64)
        lo = max(0, self.n_posts - self.config.search_scan_limit)
        cand = post_index(self).match(words)  # non-repost posts holding every word (sorted ids)
        return top_visible_posts(self, viewer, cand[np.searchsorted(cand, lo) :], k)

    def search_users(self, viewer: int, query: str, k: int | None = None) -> np.ndarray:
        """Users whose user name, name or bio contains every query word, most followed first."""
        k = k or self.config.search_limit
        words = [w for w in str(query).lower().split() if w]
        if not words:
            return np.empty(0, dtype=np.int64)
        cand = user_index(self).match(words)  # users whose "user_name name bio" holds every word
        cand = cand[cand != viewer]
        cand = cand[~self.muted_mask(viewer, cand)]
        return cand[np.lexsort((cand, -self.u_followers.a[cand]))[:k]]

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

    def created_at(self, minute: int | None = None) -> str:
        """Simulated wall time of a minute offset, as OASIS's DATETIME text."""
        return _datetime_text(self.minute if minute is None else int(minute))

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
        log, self.pending = self.pending, StepLog()
        return log


@functools.lru_cache(maxsize=4096)
def _datetime_text(minute: int) -> str:
    return (EPOCH + dt.timedelta(minutes=minute)).strftime("%Y-%m-%d %H:%M:%S")


def action_name(code: int) -> str:
    """The action's name, or 'invalid' for a code outside the action set."""
    return ACTION_NAMES[code] if 0 <= code < NUM_ACTIONS else "invalid"


def _first_occurrence(keys: np.ndarray) -> np.ndarray:
    """True for the first occurrence of each key (batch order)."""
    first = np.zeros(len(keys), dtype=bool)
    first[np.unique(keys, return_index=True)[1]] = True
    return first
