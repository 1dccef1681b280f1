"""Ctrl-C (SIGINT) and SIGTERM, the one home of both for every command: each is raised as a
`Stopped` (a KeyboardInterrupt, so every `finally` runs) while `stop_signals` is active, once;
later ones are ignored until the block ends, so what a command is finishing (a journal's last
commit, an output's renames) is not cut short. The exit code of a stopped command is
128 + the signal (130, 143: `exit_code`), as a shell reports a process the signal ended.

`deferred` holds a signal that arrives inside its block until the block ends: the renames
that install an output (`oasis_gym.outputs`) happen all together or not at all.

The command line (`oasis_gym.cli`) activates `stop_signals` around every command; what each
one says when stopped is the command's (`cli.interrupt`, `scenarios.sweep_store`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["Stopped", "stop_signals", "deferred", "signum_of", "signal_name", "exit_code"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_held = {"depth": 0, "pending": None}  # `deferred` blocks open in the main thread; a signal they hold


class Stopped(KeyboardInterrupt):
    """SIGINT or SIGTERM, raised as a KeyboardInterrupt (every `finally` runs)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def stop_signals(active: bool = True) -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM raise `Stopped` (a KeyboardInterrupt), once:
    later ones are ignored until the block ends. Only in the main thread (elsewhere, or not
    `active`, nothing changes)."""
    if not active or not _main_thread():
        yield
        return

    def handler(signum, frame):
        for s in SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        if _held["depth"]:
            _held["pending"] = signum  # raised when the `deferred` block ends
            return
        raise Stopped(signum)

    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        _held["pending"] = None
        for s, old in previous.items():
            signal.signal(s, old)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A signal that `stop_signals` turns into `Stopped` waits for the end of this block (main
    thread only: elsewhere nothing changes); then it is raised."""
    if not _main_thread():
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


def signum_of(err: BaseException) -> int:
    """The signal that stopped a command (a plain KeyboardInterrupt: SIGINT)."""
    return getattr(err, "signum", signal.SIGINT)


def signal_name(err: BaseException) -> str:
    """``"SIGINT"`` or ``"SIGTERM"``: the name of the signal of `err`."""
    return signal.Signals(signum_of(err)).name


def exit_code(err: BaseException) -> int:
    """128 + the signal of `err`: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + signum_of(err)
