"""`oasis-gym` command line: run a simulation, make a report.

oasis-gym run --platform twitter --users 1000 --steps 20 --policy abm --db run.db
oasis-gym report run.db --out report/
oasis-gym import oasis.db --out ours.db     # an OASIS database, continued by run --resume ours.db
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

from oasis_gym.errors import OasisGymError

POLICIES = ("hybrid", "abm", "random", "llm")


# ------------------------------------------------------------------ argument validators
# Each turns a bad value into argparse's one-line error (exit 2).


def _users(value: str):
    if value.strip().lstrip("+-").isdigit():
        return _positive_int(value)
    if not os.path.isfile(value):
        raise argparse.ArgumentTypeError(f"{value!r} is neither a user count >= 1 nor a profile file")
    return value


def _int_at_least(low: int):
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {value!r}") from None
        if number < low:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {value!r}")
        return number

    parse.__name__ = f"int>={low}"
    return parse


_positive_int = _int_at_least(1)
_nonnegative_int = _int_at_least(0)


def _activation(value: str) -> str:
    if value == "activity":
        return value
    try:
        p = float(value)
    except ValueError:
        p = math.nan
    if not 0.0 <= p <= 1.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected 'activity' or a probability in [0, 1], got {value!r}")
    return value


def _recsys(value: str) -> str:
    from oasis_gym import recsys

    names = set(recsys.RECOMMENDERS) | set(getattr(recsys, "_ALIASES", {}))
    if value not in names:
        raise argparse.ArgumentTypeError(f"unknown recommender {value!r}; choose from {sorted(names)}")
    return value


def _path(value: str) -> str:
    if not value or "\0" in value:
        raise argparse.ArgumentTypeError(f"expected a file path, got {value!r}")
    return value


class _Parser(argparse.ArgumentParser):
    """Errors in one line (no usage block): `oasis-gym run: error: ...`, exit code 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="oasis-gym", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a simulation")
    run.add_argument("--platform", choices=("twitter", "reddit"), default="twitter")
    run.add_argument("--users", type=_users, default=1000, help="user count (synthetic) or a profile file (.csv/.json)")
    run.add_argument(
        "--steps", type=_positive_int, default=None, help="total steps (default 20; on --resume: the original run's)"
    )
    run.add_argument(
        "--policy",
        choices=POLICIES,
        default="hybrid",
        help="hybrid: LLM core users + ABM ordinary users (default); abm; random; llm (all users)",
    )
    run.add_argument(
        "--core-users", type=_nonnegative_int, default=10, help="hybrid: the most-followed users driven by the LLM"
    )
    run.add_argument(
        "--llm-backend",
        choices=("auto", "vllm", "transformers", "openai"),
        default="auto",
        help="auto | vllm | transformers | openai",
    )
    run.add_argument("--llm-model", default=None, help="model path/name for the LLM backend")
    run.add_argument("--llm-endpoint", action="append", default=None, help="OpenAI-compatible base URL (repeatable)")
    # endpoint faults: bound what a hung or failing LLM server can cost per step
    run.add_argument(
        "--llm-timeout",
        type=_llm_seconds,
        default=None,
        metavar="S",
        help="openai backend: seconds one request attempt may take (default 60)",
    )
    run.add_argument(
        "--llm-retries",
        type=_llm_retries,
        default=None,
        metavar="N",
        help="openai backend: retries of a failed request (default 3; with the default timeout a "
        "hung endpoint costs up to 244 s per step)",
    )
    run.add_argument(
        "--llm-step-deadline",
        type=_llm_seconds,
        default=None,
        metavar="S",
        help="seconds the LLM users of one step may take in all (openai or transformers backend); "
        "users still undecided then do nothing (counted as llm/deadline_noop)",
    )
    run.add_argument(
        "--recsys",
        type=_recsys,
        default=None,
        help="twitter | reddit | random | chronological (default: the platform's)",
    )
    run.add_argument(
        "--activation", type=_activation, default="activity", help="'activity' (24-h vectors) or a flat probability"
    )
    run.add_argument(
        "--all-actions", action="store_true", help="enable all 23 actions instead of the platform defaults"
    )
    run.add_argument(
        "--seed-posts",
        type=_nonnegative_int,
        default=100,
        help="posts the most-followed users have written before step 0 (synthetic populations)",
    )
    run.add_argument("--db", type=_path, default="run.db", help="SQLite journal path")
    run.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing oasis-gym journal at --db (anything else there is never replaced)",
    )
    run.add_argument("--logdir", default=None, help="TensorBoard log dir (default runs/<db stem>)")
    run.add_argument("--no-tensorboard", action="store_true")
    run.add_argument("--seed", type=_nonnegative_int, default=0)
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--resume",
        type=_path,
        default=None,
        metavar="DB",
        help="continue the run journaled in DB (same policy and settings) up to --steps total steps",
    )
    from oasis_gym.scenarios import add_scenario_args

    add_scenario_args(run)
    from oasis_gym.train.cli import add_train_parser

    add_train_parser(sub)
    report = sub.add_parser("report", help="PNG plots and a text summary of a finished run")
    report.add_argument("db")
    report.add_argument("--out", default=None, help="output folder (default <db stem>_report)")
    add_import_parser(sub)
    from oasis_gym.scenarios.sweep import add_sweep_parser  # `oasis-gym sweep`: scenario sensitivity

    add_sweep_parser(sub)
    return parser


# ---------------------------------------------------------------- oasis-gym import (OASIS databases)
def add_import_parser(sub) -> None:
    imp = sub.add_parser(
        "import",
        help="convert an OASIS database into an oasis-gym journal that "
        "'run --resume' continues (the OASIS file is only read)",
    )
    imp.add_argument("oasis_db")
    imp.add_argument("--out", required=True, help="the new journal (must not exist)")
    imp.add_argument(
        "--platform",
        choices=("twitter", "reddit"),
        default=None,
        help="default: twitter for step clocks, reddit for datetime clocks",
    )
    imp.add_argument("--minutes-per-step", type=int, default=3)
    imp.add_argument("--policy", choices=POLICIES, default="abm", help="the policy 'run --resume' continues with")
    imp.add_argument("--seed", type=int, default=0)
    imp.add_argument("--no-tensorboard", action="store_true", help="'run --resume' writes no TensorBoard logs")
    imp.add_argument("--strict", action="store_true", help="fail if a stored counter disagrees with the rows")


def cmd_import(args) -> int:
    import dataclasses

    from oasis_gym.platform.oasis_import import OasisImportError, import_oasis, load_oasis
    from oasis_gym.simulation import SimulationConfig

    def fail(message: str) -> int:  # a bad argument: one line, exit code 2
        print(f"oasis-gym import: error: {message}", file=sys.stderr)
        return 2

    if Path(args.out).exists():
        return fail(f"{args.out} exists: choose a new path for the journal")
    if args.minutes_per_step < 1:
        return fail("--minutes-per-step must be >= 1")
    try:  # read first (a second, cheap pass writes): the saved settings need the platform's kind and step
        loaded = load_oasis(
            args.oasis_db, minutes_per_step=args.minutes_per_step, platform=args.platform, strict=args.strict
        )
    except (OasisImportError, FileNotFoundError) as err:
        return fail(f"cannot import {args.oasis_db}: {err}")
    pf = loaded.platform
    name = pf.config.name
    config = SimulationConfig(
        platform=name, recsys=name, max_cycles=pf.step, db_path=str(args.out), minutes_per_step=args.minutes_per_step
    )
    run_args = [
        "run",
        "--platform",
        name,
        "--policy",
        args.policy,
        "--db",
        str(args.out),
        "--seed",
        str(args.seed),
        "--steps",
        str(pf.step),
    ] + (["--no-tensorboard"] if args.no_tensorboard else [])
    cli = {k: v for k, v in vars(build_parser().parse_args(run_args)).items() if k != "resume"}
    seqs = np.random.SeedSequence(args.seed).spawn(3)
    meta = {
        "config": dataclasses.asdict(config),
        "seed": args.seed,
        "views": [],
        "recsys_weights": None,
        "rng": [np.random.default_rng(s).bit_generator.state for s in seqs],
        "state": {"cli": cli},
    }
    result = import_oasis(
        args.oasis_db,
        args.out,
        meta=meta,
        minutes_per_step=args.minutes_per_step,
        platform=args.platform,
        strict=args.strict,
    )
    print(json.dumps({"out": str(args.out), **result.summary()}))
    return 0


def make_policy(args, env, llm=None):
    """The users' policy of `args.policy`; `llm`: the LLM policy, if already made."""
    from oasis_gym.policies.abm import ABMPolicy
    from oasis_gym.policies.base import RandomPolicy
    from oasis_gym.policies.hybrid import HybridPolicy

    if args.policy == "abm":
        return ABMPolicy()
    if args.policy == "random":
        return RandomPolicy()
    llm = llm if llm is not None else make_llm_policy(args)
    if args.policy == "llm":
        return llm
    if getattr(args, "core_ids", None) is not None:  # a resumed run keeps its LLM users
        return HybridPolicy([(llm, np.asarray(args.core_ids, dtype=np.int64))], default=ABMPolicy())
    policy = HybridPolicy.top_k_by_followers(env, llm, ABMPolicy(), args.core_users)
    args.core_ids = policy.routes[0][1].tolist()
    return policy


def _llm_seconds(value: str) -> float:
    """A positive, finite number of seconds (argparse type: bad values exit 2 with one line)."""
    try:
        s = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {value!r}") from None
    if not 0 < s < 1e6:
        raise argparse.ArgumentTypeError(f"expected seconds in (0, 1e6), got {value!r}")
    return s


def _llm_retries(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or int(value) > 100:
        raise argparse.ArgumentTypeError(f"expected a retry count 0..100, got {value!r}")
    return int(value)


def make_llm_policy(args):
    """The LLM users' policy of the run's LLM settings; a bad or missing backend is a `ConfigError`."""
    from oasis_gym.errors import ConfigError

    try:
        from oasis_gym.policies.llm_policy import LLMPolicy, backend_label, make_backend, quiet_vllm_logs
    except ImportError as err:  # the llm extra is missing
        raise ConfigError(
            f"LLM users need the 'llm' extra: pip install 'oasis-gym[llm]' ({err}). Or run without an LLM: --policy abm"
        ) from err
    endpoint_kw = {
        k: v
        for k, v in (
            ("request_timeout", getattr(args, "llm_timeout", None)),
            ("max_retries", getattr(args, "llm_retries", None)),
        )
        if v is not None
    }
    if endpoint_kw and args.llm_backend != "openai":
        raise ConfigError("--llm-timeout and --llm-retries apply to the openai backend (--llm-backend openai)")
    if "request_timeout" in endpoint_kw:  # a refused connection should not wait longer than a reply
        endpoint_kw["connect_timeout"] = min(5.0, endpoint_kw["request_timeout"])
    quiet_vllm_logs()  # vLLM's INFO logs would flood stderr; VLLM_LOGGING_LEVEL=INFO brings them back
    try:
        backend = make_backend(args.llm_backend, model=args.llm_model, endpoints=args.llm_endpoint, **endpoint_kw)
    except (ImportError, RuntimeError, FileNotFoundError) as err:
        raise ConfigError(f"no LLM backend available: {err}. Run without an LLM: --policy abm") from err
    print(f"LLM users: {backend_label(backend)}", file=sys.stderr, flush=True)
    try:
        return LLMPolicy(backend, step_deadline_s=getattr(args, "llm_step_deadline", None))
    except ValueError as err:  # a deadline the backend cannot keep
        raise ConfigError(f"--llm-step-deadline: {err}") from err


# Settings that define a run: a resumed run keeps the journal's, and contradicting them is an
# error. Everything else given with --resume (steps, LLM backend and endpoints, logging) applies.
RUN_DEFINING = (
    "platform",
    "users",
    "policy",
    "core_users",
    "recsys",
    "activation",
    "all_actions",
    "seed_posts",
    "seed",
)
_NOT_SAVED = ("resume", "overwrite", "given")  # never part of the settings saved in the journal


def _saved_settings(args) -> dict:
    return {k: v for k, v in vars(args).items() if k not in _NOT_SAVED}


def _same_setting(given, saved) -> bool:
    if given == saved:
        return True
    if isinstance(given, str) and isinstance(saved, str):  # a profile file named another way
        try:
            return os.path.samefile(given, saved)
        except OSError:
            return False
    return False


def _resumed_args(args) -> argparse.Namespace:
    """The settings of the run journaled in `args.resume`, with what the command line may
    change; a contradiction of a run-defining setting is refused."""
    from oasis_gym.errors import ConfigError
    from oasis_gym.platform.journal import JournalError, read_meta

    given = getattr(args, "given", set())
    if args.overwrite:
        raise ConfigError("--overwrite replaces a journal and --resume continues one: use one of them")
    if "db" in given and not _same_setting(args.db, args.resume):
        raise ConfigError("--resume continues its journal in place: drop --db")
    from oasis_gym.platform.oasis_import import is_oasis_db

    if is_oasis_db(args.resume):
        raise JournalError(
            f"{args.resume} is an OASIS database: convert it first (it is only read), then resume the"
            f" copy: oasis-gym import {args.resume} --out ours.db && oasis-gym run --resume ours.db"
        )
    state = read_meta(args.resume).get("state")
    saved = state.get("cli") if isinstance(state, dict) else None
    if saved is None:
        raise JournalError(
            f"{args.resume} was not written by 'oasis-gym run'; resume it from Python (oasis_gym.run.resume)"
        )
    steps = saved.get("steps") if isinstance(saved, dict) else None
    if (
        not isinstance(steps, int)
        or isinstance(steps, bool)
        or steps < 1
        or not {"platform", "users", "policy"} <= set(saved)
    ):
        raise JournalError(f"{args.resume}: the command-line settings saved in the journal are damaged")
    for key in RUN_DEFINING:
        if key in given and not _same_setting(getattr(args, key), saved.get(key)):
            flag = "--" + key.replace("_", "-")
            raise ConfigError(
                f"{args.resume} was written with {flag} {saved.get(key)}, and a resumed run keeps its "
                f"settings: drop {flag} {getattr(args, key)}"
            )
    changes = {k: getattr(args, k) for k in given if k not in RUN_DEFINING and hasattr(args, k)}
    merged = {**vars(args), **saved, **changes}
    merged.update(resume=args.resume, db=args.resume, steps=args.steps or steps)
    return argparse.Namespace(**merged)


def _check_paths(args) -> None:
    """The journal must not be one of the run's input or output files."""
    from oasis_gym.platform.journal_file import check_distinct

    scenario = getattr(args, "scenario", None)
    check_distinct(
        args.resume or args.db,
        {
            "profile file (--users)": args.users if isinstance(args.users, str) else None,
            "scenario file (--scenario)": scenario if scenario and os.path.isfile(scenario) else None,
            "figures file (--figures)": getattr(args, "figures", None),
            "TensorBoard folder (--logdir)": args.logdir,
            "LLM model (--llm-model)": args.llm_model,
        },
    )


def cmd_run(args) -> int:
    from oasis_gym.errors import ConfigError

    _check_paths(args)
    if getattr(args, "scenario", None):
        if args.resume:
            raise ConfigError("--resume continues an 'oasis-gym run' journal; a scenario runs from its start")
        from oasis_gym.scenarios import run_scenario_cli

        return run_scenario_cli(args)
    from oasis_gym.envs import reddit_v0, twitter_v0
    from oasis_gym.envs.social_env import SocialMediaEnv
    from oasis_gym.run import simulate

    if args.resume:
        args = _resumed_args(args)
    # the LLM backend first: a missing one ends the run before any journal is written
    try:
        llm = make_llm_policy(args) if args.policy in ("hybrid", "llm") else None
    except ValueError as err:  # make_backend's checks of the LLM settings
        raise ConfigError(f"bad LLM settings: {err}") from err
    if args.resume:
        env = SocialMediaEnv.resume(args.db, max_cycles=args.steps)
    else:
        args.steps = args.steps or 20
        module = twitter_v0 if args.platform == "twitter" else reddit_v0
        kwargs = {
            "users": args.users,
            "max_cycles": args.steps,
            "db_path": args.db,
            "overwrite": args.overwrite,
            "activation": args.activation if args.activation == "activity" else float(args.activation),
        }
        if args.recsys:
            kwargs["recsys"] = args.recsys
        if args.all_actions:
            kwargs["available_actions"] = tuple(range(23))
        if isinstance(args.users, int) and args.seed_posts > 0:
            kwargs["setup"] = seed_posts_setup(args.seed_posts)
        env = module.parallel_env(**kwargs)
    # saved with every commit from the journal's first on (read live: make_policy adds core_ids),
    # so a run killed before its first step is resumable
    env.sim.state_providers["cli"] = lambda: _saved_settings(args)
    recorder = None
    try:
        if not args.resume:
            env.reset(seed=args.seed)
        policy = make_policy(args, env, llm)
        policy.reset(env, np.arange(env.sim.platform.n_users), args.seed)
        if args.resume and "policy" in env.sim.saved_state:
            policy.load_state_dict(env.sim.saved_state["policy"])
        if not args.no_tensorboard:
            from oasis_gym.metrics import MetricsRecorder

            logdir = args.logdir or str(Path("runs") / Path(args.db).stem)
            recorder = MetricsRecorder(logdir)
            recorder.attach(env.sim)
            recorder.on_reset(env.sim)
        summary = simulate(env, policy, args.steps - env._cycles, seed=args.seed, reset=False, progress=not args.quiet)
    finally:
        if recorder is not None:
            recorder.close()
        env.close()
    print(
        json.dumps(
            {
                "steps": summary.steps,
                "actions": summary.actions,
                "accepted": summary.accepted,
                "actions_per_s": round(summary.actions_per_s, 1),
                "db": args.db,
                "logdir": recorder.logdir if recorder is not None else None,
                **({"llm": summary.llm} if summary.llm else {}),
            }
        )
    )
    return 0


def seed_posts_setup(count: int):
    """A setup hook: the `count` most-followed users (one post each, wrapping around) wrote
    posts before step 0 whose wording and stance follow their opinion, so a synthetic
    population starts with something to read."""

    def setup(sim) -> None:
        from oasis_gym.content import template_text

        pf = sim.platform
        authors = np.argsort(-pf.u_followers.a, kind="stable")[: max(1, min(count, pf.n_users))]
        authors = np.resize(authors, count)
        stance = pf.u_opinion.a[authors]
        rng = np.random.default_rng(sim.seed)
        texts = template_text(stance, "the news", rng)
        pf.create_posts(authors, texts, stance=stance)

    return setup


def cmd_report(args) -> int:
    from oasis_gym.metrics.report import make_report
    from oasis_gym.platform.journal_file import require_journal
    from oasis_gym.platform.oasis_import import is_oasis_db

    if not is_oasis_db(args.db):  # an OASIS database is reported from its own tables
        require_journal(args.db)
    out = args.out or f"{Path(args.db).with_suffix('')}_report"
    paths = make_report(args.db, out)
    for p in paths:
        print(p)
    return 0


def _given_options(argv: list[str] | None) -> set[str]:
    """The settings the command line names (a second parse, with every default suppressed)."""
    parser = build_parser()
    parsers = [parser]
    while parsers:
        for action in parsers.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
            else:
                action.default = argparse.SUPPRESS
    return set(vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None) -> int:
    """Run the command line. Bad input (arguments, files, journals) ends it with one line on
    stderr and exit code 2 (SystemExit); any other exception is a bug and keeps its traceback."""
    from oasis_gym.population import ProfileError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "train":
            from oasis_gym.train.cli import cmd_train

            return cmd_train(args)
        if args.command == "sweep":
            from oasis_gym.scenarios.sweep import cmd_sweep

            return cmd_sweep(args)
        if args.command == "run":
            args.given = _given_options(argv)
        return {"run": cmd_run, "report": cmd_report, "import": cmd_import}[args.command](args)
    except (OasisGymError, ProfileError) as err:
        parser.exit(2, f"oasis-gym {args.command}: error: {' '.join(str(err).splitlines())}\n")


if __name__ == "__main__":
    sys.exit(main())
