"""Train the recommender (`oasis_gym/Recommender-v0`) with PPO, then compare it with the
fixed feeds on its own reward.

    python -m oasis_gym.train.recommender --timesteps 60000 --time-limit 900 --out runs/rec
    oasis-gym train recommender --timesteps 60000 --out runs/rec

Steps (read top to bottom):
1. env: the `misinfo_stream` scenario (1 000 ABM users, true news + misinformation,
   reporting users), 50-step episodes; `--users` / `--max-cycles` shrink it.
2. baselines: the RecommenderAgent reward of the fixed feeds (hot score, random,
   chronological, Twitter, default weights) on the evaluation seeds, before training --
   also drawn in TensorBoard as flat `eval/baseline_*` lines.
3. PPO (stable-baselines3) on `n_envs` subprocess envs under VecMonitor + VecNormalize,
   with checkpoints, the env-metrics TensorBoard callback and a wall-clock limit.
4. evaluation of the saved model (reloaded as `SB3Policy`) on evaluation sets disjoint
   from training (`report`): held-out seeds on the training population and on another
   population; per set and candidate mean ± std of return, engagement and misinformation
   share, PPO's paired differences and wins against every baseline; the tables printed,
   `eval.json` and `learning_curve.png` written.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace

from oasis_gym.checks import OneLineParser
from oasis_gym.outputs import staged_path
from oasis_gym.policies.sb3 import SB3Policy

from . import args as cli_args
from .args import TrainArgs, redeclare
from .common import limit_threads, train_on_platform, write_results
from .evaluate import evaluate_recommender, summarize
from .report import check_disjoint, default_eval_sets, paired, table


@dataclass
class Args(TrainArgs):
    """The recommender script's settings: `TrainArgs` (whose PPO defaults are the
    recommender's) with its own agent fields, output folder and baselines."""

    agent_param: dict = redeclare(
        TrainArgs,
        "agent_param",
        help="agent field, e.g. misinfo_penalty=0 (the recommender's reward weights; repeatable)",
    )
    out: str = redeclare(TrainArgs, "out", "runs/recommender")
    baselines: tuple[str, ...] = redeclare(
        TrainArgs, "baselines", ("reddit", "random", "chronological", "twitter", "default_weights")
    )
    kind: str = redeclare(TrainArgs, "kind", "recommender")


COLUMNS = (
    ("return", "return", True),
    ("engagement_rate", "engagement rate", True),
    ("misinfo_share", "misinfo share", False),
)


def train(args: Args, cache: dict | None = None) -> dict:
    """Evaluate the baselines, train PPO, evaluate it on the held-out sets (module
    docstring). `cache` (a dict) keeps baseline runs between calls with the same
    evaluation sets (the bench trains several seeds)."""
    limit_threads(1)
    sets = default_eval_sets(args.eval_seeds, args.env.population_seed, args.other_population)
    check_disjoint(sets, args.ppo.seed, args.ppo.n_envs, args.env.population_seed)
    configs = {s.name: replace(args.env, population_seed=s.population_seed) for s in sets}
    # 2. baselines on the evaluation sets (same scenario, same reward)
    cache = {} if cache is None else cache  # baseline runs shared by calls on the same sets

    def base(name: str, s) -> list[dict]:
        key = ("base", name, s.population_seed, s.seeds, repr(configs[s.name]))
        if key not in cache:
            cache[key] = evaluate_recommender(name, s.seeds, configs[s.name])
        return cache[key]

    base_runs = {s.name: {name: base(name, s) for name in args.baselines} for s in sets}
    probe_seeds = args.ppo.eval_seeds

    def probe(act) -> float:  # the learning curve against the baselines (BaselineEvalCallback)
        return summarize(evaluate_recommender(act, probe_seeds, args.env))["mean"]

    probe_base = (
        {name: summarize(evaluate_recommender(name, probe_seeds, args.env))["mean"] for name in ("reddit", "random")}
        if args.ppo.eval_every
        else {}
    )
    # 3. PPO
    _, _, info = train_on_platform(args.env, args.ppo, baselines=probe_base, evaluate=probe)
    # 4. the saved model, reloaded as a policy, on the evaluation sets
    policy = SB3Policy.load(staged_path(info["model"]), agent="recommender_0")  # (staged by the CLI)
    result: dict = {"train": info, "eval_sets": {}, "tables": []}
    for s in sets:
        runs = evaluate_recommender(policy, s.seeds, configs[s.name])
        cands = {"ppo": runs, **base_runs[s.name]}
        result["eval_sets"][s.name] = {
            "population_seed": s.population_seed,
            "seeds": list(s.seeds),
            "candidates": {n: {k: summarize(r, k) for k, _, _ in COLUMNS} for n, r in cands.items()},
            "ppo_vs": {n: {k: paired(runs, r, k, hib) for k, _, hib in COLUMNS} for n, r in base_runs[s.name].items()},
        }
        result["tables"].append(
            table(
                f"recommender, {s.name} (population {s.population_seed}, seeds {list(s.seeds)}): mean ± std over seeds",
                cands,
                "ppo",
                COLUMNS,
            )
        )
    first = result["eval_sets"][sets[0].name]
    # the summary keys of earlier versions: the held-out-seeds set
    result["ppo"] = first["candidates"]["ppo"]["return"]
    result["baselines"] = {
        n: {
            "return": c["return"],
            "misinfo_share": c["misinfo_share"],
            "engagement_rate": c["engagement_rate"],
            "paired": first["ppo_vs"][n]["return"],
        }
        for n, c in first["candidates"].items()
        if n != "ppo"
    }
    result["baseline_means"] = {n: b["return"]["mean"] for n, b in result["baselines"].items()}
    result["eval_seeds"] = list(args.eval_seeds)
    write_results(
        args.ppo.out_dir, result, info["learning_curve"], result["baseline_means"], "Recommender-v0: PPO training"
    )
    return result


# The two helpers below keep the earlier API (add the options, parse them into an Args).
def add_arguments(p: argparse.ArgumentParser, cls=Args) -> None:
    """The script's options, generated from `cls`'s fields."""
    cli_args.add_arguments(p, cls)


def args_from_namespace(ns: argparse.Namespace, kind: str, defaults: Args) -> Args:
    """`defaults` with the parsed command-line values (`kind` is checked against it)."""
    if kind != defaults.kind:
        raise ValueError(f"Args for {defaults.kind!r}, not {kind!r}")
    return cli_args.parse_into(type(defaults), ns, defaults)


def main(argv: list[str] | None = None) -> int:
    """Command line: train, print the tables and one JSON line; exit code 0."""
    p = OneLineParser(description=__doc__.split("\n")[0])
    add_arguments(p)
    args = cli_args.parse_into(Args, p.parse_args(argv))
    result = train(args)
    print("\n\n".join(result["tables"]))
    print(
        json.dumps(
            {
                "ppo": result["ppo"]["mean"],
                **{k: v for k, v in result["baseline_means"].items()},
                "out": args.ppo.out_dir,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
