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
from dataclasses import dataclass, field

from .common import EnvConfig, PPOConfig, limit_threads, write_json

BASELINES = ("reddit", "random", "chronological", "twitter", "default_weights")


@dataclass
class Args:
    env: EnvConfig = field(default_factory=lambda: EnvConfig(kind="recommender"))
    ppo: PPOConfig = field(default_factory=lambda: PPOConfig(gamma=0.9, out_dir="runs/recommender"))
    eval_seeds: tuple[int, ...] = (1000, 1001, 1002, 1003, 1004)
    other_population: int = 1  # the held-out population of the second evaluation set
    baselines: tuple[str, ...] = BASELINES


COLUMNS = (
    ("return", "return", True),
    ("engagement_rate", "engagement rate", True),
    ("misinfo_share", "misinfo share", False),
)


def train(args: Args) -> dict:
    from dataclasses import replace

    from oasis_gym.policies.sb3 import SB3Policy

    from .evaluate import evaluate_recommender, summarize
    from .report import check_disjoint, default_eval_sets, paired, plot_learning_curve, table

    limit_threads(1)
    sets = default_eval_sets(args.eval_seeds, args.env.population_seed, args.other_population)
    check_disjoint(sets, args.ppo.seed, args.ppo.n_envs, args.env.population_seed)
    configs = {s.name: replace(args.env, population_seed=s.population_seed) for s in sets}
    # 2. baselines on the evaluation sets (same scenario, same reward)
    base_runs = {
        s.name: {name: evaluate_recommender(name, s.seeds, configs[s.name]) for name in args.baselines} for s in sets
    }
    probe_seeds = args.ppo.eval_seeds

    def probe(act) -> float:  # the learning curve against the baselines (BaselineEvalCallback)
        return summarize(evaluate_recommender(act, probe_seeds, args.env))["mean"]

    probe_base = (
        {name: summarize(evaluate_recommender(name, probe_seeds, args.env))["mean"] for name in ("reddit", "random")}
        if args.ppo.eval_every
        else {}
    )
    # 3. PPO
    from .common import train_ppo

    _, _, info = train_ppo(args.env, args.ppo, baselines=probe_base, evaluate=probe)
    # 4. the saved model, reloaded as a policy, on the evaluation sets
    policy = SB3Policy.load(info["model"], agent="recommender_0")
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
    png = plot_learning_curve(
        info["learning_curve"],
        result["baseline_means"],
        f"{args.ppo.out_dir}/learning_curve.png",
        "Recommender-v0: PPO training",
    )
    result["learning_curve_png"] = str(png)
    write_json(f"{args.ppo.out_dir}/eval.json", result)
    return result


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timesteps", type=int, default=60_000)
    p.add_argument("--time-limit", type=float, default=None, help="stop training after this many seconds")
    p.add_argument("--n-envs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--users", type=int, default=None, help="default: the scenario's 1000")
    p.add_argument("--max-cycles", type=int, default=None, help="episode length (default 50)")
    p.add_argument(
        "--eval-seeds",
        type=int,
        nargs="+",
        default=[1000, 1001, 1002, 1003, 1004],
        help="held-out episode seeds (< 2**20), run on the training population and on --other-population",
    )
    p.add_argument("--other-population", type=int, default=1, help="population seed of the held-out population")
    p.add_argument("--eval-every", type=int, default=0, help="timesteps between TensorBoard evaluations (0: off)")
    p.add_argument("--lr", type=float, default=None, help="learning rate (default 3e-4 / moderator 1e-3)")
    p.add_argument("--gamma", type=float, default=None)
    p.add_argument("--policy", choices=("mlp", "slot"), default=None, help="network (default: mlp / moderator: slot)")
    p.add_argument("--n-steps", type=int, default=None, help="rollout steps per env")
    p.add_argument("--ent-coef", type=float, default=None)
    p.add_argument(
        "--agent-param",
        type=_key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="agent field, e.g. misinfo_penalty=0 (the recommender's reward weights; repeatable)",
    )
    p.add_argument("--out", default=None)


def _key_value(text: str) -> tuple[str, float]:
    key, sep, value = text.partition("=")
    try:
        if not sep or not key:
            raise ValueError
        return key, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected KEY=NUMBER, got {text!r}") from None


def args_from_namespace(ns: argparse.Namespace, kind: str, defaults: Args) -> Args:
    env = EnvConfig(kind=kind, users=ns.users, max_cycles=ns.max_cycles, agent_params=dict(ns.agent_param or []))
    ppo = defaults.ppo
    ppo.total_timesteps, ppo.time_limit_s, ppo.n_envs, ppo.seed = ns.timesteps, ns.time_limit, ns.n_envs, ns.seed
    ppo.eval_every = ns.eval_every
    for name, value in (
        ("learning_rate", ns.lr),
        ("gamma", ns.gamma),
        ("policy", ns.policy),
        ("n_steps", ns.n_steps),
        ("ent_coef", ns.ent_coef),
    ):
        if value is not None:
            setattr(ppo, name, value)
    if ns.n_steps is not None:
        ppo.batch_size = min(ppo.batch_size, ns.n_steps * ppo.n_envs)
    if ns.out:
        ppo.out_dir = ns.out
    defaults.env, defaults.eval_seeds = env, tuple(ns.eval_seeds)
    defaults.other_population = ns.other_population
    return defaults


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_arguments(p)
    args = args_from_namespace(p.parse_args(argv), "recommender", Args())
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
