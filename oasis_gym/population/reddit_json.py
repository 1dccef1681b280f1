"""OASIS Reddit profile JSON loader (a list of user objects)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from . import bounded_json
from .model import Population, ProfileError
from .parsing import _opinions, _read_text, _topic_list
from .topics import DEFAULT_REDDIT_ACTIVITY, HOURS, topic_mask

_REDDIT_TEXT = {"realname": "name", "bio": "bio", "persona": "persona"}


def load_reddit_json(path: str | Path, *, default_activity: float = DEFAULT_REDDIT_ACTIVITY) -> Population:
    """Load an OASIS Reddit profile JSON: a list of user objects (agent id = list index).

    Required key: ``username``. Text keys ``realname``/``bio``/``persona`` (default "";
    name defaults to username). ``interested_topics`` maps onto the TOPICS bitmask
    (unknown names set the Other bit; the raw list is kept in extra). ``opinion`` (number
    in [-1, 1]) is used when present. All other keys (age, gender, mbti, country,
    profession, ...) go to extra. There is no follow graph or activity in this format:
    every hour gets ``default_activity`` (0.1, OASIS' Reddit ``activate_prob``).
    """
    path = Path(path)
    if not 0 <= default_activity <= 1:
        raise ValueError(f"default_activity must be in [0, 1], got {default_activity}")
    text = _read_text(path)
    try:
        data = bounded_json.loads(text)  # over-long ints become markers, found per user below
    except json.JSONDecodeError as e:
        raise ProfileError(path, f"line {e.lineno} column {e.colno}", None, f"invalid JSON: {e.msg}") from e
    except RecursionError:
        i, key = bounded_json.locate_failure(text)
        raise ProfileError(path, None if i is None else f"index {i}", key, "nested too deeply to read") from None
    if not isinstance(data, list):
        raise ProfileError(path, None, None, f"top level must be a list of user objects, got {type(data).__name__}")
    if not data:
        raise ProfileError(path, "index 0", None, "the list holds no users")
    fields: dict[str, list[str]] = {"user_name": [], "name": [], "bio": [], "persona": []}
    extra: list[dict[str, Any]] = []
    masks: list[int] = []
    opinions: list[Any] = []
    for i, obj in enumerate(data):
        user, mask, op, rest = _reddit_user(path, i, obj)
        for k, v in user.items():
            fields[k].append(v)
        masks.append(mask)
        opinions.append(op)
        extra.append(rest)
    n = len(data)
    pop = Population(
        n=n,
        user_name=fields["user_name"],
        name=fields["name"],
        bio=fields["bio"],
        persona=fields["persona"],
        activity=np.full((n, HOURS), default_activity, dtype=np.float32),
        follow_src=np.zeros(0, dtype=np.int64),
        follow_dst=np.zeros(0, dtype=np.int64),
        previous_posts=[],
        opinion=_opinions(path, opinions, "index"),
        interests=np.array(masks, dtype=np.uint64),
        is_core=np.zeros(n, dtype=bool),
        extra=extra,
        source=str(path),
    )
    pop.validate()
    return pop


def _reddit_user(path: Path, i: int, obj: Any) -> tuple[dict[str, str], int, Any, dict[str, Any]]:
    where = f"index {i}"
    if not isinstance(obj, dict):
        raise ProfileError(path, where, None, f"must be a JSON object, got {type(obj).__name__}")
    _check_json_strings(path, where, obj)
    username = obj.get("username")
    if not isinstance(username, str) or not username.strip():
        raise ProfileError(path, where, "username", "missing username")
    user = {"user_name": username}
    for key, field in _REDDIT_TEXT.items():
        v = obj.get(key)
        if v is not None and not isinstance(v, str):
            raise ProfileError(path, where, key, f"must be a string, got {type(v).__name__}")
        user[field] = v or ""
    user["name"] = user["name"] or username
    topics = _topic_list(path, where, obj.get("interested_topics"))
    rest = {k: v for k, v in obj.items() if k not in _REDDIT_TEXT and k not in ("username", "opinion")}
    rest["interested_topics"] = topics
    return user, topic_mask(topics), obj.get("opinion"), rest


def _check_json_strings(path: Path, where: str, obj: dict[str, Any]) -> None:
    """Report undecodable bytes / lone surrogates, over-long numbers and deep nesting with
    the JSON index and key."""
    for key, value in obj.items():
        fault = bounded_json.first_fault(key) or bounded_json.first_fault(value)
        if fault:  # also over-long numbers and absurd nesting (iterative: no RecursionError)
            raise ProfileError(path, where, key, fault)
