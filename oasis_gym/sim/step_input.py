"""A step's input, checked and normalized before anything is applied (a step is atomic).

`check_step_input` turns the users' columnar `ActionArrays` and the platform agents' actions
into plain arrays, or raises ValueError / TypeError / KeyError naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..actions import ActionType as A
from .batches import ActionArrays


def check_platform_actions(platform_actions, platform_agents: Mapping) -> dict:
    """The platform agents' actions by name, each validated by its agent (None: none act)."""
    if platform_actions is not None and not isinstance(platform_actions, Mapping):
        raise TypeError(
            f"platform_actions must map platform agent names to actions, got {type(platform_actions).__name__}"
        )
    platform_actions = dict(platform_actions or {})
    unknown = set(platform_actions) - set(platform_agents)
    if unknown:
        raise KeyError(f"no platform agent(s) {sorted(unknown)} in this env")
    return {name: platform_agents[name].validate(a) for name, a in platform_actions.items()}


def check_step_input(acts: ActionArrays, platform_actions, platform_agents: Mapping) -> tuple:
    """(users, (type, post, comment, user) columns, texts, stance or None, platform actions),
    every one checked; `platform_agents`: the env's platform agents by name."""
    platform_actions = check_platform_actions(platform_actions, platform_agents)
    try:
        raw_users = np.asarray(acts.users).reshape(-1)
    except (TypeError, ValueError) as err:
        raise ValueError(f"actions' users must be an array of user ids: {err}") from None
    n = raw_users.size
    users = int_column(raw_users, n, 0, "users")
    cols = (
        int_column(acts.type, n, A.DO_NOTHING, "type"),
        int_column(acts.post, n, 0, "post"),
        int_column(acts.comment, n, 0, "comment"),
        int_column(acts.user, n, 0, "user"),
    )
    texts = acts.text
    if texts is not None:
        if isinstance(texts, (str, bytes)) or not hasattr(texts, "__len__") or len(texts) != n:
            got = (
                f"{len(texts)} entries"
                if hasattr(texts, "__len__") and not isinstance(texts, (str, bytes))
                else type(texts).__name__
            )
            raise ValueError(f"actions' text must be a sequence of one text (or None) per user: {n} users, got {got}")
    stance = None
    if acts.stance is not None:
        try:
            stance = np.asarray(acts.stance, dtype=np.float32).reshape(-1)
        except (TypeError, ValueError) as err:
            raise ValueError(f"actions' stance must be numbers (NaN: unknown): {err}") from None
        if stance.shape != (n,):
            raise ValueError(f"actions' stance has {stance.size} values for {n} users")
        if np.any(np.abs(stance[~np.isnan(stance)]) > 1):
            raise ValueError("actions' stance must lie in [-1, 1] (NaN: unknown)")
    return users, cols, texts, stance, platform_actions


def int_column(values, n: int, default: int, name: str = "action") -> np.ndarray:
    """An integer action column of `n` values as int64 (`default` everywhere when None);
    floats only when integral, never bools, strings or values beyond int64."""
    if values is None:
        return np.full(n, default, dtype=np.int64)
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as err:
        raise ValueError(f"actions' {name} column is not an array: {err}") from None
    if arr.shape != (n,):
        raise ValueError(f"actions' {name} column has shape {arr.shape}, expected ({n},)")
    if not np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.uint64:
        if np.issubdtype(arr.dtype, np.bool_) or not np.issubdtype(arr.dtype, np.number):
            raise ValueError(f"actions' {name} column must hold integers, got {arr.dtype}")
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"actions' {name} column must hold integers, got non-integral {arr.dtype} values")
        if n and np.max(np.abs(arr.astype(np.float64))) >= 2**62:
            raise ValueError(f"actions' {name} column holds values out of the int64 range")
    return arr.astype(np.int64)
