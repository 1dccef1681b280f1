"""Scenario files: where they live, ``--set`` overrides (TOML values, dotted or bare keys)."""

from __future__ import annotations

import copy
import importlib.resources
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import recsys
from ..checks import MAX_ID, MAX_SEED, MAX_USERS, finite_number, population_size, whole_number
from ..errors import ConfigError
from ..population import data_path
from ..sim.clock import MAX_MINUTES_PER_STEP

SECTIONS = (
    "scenario",
    "population",
    "env",
    "feed",
    "policy",
    "figures",
    "metrics",
    "topic",
    "interview",
    "content",
    "posts",
    "evidence",
    "sweep",
)
_ALIAS_SECTIONS = ("scenario", "population", "env", "policy")
_ABSENT = object()
_COUNT, _SHARE = (whole_number, 1, MAX_ID), (finite_number, 0.0, 1.0)
# the settings whose type and range a scenario's check enforces, from its file or a --set
SETTINGS: dict[str, tuple] = {
    "scenario.steps": _COUNT,
    "scenario.seed": (whole_number, 0, MAX_SEED),
    "population.users": (population_size, 1, MAX_USERS),  # and what the memory holds (checks.BYTES_PER_USER)
    "population.core_users": (whole_number, 0, MAX_ID),
    "population.activation": _SHARE,
    "population.core_activation": _SHARE,
    "population.regular_activation": _SHARE,
    "population.graph_seed": (whole_number, 0, MAX_SEED),
    "population.graph_mean_following": (finite_number, 0.0, MAX_USERS),  # no one follows more than everyone
    "env.minutes_per_step": (whole_number, 1, MAX_MINUTES_PER_STEP),
    "env.start_hour": (whole_number, 0, 23),
    "env.feed_size": _COUNT,
    "env.activation": _SHARE,  # or "activity" (WORDS)
    "feed.sample_from": _COUNT,
    "policy.core_users": (whole_number, 0, MAX_ID),
    "policy.abm.post_rate": _SHARE,
    "policy.abm.core_post_rate": _SHARE,
    "policy.abm.cascade_p": _SHARE,
    "policy.abm.cascade_half_life": (finite_number, 0.0, MAX_ID),  # steps, or "none" (WORDS)
    "policy.comment_votes.vote_rate": _SHARE,
    "metrics.every": _COUNT,
    "metrics.every_full": _COUNT,
    "interview.every": _COUNT,
}
WORDS = {"env.activation": ("activity",), "policy.abm.cascade_half_life": ("none", "")}  # a number's other values
CHOICES = {"env.recsys": recsys.NAMES}  # the settings that are one of some names


# =========================================================================== config files


def scenario_dir() -> Path:
    """The folder of the shipped scenario files (package data of oasis_gym.envs)."""
    return Path(str(importlib.resources.files("oasis_gym.scenarios").joinpath("configs")))


def list_scenarios() -> list[str]:
    """Names of the shipped scenario files, sorted."""
    return sorted(p.stem for p in scenario_dir().glob("*.toml"))


def scenario_path(name_or_path: str | Path) -> Path:
    """A shipped scenario by name, or a .toml file path."""
    p = Path(name_or_path)
    if p.suffix == ".toml" and p.is_file():
        return p
    cand = scenario_dir() / f"{p.name}.toml"
    if p.suffix != ".toml" and cand.is_file():
        return cand
    raise FileNotFoundError(
        f"no scenario {str(name_or_path)!r}: shipped ones are {list_scenarios()}, or give the path of a .toml file"
    )


def parse_value(text: str) -> Any:
    """A --set value: TOML syntax (numbers, booleans, strings, arrays), else the raw text."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_sets(items: Sequence[str]) -> dict[str, Any]:
    """["key=value", ...] -> {key: parsed value}."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = parse_value(value.strip())
    return out


def _resolve_key(config: Mapping[str, Any], key: str) -> list[str]:
    parts = key.split(".")
    if len(parts) > 1:
        if parts[0] not in config and parts[0] not in SECTIONS:
            raise KeyError(f"unknown section {parts[0]!r} in {key!r}; sections: {sorted(config)}")
        return parts
    hits = [s for s in _ALIAS_SECTIONS if isinstance(config.get(s), Mapping) and key in config[s]]
    if len(hits) == 1:
        return [hits[0], key]
    if not hits:
        raise KeyError(
            f"unknown setting {key!r}: none of [{'], ['.join(_ALIAS_SECTIONS)}] has it; "
            f"write section.key (e.g. env.{key}) to add one"
        )
    raise KeyError(f"ambiguous setting {key!r} (in {hits}); write e.g. {hits[0]}.{key}")


def apply_overrides(config: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict:
    """A deep copy of `config` with the (dotted or bare) keys of `overrides` set."""
    cfg = copy.deepcopy(dict(config))
    for key, value in overrides.items():
        path = _resolve_key(cfg, key)
        node = cfg
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise KeyError(f"{key!r}: {part!r} is a value, not a table")
        _check_override(key, node.get(path[-1]), value, WORDS.get(".".join(path), ()))
        node[path[-1]] = value
    return cfg


def _numbers(value: Any):
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, float):
        yield value


def _check_override(key: str, old: Any, new: Any, words: tuple = ()) -> None:
    """No NaN or infinity; a setting that is a number stays one (or one of its `words`), a
    true/false one stays so."""
    for v in _numbers(new):
        finite_number(v, key)

    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if isinstance(old, bool) and not isinstance(new, bool):
        raise ConfigError(f"{key}: expected true or false, got {new!r}")
    if number(old) and not number(new) and new not in words:
        raise ConfigError(f"{key}: expected a number, got {new!r}")


def _setting(config: Mapping[str, Any], key: str) -> Any:
    node: Any = config
    for part in key.split("."):
        node = node.get(part, _ABSENT) if isinstance(node, Mapping) else _ABSENT
    return node


def check_settings(config: Mapping[str, Any]) -> None:
    """Raise `ConfigError` (one line naming the setting) if a setting of `SETTINGS` has a
    value of the wrong type or out of its range, or one of `CHOICES` is none of its names."""
    for key, (check, low, high) in SETTINGS.items():
        node = _setting(config, key)
        if node is not _ABSENT and node not in WORDS.get(key, ()):
            check(node, key, low, high)
    for key, names in CHOICES.items():
        node = _setting(config, key)
        if node is not _ABSENT and node not in names:
            raise ConfigError(f"{key}: expected one of {list(names)}, got {node!r}")


def _data_file(name: str) -> Path:
    """A file path as given if it exists, else a data file shipped in oasis_gym/data."""
    p = Path(name)
    return p if p.is_file() else data_path(name)
