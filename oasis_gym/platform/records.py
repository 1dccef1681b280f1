"""What a step takes in and what it leaves for the journal: `ActionBatch` (one step's
actions as columns), `StepLog` (everything the step changed, pending until committed) and
`TraceRows` (OASIS's trace: every action, rejected ones too), with the JSON keys the
journal renders a trace row's info from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..actions import (
    ACTION_NAMES_OR_INVALID,
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
from .text import is_storable


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


# JSON keys of a trace row's info, by action code (the journal renders info from these); of
# two keys that could apply, the later one in each table wins
_TARGET_KEYS = {
    **dict.fromkeys(USER_TARGET, "user_id"),
    **dict.fromkeys(COMMENT_TARGET, "comment_id"),
    **dict.fromkeys(POST_TARGET, "post_id"),
}
_TEXT_KEYS = {
    **dict.fromkeys(TEXT_ACTIONS, "content"),
    A.REPORT_POST: "reason",
    A.SEARCH_POSTS: "query",
    A.SEARCH_USER: "query",
}
TRACE_TARGET_KEY = [_TARGET_KEYS.get(a) for a in range(NUM_ACTIONS)]
TRACE_CREATED_KEY = [
    "comment_id" if a == A.CREATE_COMMENT else "post_id" if a == A.CREATE_POST else "new_post_id"
    for a in range(NUM_ACTIONS)
]
TRACE_TEXT_KEY = [_TEXT_KEYS.get(a) for a in range(NUM_ACTIONS)]
_HAS_TEXT_KEY = np.array([k is not None for k in TRACE_TEXT_KEY])


def trace_rows(user, act, raw_act, t, res, new_id, texts) -> TraceRows:
    """One apply's trace rows: OASIS's (user_id, action, info) for every action, rejected ones
    too (`act`: the codes, invalid ones replaced; `raw_act`: as given).

    Kept as columns; the journal renders each row's `info` JSON, like OASIS's
    ({"post_id": 3}, {"content": ..., "post_id": 9}), never with feed dumps. Only the
    text-carrying rows are looked at here, to pick the text the trace keeps.
    """
    with_text = _HAS_TEXT_KEY[act]
    notes = {k: texts[k] for k in np.flatnonzero(with_text & (res == 0)).tolist() if texts[k] is not None}
    for k in np.flatnonzero(with_text & (res != 0)).tolist():
        if texts[k] is not None:
            notes[k] = _rejected_text_note(texts[k], int(res[k]))
    return TraceRows(user.copy(), raw_act.copy(), t.copy(), new_id.copy(), res.copy(), notes)


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


def action_name(code: int) -> str:
    """The action's name, or 'invalid' for a code outside the action set."""
    return ACTION_NAMES_OR_INVALID[code if 0 <= code < NUM_ACTIONS else NUM_ACTIONS]


def action_names(codes: np.ndarray) -> list[str]:
    """`action_name` of each code of an integer array (a lookup per row, no call)."""
    codes = np.asarray(codes)
    names = ACTION_NAMES_OR_INVALID
    return [names[c] for c in np.where((codes >= 0) & (codes < NUM_ACTIONS), codes, NUM_ACTIONS).tolist()]
