"""A closer look at trained moderators: saved PPO models vs the report rules and the oracle on
more held-out seeds than the training bench uses.

    python bench/research/moderator_eval_models.py runs/bench_train_eval/moderator_seed0/model.zip \
        runs/bench_train_eval/moderator_seed1/model.zip --seeds 20

Seeds 1005.. (disjoint from training, >= 2**20, and from `train_eval.py`'s 1000-1004), on
population 0 and population 1. Per candidate: return, exposure cut vs no moderation (mean ±
std), misinformation and true posts actioned; per model and rule: PPO's paired difference and
wins; the oracle checked (`oracle_check`) for every candidate. `--rules` names the rules
(e.g. a tuned "report_threshold_suspend:2"). One JSON line on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Evaluate the models and rules; one JSON line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="+", help="SB3 moderator models (model.zip with its obs_norm.npz)")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--rules", nargs="+", default=["report_threshold_suspend", "report_threshold_suspend:2"])
    p.add_argument("--users", type=int, default=None)
    args = p.parse_args(argv)
    from oasis_gym.policies.sb3 import SB3Policy
    from oasis_gym.train.common import EnvConfig, limit_threads
    from oasis_gym.train.evaluate import evaluate_moderator, oracle_check
    from oasis_gym.train.report import paired

    limit_threads(1)
    seeds = tuple(range(1005, 1005 + args.seeds))
    start, load = time.perf_counter(), os.getloadavg()
    out: dict = {"bench": "moderator_eval_models", "seeds": list(seeds), "models": args.models, "sets": {}}
    for pop in (0, 1):
        cfg = EnvConfig(kind="moderator", users=args.users, population_seed=pop)
        runs = {n: evaluate_moderator(n, seeds, cfg) for n in ("none", *args.rules, "oracle_suspend")}
        for i, path in enumerate(args.models):
            runs[f"ppo{i}"] = evaluate_moderator(SB3Policy.load(path, agent="moderator_0"), seeds, cfg)
        res = {}
        for name, r in runs.items():
            ret = np.array([x["return"] for x in r])
            cut = np.array(
                [1 - x["misinfo_impressions"] / max(b["misinfo_impressions"], 1) for x, b in zip(r, runs["none"])]
            )
            res[name] = {
                "return": [float(ret.mean()), float(ret.std(ddof=1))],
                "exposure_cut": [float(cut.mean()), float(cut.std(ddof=1))],
                "misinfo_actioned_share": float(np.mean([x["misinfo_actioned_share"] for x in r])),
                "true_actioned_share": float(np.mean([x["true_actioned_share"] for x in r])),
            }
            if name != "oracle_suspend":
                res[name]["oracle_beaten_on"] = oracle_check(r, runs["oracle_suspend"])["beaten_on"]
            if not name.startswith("ppo"):
                res[name]["ppo_minus_row"] = [paired(runs[f"ppo{i}"], r) for i in range(len(args.models))]
        out["sets"][f"population_{pop}"] = res
    out.update(wall_s=time.perf_counter() - start, load_before=load, load_after=os.getloadavg())
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
