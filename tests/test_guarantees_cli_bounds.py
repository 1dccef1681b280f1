"""Every numeric option of every command has a finite range, stated in its --help and checked
before any compute; the Python API checks the same ranges.

A red-team pass found unbounded work (`train recommender-v0 --users 1000000000` allocating
until the memory ran out, `--cem-iterations 10**9`), values ending in a torch traceback after
the tuning compute (`--seed 4294967296`, `--learning-rate 1e10`, `--rule-logit 1e300`), a
sweep value refused only when its run came (`--param env.recsys=reddit,bogus`) and a sweep over
1e308 whose plot crashed with no table written. The command-line cases of the real command in a
subprocess: tests/test_guarantees_cli_inputs.py (`BAD`).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys

import gymnasium
import pytest

import oasis_gym
from oasis_gym.checks import MAX_SEED, bounds_text
from oasis_gym.cli import main
from oasis_gym.cli.parser import build_parser
from oasis_gym.errors import ConfigError

# the options that take no number: names, paths, settings, addresses (every other option with a
# value and no fixed choices must state and check a range)
NOT_NUMBERS = {
    "--llm-model",
    "--llm-endpoint",
    "--recsys",
    "--db",
    "--logdir",
    "--resume",
    "--scenario",
    "--set",
    "--figures",
    "--out",
    "--param",
    "--address",
    "--recommender",  # run --recommender RUN / --moderator RUN: a run folder; --agent NAME: a policy of it
    "--moderator",
    "--agent",
    "--agents",  # scratch --agents ppo,sac: names; --baselines DIR: a benchmark's folder
    "--baselines",
}
# what a command needs besides the option to parse
REQUIRED = {"report": ["run.db"], "import": ["oasis.db", "--out", "ours.db"], "sweep": ["group_polarization"]}


def _options(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, (*path, name))
        elif action.option_strings and action.nargs != 0 and action.choices is None:
            yield path, action


OPTIONS = {f"{' '.join(path)} {a.option_strings[-1]}": (path, a) for path, a in _options(build_parser())}
NUMERIC = sorted(k for k, (_, a) in OPTIONS.items() if a.option_strings[-1] not in NOT_NUMBERS)


def _past(low, high) -> list[str]:
    """Values just past each bound, a NaN and a text that is no number."""
    if isinstance(low, int) and isinstance(high, int):
        return [str(low - 1), str(high + 1), "nan", "abc"]
    return [repr(low - max(1.0, abs(low))), repr(high + max(1.0, abs(high))), "nan", "inf", "abc"]


def test_every_command_has_numeric_options_and_the_walk_sees_them_all():
    commands = {path for path, _ in OPTIONS.values()}
    assert {("run",), ("report",), ("import",), ("sweep",), ("train", "recommender"), ("train", "moderator-v0"),
            ("benchmark", "moderator")} <= commands  # fmt: skip
    assert len(NUMERIC) > 100


@pytest.mark.parametrize("key", NUMERIC)
def test_every_numeric_option_states_its_range_and_refuses_a_value_past_it(key, capsys, monkeypatch, tmp_path):
    """Refused by the parser itself: one line and exit code 2 before any command starts."""
    monkeypatch.chdir(tmp_path)  # (a file named like a value could be taken for a profile file)
    path, action = OPTIONS[key]
    flag = action.option_strings[-1]
    low, high = getattr(action.type, "bounds", (None, None))
    assert low is not None and math.isfinite(low) and math.isfinite(high), f"{key}: no finite range"
    assert f"in {bounds_text(low, high)}" in " ".join((action.help or "").split()), f"{key}: --help states no range"
    prefix = "x=" if action.metavar == "KEY=VALUE" else ""  # train --agent-param KEY=VALUE
    for value in _past(low, high):
        with pytest.raises(SystemExit) as stop:
            main([*path, *REQUIRED.get(path[0], []), flag, prefix + value])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and len(err.strip().splitlines()) == 1, (value, err)
        assert err.startswith(f"oasis-gym {' '.join(path)}: error: argument {flag}"), (value, err)


def test_python_api_checks_the_same_ranges_before_building_anything():
    """Through the Python API too: training settings and env arguments are refused at once."""
    from oasis_gym.train import moderator, recommender, v1

    with pytest.raises(ConfigError, match="at most 10,000,000 users"):
        recommender.Args(users=10**9)
    with pytest.raises(ConfigError, match="--n-steps"):
        moderator.Args(n_steps=10**9)
    for field, value in (("cem_iterations", 10**9), ("max_steps", 10**9), ("n_epochs", 10**9), ("seed", 2**32),
                         ("action_std", 1e300), ("learning_rate", 1e10), ("rule_logit", 1e300)):  # fmt: skip
        with pytest.raises(ConfigError, match="--" + field.replace("_", "-")):
            v1.Args(**{field: value}).check()
    with pytest.raises(ValueError, match=f"past {MAX_SEED}"):
        v1.Args(seed=MAX_SEED).check()  # its 32 envs' seeds go past what numpy takes
    for env_id in ("oasis_gym/Recommender-v0", "oasis_gym/Moderator-v0"):
        with pytest.raises(ConfigError, match="at most 10,000,000 users"):
            gymnasium.make(env_id, users=10**9)
    with pytest.raises(ConfigError, match="at most 10,000,000 users"):
        oasis_gym.envs.twitter_v0.parallel_env(users=10**9)


def test_a_sweep_whose_figures_cannot_be_drawn_writes_its_tables_and_says_so(tmp_path):
    """A sweep over 1e308 ran every run, then died in its plot (LinAlgError) with no table
    written, and its resume the same: now the tables are written and the summary says, in one
    line, that the plot cannot be drawn; exit code 0, first run and resume alike."""
    argv = ["sweep", "group_polarization", "--param", "rho=1e308", "--seeds", "1", "--steps", "1", "--out", "sw"]
    for extra in ([], ["--resume"]):
        done = subprocess.run(
            [sys.executable, "-m", "oasis_gym.cli", *argv, "--quiet", *extra],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        said = [line for line in done.stdout.splitlines() if line.startswith("No plot: ")]
        assert len(said) == 1 and "the tables hold them all" in said[0], done.stdout
        names = {p.name for p in (tmp_path / "sw").iterdir()}
        assert {"runs.csv", "summary.csv", "summary.json"} <= names and not any(n.endswith(".png") for n in names)
        assert json.loads((tmp_path / "sw" / "summary.json").read_text())["params"] == {
            "policy.abm.opinion_params.rho": [1e308]
        }
