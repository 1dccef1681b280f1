"""How much a per-user ranking can gain over one ranking for everyone in Recommender-v1 or v2 (issue 30).

    python bench/research/recommender_personalization.py --difficulty medium
    python bench/research/recommender_personalization.py --version 2 --difficulty medium

Issue 30 asks that the per-user recommender beat the best global ranking. This measures the
most a per-user *constant* ranking can gain, with privileged information: the ranking's user
features are replaced by the one-hot of each user's hidden kind (casual, outrage-prone,
news-seeking), so W's first three rows are one ranking per kind. Both are tuned by the same
cross-entropy search on the tuning seeds (`train.tuned_baselines.tune_constant`, the
per-kind search started at the tuned global ranking), then scored on held-out seeds of the
training population and on a held-out population, paired by seed. If the per-kind ranking
does not beat the global one, the tier gives personalization no headroom: its kinds want
nearly the same ranking. Rule-based users (no LLM).

`--campaign` adds the state's headroom: a per-kind ranking that also knows when a hidden
misinformation campaign is on (rows 3-5: kind x campaign; privileged), its campaign rows
tuned by the same search from the per-kind ranking, compared with the per-kind ranking.

Prints one JSON line: both tuned scores, per evaluation set the two means, the paired
difference with its 95 % t interval and the per-kind ranking's wins, both weight matrices,
the wall time and the load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from oasis_gym.checks import OneLineParser
from oasis_gym.metrics.intervals import mean_ci
from oasis_gym.model.ranking import CANDIDATE_FEATURES
from oasis_gym.model.tiers import TIERS_BY_VERSION
from oasis_gym.train import tuned_baselines as tb
from oasis_gym.train.privileged import kind_features


def search_arguments(doc: str, version: int, difficulties: list[str]) -> argparse.ArgumentParser:
    """The options the recommender headroom benches share: the task, the search budget, the
    tuning and evaluation seeds (`check_arguments` checks them)."""
    p = OneLineParser(description=doc.split("\n")[0])
    p.add_argument("--version", type=int, default=version, choices=sorted(TIERS_BY_VERSION),
                   help=f"Recommender-vN [{version}]")  # fmt: skip
    p.add_argument("--difficulty", default="medium", choices=difficulties)
    p.add_argument("--users", type=int, default=1000)
    p.add_argument("--max-steps", type=int, default=100)
    p.add_argument("--iterations", type=int, default=10, help="CEM iterations of each search [10]")
    p.add_argument("--population", type=int, default=24, help="CEM candidates per iteration [24]")
    p.add_argument("--tune-seeds", type=int, nargs="+", default=list(range(5000, 5008)))
    p.add_argument("--eval-seeds", type=int, nargs="+", default=list(range(9000, 9020)))
    p.add_argument("--eval-population", type=int, default=1, help="the held-out population [1]")
    return p


def progress(message: str) -> None:
    """A search's progress, on stderr (stdout keeps the one JSON line)."""
    print(message, file=sys.stderr, flush=True)


def check_arguments(p: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    """Sizes >= 1, tuning and evaluation seeds disjoint, a held-out population (one line and
    exit code 2 otherwise, before any compute)."""
    for name in ("users", "max_steps", "iterations", "population"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if set(a.tune_seeds) & set(a.eval_seeds):
        p.error("--tune-seeds and --eval-seeds must be disjoint (never tune on what is scored)")
    if a.eval_population == 0:
        p.error("--eval-population must not be 0, the population tuned on")


def main(argv: list[str] | None = None) -> None:
    p = search_arguments(__doc__, 1, ["easy", "medium", "hard"])
    p.add_argument("--campaign", action="store_true",
                   help="also a per-kind ranking that knows when a campaign is on (state headroom)")  # fmt: skip
    a = p.parse_args(argv)
    check_arguments(p, a)
    began = time.perf_counter()
    env = {"difficulty": a.difficulty, "users": a.users, "population_seed": 0, "max_steps": a.max_steps,
           "version": a.version}  # fmt: skip
    rows = tb.user_rows(env)
    cem = {"iterations": a.iterations, "population": a.population, "progress": progress}
    glob = tb.tune_constant(env, a.tune_seeds, ranking="global", **cem)
    init = np.zeros((rows, len(glob["action"])), np.float32)
    init[:3] = glob["action"]  # every kind starts at the tuned global ranking
    with kind_features():
        kind = tb.tune_constant(env, a.tune_seeds, ranking="per_user", start=init.ravel(), start_sd=0.25, **cem)
    if a.campaign:  # only the campaign rows searched (the per-kind rows stay near their optimum)
        sd = np.full((rows, len(glob["action"])), 0.05)
        sd[3:6] = 0.25
        with kind_features(campaign=True):
            both = tb.tune_constant(env, a.tune_seeds, ranking="per_user", start=kind["action"], start_sd=sd.ravel(),
                                    **cem)  # fmt: skip
    out = {"bench": "recommender_personalization", "version": a.version, "difficulty": a.difficulty, "users": a.users,
           "tuned_global_score": round(glob["score"], 3), "tuned_per_kind_score": round(kind["score"], 3)}  # fmt: skip
    for name, population in (("held-out seeds", 0), ("held-out population", a.eval_population)):
        e = {**env, "population_seed": population}
        with kind_features():
            per_kind = tb.run_episodes(
                "recommender", e, a.eval_seeds, lambda o, t: np.tile(kind["action"], (len(o), 1))
            )
        glob_run = tb.run_episodes("recommender", {**e, "ranking": "global"}, a.eval_seeds,
                                   lambda o, t: np.tile(glob["action"], (len(o), 1)))  # fmt: skip
        d = per_kind["return"] - glob_run["return"]
        out[name] = {"per_kind": round(float(per_kind["return"].mean()), 3),
                     "global": round(float(glob_run["return"].mean()), 3),
                     "per_kind_minus_global": _ci(d), "wins": int((d > 0).sum()), "episodes": len(d)}  # fmt: skip
        if a.campaign:
            with kind_features(campaign=True):
                aware = tb.run_episodes(
                    "recommender", e, a.eval_seeds, lambda o, t: np.tile(both["action"], (len(o), 1))
                )
            d = aware["return"] - per_kind["return"]
            out[name].update(per_kind_campaign=round(float(aware["return"].mean()), 3),
                             per_kind_campaign_minus_per_kind=_ci(d), campaign_wins=int((d > 0).sum()))  # fmt: skip
    out.update(per_kind_weights=np.round(kind["action"].reshape(rows, -1)[:3], 3).tolist(),
               global_weights=np.round(glob["action"], 3).tolist(), candidate_features=list(CANDIDATE_FEATURES),
               wall_s=round(time.perf_counter() - began, 1), load_avg_1m=round(os.getloadavg()[0], 2))  # fmt: skip
    print(json.dumps(out), flush=True)


def _ci(d: np.ndarray) -> dict:
    ci = mean_ci(d)
    return {k: round(float(ci[k]), 3) for k in ("mean", "lo", "hi")}


if __name__ == "__main__":
    main()
