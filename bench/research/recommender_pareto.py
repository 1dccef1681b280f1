"""Engagement against harm: fixed rankings (and optionally trained models) on `misinfo_stream`.

    python bench/research/recommender_pareto.py                      # grid of fixed rankings, 2 seeds
    python bench/research/recommender_pareto.py --models runs/rec/model.zip --seeds 3

Every ranking runs the same episodes (1 000 ABM users, 50 steps, seeds 500, 501, ...:
tuning seeds, disjoint from the training draws >= 2**20 and the evaluation seeds
1000+). Per episode: engagement (sum of per-step engagement rates), misinformation
exposure (sum of per-step misinformation shares), polarization increase since reset
(opinion std), diversity (sum of cross-cutting shares) -- the components of the
Recommender-v0 reward. The rankings: global weight vectors from engagement-greedy
(echo chamber: alignment +1) to harm-averse (reports -1, alignment < 0), and per-user
rankings (alignment falling with |opinion|). Writes `pareto.png` (engagement vs harm =
misinformation exposure + 10 x polarization increase; the fixed rankings' Pareto front
joined, trained models' markers larger) and prints one JSON line with every point.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from oasis_gym.figures import save_png  # noqa: E402
from oasis_gym.train.report import pareto_figure, pareto_front  # noqa: E402

COMPONENTS = ("engagement", "misinfo_exposure", "polarization_increase", "diversity")


def weights(**w) -> np.ndarray:
    """Ranking weights over model.ranking.V0_FEATURES by name (missing ones 0)."""
    from oasis_gym.model.ranking import V0_FEATURES

    return np.array([w.get(n, 0.0) for n in V0_FEATURES.names], np.float32)


def grid() -> dict[str, np.ndarray]:
    """name -> per-user action (3 x 8 flattened): global rankings use the bias row only."""
    out = {}
    for align in (1.0, 0.5, 0.0, -0.5):
        for rep in (0.0, -1.0):
            w = weights(
                recency=1.0,
                popularity=0.5,
                author_fans=0.25,
                similarity=1.0,
                in_network=0.5,
                alignment=align,
                reports=rep,
            )
            W = np.zeros((3, 8), np.float32)
            W[0] = w
            out[f"global a={align:+.1f} r={rep:+.0f}"] = W
    for slope in (
        0.5,
        1.0,
    ):  # per user (W entries are clipped to [-1, 1]): echo chamber for moderates, the other side for extremes
        W = np.zeros((3, 8), np.float32)
        W[0] = weights(
            recency=1.0, popularity=0.5, author_fans=0.25, similarity=1.0, in_network=0.5, alignment=0.5, reports=-1.0
        )
        W[2, 7] = -slope
        out[f"per-user a=0.5-{slope:.0f}|x| r=-1"] = W
    return out


def run(env, act, seeds) -> dict:
    """Each reward component summed over an episode: mean and std over `seeds`."""
    per = {k: [] for k in COMPONENTS}
    for s in seeds:
        obs, _ = env.reset(seed=int(s))
        tot = dict.fromkeys(COMPONENTS, 0.0)
        done = False
        while not done:
            obs, _, term, trunc, info = env.step(act(obs))
            for k in COMPONENTS:
                tot[k] += info["reward_components"][k]
            done = term or trunc
        for k in COMPONENTS:
            per[k].append(tot[k])
    return {
        k: {"mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0} for k, v in per.items()
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: evaluate the fixed rankings and the given PPO models on the tuning
    seeds, write the PNG, print one JSON line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--users", type=int, default=None)
    p.add_argument("--models", nargs="*", default=[], help="SB3 recommender models (model.zip) to add as points")
    p.add_argument("--out", default="runs/bench_pareto")
    args = p.parse_args(argv)
    from oasis_gym.envs.recommender_v0 import RecommenderEnv
    from oasis_gym.policies.sb3 import SB3Policy

    start = time.perf_counter()
    seeds = list(range(500, 500 + args.seeds))
    env = RecommenderEnv(users=args.users)
    points = {}
    for name, W in grid().items():
        points[name] = run(env, lambda obs, a=W.reshape(-1): a, seeds)  # noqa: B008 (binds this W)
    for path in args.models:
        policy = SB3Policy.load(path, agent="recommender_0")
        points[f"ppo {Path(path).parent.name}"] = run(env, policy.predict, seeds)
    env.close()
    for v in points.values():
        v["harm"] = v["misinfo_exposure"]["mean"] + 10.0 * v["polarization_increase"]["mean"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    save_png(pareto_figure(points), out / "pareto.png", dpi=100)
    names = list(points)
    front = pareto_front(
        np.array([points[n]["engagement"]["mean"] for n in names]), np.array([points[n]["harm"] for n in names])
    )
    print(
        json.dumps(
            {
                "bench": "recommender_pareto",
                "seeds": seeds,
                "points": points,
                "pareto_front": [names[i] for i in front],
                "png": str(out / "pareto.png"),
                "wall_s": time.perf_counter() - start,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
