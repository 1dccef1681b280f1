"""A newcomer's first hour with the command line (issue 31): every command shows its progress
on stderr (none with --quiet), ends with a short summary naming its outputs and the next
command (the JSON line only behind --json, stdout then machine-readable), and every command
and argument explains itself in --help; `oasis-gym --version` and `python -m oasis_gym` work.

Each command runs for real in a subprocess (`python -m oasis_gym.cli`) with small settings.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from oasis_fixture import build_oasis_db

from oasis_gym.app.console import Summary, timed
from oasis_gym.cli import build_parser

COMMANDS = ("run", "train", "report", "import", "sweep")
RUN = ["run", "--users", "60", "--steps", "2", "--policy", "abm", "--activation", "0.5", "--db", "run.db"]
SWEEP = ["sweep", "reddit_herd_effect", "--param", "herd_weight=0,0.5", "--seeds", "2", "--set", "users=36"]
SWEEP += ["--steps", "2", "--out", "sw"]
SCENARIO = ["run", "--scenario", "reddit_herd_effect", "--set", "users=40", "--steps", "2", "--db", "herd.db"]


def oasis(cwd: Path, *argv: str, module: str = "oasis_gym.cli") -> subprocess.CompletedProcess:
    """`python -m MODULE ARGV` in `cwd`."""
    res = subprocess.run([sys.executable, "-m", module, *argv], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A folder with an OASIS database; the tests run each command in it, in order of need."""
    path = tmp_path_factory.mktemp("first_hour")
    build_oasis_db(path / "oasis.db", users=12, steps=6, per_step=25)
    return path


# --------------------------------------------------------------------------- help and version


def test_top_level_help_names_every_command_and_version_works(tmp_path):
    """The top-level help named 2 of 5 subcommands; --version and python -m oasis_gym failed."""
    text = oasis(tmp_path, "--help").stdout
    listed = text.split("positional arguments:")[1].split("options:")[0]
    for command in COMMANDS:
        assert f"\n    {command} " in listed, (command, listed)
    assert "--version" in text and "first steps:" in text
    for module in ("oasis_gym.cli", "oasis_gym"):
        assert oasis(tmp_path, "--version", module=module).stdout.strip() == f"oasis-gym {version('oasis-gym')}"


def _actions(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, (*path, name))
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield path, action


def test_every_argument_of_every_command_says_what_it_is():
    """report's db, import's --minutes-per-step and --seed (and others) had no help."""
    missing = [
        (" ".join(path), action.option_strings[0] if action.option_strings else action.dest)
        for path, action in _actions(build_parser())
        if not (action.help and action.help.strip())
    ]
    assert not missing, missing


def test_every_command_that_computes_takes_quiet_and_json():
    """`train recommender-v0` / `moderator-v0` had no --quiet (an error naming no command)."""
    options: dict[str, set[str]] = {}
    for path, action in _actions(build_parser()):
        options.setdefault(" ".join(path), set()).update(action.option_strings)
    computing = [
        name for name in options if name.split(" ")[0] in ("run", "report", "import", "sweep", "train", "benchmark")
    ]
    assert {"train recommender-v0", "train moderator-v0", "train recommender", "benchmark moderator"} <= set(computing)
    lacking = [name for name in computing if not {"--quiet", "--json"} <= options[name]]
    assert not lacking, lacking


# --------------------------------------------------------------------------- summaries, --json, --quiet


def _summary(stdout: str, *outputs: str, next_command: str) -> None:
    """A human summary: its Outputs naming `outputs`, its Next naming `next_command`, no JSON."""
    lines = stdout.strip().splitlines()
    assert not any(line.lstrip().startswith("{") for line in lines), stdout
    text = stdout.split("Outputs:\n", 1)[1]
    shown, nxt = text.split("Next:\n", 1)
    assert all(o in shown for o in outputs), (outputs, shown)
    assert next_command in nxt, nxt


def _json_lines(stdout: str) -> list[dict]:
    """Every stdout line parses as one JSON object (machine-readable)."""
    lines = stdout.strip().splitlines()
    assert lines
    return [json.loads(line) for line in lines]


def test_every_command_ends_with_its_outputs_and_the_next_command(folder):
    """Every command ended in a JSON line, without a summary or a next step."""
    res = oasis(folder, *RUN, "--quiet")
    _summary(res.stdout, "run.db", "runs/run", next_command="oasis-gym report run.db")
    assert "tensorboard --logdir runs/run" in res.stdout and "oasis-gym run --resume run.db --steps 4" in res.stdout
    assert res.stdout.startswith("Ran 2 steps of 60 users in ")
    res = oasis(folder, "report", "run.db", "--quiet")
    _summary(res.stdout, "run_report/summary.txt", "actions.png", next_command="cat run_report/summary.txt")
    res = oasis(folder, "import", "oasis.db", "--out", "ours.db", "--quiet")
    _summary(res.stdout, "ours.db", next_command="oasis-gym run --resume ours.db --steps 27")
    assert res.stdout.startswith("Imported oasis.db (twitter, at step 7) in ")
    res = oasis(folder, "report", "oasis.db", "--quiet")
    _summary(res.stdout, "oasis_report/summary.txt", next_command="oasis-gym import oasis.db --out")
    res = oasis(folder, *SWEEP, "--quiet")
    _summary(res.stdout, "sw/summary.csv", "sw/runs.csv", "sw/effect_vs_herd_weight.png", next_command="--scenario")
    assert "herd_weight=0.5: user_up_minus_control " in res.stdout
    res = oasis(folder, *SCENARIO, "--quiet", "--no-tensorboard")
    _summary(res.stdout, "herd.db", next_command="oasis-gym report herd.db")


def test_json_keeps_stdout_machine_readable(folder):
    (line,) = _json_lines(oasis(folder, *RUN[:-1], "j.db", "--quiet", "--json").stdout)
    assert line["db"] == "j.db" and line["steps"] == 2
    (line,) = _json_lines(oasis(folder, "report", "j.db", "--quiet", "--json").stdout)
    assert line["out"] == "j_report" and "j_report/summary.txt" in line["files"]
    (line,) = _json_lines(oasis(folder, "import", "oasis.db", "--out", "j_ours.db", "--quiet", "--json").stdout)
    assert line["out"] == "j_ours.db" and line["step"] == 7
    lines = _json_lines(oasis(folder, *SWEEP[:-1], "j_sw", "--quiet", "--json").stdout)
    assert len(lines) == 3 and lines[-1]["points"] == 2 and lines[0]["point"]  # a line per grid point, then the end
    (line,) = _json_lines(oasis(folder, *SCENARIO[:-1], "j_herd.db", "--quiet", "--no-tensorboard", "--json").stdout)
    assert line["scenario"] == "reddit_herd_effect"


def test_progress_goes_to_stderr_and_quiet_silences_it(folder):
    """A sweep printed one JSON line per grid point and no bar: now a bar over grid points x
    seeds with a rate and an ETA on stderr; a report a bar over its parts."""
    res = oasis(folder, *SWEEP[:-1], "p_sw")
    assert "sweep reddit_herd_effect: 100%" in res.stderr and "4/4 [" in res.stderr
    elapsed_eta, rate = res.stderr.split("4/4 [", 1)[1].split("]", 1)[0].split(", ")[:2]
    assert "<" in elapsed_eta  # tqdm's elapsed<remaining: the ETA
    assert rate.endswith(("run/s", "s/run"))  # (tqdm says s/run below one run a second: a busy machine)
    res = oasis(folder, "report", "run.db", "--out", "p_report")
    assert "report: 100%" in res.stderr and "part" in res.stderr
    for argv in (
        [*RUN[:-1], "q.db", "--quiet"],
        ["report", "q.db", "--quiet"],
        ["import", "oasis.db", "--out", "q_ours.db", "--quiet"],
        [*SWEEP[:-1], "q_sw", "--quiet"],
        [*SCENARIO[:-1], "q_herd.db", "--quiet"],
    ):
        assert oasis(folder, *argv).stderr == "", argv


def test_a_long_step_without_a_count_is_announced_and_timed_a_quick_one_says_nothing(capsys):
    """The model's one-time conversion showed only a GGUF bar: a step of its own, timed."""
    with timed("converting the model", after=0):
        pass
    with timed("a quick step", after=30):
        pass
    with timed("a quiet step", after=0, quiet=True):
        pass
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "converting the model ..." and err[1].startswith("converting the model: done in ")
    assert len(err) == 2
    s = Summary("Did it.", [("a.db", "the journal")], [("oasis-gym report a.db", "plots")], {"db": "a.db"})
    assert s.lines() == ["Did it.", "Outputs:", "  a.db  the journal", "Next:", "  oasis-gym report a.db  # plots"]


def test_a_scenario_run_without_db_writes_its_own_journal_not_run_db(tmp_path):
    """`run --scenario` wrote run.db, the file README command 1 made, and then raised."""
    (tmp_path / "run.db").write_bytes(b"command 1's journal stands in here")
    res = oasis(tmp_path, "run", "--scenario", "reddit_herd_effect", "--steps", "1", "--quiet", "--no-tensorboard")
    assert (tmp_path / "reddit_herd_effect.db").is_file() and "reddit_herd_effect.db" in res.stdout
    assert (tmp_path / "run.db").read_bytes() == b"command 1's journal stands in here"
    assert res.stdout.startswith("Ran the scenario reddit_herd_effect: 1 step of ")


def test_how_a_run_shows_itself_is_not_saved_with_it(tmp_path):
    """A run started with --json (or --quiet) resumed printing JSON: the resume's own command line says."""
    oasis(tmp_path, *RUN, "--quiet", "--json", "--no-tensorboard")
    res = oasis(tmp_path, "run", "--resume", "run.db", "--steps", "3", "--no-tensorboard")
    assert res.stdout.startswith("Resumed 1 step of 60 users (now at step 3 of 3) in ")
    assert "1/1 [" in res.stderr  # its progress bar
