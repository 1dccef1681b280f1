"""Ctrl-C (SIGINT) and SIGTERM during `oasis-gym run`: no traceback, one line saying where
the run stopped and the command that continues it, exit code 128 + the signal (130, 143).

Stopping is safe: a step interrupted midway is rolled back (`sim.step_atomic`) and
`env.close()` commits the steps done, so `oasis-gym run --resume DB` goes on exactly as the
uninterrupted run would have.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import threading

from oasis_gym.platform.journal import JournalError, read_meta

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(KeyboardInterrupt):
    """SIGINT or SIGTERM, raised as a KeyboardInterrupt (every `finally` runs)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class RunStopped(Exception):
    """A run ended by a signal: its one line (`str`) and exit code (`code`)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@contextlib.contextmanager
def stop_signals(active: bool = True):
    """While the block runs, SIGINT and SIGTERM raise `Stopped` (a KeyboardInterrupt), once:
    later ones are ignored until the block ends, so the journal's last commit is not cut
    short. Only in the main thread (elsewhere, or not `active`, nothing changes)."""
    if not active or threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        for s in _SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        raise Stopped(signum)

    previous = {s: signal.signal(s, handler) for s in _SIGNALS}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _signum(err: BaseException) -> int:
    return getattr(err, "signum", signal.SIGINT)


def run_stopped(err: KeyboardInterrupt, journaled: bool, *, db: str, steps: int) -> RunStopped:
    """What a run stopped by `err` says once its env is closed: the step its journal `db` holds
    and the `--resume` command, or that there is none (`journaled`: the run made its journal)."""
    signum = _signum(err)
    name = signal.Signals(signum).name
    try:
        meta = read_meta(db)
    except JournalError:
        meta = {}
    if not journaled or "step" not in meta:
        return RunStopped(f"stopped by {name} before its journal held a step: nothing to resume", 128 + signum)
    command = f"oasis-gym run --resume {shlex.quote(db)}"
    return RunStopped(f"stopped by {name} at step {meta['step']} of {steps}; continue it with: {command}", 128 + signum)


def interrupted(err: KeyboardInterrupt, scenario: bool) -> RunStopped:
    """A run stopped before it had an env (or a scenario run, which does not resume)."""
    name = signal.Signals(_signum(err)).name
    what = "a scenario run starts from its beginning: run it again" if scenario else "nothing to resume"
    return RunStopped(f"stopped by {name}; {what}", 128 + _signum(err))
