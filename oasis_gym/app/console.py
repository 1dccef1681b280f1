"""What a command says to the person who ran it, in one home for every command.

- Progress on stderr while it works: a tqdm bar with a rate and an ETA (`bar`), or a timed step
  for work that has no count (`timed`: "converting the model ... done in 12.3 s"); nothing with
  ``--quiet``.
- At its end, on stdout, a short human summary (`Summary`): one line of what it did, its
  outputs (path and what each is) and the next commands to run; or, with ``--json``, one JSON
  line instead, so stdout stays machine-readable.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .interrupts import Finished, signum_of

__all__ = ["bar", "timed", "Summary", "duration", "quoted", "plural"]


class _NoBar:
    """The stand-in of a bar with ``--quiet``: takes tqdm's calls, shows nothing."""

    n = 0
    total = None

    def update(self, n: int = 1) -> None:
        self.n += n

    def __getattr__(self, name: str):  # set_postfix, set_description, close, refresh, ...
        return lambda *args, **kwargs: None

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def bar(total: int | None, desc: str, unit: str, *, quiet: bool = False, initial: int = 0):
    """A progress bar on stderr over `total` `unit`s (rate and ETA), or a silent stand-in with
    `quiet`; use it as a context manager or `close()` it."""
    if quiet:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, initial=initial, dynamic_ncols=True, file=sys.stderr)


def duration(seconds: float) -> str:
    """Seconds in words a person reads at a glance: "0.4 s", "12 s", "3 min 05 s", "1 h 02 min"."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


@contextlib.contextmanager
def timed(what: str, *, quiet: bool = False, after: float = 1.0) -> Iterator[None]:
    """A step without a count, timed on stderr: "<what> ..." once it has taken `after` seconds,
    then "<what>: done in 12 s" when it ends. A step done sooner says nothing (nor does one
    that fails sooner: a refused input stays one line); `after=0` announces it at once;
    nothing at all with `quiet`."""
    if quiet:
        yield
        return
    said = threading.Event()

    def announce() -> None:
        said.set()
        print(f"{what} ...", file=sys.stderr, flush=True)

    timer = threading.Timer(after, announce)
    timer.daemon = True
    start = time.perf_counter()
    if after > 0:
        timer.start()
    else:
        announce()
    try:
        yield
    finally:
        timer.cancel()
        if timer.is_alive():
            timer.join()  # an announcement under way ends before the step's last word
    if said.is_set():
        print(f"{what}: done in {duration(time.perf_counter() - start)}", file=sys.stderr, flush=True)


def plural(n: int, word: str) -> str:
    """ "1 step", "20 steps", "1,000 users": a count and its noun."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def quoted(argv: Sequence[str]) -> str:
    """A command line as a shell reads it back (names with spaces quoted)."""
    return shlex.join([str(a) for a in argv])


@dataclass
class Summary:
    """The end of a command: `done` (one line: what it did), `outputs` ((path, what it is)),
    `next` ((command, why)) and `data`, the JSON line ``--json`` prints instead."""

    done: str
    outputs: list[tuple[str, str]] = field(default_factory=list)
    next: list[tuple[str, str]] = field(default_factory=list)
    data: dict = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The summary as a person reads it."""
        out = [self.done]
        if self.outputs:
            out.append("Outputs:")
            width = max(len(p) for p, _ in self.outputs)
            out += [f"  {p.ljust(width)}  {what}" if what else f"  {p}" for p, what in self.outputs]
        if self.next:
            out.append("Next:")
            out += [f"  {c}  # {why}" if why else f"  {c}" for c, why in self.next]
        return out

    def show(self, as_json: bool = False, file=None) -> None:
        """Print it on stdout (`file`): the human lines, or with `as_json` the JSON line only. A
        signal meanwhile (`oasis_gym.app.interrupts`) is raised as `Finished`: the work is done."""
        try:
            text = json.dumps(self.data) if as_json else "\n".join(self.lines())
            print(text, file=file or sys.stdout, flush=True)
        except KeyboardInterrupt as err:
            raise Finished(signum_of(err)) from None
