"""Long-run stability: 100k users, 200 steps, ABM policy, journal on.

Prints one JSON line per 20 steps (RSS, steps/s, state sizes) and a final summary line:
memory should grow only with the state (posts, comments, relations), not with traces,
memories or caches.
"""

from __future__ import annotations

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


def main() -> None:
    n = int(os.environ.get("BENCH_USERS", 100_000))
    steps = int(os.environ.get("BENCH_STEPS", 200))
    db = os.path.join(tempfile.mkdtemp(), "soak.db")
    env = twitter_v0.parallel_env(
        users=n, activation=float(os.environ.get("BENCH_ACTIVATION", 0.01)), max_cycles=steps, db_path=db
    )
    env.reset(seed=0)
    policy = ABMPolicy()
    policy.reset(env, np.arange(n), 0)
    rows = []
    t_block = time.perf_counter()
    for step in range(1, steps + 1):
        env.step_batch(policy.act(env, env.sim.obs))
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
    growth = rows[-1]["rss_mb"] - rows[0]["rss_mb"]
    print(
        json.dumps(
            {
                "bench": "soak_summary",
                "users": n,
                "steps": steps,
                "rss_first_mb": rows[0]["rss_mb"],
                "rss_last_mb": rows[-1]["rss_mb"],
                "rss_growth_mb": round(growth, 1),
                "posts_added": rows[-1]["posts"] - rows[0]["posts"],
                "mean_steps_per_s": round(float(np.mean([r["steps_per_s"] for r in rows])), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
