"""The policy protocol: hybrid routing, user-written functions, ABM users in the env,
seeded determinism of whole runs."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from oasis_gym.actions import ActionType as A
from oasis_gym.app.run import simulate
from oasis_gym.envs import twitter_v0
from oasis_gym.policies.abm import ABMConfig, ABMPolicy
from oasis_gym.policies.base import DictPolicy, FunctionPolicy, RandomPolicy
from oasis_gym.policies.hybrid import HybridPolicy


class Recording(RandomPolicy):
    def __init__(self):
        self.calls: list[np.ndarray] = []

    def act(self, env, obs):
        self.calls.append(obs.users.copy())
        return super().act(env, obs)


def test_hybrid_calls_each_policy_once_per_step_with_exactly_its_active_users():
    env = twitter_v0.parallel_env(users=300, activation=0.3, max_cycles=6)
    env.reset(seed=0)
    core, rest = Recording(), Recording()
    policy = HybridPolicy.top_k_by_followers(env, core, rest, k=40)
    core_ids = set(policy.routes[0][1].tolist())
    acted = []
    simulate(env, policy, seed=0, callback=lambda e, out: acted.append(set(out.users.tolist())))
    assert len(core.calls) == len(rest.calls) == 6
    for c, r, users in zip(core.calls, rest.calls, acted):
        assert set(c.tolist()) == users & core_ids
        assert set(r.tolist()) == users - core_ids
        assert np.all(np.diff(c) > 0) and np.all(np.diff(r) > 0)


def test_a_user_is_routed_once():
    with pytest.raises(ValueError, match="more than one policy"):
        HybridPolicy([(RandomPolicy(), [1, 2]), (RandomPolicy(), [2, 3])])


def test_a_plain_function_plugs_in(tmp_path):
    """Anyone's per-agent function drives users: here everyone likes the first post slot."""

    def like_first(agent, observation, env):
        if observation["action_mask"]["type"][A.LIKE_POST]:
            return {"type": A.LIKE_POST, "post": int(np.argmax(observation["action_mask"]["post"]))}
        return {"type": A.CREATE_POST, "text": f"hello from {agent}"}

    env = twitter_v0.parallel_env(users=50, activation=0.5, max_cycles=4, db_path=str(tmp_path / "f.db"))
    summary = simulate(env, FunctionPolicy(like_first), seed=1)
    conn = sqlite3.connect(tmp_path / "f.db")
    actions = dict(conn.execute("SELECT action, COUNT(*) FROM trace GROUP BY action").fetchall())
    assert set(actions) <= {"like_post", "create_post"} and sum(actions.values()) == summary.actions
    assert conn.execute("SELECT COUNT(*) FROM post WHERE content LIKE 'hello from user_%'").fetchone()[0] > 0


def test_dict_policy_sees_pettingzoo_observations():
    seen = []

    def answer(observations, env):
        seen.append(len(observations))
        assert all(o["active"][0] == 1 for o in observations.values())
        return {a: 0 for a in observations}

    env = twitter_v0.parallel_env(users=40, activation=0.5, max_cycles=2)
    simulate(env, DictPolicy(answer), seed=0)
    assert len(seen) == 2 and sum(seen) > 0


@pytest.mark.parametrize(
    "config",
    [
        ABMConfig(),
        ABMConfig(opinion_model="hegselmann_krause"),
        ABMConfig(diffusion="independent_cascade", cascade_p=0.3),
        ABMConfig(diffusion="threshold"),
    ],
)
def test_abm_runs_are_seeded_and_valid(tmp_path, config):
    def run(seed, name):
        env = twitter_v0.parallel_env(users=400, activation=0.4, max_cycles=6, db_path=str(tmp_path / name))
        env.reset(seed=seed)
        env.sim.platform.create_posts(
            np.arange(20), [f"seed post {i}" for i in range(20)], stance=np.linspace(-1, 1, 20).astype(np.float32)
        )
        policy = ABMPolicy(config)
        policy.reset(env, np.arange(400), seed)
        simulate(env, policy, reset=False)
        conn = sqlite3.connect(tmp_path / name)
        return (
            conn.execute("SELECT user_id, action, info, result FROM trace").fetchall(),
            env.sim.platform.u_opinion.a.copy(),
        )

    a, b, c = run(3, "a.db"), run(3, "b.db"), run(4, "c.db")
    assert a[0] == b[0] and np.array_equal(a[1], b[1])
    assert a[0] != c[0]
    assert not any(r == "invalid_action" for *_, r in a[0])
