"""`oasis-gym run --resume`: the settings a journaled run keeps, and what the command line may change."""

from __future__ import annotations

import argparse
import os

from oasis_gym.errors import ConfigError
from oasis_gym.platform.journal import JournalError, read_meta
from oasis_gym.platform.journal_load import held_to_resume
from oasis_gym.platform.journal_lock import being_written, writers
from oasis_gym.platform.oasis_import import is_oasis_db

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
# never part of the settings saved in the journal (how a command shows itself is not the run's:
# a run started with --quiet or --json resumes with what its resume command line says)
_NOT_SAVED = ("resume", "overwrite", "given", "quiet", "json")


def saved_settings(args) -> dict:
    """The run's settings as saved in its journal (what `resumed_args` reads back)."""
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


def resumed_args(args) -> argparse.Namespace:
    """The settings of the run journaled in `args.resume`, with what the command line may
    change; a contradiction of a run-defining setting is refused."""
    given = getattr(args, "given", set())
    if args.overwrite:
        raise ConfigError("--overwrite replaces a journal and --resume continues one: use one of them")
    if "db" in given and not _same_setting(args.db, args.resume):
        raise ConfigError("--resume continues its journal in place: drop --db")
    if pids := writers(args.resume):  # (what its file holds is behind that run: its -wal may be gone)
        raise JournalError(f"{being_written(args.resume, pids)}; resume it once that run ends")
    with held_to_resume(args.resume):
        if is_oasis_db(args.resume):
            raise JournalError(
                f"{args.resume} is an OASIS database: convert it first (it is only read), then resume the"
                f" copy: oasis-gym import {args.resume} --out ours.db && oasis-gym run --resume ours.db"
            )
        meta = read_meta(args.resume)
    if "step" not in meta:
        raise JournalError(
            f"{args.resume} holds no step (its run ended before its first commit): start the run again"
            " without --resume; it replaces this journal"
        )
    state = meta.get("state")
    saved = state.get("cli") if isinstance(state, dict) else None
    if saved is None:
        raise JournalError(
            f"{args.resume} was not written by 'oasis-gym run'; resume it from Python (oasis_gym.app.run.resume)"
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
    done = meta["step"]
    if isinstance(done, int) and not isinstance(done, bool) and merged["steps"] <= done:
        where = (
            f"is at step {done}, so --steps {args.steps} has nothing to do"
            if args.steps
            else f"is complete at step {done}"
        )
        raise ConfigError(f"{args.resume} {where}: give --steps greater than {done} to continue it")
    return argparse.Namespace(**merged)
