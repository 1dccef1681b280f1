"""What a dict-API step costs: a fixed part per step plus a part per acting user.

The steps of bench/oasis/oasis_throughput.py (its scripted action mix, every user acting, journal
on, random recommender, the steps after the first of a fresh process's first episode) at
several population sizes, each size in `--reps` fresh processes; then a least-squares line
through the per-size medians: ``step = fixed + per_user x users``. Against OASIS's cost per
user-step (~18 ms on the 2-core CI-class box, bench/oasis/oasis_throughput.py), it says how much of
a step is left for the fixed part at a target ratio: at 1000x and 100 users, 1.8 ms in all.

    python bench/oasis/step_cost.py --users 10,30,100,300 --steps 12 --reps 3

Prints a progress line per size on stderr, then one JSON line: each size's median step (ms)
and its runs, the fitted fixed part (ms) and part per user (us), and the 1-minute load
average before and after. Each run's journal goes to a temp folder it removes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",")]
    except ValueError:
        sizes = []
    if len(sizes) < 2 or min(sizes) < 1 or len(set(sizes)) != len(sizes):
        raise argparse.ArgumentTypeError(f"need two or more distinct user counts >= 1, got {text!r}")
    return sizes


def _args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=_sizes, default=_sizes("10,30,100,300"), help="user counts [10,30,100,300]")
    ap.add_argument("--steps", type=int, default=12, help="steps per run, the first untimed [12]")
    ap.add_argument("--reps", type=int, default=3, help="fresh processes per user count [3]")
    ap.add_argument("--side", nargs=3, type=int, metavar=("USERS", "STEPS", "SEED"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not 2 <= args.steps <= 10_000 or not 1 <= args.reps <= 100:
        ap.error("--steps must be in [2, 10000] and --reps in [1, 100]")
    return args


def main(argv=None) -> None:
    args = _args(argv)
    if args.side:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from oasis_throughput import run_ours  # the same steps and action mix

        users, steps, seed = args.side
        timed = run_ours(users, steps, seed, "random")["step_s"][1:]
        print(json.dumps({"step_ms": 1000 * sum(timed) / len(timed)}))
        return
    load0 = os.getloadavg()[0]
    rows = []
    for users in args.users:
        runs = []
        for rep in range(args.reps):
            cmd = [sys.executable, os.path.abspath(__file__), "--side", str(users), str(args.steps), str(rep)]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"step_cost: a run of {users} users failed:\n{done.stderr[-3000:]}")
            runs.append(json.loads(done.stdout.strip().splitlines()[-1])["step_ms"])
        median = round(statistics.median(runs), 3)
        rows.append({"users": users, "step_ms": median, "runs_ms": [round(r, 3) for r in runs]})
        print(f"step_cost: {users} users: {rows[-1]['step_ms']} ms a step (median of {len(runs)})", file=sys.stderr)
    per_user, fixed = np.polyfit([r["users"] for r in rows], [r["step_ms"] for r in rows], 1)
    out = {
        "bench": "step_cost",
        "steps": args.steps,
        "reps": args.reps,
        "rows": rows,
        "fixed_ms": round(float(fixed), 3),
        "per_user_us": round(float(per_user) * 1000, 2),
        "loadavg_before": round(load0, 2),
        "loadavg_after": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
