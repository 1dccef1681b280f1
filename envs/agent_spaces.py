"""Gymnasium spaces of the platform agents (the agents themselves import no gymnasium), and the
one check of an env's action against its space (`check_action`).

A platform agent states its observation as `observation_size` floats and its action either
as `action_nvec` (one discrete code per slot: `MultiDiscrete`) or as `action_shape` floats
within `action_bounds` (`Box`).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

import oasis_gym
from oasis_gym.checks import action_array


def observation_space(agent) -> spaces.Box:
    """The agent's observation space: a float32 vector of `agent.observation_size`."""
    return spaces.Box(-np.inf, np.inf, (int(agent.observation_size),), np.float32)


def action_space(agent) -> spaces.Space:
    """The agent's action space: `MultiDiscrete(agent.action_nvec)` or a float32 `Box`."""
    nvec = getattr(agent, "action_nvec", None)
    if nvec is not None:
        return spaces.MultiDiscrete(list(nvec))
    low, high = agent.action_bounds
    return spaces.Box(low, high, tuple(agent.action_shape), np.float32)


def check_action(env, action, batched: bool = False) -> np.ndarray:
    """`action` checked against `env.action_space` (a `MultiDiscrete`, or a `Box`: of integer
    codes, or of floats), `batched` for a vector env's (one row per env), by
    `oasis_gym.checks.action_array`: the codes as int64, the floats as float32 clipped to the
    box; anything else (NaN, inf, a code out of range or not integral, another shape, not
    numbers) a `ConfigError` (a ValueError) naming the env, the value and what is allowed."""
    space = env.action_space
    if isinstance(space, spaces.MultiDiscrete):
        low, high, codes = space.start, space.start + space.nvec - 1, True
    else:
        low, high, codes = space.low, space.high, np.issubdtype(space.dtype, np.integer)
    return action_array(action, f"{env_name(env)} action", space.shape, low, high, codes, batched)


def env_name(env) -> str:
    """An env's registered id (`oasis_gym/Recommender-v1`): its spec's, else the id its class is
    registered under (an env made without `gymnasium.make`), else its class name."""
    if getattr(env, "spec", None) is not None:
        return env.spec.id
    entry = f"{type(env).__module__}:{type(env).__qualname__}"
    for table in (oasis_gym.GYMNASIUM_ENVS, oasis_gym.GYMNASIUM_VECTOR_ENVS):
        for env_id, entry_point in table.items():
            if entry_point == entry:
                return env_id
    return type(env).__name__
