"""Profile files by extension and the data files shipped in ``oasis_gym/data``."""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path
from typing import Any

import numpy as np

from .model import Population, ProfileError
from .parsing import _parse_activity, _read_csv
from .reddit_json import load_reddit_json
from .twitter_csv import load_twitter_csv


def load_profiles(path: str | Path, **kwargs: Any) -> Population:
    """Load a profile file by extension: ``.csv`` (Twitter) or ``.json`` (Reddit)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return load_twitter_csv(path, **kwargs)
    if suffix == ".json":
        return load_reddit_json(path, **kwargs)
    raise ProfileError(
        path, None, None, f"unknown profile format {suffix!r}: expected .csv (Twitter) or .json (Reddit)"
    )


# --------------------------------------------------------------------------- data files


def data_path(name: str) -> Path:
    """Path of a data file shipped in ``oasis_gym/data`` (OASIS sample data, Apache-2.0)."""
    if Path(name).name != name or name.startswith("."):
        raise ValueError(f"data file name must be a plain file name, got {name!r}")
    p = Path(str(importlib.resources.files("oasis_gym.data").joinpath(name)))
    if not p.is_file():
        raise FileNotFoundError(f"no packaged data file {name!r} (looked at {p})")
    return p


@functools.lru_cache(maxsize=1)
def _rhythm_cached() -> tuple[float, ...]:
    path = data_path("user_all_id_time.csv")
    header, rows = _read_csv(path, ("activity_level_frequency",))
    j = header.index("activity_level_frequency")
    total = _parse_activity(path, [r[j] for r in rows]).sum(axis=0)
    return tuple((total / total.max()).tolist())


def oasis_daily_rhythm() -> np.ndarray:
    """(24,) hourly activity profile, max 1: summed activity counts of OASIS' 111 real users.

    Taken from the shipped ``user_all_id_time.csv`` (the hour-of-day posting counts that
    OASIS feeds its time engine), so synthetic users follow a real daily rhythm.
    """
    return np.array(_rhythm_cached(), dtype=np.float64)
