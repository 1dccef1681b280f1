"""Ctrl-C (SIGINT) and SIGTERM, the one home of both for every command: each is raised as a
`Stopped` (a KeyboardInterrupt, so every `finally` runs) while `stop_signals` is active, once;
later ones are ignored until the block ends, so what a command is finishing (a journal's last
commit, an output's renames) is not cut short. The exit code of a stopped command is
128 + the signal (130, 143: `exit_code`), as a shell reports a process the signal ended.

`deferred` holds a signal that arrives inside its block until the block ends: the renames
that install an output (`oasis_gym.outputs`) happen all together or not at all. It and
`Stopped` are the core's (`oasis_gym.signal_hold`, which a journal's commit uses too),
re-exported here.

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
from collections.abc import Iterator

from ..signal_hold import Stopped, deferred, drop, hold, main_thread

__all__ = ["Stopped", "Finished", "stop_signals", "deferred", "signum_of", "signal_name", "exit_code", "starting"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_last = {"signum": None}  # the last signal `stop_signals` took (a plain KeyboardInterrupt then is its)


class Finished(Stopped):
    """A signal that came once a command's work was done, while it printed its summary."""


@contextlib.contextmanager
def stop_signals(active: bool = True) -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM raise `Stopped` (a KeyboardInterrupt), once:
    later ones are ignored until the block ends. Only in the main thread (elsewhere, or not
    `active`, nothing changes)."""
    if not active or not main_thread():
        yield
        return

    def handler(signum, frame):
        for s in SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        _last["signum"] = signum
        if hold(signum):  # raised when the `deferred` block ends
            return
        raise Stopped(signum)

    _last["signum"] = None
    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        drop()
        for s, old in previous.items():  # (after a command's block: ignored until the process ends)
            signal.signal(s, signal.SIG_IGN if old is _starting else old)


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
    if main_thread() and _command_argv() is not None:
        for s in SIGNALS:
            if signal.getsignal(s) in (signal.SIG_DFL, signal.default_int_handler):
                signal.signal(s, _starting)


def signal_name(err: BaseException) -> str:
    """``"SIGINT"`` or ``"SIGTERM"``: the name of the signal of `err`."""
    return signal.Signals(signum_of(err)).name


def exit_code(err: BaseException) -> int:
    """128 + the signal of `err`: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + signum_of(err)
