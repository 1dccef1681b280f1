"""Benchmark: time and peak memory of oasis_gym.population.synthetic at 1M users.

Prints ONE JSON line: {"n", "seconds", "edges", "core_edges", "peak_rss_mb", ...}.
Usage: python bench/throughput/population_synthetic.py [n] [seed] [--max-core-followees M|none]
(``none``: the unbounded core-follow rule, quadratic in n, for before/after comparisons).
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from oasis_gym.population import synthetic


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int, nargs="?", default=1_000_000)
    ap.add_argument("seed", type=int, nargs="?", default=0)
    ap.add_argument("--max-core-followees", default="20")
    args = ap.parse_args()
    n, seed = args.n, args.seed
    cap = None if args.max_core_followees.lower() == "none" else float(args.max_core_followees)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    pop = synthetic(n, seed=seed, max_core_followees=cap)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    indeg = pop.in_degree()
    ordinary = indeg[~pop.is_core]
    print(
        json.dumps(
            {
                "n": n,
                "seconds": round(seconds, 3),
                "edges": pop.num_edges,
                "edges_per_user": round(pop.num_edges / max(1, n), 2),
                "max_core_followees": cap,
                "core_users": int(pop.is_core.sum()),
                "core_edges": int(np.count_nonzero(pop.is_core[pop.follow_dst])),
                "ordinary_in_degree_mean": round(float(ordinary.mean()), 3),
                "ordinary_in_degree_max": int(ordinary.max()),
                "activity_mean": round(float(pop.activity.mean()), 5),
                "peak_rss_mb": round(peak, 1),
                "rss_before_mb": round(rss_before, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
