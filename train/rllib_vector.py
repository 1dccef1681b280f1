"""RLlib's env adapter for the fast-path tasks (Recommender-v1..v4, Moderator-v1/v2): their native vector env.

The driver is `train/rllib.py` (``python -m oasis_gym.train.rllib vector TASK``); this module
holds only what this env needs. Each RLlib env runner steps its `num_envs_per_env_runner`
episodes in one batched call: the runner's env is the task's `LockstepVectorEnv`
(`gym_env_vectorize_mode="vector_entry_point"`), not K copies of a single env. RLlib seeds
runner w with `seed + w` and hands that one seed to the whole vector env, so `RunnerSeeds`
gives every (runner, sub-env) its own training seed instead: `TRAIN_SEEDS_FROM + hash(seed,
runner, sub-env) % 2**40`, never an evaluation seed (those are below TRAIN_SEEDS_FROM); later
episodes follow each sub-env's own chain (`next_episode_seed`). `episode_seeds_of(runner)`
lists what a runner played (tested: 2 runners x 2 sub-envs, all distinct, all in the training
range).
"""

from __future__ import annotations

from gymnasium.vector import VectorWrapper

from oasis_gym import load_entry_point, vector_envs
from oasis_gym.model.seeds import training_seeds

# each task's native vector env per version (env_config "version", default 1): entry points
VECTOR_ENVS = {task: vector_envs(task) for task in ("moderator", "recommender")}
ENV_NAME = "oasis_gym_v1_task"
AGENTS = ()  # RLlib's one default agent: the learning curve's title names the task
# PPO's settings where the caller gives none (the driver's `build_config`)
DEFAULTS = {"train_batch_size": 2048, "minibatch_size": 512, "num_epochs": 5, "lr": 3e-4, "gamma": 0.99,
            "num_envs_per_env_runner": 8}  # fmt: skip


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


def make_env(ctx) -> RunnerSeeds:
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


def env_config_of(env_config: dict, seed: int) -> dict:
    """The env_config RLlib hands `make_env` (`env_config` itself: RLlib seeds the runners from
    `seed`); ValueError unless it names a task ("task") and a version of it ("version", default 1)."""
    task = env_config.get("task")
    if task not in VECTOR_ENVS:
        raise ValueError(f"task must be one of {sorted(VECTOR_ENVS)}, got {task!r}")
    version = env_config.get("version", 1)
    if version not in VECTOR_ENVS[task]:
        raise ValueError(f"version of the {task} must be one of {sorted(VECTOR_ENVS[task])}, got {version!r}")
    return dict(env_config)


def configure(config, env_config: dict):
    """This env's part of RLlib's `PPOConfig` (`config`): RLlib's vector entry point, one
    native vector env per runner."""
    return config.env_runners(gym_env_vectorize_mode="vector_entry_point")
