"""A newcomer's second hour (issue 54): runs that never share a TensorBoard folder, and no LLM
engine for a run whose LLM users never act. Real subprocesses, SQLite files and event files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from llm_fixtures import tiny_model_dir  # noqa: F401 - a session fixture (a tiny real model)

ABM = ["--users", "30", "--steps", "2", "--policy", "abm", "--activation", "0.5", "--quiet"]


def cli(cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m oasis_gym.cli ARGS` in `cwd`."""
    cmd = [sys.executable, "-m", "oasis_gym.cli", *map(str, args)]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def events(folder: Path) -> list[Path]:
    """The TensorBoard event files under `folder`."""
    return sorted(folder.rglob("events.out.tfevents.*"))


def test_two_journals_of_one_name_get_two_tensorboard_folders(tmp_path):
    """`--db out/sub/run.db` and `--db other/run.db` both wrote into runs/run/episode_0."""
    for db in ("out/sub/run.db", "other/run.db"):
        (tmp_path / db).parent.mkdir(parents=True)
        assert cli(tmp_path, "run", *ABM, "--db", db).returncode == 0
    first, second = events(tmp_path / "runs" / "run"), events(tmp_path / "runs" / "run-2")
    assert len(first) == 1 and len(second) == 1
    res = cli(tmp_path, "run", "--resume", "other/run.db", "--steps", "3", "--quiet", "--json")
    assert res.returncode == 0, res.stderr  # a resumed run writes where it wrote before
    assert json.loads(res.stdout)["logdir"] == str(Path("runs", "run-2"))
    assert events(tmp_path / "runs" / "run") == first and len(events(tmp_path / "runs" / "run-2")) == 2


def test_a_logdir_of_another_journals_run_is_refused_before_anything_runs(tmp_path):
    assert cli(tmp_path, "run", *ABM, "--db", "a.db", "--logdir", "tb").returncode == 0
    before = events(tmp_path / "tb")
    res = cli(tmp_path, "run", *ABM, "--db", "b.db", "--logdir", "tb")
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert "tb" in lines[0] and "a.db" in lines[0] and "another --logdir" in lines[0]
    assert not (tmp_path / "b.db").exists() and events(tmp_path / "tb") == before


def test_a_journal_run_again_replaces_its_own_logs_only_with_overwrite(tmp_path):
    """Two runs of one journal with --overwrite left both runs' event files in one folder."""
    assert cli(tmp_path, "run", *ABM, "--db", "a.db", "--logdir", "tb").returncode == 0
    (old,) = events(tmp_path / "tb")
    assert cli(tmp_path, "run", *ABM, "--db", "a.db", "--logdir", "tb", "--overwrite").returncode == 0
    (new,) = events(tmp_path / "tb")
    assert new != old and not old.exists()
    (tmp_path / "a.db").unlink()  # the journal gone, its logs stay its own output: replaced only with --overwrite
    res = cli(tmp_path, "run", *ABM, "--db", "a.db", "--logdir", "tb")
    assert res.returncode == 2 and "--overwrite" in res.stderr and events(tmp_path / "tb") == [new]
    assert cli(tmp_path, "run", *ABM, "--db", "a.db").returncode == 0  # the default folder: runs/a
    assert len(events(tmp_path / "runs" / "a")) == 1


def test_a_folder_without_our_marker_loses_nothing_to_a_new_run(tmp_path):
    """A new run clears its journal's earlier logs: only where our marker said they are ours."""
    (tmp_path / "tb" / "mine" / "empty").mkdir(parents=True)
    assert cli(tmp_path, "run", *ABM, "--db", "a.db", "--logdir", "tb").returncode == 0
    assert (tmp_path / "tb" / "mine" / "empty").is_dir() and len(events(tmp_path / "tb")) == 1


def test_a_run_whose_llm_users_never_act_starts_no_engine(tmp_path):
    """`oasis-gym run --users 100 --steps 3` waited ~30 s for vLLM and made 0 LLM decisions; its
    summary said the steps took 0.1 s. Now neither vLLM nor transformers is even imported."""
    code = (
        "import sys\nfrom oasis_gym.cli import main\n"
        "rc = main(['run', '--users', '100', '--steps', '3', '--db', 'run.db', '--json'])\n"
        "engines = sorted(m for m in sys.modules if m.split('.')[0] in ('vllm', 'transformers'))\n"
        "print(rc, engines)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    line, tail = res.stdout.strip().splitlines()
    data = json.loads(line)
    assert tail == "0 []", tail  # neither vLLM nor transformers was imported
    assert data.get("llm", {}).get("agents", 0) == 0 and "engine_start_s" not in data
    assert data["seconds"] >= data["steps_s"] > 0  # the whole run's time, and the steps' part of it
    assert "LLM engine" not in res.stderr


def test_the_engine_starts_at_the_first_llm_decision_and_its_time_is_stated(tmp_path, tiny_model_dir):  # noqa: F811
    args = ["run", "--users", "12", "--steps", "2", "--policy", "llm", "--activation", "1", "--db", "run.db"]
    res = cli(tmp_path, *args, "--llm-backend", "transformers", "--llm-model", tiny_model_dir, "--json")
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads(res.stdout)
    assert data["llm"]["agents"] == 24 and data["engine_start_s"] > 0
    assert data["seconds"] >= data["engine_start_s"] + data["steps_s"]
    res = cli(tmp_path, *args, "--overwrite", "--llm-backend", "transformers", "--llm-model", tiny_model_dir)
    assert res.returncode == 0 and "LLM engine start " in res.stdout.splitlines()[0], res.stdout
