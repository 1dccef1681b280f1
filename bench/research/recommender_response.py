"""Diagnostic (#30): how Recommender-v3's return responds to the size of a change of the ranking.

PPO learns from the returns of small random changes of its action (its exploration noise),
CEM from whole episodes of candidates scored on the same seeds. This measures what the
first can see. From a benchmark's results.json: the tuned per-user constant plus alpha
times the tuned `campaign_told` change (applied while a campaign runs: privileged, a
diagnostic), for each alpha of a grid, on the same episode seeds (common random numbers,
deterministic policies), paired by seed against alpha = 0: the mean gain, its sd over the
seeds, the 95% t interval and the wins. If the return were a smooth function of the action,
the sd of the paired gain would shrink with alpha; where it does not, same-seed episodes
diverge at the slightest change (a post swapped in one feed changes what others see next)
and the return's response to a small change is mostly that divergence.

    python bench/research/recommender_response.py --results bench-recommender-v3-medium/results.json \\
        --alphas 0.001,0.01,0.1,0.5,1 --seeds 5000-5015

Seeds default to the benchmark's tuning seeds (the change was tuned there). Rule-based users
only (the batched engine). Prints one line per alpha, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from oasis_gym.metrics.intervals import mean_ci
from oasis_gym.train import campaign_detector, tuned_baselines


def _settings(a: argparse.Namespace) -> tuple[dict, list[float], list[int]]:
    """The task's env kwargs, the alphas and the seeds (ValueError if anything is off)."""
    results = json.loads(Path(a.results).read_text())
    st, tuned = results["settings"], results["tuned"]
    if st.get("task") != "recommender" or "campaign_told" not in tuned:
        raise ValueError("--results must be a recommender benchmark's results.json of a tier with campaigns")
    alphas = [float(x) for x in a.alphas.split(",")]
    if not alphas or len(alphas) > 20 or not all(math.isfinite(x) and 0 < x <= 10 for x in alphas):
        raise ValueError(f"--alphas must be 1-20 numbers in (0, 10], got {a.alphas!r}")
    if a.seeds:
        lo, hi = map(int, a.seeds.split("-"))
        seeds = list(range(lo, hi + 1))
    else:
        seeds = [int(s) for s in st["tune_seeds"]]
    if not 2 <= len(seeds) <= 1000 or min(seeds) < 0 or max(seeds) >= 2**20:
        raise ValueError(f"--seeds must be 2-1000 seeds in [0, 2**20), got {a.seeds!r}")
    env = {k: st[k] for k in ("users", "difficulty", "max_steps", "population_seed", "ranking", "version")}
    return {"env": env, "base": tuned["constant"]["action"], "d": tuned["campaign_told"]["action"]}, alphas, seeds


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", required=True, help="an `oasis-gym benchmark recommender` results.json")
    ap.add_argument("--alphas", default="0.001,0.01,0.1,0.5,1", help="sizes of the change [0.001,0.01,0.1,0.5,1]")
    ap.add_argument("--seeds", default="", help="episode seeds A-B [the benchmark's tuning seeds]")
    a = ap.parse_args(argv)
    try:  # every setting checked before any compute: one line, exit code 2
        task, alphas, seeds = _settings(a)
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"recommender_response: {type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(2)
    told = campaign_detector.on_campaign(np.asarray(task["base"]))
    d = np.asarray(task["d"])

    def returns(alpha: float) -> np.ndarray:
        act_for = lambda t: told(t, np.tile(alpha * d, (t.k, 1)))  # noqa: E731
        runs = tuned_baselines.run_episodes("recommender", task["env"], seeds, act_for=act_for)
        return np.array([r["return"] for r in tuned_baselines.per_episode(runs)])

    zero, rows = returns(0.0), []
    print(f"alpha 0: mean return {zero.mean():.2f} over {len(seeds)} seeds", file=sys.stderr)
    for alpha in alphas:
        gain = returns(alpha) - zero
        ci = {k: round(v, 3) for k, v in mean_ci(gain).items()}
        rows.append({"alpha": alpha, "gain": ci, "wins": int((gain > 0).sum()), "ties": int((gain == 0).sum())})
        print(f"alpha {alpha:g}: gain {ci['mean']:+.2f} [{ci['lo']:+.2f}, {ci['hi']:+.2f}], sd {ci['sd']:.2f} "
              f"over same-seed episodes, {rows[-1]['wins']}/{len(seeds)} wins", file=sys.stderr)  # fmt: skip
    print(json.dumps({"bench": "recommender_response", "task": f"recommender-v{task['env']['version']}",
                      "difficulty": task["env"]["difficulty"], "seeds": [seeds[0], seeds[-1]],
                      "change_mean_abs": round(float(np.abs(d).mean()), 4), "return_at_0": round(float(zero.mean()), 3),
                      "rows": rows, "users": "rule-based"}))  # fmt: skip


if __name__ == "__main__":
    main()
