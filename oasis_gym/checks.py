"""Checks of the values a user gives (command-line options, scenario settings, training
settings, the actions given to an env's `step`): types, ranges, finiteness, sizes.

Each check returns the value it accepts (converted: ``"12"`` -> 12) or raises `ConfigError`
with a one-line message, prefixed with the setting's name when one is given. `argtype` makes
an argparse type of a check, whose error argparse prints as its one-line error (exit code 2).
The checks run before any work, so a bad value costs nothing.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .errors import ConfigError

__all__ = [
    "MAX_ID",
    "MAX_USERS",
    "MAX_SEED",
    "BYTES_PER_USER",
    "NAME_MAX",
    "PATH_MAX",
    "whole_number",
    "finite_number",
    "population_size",
    "path_name",
    "ray_address",
    "action_array",
    "argtype",
    "int_option",
    "float_option",
    "bounds_text",
    "with_bounds",
    "OneLineParser",
]

MAX_ID = 2**31 - 1  # users, posts, steps: ids and counts are packed in 31 bits (platform.store)
NAME_MAX = 255  # bytes of one file or folder name (Linux, macOS and Windows file systems)
PATH_MAX = 4095  # bytes of a whole path (Linux)
# a synthetic population: at most MAX_USERS users (ten times the 1M-user scale bench/throughput/million.py
# measures), and no more than the memory available holds at BYTES_PER_USER each (measured by
# bench/throughput/million.py: 553 MB peak RSS at 200,000 users, the interpreter's ~130 MB included): a
# lower bound of what a run needs, so a population refused for memory would never have fit
MAX_USERS = 10_000_000
BYTES_PER_USER = 2_100
MAX_SEED = 2**32 - 1  # seeds: what numpy's legacy seeding takes (np.random.seed, SB3's set_random_seed)


def _fail(name: str | None, message: str):
    raise ConfigError(f"{name}: {message}" if name else message)


def _bounds(low, high) -> str:
    if low is not None and high is not None:
        return f" in {bounds_text(low, high)}"
    return f" >= {low}" if low is not None else f" <= {high}" if high is not None else ""


def _read(value, parse, name: str | None, message: str):
    """A number, or the number `parse` reads from a text; anything else fails with `message`."""
    if isinstance(value, str):
        try:
            return parse(value.strip())
        except ValueError:
            _fail(name, message)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(name, message)
    return value


def _shown(value) -> str:
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**40 else f"a {len(str(value))}-digit number"
    return text if len(text) <= 80 else text[:60] + "..." + text[-12:]


def _within(number, low, high) -> bool:
    return (low is None or number >= low) and (high is None or number <= high)


def whole_number(value, name: str | None = None, low: int | None = None, high: int | None = None) -> int:
    """`value` (an int, an integral float or the text of an int) as an int in [low, high]."""
    message = f"expected a whole number{_bounds(low, high)}, got {_shown(value)}"
    number = _read(value, int, name, message)
    if isinstance(number, float):
        if not (math.isfinite(number) and number.is_integer()):
            _fail(name, message)
        number = int(number)
    if not _within(number, low, high):
        _fail(name, message)
    return number


def finite_number(value, name: str | None = None, low: float | None = None, high: float | None = None) -> float:
    """`value` (a number or its text) as a finite float in [low, high] (NaN and infinities fail)."""
    message = f"expected a finite number{_bounds(low, high)}, got {_shown(value)}"
    number = _read(value, float, name, message)
    try:
        number = float(number)
    except OverflowError:  # an int past the float range
        number = math.inf
    if not (math.isfinite(number) and _within(number, low, high)):
        _fail(name, message)
    return number


def available_memory() -> int | None:
    """Bytes of memory a new allocation can get now: Linux's MemAvailable, lowered to what a
    cgroup (v2) memory limit leaves; None where neither is known."""
    found = []
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            found += [int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:")]
    except (OSError, ValueError, IndexError):
        pass
    try:
        cgroup = Path("/sys/fs/cgroup")
        limit = (cgroup / "memory.max").read_text().strip()
        if limit.isdigit():
            found.append(int(limit) - int((cgroup / "memory.current").read_text()))
    except (OSError, ValueError):
        pass
    return max(0, min(found)) if found else None


def population_size(
    value, name: str | None = None, low: int = 1, high: int = MAX_USERS, available: int | None = None
) -> int:
    """`value` as a synthetic population's user count: a whole number in [low, high] whose
    population fits in the memory `available` (bytes; default: `available_memory()`)."""
    n = whole_number(value, name, low)
    if n > high:
        _fail(name, f"a synthetic population has at most {high:,} users, got {_shown(n)}")
    available = available_memory() if available is None else available
    if available is not None and n * BYTES_PER_USER > available:
        _fail(
            name,
            f"{n:,} users need about {n * BYTES_PER_USER / 2**30:.1f} GiB of memory and "
            f"{available / 2**30:.1f} GiB is available: at most {available // BYTES_PER_USER:,} users here",
        )
    return n


def path_name(value, name: str | None = None) -> str:
    """`value` as a path the operating system can take: not empty, no NUL, every part of it
    at most NAME_MAX bytes and the whole at most PATH_MAX (no file system access)."""
    if not isinstance(value, str) or not value or "\0" in value:
        _fail(name, f"expected a file path, got {value!r}")
    size = len(os.fsencode(value))
    longest = max((p for p in value.replace(os.sep, "/").split("/")), key=lambda p: len(os.fsencode(p)))
    if len(os.fsencode(longest)) > NAME_MAX:
        part = longest if len(longest) <= 40 else longest[:20] + "..." + longest[-12:]
        _fail(name, f"the name {part!r} is {len(os.fsencode(longest))} bytes long; a file name has at most {NAME_MAX}")
    if size > PATH_MAX:
        _fail(name, f"the path is {size} bytes long; a path has at most {PATH_MAX}")
    return value


_HOST_PORT = re.compile(r"^(?:ray://)?(?:[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5})$")


def ray_address(value, name: str | None = "--address") -> str:
    """A Ray cluster's address as `ray.init(address=...)` takes it: "auto", HOST:PORT (what
    `ray start --head` prints) or ray://HOST:PORT (Ray Client)."""
    text = str(value).strip()
    m = _HOST_PORT.match(text)
    if text != "auto" and not (m and 1 <= int(m.group(1)) <= 65535):
        _fail(name, f"give the Ray head node's HOST:PORT (as `ray start --head` prints it, e.g. 10.0.0.1:6379), "
                    f"ray://HOST:PORT for Ray Client, or auto; got {text!r}")  # fmt: skip
    return text


def _span(bound: np.ndarray) -> str:
    """A bound of an action space as text: one number when every value has it, else the list."""
    values = np.unique(bound)
    return f"{values[0]:g}" if values.size == 1 else str(bound.tolist())


def _position(at: tuple[int, ...], batched: bool) -> str:
    """Where a value of an action is: "index 5", in a batch "env 2, index 5"."""
    inner = at[1:] if batched else at
    parts = [f"env {at[0]}"] if batched else []
    if inner:
        parts.append(f"index {inner[0] if len(inner) == 1 else inner}")
    return ", ".join(parts)


def action_array(value, name: str, shape: tuple[int, ...], low, high, codes: bool, batched: bool = False) -> np.ndarray:
    """An action (`batched`: one per env along the first axis) checked against its space: an
    array of exactly `shape`, `codes`: integers in [low, high] (floats only when integral,
    such as 2.0) as int64, else finite numbers as float32, values outside [low, high]
    clipped to it (as RL libraries do). NaN, infinities, numbers beyond float32, bools, texts
    and any other shape fail with `name`, the first bad value, where it is and what is allowed.
    Vectorized: one pass of numpy over the whole batch."""
    low, high = np.asarray(low), np.asarray(high)

    def fail(got: str):
        bounds, rows = f"[{_span(low)}, {_span(high)}]", ", one row per env" if batched else ""
        if codes:
            allowed = f"integer codes in {bounds} of shape {shape}{rows} (integral floats such as 2.0 too)"
        else:
            allowed = f"finite numbers of shape {shape}{rows} (values outside {bounds} are clipped to it)"
        _fail(name, f"expected {allowed}, got {got}")

    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError):  # ragged lists, objects numpy cannot hold
        fail(" ".join(_shown(value).split()))  # on one line
    if arr.dtype.kind not in "iuf":  # bools, complex numbers, texts, objects, None
        fail(f"values of dtype {arr.dtype}" + (f" such as {_shown(arr.ravel()[:1].tolist()[0])}" if arr.size else ""))
    if arr.shape != tuple(shape):
        fail(f"an array of shape {arr.shape}")
    if codes:
        bad = (arr < low) | (arr > high)
        if arr.dtype.kind == "f":
            bad |= ~np.isfinite(arr) | (arr != np.round(arr))
        out = arr
    else:
        with np.errstate(over="ignore"):  # a number beyond float32 becomes inf: refused below
            out = arr.astype(np.float32)
        bad = ~np.isfinite(out)
    if bad.any():
        at = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad)[0]), arr.shape))
        fail(f"{arr[at]} at {_position(at, batched)}")
    if codes:
        return out.astype(np.int64)
    return np.clip(out, low.astype(np.float32), high.astype(np.float32), out=out)  # out: a copy (astype)


def argtype(check: Callable, label: str | None = None, **bounds) -> Callable[[str], object]:
    """An argparse type running `check(text, **bounds)`: a refused value becomes argparse's
    one-line error (``argument --seed: expected a whole number >= 0, got '-1'``). Its `bounds`
    attribute holds (low, high) where both are given (`with_bounds` states them in a help text)."""

    def parse(text: str):
        try:
            return check(text, **bounds)
        except ConfigError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parse.__name__ = label or check.__name__  # argparse names a failed type by it
    if bounds.get("low") is not None and bounds.get("high") is not None:
        parse.bounds = (bounds["low"], bounds["high"])
    return parse


def int_option(low: int, high: int) -> Callable[[str], int]:
    """An argparse type taking a whole number in [low, high] (`bounds`: (low, high))."""
    return argtype(whole_number, f"int in [{low}, {high}]", low=low, high=high)


def float_option(low: float, high: float) -> Callable[[str], float]:
    """An argparse type taking a finite number in [low, high] (`bounds`: (low, high))."""
    return argtype(finite_number, f"number in [{low}, {high}]", low=low, high=high)


def bounds_text(low, high) -> str:
    """How a help text states an option's range: ``[1, 2,147,483,647]``."""

    def shown(v) -> str:
        return f"{v:,}" if isinstance(v, int) else repr(float(v))

    return f"[{shown(low)}, {shown(high)}]"


def with_bounds(text: str, parse: Callable) -> str:
    """`text` (an option's help) followed by the range its argparse type `parse` takes."""
    span = f"in {bounds_text(*parse.bounds)}"
    return f"{text}; {span}" if text else span


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line (no usage block): ``PROG: error: ...``,
    exit code 2."""

    def error(self, message: str):
        """Print `message` as one line and exit with code 2."""
        self.exit(2, f"{self.prog}: error: {message}\n")
