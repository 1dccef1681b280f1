"""How much Moderator-v1's public signals reveal the label, per tier (issue 30).

    python bench/research/moderator_v1_auc.py                       # every tier, 24 episodes each
    python bench/research/moderator_v1_auc.py --tiers hard --episodes 40

For each tier: play `--episodes` episodes (held-out style seeds 7000+, 1 000 users) with no
removals and the fact-check budget spent on the queue's first slots every step (so
verdicts exist), and collect every filled queue slot of every step: its public features and
its hidden label (misinformation or not). Then, cross-validated by episode (5 folds: no
episode in both training and test data), a logistic regression and a small MLP (16 tanh
units) predict the label from
- the public features alone (everything the moderator sees but the fact-check verdict), and
- the public features plus the verdict.
One JSON line per tier and classifier: out-of-fold AUC of each feature set, samples, the
misinformation share, load. The design goal (issue 30): in hard, no classifier on the public
features alone reaches AUC 0.85, and the fact-check verdict raises it.
"""

from __future__ import annotations

import argparse
import json
import os

from oasis_gym.train.label_classifier import PUBLIC, WITH_CHECK, F, collect, cross_validated_auc


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tiers", default="easy,medium,hard")
    p.add_argument("--episodes", type=int, default=24)
    p.add_argument("--users", type=int, default=1000)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--models", default="logistic,mlp")
    args = p.parse_args()
    seeds = list(range(7000, 7000 + args.episodes))
    for tier in args.tiers.split(","):
        env = {"difficulty": tier, "users": args.users, "population_seed": 0, "max_steps": args.steps}
        x, y, ep = collect(env, seeds)
        for model in args.models.split(","):
            row = {"bench": "moderator_v1_auc", "difficulty": tier, "model": model, "samples": int(len(y)),
                   "misinfo_share": round(float(y.mean()), 4),
                   "auc_public": round(cross_validated_auc(x[:, PUBLIC], y, ep, model), 4),
                   "auc_public_and_fact_check": round(cross_validated_auc(x[:, WITH_CHECK], y, ep, model), 4),
                   "checked_share": round(float((x[:, F["fact_check"]] != 0).mean()), 4),
                   "episodes": args.episodes, "load_avg_1m": round(os.getloadavg()[0], 2)}  # fmt: skip
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
