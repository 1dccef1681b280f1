"""`oasis-gym run --recommender RUN` / `--moderator RUN`: a trained or tuned platform agent
played on its task's platform, beside task users and, if asked, LLM users.

RUN is a folder `oasis-gym train` or `benchmark` wrote (a benchmark's PPO: its `seed_<s>`
folder); `--agent` picks its policy as `train/task_policy.py`'s `load_task_policy` names them
("ppo", the default, or a baseline of its tables: "tuned_constant", ...). The policy plays one
episode of its task on the platform backend (`backend="platform"`, `oasis_gym/world/`), on the
run's held-out population (its `eval_population`), with the run's tier, users and episode
length unless `--difficulty`, `--users`, `--steps` say otherwise, from episode seed `--seed`.
`--llm-users N` of the users (evenly spaced) are LLM users (the `--llm-*` settings, the LLM
policy of `oasis-gym run`), the rest the task's own users. Default 0: the episode is then the
task's (the fast path's episode bit for bit, `tests/test_one_world.py`), deterministic and
seconds long, and no LLM engine starts; LLM users cost seconds a step on CPUs, so they are asked
for. The journal (`--db`) and the TensorBoard logs (`--logdir`, `metrics/agent_episode.py`)
follow the output rule as `oasis-gym run`'s do (`--overwrite`).

Only the tasks with a platform form play: Recommender-v4 and Moderator-v2. A run of
Recommender-v1..v3 or Moderator-v1 is refused with one line, not played on its successor: the
successor's rules change what its observations mean (Moderator-v2's fact-check verdict has the
opposite sign of v1's; v4's likes are once per user and post), so the agent would act on
numbers it was not trained on. Train it again with `--version 4` / `--version 2`.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np

from oasis_gym.actions import ActionType
from oasis_gym.app.console import Summary, bar, duration, plural, quoted
from oasis_gym.app.interrupts import exit_code, signal_name
from oasis_gym.envs.moderator_v2 import ModeratorEnv
from oasis_gym.envs.recommender_v4 import RecommenderEnv
from oasis_gym.errors import ConfigError
from oasis_gym.metrics.agent_episode import AgentEpisodeRecorder
from oasis_gym.model.moderation import ACTIONS
from oasis_gym.model.population import FOLLOWEES, MAX_TASK_USERS
from oasis_gym.model.ranking import CANDIDATE_FEATURES
from oasis_gym.outputs.logdir import claim_logdir, logdir_for
from oasis_gym.platform.journal import JournalError, read_meta
from oasis_gym.platform.journal_file import refusal
from oasis_gym.train.args import MAX_EPISODE_STEPS
from oasis_gym.train.task_policy import load_task_policy, run_files

from .interrupt import RunStopped
from .run import check_paths, make_llm_policy

__all__ = ["cmd_task_run", "check_task_options", "PLATFORM_TASKS"]

PLATFORM_TASKS = {"recommender-v4": RecommenderEnv, "moderator-v2": ModeratorEnv}  # the tasks with a platform form
SUCCESSOR = {"recommender": 4, "moderator": 2}
# `run`'s options of a user simulation or a scenario, which a task run does not take
NOT_WITH_AGENT = ("resume", "scenario", "set", "figures", "platform", "policy", "core_users", "recsys", "activation",
                  "all_actions", "seed_posts")  # fmt: skip
AGENT_ONLY = ("agent", "difficulty", "llm_users")


def flag(name: str) -> str:
    """An option's name as typed: "core_users" -> "--core-users"."""
    return "--" + name.replace("_", "-")


def check_task_options(args) -> bool:
    """Whether `args` asks for a task run (`--recommender` / `--moderator`); the options that do
    not go with what it asks are refused (ConfigError, one line)."""
    given = getattr(args, "given", set())
    role = "recommender" if args.recommender else "moderator" if args.moderator else None
    if role is None:
        if orphans := [flag(k) for k in AGENT_ONLY if k in given]:
            verb = "needs" if len(orphans) == 1 else "need"
            raise ConfigError(f"{' and '.join(orphans)} {verb} --recommender RUN or --moderator RUN (a trained agent)")
        return False
    if clash := [flag(k) for k in NOT_WITH_AGENT if k in given]:
        raise ConfigError(
            f"{' and '.join(clash)} {'does' if len(clash) == 1 else 'do'} not go with --{role}: a trained agent plays "
            "its task's platform with its task's users (and --llm-users)"
        )
    return True


@dataclasses.dataclass
class TaskRun:
    """What a task run plays: the policy, its run's settings with the overrides, the LLM users."""

    role: str
    path: str
    policy: object
    settings: object  # train.v1.Args
    llm_users: np.ndarray


def plan(args) -> TaskRun:
    """The task run of `args`, every input checked (ConfigError, one line) before any compute."""
    role = "recommender" if args.recommender else "moderator"
    path = args.recommender or args.moderator
    given = getattr(args, "given", set())
    try:
        _, saved, _ = run_files(Path(path))  # its settings read, no model loaded yet
    except ValueError as err:
        raise ConfigError(f"--{role} {err}") from None
    if saved.task != role:
        raise ConfigError(f"{path} is a run of {saved.task_id}: give it as --{saved.task} {path}")
    if saved.task_id not in PLATFORM_TASKS:
        raise ConfigError(
            f"{path} is a run of {saved.task_id}, which has no platform form (only "
            f"{' and '.join(PLATFORM_TASKS)} do): train it with --version {SUCCESSOR[role]}"
        )
    over = {"difficulty": args.difficulty or saved.difficulty}
    if "users" in given:
        if not isinstance(args.users, int):
            raise ConfigError(f"--users with --{role} is a user count (the task's own population), not a file")
        if not 2 * FOLLOWEES <= args.users <= MAX_TASK_USERS:
            raise ConfigError(f"--users with --{role} must be in [{2 * FOLLOWEES}, {MAX_TASK_USERS}], got {args.users}")
        over["users"] = args.users
    if args.steps is not None:
        if args.steps > MAX_EPISODE_STEPS:
            raise ConfigError(f"--steps with --{role} must be at most {MAX_EPISODE_STEPS}, got {args.steps}")
        over["max_steps"] = args.steps
    settings = dataclasses.replace(saved, **over)
    if args.llm_users > settings.users:
        raise ConfigError(f"--llm-users {args.llm_users} is more than the run's {settings.users} users")
    try:
        policy = load_task_policy(path, args.agent or "ppo")  # (a name not in the run: refused before loading)
    except ValueError as err:
        raise ConfigError(f"--agent: {err}" if args.agent else str(err)) from None
    n = args.llm_users
    theirs = np.unique((np.arange(n) * settings.users) // n) if n else np.zeros(0, np.int64)
    return TaskRun(role, path, policy, settings, theirs)


def cmd_task_run(args) -> int:
    """Play the agent of `args` on its task's platform (module docstring); its summary at the
    end (`--json`: one JSON line)."""
    started = time.perf_counter()
    check_paths(args)
    if refused := refusal(args.db, args.overwrite)[1]:
        raise ConfigError(refused)
    logdir = None if args.no_tensorboard else str(logdir_for(args.db, args.logdir, overwrite=args.overwrite))
    run = plan(args)
    try:  # the LLM backend's packages checked now; its engine starts at the first LLM decision
        llm = make_llm_policy(args) if len(run.llm_users) else None
    except ValueError as err:  # make_backend's checks of the LLM settings
        raise ConfigError(f"bad LLM settings: {err}") from err
    s = run.settings
    env_kw = {k: v for k, v in s.env(s.eval_population).items() if k != "version"}
    them = {"user_policy": llm, "policy_users": run.llm_users} if llm is not None else {}
    env = PLATFORM_TASKS[s.task_id](backend="platform", journal=True, db_path=args.db, overwrite=args.overwrite,
                                    privileged_info=True, **env_kw, **them)  # fmt: skip
    counts = [0, 0]  # the step's users' actions (do_nothing apart): the LLM users', everyone's
    if llm is not None:
        world = env.world
        world.sim.step_hooks.append(_llm_counter(world, counts))
    recorder = stopped = None
    steps = []
    try:
        obs, _ = env.reset(seed=args.seed)
        if logdir is not None:
            claim_logdir(logdir, args.db, overwrite=args.overwrite)
            recorder = _recorder(logdir, env, run, args)
        with bar(s.max_steps, f"{run.role} {run.policy.name}", "step", quiet=args.quiet) as progress:
            for t in range(1, s.max_steps + 1):
                action = run.policy(obs)
                obs, reward, _, _, info = env.step(action)
                theirs = tuple(counts) if llm is not None else None
                steps.append((reward, info, theirs))
                if recorder is not None:
                    recorder.record(t, action, reward, info, theirs)
                progress.update(1)
    except KeyboardInterrupt as err:  # Ctrl-C or SIGTERM: the steps done are committed, env.close() closes
        stopped = err
    finally:
        if recorder is not None:
            recorder.close()
        env.close()
    if stopped is not None:
        raise _stopped(stopped, args, len(steps), s.max_steps)
    task_summary(run, args, steps, logdir, time.perf_counter() - started).show(getattr(args, "json", False))
    return 0


def _llm_counter(world, counts: list):
    """A step hook: the step's users' actions (do_nothing apart) in `counts`, the LLM users' and
    everyone's (the applied rows of the users' policies: the world's own rows are apart)."""

    def count(sim, outcome, conn) -> None:
        acting = outcome.actions != int(ActionType.DO_NOTHING)
        theirs = ~world.task_users[world.recsys.model_users(outcome.users)]
        counts[:] = [int((acting & theirs).sum()), int(acting.sum())]

    return count


def _recorder(logdir: str, env, run: TaskRun, args) -> AgentEpisodeRecorder:
    """The episode's TensorBoard recorder, named the task's reward terms and action parts."""
    names = {"weight_names": CANDIDATE_FEATURES} if run.role == "recommender" else {"code_names": ACTIONS}
    s = run.settings
    config = {"task": s.task_id, "agent": run.policy.name, "run": str(run.path), "difficulty": s.difficulty,
              "users": s.users, "steps": s.max_steps, "population": s.eval_population, "seed": args.seed,
              "llm_users": len(run.llm_users), "db": args.db}  # fmt: skip
    return AgentEpisodeRecorder(logdir, env.task.reward_params.weights(), config=config, **names)


def _stopped(err: KeyboardInterrupt, args, done: int, steps: int) -> RunStopped:
    """What a task run stopped by a signal says: the steps its journal holds, and the command
    that plays the episode again (with --overwrite: it replaces that journal)."""
    try:
        held = read_meta(args.db).get("step")
    except JournalError:
        held = None
    kept = f"{args.db} holds its steps up to step {held}" if held is not None else "no step was journaled"
    return RunStopped(
        f"stopped by {signal_name(err)} after {done} of {steps} steps; {kept}", exit_code(err), True, ("--overwrite",)
    )


def task_summary(run: TaskRun, args, steps: list, logdir: str | None, seconds: float) -> Summary:
    """What a task run says at its end: the episode in a few numbers, its outputs, what next."""
    s = run.settings
    rewards = [float(r) for r, _, _ in steps]
    info = steps[-1][1] if steps else {}
    total = {k: float(sum(i[k] for _, i, _ in steps)) for k in ("engagements", "misinfo_impressions")}
    theirs = [c for _, _, c in steps if c is not None]
    share = sum(c[0] for c in theirs) / max(sum(c[1] for c in theirs), 1) if theirs else None
    data = {"task": s.task_id, "agent": run.policy.name, "run": str(run.path), "difficulty": s.difficulty,
            "users": s.users, "llm_users": len(run.llm_users), "steps": len(steps), "seed": args.seed,
            "population": s.eval_population, "return": round(sum(rewards), 4),
            "engagements_per_user": round(total["engagements"], 4),
            "misinfo_impressions_per_user": round(total["misinfo_impressions"], 4),
            "satisfaction": round(float(info.get("satisfaction", np.nan)), 4),
            "churned": round(float(info.get("churned", np.nan)), 4),
            **({"llm_action_share": round(share, 4)} if share is not None else {}),
            "seconds": round(seconds, 3), "db": args.db, "logdir": logdir}  # fmt: skip
    who = f"{plural(s.users, 'user')}" + (f" ({len(run.llm_users):,} LLM users)" if len(run.llm_users) else "")
    done = (
        f"Played {run.policy.name} of {run.path} ({s.task_id}, {s.difficulty}) as the platform's {run.role} for "
        f"{plural(len(steps), 'step')} of {who} in {duration(seconds)}: return {data['return']:.3f}, "
        f"{data['engagements_per_user']:.3f} engagements and {data['misinfo_impressions_per_user']:.3f} "
        f"misinformation impressions per user, at the end satisfaction {data['satisfaction']:.3f} and "
        f"{data['churned']:.1%} churned."
    )
    if share is not None:
        done += f"\nLLM users: {share:.1%} of the users' actions (do_nothing apart)."
    outputs = [(args.db, "the journal: the episode in OASIS's tables (user, post, like, trace, ...)")]
    nxt = [(quoted(["oasis-gym", "report", args.db]), "PNG plots and summary.txt of the episode")]
    if logdir:
        outputs.append((logdir, "TensorBoard: the agent's actions, the reward and its parts, the users' state"))
        nxt.append((quoted(["tensorboard", "--logdir", logdir]), "the episode, step by step"))
    if not len(run.llm_users):
        db = f"{Path(args.db).with_suffix('')}_llm.db"
        more = ["oasis-gym", "run", f"--{run.role}", str(run.path), "--llm-users", "10", "--db", db]
        nxt.append((quoted(more), "the same agent beside LLM users"))
    return Summary(done, outputs, nxt, data)
