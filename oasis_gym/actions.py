"""The social actions of the OASIS paper (21) plus quote_post and report_post, and result codes.

Action codes are stable integers: they are what the gym action space, the journal's trace
table (by name) and the policies exchange. Result codes say why an action was rejected; a
rejected action is a recorded no-op.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class ActionType(IntEnum):
    """The action codes (stable integers; the gym action space, the trace table and the policies use them)."""

    DO_NOTHING = 0
    SIGN_UP = 1
    REFRESH = 2
    TREND = 3
    SEARCH_POSTS = 4
    SEARCH_USER = 5
    CREATE_POST = 6
    REPOST = 7
    QUOTE_POST = 8
    FOLLOW = 9
    UNFOLLOW = 10
    MUTE = 11
    UNMUTE = 12
    LIKE_POST = 13
    UNLIKE_POST = 14
    DISLIKE_POST = 15
    UNDO_DISLIKE_POST = 16
    CREATE_COMMENT = 17
    LIKE_COMMENT = 18
    UNLIKE_COMMENT = 19
    DISLIKE_COMMENT = 20
    UNDO_DISLIKE_COMMENT = 21
    REPORT_POST = 22


NUM_ACTIONS = len(ActionType)
ACTION_NAMES: tuple[str, ...] = tuple(a.name.lower() for a in ActionType)
ACTION_NAMES_OR_INVALID = (*ACTION_NAMES, "invalid")  # by code; NUM_ACTIONS: any code outside the set
ACTION_BY_NAME: dict[str, ActionType] = {a.name.lower(): a for a in ActionType}

# What each action's arguments mean. "post" actions target a post id, "comment" actions a
# comment id, "user" actions a user id; text actions carry text.
POST_TARGET = frozenset(
    {
        ActionType.REPOST,
        ActionType.QUOTE_POST,
        ActionType.LIKE_POST,
        ActionType.UNLIKE_POST,
        ActionType.DISLIKE_POST,
        ActionType.UNDO_DISLIKE_POST,
        ActionType.CREATE_COMMENT,
        ActionType.REPORT_POST,
    }
)
COMMENT_TARGET = frozenset(
    {
        ActionType.LIKE_COMMENT,
        ActionType.UNLIKE_COMMENT,
        ActionType.DISLIKE_COMMENT,
        ActionType.UNDO_DISLIKE_COMMENT,
    }
)
USER_TARGET = frozenset({ActionType.FOLLOW, ActionType.UNFOLLOW, ActionType.MUTE, ActionType.UNMUTE})
TEXT_ACTIONS = frozenset(
    {
        ActionType.CREATE_POST,
        ActionType.QUOTE_POST,
        ActionType.CREATE_COMMENT,
        ActionType.SEARCH_POSTS,
        ActionType.SEARCH_USER,
        ActionType.REPORT_POST,
    }
)


class KindMask:
    """`KindMask(kinds)(action)` equals `np.isin(action, kinds)` for an integer array of action
    codes, by one table lookup (np.isin sorts: ~25 us a call on a hot path); codes outside
    [0, NUM_ACTIONS) are never in it."""

    __slots__ = ("_table",)

    def __init__(self, kinds) -> None:
        self._table = np.zeros(NUM_ACTIONS + 1, dtype=bool)  # the last slot: every out-of-range code
        self._table[[int(k) for k in kinds]] = True

    def __call__(self, action: np.ndarray) -> np.ndarray:
        """True where `action` holds one of the kinds."""
        return self._table[np.clip(action, -1, NUM_ACTIONS)]


IS_POST_TARGET = KindMask(POST_TARGET)
IS_COMMENT_TARGET = KindMask(COMMENT_TARGET)
IS_USER_TARGET = KindMask(USER_TARGET)
IS_TEXT_ACTION = KindMask(TEXT_ACTIONS)
# what counts as engaging with a served feed (the recommender's reward and the env's info)
IS_ENGAGEMENT = KindMask(
    (ActionType.LIKE_POST, ActionType.REPOST, ActionType.QUOTE_POST, ActionType.CREATE_COMMENT, ActionType.LIKE_COMMENT)
)

# OASIS's default action sets (oasis.social_platform.typing.ActionType.get_default_*_actions).
TWITTER_DEFAULT_ACTIONS: tuple[ActionType, ...] = (
    ActionType.CREATE_POST,
    ActionType.LIKE_POST,
    ActionType.REPOST,
    ActionType.FOLLOW,
    ActionType.DO_NOTHING,
    ActionType.QUOTE_POST,
)
REDDIT_DEFAULT_ACTIONS: tuple[ActionType, ...] = (
    ActionType.LIKE_POST,
    ActionType.DISLIKE_POST,
    ActionType.CREATE_POST,
    ActionType.CREATE_COMMENT,
    ActionType.LIKE_COMMENT,
    ActionType.DISLIKE_COMMENT,
    ActionType.SEARCH_POSTS,
    ActionType.SEARCH_USER,
    ActionType.TREND,
    ActionType.REFRESH,
    ActionType.DO_NOTHING,
    ActionType.FOLLOW,
    ActionType.MUTE,
)
ALL_ACTIONS: tuple[ActionType, ...] = tuple(ActionType)


class Result(IntEnum):
    """Why an action was rejected (OK: applied); a rejected action is a recorded no-op."""

    OK = 0
    UNKNOWN_USER = 1
    UNKNOWN_POST = 2
    UNKNOWN_COMMENT = 3
    UNKNOWN_TARGET_USER = 4
    ALREADY_DONE = 5  # duplicate like / dislike / follow / mute / report
    NOT_DONE = 6  # unlike / undo / unfollow / unmute without the matching action
    SELF_TARGET = 7  # follow / mute yourself, or rate your own content
    TEXT_EMPTY = 8
    TEXT_TOO_LONG = 9
    TEXT_INVALID = 10  # NUL bytes or unpaired surrogates
    ACTION_UNAVAILABLE = 11  # not in this platform's action set
    POST_REMOVED = 12  # target removed by moderation
    USER_SUSPENDED = 13
    INVALID_ACTION = 14  # unknown action code / malformed arguments
    INACTIVE = 15  # the agent was not active this step
    ALREADY_SIGNED_UP = 16
    MUTED = 17  # acting on content of a user you muted / who muted you


RESULT_NAMES: tuple[str, ...] = tuple(r.name.lower() for r in Result)
