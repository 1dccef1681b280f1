"""Gymnasium spaces of the agents: the users' (`user_spaces`) and the platform agents' (the
agents themselves import no gymnasium), and the one check of an env's action against its space
(`check_action`).

A platform agent states its observation as `observation_size` floats and its action either
as `action_nvec` (one discrete code per slot: `MultiDiscrete`) or as `action_shape` floats
within `action_bounds` (`Box`).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

import oasis_gym
from oasis_gym.actions import NUM_ACTIONS
from oasis_gym.checks import action_array
from oasis_gym.sim import COMMENT_FEATURES, FEED_FEATURES, SELF_FEATURES, VIEW_USER_FEATURES

_ID_HIGH = 2**62  # the bound of an id in an observation


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


def user_spaces(K: int, C: int, U: int) -> tuple[spaces.Dict, spaces.Dict, dict]:
    """A user's observation space (K feed slots, C comments per slot, U user slots), its
    action space, and the observation of an inactive user (masks allow only do_nothing)."""
    KC = K * C
    box = lambda shape, lo=-np.inf, hi=np.inf, dt=np.float32: spaces.Box(lo, hi, shape, dt)  # noqa: E731
    mask = lambda n: spaces.Box(0, 1, (n,), np.int8)  # noqa: E731
    obs_space = spaces.Dict(
        {
            "active": spaces.Box(0, 1, (1,), np.int8),
            "post_ids": box((K,), -1, _ID_HIGH, np.int64),
            "feed": box((K, len(FEED_FEATURES))),
            "comment_ids": box((KC,), -1, _ID_HIGH, np.int64),
            "comments": box((KC, len(COMMENT_FEATURES))),
            "user_ids": box((U,), -1, _ID_HIGH, np.int64),
            "users": box((U, len(VIEW_USER_FEATURES))),
            "self": box((len(SELF_FEATURES),)),
            "action_mask": spaces.Dict(
                {"type": mask(NUM_ACTIONS), "post": mask(K), "comment": mask(KC), "user": mask(U)}
            ),
        }
    )
    act_space = spaces.Dict(
        {
            "type": spaces.Discrete(NUM_ACTIONS),
            "post": spaces.Discrete(K),
            "comment": spaces.Discrete(KC),
            "user": spaces.Discrete(U),
        }
    )
    inactive = obs_space.sample()
    for key, value in inactive.items():
        if key == "action_mask":
            for m in value.values():
                m[:] = 0
            value["type"][0] = 1  # only do_nothing
        else:
            value[...] = -1 if key.endswith("_ids") else 0
    return obs_space, act_space, inactive
