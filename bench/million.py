"""The scale claim: 1,000,000 synthetic users, ABM policy, 1% activation (core users 10%),
twitter recsys with the default embedder, journal on, 10 steps.

Prints one JSON line: setup seconds, seconds per step (median after the first step),
actions/s, the closing seconds (the journal's indexes are built then) and peak RSS.
"""

from __future__ import annotations

import json
import os
import resource
import tempfile
import time

import numpy as np

from oasis_gym.envs import twitter_v0
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.population import synthetic

N = int(os.environ.get("BENCH_USERS", 1_000_000))
STEPS = int(os.environ.get("BENCH_STEPS", 10))


def main() -> None:
    t0 = time.perf_counter()
    pop = synthetic(N, seed=0)
    pop.activity[:] = 0.01  # OASIS regular users
    pop.activity[pop.is_core] = 0.10  # core users
    db = os.path.join(tempfile.mkdtemp(), "million.db")
    env = twitter_v0.parallel_env(users=pop, max_cycles=STEPS + 1, db_path=db, recsys="twitter")
    env.reset(seed=0)
    policy = ABMPolicy()
    policy.reset(env, np.arange(N), 0)
    setup = time.perf_counter() - t0
    times, actions = [], 0
    for _ in range(STEPS):
        t = time.perf_counter()
        acts = policy.act(env, env.sim.obs)
        env.step_batch(acts)
        times.append(time.perf_counter() - t)
        actions += len(acts)
    t = time.perf_counter()
    env.close()  # awaits the journal's last step, builds its indexes, checkpoints the WAL
    close = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "bench": "million",
                "users": N,
                "steps": STEPS,
                "setup_s": round(setup, 1),
                "median_step_s": round(float(np.median(times[1:] if len(times) > 1 else times)), 3),
                "first_step_s": round(times[0], 3),
                "actions_per_s": round(actions / sum(times)),
                "actions_per_step": actions // STEPS,
                "close_s": round(close, 1),
                "peak_rss_mb": round(rss),
                "db_mb": round(os.path.getsize(db) / 2**20),
            }
        )
    )


if __name__ == "__main__":
    main()
