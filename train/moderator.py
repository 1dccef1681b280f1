"""Train the moderator (`oasis_gym/Moderator-v0`) with PPO, then measure how much it cuts
misinformation exposure compared with no moderation, and what it costs true posts.

    python -m oasis_gym.train.moderator --timesteps 60000 --time-limit 900 --out runs/mod
    oasis-gym train moderator --timesteps 60000 --out runs/mod

Steps (read top to bottom):
1. env: the `misinfo_stream` scenario (1 000 ABM users, 5 misinformation superspreaders,
   reporting users, Twitter feeds); the moderator sees the 20 fastest-spreading posts.
2. the report rules' thresholds tuned on training seeds (`--tune-seeds`, >= 2**20 like
   PPO's episodes; `evaluate.tune_report_rules`), then the baselines on the evaluation sets
   (held-out seeds on the training population and on another population, `report`): no
   moderation, the report-threshold rules (remove at 3 reports; remove + suspend; both
   also at their tuned threshold), and the oracle (`oracle_suspend`, the upper bound).
3. PPO (stable-baselines3) on `n_envs` subprocess envs under VecMonitor + VecNormalize,
   checkpoints, env-metrics TensorBoard callback, wall-clock limit.
4. evaluation of the saved model (reloaded as `SB3Policy`) on the same sets: return,
   misinformation exposure cut vs no moderation, share of true posts actioned, mean ± std
   and PPO's paired wins against every rule; whether anything beat the oracle; the tables
   printed, `eval.json` and `learning_curve.png` written.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace

import numpy as np

from oasis_gym.checks import MAX_SEED, OneLineParser
from oasis_gym.model.seeds import TRAIN_SEEDS_FROM
from oasis_gym.outputs import staged_path
from oasis_gym.policies.sb3 import SB3Policy

from . import args as cli_args
from .args import RunArgs, TrainArgs, opt, redeclare
from .common import limit_threads, train_on_platform, write_results
from .evaluate import evaluate_moderator, moderator_rule, oracle_check, summarize, tune_report_rules
from .report import check_disjoint, default_eval_sets, paired, table


@dataclass
class _TuneArgs(RunArgs):
    """The moderator's own evaluation setting (a class of its own, second among `Args`' bases,
    so that the dataclass puts it right after the shared evaluation settings: `--help`)."""

    tune_seeds: tuple[int, ...] = opt(
        tuple(2**20 + 9000 + i for i in range(4)),
        "training-distribution episode seeds on which the report rules' thresholds are tuned",
        bounds=(TRAIN_SEEDS_FROM, MAX_SEED),
    )


@dataclass
class Args(TrainArgs, _TuneArgs):
    """The moderator script's settings: `TrainArgs` and the report rules' tuning seeds, with
    the moderator's PPO defaults, agent fields, output folder and baselines."""

    lr: float = redeclare(TrainArgs, "lr", 1e-3)
    policy: str = redeclare(TrainArgs, "policy", "slot", "network (slot: one net shared by the post slots)")
    n_steps: int = redeclare(TrainArgs, "n_steps", 100)
    batch_size: int = redeclare(TrainArgs, "batch_size", 100)
    first_bias: float = redeclare(TrainArgs, "first_bias", 3.0)
    agent_param: dict = redeclare(
        TrainArgs, "agent_param", help="agent field, e.g. action_cost=0 (the moderator's reward weights; repeatable)"
    )
    out: str = redeclare(TrainArgs, "out", "runs/moderator")
    baselines: tuple[str, ...] = redeclare(
        TrainArgs, "baselines", ("none", "report_threshold", "report_threshold_suspend", "oracle_suspend")
    )
    kind: str = redeclare(TrainArgs, "kind", "moderator")


COLUMNS = (
    ("return", "return", True),
    ("exposure_cut", "exposure cut", True),
    ("true_actioned_share", "true posts actioned", False),
    ("misinfo_actioned_share", "misinfo actioned", True),
)


def exposure_report(runs: list[dict], none_runs: list[dict]) -> dict:
    """Misinformation exposure cut vs no moderation (per seed, same seeds) and collateral."""
    cut = np.array([1.0 - r["misinfo_impressions"] / max(b["misinfo_impressions"], 1) for r, b in zip(runs, none_runs)])
    return {
        "exposure_cut": {
            "mean": float(cut.mean()),
            "std": float(cut.std(ddof=1)) if len(cut) > 1 else 0.0,
            "min": float(cut.min()),
            "max": float(cut.max()),
            "values": cut.tolist(),
        },
        "return": summarize(runs),
        "misinfo_impressions": summarize(runs, "misinfo_impressions"),
        "true_actioned_share": summarize(runs, "true_actioned_share"),
        "non_misinfo_actioned_share": summarize(runs, "non_misinfo_actioned_share"),
        "misinfo_actioned_share": summarize(runs, "misinfo_actioned_share"),
        "engagement_rate": summarize(runs, "engagement_rate"),
    }


def _with_cut(runs: list[dict], none_runs: list[dict]) -> list[dict]:
    return [
        {**r, "exposure_cut": 1.0 - r["misinfo_impressions"] / max(b["misinfo_impressions"], 1)}
        for r, b in zip(runs, none_runs)
    ]


def tuned_rules(args: Args, cache: dict | None = None) -> dict:
    """The report rules' thresholds tuned on `args.tune_seeds` (training population only);
    refuses tuning seeds an evaluation could use. `cache` (a dict) shares the result
    between runs with the same settings (the bench's training seeds)."""
    bad = [s for s in args.tune_seeds if s < TRAIN_SEEDS_FROM]
    if bad:
        raise ValueError(f"tuning seeds {bad} could be evaluation seeds: use seeds >= {TRAIN_SEEDS_FROM}")
    key = ("tune", tuple(args.tune_seeds), repr(args.env))
    if cache is None:
        cache = {}
    if key not in cache:
        tuned = tune_report_rules(args.tune_seeds, args.env)
        for base in ("report_threshold", "report_threshold_suspend"):  # the default threshold: its own name
            if moderator_rule(tuned[base]) == moderator_rule(base):
                tuned[base] = base
        cache[key] = tuned
    return cache[key]


def train(args: Args, cache: dict | None = None) -> dict:
    """Tune the rules, evaluate the baselines, train PPO, evaluate it on the held-out sets
    (module docstring). `cache` (a dict) keeps baseline runs and tuned thresholds between
    calls with the same evaluation sets (the bench trains several seeds)."""
    limit_threads(1)
    sets = default_eval_sets(args.eval_seeds, args.env.population_seed, args.other_population)
    check_disjoint(sets, args.ppo.seed, args.ppo.n_envs, args.env.population_seed)
    configs = {s.name: replace(args.env, population_seed=s.population_seed) for s in sets}
    cache = {} if cache is None else cache
    tuned = tuned_rules(args, cache)
    extra = (tuned["report_threshold"], tuned["report_threshold_suspend"])
    names = tuple(dict.fromkeys(("none", *args.baselines, *extra, "oracle_suspend")))

    def base(name: str, s) -> list[dict]:
        key = ("base", name, s.population_seed, s.seeds, repr(configs[s.name]))
        if key not in cache:
            cache[key] = evaluate_moderator(name, s.seeds, configs[s.name])
        return cache[key]

    base_runs = {s.name: {name: base(name, s) for name in names} for s in sets}
    probe_seeds = args.ppo.eval_seeds

    def probe(act) -> float:
        return summarize(evaluate_moderator(act, probe_seeds, args.env))["mean"]

    probe_base = (
        {
            name: summarize(evaluate_moderator(name, probe_seeds, args.env))["mean"]
            for name in ("none", "report_threshold")
        }
        if args.ppo.eval_every
        else {}
    )
    _, _, info = train_on_platform(args.env, args.ppo, baselines=probe_base, evaluate=probe)
    policy = SB3Policy.load(staged_path(info["model"]), agent="moderator_0")  # (staged by the CLI)
    result: dict = {
        "train": info,
        "eval_sets": {},
        "tables": [],
        "upper_bound": "oracle_suspend",
        "tuned_rules": {**tuned, "tune_seeds": list(args.tune_seeds)},
    }
    for s in sets:
        none = base_runs[s.name]["none"]
        runs = evaluate_moderator(policy, s.seeds, configs[s.name])
        cands = {n: _with_cut(r, none) for n, r in {"ppo": runs, **base_runs[s.name]}.items()}
        checks = {n: oracle_check(r, cands["oracle_suspend"]) for n, r in cands.items() if n != "oracle_suspend"}
        result["eval_sets"][s.name] = {
            "population_seed": s.population_seed,
            "seeds": list(s.seeds),
            "candidates": {n: exposure_report(r, none) for n, r in cands.items()},
            "ppo_vs": {
                n: {k: paired(cands["ppo"], r, k, hib) for k, _, hib in COLUMNS} for n, r in cands.items() if n != "ppo"
            },
            "oracle_check": checks,
            "oracle_beaten": sorted(n for n, c in checks.items() if c["beaten_on"]),
        }
        result["tables"].append(
            table(
                f"moderator, {s.name} (population {s.population_seed}, seeds {list(s.seeds)}): "
                f"mean ± std over seeds; oracle_suspend is the upper bound",
                cands,
                "ppo",
                COLUMNS,
            )
        )
        if result["eval_sets"][s.name]["oracle_beaten"]:
            result["tables"].append(
                f"WARNING: the oracle was beaten by {result['eval_sets'][s.name]['oracle_beaten']}"
                " -- it is not an upper bound here"
            )
    scores = ", ".join(f"{k} {v:.3f}" for k, v in tuned["scores"].items())
    result["tables"].insert(
        0,
        f"report rules tuned on training seeds {list(args.tune_seeds)}: {tuned['report_threshold']}, "
        f"{tuned['report_threshold_suspend']} (mean returns {scores})",
    )
    first = result["eval_sets"][sets[0].name]
    result["ppo"] = first["candidates"]["ppo"]
    result["baselines"] = {n: c for n, c in first["candidates"].items() if n != "ppo"}
    result["eval_seeds"] = list(args.eval_seeds)
    write_results(
        args.ppo.out_dir,
        result,
        info["learning_curve"],
        {n: c["return"]["mean"] for n, c in result["baselines"].items()},
        "Moderator-v0: PPO training",
    )
    return result


def main(argv: list[str] | None = None) -> int:
    """Command line: train, print the tables and one JSON line; exit code 0."""
    p = OneLineParser(description=__doc__.split("\n")[0])
    cli_args.add_arguments(p, Args)
    args = cli_args.parse_into(Args, p.parse_args(argv))
    result = train(args)
    print("\n\n".join(result["tables"]))
    print(
        json.dumps(
            {
                "exposure_cut": result["ppo"]["exposure_cut"]["mean"],
                "true_actioned_share": result["ppo"]["true_actioned_share"]["mean"],
                "out": args.ppo.out_dir,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
