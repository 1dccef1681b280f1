"""The fast path's step under OASIS's rules beside the same step without them (issue 51, plan commit 12).

    python bench/throughput/oasis_rules_speed.py                      # K = 1, 32, 128
    python bench/throughput/oasis_rules_speed.py --k 32 --rounds 9

Recommender-v4 is Recommender-v3 plus the rules (`Dynamics.oasis_rules`: the (user, post) pairs
each simulation remembers, `batched/pairs.py`). Per K, one `RecommenderTask` of each version
(1 000 users, medium, the default ranking, seeds 9000+) is stepped in alternating rounds of
`--steps` steps (v4, v3, v3, v4, v4, v3, ...: both see the same load), after a warm-up that fills the
ring and the pair sets; an episode that ends starts again. Reported per K and version: the
median and the minimum over rounds of the milliseconds a step takes, and v4 / v3 of the
medians. One JSON line per K, with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from oasis_gym.batched.tasks import RecommenderTask
from oasis_gym.model.ranking import DEFAULT_WEIGHTS

COMPARED = (3, 4)  # Recommender-v3, and v4 (v3 under the rules)


def _task(version: int, k: int, users: int, max_steps: int) -> tuple[RecommenderTask, np.ndarray]:
    task = RecommenderTask(k, users, "medium", 0, max_steps, version=version)
    task.reset(np.arange(k), 9000 + np.arange(k))
    action = np.tile(np.r_[DEFAULT_WEIGHTS, np.zeros(task.action_size - len(DEFAULT_WEIGHTS))], (k, 1))
    return task, action.astype(np.float32)


def _steps(task: RecommenderTask, action: np.ndarray, n: int) -> float:
    """Seconds `n` steps take (an episode at its end starts again, untimed)."""
    took = 0.0
    for _ in range(n):
        if task.state.t[0] >= task.max_steps:
            task.reset(np.arange(task.k), 9000 + np.arange(task.k))
        began = time.perf_counter()
        task.step(action)
        took += time.perf_counter() - began
    return took


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--k", default="1,32,128", help="simulations stepped together, comma-separated (1..1024)")
    p.add_argument("--users", type=int, default=1000, help="users per simulation (100..100000)")
    p.add_argument("--rounds", type=int, default=25, help="alternating rounds per version (1..100)")
    p.add_argument("--steps", type=int, default=5, help="steps per round (1..100)")
    a = p.parse_args(argv)
    try:
        ks = [int(k) for k in a.k.split(",")]
    except ValueError:
        ks = []
    if (not ks or any(not 1 <= k <= 1024 for k in ks) or not 100 <= a.users <= 100_000
            or not 1 <= a.rounds <= 100 or not 1 <= a.steps <= 100):  # fmt: skip
        print(f"oasis_rules_speed: error: --k 1..1024 each, --users 100..100000, --rounds 1..100, --steps 1..100 "
              f"(got {a.k!r}, {a.users}, {a.rounds}, {a.steps})", file=sys.stderr)  # fmt: skip
        return 2
    for k in ks:
        load = os.getloadavg()[0]
        runs = {v: _task(v, k, a.users, 100) for v in COMPARED}
        for task, action in runs.values():
            _steps(task, action, 20)  # warm-up: the ring and the pair sets filled
        ms: dict[int, list[float]] = {v: [] for v in COMPARED}
        for r in range(a.rounds):
            for v in COMPARED[:: 1 if r % 2 else -1]:  # the order alternates too
                task, action = runs[v]
                ms[v].append(1000 * _steps(task, action, a.steps) / a.steps)
        med = {v: float(np.median(ms[v])) for v in COMPARED}
        print(json.dumps({"bench": "oasis_rules_speed", "k": k, "users": a.users,
                          **{f"v{v}_ms_per_step": {"median": round(med[v], 2), "min": round(min(ms[v]), 2)}
                             for v in COMPARED},
                          "v4_over_v3": round(med[4] / med[3], 3),
                          "load_avg_1m": [round(load, 2), round(os.getloadavg()[0], 2)]}), flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
