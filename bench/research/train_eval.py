"""Acceptance benchmark: PPO platform agents vs fixed baselines on each env's default scenario
(`misinfo_stream` for the recommender, `misinfo_brigading` -- the same plus report brigading --
for the moderator).

    python bench/research/train_eval.py                          # both agents, training seeds 0 and 1
    python bench/research/train_eval.py --agents moderator --seeds 0 1 2
    python bench/research/train_eval.py --agents moderator --mod-agent-param check_action=0
        # (the service picks the checks)
    python bench/research/train_eval.py --users 200 --rec-timesteps 400 --mod-timesteps 400 --eval-seeds 2  # smoke
    python bench/research/train_eval.py --agents moderator --seeds 0 1 2 3 4 --eval-seeds 20  # issue 18's figures

Scenario: 1 000 ABM users (`oasis_gym.scenarios.misinfo_stream`), 50-step episodes.
Training: population 0, episode seeds drawn >= 2**20, a fixed number of timesteps per
training seed (not wall time: the figures must not depend on the machine's load; the
defaults are sized so that one training seed of one agent, training and evaluation, takes
at most about 15 minutes on a 2-core machine). The moderator's 14k timesteps: training
returns level off after about 10k, and a 40k-timestep run of training seed 0 did no better
on the held-out sets than its 14k run (PPO minus the suspend rule +0.13 vs +0.39). Evaluation (`train.report`): two
sets disjoint from training, held-out seeds 1000.. on population 0 and the same seeds on
population 1 (other users and follow graph).
- Recommender (per-user ranking, Recommender-v0), scored with its own trade-off reward
  (10 x engagement - misinformation share - 50 x polarization increase + 0.2 x diversity,
  summed over the episode) next to the fixed feeds on the same episodes: hot score
  (reddit), random, chronological, twitter, the agent recsys's default weights.
- Moderator (no label in its observation; fact-checks noisy, delayed, budgeted): PPO
  (slot-shared policy) against no moderation, the report-threshold rules (at 3 reports and
  at the threshold tuned on training seeds) and the oracle (`oracle_suspend`, the upper
  bound, checked on every set): return, misinformation exposure cut vs no moderation, true
  misinformation posts actioned, share of true posts actioned (false positives).
Per agent, set and baseline: mean ± std over evaluation seeds for each training seed, and
PPO's paired wins summed over training seeds. Prints the tables to stderr and one JSON
line to stdout.
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

KEYS = {
    "recommender": ("return", "engagement_rate", "misinfo_share"),
    "moderator": (
        "return",
        "exposure_cut",
        "misinfo_actioned_share",
        "true_actioned_share",
        "non_misinfo_actioned_share",
    ),
}


def _train_args(module, kind: str, args, seed: int, timesteps: int):
    """The training script's Args for one training seed of this bench."""
    from oasis_gym.train.common import EnvConfig

    a = module.Args()
    params = dict(args.mod_agent_param) if kind == "moderator" else {}
    a.env = EnvConfig(kind=kind, users=args.users, agent_params=params)
    a.eval_seeds = tuple(range(1000, 1000 + args.eval_seeds))
    a.ppo.total_timesteps, a.ppo.time_limit_s, a.ppo.n_envs = timesteps, None, args.n_envs
    a.ppo.seed, a.ppo.out_dir, a.ppo.checkpoint_every = seed, str(Path(args.out) / f"{kind}_seed{seed}"), 0
    return a


def _sets(res: dict, keys: tuple[str, ...]) -> dict:
    """Per evaluation set: mean and std of each metric per candidate, PPO's paired returns."""
    out = {}
    for name, s in res["eval_sets"].items():
        out[name] = {
            "population_seed": s["population_seed"],
            "seeds": s["seeds"],
            "mean_std": {
                c: {k: [v[k]["mean"], v[k]["std"]] for k in keys if k in v} for c, v in s["candidates"].items()
            },
            "ppo_paired_return": {b: v["return"] for b, v in s["ppo_vs"].items()},
        }
        if "oracle_beaten" in s:
            out[name]["oracle_beaten"] = s["oracle_beaten"]
    return out


def _summary(runs: dict) -> dict:
    """PPO's paired wins against each baseline summed over training seeds, per set."""
    total: dict = {}
    for r in runs.values():
        for set_name, s in r["sets"].items():
            for b, p in s["ppo_paired_return"].items():
                t = total.setdefault(set_name, {}).setdefault(b, {"wins": 0, "n": 0, "diff_means": []})
                t["wins"] += p["wins"]
                t["n"] += p["n"]
                t["diff_means"].append(p["diff_mean"])
    return total


def run_agent(kind: str, args) -> dict:
    """Train and evaluate one agent for every training seed (baselines evaluated once)."""
    from oasis_gym.train import moderator, recommender

    module = {"recommender": recommender, "moderator": moderator}[kind]
    timesteps = args.rec_timesteps if kind == "recommender" else args.mod_timesteps
    cache: dict = {}
    start = time.perf_counter()
    runs = {}
    for seed in args.seeds:
        res = module.train(_train_args(module, kind, args, seed, timesteps), cache=cache)
        print(f"== {kind}, training seed {seed}\n" + "\n\n".join(res["tables"]), file=sys.stderr, flush=True)
        train = {k: v for k, v in res["train"].items() if k not in ("learning_curve", "eval_history")}
        runs[str(seed)] = {"sets": _sets(res, KEYS[kind]), "train": train, "png": res["learning_curve_png"]}
        if "tuned_rules" in res:
            runs[str(seed)]["tuned_rules"] = res["tuned_rules"]
    return {
        "timesteps_per_seed": timesteps,
        "training_seeds": list(args.seeds),
        "runs": runs,
        "paired_wins_over_training_seeds": _summary(runs),
        "wall_s": time.perf_counter() - start,
        "load_after": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the bench for the chosen agents; one JSON line on stdout."""
    from oasis_gym.train.args import key_value

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--agents", nargs="+", choices=("recommender", "moderator"), default=["recommender", "moderator"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1], help="PPO training seeds")
    p.add_argument("--rec-timesteps", type=int, default=8000, help="recommender PPO timesteps per training seed")
    p.add_argument("--mod-timesteps", type=int, default=14000, help="moderator PPO timesteps per training seed")
    p.add_argument("--n-envs", type=int, default=2)
    p.add_argument(
        "--mod-agent-param",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="moderator agent field, e.g. check_action=0 (repeatable)",
    )
    p.add_argument("--users", type=int, default=None, help="default: the scenario's 1000")
    p.add_argument("--eval-seeds", type=int, default=5)
    p.add_argument("--out", default="runs/bench_train_eval")
    args = p.parse_args(argv)
    if min(args.seeds) < 0 or args.rec_timesteps < 1 or args.mod_timesteps < 1 or args.eval_seeds < 2:
        p.error("seeds must be >= 0, timesteps >= 1 and --eval-seeds >= 2")
    start = time.perf_counter()
    out: dict = {
        "bench": "train_eval",
        "scenario": {"recommender": "misinfo_stream", "moderator": "misinfo_brigading"},
        "users": args.users or 1000,
        "n_envs": args.n_envs,
        "moderator_agent_params": dict(args.mod_agent_param),
        "eval_seeds": args.eval_seeds,
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg(),
    }
    for kind in ("recommender", "moderator"):
        if kind in args.agents:
            out[kind] = run_agent(kind, args)
    out["wall_s"] = time.perf_counter() - start
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
