"""Scenario files: where they live, ``--set`` overrides (TOML values, dotted or bare keys)."""

from __future__ import annotations

import copy
import importlib.resources
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..population import data_path

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
        node[path[-1]] = value
    return cfg


def _data_file(name: str) -> Path:
    """A file path as given if it exists, else a data file shipped in oasis_gym/data."""
    p = Path(name)
    return p if p.is_file() else data_path(name)
