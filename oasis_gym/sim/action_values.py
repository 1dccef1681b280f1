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


def actions_from_dicts(users: np.ndarray, actions: list) -> ActionArrays:
    """Columnar actions from PettingZoo-style action values (`parse_action` each)."""

    rows = [parse_action(a) for a in actions]
    n = len(rows)
    cols = [np.array([r[k] for r in rows], dtype=np.int64).reshape(n) for k in range(4)]
    return ActionArrays(
        np.asarray(users, dtype=np.int64),
        *cols,
        [r[4] for r in rows],
        np.array([r[5] for r in rows], dtype=np.float32).reshape(n),
    )
