"""Train the moderator (`oasis_gym/Moderator-v0`) with PPO, then measure how much it cuts
misinformation exposure compared with no moderation, and what it costs true posts.

    python -m oasis_gym.train.moderator --timesteps 60000 --time-limit 900 --out runs/mod
    oasis-gym train moderator --timesteps 60000 --out runs/mod

Steps (read top to bottom):
1. env: the `misinfo_stream` scenario (1 000 ABM users, 5 misinformation superspreaders,
   reporting users, Twitter feeds); the moderator sees the 20 fastest-spreading posts.
2. baselines on the evaluation seeds: no moderation, the report-threshold rule (remove at
   3 reports; and remove + suspend), and the oracle (upper bound).
3. PPO (stable-baselines3) on `n_envs` subprocess envs under VecMonitor + VecNormalize,
   checkpoints, env-metrics TensorBoard callback, wall-clock limit.
4. evaluation of the saved model (reloaded as `SB3Policy`): misinformation impressions
   relative to no moderation, share of true (and of all non-misinformation) posts
   actioned; JSON summary in `eval.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field

import numpy as np

from .common import EnvConfig, PPOConfig, limit_threads, write_json
from .recommender import add_arguments, args_from_namespace

BASELINES = ("none", "report_threshold", "report_threshold_suspend", "oracle_suspend")


@dataclass
class Args:
    env: EnvConfig = field(default_factory=lambda: EnvConfig(kind="moderator"))
    ppo: PPOConfig = field(default_factory=lambda: PPOConfig(
        gamma=0.9, policy="slot", first_bias=3.0, learning_rate=1e-3, n_steps=100, batch_size=100,
        out_dir="runs/moderator"))
    eval_seeds: tuple[int, ...] = (1000, 1001, 1002, 1003, 1004)
    baselines: tuple[str, ...] = BASELINES


def exposure_report(runs: list[dict], none_runs: list[dict]) -> dict:
    """Misinformation exposure cut vs no moderation (per seed, same seeds) and collateral."""
    from .evaluate import summarize

    cut = np.array([1.0 - r["misinfo_impressions"] / max(b["misinfo_impressions"], 1) for r, b in zip(runs, none_runs)])
    return {"exposure_cut": {"mean": float(cut.mean()), "std": float(cut.std(ddof=1)) if len(cut) > 1 else 0.0,
                             "min": float(cut.min()), "max": float(cut.max()), "values": cut.tolist()},
            "return": summarize(runs), "misinfo_impressions": summarize(runs, "misinfo_impressions"),
            "true_actioned_share": summarize(runs, "true_actioned_share"),
            "non_misinfo_actioned_share": summarize(runs, "non_misinfo_actioned_share"),
            "misinfo_actioned_share": summarize(runs, "misinfo_actioned_share"),
            "engagement_rate": summarize(runs, "engagement_rate")}


def train(args: Args) -> dict:
    from oasis_gym.policies.sb3 import SB3Policy

    from .common import train_ppo
    from .evaluate import evaluate_moderator, summarize

    limit_threads(1)
    base_runs = {name: evaluate_moderator(name, args.eval_seeds, args.env) for name in args.baselines}
    probe_seeds = args.ppo.eval_seeds

    def probe(act) -> float:
        return summarize(evaluate_moderator(act, probe_seeds, args.env))["mean"]

    probe_base = ({name: summarize(evaluate_moderator(name, probe_seeds, args.env))["mean"]
                   for name in ("none", "report_threshold")} if args.ppo.eval_every else {})
    _, _, info = train_ppo(args.env, args.ppo, baselines=probe_base, evaluate=probe)
    policy = SB3Policy.load(info["model"], agent="moderator_0")
    runs = evaluate_moderator(policy, args.eval_seeds, args.env)
    none = base_runs.get("none") or evaluate_moderator("none", args.eval_seeds, args.env)
    result = {"ppo": exposure_report(runs, none), "train": info, "eval_seeds": list(args.eval_seeds),
              "baselines": {name: exposure_report(r, none) for name, r in base_runs.items()}}
    write_json(f"{args.ppo.out_dir}/eval.json", result)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_arguments(p)
    args = args_from_namespace(p.parse_args(argv), "moderator", Args())
    result = train(args)
    print(json.dumps({"exposure_cut": result["ppo"]["exposure_cut"]["mean"],
                      "true_actioned_share": result["ppo"]["true_actioned_share"]["mean"], "out": args.ppo.out_dir}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
