"""Gymnasium spaces of the platform agents (the agents themselves import no gymnasium).

A platform agent states its observation as `observation_size` floats and its action either
as `action_nvec` (one discrete code per slot: `MultiDiscrete`) or as `action_shape` floats
within `action_bounds` (`Box`).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces


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
