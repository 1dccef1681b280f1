"""Holding SIGINT and SIGTERM across work that must not be cut short: the core's primitive.

A journal's commit (`platform/journal.py`) and an output's renames (`oasis_gym.outputs`) run
inside `deferred()`: a signal that the command line's handler takes meanwhile
(`oasis_gym.app.interrupts.stop_signals`, the home of the signals) is held there (`hold`) and
raised as `Stopped` when the outermost block ends. It lives in the core so the journal
imports nothing of the application; standard library only. Without that handler nothing is
ever held (a signal does what Python does by default).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["Stopped", "deferred", "hold", "drop", "main_thread"]

_held = {"depth": 0, "pending": None}  # `deferred` blocks open in the main thread; a signal they hold


class Stopped(KeyboardInterrupt):
    """SIGINT or SIGTERM, raised as a KeyboardInterrupt (every `finally` runs)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def main_thread() -> bool:
    """Whether this is the main thread (the one Python runs signal handlers in)."""
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A signal that `stop_signals` turns into `Stopped` waits for the end of this block (main
    thread only: elsewhere nothing changes); then it is raised."""
    if not main_thread():
        yield
        return
    _held["depth"] += 1
    try:
        yield
    finally:
        _held["depth"] -= 1
        pending = _held["pending"]
        if pending is not None and not _held["depth"]:
            _held["pending"] = None
            raise Stopped(pending)


def hold(signum: int) -> bool:
    """Inside a `deferred` block: keep `signum`, to be raised when the block ends (True);
    outside one: False (the caller raises it now). Called by the command line's handler."""
    if _held["depth"]:
        _held["pending"] = signum
        return True
    return False


def drop() -> None:
    """Forget a held signal (the command's signal handling has ended)."""
    _held["pending"] = None
