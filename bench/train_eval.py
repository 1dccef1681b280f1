"""Acceptance benchmark: PPO platform agents vs fixed baselines on `misinfo_stream`.

    python bench/train_eval.py                       # full: up to 15 min of training per agent
    python bench/train_eval.py --time-limit 120 --timesteps 5000 --eval-seeds 3   # quick check

Scenario: 1 000 ABM users (`oasis_gym.envs.platform_scenarios`), 50-step episodes.
- Recommender: PPO trained for at most `--time-limit` s (default 900) on `--n-envs` (2)
  subprocess envs, then scored with its own reward (RecommenderAgent: engagement -
  misinformation share - 0.5 * opinion std, summed over the episode) on `--eval-seeds`
  seeds, next to the fixed feeds on the same seeds: hot score (reddit), random,
  chronological, twitter, and the agent recsys's default weights.
  Target: >= 10 % better than hot score and random (relative to |baseline return|).
- Moderator: PPO (slot-shared policy) under the same budget; misinformation impressions vs
  no moderation on the same seeds, and the share of true posts (label 0) actioned.
  Target: exposure cut >= 50 % with <= 5 % of true posts actioned.
Prints one JSON object (means, std over seeds, per-seed values, targets met or not).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")   # before numpy: one BLAS thread per process


def _train_args(module, kind: str, args):
    """The training script's Args for this bench's command line (shared by both agents)."""
    from oasis_gym.train.common import EnvConfig

    a = module.Args()
    a.env = EnvConfig(kind=kind, users=args.users)
    a.eval_seeds = tuple(range(1000, 1000 + args.eval_seeds))
    a.ppo.total_timesteps, a.ppo.time_limit_s, a.ppo.n_envs = args.timesteps, args.time_limit, args.n_envs
    a.ppo.seed, a.ppo.out_dir, a.ppo.checkpoint_every = args.seed, str(Path(args.out) / kind), 20_000
    return a


def run_recommender(args) -> dict:
    from oasis_gym.train import recommender

    res = recommender.train(_train_args(recommender, "recommender", args))
    base = res["baselines"]
    gains = {name: {"mean_based": (res["ppo"]["mean"] - b["return"]["mean"]) / abs(b["return"]["mean"]),
                    "per_seed": b["gain_of_ppo"]} for name, b in base.items()}
    return {"ppo_return": res["ppo"], "baseline_return": {k: v["return"] for k, v in base.items()},
            "gain_vs": gains, "ppo_misinfo_share": res["ppo_misinfo_share"]["mean"],
            "ppo_engagement_rate": res["ppo_engagement_rate"]["mean"],
            "baseline_misinfo_share": {k: v["misinfo_share"]["mean"] for k, v in base.items()},
            "baseline_engagement_rate": {k: v["engagement_rate"]["mean"] for k, v in base.items()},
            "train": res["train"],
            "target_met": all(gains[k]["mean_based"] >= 0.10 for k in ("reddit", "random"))}


def run_moderator(args) -> dict:
    from oasis_gym.train import moderator

    res = moderator.train(_train_args(moderator, "moderator", args))
    ppo = res["ppo"]
    keep = ("exposure_cut", "true_actioned_share", "non_misinfo_actioned_share", "misinfo_actioned_share",
            "return", "misinfo_impressions")
    return {"ppo": {k: ppo[k] for k in keep},
            "baselines": {n: {k: {"mean": b[k]["mean"], "std": b[k]["std"]} for k in keep}
                          for n, b in res["baselines"].items()},
            "train": res["train"],
            "target_met": ppo["exposure_cut"]["mean"] >= 0.5 and ppo["true_actioned_share"]["mean"] <= 0.05}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--agents", nargs="+", choices=("recommender", "moderator"), default=["recommender", "moderator"])
    p.add_argument("--time-limit", type=float, default=900.0, help="training wall-clock budget per agent (s)")
    p.add_argument("--timesteps", type=int, default=200_000, help="upper bound; the time limit usually stops first")
    p.add_argument("--n-envs", type=int, default=2)
    p.add_argument("--users", type=int, default=None, help="default: the scenario's 1000")
    p.add_argument("--eval-seeds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/bench_train_eval")
    args = p.parse_args(argv)
    start = time.perf_counter()
    out: dict = {"bench": "train_eval", "scenario": "misinfo_stream", "users": args.users or 1000,
                 "n_envs": args.n_envs, "time_limit_s": args.time_limit, "eval_seeds": args.eval_seeds,
                 "cpus": os.cpu_count()}
    if "recommender" in args.agents:
        out["recommender"] = run_recommender(args)
    if "moderator" in args.agents:
        out["moderator"] = run_moderator(args)
    out["wall_s"] = time.perf_counter() - start
    print(json.dumps(out, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
