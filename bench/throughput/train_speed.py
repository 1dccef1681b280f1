"""Training throughput of `oasis-gym train`'s own PPO path (issue 57): timesteps/s and where they go.

    python bench/throughput/train_speed.py                       # the four tasks, this checkout
    python bench/throughput/train_speed.py --baseline 182f970    # side by side with that commit's code
    python bench/throughput/train_speed.py --tasks moderator-v1:hard --profile
    python bench/throughput/train_speed.py --env-only --repeats 5 --baseline HEAD  # the engine alone
    python bench/throughput/train_speed.py --tasks all --baseline 525527b    # every task/tier, one process before

Each measurement runs `train.v1.train_on_task` (the PPO of `oasis-gym train` and `oasis-gym
benchmark`: `train/ppo.py` over `train/sb3_vec_env.py`'s adapter, torch limited to one thread as
both commands do) for `--timesteps` on a task at its default population (1,000 users, 32 envs,
`n_steps` 64, the default PPO settings), in a fresh process, without an anchor (`--anchor
none`: the tuned anchors need minutes of tuning first; the moderator's anchor adds its rule's
cost on the queue each step). The time is split by timers around the calls:

- env: the native vector env's `step` and `reset` (the batched engine, `oasis_gym/batched/`);
- adapter: the rest of the SB3 adapter's `step_async` + `step_wait` (actions, infos, dtypes);
- rollout: SB3's rollout collection around them (policy inference, VecNormalize, VecMonitor,
  the rollout buffer, callbacks);
- update: PPO's gradient updates (`PPO.train`).

Each measurement also steps the same native vector env alone (`--env-steps` steps of seeded
random actions, after the training, no learner): `env_steps_per_s` (one step = `--n-envs`
timesteps) and `env_timesteps_per_s`; `--env-only` measures only that (seconds, not minutes:
the A/B of an engine change).

With `--baseline REF` the commit REF's code (`git archive` into a temporary folder, removed at
the end) is measured the same way, interleaved with this checkout's run by run, so both see
the same load period. One JSON line per measurement (`code`: "checkout" or REF), then one per
task with both medians (training; the env alone, also as CPU ms a step, which the load moves
less than the wall clock) and the loads seen. `--profile` runs one measurement under cProfile
instead and prints the functions that took the most time to stderr. The load
(`os.getloadavg`) is recorded before each measurement: on a shared 2-core machine it moves the
figures by 2x.

Measured (session 26, 2 cores, 8,192 timesteps a run): the shares hold at any load, the rates
do not. Moderator-v1 / -v2 hard: env 63-67 %, gradient updates 24-29 %, SB3's rollout 6-8 %,
adapter 0.1-0.2 %; Recommender-v3 / -v4 medium: env 87-90 %, updates 5-7 %, rollout 5-6 %.
At load 0.9-3.2: 730 (Moderator-v1), 906 (Recommender-v3), 760 (Recommender-v4) and 594
(Moderator-v2) timesteps/s; the batched engine steps 32 episodes of 1,000 users in about 20 ms
(moderator) and scales linearly with the number of episodes (no per-step overhead to amortize).
So the engine bounds the rate: even with a free learner these tasks would run at about 1,000 -
1,150 timesteps/s, and 1,700 needs an engine about 2x faster per user. A CleanRL-style learner
on the native vector env would save at most SB3's rollout share (5-8 %).

Session 27 (issue 57's "2x per user, bit-exact"): where a step of the engine goes (K = 32
episodes of 1,000 users, about 5,000 visitors a step, 32 candidates each, line timings, load
4-5, Recommender-v3 medium, 18.5 ms a step): candidates 2.5 ms, the candidates' feature rows
2.3 (post table 0.8, gather 0.8, per-cell features 1.4 of which the similarity einsum 0.9),
ranking 1.9 (score einsum 0.8, top-k 0.7), the pools' mean features 1.1 (einsum), responses
1.7, user updates 2.6 (v2's contrasts 1.2), post counters 0.7, feed counts 0.6, new posts 1.1,
served rows 0.8, visits 0.4, brigades 0.4; the moderator adds its queue and features (0.9)
and its actions (0.65). Bit-exact changes since 6fe74a2 (candidates, top-k, hashing the
(key, step, stream) start once per simulation, one flat index per (simulation, user) gather,
the post draws in one call, no pool means for the moderator): side by side, 3 alternations,
load 7.0-8.4, `--baseline 6fe74a2 --repeats 3`: training 768 -> 841 (Moderator-v1 hard), 953
-> 999 (Recommender-v3 medium), 888 -> 946 (Recommender-v4 medium), 734 -> 801 (Moderator-v2
hard) timesteps/s; the env alone 47.3 -> 57.3, 35.3 -> 35.5, 30.0 -> 36.9, 42.9 -> 48.1 steps/s
(x 32 timesteps), CPU 14.0 -> 12.2, 20.0 -> 18.9, 21.8 -> 21.5, 15.1 -> 13.5 ms a step.
The 2x is out of reach bit for bit: a step is about 400 numpy passes over visitor x candidate
arrays, none dominant; the three einsums (scores, similarity, pool means, 2.8 ms) set the
order of every float sum (numpy's 4-lane accumulation: lane l sums terms l, l+4, l+8, then
(l0 + l1) + (l2 + l3)), so BLAS or float64 change results, and a numba kernel that keeps that
order (bit-exact, tried) is slower than einsum (1.5 against 0.95 ms for the scores). What a
new task version could buy, measured with results changed (CPU ms a step, load 10.7,
Recommender-v3 medium / Moderator-v1 hard): 24 candidates instead of 32 21.4 -> 18.2 / 16.8
-> 14.6, 16 candidates 16.4 / 12.7, BLAS scores 19.7 / 16.0: at most 1.3x, not 2x.

Session 28 (issue 57's "on 2 cores"): the second core. `--env-workers` (train's; default one
share per core with >= 16 episodes each) steps the episodes in `envs/vector_shards.py`'s
`ShardedVectorEnv` (this process one share, a worker process the other: the same run bit for
bit), and the moderator's slot policy updates on 2 torch threads while the machine is otherwise idle
(`callbacks.UpdateThreads`: beside a busy test suite 2 threads made the updates 3x slower; the
same parameters bit for bit; the recommender's small MLP does not gain). A baseline
without the option steps in one process. `--baseline 525527b`, all 18 task/tiers, one
interleaved run each, 16,384 timesteps, load 1.15-1.48 (quiet): training 1.11-1.78x
(1,646-2,420 timesteps/s against 1,032-1,759; 15 of 18 at 1,700 or more, Recommender-v4 easy
/ medium and Moderator-v2 easy at 1,646-1,668); the env alone 1.12-2.1x. Shares now: the
recommenders' env 80-85 %, rollout 8-10 %, updates 7-11 %; the moderators' env 57-62 %,
rollout 11-13 %, updates 26-31 % (2 threads). Within one process's step the env's share is
slower in training than alone (a step 8.9 ms in training, 7.3 alone, Moderator-v1 hard): the
learner's work between steps leaves the caches cold.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TASKS = ("moderator-v1:hard", "recommender-v3:medium", "recommender-v4:medium", "moderator-v2:hard")
PARTS = ("env", "adapter", "rollout", "update")


def task_spec(spec: str) -> tuple[str, int, str]:
    """("moderator", 1, "hard") of "moderator-v1:hard" (the tier medium if not given); a ValueError
    with one line if there is no such task, version with a native vector env, or tier."""
    from oasis_gym import vector_envs

    name, _, tier = spec.partition(":")
    task, _, version = name.partition("-v")
    try:
        known = (tier or "medium") in ("easy", "medium", "hard") and int(version) in vector_envs(task)
    except (ValueError, KeyError):
        known = False
    if not known:
        raise ValueError(f"unknown task {spec!r} (task-vN:tier, e.g. moderator-v1:hard)")
    return task, int(version), tier or "medium"


def measure(spec: str, timesteps: int, seed: int, profile: bool = False, users: int = 1000, n_envs: int = 32,
            workers: int = 0) -> dict:  # fmt: skip
    """One training run of `spec` in this process: timesteps/s and the seconds of each part."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
    from stable_baselines3.common.vec_env import VecEnvWrapper

    from oasis_gym.train import v1
    from oasis_gym.train.common import limit_threads

    limit_threads(1)
    seconds = dict.fromkeys((*PARTS, "sb3_env"), 0.0)

    def timed(part: str, fn):
        def call(*a, **kw):
            start = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                seconds[part] += time.perf_counter() - start

        return call

    class Timed(VecEnvWrapper):
        """Times the adapter's calls (with the native env's inside: counted as env)."""

        def reset(self):
            return timed("sb3_env", self.venv.reset)()

        def step_async(self, actions):
            timed("sb3_env", self.venv.step_async)(actions)

        def step_wait(self):
            return timed("sb3_env", self.venv.step_wait)()

    def wrap(inner):
        inner.venv.step = timed("env", inner.venv.step)
        inner.venv.reset = timed("env", inner.venv.reset)
        return Timed(inner)

    task, version, tier = task_spec(spec)
    out = tempfile.mkdtemp(prefix="train_speed-")
    patched = {(PPO, "train"): "update", (OnPolicyAlgorithm, "collect_rollouts"): "rollout"}
    saved = {key: getattr(*key) for key in patched}
    try:
        for (cls, name), part in patched.items():
            setattr(cls, name, timed(part, saved[(cls, name)]))
        args = v1.Args(task=task, version=version, difficulty=tier, timesteps=timesteps, seed=seed, users=users,
                       n_envs=n_envs, anchor="none", quiet=True, out=str(Path(out) / "run"),
                       **_workers(workers))  # fmt: skip
        load = os.getloadavg()[0]
        if profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            model, _, info = prof.runcall(v1.train_on_task, args, None, wrap)
            pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(35)
        else:
            model, _, info = v1.train_on_task(args, None, wrap)
    finally:
        for key, fn in saved.items():
            setattr(*key, fn)
        shutil.rmtree(out, ignore_errors=True)
    total = info["train_seconds"]
    split = {
        "env": seconds["env"],
        "adapter": seconds["sb3_env"] - seconds["env"],
        "rollout": seconds["rollout"] - seconds["sb3_env"],
        "update": seconds["update"],
    }
    return {
        "bench": "train_speed",
        "task": f"{task}-v{version}",
        "tier": tier,
        "users": args.users,
        "n_envs": args.n_envs,
        "timesteps": int(model.num_timesteps),
        "seconds": round(total, 3),
        "timesteps_per_s": round(model.num_timesteps / total, 1),
        "share": {part: round(s / total, 3) for part, s in split.items()},
        "env_share": round(split["env"] / total, 3),
        "learner_share": round((split["adapter"] + split["rollout"] + split["update"]) / total, 3),
        "torch_threads": torch.get_num_threads(),
        "env_workers": _resolved(workers, n_envs),
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def _workers(workers: int) -> dict:
    """`env_workers=` for `v1.Args` where the measured code has it (a baseline before it steps in one process)."""
    from oasis_gym.train import v1

    return {"env_workers": workers} if "env_workers" in v1.Args.__dataclass_fields__ else {}


def _resolved(workers: int, n_envs: int) -> int:
    """The processes the measured code steps the episodes in."""
    if not _workers(workers):
        return 1
    from oasis_gym.envs.vector_shards import auto_workers

    return workers or auto_workers(n_envs)


def measure_env(spec: str, steps: int, seed: int, users: int = 1000, n_envs: int = 32, workers: int = 0) -> dict:
    """The native vector env of `spec` alone (train's settings, no learner): `steps` steps of seeded
    random actions after a reset and 3 steps of warm-up; env steps/s and timesteps/s."""
    import numpy as np

    from oasis_gym import load_entry_point
    from oasis_gym.train import v1
    from oasis_gym.train.common import limit_threads

    limit_threads(1)
    task, version, tier = task_spec(spec)
    args = v1.Args(task=task, version=version, difficulty=tier, seed=seed, users=users, n_envs=n_envs)
    env = args.env()
    env.pop("version", None)
    shards = _resolved(workers, n_envs)
    if shards > 1:
        from oasis_gym.envs.vector_shards import ShardedVectorEnv

        venv = ShardedVectorEnv(
            f"oasis_gym/{task.capitalize()}-v{version}", n_envs, shards, autoreset_mode="SameStep", **env
        )
    else:
        venv = load_entry_point(v1.VERSIONS[task][version])(n_envs, autoreset_mode="SameStep", **env)
    space, draw = venv.action_space, np.random.default_rng(seed)
    integral = np.issubdtype(space.dtype, np.integer)
    actions = [
        draw.integers(space.low, space.high + 1)
        if integral
        else draw.uniform(space.low, space.high).astype(space.dtype)
        for _ in range(steps + 3)
    ]
    venv.reset(seed=seed)
    for a in actions[:3]:
        venv.step(a)
    load = os.getloadavg()[0]
    start, cpu = time.perf_counter(), time.process_time()
    for a in actions[3:]:
        venv.step(a)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    venv.close()
    return {
        "env_steps": steps,
        "env_seconds": round(seconds, 3),
        "env_steps_per_s": round(steps / seconds, 2),
        "env_timesteps_per_s": round(steps * n_envs / seconds, 1),
        # this process's CPU, less moved by the load than the wall clock (not the workers': None with workers)
        "env_cpu_ms_per_step": round(1000 * cpu / steps, 2) if shards == 1 else None,
        "env_workers": shards,
        "env_load_before": round(load, 2),
    }


def export(ref: str, into: Path) -> Path:
    """The commit `ref`'s tree under `into`, importable as oasis_gym (its envs, policies and
    train folders linked in as pyproject's package-dir maps them)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for sub in ("envs", "policies", "train"):
        (into / "oasis_gym" / sub).symlink_to(into / sub, target_is_directory=True)
    return into


def run_child(root: Path, spec: str, ns: argparse.Namespace) -> dict:
    """One measurement of `spec` with `ns`'s settings in a fresh process importing oasis_gym from `root`."""
    env = {**os.environ, "PYTHONPATH": str(root), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    argv = [
        sys.executable,
        __file__,
        "--child",
        spec,
        *(
            str(a)
            for name in ("timesteps", "seed", "users", "n_envs", "env_steps", "env_workers")
            for a in (f"--{name.replace('_', '-')}", getattr(ns, name))
        ),
        *(["--env-only"] if ns.env_only else []),
    ]
    done = subprocess.run(argv, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"train_speed: {spec} under {root} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    from oasis_gym.checks import OneLineParser

    p = OneLineParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", nargs="+", default=list(TASKS),
                   help="task-vN:tier, e.g. moderator-v1:hard; all: every task, version and tier")  # fmt: skip
    p.add_argument("--timesteps", type=int, default=8192, help="PPO timesteps per measurement (4 rollouts)")
    p.add_argument("--repeats", type=int, default=1, help="measurements per task and code")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--users", type=int, default=1000, help="users per platform (the tasks' default: 1000)")
    p.add_argument("--n-envs", type=int, default=32, help="episodes stepped together (train's default: 32)")
    p.add_argument("--env-steps", type=int, default=200, help="steps of the vector env alone per measurement")
    p.add_argument("--env-workers", type=int, default=0,
                   help="processes the episodes are stepped in (train's --env-workers; 0: one per core, each with "
                        ">= 16 episodes; a baseline without the option: one)")  # fmt: skip
    p.add_argument("--env-only", action="store_true", help="measure only the vector env alone (no training)")
    p.add_argument("--baseline", help="a git commit measured beside this checkout, run by run")
    p.add_argument("--profile", action="store_true", help="cProfile one measurement in this process")
    p.add_argument("--child", help=argparse.SUPPRESS)
    ns = p.parse_args(argv)
    from oasis_gym import vector_envs
    from oasis_gym.train import v1

    if ns.tasks == ["all"]:
        ns.tasks = [f"{t}-v{v}:{tier}" for t in v1.TASKS for v in vector_envs(t) for tier in ("easy", "medium", "hard")]

    for spec in ns.tasks if ns.child is None else [ns.child]:
        try:  # the task, then train's own checks of the numbers (users, envs, timesteps, seed)
            task, version, tier = task_spec(spec)
            v1.Args(task=task, version=version, difficulty=tier, timesteps=ns.timesteps, seed=ns.seed,
                    users=ns.users, n_envs=ns.n_envs, **_workers(ns.env_workers)).check()  # fmt: skip
        except ValueError as err:
            p.error(str(err))
    if ns.repeats < 1:
        p.error("--repeats must be at least 1")
    if ns.env_steps < 1:
        p.error("--env-steps must be at least 1")
    if ns.env_only and ns.profile:
        p.error("--profile times training: not with --env-only")
    if ns.baseline and subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet",
                                       f"{ns.baseline}^{{commit}}"], capture_output=True).returncode:  # fmt: skip
        p.error(f"--baseline: no commit {ns.baseline!r} in {REPO}")
    if ns.child or ns.profile:
        spec = ns.child or ns.tasks[0]
        task, version, tier = task_spec(spec)
        row = {
            "bench": "train_speed",
            "task": f"{task}-v{version}",
            "tier": tier,
            "users": ns.users,
            "n_envs": ns.n_envs,
        }
        if not ns.env_only:
            row = measure(spec, ns.timesteps, ns.seed, ns.profile, ns.users, ns.n_envs, ns.env_workers)
        if not ns.profile:
            row.update(measure_env(spec, ns.env_steps, ns.seed, ns.users, ns.n_envs, ns.env_workers))
        print(json.dumps(row), flush=True)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="train_speed-code-"))
    try:
        codes = {"checkout": REPO}
        if ns.baseline:
            codes = {ns.baseline: export(ns.baseline, tmp), **codes}
        results: dict[tuple[str, str], list[dict]] = {}
        for r in range(ns.repeats):
            for spec in ns.tasks:
                order = list(codes) if r % 2 == 0 else list(codes)[::-1]  # alternate who goes first
                for code in order:
                    row = run_child(codes[code], spec, ns) | {"code": code}
                    print(json.dumps(row), flush=True)
                    results.setdefault((spec, code), []).append(row)
        if ns.baseline:
            for spec in ns.tasks:
                print(json.dumps(side_by_side(spec, ns.baseline, results, ns.repeats)), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def side_by_side(spec: str, ref: str, results: dict, repeats: int) -> dict:
    """One task's line: the medians of the baseline's and the checkout's measurements (training
    timesteps/s where trained, the env alone's steps/s), their ratios and the loads seen."""
    row = {"bench": "train_speed", "task": spec, "repeats": repeats}
    for key in ("timesteps_per_s", "env_steps_per_s", "env_cpu_ms_per_step"):
        if results[(spec, ref)][0].get(key) is not None and results[(spec, "checkout")][0].get(key) is not None:
            before = statistics.median(r[key] for r in results[(spec, ref)])
            after = statistics.median(r[key] for r in results[(spec, "checkout")])
            row[f"median_{key}"] = {ref: before, "checkout": after}
            row[{"timesteps_per_s": "ratio", "env_steps_per_s": "env_ratio"}.get(key, "env_cpu_ratio")] = round(
                after / before, 3
            )
    loads = [r.get("load_before", r["env_load_before"]) for code in (ref, "checkout") for r in results[(spec, code)]]
    row["load"] = [min(loads), max(loads)]
    return row


if __name__ == "__main__":
    sys.exit(main())
