"""How much better than the report rule can a moderator without the label be? Hand-made
rules on the same evidence the learner sees, on training-distribution seeds.

    python bench/research/moderator_headroom.py --seeds 6
    python bench/research/moderator_headroom.py --seeds 6 --scenario misinfo_stream   # without brigading

Every rule reads only what the moderator's observation holds (reports, post age, the
author's followers, fact-check verdicts, who reported, the clock); none reads the label.
Scored by the moderator's own return on Moderator-v0's default scenario
(`misinfo_brigading`: `misinfo_stream` plus report brigading; 1 000 ABM users, 50 steps),
or `--scenario`, next to no
moderation and the oracle (`oracle_suspend`, the upper bound). Where the misinformation
impressions happen is measured too: the share of them on posts at most one step old,
served before any moderator has seen the post (its suspension of the source is the only
defence). One JSON line on stdout.
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


def rule(
    env,
    threshold: int = 3,
    young: tuple[int, float] | None = None,
    early: tuple[int, int] | None = None,
    verdict: bool = False,
    evidence: bool = False,
):
    """Remove + suspend at >= `threshold` reports; `young` (t, hours): also at >= t reports on
    posts younger than `hours`; `early` (t, steps): threshold t during the first steps;
    `verdict`: also on a fact-check verdict of misinformation; `evidence`: not on posts whose
    reports look like brigading (half or more of the reporters have a false-report record)
    or whose author has more posts fact-checked true than as misinformation (thresholds
    chosen a priori, from the feature's meaning)."""
    from oasis_gym.model.moderation import V0_VIEW_FEATURES as F

    def act(obs):
        sim = env.sim
        agent, pf = sim.platform_agents["moderator_0"], sim.platform
        s = agent.slots
        ok = s >= 0
        p = np.maximum(s, 0)
        rep = pf.p_reports.a[p]
        t = threshold if early is None or pf.step >= early[1] else early[0]
        hit = rep >= t
        if young is not None:
            hit |= (rep >= young[0]) & ((pf.minute - pf.p_minute.a[p]) / 60.0 <= young[1])
        if verdict:
            hit |= agent.fact_check.verdicts[p] > 0
        if evidence:
            x = np.asarray(obs).reshape(agent.top_m, len(F))
            col = {n: x[:, i] for i, n in enumerate(F)}
            brigade_like = col["reporters_false_report_share"] >= 0.5
            cleared = col["log_author_cleared"] > col["log_author_flagged"]
            hit &= ~(brigade_like | cleared) | (agent.fact_check.verdicts[p] > 0)
        return np.where(ok & hit, 4, 0)

    return act


def main(argv: list[str] | None = None) -> int:
    """Score the rules on `--seeds` training seeds; one JSON line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=6)
    p.add_argument("--users", type=int, default=None)
    p.add_argument("--scenario", default="misinfo_brigading", choices=("misinfo_brigading", "misinfo_stream"))
    args = p.parse_args(argv)
    from oasis_gym.model.seeds import TRAIN_SEEDS_FROM
    from oasis_gym.platform import MISINFO_LABEL
    from oasis_gym.train.common import EnvConfig
    from oasis_gym.train.evaluate import evaluate_moderator, run_episode

    start, load = time.perf_counter(), os.getloadavg()
    seeds = [TRAIN_SEEDS_FROM + 1 + i for i in range(args.seeds)]
    config = EnvConfig(kind="moderator", users=args.users, scenario=args.scenario)
    env = config.make()
    young_share: list[float] = []

    def tracked(act):
        def f(obs):  # count impressions of misinformation by post age in the feeds just served
            pf, shown = env.sim.platform, env.sim.obs.post_ids
            posts = shown[shown >= 0]
            mis = posts[pf.p_label.a[posts] == MISINFO_LABEL]
            counts.append((len(mis), int((pf.step - pf.p_step.a[mis] <= 1).sum())))
            return act(obs)

        return f

    rules = {
        "report_threshold_suspend (3)": rule(env, 3),
        "threshold 2": rule(env, 2),
        "threshold 4": rule(env, 4),
        "3, or 2 on posts < 6 min old": rule(env, 3, young=(2, 0.1)),
        "3, or 2 in the first 8 steps": rule(env, 3, early=(2, 8)),
        "3, or a misinformation verdict": rule(env, 3, verdict=True),
        "3, not on brigade-like reports": rule(env, 3, evidence=True),
        "2, not on brigade-like reports": rule(env, 2, evidence=True),
    }
    out: dict = {}
    for name, act in rules.items():
        counts: list[tuple[int, int]] = []
        runs = [run_episode(env, tracked(act), s) for s in seeds]
        r = np.array([x["return"] for x in runs])
        c = np.array(counts).sum(axis=0)
        out[name] = {
            "return": [float(r.mean()), float(r.std(ddof=1))],
            "values": r.round(4).tolist(),
            "true_actioned_share": float(np.mean([x["true_actioned_share"] for x in runs])),
            "misinfo_impressions_young_share": float(c[1] / max(c[0], 1)),
        }
        young_share.append(out[name]["misinfo_impressions_young_share"])
    env.close()
    for name in ("none", "oracle_suspend"):
        r = np.array([x["return"] for x in evaluate_moderator(name, seeds, config)])
        out[name] = {"return": [float(r.mean()), float(r.std(ddof=1))], "values": r.round(4).tolist()}
    print(
        json.dumps(
            {
                "bench": "moderator_headroom",
                "scenario": args.scenario,
                "seeds": seeds,
                "rules": out,
                "wall_s": time.perf_counter() - start,
                "load_before": load,
                "load_after": os.getloadavg(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
