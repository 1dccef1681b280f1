"""What a command stopped by Ctrl-C (SIGINT) or SIGTERM says: no traceback, one line, exit
code 128 + the signal (130, 143). The signals themselves are `oasis_gym.app.interrupts`'.

`oasis-gym run` says where the run stopped and the command that continues it. Stopping is
safe: a step interrupted midway is rolled back (`sim.step_atomic`) and `env.close()` commits
the steps done, so `oasis-gym run --resume DB` goes on exactly as the uninterrupted run would
have. `report`, `import`, `train` and a sweep being planned say what is kept (their outputs
are written beside and renamed into place: `oasis_gym.outputs`, so nothing new, or the
previous output) and the command that does it again; a running sweep says how to resume it
(`scenarios.sweep_store.stopped_line`). Any command stopped while it prints its summary says
that its work was done.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from oasis_gym.app.interrupts import Finished, Stopped, exit_code, signal_name, stop_signals
from oasis_gym.platform.journal import JournalError, read_meta

__all__ = ["Stopped", "Finished", "RunStopped", "stop_signals", "run_stopped", "interrupted", "command_stopped"]


class RunStopped(Exception):
    """A run ended by a signal: its one line (`str`) and exit code (`code`); `rerun`: the line
    ends with the command line run again (`again`: nothing was kept to continue), with the
    options `add` that it lacks (a task run's `--overwrite`: it replaces its own journal)."""

    def __init__(self, message: str, code: int, rerun: bool = False, add: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.code, self.rerun, self.add = code, rerun, add

    def again(self, argv: list[str]) -> str:
        """The one line, with the command that runs it again when nothing was kept."""
        argv = [*argv, *(a for a in self.add if a not in argv)]
        return f"{self}; run it again: {shlex.join(['oasis-gym', *argv])}" if self.rerun else str(self)


def run_stopped(err: KeyboardInterrupt, journaled: bool, *, db: str, steps: int) -> RunStopped:
    """What a run stopped by `err` says once its env is closed: the step its journal `db` holds
    and the `--resume` command, or that there is none (`journaled`: the run made its journal)."""
    name = signal_name(err)
    try:
        meta = read_meta(db)
    except JournalError:
        meta = {}
    if not journaled or "step" not in meta:
        return RunStopped(f"stopped by {name} before its journal held a step: nothing to resume", exit_code(err), True)
    command = f"oasis-gym run --resume {shlex.quote(db)}"
    return RunStopped(
        f"stopped by {name} at step {meta['step']} of {steps}; continue it with: {command}", exit_code(err)
    )


def interrupted(err: KeyboardInterrupt, args, argv: list[str]) -> RunStopped:
    """A run stopped before it had an env (or a scenario run, which does not resume): the
    journal a `--resume` continues is as it was; a scenario's journal is replaced by its next
    run (with --overwrite, added here when the stopped run left one)."""
    name, again = signal_name(err), ["oasis-gym", *argv]
    if getattr(args, "scenario", None):
        db = Path(args.db)
        if db.exists() and "--overwrite" not in argv:
            again.append("--overwrite")
        what = "a scenario run starts from its beginning; run it again"
    elif args.resume:
        what = f"{args.resume} is as it was; continue it with"
    else:
        what = "nothing to resume; run it again"
    return RunStopped(f"stopped by {name}; {what}: {shlex.join(again)}", exit_code(err))


def command_stopped(err: KeyboardInterrupt, args, argv: list[str]) -> RunStopped:
    """What `oasis-gym report`, `import`, `train`, `benchmark` or a sweep stopped while it was being planned
    say (`err`: the signal): what is kept (their outputs are staged: nothing new, or the
    previous output) and the command that does it again (`argv`: the command line's); any
    command stopped while it printed its summary (`Finished`), that its work was done."""
    again = ["oasis-gym", *argv]
    if isinstance(err, Finished):
        return RunStopped(
            f"stopped by {signal_name(err)} while printing its summary; its work was done", exit_code(err)
        )
    if args.command == "report":
        out = args.out or f"{Path(args.db).with_suffix('')}_report"
        kept = f"no new report was written ({out} holds what it held before)"
    elif args.command == "import":
        kept = f"no journal was written ({args.out} is as it was before)"
    elif args.command == "sweep":
        kept = "while planning the sweep: nothing was run or written"
    else:  # train, benchmark: the whole output is staged (SB3's logs too) and installed at the end
        kept = f"nothing new was written ({args.out} holds what it held before)"
    return RunStopped(f"stopped by {signal_name(err)}; {kept}; run it again: {shlex.join(again)}", exit_code(err))
