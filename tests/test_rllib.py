"""RLlib (ray[rllib]) trains both platform agents in the multi-agent parallel env.

ray[rllib] pins its own gymnasium (1.2.2), so it lives in its own environment: `.ci/run`
installs `.[dev,train,rllib]` in a second venv and runs this file (and the env / training
tests) there with OASIS_GYM_REQUIRE_RLLIB=1, which turns a missing ray into a failure.
In the main test environment (no ray) this file is skipped.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

if os.environ.get("OASIS_GYM_REQUIRE_RLLIB") != "1":
    pytest.importorskip("ray.rllib", reason="ray[rllib] is tested in its own venv (.ci/run)")

from oasis_gym.scenarios.misinfo_stream import MisinfoScenario  # noqa: E402

SCENARIO = MisinfoScenario(
    initial_true=8,
    initial_misinfo=4,
    stream_rate=1.5,
    n_outlets=5,
    n_misinfo_accounts=3,
    agent_params={"moderator": {"top_m": 5}},
)
ENV = {"users": 60, "max_cycles": 6, "scenario": SCENARIO, "learn_moderator": True, "activation": 0.3}


def test_parallel_env_api():
    """The two-platform-agent parallel env passes PettingZoo's `parallel_api_test`."""
    from oasis_gym.train.rllib_recommender import PlatformAgentsParallelEnv
    from pettingzoo.test import parallel_api_test

    env = PlatformAgentsParallelEnv(**ENV)
    parallel_api_test(env, num_cycles=8)
    obs, _ = env.reset(seed=3)
    assert set(obs) == {"recommender_0", "moderator_0"}
    assert obs["moderator_0"].shape == env.observation_space("moderator_0").shape
    env.close()


def test_rllib_trains_both_platform_agents(tmp_path):
    """RLlib trains both platform agents for 3 iterations and writes the learning curve."""
    import gymnasium
    import ray
    from oasis_gym.train.rllib_recommender import train

    try:
        rows = train(3, dict(ENV), out_dir=str(tmp_path), train_batch_size=24, minibatch_size=12, num_epochs=2)
    finally:
        ray.shutdown()
    assert [r["iteration"] for r in rows] == [1, 2, 3]
    steps = [r["num_env_steps_sampled_lifetime"] for r in rows]
    assert all(b > a for a, b in zip(steps, steps[1:]))  # each iteration sampled new steps
    for r in rows:  # a learning curve for each learner
        returns = r["agent_episode_returns_mean"]
        assert set(returns) == {"recommender_0", "moderator_0"}
        assert all(math.isfinite(v) for v in returns.values())
    assert (tmp_path / "rllib_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "rllib_curve.json").exists()
    print("gymnasium", gymnasium.__version__, "ray", ray.__version__, "curve", np.round(steps, 1).tolist())
