"""Acceptance benchmark: PPO platform agents vs fixed baselines on `misinfo_stream`.

    python bench/train_eval.py                       # full: up to 15 min of training per agent
    python bench/train_eval.py --time-limit 120 --timesteps 5000 --eval-seeds 3   # quick check

Scenario: 1 000 ABM users (`oasis_gym.scenarios.misinfo_stream`), 50-step episodes.
Training: population 0, episode seeds drawn >= 2**20. Evaluation (`train.report`): two
sets disjoint from training, held-out seeds 1000.. on population 0 and the same seeds on
population 1 (other users and follow graph).
- Recommender (per-user ranking, Recommender-v0): PPO trained for at most `--time-limit` s
  (default 900) on `--n-envs` (2) subprocess envs, scored with its own trade-off reward
  (10 x engagement - misinformation share - 50 x polarization increase + 0.2 x diversity,
  summed over the episode) next to the fixed feeds on the same episodes: hot score
  (reddit), random, chronological, twitter, the agent recsys's default weights.
- Moderator (no label in its observation; fact-checks noisy, delayed, budgeted): PPO
  (slot-shared policy) under the same budget, against no moderation and the
  report-threshold rules, and against the oracle (`oracle_suspend`, the upper bound):
  return, misinformation exposure cut vs no moderation, share of true posts actioned.
Per set and baseline: mean ± std over seeds and PPO's paired wins. Prints the tables to
stderr and one JSON object to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy: one BLAS thread per process


def _train_args(module, kind: str, args):
    """The training script's Args for this bench's command line (shared by both agents)."""
    from oasis_gym.train.common import EnvConfig

    a = module.Args()
    a.env = EnvConfig(kind=kind, users=args.users)
    a.eval_seeds = tuple(range(1000, 1000 + args.eval_seeds))
    a.ppo.total_timesteps, a.ppo.time_limit_s, a.ppo.n_envs = args.timesteps, args.time_limit, args.n_envs
    a.ppo.seed, a.ppo.out_dir, a.ppo.checkpoint_every = args.seed, str(Path(args.out) / kind), 20_000
    return a


def _sets(res: dict, keys: tuple[str, ...]) -> dict:
    out = {}
    for name, s in res["eval_sets"].items():
        out[name] = {
            "population_seed": s["population_seed"],
            "seeds": s["seeds"],
            "mean_std": {c: {k: [v[k]["mean"], v[k]["std"]] for k in keys} for c, v in s["candidates"].items()},
            "ppo_paired_return": {b: v["return"] for b, v in s["ppo_vs"].items()},
        }
        if "oracle_beaten" in s:
            out[name]["oracle_beaten"] = s["oracle_beaten"]
    return out


def run_recommender(args) -> dict:
    from oasis_gym.train import recommender

    res = recommender.train(_train_args(recommender, "recommender", args))
    print("\n\n".join(res["tables"]), file=sys.stderr)
    train = {k: v for k, v in res["train"].items() if k != "learning_curve"}
    return {
        "sets": _sets(res, ("return", "engagement_rate", "misinfo_share")),
        "train": train,
        "learning_curve_png": res["learning_curve_png"],
    }


def run_moderator(args) -> dict:
    from oasis_gym.train import moderator

    res = moderator.train(_train_args(moderator, "moderator", args))
    print("\n\n".join(res["tables"]), file=sys.stderr)
    train = {k: v for k, v in res["train"].items() if k != "learning_curve"}
    return {
        "sets": _sets(res, ("return", "exposure_cut", "true_actioned_share", "misinfo_actioned_share")),
        "train": train,
        "learning_curve_png": res["learning_curve_png"],
    }


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
    out: dict = {
        "bench": "train_eval",
        "scenario": "misinfo_stream",
        "users": args.users or 1000,
        "n_envs": args.n_envs,
        "time_limit_s": args.time_limit,
        "eval_seeds": args.eval_seeds,
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg(),
    }
    if "recommender" in args.agents:
        out["recommender"] = run_recommender(args)
    if "moderator" in args.agents:
        out["moderator"] = run_moderator(args)
    out["wall_s"] = time.perf_counter() - start
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
