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
    from pettingzoo.test import parallel_api_test

    from oasis_gym.train.rllib_platform import PlatformAgentsParallelEnv

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

    from oasis_gym.train.rllib import train

    try:
        rows = train(
            "platform", 3, dict(ENV), out_dir=str(tmp_path), train_batch_size=24, minibatch_size=12, num_epochs=2
        )
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


def test_every_env_runner_and_sub_env_plays_its_own_training_seeds():
    """2 env runners x 2 sub-envs: every episode seed played is distinct across runners and
    sub-envs, and all lie in the training range, disjoint from the evaluation seeds; the
    moderator trains on Moderator-v0's own default scenario."""
    import ray

    from oasis_gym.model.seeds import TRAIN_SEEDS_FROM
    from oasis_gym.train.rllib import build_config
    from oasis_gym.train.rllib_platform import PlatformAgentsParallelEnv, played_episode_seeds

    assert PlatformAgentsParallelEnv(users=30, max_cycles=2, learn_moderator=True)._gym.scenario.name == (
        "misinfo_brigading"
    )
    ray.init(num_cpus=3, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        config = build_config(
            "platform",
            dict(ENV),
            train_batch_size=48,
            minibatch_size=24,
            num_epochs=1,
            num_env_runners=2,
            num_envs_per_env_runner=2,
        )
        algo = config.build_algo()
        try:
            algo.train()
            per_env = [
                e
                for runner in algo.env_runner_group.foreach_env_runner(played_episode_seeds, local_env_runner=False)
                for e in runner
            ]
        finally:
            algo.stop()
    finally:
        ray.shutdown()
    remote = [(w, s) for w, s in per_env if w > 0]
    assert sorted({w for w, _ in remote}) == [1, 2] and len(remote) == 4
    assert all(len(s) >= 2 for _, s in remote)  # each sub-env played more than one episode
    seeds = [x for _, s in per_env for x in s]
    assert len(seeds) == len(set(seeds)), "two sub-envs replayed the same episode"
    assert min(seeds) >= TRAIN_SEEDS_FROM  # evaluation seeds (9100-9119, 1000+, ...) are all below


def test_parallel_env_seed_streams_are_reproducible_and_distinct(monkeypatch):
    """The same seed and creation order give the same episode seeds; two instances differ."""
    import itertools

    from oasis_gym.train import rllib_platform as rl

    small = dict(users=30, max_cycles=2, activation=0.3)
    monkeypatch.setattr(rl, "_INSTANCES", itertools.count())  # a fresh process's creation order
    a, b = rl.PlatformAgentsParallelEnv(**small), rl.PlatformAgentsParallelEnv(**small)
    monkeypatch.setattr(rl, "_INSTANCES", itertools.count())
    a2 = rl.PlatformAgentsParallelEnv(**small)
    for env in (a, b, a2):
        env.reset(seed=0)
        env.reset()
    assert a.episode_seeds == a2.episode_seeds and len(set(a.episode_seeds + b.episode_seeds)) == 4
