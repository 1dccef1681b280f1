"""The scale claim: N synthetic users (1,000,000 by default), ABM policy, 1% activation (core
users 10%), twitter recsys with the default embedder, journal on, 10 steps.

Prints one JSON line: setup seconds (population + env + reset, with the reset's parts),
seconds per step (median after the first step), actions/s, the follow edge count, the
closing seconds (the journal's indexes are built then) and peak RSS.

Usage: python bench/throughput/million.py [--users N] [--active FRACTION] [--core-active FRACTION]
       [--steps S] [--seed K] [--max-core-followees M|none] [--commit auto|in-place|thread]
       [--dict-api]
The environment variables BENCH_USERS, BENCH_STEPS and BENCH_ACTIVE still set the defaults.
``--max-core-followees none`` builds the population of the unbounded core-follow rule (the
graph before the bound, quadratic in N) for before/after comparisons. ``--commit`` overrides
the journal's commit mode, which otherwise follows the user count (`sim.config.pipelined`):
run both on one machine to compare them. ``--dict-api`` drives `env.step` with one action
dict per acting user (built from the policy's columns inside the timed step, as a dict-API
user builds them) instead of `step_batch`.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import shutil
import tempfile
import time

import numpy as np

from oasis_gym.envs import twitter_v0
from oasis_gym.platform.journal import Journal
from oasis_gym.platform.platform import Platform
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.population import synthetic
from oasis_gym.sim import config as sim_config


def _parse(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=int(os.environ.get("BENCH_USERS", 1_000_000)))
    ap.add_argument(
        "--active",
        type=float,
        default=float(os.environ.get("BENCH_ACTIVE", 0.01)),
        help="activation probability of regular users per step [0.01, OASIS]",
    )
    ap.add_argument("--core-active", type=float, default=0.10, help="activation of core users [0.10]")
    ap.add_argument("--steps", type=int, default=int(os.environ.get("BENCH_STEPS", 10)))
    ap.add_argument("--seed", type=int, default=0, help="population and episode seed [0]")
    ap.add_argument("--max-core-followees", default="20", help="synthetic()'s bound; 'none' = unbounded")
    ap.add_argument("--commit", choices=("auto", "in-place", "thread"), default="auto", help="journal commit [auto]")
    ap.add_argument("--dict-api", action="store_true", help="step through env.step with action dicts")
    return ap.parse_args(argv)


def _dicts(env, acts) -> dict:
    """The policy's columnar actions as PettingZoo action dicts, one per acting user."""
    names = env.possible_agents
    n = len(acts)
    cols = zip(*(([0] * n if c is None else c.tolist()) for c in (acts.type, acts.post, acts.comment, acts.user)))
    texts = acts.text if acts.text is not None else [None] * len(acts)
    return {
        names[u]: {"type": a, "post": p, "comment": c, "user": o, "text": t}
        for u, (a, p, c, o), t in zip(acts.users.tolist(), cols, texts)
    }


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _timing(parts: dict, name: str, cls, attr: str) -> None:
    """Wrap cls.attr so its wall time (summed) lands in parts[name]."""
    fn = getattr(cls, attr)

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            parts[name] = parts.get(name, 0.0) + time.perf_counter() - t

    setattr(cls, attr, timed)


def main(argv=None) -> None:
    args = _parse(argv)
    cap = None if args.max_core_followees.lower() == "none" else float(args.max_core_followees)
    n = args.users
    parts: dict[str, float] = {}
    if args.commit != "auto":  # (the bench's override of the run's choice)
        sim_config.PIPELINE_MIN_USERS = 0 if args.commit == "thread" else 1 << 62
    t0 = time.perf_counter()
    pop = synthetic(n, seed=args.seed, max_core_followees=cap)
    pop.activity[:] = args.active  # OASIS regular users
    pop.activity[pop.is_core] = args.core_active  # core users
    population_s = time.perf_counter() - t0
    rss_population = _peak_mb()
    folder = tempfile.mkdtemp(prefix="oasis_gym_million_")  # removed at the end (7 GB at 10M users)
    db = os.path.join(folder, "million.db")
    env = twitter_v0.parallel_env(users=pop, max_cycles=args.steps + 1, db_path=db, recsys="twitter")
    _timing(parts, "add_users_s", Platform, "add_users")
    _timing(parts, "first_commit_s", Journal, "commit_step")
    _timing(parts, "recsys_reset_s", type(env.sim.recsys), "reset")
    t = time.perf_counter()
    env.reset(seed=args.seed)
    reset_s = time.perf_counter() - t
    reset_parts = {k: round(v, 1) for k, v in parts.items()}  # (later commits add to parts)
    policy = ABMPolicy()
    policy.reset(env, np.arange(n), args.seed)
    setup = time.perf_counter() - t0
    rss_setup = _peak_mb()
    times, actions = [], 0
    for _ in range(args.steps):
        t = time.perf_counter()
        acts = policy.act(env, env.sim.obs)
        if args.dict_api:
            env.step(_dicts(env, acts))
        else:
            env.step_batch(acts)
        times.append(time.perf_counter() - t)
        actions += len(acts)
    rss_steps = _peak_mb()
    commit = "thread" if env.sim.journal._writer is not None else "in-place"
    t = time.perf_counter()
    env.close()  # awaits the journal's last step, builds its indexes, checkpoints the WAL
    close = time.perf_counter() - t
    db_mb = round(os.path.getsize(db) / 2**20)
    shutil.rmtree(folder)
    steady = times[1:] if len(times) > 1 else times
    print(
        json.dumps(
            {
                "bench": "million",
                "users": n,
                "active": args.active,
                "steps": args.steps,
                "edges": int(pop.num_edges),
                "max_core_followees": cap,
                "commit": commit,
                "api": "dict" if args.dict_api else "batch",
                "setup_s": round(setup, 1),
                "population_s": round(population_s, 1),
                "reset_s": round(reset_s, 1),
                "reset_parts_s": reset_parts,
                "median_step_s": round(float(np.median(steady)), 5) if times else None,
                "first_step_s": round(times[0], 5) if times else None,
                "actions_per_s": round(actions / sum(times)) if times and sum(times) else 0,
                "actions_per_step": actions // max(1, args.steps),
                "close_s": round(close, 1),
                "peak_rss_mb": round(_peak_mb()),
                "peak_rss_after_population_mb": round(rss_population),
                "peak_rss_after_setup_mb": round(rss_setup),
                "peak_rss_after_steps_mb": round(rss_steps),
                "db_mb": db_mb,
                "loadavg_1m": round(os.getloadavg()[0], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
