"""OASIS Twitter profile CSV loader (``user_char``, ``following_agentid_list``, ...)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .model import Population, ProfileError
from .parsing import (
    _INDEX_COLUMN,
    _TWITTER_HANDLED,
    _check_unique_ids,
    _int_or_none,
    _opinions,
    _parse_activity,
    _parse_flags,
    _parse_follow_edges,
    _parse_previous_tweets,
    _parse_topic_column,
    _read_csv,
)
from .topics import DEFAULT_TWITTER_ACTIVITY, HOURS, oasis_activity_probability


def load_twitter_csv(
    path: str | Path,
    *,
    activity_path: str | Path | None = None,
    default_activity: float = DEFAULT_TWITTER_ACTIVITY,
    drop_self_follows: bool = True,
) -> Population:
    """Load an OASIS Twitter profile CSV (agent id = 0-based data row).

    Required columns: ``username``, ``following_agentid_list``. Used when present:
    ``name`` (default: username), ``description``, ``user_char`` (default: description),
    ``previous_tweets``, ``activity_level_frequency``, ``is_super_user`` (-> is_core),
    ``user_id`` (must be unique), ``interested_topics``, ``opinion``; ``followers_count``
    (or ``follower_count``), ``following_count``, ``created_at`` and other columns go to
    ``extra``. ``follower_agentid_list`` is ignored: it disagrees with the following lists
    in OASIS' own files, and edges come from following_agentid_list as OASIS does.

    Activity: the file's ``activity_level_frequency`` (or, when ``activity_path`` is given,
    that file's column, matched by ``user_id`` when both files have one, else by row) is
    converted with :func:`oasis_activity_probability` (OASIS' formula). Without activity
    information every hour gets ``default_activity`` (1.0: OASIS activates every agent
    each step).

    Edges: OASIS inserts every listed id, self-follows included; here self-follows
    (present in 197_*.csv) are dropped unless ``drop_self_follows=False``, and repeated
    ids within a row are dropped (the follow relation is a set). A cell holding a bare
    integer is read as a one-element list (OASIS silently skips such cells).
    """
    path = Path(path)
    header, rows = _read_csv(path, ("username", "following_agentid_list"))
    col = {c: i for i, c in enumerate(header)}
    n = len(rows)
    if n == 0:  # a simulation without users has nothing to run
        raise ProfileError(path, 1, None, "no user rows (the file holds only a header)")

    def column(name: str, default: str = "") -> list[str]:
        j = col.get(name)
        return [default] * n if j is None else [r[j] for r in rows]

    user_name = column("username")
    for r, u in enumerate(user_name, start=1):
        if not u.strip():
            raise ProfileError(path, r, "username", "missing username")
    if "user_id" in col:
        _check_unique_ids(path, column("user_id"))
    names = [nm if nm.strip() else u for nm, u in zip(column("name"), user_name)]
    bio = column("description")
    persona = [p if p.strip() else b for p, b in zip(column("user_char"), bio)]
    src, dst = _parse_follow_edges(path, column("following_agentid_list"), n, drop_self_follows)
    posts = _parse_previous_tweets(path, column("previous_tweets"))
    activity = _twitter_activity(path, header, rows, activity_path, default_activity)
    is_core = _parse_flags(path, column("is_super_user", "0"), "is_super_user")
    raw_topics, interests = _parse_topic_column(path, column("interested_topics"))
    opinion = _opinions(path, column("opinion"), "row")
    extra = _twitter_extra(path, header, rows, raw_topics if "interested_topics" in col else None)
    pop = Population(
        n=n,
        user_name=user_name,
        name=names,
        bio=bio,
        persona=persona,
        activity=activity,
        follow_src=src,
        follow_dst=dst,
        previous_posts=posts,
        opinion=opinion,
        interests=interests,
        is_core=is_core,
        extra=extra,
        source=str(path),
    )
    pop.validate(allow_self_follows=not drop_self_follows)
    return pop


def _twitter_activity(
    path: Path, header: list[str], rows: list[list[str]], activity_path: str | Path | None, default: float
) -> np.ndarray:
    n = len(rows)
    if not 0 <= default <= 1:
        raise ValueError(f"default_activity must be in [0, 1], got {default}")
    if activity_path is None:
        if "activity_level_frequency" not in header:
            return np.full((n, HOURS), default, dtype=np.float32)
        j = header.index("activity_level_frequency")
        return oasis_activity_probability(_parse_activity(path, [r[j] for r in rows]))
    apath = Path(activity_path)
    aheader, arows = _read_csv(apath, ("activity_level_frequency",))
    freq = _parse_activity(apath, [r[aheader.index("activity_level_frequency")] for r in arows])
    if "user_id" in header and "user_id" in aheader:
        _check_unique_ids(apath, [r[aheader.index("user_id")] for r in arows])
        where = {r[aheader.index("user_id")].strip(): k for k, r in enumerate(arows)}
        j = header.index("user_id")
        take = []
        for r, row in enumerate(rows, start=1):
            k = where.get(row[j].strip())
            if k is None:
                raise ProfileError(path, r, "user_id", f"user_id {row[j]!r} has no row in {apath}")
            take.append(k)
        freq = freq[np.array(take, dtype=np.int64)]
    elif len(arows) != n:
        raise ProfileError(
            apath,
            None,
            "activity_level_frequency",
            f"has {len(arows)} rows but {path} has {n} users (no user_id column in both files to match them by)",
        )
    return oasis_activity_probability(freq)


def _twitter_extra(
    path: Path, header: list[str], rows: list[list[str]], topics: list[list[str]] | None
) -> list[dict[str, Any]]:
    col = {c: i for i, c in enumerate(header)}
    passthrough = [c for c in header if c not in _TWITTER_HANDLED and not _INDEX_COLUMN.match(c)]
    fol = "followers_count" if "followers_count" in col else ("follower_count" if "follower_count" in col else None)
    extra: list[dict[str, Any]] = []
    for r, row in enumerate(rows, start=1):
        d: dict[str, Any] = {}
        if "user_id" in col:
            uid = row[col["user_id"]].strip()
            d["user_id"] = int(uid) if uid.isascii() and uid.isdigit() and int(uid[:20]) < 2**63 else uid
        if fol is not None:
            d["followers_count"] = _int_or_none(path, r, fol, row[col[fol]])
        if "following_count" in col:
            d["following_count"] = _int_or_none(path, r, "following_count", row[col["following_count"]])
        for c in passthrough:
            d[c] = row[col[c]]
        if topics is not None:
            d["interested_topics"] = topics[r - 1]
        extra.append(d)
    return extra
