"""How much a recommender can gain by changing its ranking with the platform's state (issue 30).

    python bench/research/recommender_state_headroom.py --version 3 --difficulty medium

PPO in `oasis-gym benchmark recommender` starts at the tuned per-user constant and can only
beat it by acting on the state. This measures what acting on the state is worth, in the one
state variable the tiers make matter: the hidden misinformation campaign. A privileged
reference is told whether a campaign is on and adds a tuned change to the global row of
the ranking W while it is (`on_campaign`); everything else is the tuned constant. Searched
with the same budget (cross-entropy, `train.tuned_baselines.tune_constant`, on the tuning
seeds of the training population):
1. the best global constant w, and from it the best per-user constant W (the baselines PPO
   is compared with);
2. the campaign change d (9 weights) on top of W;
3. the same change, applied where a campaign *detector* fires instead (not privileged): a
   logistic regression of "a campaign ran this step" on the observation (time left out),
   fit on the tuning episodes played with W (the hidden campaign is read only then, as the
   moderator's label classifier reads labels), its change d tuned by the same search.
Both state-dependent policies live in `train/campaign_detector.py`: `oasis-gym benchmark`
and `oasis-gym train` compare PPO with them too. Then all four are scored on held-out
seeds of the training population and on a held-out population, paired by seed.
"campaign-aware minus per-user constant" is the headroom a state-dependent policy has (a
reference, not a proven upper bound); if its interval includes 0, acting on campaigns
shows no gain; "detector minus per-user constant" is how much of it the observation gives
a simple supervised policy. Rule-based users (no LLM).

Prints one JSON line: the tuned scores, the detector's AUC on its tuning episodes, per
evaluation set the means, the paired differences with their 95 % t intervals and wins,
both changes, the compute (env steps), the wall time and the load.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
from recommender_personalization import check_arguments, progress, search_arguments

from oasis_gym.metrics.intervals import mean_ci
from oasis_gym.model.ranking import CANDIDATE_FEATURES
from oasis_gym.train import campaign_detector as cd
from oasis_gym.train import tuned_baselines as tb


def constant(action: np.ndarray):
    """The act of a constant action."""
    return lambda o, t: np.tile(action, (len(o), 1))


def main(argv: list[str] | None = None) -> None:
    p = search_arguments(__doc__, 3, ["medium", "hard"])
    a = p.parse_args(argv)
    check_arguments(p, a)
    began = time.perf_counter()
    env = {"difficulty": a.difficulty, "users": a.users, "population_seed": 0, "max_steps": a.max_steps,
           "version": a.version}  # fmt: skip
    rows = tb.user_rows(env)
    cem = {"iterations": a.iterations, "population": a.population, "progress": progress}
    glob = tb.tune_constant(env, a.tune_seeds, ranking="global", **cem)
    const = tb.tune_constant(env, a.tune_seeds, start=tb.global_as_per_user(glob["action"], rows), start_sd=0.25,
                             **cem)  # fmt: skip
    found = cd.tune(env, a.tune_seeds, const["action"], "per_user", cem)
    det, aware, detector = found["campaign_detector"], found["campaign_told"], found["campaign_detector"]["detector"]
    out = {"bench": "recommender_state_headroom", "version": a.version, "difficulty": a.difficulty, "users": a.users,
           "tuned": {"global": round(glob["score"], 3), "per_user_constant": round(const["score"], 3),
                     "campaign_aware": round(aware["score"], 3), "detector": round(det["score"], 3)},
           "detector_tuning_auc": round(detector["tuning_auc"], 3)}  # fmt: skip
    policies = cd.candidates(found, const["action"])
    for name, population in (("held-out seeds", 0), ("held-out population", a.eval_population)):
        e = {**env, "population_seed": population}
        g = {**e, "ranking": "global"}
        runs = {
            "global": tb.run_episodes("recommender", g, a.eval_seeds, constant(glob["action"])),
            "per_user_constant": tb.run_episodes("recommender", e, a.eval_seeds, constant(const["action"])),
            "campaign_aware": tb.run_episodes("recommender", e, a.eval_seeds,
                                              act_for=policies["campaign_told (privileged)"]),
            "detector": tb.run_episodes("recommender", e, a.eval_seeds, act_for=policies["tuned_campaign_detector"]),
        }  # fmt: skip
        res = {k: round(float(v["return"].mean()), 3) for k, v in runs.items()}
        for x, y in (("campaign_aware", "per_user_constant"), ("detector", "per_user_constant"),
                     ("per_user_constant", "global")):  # fmt: skip
            d = runs[x]["return"] - runs[y]["return"]
            ci = mean_ci(d)
            res[f"{x}_minus_{y}"] = {k: round(float(ci[k]), 3) for k in ("mean", "lo", "hi")} | {
                "wins": int((d > 0).sum()), "episodes": len(d)}  # fmt: skip
        out[name] = res
    out.update(campaign_change=dict(zip(CANDIDATE_FEATURES, np.round(aware["action"], 3).tolist())),
               detector_change=dict(zip(CANDIDATE_FEATURES, np.round(det["action"], 3).tolist())),
               global_weights=dict(zip(CANDIDATE_FEATURES, np.round(glob["action"], 3).tolist())),
               env_steps=sum(r["env_steps"] for r in (glob, const, aware, det)),
               wall_s=round(time.perf_counter() - began, 1), load_avg_1m=round(os.getloadavg()[0], 2))  # fmt: skip
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
