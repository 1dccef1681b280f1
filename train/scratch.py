"""`oasis-gym scratch TASK`: standard agents trained from scratch, resumable per (agent, seed), reported
as RL papers report (issue 57).

    oasis-gym scratch moderator --version 2 --difficulty hard --agents ppo,framestack_ppo,slot_ppo \\
        --seeds 10 --timesteps 2000000 --out runs/scratch-mod2-hard

Steps (read top to bottom):
1. per (seed, agent), seed-major (all agents of a seed, then the next seed), the agent of
   `train/scratch_agents.py` trained on the task's native vector env; every `--checkpoint-every`
   timesteps (whole rollouts) its greedy policy plays the validation seeds of the training
   population (`--validation-seeds`: never the held-out seeds or population) and the run's
   checkpoint (``runs/<agent>_seed<s>.ckpt``, one file, renamed into place) and its learning
   curve (``curves/<agent>_seed<s>.json``) are written. The same command again continues each
   unfinished run from its checkpoint and skips the finished ones; `--time-limit` starts no
   chunk after that much wall time (the session's share), so the runs fill in across sessions;
   `--jobs N` trains N runs side by side (`train/scratch_jobs.py`); `--table-only` none.
2. the table: every run that trained (finished, or partly: the table says how far) played on the
   protocol's held-out seeds and population (`protocol.evaluate`), against the benchmark's
   baselines (`--baselines`: a benchmark's --out, its anchored PPO a row too; else tuned here by
   its code, `v1_baselines`, kept in ``baselines.json``): IQM and mean with stratified bootstrap
   CIs, P(agent > each baseline), performance profiles (`train/rl_stats.py`), the learning curves
   with bands and the plateau check (`train/scratch_report.py`). ``results.md``, ``results.json``,
   ``learning_curves.png``, ``performance_profiles.png``.

The output rule (`oasis_gym.outputs`): --out is this command's (its marker keeps the settings);
another command line on it is refused with one line unless --overwrite (which starts anew).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from oasis_gym.app.console import Summary, plural
from oasis_gym.app.interrupts import Stopped, exit_code, signal_name
from oasis_gym.checks import MAX_ID
from oasis_gym.envs.vector_shards import MIN_SHARD, cores
from oasis_gym.figures import save_png
from oasis_gym.outputs import OutputDir

from . import rl_stats, scratch_agents, scratch_jobs, v1, v1_baselines
from . import scratch_report as report
from .args import EVAL_SEEDS, MAX_ROLLOUT_STEPS, MAX_SECONDS, add_arguments, check_bounds, opt, parse_into, redeclare
from .benchmark import MAX_SEEDS
from .common import limit_threads, to_jsonable
from .protocol import PROTOCOL, candidate_scores, evaluate, held_out, play
from .scratch_jobs import Session

FILES = ("results.md", "results.json", "learning_curves.png", "performance_profiles.png", "baselines.json",
         "runs/*.ckpt", "runs/*.eval.json", "curves/*.json")  # fmt: skip
MAX_JOBS = 256
STATS = ("iqm", "iqm_lo", "iqm_hi", "mean", "mean_lo", "mean_hi")  # an agent's numbers in the --json line
# options that do not change a run (free between sessions; --env-workers: the same run bit for bit)
NOT_SETTINGS = ("baselines", "time_limit", "out", "env_workers", "jobs")


@dataclass
class Args:
    """Settings of one from-scratch experiment (each field is a command-line option)."""

    task: str = opt("moderator", cli=False)
    agents: str | None = opt(None, "comma-separated agents: ppo, framestack_ppo, sac (recommender), slot_ppo "
                             "(moderator), recurrent_ppo; default: the first three of the task", type=str)  # fmt: skip
    seeds: int = opt(10, "training seeds per agent (--seed .. --seed + N - 1)", bounds=(1, MAX_SEEDS))
    timesteps: int = opt(2_000_000, "each run's budget (env steps, all envs; whole rollouts)", bounds=(1, MAX_ID))
    checkpoint_every: int = opt(
        50_000, "timesteps between checkpoints and validation points (whole rollouts)", bounds=(1, MAX_ID)
    )
    rollout: int = opt(
        scratch_agents.ROLLOUT,
        "(recurrent) PPO: transitions per rollout, all envs together (this // --n-envs steps per env; SB3's "
        "default rollout with one env)",
        bounds=(1, MAX_ROLLOUT_STEPS),
    )
    validation_seeds: tuple[int, ...] = opt(
        tuple(range(8000, 8005)), "episode seeds of the learning curves (training population)", bounds=EVAL_SEEDS
    )
    version: int | None = redeclare(v1.Args, "version")
    difficulty: str = redeclare(v1.Args, "difficulty")
    users: int = redeclare(v1.Args, "users")
    max_steps: int = redeclare(v1.Args, "max_steps")
    ranking: str = redeclare(v1.Args, "ranking")
    n_envs: int = redeclare(v1.Args, "n_envs")
    env_workers: int = redeclare(v1.Args, "env_workers")
    seed: int = redeclare(v1.Args, "seed")
    population_seed: int = redeclare(v1.Args, "population_seed")
    eval_population: int = redeclare(v1.Args, "eval_population")
    eval_seeds: tuple[int, ...] = redeclare(v1.Args, "eval_seeds")
    tune_seeds: tuple[int, ...] = redeclare(v1.Args, "tune_seeds")
    cem_iterations: int = redeclare(v1.Args, "cem_iterations")
    cem_population: int = redeclare(v1.Args, "cem_population")
    baselines: str = opt("", "a benchmark's --out folder (its results.json: baselines and anchored PPO) or another "
                         "scratch --out of this task and protocol (its baselines.json); default: the baselines tuned "
                         "here by the benchmark's code, kept in baselines.json")  # fmt: skip
    time_limit: float = opt(
        0.0, "start no chunk after this many seconds (the first always runs; 0: none)", bounds=(0.0, MAX_SECONDS)
    )
    jobs: int = opt(1, "runs trained at once, each in a process of its own on --env-workers cores (default then: "
                    "the cores shared out); the same runs whatever the number", bounds=(1, MAX_JOBS))  # fmt: skip
    out: str = opt("runs/scratch", "output folder (checkpoints, curves, results)")

    def __post_init__(self) -> None:
        if self.version is None:
            self.version = v1.DEFAULT_VERSION[self.task]

    @property
    def agent_list(self) -> list[str]:
        """The agents to train, in order."""
        given = [a.strip() for a in (self.agents or "").split(",") if a.strip()]
        return given or list(scratch_agents.DEFAULT_AGENTS[self.task])

    def task_args(self, seed: int | None = None) -> v1.Args:
        """The `v1.Args` of the runs (no anchor): the env, the protocol's seed sets, one run's seed;
        with --jobs and --env-workers 0, each run's shares of the cores."""
        shared = {f.name: getattr(self, f.name) for f in dataclasses.fields(v1.Args) if hasattr(self, f.name)}
        if self.jobs > 1 and not self.env_workers:
            shared["env_workers"] = max(1, min(cores() // self.jobs, self.n_envs // MIN_SHARD))
        return v1.Args(**shared | {"seed": self.seed if seed is None else seed, "anchor": "none", "quiet": True})

    def settings(self) -> dict:
        """What makes two command lines the same experiment (kept in --out's marker)."""
        out = {k: v for k, v in dataclasses.asdict(self).items() if k not in NOT_SETTINGS}
        return json.loads(json.dumps(out | {"agents": self.agent_list}))

    def check(self) -> None:
        """Every setting in range, the agents known and fit for the task, the seed sets disjoint
        (the benchmark's checks, `v1.Args.check`, and the validation seeds), before any compute."""
        check_bounds(self)
        for agent in self.agent_list:
            if agent not in scratch_agents.AGENTS:
                raise ValueError(f"--agents: unknown agent {agent!r} (one of {', '.join(scratch_agents.AGENTS)})")
            if self.task not in scratch_agents.AGENTS[agent].tasks:
                raise ValueError(f"--agents: {agent} is not an agent of the {self.task} (its task: "
                                 f"{', '.join(scratch_agents.AGENTS[agent].tasks)})")  # fmt: skip
        if len(set(self.agent_list)) < len(self.agent_list):
            raise ValueError(f"--agents names an agent twice: {self.agents}")
        targs = self.task_args()
        targs.check(n_seeds=self.seeds)
        valid, train = set(self.validation_seeds), set(range(self.seed, self.seed + self.seeds - 1 + self.n_envs))
        for name, seeds in (("--eval-seeds", targs.eval_seeds), ("--tune-seeds", targs.tune_seeds)):
            if valid & set(seeds):
                raise ValueError(f"--validation-seeds overlap {name} (the curves never see what is scored or tuned)")
        if valid & train:
            raise ValueError(f"--validation-seeds overlap the training seeds {self.seed}..{max(train)}")


def run_name(agent: str, seed: int) -> str:
    """A run's files' stem: ``<agent>_seed<seed>``."""
    return f"{agent}_seed{seed}"


def _read(output: OutputDir, rel: str, key: str, loads=pickle.loads):
    """A file of ours in --out written for these settings (`key`), else None."""
    try:
        data = loads((output.path / rel).read_bytes())
    except (OSError, ValueError, EOFError, pickle.UnpicklingError):
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None


def _validate(args: Args, greedy) -> dict:
    vargs = dataclasses.replace(args.task_args(), eval_seeds=tuple(args.validation_seeds))
    returns = [r["return"] for r in play(vargs, args.population_seed, greedy.act_for)]
    return {"validation": float(sum(returns) / len(returns)), "validation_returns": returns}


def train_run(args: Args, agent: str, seed: int, output: OutputDir, key: str, session: Session, say) -> dict:
    """One (agent, seed) run from its checkpoint (or anew) to its budget or the session's end; returns
    its record (curve, timesteps, training seconds). Checkpoints as it goes (module docstring)."""
    name = run_name(agent, seed)
    saved = _read(output, f"runs/{name}.ckpt", key)
    if saved and saved["timesteps"] >= args.timesteps:
        return saved
    if session.over():
        return saved or {"curve": [], "timesteps": 0, "seconds": 0.0}
    if saved:
        model, vec, monitor = scratch_agents.restore(agent, saved["state"])
        record = {k: v for k, v in saved.items() if k != "state"}
        say(f"{name}: continued at {record['timesteps']:,} of {args.timesteps:,} timesteps")
    else:
        vec, monitor = scratch_agents.make_env(args.task_args(seed))
        model = scratch_agents.build(agent, vec, seed, args.n_envs, args.rollout)
        record = {"key": key, "agent": agent, "seed": seed, "timesteps": 0, "seconds": 0.0, "curve": []}
        record["curve"].append(
            {"timesteps": 0, "seconds": 0.0, "training": None} | _validate(args, scratch_agents.Greedy(model, vec))
        )
        say(f"{name}: started ({args.timesteps:,} timesteps)")
    step = scratch_agents.rollout(agent, args.n_envs, args.rollout)
    every = -(-args.checkpoint_every // step) * step
    while record["timesteps"] < args.timesteps:
        start = time.perf_counter()
        model.learn(min(every, args.timesteps - record["timesteps"]), reset_num_timesteps=False,
                    callback=scratch_agents.callbacks(agent, args.task_args(seed)))  # fmt: skip
        record["seconds"] += time.perf_counter() - start
        session.trained = True
        record["timesteps"] = int(model.num_timesteps)
        training = [float(e["r"]) for e in model.ep_info_buffer]  # SB3's last 100 training episodes (VecMonitor's)
        point = {"timesteps": record["timesteps"], "seconds": record["seconds"],
                 "training": sum(training) / len(training) if training else None}  # fmt: skip
        point |= _validate(args, scratch_agents.Greedy(model, vec))
        record["curve"].append(point)
        state = scratch_agents.snapshot(agent, model, vec, monitor)
        output.write(f"runs/{name}.ckpt", pickle.dumps(record | {"state": state}))
        output.write(f"curves/{name}.json", json.dumps(record).encode())
        say(f"{name}: {record['timesteps']:,}/{args.timesteps:,} timesteps, validation return "
            f"{point['validation']:.2f} ({record['timesteps'] / record['seconds']:.0f} timesteps/s)")  # fmt: skip
        if session.over():
            break
    state = scratch_agents.snapshot(agent, model, vec, monitor)
    vec.close()  # its env workers end here (`envs/vector_shards.py`), not when the model is collected
    return record | {"state": state}


def _baselines(args: Args, output: OutputDir, key: str, say) -> tuple[dict, str]:
    """The baselines' episodes as `protocol.evaluate`'s `against` (a benchmark's results), and where from."""
    if args.baselines:
        return json.loads(baselines_file(args.baselines).read_text(encoding="utf-8")), args.baselines
    saved = _read(output, "baselines.json", key, json.loads)
    if saved is None:
        targs = args.task_args()
        say("tuning the baselines with the benchmark's code (once; kept in baselines.json)")
        tuned = v1_baselines.tune(targs, say)
        base = v1_baselines.baselines(targs, tuned)
        saved = {"key": key, "settings": dataclasses.asdict(targs), "tuned": to_jsonable(tuned), "eval_sets": {
            name: {"population_seed": pop, "baselines": {c: play(targs, pop, f) for c, f in base.items()}}
            for name, pop in held_out(targs).items()}}  # fmt: skip
        output.write("baselines.json", json.dumps(to_jsonable(saved)).encode())
    return (
        saved,
        f"tuned here on --tune-seeds by the benchmark's code (CEM {args.cem_iterations} x {args.cem_population})",
    )


def _evaluated(args: Args, agent: str, record: dict, against: dict, output: OutputDir, key: str) -> dict:
    """A run's episodes on both held-out sets (kept in ``runs/<run>.eval.json`` for its timesteps)."""
    rel = f"runs/{run_name(agent, record['seed'])}.eval.json"
    saved = _read(output, rel, key, json.loads)
    if saved and saved["timesteps"] == record["timesteps"] and saved["against"] == against.get("key", "benchmark"):
        return saved["eval_sets"]
    model, vec, _ = scratch_agents.restore(agent, record["state"])
    vec.close()  # the greedy policy needs the observation statistics only, not the training env's workers
    res = evaluate(scratch_agents.Greedy(model, vec), args.task, args.difficulty, against=against)
    sets = {name: [r["return"] for r in s["runs"]] for name, s in res["eval_sets"].items()}
    data = {"key": key, "timesteps": record["timesteps"], "against": against.get("key", "benchmark"), "eval_sets": sets}
    output.write(rel, json.dumps(data).encode())
    return sets


def table(args: Args, records: dict, output: OutputDir, key: str, say) -> dict:
    """Step 2 (module docstring): the result dict, its files written."""
    import numpy as np

    against, source = _baselines(args, output, key, say)
    trained = {a: [r for r in runs if r["timesteps"] > 0] for a, runs in records.items()}
    say(f"evaluating {plural(sum(map(len, trained.values())), 'run')} on the held-out seeds and population")
    scores = {a: [_evaluated(args, a, r, against, output, key) for r in runs] for a, runs in trained.items()}
    eval_sets = {}
    for name, res in against["eval_sets"].items():
        others = {("PPO (anchored, benchmark)" if c == "PPO" else c): m for c, m in candidate_scores(res).items()}
        mine = {a: np.array([s[name] for s in runs]) for a, runs in scores.items() if runs}
        stats = rl_stats.report(mine | others)
        p = {a: {c: rl_stats.prob_improvement(m, o) for c, o in others.items()} for a, m in mine.items()}
        eval_sets[name] = {"population_seed": res["population_seed"], "episodes": len(args.eval_seeds),
                           "stats": stats, "p_improvement": p}  # fmt: skip
    curves = {a: [r["curve"] for r in runs] for a, runs in records.items()}
    agents = {}
    for a, runs in records.items():
        seconds, steps = sum(r["seconds"] for r in runs), sum(r["timesteps"] for r in runs)
        agents[a] = {"text": scratch_agents.AGENTS[a].text, "progress": report.progress(curves[a], args.timesteps),
                     "train_seconds": seconds, "timesteps_per_s": steps / max(1e-9, seconds)}  # fmt: skip
    seeds = list(range(args.seed, args.seed + args.seeds))
    result = {"task": args.task_args().task_id, "settings": args.settings(), "seeds": seeds,
              "baselines_from": source, "agents": agents, "eval_sets": eval_sets, "learning_curves": curves,
              "plateau": [report.plateau(a, curves[a], args.timesteps) for a in records],
              "environment": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}}  # fmt: skip
    title = f"{result['task']} ({args.difficulty})"
    with output.staging() as tmp:
        (tmp / "results.md").write_text(report.markdown(result), encoding="utf-8")
        (tmp / "results.json").write_text(json.dumps(to_jsonable(result)), encoding="utf-8")
        save_png(report.curves_figure(curves, title, len(args.validation_seeds)), tmp / "learning_curves.png", dpi=110)
        profiles = {n: {a: np.array([s[n] for s in runs]) for a, runs in scores.items() if runs}
                    | candidate_scores(against["eval_sets"][n]) for n in eval_sets}  # fmt: skip
        save_png(rl_stats.profile_figure(profiles, title), tmp / "performance_profiles.png", dpi=110)
    return result


def baselines_file(folder: str) -> Path:
    """The file of `--baselines`: a scratch folder's baselines.json, else a benchmark's results.json."""
    path = Path(folder) / "baselines.json"
    return path if path.is_file() else Path(folder) / "results.json"


def check_baselines(args: Args) -> None:
    """`--baselines`: a benchmark's --out of this task, tier and protocol (ValueError, one line)."""
    path = baselines_file(args.baselines)
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        s = saved["settings"]
        differ = [k for k in ("task", "difficulty", *PROTOCOL) if (list(v) if isinstance(v := getattr(
            args.task_args(), k), tuple) else v) != s[k]]  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(
            f"--baselines {args.baselines}: no benchmark's results.json or scratch's baselines.json there "
            f"({err.__class__.__name__})"
        ) from None
    if differ:
        raise ValueError(f"--baselines {args.baselines} is a benchmark with other settings ({', '.join(differ)}): "
                         "the table compares on the same episodes")  # fmt: skip


def scratch_output(args: Args, overwrite: bool) -> OutputDir:
    """--out, checked: this command's, of the same settings (or --overwrite: emptied of our files)."""
    settings = args.settings()
    output = OutputDir(args.out, "scratch", FILES, overwrite=overwrite, resume=True, settings=settings).check()
    stored = output.stored_settings()
    if stored is not None and stored != settings and not overwrite:
        output.release()
        diff = sorted(k for k in settings.keys() | stored.keys() if settings.get(k) != stored.get(k))
        option, was, given = diff[0].replace("_", "-"), stored.get(diff[0]), settings.get(diff[0])
        raise ValueError(f"{args.out} holds runs of another command line (--{option}: {was!r}, given {given!r}): "
                         "rerun that command to continue, or pass --overwrite")  # fmt: skip
    if overwrite:
        with output.staging(prune=FILES):
            pass
    return output


def add_scratch_parser(subparsers) -> argparse.ArgumentParser:
    """`oasis-gym scratch {recommender,moderator}`: the `Args` options, --overwrite, --json, --quiet."""
    p = subparsers.add_parser("scratch", help="agents trained from scratch, resumable, reported as RL papers do",
                              description=__doc__.split("\n")[0])  # fmt: skip
    targets = p.add_subparsers(dest="target", required=True, metavar="{recommender,moderator}")
    for task in v1.TASKS:
        text = f"train {', '.join(scratch_agents.DEFAULT_AGENTS[task])} from scratch on the {task} task"
        t = targets.add_parser(task, help=text, description=text)
        t.add_argument("--overwrite", action="store_true", help="start anew in --out (its earlier runs go)")
        t.add_argument("--json", action="store_true", help="print one JSON line instead of the table and summary")
        t.add_argument("--quiet", action="store_true", help="no progress lines")
        t.add_argument("--table-only", action="store_true",
                       help="train nothing: the table of the runs as their checkpoints hold them")  # fmt: skip
        add_arguments(t, Args)
    return p


def cmd_scratch(ns: argparse.Namespace) -> int:
    """Check everything, train or continue every run, make the table; a signal keeps the checkpoints."""
    command = f"oasis-gym scratch {ns.target}"
    args = parse_into(Args, ns, Args(task=ns.target))
    try:
        args.check()
        if args.baselines:
            check_baselines(args)
        output = scratch_output(args, ns.overwrite)
    except (ValueError, OSError) as err:
        print(f"{command}: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    say = v1.progress_printer(ns.quiet or ns.json)
    limit_threads(1)
    session = Session(args.time_limit)
    if ns.table_only:  # the time is up before anything starts: every run as its checkpoint holds it
        session.deadline, session.trained = 0.0, True
    key = json.dumps(args.settings(), sort_keys=True)
    runs = [(agent, seed) for seed in range(args.seed, args.seed + args.seeds) for agent in args.agent_list]
    try:
        records = {a: [] for a in args.agent_list}
        if args.jobs > 1 and not session.over():  # side by side, then each run as its checkpoint holds it
            scratch_jobs.run_jobs(train_run, args, runs, output, key, session, ns.quiet or ns.json, args.jobs)
        for agent, seed in runs:
            records[agent].append(train_run(args, agent, seed, output, key, session, say))
        result = table(args, records, output, key, say)
    except Stopped as err:
        print(f"{command}: stopped by {signal_name(err)}; every checkpoint written is kept in {args.out}: the same "
              "command continues from them", file=sys.stderr)  # fmt: skip
        return exit_code(err)
    if not ns.json:
        print(report.markdown(result))
    held = result["eval_sets"]["held-out seeds"]
    Summary(
        f"\nTrained {', '.join(args.agent_list)} from scratch on {result['task']} ({args.difficulty}): "
        + "; ".join(f"{a} {v['progress']['text']}" for a, v in result["agents"].items()) + ".",
        outputs=[(f"{args.out}/results.md", "the table above"), (f"{args.out}/results.json", "every number"),
                 (f"{args.out}/learning_curves.png", "validation return vs env steps and wall time, bands over seeds"),
                 (f"{args.out}/performance_profiles.png", "the share of runs x episodes above each return"),
                 (f"{args.out}/runs/", "each run's checkpoint")],
        next=[("the same command", "continues every unfinished run from its checkpoint")],
        data={"task": result["task"], "difficulty": args.difficulty, "out": args.out,
              "agents": {a: {"progress": v["progress"], **{k: held["stats"][a][k] for k in STATS}}
                         for a, v in result["agents"].items() if a in held["stats"]},
              "p_improvement": {a: {c: p["p"] for c, p in ps.items()} for a, ps in held["p_improvement"].items()}},
    ).show(as_json=ns.json)  # fmt: skip
    return 0
