"""`Platform.apply`: one step's actions in one vectorized pass, and the row-creating helpers
it shares with the loaders (mixed into `Platform` as `ApplyActions`).

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

import numpy as np

from ..actions import IS_COMMENT_TARGET, IS_POST_TARGET, IS_TEXT_ACTION, IS_USER_TARGET, NUM_ACTIONS, KindMask
from ..actions import ActionType as A
from ..actions import Result as R
from .config import REMOVED, UNKNOWN_LABEL
from .kinds import ORIGINAL, QUOTE, REPOST
from .records import ActionBatch, trace_rows
from .store import GrowArray, PairSet, pair_keys
from .text import check_text

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
# the counters a relation keeps up: (column, side of the pair it counts, touched list) by relation
_COUNTERS = {
    "follow": (("u_followings", 0, "touched_users"), ("u_followers", 1, "touched_users")),
    "like": (("p_likes", 1, "touched_posts"),),
    "dislike": (("p_dislikes", 1, "touched_posts"),),
    "report": (("p_reports", 1, "touched_posts"),),
    "comment_like": (("c_likes", 1, "touched_comments"),),
    "comment_dislike": (("c_dislikes", 1, "touched_comments"),),
}
_RATES_POST, _RATES_COMMENT = KindMask((A.LIKE_POST, A.DISLIKE_POST)), KindMask((A.LIKE_COMMENT, A.DISLIKE_COMMENT))
_REPORT_POST = int(A.REPORT_POST)  # a plain int: enum attribute lookups are slow in per-row loops


class ApplyActions:
    """`apply` and the helpers that add rows (posts, comments, relation pairs); part of
    `Platform`, whose columns they write."""

    def apply(self, batch: ActionBatch) -> tuple[np.ndarray, np.ndarray]:
        """Apply one step's actions. Returns (result code per action, new post/comment id or -1)."""
        user, raw_act, target, texts, stance = _batch_columns(batch)
        res = np.zeros(len(batch), dtype=np.int8)
        new_id = np.full(len(batch), -1, dtype=np.int64)
        act = self._admit(user, raw_act, res)
        t = self._resolve_targets(user, act, target, res)
        self._check_texts(act, texts, res)
        self._sign_up(user, _select(res, act, A.SIGN_UP), res)
        self._create(user, act, t, res, new_id, texts, stance)
        for code in ADD_PHASE + REMOVE_PHASE:
            i = _select(res, act, code)
            if len(i):
                self._relation(code, i, user, t, res, texts)
        self.pending.traces.append(trace_rows(user, act, raw_act, t, res, new_id, texts))
        return res, new_id

    def _admit(self, user: np.ndarray, act: np.ndarray, res: np.ndarray) -> np.ndarray:
        """Reject invalid actions, unknown or suspended users and unavailable actions (in `res`);
        returns the action codes with invalid ones replaced by do_nothing."""
        n_users = self.n_users
        bad = (act < 0) | (act >= NUM_ACTIONS)
        res[bad] = R.INVALID_ACTION
        act = np.where(bad, int(A.DO_NOTHING), act)  # (plain ints in numpy: an enum costs ~2.5 us an operation)
        known = (user >= 0) & (user < n_users)
        res[(res == 0) & ~known] = R.UNKNOWN_USER
        if n_users:
            u = np.where(known, user, 0)
            res[(res == 0) & ~self.u_signed_up.a[u] & (act != int(A.SIGN_UP))] = R.UNKNOWN_USER
            res[(res == 0) & self.u_suspended.a[u]] = R.USER_SUSPENDED
        res[(res == 0) & ~self.available[act]] = R.ACTION_UNAVAILABLE
        return act

    def _resolve_targets(self, user: np.ndarray, act: np.ndarray, target: np.ndarray, res: np.ndarray) -> np.ndarray:
        """Check each target by kind (in `res`) and return the targets with reposts (and, OASIS's
        way, quoted quotes) resolved to their root post."""
        n_users, n_posts, n_comments = self.n_users, self.n_posts, self.n_comments
        is_post_t = IS_POST_TARGET(act)
        is_comment_t = IS_COMMENT_TARGET(act)
        is_user_t = IS_USER_TARGET(act)
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
                shift |= (kinds == QUOTE) & (act[m] == int(A.QUOTE_POST))
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
        res[m & (t == user)] = R.SELF_TARGET  # (m: the user-target actions: follow, unfollow, mute, unmute)
        if not self.config.allow_self_rating:
            for codes, author in (
                (_RATES_POST, self.p_author.a),
                (_RATES_COMMENT, self.c_author.a),
            ):
                i = np.flatnonzero((res == 0) & codes(act))
                res[i[author[t[i]] == user[i]]] = R.SELF_TARGET
        return t

    def _check_texts(self, act: np.ndarray, texts: list, res: np.ndarray) -> None:
        """Check the texts of the text-carrying actions still accepted (only they pay a Python loop)."""
        max_len = self.config.max_text_length
        rows = np.flatnonzero((res == 0) & IS_TEXT_ACTION(act))
        res[rows] = [
            check_text(texts[i], max_len, allow_empty=a == _REPORT_POST)
            for i, a in zip(rows.tolist(), act[rows].tolist())
        ]

    def _sign_up(self, user: np.ndarray, i: np.ndarray, res: np.ndarray) -> None:
        """Phase 1: sign-ups (`i`: their rows), each user once."""
        if len(i):
            res[i[self.u_signed_up.a[user[i]] | ~_first_occurrence(user[i])]] = R.ALREADY_SIGNED_UP
            i = i[res[i] == 0]
            self._saving(self.u_signed_up, user[i])
            self.u_signed_up.a[user[i]] = True
            self.pending.new_users.append(user[i])

    def _create(self, user, act, t, res, new_id, texts, stance) -> None:
        """Phase 2: posts, reposts (each pair once), quotes and comments, with their ids in `new_id`."""
        i = _select(res, act, A.CREATE_POST)
        new_id[i] = self._new_posts(
            user[i], ORIGINAL, np.full(len(i), -1), [texts[k] for k in i], [None] * len(i), stance[i]
        )
        i = _select(res, act, A.REPOST)
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
        i = _select(res, act, A.QUOTE_POST)
        if len(i):
            new_id[i] = self._new_posts(
                user[i], QUOTE, t[i], [self.p_content[p] for p in t[i]], [texts[k] for k in i], stance[i]
            )
            self._bump(self.p_shares, t[i], 1, self.pending.touched_posts)
        i = _select(res, act, A.CREATE_COMMENT)
        if len(i):
            new_id[i] = self._new_comments(user[i], t[i], [texts[k] for k in i], stance[i])
            self._bump(self.p_comments, t[i], 1, self.pending.touched_posts)

    def _relation(self, code: A, i: np.ndarray, user, t, res, texts) -> None:
        """Phases 3 and 4: one relation action's rows `i` (additions must be new pairs,
        removals existing ones; each pair once), with the counters they move."""
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
        if adding:
            self._add_pairs(name, keys)
        else:
            self.pending.deletes.setdefault(name, []).append(rel.values_of(keys))
            rel.remove_keys(keys)
        if name == "report":
            self.pending.report_reasons.extend(texts[k] or "" for k in i)
        sides = (user[i], t[i])
        for column, side, touched in _COUNTERS.get(name, ()):
            self._bump(getattr(self, column), sides[side], 1 if adding else -1, getattr(self.pending, touched))

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

    def _bump(self, col: GrowArray, ids: np.ndarray, delta: int, touched: list) -> None:
        self._saving(col, ids)
        np.add.at(col.a, ids, delta)
        touched.append(ids)

    def _new_posts(self, authors, kind, roots, contents, quotes, stance=None) -> np.ndarray:
        """Append posts (with their per-author linked list and counters); returns their ids."""
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
        """Append comments (with their per-post linked list); returns their ids."""
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


def _batch_columns(batch: ActionBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray, list, np.ndarray]:
    """(user, action, target, texts, stance) of a batch as flat arrays; columns that differ in
    length are an error."""
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
        np.asarray(batch.stance, dtype=np.float32) if batch.stance is not None else np.full(n, np.nan, dtype=np.float32)
    )
    return user, act, target, texts, stance


def _select(res: np.ndarray, act: np.ndarray, code: int) -> np.ndarray:
    """Rows of action `code` still accepted."""
    return ((res == 0) & (act == int(code))).nonzero()[0]  # (1-D; an enum member would cost numpy ~2.5 us)


def _first_occurrence(keys: np.ndarray) -> np.ndarray:
    """True for the first occurrence of each key (batch order)."""
    first = np.zeros(len(keys), dtype=bool)
    first[np.unique(keys, return_index=True)[1]] = True
    return first
