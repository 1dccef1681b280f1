"""The platform path of a task beside today's Recommender-v0, at the same population (issue 51's bar).

    python bench/throughput/platform_backend_speed.py                 # 1 000 users, 5 rounds of 20 steps
    python bench/throughput/platform_backend_speed.py --users 1000 --rounds 7 --steps 30

Three envs of `--users` users, journal off, stepped in alternating rounds of `--steps` steps
(A B C, C B A, A B C ...: all see the same load), after a warm-up of `--steps` steps each:
- `v0`: `gymnasium.make("oasis_gym/Recommender-v0", users=N, journal=False)` (its ABM users of
  `misinfo_stream`), random actions (seeded);
- `platform`: Recommender-v4 medium, `backend="platform"` (`oasis_gym/world/sim_world.py`: the
  task on a `Simulation`'s split step, the task users act through platform rows), random actions;
- `fast`: Recommender-v4 medium on the fast path, the same actions (the reference).
An episode that ends starts again (untimed). Reported: the median and the minimum over rounds of
the milliseconds a step takes, per env, and platform / v0 of the medians. One JSON line, with
the load average at the start and at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import gymnasium as gym
import numpy as np

import oasis_gym  # noqa: F401 - registers the ids


def _make(name: str, users: int):
    if name == "v0":
        return gym.make("oasis_gym/Recommender-v0", users=users, journal=False)
    backend = "platform" if name == "platform" else "fast"
    return gym.make("oasis_gym/Recommender-v4", users=users, difficulty="medium", backend=backend)


def _steps(env, rng: np.random.Generator, n: int) -> float:
    """Seconds `n` steps take (an episode at its end starts again, untimed)."""
    took = 0.0
    for _ in range(n):
        action = rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)
        start = time.perf_counter()
        _, _, term, trunc, _ = env.step(action)
        took += time.perf_counter() - start
        if term or trunc:
            env.reset()
    return took


def main() -> None:
    """Run the rounds and print one JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    load_start = os.getloadavg()[0]
    names = ("v0", "platform", "fast")
    envs = {name: _make(name, args.users) for name in names}
    rngs = {name: np.random.default_rng(0) for name in names}
    for name, env in envs.items():
        env.reset(seed=9000)
        _steps(env, rngs[name], args.steps)  # warm-up
    ms: dict[str, list[float]] = {name: [] for name in names}
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            ms[name].append(1000 * _steps(envs[name], rngs[name], args.steps) / args.steps)
    for env in envs.values():
        env.close()
    row = {"bench": "platform_backend_speed", "users": args.users, "rounds": args.rounds, "steps": args.steps}
    for name in names:
        row[f"{name}_ms_median"] = round(float(np.median(ms[name])), 3)
        row[f"{name}_ms_min"] = round(float(np.min(ms[name])), 3)
    row["platform_over_v0"] = round(row["platform_ms_median"] / row["v0_ms_median"], 3)
    row["load_avg_1m"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
