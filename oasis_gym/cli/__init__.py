"""`oasis-gym` command line: run a simulation, make a report.

oasis-gym run --platform twitter --users 1000 --steps 20 --policy abm --db run.db
oasis-gym report run.db --out report/
oasis-gym import oasis.db --out ours.db     # an OASIS database, continued by run --resume ours.db
"""

from __future__ import annotations

from oasis_gym.errors import OasisGymError
from oasis_gym.population import ProfileError
from oasis_gym.scenarios.sweep import cmd_sweep
from oasis_gym.train.cli import cmd_train

from .import_db import cmd_import
from .interrupt import RunStopped, interrupted, stop_signals
from .parser import POLICIES, build_parser, given_options
from .report import cmd_report
from .resume import RUN_DEFINING
from .run import cmd_run, make_llm_policy, make_policy, seed_posts_setup

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
    A run stopped by SIGINT or SIGTERM ends with one line (its step, the command that resumes
    it) and exit code 130 or 143 (`interrupt`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "train":
            return cmd_train(args)
        if args.command == "run":
            args.given = given_options(argv)
        with stop_signals(args.command in ("run", "sweep")):  # SIGTERM stops a run or a sweep as Ctrl-C does
            if args.command == "sweep":  # (it says itself how to resume: its finished runs are kept)
                return cmd_sweep(args)
            return {"run": cmd_run, "report": cmd_report, "import": cmd_import}[args.command](args)
    except (OasisGymError, ProfileError) as err:
        parser.exit(2, f"oasis-gym {args.command}: error: {' '.join(str(err).splitlines())}\n")
    except RunStopped as stop:  # where the run stopped and how to continue it
        parser.exit(stop.code, f"oasis-gym run: {stop}\n")
    except KeyboardInterrupt as err:  # a run stopped before its steps began
        if args.command != "run":
            raise
        stop = interrupted(err, scenario=bool(getattr(args, "scenario", None)))
        parser.exit(stop.code, f"oasis-gym run: {stop}\n")
