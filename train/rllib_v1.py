"""Train a platform agent (Recommender-v1 to v4, Moderator-v1 / v2) with Ray RLlib on its native vector env.

    pip install -e ".[rllib]"     # its own venv: ray[rllib] pins gymnasium 1.2.2 (.ci/run)
    python -m oasis_gym.train.rllib_v1 recommender --difficulty medium --env-runners 2 --envs-per-runner 16
    python -m oasis_gym.train.rllib_v1 recommender --version 3 --difficulty hard
    python -m oasis_gym.train.rllib_v1 recommender --env-runners 8 --address HEAD:6379   # on a Ray cluster

Each RLlib env runner steps its `num_envs_per_env_runner` episodes in one batched call: the
runner's env is the task's `LockstepVectorEnv` (`gym_env_vectorize_mode="vector_entry_point"`),
not K copies of a single env. RLlib seeds runner w with `seed + w` and hands that one seed
to the whole vector env, so `RunnerSeeds` gives every (runner, sub-env) its own training
seed instead: `TRAIN_SEEDS_FROM + hash(seed, runner, sub-env) % 2**40`, never an evaluation
seed (those are below TRAIN_SEEDS_FROM); later episodes follow each sub-env's own chain
(`next_episode_seed`). `episode_seeds_of(runner)` lists what a runner played (tested: 2
runners x 2 sub-envs, all distinct, all in the training range).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from gymnasium.vector import VectorWrapper

from oasis_gym import load_entry_point, vector_envs
from oasis_gym.checks import argtype, ray_address
from oasis_gym.model.seeds import training_seeds
from oasis_gym.model.tiers import DIFFICULTIES

# each task's native vector env per version (env_config "version", default 1): entry points
VECTOR_ENVS = {task: vector_envs(task) for task in ("moderator", "recommender")}
ENV_NAME = "oasis_gym_v1_task"


class RunnerSeeds(VectorWrapper):
    """A v1 vector env whose `reset(seed=s)` starts sub-env i at `training_seeds(s, runner)[i]`
    (the module docstring); `reset()` without a seed continues each sub-env's chain."""

    def __init__(self, env, runner: int):
        super().__init__(env)
        self.runner = int(runner)

    def reset(self, *, seed=None, options=None):
        """Start every sub-env: distinct training seeds for this runner, or the chains' next."""
        if seed is not None:
            seed = [int(s) for s in training_seeds(int(seed), self.runner, self.num_envs)]
        return self.env.reset(seed=seed, options=options)


def make_vector_env(ctx) -> RunnerSeeds:
    """RLlib env creator (called with `num_envs` in the context by RLlib's vector entry point):
    the task's native vector env for this runner, its seeds per `RunnerSeeds`."""
    config = dict(ctx)
    task, num_envs = config.pop("task"), int(config.pop("num_envs", 1))
    record = config.pop("record_seeds", False)
    env = load_entry_point(VECTOR_ENVS[task][config.pop("version", 1)])(num_envs, **config)
    if record:
        env.seeds_played = []
    return RunnerSeeds(env, getattr(ctx, "worker_index", 0))


def episode_seeds_of(runner) -> list[tuple[int, list[int]]]:
    """(runner index, every episode seed its sub-envs started; env_config `record_seeds=True`):
    pass it to `algo.env_runner_group.foreach_env_runner(episode_seeds_of, local_env_runner=False)`."""
    env = runner.env.unwrapped
    return [(int(runner.worker_index), [int(s) for s in env.seeds_played])]


def build_config(task: str, env_config: dict | None = None, num_env_runners: int = 0, num_envs_per_env_runner: int = 8,
                 train_batch_size: int = 2048, minibatch_size: int = 512, num_epochs: int = 5, lr: float = 3e-4,
                 gamma: float = 0.99, seed: int = 0):  # fmt: skip
    """PPO (new API stack) on the v1 task's native vector env, one per env runner."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.registry import register_env

    if task not in VECTOR_ENVS:
        raise ValueError(f"task must be one of {sorted(VECTOR_ENVS)}, got {task!r}")
    version = (env_config or {}).get("version", 1)
    if version not in VECTOR_ENVS[task]:
        raise ValueError(f"version of the {task} must be one of {sorted(VECTOR_ENVS[task])}, got {version!r}")
    register_env(ENV_NAME, make_vector_env)
    return (
        PPOConfig()
        .environment(ENV_NAME, env_config={"task": task, **(env_config or {})})
        .framework("torch")
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=num_envs_per_env_runner,
            gym_env_vectorize_mode="vector_entry_point",
            rollout_fragment_length="auto",
        )
        .training(
            train_batch_size=train_batch_size, minibatch_size=minibatch_size, num_epochs=num_epochs, lr=lr, gamma=gamma
        )
        .debugging(seed=seed)
    )


def train(task: str, iterations: int, env_config: dict | None = None, address: str | None = None,
          **config_kwargs) -> list[dict[str, Any]]:  # fmt: skip
    """`iterations` RLlib iterations; per iteration the mean episode return and the env steps
    sampled (lifetime) and per second. `address`: the Ray cluster to run on (its env runners
    spread over its nodes); None: a local Ray with a CPU per env runner and one for the learner."""
    import ray

    if address is not None:
        ray.init(address=address, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    else:
        ray.init(address="local", num_cpus=max(1, config_kwargs.get("num_env_runners", 0)) + 1,
                 include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)  # fmt: skip
    algo = build_config(task, env_config, **config_kwargs).build_algo()
    rows, start = [], time.perf_counter()
    try:
        for i in range(iterations):
            runners = algo.train().get("env_runners", {})
            steps = runners.get("num_env_steps_sampled_lifetime")
            rows.append({"iteration": i + 1, "episode_return_mean": runners.get("episode_return_mean"),
                         "num_env_steps_sampled_lifetime": steps,
                         "env_steps_per_s": steps / (time.perf_counter() - start) if steps else None})  # fmt: skip
    finally:
        algo.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    """Command line: RLlib PPO on a v1 task; one JSON line per iteration."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("task", choices=sorted(VECTOR_ENVS))
    p.add_argument("--version", type=int, default=1, choices=sorted(VECTOR_ENVS["recommender"]),
                   help="task version (the recommender has 1-4, the moderator 1-2)")  # fmt: skip
    p.add_argument("--difficulty", default="medium", choices=list(DIFFICULTIES))
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--env-runners", type=int, default=0)
    p.add_argument("--envs-per-runner", type=int, default=8)
    p.add_argument("--users", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--address",
        type=argtype(ray_address),
        default=None,
        help="a Ray cluster's head HOST:PORT (as `ray start --head` prints it); default: a local Ray",
    )
    args = p.parse_args(argv)
    for name in ("iterations", "envs_per_runner", "users"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.env_runners < 0 or args.seed < 0:
        p.error("--env-runners and --seed must be >= 0")
    if args.version not in VECTOR_ENVS[args.task]:
        p.error(f"--version of the {args.task} must be one of {sorted(VECTOR_ENVS[args.task])}")
    env_config = {"difficulty": args.difficulty, "users": args.users, "version": args.version}
    for row in train(args.task, args.iterations, env_config, args.address, num_env_runners=args.env_runners,
                     num_envs_per_env_runner=args.envs_per_runner, seed=args.seed):  # fmt: skip
        print(json.dumps(row, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
