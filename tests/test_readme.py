"""Every python example in README.md runs exactly as written (each on its own, as a reader
would paste it, in a fresh namespace and an empty working folder)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
EXAMPLES = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)


def test_the_readme_has_python_examples():
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_readme_python_example_runs_as_written(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = compile(EXAMPLES[index], f"README.md python example {index + 1}", "exec")
    namespace: dict = {"__name__": "__main__"}
    exec(code, namespace)  # noqa: S102 - the README's own code
    env = namespace.get("env")
    if env is not None:
        env.close()


TEXT = README.read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```", TEXT, re.S | re.M)
COMMAND_1 = next(line for line in BLOCKS[0][1].splitlines() if "pip install" in line and "oasis-gym run" in line)


def test_every_test_the_readme_names_exists():
    """The Guarantees name the tests that back them: each name must be a test of tests/."""
    named = set(re.findall(r"`(test_\w+)`", TEXT))
    tests = Path(__file__).resolve().parent
    defined = {n for p in tests.glob("test_*.py") for n in re.findall(r"^def (test_\w+)", p.read_text(), re.M)}
    assert len(named) >= 40 and not named - defined, sorted(named - defined)


def test_command_1_installs_what_every_documented_command_needs():
    """`oasis-gym train` failed after command 1 (it installed only the cpu extra)."""
    from oasis_gym.cli import build_parser

    extras = re.search(r'pip install -e "\.\[([\w,]+)\]"', COMMAND_1).group(1).split(",")
    assert {"cpu", "train"} <= set(extras)
    commands = set(re.findall(r"(?:^|&& |`)oasis-gym ([a-z]+)\b", TEXT, re.M))  # as commands, not words
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert commands <= set(sub.choices) and "train" in commands


def test_no_other_readme_block_writes_the_files_of_command_1():
    """A README block wrote run.db, the journal command 1 made, and then raised."""
    made = ("run.db", "runs/run", "run_report")  # command 1's journal, TensorBoard logs and report
    assert "--db run.db" in COMMAND_1 and COMMAND_1.endswith("oasis-gym report run.db --overwrite")
    for lang, code in BLOCKS[1:]:
        for name in made:
            assert name not in code, (lang, name, code[:200])


def test_command_1_runs_twice_in_a_row_as_written(tmp_path):
    """The second run of command 1 was refused (run.db exists and is an oasis-gym journal), and
    its report likewise. Its oasis-gym commands as written, twice in one folder, with a smaller
    ABM population in place of the hybrid one (no LLM engine in a test of the flags)."""
    import shlex
    import subprocess
    import sys

    commands = [shlex.split(c) for c in COMMAND_1.split(" && ") if c.startswith("oasis-gym ")]
    assert [c[1] for c in commands] == ["run", "report"]
    small = {"--users": "40", "--steps": "2", "--policy": "abm"}
    run = [small.get(prev, arg) for prev, arg in zip(["", *commands[0]], commands[0])]
    for _ in range(2):
        for argv in (run, commands[1]):
            res = subprocess.run(
                [sys.executable, "-m", "oasis_gym.cli", *argv[1:], "--quiet"],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert res.returncode == 0, (argv, res.stderr[-2000:])
    assert (tmp_path / "run.db").is_file() and (tmp_path / "run_report").is_dir()
    assert len(list((tmp_path / "runs" / "run").rglob("events.out.tfevents.*"))) == 1  # the first run's replaced
