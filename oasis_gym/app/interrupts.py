"""Ctrl-C (SIGINT) and SIGTERM, the one home of both for every command: each is raised as a
`Stopped` (a KeyboardInterrupt, so every `finally` runs) while `stop_signals` is active, once;
later ones are ignored until the block ends, so what a command is finishing (a journal's last
commit, an output's renames) is not cut short. The exit code of a stopped command is
128 + the signal (130, 143: `exit_code`), as a shell reports a process the signal ended.

`deferred` holds a signal that arrives inside its block until the block ends: the renames
that install an output (`oasis_gym.outputs`) happen all together or not at all.

The command line (`oasis_gym.cli`) activates `stop_signals` around every command; what each
one says when stopped is the command's (`cli.interrupt`, `scenarios.sweep_store`). Before
that, while the command loads its modules and reads its arguments, `starting` (called by
`import oasis_gym` in a process started as the command) ends it at once with one line: nothing
has run or been written yet. Once the command's `stop_signals` block has ended, the process
ignores both (it is ending, with its own line and exit code).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["Stopped", "Finished", "stop_signals", "deferred", "signum_of", "signal_name", "exit_code", "starting"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_held = {"depth": 0, "pending": None}  # `deferred` blocks open in the main thread; a signal they hold
_last = {"signum": None}  # the last signal `stop_signals` took (a plain KeyboardInterrupt then is its)


class Stopped(KeyboardInterrupt):
    """SIGINT or SIGTERM, raised as a KeyboardInterrupt (every `finally` runs)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Finished(Stopped):
    """A signal that came once a command's work was done, while it printed its summary."""


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
        _last["signum"] = signum
        if _held["depth"]:
            _held["pending"] = signum  # raised when the `deferred` block ends
            return
        raise Stopped(signum)

    _last["signum"] = None
    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        _held["pending"] = None
        for s, old in previous.items():  # (after a command's block: ignored until the process ends)
            signal.signal(s, signal.SIG_IGN if old is _starting else old)


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
    """The signal that stopped a command: `err`'s, else the last one `stop_signals` took (a
    library that catches the `Stopped` and raises a plain KeyboardInterrupt), else SIGINT."""
    return getattr(err, "signum", None) or _last["signum"] or signal.SIGINT


def _starting(signum, frame) -> None:
    """`starting`'s handler: the one line, and the exit at once (nothing to finish yet)."""
    argv = _command_argv() or []
    words = argv[:2] if argv[:1] == ["train"] else argv[:1]
    name = " ".join(["oasis-gym", *(w for w in words if not w.startswith("-"))])
    line = (
        f"{name}: stopped by {signal.Signals(signum).name} while starting; nothing was run or written; "
        f"run it again: {shlex.join(['oasis-gym', *argv])}\n"
    )
    os.write(2, line.encode(errors="replace"))
    os._exit(128 + signum)


def _command_argv() -> list[str] | None:
    """The arguments of this process when it was started as the command (`oasis-gym ...`,
    `python -m oasis_gym[.cli] ...`), else None."""
    orig = list(getattr(sys, "orig_argv", []))
    if "-m" in orig[1:]:
        at = orig.index("-m", 1)
        return orig[at + 2 :] if orig[at + 1 : at + 2] in (["oasis_gym"], ["oasis_gym.cli"]) else None
    return list(sys.argv[1:]) if sys.argv and os.path.basename(sys.argv[0]) == "oasis-gym" else None


def starting() -> None:
    """In a process started as the command (`oasis-gym`, `python -m oasis_gym[.cli]`; called
    by `import oasis_gym`, its first import), until its `stop_signals` block begins: SIGINT and
    SIGTERM end the process at once, with one line and exit code 128 + the signal (it was
    loading its modules or reading its arguments: nothing was run or written)."""
    if _main_thread() and _command_argv() is not None:
        for s in SIGNALS:
            if signal.getsignal(s) in (signal.SIG_DFL, signal.default_int_handler):
                signal.signal(s, _starting)


def signal_name(err: BaseException) -> str:
    """``"SIGINT"`` or ``"SIGTERM"``: the name of the signal of `err`."""
    return signal.Signals(signum_of(err)).name


def exit_code(err: BaseException) -> int:
    """128 + the signal of `err`: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + signum_of(err)
