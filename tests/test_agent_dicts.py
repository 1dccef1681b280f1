"""The per-agent dicts of a step are copies of per-episode templates: fresh each time, equal to
the dicts they replace (dict.fromkeys, dict(zip(...)))."""

from __future__ import annotations

import math

import numpy as np

from oasis_gym.envs import twitter_v0
from oasis_gym.envs.agent_dicts import AgentDicts


def test_constant_dicts_are_fresh_copies_of_one_template_per_episode():
    dicts, agents = AgentDicts(), ["a", "b", "c"]
    first = dicts.constant(agents, "t", False)
    first["a"] = True  # the caller's own dict: the next one is unchanged
    assert dicts.constant(agents, "t", False) == dict.fromkeys(agents, False)
    assert list(dicts.constant(agents, "t", False)) == agents  # the agents' order
    new_episode = ["x", "y"]
    assert dicts.constant(new_episode, "t", False) == {"x": False, "y": False}


def test_floats_equal_dict_of_zip_padded_with_zero():
    dicts, agents = AgentDicts(), ["u0", "u1", "u2", "u3", "recommender"]
    values = np.array([0.0, -0.0, 2.5, np.nan], dtype=np.float32)
    got = dicts.floats(agents, values)
    want = dict(zip(agents, values.tolist())) | {"recommender": 0.0}
    assert list(got) == agents
    assert got["u0"] == 0.0 and math.copysign(1, got["u1"]) == -1 and got["u2"] == 2.5 and math.isnan(got["u3"])
    assert {k: v for k, v in got.items() if k != "u3"} == {k: v for k, v in want.items() if k != "u3"}
    got["u0"] = 9.0
    assert dicts.floats(agents, np.zeros(4, np.float32))["u0"] == 0.0  # fresh each time


def test_a_steps_dicts_are_new_dicts_for_every_live_agent():
    env = twitter_v0.parallel_env(users=30, activation=0.3, max_cycles=4)
    obs, infos = env.reset(seed=0)
    for _ in range(4):
        prev = (obs, infos)
        obs, rewards, terms, truncs, infos = env.step({})
        for d in (obs, rewards, terms, truncs, infos):
            assert list(d) == env.possible_agents
        assert obs is not prev[0] and infos is not prev[1]
        assert all(isinstance(r, float) for r in rewards.values()) and not any(terms.values())
    assert all(truncs.values()) and not env.agents
    env.close()
