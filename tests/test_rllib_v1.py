"""RLlib on the v1 tasks: each env runner steps the task's native vector env, and every
(runner, sub-env) plays its own training seeds. Runs in the RLlib venv (.ci/run)."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

if os.environ.get("OASIS_GYM_REQUIRE_RLLIB") != "1":
    pytest.importorskip("ray.rllib", reason="ray[rllib] is tested in its own venv (.ci/run)")

from oasis_gym.envs.lockstep import LockstepVectorEnv  # noqa: E402
from oasis_gym.model.seeds import TRAIN_SEEDS_FROM, training_seeds  # noqa: E402
from oasis_gym.train import rllib, rllib_vector  # noqa: E402

SMALL = {"users": 100, "max_steps": 4, "difficulty": "hard"}


@pytest.mark.parametrize(("task", "version"), [("recommender", 1), ("recommender", 2), ("moderator", 1)])
def test_two_runners_of_two_sub_envs_play_distinct_training_seeds_on_the_native_vector_env(task, version):
    import ray

    ray.init(num_cpus=3, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        env_config = {"task": task, **SMALL, "record_seeds": True, "version": version}
        config = rllib.build_config("vector", env_config, num_env_runners=2, num_envs_per_env_runner=2,
                                    train_batch_size=64, minibatch_size=32, num_epochs=1)  # fmt: skip
        algo = config.build_algo()
        try:
            result = algo.train()
            kinds = algo.env_runner_group.foreach_env_runner(
                lambda r: type(r.env.unwrapped).__mro__, local_env_runner=False
            )
            versions = algo.env_runner_group.foreach_env_runner(
                lambda r: r.env.unwrapped.version if hasattr(r.env.unwrapped, "version") else 1, local_env_runner=False
            )
            played = algo.env_runner_group.foreach_env_runner(rllib_vector.episode_seeds_of, local_env_runner=False)
        finally:
            algo.stop()
    finally:
        ray.shutdown()
    assert all(LockstepVectorEnv in mro for mro in kinds)  # the native vector env, not a SyncVectorEnv
    assert versions == [version, version]
    assert math.isfinite(result["env_runners"]["episode_return_mean"])
    runners = sorted(w for ((w, _),) in played)
    seeds = [s for ((_, ss),) in played for s in ss]
    assert runners == [1, 2] and len(seeds) >= 2 * 2 * 2  # every sub-env played more than one episode
    assert len(seeds) == len(set(seeds)), "two sub-envs replayed the same episode"
    assert min(seeds) >= TRAIN_SEEDS_FROM  # evaluation seeds are all below


def test_runner_seeds_are_a_fixed_function_of_seed_runner_and_sub_env():
    a = training_seeds(0, 1, 4)
    assert np.array_equal(a, training_seeds(0, 1, 4)) and len(set(a.tolist())) == 4
    assert not set(a.tolist()) & set(training_seeds(0, 2, 4).tolist())
    assert not set(a.tolist()) & set(training_seeds(1, 1, 4).tolist())
    assert a.min() >= TRAIN_SEEDS_FROM


def test_runners_spread_over_a_two_node_ray_cluster_play_distinct_training_seeds():
    """Ray's own local multi-node cluster (two raylets of one CPU each): RLlib places one env
    runner on each node, both train on the native vector env, all seeds distinct."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    try:
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        env_config = {"task": "recommender", **SMALL, "record_seeds": True}
        config = rllib.build_config("vector", env_config, num_env_runners=2, num_envs_per_env_runner=2,
                                    train_batch_size=64, minibatch_size=32, num_epochs=1)  # fmt: skip
        algo = config.build_algo()
        try:
            algo.train()
            nodes = algo.env_runner_group.foreach_env_runner(
                lambda r: ray.get_runtime_context().get_node_id(), local_env_runner=False
            )
            played = algo.env_runner_group.foreach_env_runner(rllib_vector.episode_seeds_of, local_env_runner=False)
        finally:
            algo.stop()
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert len(set(nodes)) == 2  # one runner per node
    seeds = [s for ((_, ss),) in played for s in ss]
    assert len(seeds) == len(set(seeds)) and min(seeds) >= TRAIN_SEEDS_FROM


def test_the_command_trains_on_an_existing_two_node_cluster_given_by_address(capsys):
    """`python -m oasis_gym.train.rllib vector ... --address HEAD:PORT` (docs/multi_node.md): the
    env runners on the cluster's nodes, one JSON line per iteration."""
    import json

    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    try:
        code = rllib.main(["vector", "recommender", "--iterations", "1", "--env-runners", "2", "--envs-per-runner", "2",
                              "--users", "100", "--difficulty", "hard", "--address", cluster.address])  # fmt: skip
    finally:
        ray.shutdown()
        cluster.shutdown()
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0 and len(rows) == 1 and rows[0]["num_env_steps_sampled_lifetime"] > 0
