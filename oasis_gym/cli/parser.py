"""The `oasis-gym` argument parser: every subcommand's options, and their validators.

Each validator turns a bad value into argparse's one-line error (exit code 2).
"""

from __future__ import annotations

import argparse
import os

from oasis_gym import recsys
from oasis_gym.checks import (
    BYTES_PER_USER,
    MAX_ID,
    MAX_SEED,
    MAX_USERS,
    OneLineParser,
    argtype,
    finite_number,
    float_option,
    int_option,
    path_name,
    population_size,
    with_bounds,
)
from oasis_gym.policies.factory import USER_POLICIES
from oasis_gym.scenarios import add_scenario_args
from oasis_gym.scenarios.sweep_cli import add_sweep_parser
from oasis_gym.sim.clock import MAX_MINUTES_PER_STEP
from oasis_gym.train.benchmark import add_benchmark_parser
from oasis_gym.train.cli import add_train_parser
from oasis_gym.train.scratch import add_scratch_parser

DESCRIPTION = """\
oasis-gym: an OASIS-style social media simulator (X/Twitter-like and Reddit-like platforms)
as a PettingZoo environment, journaled to SQLite with OASIS's tables.

'oasis-gym COMMAND --help' lists a command's options. Every command shows its progress on
stderr (--quiet: none) and ends with a summary naming its outputs and the next command
(--json: one JSON line instead)."""
EPILOG = """\
first steps:
  oasis-gym run --users 300 --steps 10 --activation 0.2 --policy abm --db run.db
  oasis-gym report run.db
  tensorboard --logdir runs/run"""
POLICIES = USER_POLICIES  # the users' policies of `run --policy`


def _users(value: str):
    if value.strip().lstrip("+-").isdigit():
        return _population(value)
    if not os.path.isfile(_path(value)):
        raise argparse.ArgumentTypeError(f"{value!r} is neither a user count >= 1 nor a profile file")
    return value


_steps = int_option(1, MAX_ID)  # steps: at most MAX_ID (ids are 31-bit)
_seed = int_option(0, MAX_SEED)
# seeded posts: ten per user of a 100,000-user population, and no more (each one a text and an embedding)
MAX_SEED_POSTS = 1_000_000
_population = argtype(population_size, "user count")  # at most MAX_USERS, and what the memory holds
_users.bounds = _population.bounds = (1, MAX_USERS)
USERS_HELP = (
    f"user count (synthetic: at most {MAX_USERS:,}, and no more than the available memory holds at "
    f"about {BYTES_PER_USER / 1000:.1f} kB a user) or a profile file (.csv/.json)"
)


def _activation(value: str) -> str:
    if value == "activity":
        return value
    try:
        finite_number(value, low=0.0, high=1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'activity' or a probability in [0, 1], got {value!r}") from None
    return value


_activation.bounds = (0.0, 1.0)


def _recsys(value: str) -> str:
    if value not in recsys.NAMES:
        raise argparse.ArgumentTypeError(f"unknown recommender {value!r}; choose from {list(recsys.NAMES)}")
    return value


_path = argtype(path_name, "path")  # a name the OS takes: no NUL, parts <= 255 bytes


_llm_seconds = float_option(0.001, 1e6)  # seconds: a millisecond to 11 days
_llm_retries = int_option(0, 100)
_llm_penalty = float_option(-2.0, 2.0)  # a frequency penalty: OpenAI's range


def build_parser() -> argparse.ArgumentParser:
    """The `oasis-gym` parser: run, train, report, import and sweep."""
    parser = OneLineParser(
        prog="oasis-gym", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"oasis-gym {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser(
        "run",
        help="run a simulation, a paper scenario (--scenario) or continue a journaled run (--resume)",
        description="Run a simulation: synthetic or profile-file users driven by ABM rules, an LLM or both "
        "(hybrid), journaled to SQLite (--db) with TensorBoard metrics (--logdir); or a trained recommender "
        "or moderator on its task's platform (--recommender RUN / --moderator RUN). Shows a progress bar "
        "on stderr and ends with a summary and the next commands.",
    )
    run.add_argument(
        "--platform",
        choices=("twitter", "reddit"),
        default="twitter",
        help="twitter: X-like (follows, reposts, quotes; default) or reddit: Reddit-like (votes, comments, hot score)",
    )
    run.add_argument("--users", type=_users, default=1000, help=with_bounds(USERS_HELP, _users))
    run.add_argument(
        "--steps",
        type=_steps,
        default=None,
        help=with_bounds(
            "total steps (default 20; on --resume: the original run's; with --recommender / --moderator: "
            "the episode's, default the run's)",
            _steps,
        ),
    )
    run.add_argument(
        "--policy",
        choices=POLICIES,
        default="hybrid",
        help="hybrid: LLM core users + ABM ordinary users (default); abm; random; llm (all users)",
    )
    core_users = int_option(0, MAX_USERS)
    run.add_argument(
        "--core-users",
        type=core_users,
        default=10,
        help=with_bounds("hybrid: the most-followed users driven by the LLM", core_users),
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
        help=with_bounds("openai backend: seconds one request attempt may take (default 60)", _llm_seconds),
    )
    run.add_argument(
        "--llm-retries",
        type=_llm_retries,
        default=None,
        metavar="N",
        help=with_bounds(
            "openai backend: retries of a failed request (default 3; with the default timeout a "
            "hung endpoint costs up to 244 s per step)",
            _llm_retries,
        ),
    )
    run.add_argument(
        "--llm-frequency-penalty",
        type=_llm_penalty,
        default=None,
        metavar="F",
        help=with_bounds(
            "penalty per repeat of a token within one LLM reply (default 0.5: small models loop "
            "on digits and emoji; 0: off)",
            _llm_penalty,
        ),
    )
    run.add_argument(
        "--llm-step-deadline",
        type=_llm_seconds,
        default=None,
        metavar="S",
        help=with_bounds(
            "seconds the LLM users of one step may take in all (openai or transformers backend); "
            "users still undecided then do nothing (counted as llm/deadline_noop)",
            _llm_seconds,
        ),
    )
    run.add_argument(
        "--recsys",
        type=_recsys,
        default=None,
        help="twitter | reddit | random | chronological (default: the platform's)",
    )
    run.add_argument(
        "--activation",
        type=_activation,
        default="activity",
        help=with_bounds("'activity' (24-h vectors) or a flat probability", _activation),
    )
    run.add_argument(
        "--all-actions", action="store_true", help="enable all 23 actions instead of the platform defaults"
    )
    seed_posts = int_option(0, MAX_SEED_POSTS)
    run.add_argument(
        "--seed-posts",
        type=seed_posts,
        default=100,
        help=with_bounds(
            "posts the most-followed users have written before step 0 (synthetic populations)", seed_posts
        ),
    )
    run.add_argument(
        "--db", type=_path, default="run.db", help="SQLite journal path (default run.db; a scenario's: <scenario>.db)"
    )
    run.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing oasis-gym journal at --db and a scenario's earlier --figures file "
        "(anything else there is never replaced)",
    )
    run.add_argument(
        "--logdir",
        type=_path,
        default=None,
        help="TensorBoard log dir, this journal's alone (default runs/<db stem>, "
        "or runs/<db stem>-2, ... when another journal's run wrote there)",
    )
    run.add_argument("--no-tensorboard", action="store_true", help="write no TensorBoard logs")
    run.add_argument(
        "--seed",
        type=_seed,
        default=0,
        help=with_bounds("random seed: the same seed and settings give the same run (default 0)", _seed),
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    add_json_flag(run)
    run.add_argument(
        "--resume",
        type=_path,
        default=None,
        metavar="DB",
        help="continue the run journaled in DB (same policy and settings) up to --steps total steps",
    )
    add_scenario_args(run)
    add_agent_args(run)
    add_train_parser(sub)
    add_benchmark_parser(sub)  # `oasis-gym benchmark`: the v1 protocol over N seeds
    add_scratch_parser(sub)  # `oasis-gym scratch`: agents from scratch, resumable
    report = sub.add_parser(
        "report",
        help="PNG plots and summary.txt of a finished run (a journal or an OASIS database)",
        description="Draw a run's metric curves, opinion heatmap, cascades and follower distribution as PNGs "
        "and write summary.txt. The database is only read.",
    )
    report.add_argument(
        "db", type=_path, help="the run's journal (oasis-gym run --db) or a database written by OASIS (only read)"
    )
    report.add_argument("--out", type=_path, default=None, help="output folder (default <db stem>_report)")
    report.add_argument("--overwrite", action="store_true", help="replace an earlier report in --out (nothing else)")
    report.add_argument("--quiet", action="store_true", help="no progress bar")
    add_json_flag(report)
    add_import_parser(sub)
    add_sweep_parser(sub)  # `oasis-gym sweep`: scenario sensitivity
    return parser


def add_agent_args(run) -> None:
    """`run --recommender RUN` / `--moderator RUN`: a trained agent on its task's platform (`cli/task_run.py`)."""
    group = run.add_argument_group(
        "a trained platform agent (oasis-gym train / benchmark) on its task's platform",
        "The agent plays one episode of its task (Recommender-v4 / Moderator-v2; runs of other versions are "
        "refused: their observations mean other things there) on the platform backend, on the run's held-out "
        "population, episode seed --seed, journaled to --db with TensorBoard logs; --users and --steps "
        "default to the run's. The curves include the users' satisfaction, churn and misinformation "
        "impressions, the task's hidden truth: a run observes the agent, it does not train it.",
    )
    which = group.add_mutually_exclusive_group()
    which.add_argument("--recommender", type=_path, default=None, metavar="RUN", help="a recommender's run folder")
    which.add_argument("--moderator", type=_path, default=None, metavar="RUN", help="a moderator's run folder")
    group.add_argument(
        "--agent",
        default=None,
        metavar="NAME",
        help="which policy of RUN: ppo (default) or a baseline of its tables (tuned_constant, ...); a "
        "benchmark's PPO: give its seed_<s> folder as RUN",
    )
    group.add_argument(
        "--difficulty", choices=("easy", "medium", "hard"), default=None, help="the task's tier (default: the run's)"
    )
    llm_users = int_option(0, MAX_USERS)
    what = (
        "users (evenly spaced) driven by the LLM (--llm-*), the rest by the task's model; default 0: "
        "the task's own episode, deterministic, and no LLM engine (LLM users cost seconds a step on CPUs)"
    )
    group.add_argument("--llm-users", type=llm_users, default=0, metavar="N", help=with_bounds(what, llm_users))


def add_import_parser(sub) -> None:
    """`oasis-gym import`: an OASIS database -> an oasis-gym journal."""
    imp = sub.add_parser(
        "import",
        help="convert an OASIS database into an oasis-gym journal that "
        "'run --resume' continues (the OASIS file is only read)",
        description="Convert a database written by OASIS (camel-ai/oasis) into an oasis-gym journal: every "
        "row, the counters checked against the rows, OASIS's trace kept. 'oasis-gym run --resume' "
        "continues it; the OASIS file is only read.",
    )
    imp.add_argument("oasis_db", type=_path, help="the database OASIS wrote (only read)")
    imp.add_argument(
        "--out",
        type=_path,
        required=True,
        help="the new journal, or a folder (an existing one, or a path ending in /) to write <OASIS file stem>.db into",
    )
    imp.add_argument("--overwrite", action="store_true", help="replace an earlier import at --out (nothing else)")
    imp.add_argument(
        "--platform",
        choices=("twitter", "reddit"),
        default=None,
        help="default: twitter for step clocks, reddit for datetime clocks",
    )
    minutes = int_option(1, MAX_MINUTES_PER_STEP)
    imp.add_argument(
        "--minutes-per-step",
        type=minutes,
        default=3,
        metavar="M",
        help=with_bounds(
            "simulated minutes of one step when the run goes on, at most a week; "
            "OASIS's Twitter clock counts steps, its Reddit clock datetimes (default 3)",
            minutes,
        ),
    )
    imp.add_argument("--policy", choices=POLICIES, default="abm", help="the policy 'run --resume' continues with")
    imp.add_argument(
        "--seed",
        type=_seed,
        default=0,
        help=with_bounds("the random seed 'run --resume' continues with (default 0)", _seed),
    )
    imp.add_argument("--no-tensorboard", action="store_true", help="'run --resume' writes no TensorBoard logs")
    imp.add_argument("--strict", action="store_true", help="fail if a stored counter disagrees with the rows")
    imp.add_argument("--quiet", action="store_true", help="no progress bar")
    add_json_flag(imp)


def add_json_flag(parser) -> None:
    """`--json`: the command's last output is one JSON line instead of its summary."""
    parser.add_argument(
        "--json",
        action="store_true",
        help="end with one JSON line (the figures, the paths) instead of the summary: stdout stays machine-readable",
    )


def version() -> str:
    """The installed oasis-gym's version (the source tree's when it is not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("oasis-gym")
    except PackageNotFoundError:
        return "unknown (not installed)"


def given_options(argv: list[str] | None) -> set[str]:
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
