"""Training rates of `oasis-gym scratch`'s agents, and what the protocol's table costs at them (issue 57).

    python bench/throughput/scratch_speed.py                      # every agent of both tasks' table cells
    python bench/throughput/scratch_speed.py --cells moderator-v2:hard --agents ppo recurrent_ppo
    python bench/throughput/scratch_speed.py --timesteps 16384 --env-workers 1

Each measurement builds the agent as `oasis-gym scratch` does (`train/scratch_agents.py`: the
task's native vector env at its default population, 1,000 users and 32 episodes, no anchor,
VecNormalize, the libraries' defaults and the module's stated settings, torch at one thread,
`--env-workers` shares), lets it learn `--warmup` timesteps (SAC's replay buffer past its
learning start, the first rollouts), then times `--timesteps` more (PPO: whole rollouts, so at
least one), in a fresh process. One JSON line per (cell, agent): timesteps/s and the load
(`os.getloadavg`) before and after; then one line with the hours the protocol's table takes at
those rates on this machine (`--seeds` x `--budget` timesteps for each agent of each cell, one
run at a time). Bad flags: one line, exit code 2, before anything runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from train_speed import task_spec  # (this folder: the same task-vN:tier spec and its check)

CELLS = ("recommender-v4:medium", "recommender-v4:hard", "moderator-v2:medium", "moderator-v2:hard")
ONE = """
import json, os, sys, time
from oasis_gym.train import scratch_agents, v1
from oasis_gym.train.common import limit_threads
limit_threads(1)
agent, task, version, tier, users, n_envs, workers, warmup, timesteps = sys.argv[1:10]
args = v1.Args(task=task, version=int(version), difficulty=tier, users=int(users), n_envs=int(n_envs),
               env_workers=int(workers), anchor="none", quiet=True)
vec, _ = scratch_agents.make_env(args)
model = scratch_agents.build(agent, vec, 0, args.n_envs)
if int(warmup):
    model.learn(int(warmup), callback=scratch_agents.callbacks(agent, args))
load, done = os.getloadavg()[0], model.num_timesteps
start = time.perf_counter()
model.learn(int(timesteps), reset_num_timesteps=not int(warmup), callback=scratch_agents.callbacks(agent, args))
seconds = time.perf_counter() - start
vec.close()
after = os.getloadavg()[0]
print(json.dumps({"seconds": round(seconds, 3), "done": model.num_timesteps - done,
                  "load_before": round(load, 2), "load_after": round(after, 2)}))
"""


def measure(ns, cell: str, agent: str) -> dict:
    """One agent's rate on one cell, in a fresh process."""
    task, version, tier = task_spec(cell)
    timesteps = max(1, ns.timesteps // 4) if agent == "sac" else ns.timesteps
    argv = [agent, task, version, tier, ns.users, ns.n_envs, ns.env_workers, ns.warmup, timesteps]
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", ONE, *map(str, argv)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"scratch_speed: {cell} {agent} failed: {done.stderr.strip().splitlines()[-1:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    steps = out.pop("done")
    return {"bench": "scratch_speed", "cell": cell, "agent": agent, "users": ns.users, "n_envs": ns.n_envs,
            "timesteps": steps, "timesteps_per_s": round(steps / out["seconds"], 1)} | out  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    from oasis_gym.checks import OneLineParser
    from oasis_gym.train import scratch_agents, v1

    p = OneLineParser(description=__doc__.split("\n")[0])
    p.add_argument("--cells", nargs="+", default=list(CELLS), help="task-vN:tier (default: the table's four)")
    p.add_argument("--agents", nargs="+", help="agents (default: each cell's table agents)")
    p.add_argument("--users", type=int, default=1000, help="users per platform (the tasks' default: 1000)")
    p.add_argument("--n-envs", type=int, default=32, help="episodes stepped together (scratch's default: 32)")
    p.add_argument("--env-workers", type=int, default=0, help="env shares (scratch's --env-workers; 0: one per core)")
    p.add_argument("--warmup", type=int, default=4096, help="timesteps learned before the timing (0: none)")
    p.add_argument("--timesteps", type=int, default=8192, help="timesteps timed (SAC: a quarter of them)")
    p.add_argument("--seeds", type=int, default=10, help="the table's seeds per agent")
    p.add_argument("--budget", type=int, default=2_000_000, help="the table's timesteps per run")
    ns = p.parse_args(argv)
    runs = []
    for cell in ns.cells:
        try:  # the cell (train_speed's task spec), then the numbers as `oasis-gym scratch` checks them
            task, version, tier = task_spec(cell)
            v1.Args(task=task, version=version, difficulty=tier, users=ns.users, n_envs=ns.n_envs,
                    env_workers=ns.env_workers).check()  # fmt: skip
        except ValueError as err:
            p.error(str(err))
        for agent in ns.agents or scratch_agents.DEFAULT_AGENTS[task]:
            if agent not in scratch_agents.AGENTS:
                p.error(f"--agents: unknown agent {agent!r} (one of {', '.join(scratch_agents.AGENTS)})")
            if task in scratch_agents.AGENTS[agent].tasks:
                runs.append((cell, agent))
    for name in ("timesteps", "seeds", "budget"):
        if getattr(ns, name) < 1:
            p.error(f"--{name} must be at least 1")
    if ns.warmup < 0:
        p.error("--warmup must be at least 0")
    hours = 0.0
    for cell, agent in runs:
        line = measure(ns, cell, agent)
        print(json.dumps(line), flush=True)
        hours += ns.seeds * ns.budget / line["timesteps_per_s"] / 3600
    total = {"bench": "scratch_speed", "runs": len(runs), "table_hours": round(hours, 1), "seeds": ns.seeds,
             "budget": ns.budget, "cpus": os.cpu_count(), "when": time.strftime("%Y-%m-%d %H:%M")}  # fmt: skip
    print(json.dumps(total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
