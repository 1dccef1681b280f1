"""Long-run stability: memory and step-time jitter over many steps, ABM policy, journal on.

Prints one JSON line per 20 steps (RSS, steps/s, state sizes) and a final summary line:
memory should grow only with the state (posts, comments, relations), not with traces,
memories or caches; and no step should stall far beyond its neighbours (the summary gives
the median, 99th percentile and slowest steps, each step timed on its own).

    python bench/throughput/soak.py                                    # 100,000 users, 1 % active, 200 steps
    python bench/throughput/soak.py --users 100 --activation 1 --steps 1000   # small and long: growth stalls
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np

from oasis_gym.envs import twitter_v0
from oasis_gym.policies.abm import ABMPolicy


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    env = os.environ  # (BENCH_USERS, BENCH_STEPS and BENCH_ACTIVATION still set the defaults)
    ap.add_argument("--users", type=int, default=int(env.get("BENCH_USERS", 100_000)), help="population [100000]")
    ap.add_argument("--steps", type=int, default=int(env.get("BENCH_STEPS", 200)), help="steps to run [200]")
    ap.add_argument(
        "--activation", type=float, default=float(env.get("BENCH_ACTIVATION", 0.01)), help="flat activation [0.01]"
    )
    ap.add_argument("--recsys", default="twitter", help="recommender [twitter]")
    args = ap.parse_args(argv)
    if args.users < 1 or args.steps < 20:
        ap.error("--users must be >= 1 and --steps >= 20 (one progress line per 20 steps)")
    if not 0.0 < args.activation <= 1.0:
        ap.error("--activation must be in (0, 1]")
    return args


def main(argv=None) -> None:
    args = _args(argv)
    n, steps = args.users, args.steps
    with tempfile.TemporaryDirectory(prefix="oasis_soak_") as tmp:
        db = os.path.join(tmp, "soak.db")
        env = twitter_v0.parallel_env(
            users=n, activation=args.activation, max_cycles=steps, db_path=db, recsys=args.recsys
        )
        env.reset(seed=0)
        policy = ABMPolicy()
        policy.reset(env, np.arange(n), 0)
        rows, step_s = [], []
        t_block = time.perf_counter()
        for step in range(1, steps + 1):
            acts = policy.act(env, env.sim.obs)
            t = time.perf_counter()
            env.step_batch(acts)
            step_s.append(time.perf_counter() - t)
            if step % 20 == 0:
                pf = env.sim.platform
                now = time.perf_counter()
                row = {
                    "bench": "soak",
                    "step": step,
                    "rss_mb": round(rss_mb(), 1),
                    "steps_per_s": round(20 / (now - t_block), 2),
                    "posts": pf.n_posts,
                    "comments": pf.n_comments,
                    "likes": len(pf.rel["like"]),
                    "follows": len(pf.rel["follow"]),
                    "db_mb": round(os.path.getsize(db) / 2**20, 1),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
                t_block = now
        env.close()
    ms = np.asarray(step_s) * 1000
    slowest = np.argsort(ms, kind="stable")[::-1][:3]
    print(
        json.dumps(
            {
                "bench": "soak_summary",
                "users": n,
                "steps": steps,
                "activation": args.activation,
                "recsys": args.recsys,
                "rss_first_mb": rows[0]["rss_mb"],
                "rss_last_mb": rows[-1]["rss_mb"],
                "rss_growth_mb": round(rows[-1]["rss_mb"] - rows[0]["rss_mb"], 1),
                "posts_added": rows[-1]["posts"] - rows[0]["posts"],
                "mean_steps_per_s": round(float(np.mean([r["steps_per_s"] for r in rows])), 2),
                "step_ms_median": round(float(np.median(ms)), 3),
                "step_ms_p99": round(float(np.percentile(ms, 99)), 3),
                "step_ms_max": round(float(ms.max()), 3),
                "slowest_steps": [[int(i) + 1, round(float(ms[i]), 3)] for i in slowest],
                "loadavg_1m": round(os.getloadavg()[0], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
