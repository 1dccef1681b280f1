"""OASIS's rows in our terms: its relation tables, its two clocks (`time_steps`), its ids
(`map_ids`), its user rows as the population `Platform.add_users` reads (`OasisProfiles`).
`oasis_import` builds a Platform from them."""

from __future__ import annotations

import datetime as dt

import numpy as np

from .apply import RELATION_OF

# relation -> (OASIS table, row id, first column, second column, kind of the first, kind of the second)
OASIS_RELATIONS = {
    "follow": ("follow", "follow_id", "follower_id", "followee_id", "user", "user"),
    "mute": ("mute", "mute_id", "muter_id", "mutee_id", "user", "user"),
    "like": ('"like"', "like_id", "user_id", "post_id", "user", "post"),
    "dislike": ("dislike", "dislike_id", "user_id", "post_id", "user", "post"),
    "comment_like": ("comment_like", "comment_like_id", "user_id", "comment_id", "user", "comment"),
    "comment_dislike": ("comment_dislike", "comment_dislike_id", "user_id", "comment_id", "user", "comment"),
    "report": ("report", "report_id", "user_id", "post_id", "user", "post"),
}
assert set(OASIS_RELATIONS) == set(RELATION_OF.values())


def time_steps(values: list, minutes_per_step: int = 3) -> tuple[np.ndarray, np.ndarray, str]:
    """(step, minute offset, kind) of OASIS `created_at` values: integers are time steps (OASIS's
    Twitter clock); datetimes are minutes since the earliest of them (its Reddit clock), and
    their step is minute // minutes_per_step; NULL or unreadable values count as 0."""
    n = len(values)
    step = np.zeros(n, dtype=np.int64)
    minute = np.zeros(n, dtype=np.int64)
    ints = [_as_int(v) for v in values]
    if any(v is not None for v in values) and all(i is not None for i, v in zip(ints, values) if v is not None):
        step[:] = [0 if i is None else i for i in ints]
        return step, step * minutes_per_step, "steps"
    times = [_as_datetime(v) for v in values]
    known = [t for t in times if t is not None]
    if not known:
        return step, minute, "none"
    t0 = min(known)
    minute[:] = [0 if t is None else int((t - t0).total_seconds() // 60) for t in times]
    return minute // minutes_per_step, minute, "datetime"


def _as_int(v) -> int | None:
    if v is None:
        return None
    if isinstance(v, int):
        return v
    try:
        return int(str(v).strip())
    except ValueError:
        return None


def _as_datetime(v) -> dt.datetime | None:
    if v is None:
        return None
    try:
        return dt.datetime.fromisoformat(str(v).strip())
    except ValueError:
        return None


def map_ids(oasis_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Our ids (positions in the sorted `oasis_ids`) of OASIS ids; -1 where unknown."""
    if not len(oasis_ids):
        return np.full(len(ids), -1, dtype=np.int64)
    pos = np.searchsorted(oasis_ids, ids).clip(0, len(oasis_ids) - 1)
    return np.where(oasis_ids[pos] == ids, pos, -1)


def int_column(rows, k: int, fill: int = -1, label: str = "a column") -> np.ndarray:
    """Column `k` of `rows` as int64, NULL as `fill`; a value that is no whole number (text,
    a blob, 2.5) is a ValueError naming `label` (``post.user_id``) and the row."""
    try:
        return np.array([fill if r[k] is None else _whole(r[k]) for r in rows], dtype=np.int64)
    except (ValueError, TypeError, OverflowError) as err:
        bad = next(((i, r[k]) for i, r in enumerate(rows) if r[k] is not None and not _is_int64(r[k])), None)
        found = f"holds {bad[1]!r} (row {bad[0] + 1}), not a whole number" if bad else f"cannot be read ({err})"
        raise ValueError(f"{label} {found}") from None


def id_column(rows, label: str) -> np.ndarray:
    """Column 0 of `rows` as ids (`int_column`), none repeated: OASIS's ids are primary keys,
    and two rows of one id would be two users, posts or comments (a ValueError naming one)."""
    ids = int_column(rows, 0, label=label)
    unique, counts = np.unique(ids, return_counts=True)
    if unique.size < ids.size:
        raise ValueError(
            f"{label} repeats: {ids.size - unique.size} rows repeat an earlier id (e.g. {int(unique[counts > 1][0])});"
            " an OASIS database numbers each row once"
        )
    return ids


def _whole(v) -> int:
    if isinstance(v, float) and not v.is_integer():
        raise ValueError(v)
    return int(v)


def _is_int64(v) -> bool:
    try:
        return -(2**63) <= _whole(v) < 2**63
    except (ValueError, TypeError, OverflowError):
        return False


class OasisProfiles:
    """The Population fields `Platform.add_users` reads, from OASIS user rows (OASIS keeps no
    activity, opinion or interests: every user may act every hour, opinions are unknown = 0)."""

    def __init__(self, rows):
        n = self.n = len(rows)
        self.user_name = [r[1] or "" for r in rows]
        self.name = [r[2] or "" for r in rows]
        self.bio = [r[3] or "" for r in rows]
        self.persona = [""] * n
        self.is_core = np.zeros(n, dtype=bool)
        self.opinion = np.zeros(n, dtype=np.float32)
        self.interests = np.zeros(n, dtype=np.uint64)
        self.activity = np.ones((n, 24), dtype=np.float32)
        self.follow_src = self.follow_dst = np.empty(0, dtype=np.int64)
        self.previous_posts = []
