"""`oasis-gym` command line: run a simulation, make a report.

oasis-gym run --platform twitter --users 1000 --steps 20 --policy abm --db run.db
oasis-gym run --recommender runs/rec --db rec.db   # a trained agent (oasis-gym train) on its task's platform
oasis-gym report run.db --out report/
oasis-gym import oasis.db --out ours.db     # an OASIS database, continued by run --resume ours.db
"""

from __future__ import annotations

import sys

from oasis_gym.errors import OasisGymError
from oasis_gym.population import ProfileError
from oasis_gym.scenarios.sweep_cli import cmd_sweep
from oasis_gym.train.benchmark import cmd_benchmark
from oasis_gym.train.cli import cmd_train
from oasis_gym.train.scratch import cmd_scratch

from .import_db import cmd_import
from .interrupt import Finished, RunStopped, command_stopped, interrupted, stop_signals
from .parser import POLICIES, build_parser, given_options
from .report import cmd_report
from .resume import RUN_DEFINING
from .run import cmd_run, make_llm_policy, make_policy, seed_posts_setup
from .task_run import check_task_options, cmd_task_run

__all__ = [
    "main",
    "build_parser",
    "cmd_run",
    "cmd_import",
    "cmd_report",
    "make_policy",
    "make_llm_policy",
    "seed_posts_setup",
    "POLICIES",
    "RUN_DEFINING",
]


def main(argv: list[str] | None = None) -> int:
    """Run the command line. Bad input (arguments, files, journals) ends it with one line on
    stderr and exit code 2 (SystemExit); any other exception is a bug and keeps its traceback.
    A command stopped by SIGINT or SIGTERM ends with one line (what is kept, the command that
    resumes or repeats it) and exit code 130 or 143 (`interrupt`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    name = args.command if args.command != "train" else f"train {args.target}"
    if unknown:  # (argparse names the top-level parser: "oasis-gym: error", no command)
        parser.exit(2, f"oasis-gym {name}: error: unrecognized arguments: {' '.join(unknown)}\n")
    try:
        with stop_signals():  # SIGTERM stops every command as Ctrl-C does (oasis_gym.app.interrupts)
            # (a sweep stopped while it runs says itself how to resume: its finished runs are kept)
            commands = {"run": cmd_run, "report": cmd_report, "import": cmd_import, "sweep": cmd_sweep,
                        "benchmark": cmd_benchmark, "scratch": cmd_scratch}  # fmt: skip
            if args.command == "run":
                args.given = given_options(argv)
                if check_task_options(args):  # --recommender RUN / --moderator RUN: a trained agent plays
                    commands["run"] = cmd_task_run
            return commands.get(args.command, cmd_train)(args)
    except (OasisGymError, ProfileError) as err:
        parser.exit(2, f"oasis-gym {name}: error: {' '.join(str(err).splitlines())}\n")
    except RunStopped as stop:  # where the run stopped and how to continue it
        parser.exit(stop.code, f"oasis-gym run: {stop.again(argv)}\n")
    except KeyboardInterrupt as err:  # stopped before a run's steps began, another command, or a summary
        if args.command == "run" and not isinstance(err, Finished):
            stop = interrupted(err, args, argv)
        else:
            stop = command_stopped(err, args, argv)
        parser.exit(stop.code, f"oasis-gym {name}: {stop}\n")
