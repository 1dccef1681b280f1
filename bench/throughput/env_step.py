"""Env step throughput: users in {1k, 10k, 100k}, random policy, dict API and batched path.

Prints one JSON line per configuration: steps/s and agent-actions/s (actions of active users).
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from oasis_gym.envs import twitter_v0
from oasis_gym.policies.base import RandomPolicy

SIZES = [int(x) for x in os.environ.get("BENCH_SIZES", "1000,10000,100000").split(",")]
STEPS = int(os.environ.get("BENCH_STEPS", 10))
ACTIVATION = float(os.environ.get("BENCH_ACTIVATION", 0.1))


def run(n: int, fast: bool) -> dict:
    env = twitter_v0.parallel_env(users=n, activation=ACTIVATION, max_cycles=STEPS + 1)
    obs, _ = env.reset(seed=0)
    policy = RandomPolicy()
    policy.reset(env, np.arange(n), 0)
    actions = 0
    start = time.perf_counter()
    for _ in range(STEPS):
        acts = policy.act(env, env.sim.obs)
        actions += len(acts)
        if fast:
            env.step_batch(acts)
        else:
            cols = zip(
                acts.users.tolist(), acts.type.tolist(), acts.post.tolist(), acts.comment.tolist(), acts.user.tolist()
            )
            action_dict = {f"user_{u}": {"type": t, "post": p, "comment": c, "user": us} for u, t, p, c, us in cols}
            obs, rewards, terms, truncs, infos = env.step(action_dict)
    seconds = time.perf_counter() - start
    env.close()
    return {
        "bench": "env_step",
        "users": n,
        "api": "batched" if fast else "dict",
        "activation": ACTIVATION,
        "steps_per_s": round(STEPS / seconds, 2),
        "agent_actions_per_s": round(actions / seconds),
        "active_per_step": round(actions / STEPS),
    }


def main() -> None:
    for n in SIZES:
        for fast in (False, True):
            print(json.dumps(run(n, fast)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
