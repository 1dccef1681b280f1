"""PettingZoo-style action values (a dict, an int, or 4 integers) into the columnar batch.

One home for the dict path below both its users: `SocialMediaEnv.step` (the PettingZoo
env) and the policies that answer with per-agent values (`policies.base.DictPolicy`, the
LLM users). A malformed value never raises: it decodes to action code -1, which the
platform records as a rejected `invalid_action` (a no-op).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .batches import ActionArrays


def parse_action(action) -> tuple[int, int, int, int, str | None, float]:
    """Decode one agent's action. Malformed actions decode to action code -1, which the
    platform records as a rejected `invalid_action` (a no-op), never an exception."""
    bad = (-1, 0, 0, 0, None, np.nan)
    try:
        if isinstance(action, Mapping):
            fields = [action.get(k, 0) for k in ("type", "post", "comment", "user")]
            text = action.get("text")
            stance = action.get("stance")
        elif isinstance(action, (int, np.integer)):
            fields, text, stance = [action, 0, 0, 0], None, None
        else:
            arr = np.asarray(action)
            if arr.shape != (4,):
                return bad
            fields, text, stance = list(arr), None, None
        ints = []
        for v in fields:
            v = np.asarray(v)
            if v.size != 1 or not (
                np.issubdtype(v.dtype, np.integer)
                or (np.issubdtype(v.dtype, np.floating) and np.isfinite(v) and v == np.round(v))
            ):
                return bad
            ints.append(int(v.reshape(())))
        if text is not None and not isinstance(text, str):
            return bad
        if any(abs(v) >= 2**31 for v in ints):
            return bad
        s = float(stance) if stance is not None else np.nan
        s = float(np.clip(s, -1, 1)) if np.isfinite(s) else np.nan
        return ints[0], ints[1], ints[2], ints[3], text, s
    except (TypeError, ValueError, OverflowError):
        return bad


_FIELDS = ("type", "post", "comment", "user")
_LIMIT = 2**31


def actions_from_dicts(users: np.ndarray, actions: list) -> ActionArrays:
    """Columnar actions from PettingZoo-style action values, in one pass over the step's values.

    The common case (dicts whose fields are Python ints, a str or no text, a float, int or no
    stance) is read column by column: a list comprehension per field and one array each, no
    numpy call per agent. Any other value is decoded by `parse_action` (the same result)."""
    actions = list(actions)
    n = len(actions)
    users = np.asarray(users, dtype=np.int64)
    if not all(type(a) is dict for a in actions):  # ints, arrays, other mappings: one by one
        return _from_rows(users, [parse_action(a) for a in actions])
    cols = [[a.get(k, 0) for a in actions] for k in _FIELDS]
    texts = [a.get("text") for a in actions]
    stances = [a.get("stance") for a in actions]
    if _plain(cols, texts, stances):  # the most common case of all, checked by type sets (no loop)
        try:
            arr = np.array(cols, dtype=np.int64).reshape(4, n)
        except OverflowError:  # beyond int64: out of range, decoded below
            arr = None
        if arr is not None and (np.abs(arr) < _LIMIT).all():
            return ActionArrays(users, *arr, texts, np.full(n, np.nan, dtype=np.float32))
    ok = [type(t) is int and type(p) is int and type(c) is int and type(u) is int for t, p, c, u in zip(*cols)]
    ok = np.array(ok, dtype=bool).reshape(n)
    arr = np.zeros((4, n), dtype=np.int64)
    if ok.any():
        idx = np.flatnonzero(ok)
        for k, col in enumerate(cols):
            try:
                arr[k, idx] = [col[i] for i in idx.tolist()] if not ok.all() else col
            except OverflowError:  # beyond int64: out of range anyway
                return _from_rows(users, [parse_action(a) for a in actions])
        ok &= (np.abs(arr) < _LIMIT).all(axis=0)
    ok &= np.array([t is None or type(t) is str for t in texts], dtype=bool).reshape(n)
    ok &= np.array([s is None or type(s) is float or type(s) is int for s in stances], dtype=bool).reshape(n)
    try:
        stance = np.array([np.nan if s is None or not ok[i] else s for i, s in enumerate(stances)], dtype=np.float64)
    except OverflowError:  # an int beyond any float: decoded one by one (as invalid)
        return _from_rows(users, [parse_action(a) for a in actions])
    stance = stance.reshape(n)
    with np.errstate(invalid="ignore"):
        stance = np.where(np.isfinite(stance), np.clip(stance, -1, 1), np.nan)
    for i in np.flatnonzero(~ok).tolist():  # the rare rest, one by one
        *ints, texts[i], stance[i] = parse_action(actions[i])
        arr[:, i] = ints
    return ActionArrays(users, *arr, texts, stance.astype(np.float32))


def _plain(cols: list, texts: list, stances: list) -> bool:
    """Whether every field is a Python int, every text a str or None and no stance given."""
    return (
        bool(texts)
        and all(set(map(type, col)) == {int} for col in cols)
        and set(map(type, texts)) <= {str, type(None)}
        and set(map(type, stances)) == {type(None)}
    )


def _from_rows(users: np.ndarray, rows: list) -> ActionArrays:
    n = len(rows)
    cols = [np.array([r[k] for r in rows], dtype=np.int64).reshape(n) for k in range(4)]
    return ActionArrays(users, *cols, [r[4] for r in rows], np.array([r[5] for r in rows], dtype=np.float32).reshape(n))
