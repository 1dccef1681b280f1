"""Train platform agents with Ray RLlib (PPO, new API stack): the one RLlib driver, two envs.

    pip install -e ".[rllib]"     # its own venv: ray[rllib] pins gymnasium 1.2.2 (.ci/run)
    python -m oasis_gym.train.rllib vector recommender --difficulty medium --env-runners 2 --envs-per-runner 16
    python -m oasis_gym.train.rllib vector recommender --version 3 --difficulty hard
    python -m oasis_gym.train.rllib vector recommender --env-runners 8 --address HEAD:6379   # on a Ray cluster
    python -m oasis_gym.train.rllib platform --iterations 20 --with-moderator --out runs/rllib

The env is the first argument, each one's adapter a module of its own (what really differs):
`vector` (`train/rllib_vector.py`) trains a v1-v3 task (Recommender-v1..v3, Moderator-v1) on
its native vector env, one per env runner, every (runner, sub-env) on its own training seeds;
`platform` (`train/rllib_platform.py`) trains `recommender_0`, and with `--with-moderator`
`moderator_0` too, in the PettingZoo platform env of Recommender-v0 / Moderator-v0 (users
driven inside it), one RLModule per learned agent. This module is what both share: Ray (with
`--address` a Ray cluster's env runners, `docs/multi_node.md`; without, a local Ray of its own,
`address="local"`, never the cluster that RAY_ADDRESS or the last `ray start` names), PPO's
config, the training loop and its one JSON line per iteration, and the learning curve
(`--out`: rllib_curve.json and rllib_curve.png, under the output rule of `oasis_gym.outputs`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oasis_gym.checks import argtype, path_name, ray_address, whole_number
from oasis_gym.errors import OasisGymError
from oasis_gym.figures import new_figure, save_png, series_style
from oasis_gym.model.tiers import DIFFICULTIES

from . import rllib_platform, rllib_vector
from .outputs import RLLIB_FILES, rllib_output

if TYPE_CHECKING:
    from oasis_gym.outputs import OutputDir

ENVS = {"vector": rllib_vector, "platform": rllib_platform}  # env -> its adapter
TITLES = {"vector": "RLlib PPO, {task}-v{version}", "platform": "RLlib PPO, platform agents"}


def _adapter(env: str):
    if env not in ENVS:
        raise ValueError(f"env must be one of {sorted(ENVS)}, got {env!r}")
    return ENVS[env]


def start_ray(address: str | None = None, num_env_runners: int = 0) -> None:
    """Ray for a run: the cluster at `address` (its env runners spread over its nodes); None:
    a local Ray of its own with a CPU per env runner and one for the learner."""
    import ray

    if address is not None:
        ray.init(address=address, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    else:
        ray.init(address="local", num_cpus=max(1, num_env_runners) + 1,
                 include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)  # fmt: skip


def build_config(env: str, env_config: dict, num_env_runners: int = 0, num_envs_per_env_runner: int | None = None,
                 train_batch_size: int | None = None, minibatch_size: int | None = None, num_epochs: int | None = None,
                 lr: float | None = None, gamma: float | None = None, seed: int | None = None):  # fmt: skip
    """PPO on the `env` ("vector" or "platform") with `env_config`: `num_env_runners` remote
    runners (0: the driver samples) of `num_envs_per_env_runner` sub-envs each, every sub-env on
    training seeds of its own; a setting left None takes the env's default (its adapter's
    `DEFAULTS`); `seed` None: env_config's "seed", else 0."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.registry import register_env

    adapter = _adapter(env)
    given = {"num_envs_per_env_runner": num_envs_per_env_runner, "train_batch_size": train_batch_size,
             "minibatch_size": minibatch_size, "num_epochs": num_epochs, "lr": lr, "gamma": gamma}  # fmt: skip
    s = {k: adapter.DEFAULTS[k] if v is None else v for k, v in given.items()}
    seed = int(env_config.get("seed", 0)) if seed is None else int(seed)
    env_config = adapter.env_config_of(env_config, seed)
    register_env(adapter.ENV_NAME, adapter.make_env)
    config = (
        PPOConfig()
        .environment(adapter.ENV_NAME, env_config=env_config)
        .framework("torch")
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=s["num_envs_per_env_runner"],
            rollout_fragment_length="auto",
            # wait for every runner's samples: RLlib's default (60 s) drops a slow runner's batch,
            # so a busy machine would train on other data than a quiet one (same seed, same run)
            sample_timeout_s=None,
        )
        .training(
            train_batch_size=s["train_batch_size"],
            minibatch_size=s["minibatch_size"],
            num_epochs=s["num_epochs"],
            lr=s["lr"],
            gamma=s["gamma"],
        )
        .debugging(seed=seed)
    )
    return adapter.configure(config, env_config)


def train(env: str, iterations: int, env_config: dict, address: str | None = None, out_dir: str | None = None,
          overwrite: bool = False, on_row: Callable[[dict], None] | None = None,
          **config_kwargs) -> list[dict[str, Any]]:  # fmt: skip
    """`iterations` RLlib iterations on `env` (`build_config` takes `config_kwargs`); per
    iteration (given to `on_row` as it ends) the mean episode return, overall and per agent,
    and the env steps sampled (lifetime) and per second. `address`: a Ray cluster's
    (`start_ray`). With `out_dir`, the learning curve is written there as rllib_curve.json and
    rllib_curve.png (`write_curve`); the folder is checked before Ray starts
    (`oasis_gym.outputs.OutputError`: not ours, or ours without `overwrite`)."""
    adapter = _adapter(env)
    output = rllib_output(out_dir, overwrite).check() if out_dir is not None else None
    try:
        start_ray(address, config_kwargs.get("num_env_runners", 0))
        algo = build_config(env, env_config, **config_kwargs).build_algo()
        rows, start = [], time.perf_counter()
        try:
            for i in range(iterations):
                runners = algo.train().get("env_runners", {})
                steps = runners.get("num_env_steps_sampled_lifetime")
                rows.append({"iteration": i + 1, "episode_return_mean": runners.get("episode_return_mean"),
                             "agent_episode_returns_mean": runners.get("agent_episode_returns_mean"),
                             "num_env_steps_sampled_lifetime": steps,
                             "env_steps_per_s": steps / (time.perf_counter() - start) if steps else None})  # fmt: skip
                if on_row is not None:
                    on_row(rows[-1])
        finally:
            algo.stop()
        if output is not None:
            write_curve(rows, output, TITLES[env].format(**{"version": 1, **env_config}), adapter.AGENTS)
    finally:
        if output is not None:
            output.release()
    return rows


def write_curve(rows: list[dict], output: OutputDir, title: str, agents=()) -> tuple[Path, Path]:
    """The learning curve of `train` (its rows) as rllib_curve.json and rllib_curve.png in the
    checked folder `output`, renamed into place: the mean episode return over the env steps
    sampled, of each agent where the rows have it per agent (`agents` first, in their order,
    then any other), with a legend where there are several; else one line, the title saying whose."""

    def returns(row: dict) -> dict:  # {agent: its mean return}, or {"": the one mean return}
        return row["agent_episode_returns_mean"] or {"": row["episode_return_mean"]}

    seen = dict.fromkeys(a for r in rows for a in returns(r))
    series = [a for a in agents if a in seen] + [a for a in seen if a not in agents]
    fig, (ax,) = new_figure(1, panel=(4.0, 3.5))
    for i, agent in enumerate(series):
        pts = [(r["num_env_steps_sampled_lifetime"], returns(r).get(agent)) for r in rows]
        pts = [(x, y) for x, y in pts if y is not None]
        if pts:
            ax.plot(*zip(*pts), label=agent, **series_style(i))
    ax.set_xlabel("env steps sampled")
    ax.set_ylabel("mean episode return (sum of rewards)")
    ax.set_title(title)
    if len(series) > 1:
        ax.legend()
    with output.staging() as tmp:
        (tmp / RLLIB_FILES[0]).write_text(json.dumps(rows, default=float, indent=1))
        save_png(fig, tmp / RLLIB_FILES[1], dpi=110)
    return output.path / RLLIB_FILES[0], output.path / RLLIB_FILES[1]


def _add_shared(p: argparse.ArgumentParser, defaults: dict) -> None:
    """The options of both envs (`defaults`: the env's PPO settings, for the help texts)."""
    count = argtype(whole_number, "whole number >= 1", low=1)
    natural = argtype(whole_number, "whole number >= 0", low=0)
    p.add_argument("--iterations", type=count, default=10, help="RLlib training iterations (default 10)")
    p.add_argument("--env-runners", type=natural, default=0, help="remote env runners (default 0: the driver samples)")
    p.add_argument("--envs-per-runner", type=count, default=defaults["num_envs_per_env_runner"],
                   help=f"sub-envs per env runner (default {defaults['num_envs_per_env_runner']})")  # fmt: skip
    p.add_argument("--train-batch-size", type=count, default=defaults["train_batch_size"],
                   help=f"env steps per iteration (default {defaults['train_batch_size']}; "
                        f"minibatches of at most {defaults['minibatch_size']})")  # fmt: skip
    p.add_argument("--seed", type=natural, default=0, help="the run's seed (default 0)")
    p.add_argument(
        "--address",
        type=argtype(ray_address),
        default=None,
        help="a Ray cluster's head HOST:PORT (as `ray start --head` prints it); default: a local Ray",
    )
    p.add_argument("--out", type=argtype(path_name), default=None,
                   help="write the learning curve there (rllib_curve.json, rllib_curve.png)")  # fmt: skip
    p.add_argument("--overwrite", action="store_true", help="replace an earlier run's curve in --out")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m oasis_gym.train.rllib", description=__doc__.split("\n")[0])
    envs = p.add_subparsers(dest="env", required=True)
    vector = envs.add_parser("vector", help="a v1-v3 task on its native vector env (train/rllib_vector.py)",
                             description="RLlib PPO on a v1-v3 task's native vector env, one per runner")  # fmt: skip
    _add_shared(vector, rllib_vector.DEFAULTS)
    vector.add_argument("task", choices=sorted(rllib_vector.VECTOR_ENVS))
    vector.add_argument("--version", type=int, default=1, choices=sorted(rllib_vector.VECTOR_ENVS["recommender"]),
                        help="task version (the recommender has 1-4, the moderator 1-2)")  # fmt: skip
    vector.add_argument("--difficulty", default="medium", choices=list(DIFFICULTIES))
    count = argtype(whole_number, "whole number >= 1", low=1)
    vector.add_argument("--users", type=count, default=1000, help="users per episode (default 1000)")
    platform = envs.add_parser(
        "platform",
        help="the platform agents' PettingZoo env (train/rllib_platform.py)",
        description="RLlib PPO on the platform agents of Recommender-v0 / Moderator-v0",
    )
    _add_shared(platform, rllib_platform.DEFAULTS)
    platform.add_argument("--users", type=count, default=None, help="default: the scenario's 1000")
    platform.add_argument("--max-cycles", type=count, default=None, help="steps per episode (default: the scenario's)")
    rule = platform.add_mutually_exclusive_group()
    rule.add_argument("--with-moderator", action="store_true", help="learn moderator_0 too (its own module)")
    rule.add_argument("--moderator-rule", default=None, choices=["none", "report_threshold", "oracle"],
                      help="moderator_0 played by a fixed rule")  # fmt: skip
    return p


def main(argv: list[str] | None = None) -> int:
    """Command line: RLlib PPO on the env given first; one JSON line per iteration."""
    p = _parser()
    args = p.parse_args(argv)
    if args.env == "vector":
        if args.version not in rllib_vector.VECTOR_ENVS[args.task]:
            p.error(f"--version of the {args.task} must be one of {sorted(rllib_vector.VECTOR_ENVS[args.task])}")
        env_config = {"task": args.task, "difficulty": args.difficulty, "users": args.users, "version": args.version}
    else:
        env_config = {"users": args.users, "max_cycles": args.max_cycles, "learn_moderator": args.with_moderator,
                      "moderator_rule": args.moderator_rule}  # fmt: skip
    batch = args.train_batch_size
    try:
        train(args.env, args.iterations, env_config, args.address, args.out, args.overwrite,
              on_row=lambda row: print(json.dumps(row, default=str), flush=True), num_env_runners=args.env_runners,
              num_envs_per_env_runner=args.envs_per_runner, train_batch_size=batch,
              minibatch_size=min(ENVS[args.env].DEFAULTS["minibatch_size"], batch), seed=args.seed)  # fmt: skip
    except OasisGymError as err:  # OutputError: --out not ours, or ours without --overwrite
        p.error(str(err))
    return 0


if __name__ == "__main__":
    sys.exit(main())
