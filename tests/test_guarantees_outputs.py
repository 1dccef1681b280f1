"""Guarantees of every file the commands write (`oasis_gym/outputs.py`): a command writes only
into paths it created or that hold its own earlier output, refuses anything else with one line
naming it (exit code 2) before any compute, replaces its own earlier output only with
--overwrite, and writes under a temporary name renamed into place (a killed command leaves
nothing, or its previous output). A sweep keeps each finished run, --resume continues it to
the tables of an uninterrupted sweep, byte for byte, and SIGINT / SIGTERM stop it cleanly.

Real files in tmp_path, real subprocess runs of `python -m oasis_gym.cli` where the behaviour
is the command line's, small settings.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from oasis_fixture import build_oasis_db

SWEEP = ["sweep", "reddit_herd_effect", "--param", "herd_weight=0,0.5", "--seeds", "2", "--set", "users=36"]
SWEEP += ["--steps", "2"]
TRAIN = ["train", "recommender-v0", "--users", "60", "--max-cycles", "4", "--timesteps", "16", "--n-envs", "1"]
TRAIN += ["--n-steps", "8", "--eval-seeds", "1000"]
MINE = b"the user's own bytes\n"


def cli(cwd: Path, *args, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m oasis_gym.cli ARGS` in `cwd`."""
    cmd = [sys.executable, "-m", "oasis_gym.cli", *map(str, args)]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def killed_in(cwd: Path, module: str, name: str, after: int, *args) -> subprocess.CompletedProcess:
    """The command line run with `module.name` replaced by a function that SIGKILLs the process
    on its call number `after` + 1 (a kill in the middle of writing)."""
    code = (
        "import os, signal, sys, importlib\n"
        f"m = importlib.import_module({module!r}); orig = m.{name}; calls = [0]\n"
        "def kill(*a, **k):\n"
        "    calls[0] += 1\n"
        f"    if calls[0] > {after}:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return orig(*a, **k)\n"
        f"m.{name} = kill\n"
        "from oasis_gym.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=cwd, capture_output=True, text=True)


def refused(res: subprocess.CompletedProcess, path: str) -> None:
    """Exit code 2 and one line on stderr naming `path`, no traceback."""
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert path in lines[0], lines[0]


def visible(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` but hidden ones (markers, temporary entries): name -> bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    }


def leftovers(folder: Path) -> list[str]:
    """Temporary entries of killed commands anywhere under `folder`."""
    return [p.name for p in folder.rglob(".oasis-gym-tmp-*")]


@pytest.fixture(scope="module")
def journal(tmp_path_factory) -> Path:
    """A finished 2-step run's journal (with recorded metrics), copied by each test."""
    folder = tmp_path_factory.mktemp("journal")
    args = ["run", "--users", "20", "--steps", "2", "--policy", "abm", "--activation", "0.5", "--db", "run.db"]
    res = cli(folder, *args, "--quiet", "--logdir", "tb")
    assert res.returncode == 0, res.stderr
    return folder / "run.db"


def _copy(journal: Path, tmp_path: Path) -> Path:
    (tmp_path / "run.db").write_bytes(journal.read_bytes())
    return tmp_path / "run.db"


# --------------------------------------------------------------------------- report


def test_report_never_replaces_a_users_summary_or_plot_and_its_own_only_with_overwrite(journal, tmp_path):
    _copy(journal, tmp_path)
    (tmp_path / "run_report").mkdir()
    (tmp_path / "run_report" / "summary.txt").write_bytes(MINE)  # the default --out of run.db
    refused(cli(tmp_path, "report", "run.db"), "run_report/summary.txt")
    refused(cli(tmp_path, "report", "run.db", "--overwrite"), "run_report/summary.txt")
    assert (tmp_path / "run_report" / "summary.txt").read_bytes() == MINE
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "actions.png").write_bytes(MINE)
    refused(cli(tmp_path, "report", "run.db", "--out", "mine"), "mine/actions.png")
    assert (tmp_path / "mine" / "actions.png").read_bytes() == MINE
    assert visible(tmp_path / "mine") == {"actions.png": MINE}  # nothing written beside it either

    (tmp_path / "ours").mkdir()
    (tmp_path / "ours" / "notes.txt").write_bytes(MINE)  # a user's file beside the report
    assert cli(tmp_path, "report", "run.db", "--out", "ours").returncode == 0
    first = visible(tmp_path / "ours")
    assert {"summary.txt", "actions.png", "notes.txt"} <= set(first)
    refused(cli(tmp_path, "report", "run.db", "--out", "ours"), "--overwrite")
    assert visible(tmp_path / "ours") == first
    res = cli(tmp_path, "run", "--resume", "run.db", "--steps", "4", "--quiet")  # (metrics recorded)
    assert res.returncode == 0, res.stderr
    assert cli(tmp_path, "report", "run.db", "--out", "ours", "--overwrite").returncode == 0
    assert "steps: 4 " in (tmp_path / "ours" / "summary.txt").read_text()
    assert (tmp_path / "ours" / "notes.txt").read_bytes() == MINE


def test_a_report_killed_while_writing_leaves_the_previous_report(journal, tmp_path):
    _copy(journal, tmp_path)
    assert cli(tmp_path, "report", "run.db", "--out", "r").returncode == 0
    before = visible(tmp_path / "r")
    assert cli(tmp_path, "run", "--resume", "run.db", "--steps", "4", "--quiet").returncode == 0
    res = killed_in(
        tmp_path, "oasis_gym.metrics.report_plots", "_save", 1, "report", "run.db", "--out", "r", "--overwrite"
    )
    assert res.returncode == -signal.SIGKILL, res.stderr
    assert visible(tmp_path / "r") == before  # the earlier report, whole
    assert cli(tmp_path, "report", "run.db", "--out", "r", "--overwrite").returncode == 0
    assert "steps: 4 " in (tmp_path / "r" / "summary.txt").read_text()
    assert leftovers(tmp_path) == []  # the killed report's temporary folder went with the next report


# --------------------------------------------------------------------------- sweep


def test_sweep_never_replaces_a_users_plot_and_its_own_only_with_overwrite(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "effect_vs_herd_weight.png").write_bytes(MINE)
    (out / "notes.txt").write_bytes(MINE)
    refused(cli(tmp_path, *SWEEP, "--out", "mine"), "mine/effect_vs_herd_weight.png")
    refused(cli(tmp_path, *SWEEP, "--out", "mine", "--overwrite"), "mine/effect_vs_herd_weight.png")
    assert visible(out) == {"effect_vs_herd_weight.png": MINE, "notes.txt": MINE}

    (out / "effect_vs_herd_weight.png").unlink()
    assert cli(tmp_path, *SWEEP, "--out", "mine").returncode == 0
    first = visible(out)
    assert {"runs.csv", "summary.csv", "summary.json", "effect_vs_herd_weight.png", "notes.txt"} <= set(first)
    refused(cli(tmp_path, *SWEEP, "--out", "mine"), "--overwrite")
    assert visible(out) == first
    again = [*SWEEP[:5], "3", *SWEEP[6:]]  # three seeds: other tables
    assert cli(tmp_path, *again, "--out", "mine", "--overwrite").returncode == 0
    assert json.loads((out / "summary.json").read_text())["seeds"] == [200, 201, 202]
    assert (out / "notes.txt").read_bytes() == MINE


def _tables(out: Path) -> dict[str, bytes]:
    return {n: (out / n).read_bytes() for n in ("runs.csv", "summary.csv", "summary.json", "effect_vs_herd_weight.png")}


def test_an_interrupted_sweep_resumes_to_the_tables_of_an_uninterrupted_one(tmp_path, monkeypatch):
    from oasis_gym.scenarios import sweep

    kw = dict(params=["herd_weight=0,0.5"], seeds=4, seed_start=7, sets={"users": 36}, steps=2)
    sweep.run_sweep("reddit_herd_effect", out=tmp_path / "whole", **kw)
    calls, real, stop_at = [], sweep.effects, [4]

    def effects(*args):
        calls.append(1)
        if len(calls) == stop_at[0]:
            raise KeyboardInterrupt  # Ctrl-C (the command line raises SIGTERM as one too)
        return real(*args)

    monkeypatch.setattr(sweep, "effects", effects)
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep("reddit_herd_effect", out=tmp_path / "cut", **kw)
    assert len(list((tmp_path / "cut" / "runs").iterdir())) == 3 and not (tmp_path / "cut" / "runs.csv").exists()
    with pytest.raises(FileExistsError, match="--resume"):  # a finished run is not redone by accident
        sweep.run_sweep("reddit_herd_effect", out=tmp_path / "cut", **kw)
    calls.clear()
    stop_at[0] = None
    sweep.run_sweep("reddit_herd_effect", out=tmp_path / "cut", resume=True, **kw)
    assert len(calls) == 5  # only the runs not finished before
    assert _tables(tmp_path / "cut") == _tables(tmp_path / "whole")


def test_sigint_or_sigterm_stops_a_sweep_with_one_line_and_its_resume_finishes_it(tmp_path):
    """The signal lands while the sweep keeps its second run, paused there (no race with the
    runs' speed, which a loaded machine decides): one line, the first run kept, and the resume
    it names ends with the tables of an uninterrupted sweep."""
    from test_guarantees_interrupts import stopped  # (that module imports this one)

    args = [*SWEEP[:5], "3", *SWEEP[6:]]  # 6 runs
    for signum, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        out = tmp_path / signum.name
        argv = [*args, "--out", str(out), "--quiet"]  # (no progress bar)
        returncode, lines, _ = stopped(
            tmp_path, argv, signum, pause=("oasis_gym.scenarios.sweep_store", "SweepRuns.keep", 2)
        )
        assert returncode == code and len(lines) == 1, (returncode, lines)
        assert "Traceback" not in lines[0] and signum.name in lines[0], lines
        assert len(list((out / "runs").iterdir())) == 1  # the first run, kept at once
        resume = shlex.split(lines[0].split("continue with: ", 1)[1])
        assert resume[:2] == ["oasis-gym", "sweep"] and resume[-1] == "--resume"
    res = cli(tmp_path, *resume[1:])
    assert res.returncode == 0, res.stderr
    assert cli(tmp_path, *args, "--out", "whole").returncode == 0
    assert _tables(tmp_path / "SIGTERM") == _tables(tmp_path / "whole")


def test_a_resume_with_other_settings_or_nothing_to_resume_is_one_line(tmp_path):
    assert cli(tmp_path, *SWEEP, "--out", "s").returncode == 0
    other = [*SWEEP[:5], "3", *SWEEP[6:]]
    refused(cli(tmp_path, *other, "--out", "s", "--resume"), "--seeds")
    refused(cli(tmp_path, *SWEEP, "--out", "none", "--resume"), "none")
    assert not (tmp_path / "none").exists()


# --------------------------------------------------------------------------- run --figures, --logdir


def test_run_figures_never_replace_a_users_file_and_their_own_only_with_overwrite(tmp_path):
    (tmp_path / "notes.json").write_bytes(MINE)
    scenario = ["run", "--scenario", "reddit_herd_effect", "--set", "users=40", "--steps", "2", "--quiet"]
    refused(cli(tmp_path, *scenario, "--db", "a.db", "--figures", "notes.json"), "notes.json")
    refused(cli(tmp_path, *scenario, "--db", "a.db", "--figures", "notes.json", "--overwrite"), "notes.json")
    assert (tmp_path / "notes.json").read_bytes() == MINE and not (tmp_path / "a.db").exists()  # before any compute
    assert cli(tmp_path, *scenario, "--db", "b.db", "--figures", "f.json").returncode == 0
    first = (tmp_path / "f.json").read_bytes()
    assert json.loads(first)["groups"]
    refused(cli(tmp_path, *scenario, "--db", "c.db", "--figures", "f.json"), "f.json")
    res = cli(tmp_path, *scenario, "--db", "b.db", "--figures", "f.json", "--overwrite", "--set", "users=60")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "f.json").read_bytes() != first and (tmp_path / "notes.json").read_bytes() == MINE


def test_a_logdir_that_is_a_file_or_holds_someone_elses_files_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_bytes(MINE)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "paper.tex").write_bytes(MINE)
    run = ["run", "--users", "20", "--steps", "2", "--policy", "abm", "--quiet", "--overwrite", "--db", "r.db"]
    refused(cli(tmp_path, *run, "--logdir", "notes.txt"), "notes.txt")
    refused(cli(tmp_path, *run, "--logdir", "mine"), "mine/paper.tex")
    assert visible(tmp_path / "mine") == {"paper.tex": MINE} and (tmp_path / "notes.txt").read_bytes() == MINE
    for _ in range(2):  # a logdir of its own journal's earlier run: replaced with --overwrite (issue 54)
        assert cli(tmp_path, *run, "--logdir", "tb").returncode == 0
    assert len(list((tmp_path / "tb").rglob("events.out.tfevents.*"))) == 1


# --------------------------------------------------------------------------- train


def test_train_never_replaces_a_users_model_eval_or_curve(tmp_path):
    out = tmp_path / "rec"
    out.mkdir()
    for name in ("model.zip", "eval.json", "learning_curve.png", "notes.txt"):
        (out / name).write_bytes(MINE)
    refused(cli(tmp_path, *TRAIN, "--out", "rec", timeout=600), "rec/eval.json")
    (out / "eval.json").unlink()
    refused(cli(tmp_path, *TRAIN, "--out", "rec", "--overwrite", timeout=600), "rec/learning_curve.png")
    (out / "learning_curve.png").unlink()
    refused(cli(tmp_path, *TRAIN, "--out", "rec", timeout=600), "rec/model.zip")
    assert visible(out) == {"model.zip": MINE, "notes.txt": MINE}


def test_train_replaces_its_own_earlier_output_only_with_overwrite(tmp_path, monkeypatch, capsys):
    import torch

    from oasis_gym import cli as cli_main
    from oasis_gym.scenarios.misinfo_stream import MisinfoScenario
    from oasis_gym.train import common

    torch.set_num_threads(1)
    tiny = MisinfoScenario(initial_true=8, initial_misinfo=4, stream_rate=1.5, n_outlets=5, n_misinfo_accounts=3)
    orig = common.EnvConfig.kwargs  # the scenario's 1 000 users are too slow for a test
    monkeypatch.setattr(common.EnvConfig, "kwargs", lambda self: {**orig(self), "scenario": tiny, "activation": 0.3})
    out = tmp_path / "rec"
    out.mkdir()
    (out / "notes.txt").write_bytes(MINE)
    assert cli_main.main([*TRAIN, "--out", str(out)]) == 0
    first = visible(out)
    assert {"model.zip", "eval.json", "learning_curve.png"} <= set(first)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        cli_main.main([*TRAIN, "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1 and "--overwrite" in err and str(out) in err
    assert visible(out) == first
    assert cli_main.main([*TRAIN, "--out", str(out), "--overwrite", "--seed", "1"]) == 0
    assert (out / "model.zip").read_bytes() != first["model.zip"]
    assert (out / "notes.txt").read_bytes() == MINE
    assert json.loads((out / "eval.json").read_text())["train"]["model"] == str(out / "model.zip")


# --------------------------------------------------------------------------- import


@pytest.fixture
def oasis_db(tmp_path) -> Path:
    return build_oasis_db(tmp_path / "oasis.db", users=12, steps=6, per_step=25)


def _is_journal(path: Path) -> bool:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)  # (leaves a -wal and -shm beside it, as users do)
    try:
        return conn.execute("SELECT COUNT(*) FROM oasis_id_map").fetchone()[0] > 0
    finally:
        conn.close()


def test_import_into_a_folder_and_never_over_a_users_file(oasis_db, tmp_path):
    res = cli(tmp_path, "import", "oasis.db", "--out", "newdir/")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "newdir").is_dir() and _is_journal(tmp_path / "newdir" / "oasis.db")
    (tmp_path / "existing").mkdir()
    assert cli(tmp_path, "import", "oasis.db", "--out", "existing").returncode == 0
    assert _is_journal(tmp_path / "existing" / "oasis.db")
    (tmp_path / "mine.db").write_bytes(MINE)
    refused(cli(tmp_path, "import", "oasis.db", "--out", "mine.db", "--overwrite"), "mine.db")
    assert (tmp_path / "mine.db").read_bytes() == MINE
    refused(cli(tmp_path, "import", "oasis.db", "--out", "existing/"), "--overwrite")
    assert cli(tmp_path, "import", "oasis.db", "--out", "existing/", "--overwrite").returncode == 0


def test_an_import_killed_while_writing_leaves_nothing_and_its_retry_succeeds(oasis_db, tmp_path):
    mod, fn = "oasis_gym.platform.oasis_import", "_copy_trace"
    res = killed_in(tmp_path, mod, fn, 0, "import", "oasis.db", "--out", "ours.db")
    assert res.returncode == -signal.SIGKILL, res.stderr
    assert not os.path.lexists(tmp_path / "ours.db") and not list(tmp_path.glob("ours.db*"))
    res = cli(tmp_path, "import", "oasis.db", "--out", "ours.db")
    assert res.returncode == 0, res.stderr
    assert _is_journal(tmp_path / "ours.db") and leftovers(tmp_path) == []
    before = (tmp_path / "ours.db").read_bytes()  # an earlier import, replaced by a killed --overwrite: kept
    res = killed_in(tmp_path, mod, fn, 0, "import", "oasis.db", "--out", "ours.db", "--overwrite")
    assert res.returncode == -signal.SIGKILL
    assert (tmp_path / "ours.db").read_bytes() == before
