"""Guarantees of every command stopped by Ctrl-C (SIGINT) or SIGTERM: one line on stderr, no
traceback, exit code 128 + the signal (130, 143), saying what is kept and the command that
continues or repeats it; and nothing half-written: a command's outputs are staged
(`oasis_gym.outputs`), so its previous output survives whole and a first output leaves nothing,
not even the folder it created. The signals have one home, `oasis_gym.app.interrupts`.

Each command runs for real in a subprocess; the signal is sent from the test once the command is
doing its work. Where that moment would be too short to hit, one function of the work is wrapped
to write a marker file and wait there (`paused`): the test waits for the marker as long as it
takes, then signals, so nothing depends on the machine's speed. Commands run with --quiet:
their progress (bars on stderr, `oasis_gym.app.console`) would come before the one line. `oasis-gym run`
stopped mid-run: tests/test_guarantees_cli_inputs.py; a sweep stopped while it runs:
tests/test_guarantees_outputs.py.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from oasis_fixture import build_oasis_db
from test_guarantees_journal import tables
from test_guarantees_outputs import cli, leftovers, visible

from oasis_gym.app.interrupts import Stopped, deferred, stop_signals
from oasis_gym.envs import twitter_v0
from oasis_gym.platform import Journal, Platform, PlatformConfig
from oasis_gym.platform.journal import read_meta
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.population import synthetic
from oasis_gym.sim import config as sim_config

SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143)]
WAIT_S = 300.0  # generous: how long a command may take to reach its marker
RUN = ["run", "--users", "20", "--policy", "abm", "--activation", "0.5", "--quiet", "--no-tensorboard"]
SWEEP = ["sweep", "reddit_herd_effect", "--param", "herd_weight=0,0.5", "--seeds", "2", "--set", "users=36"]
SWEEP += ["--steps", "2"]
TRAIN = ["train", "recommender-v0", "--users", "30", "--max-cycles", "2", "--n-steps", "4", "--n-envs", "1"]

_PAUSED = """\
import importlib, pathlib, sys, time
owner = importlib.import_module({module!r})
*path, name = {name!r}.split(".")  # a function of the module, or a method: "Class.method"
for part in path:
    owner = getattr(owner, part)
real, calls = getattr(owner, name), [0]
def paused(*args, **kwargs):
    calls[0] += 1
    if calls[0] == {call}:  # the work so far is done: say so, and wait for the signal
        pathlib.Path({marker!r}).write_text("working")
        time.sleep(600)
    return real(*args, **kwargs)
setattr(owner, name, paused)
from oasis_gym.cli import main
sys.exit(main(sys.argv[1:]))
"""


def stopped(cwd: Path, argv: list[str], signum: int, *, pause: tuple[str, str, int] | None = None, ready=None):
    """Run `oasis-gym ARGV` in `cwd`, send `signum` once it works, and return (exit code, stderr
    lines, stdout). `pause` = (module, function or "Class.method", call): that call writes a
    marker and waits (see the module's docstring); else `ready(proc)` returns once the command works."""
    marker = cwd / ".paused"
    if pause is not None:
        module, name, call = pause
        code = _PAUSED.format(module=module, name=name, call=call, marker=str(marker))
        cmd = [sys.executable, "-c", code, *argv]
    else:
        cmd = [sys.executable, "-m", "oasis_gym.cli", *argv]
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if pause is not None:
            deadline = time.monotonic() + WAIT_S
            while not marker.exists():
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.02)
            marker.unlink()
        else:
            ready(proc)
        os.kill(proc.pid, signum)
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, err.strip().splitlines(), out


def one_line(result: tuple, want_code: int, command: str, signum: int) -> str:
    """The stop's one line (`result`: `stopped`'s), checked: exit code, a single line on stderr
    naming the command and the signal, nothing on stdout."""
    code, lines, out = result
    assert code == want_code and out == "", (code, lines, out)
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    assert lines[0].startswith(f"oasis-gym {command}: stopped by {signal.Signals(signum).name}"), lines[0]
    return lines[0]


def again(line: str) -> list[str]:
    """The command the line says repeats it, as argv without the program name."""
    argv = shlex.split(line.split("run it again: ", 1)[1])
    assert argv[0] == "oasis-gym"
    return argv[1:]


def _copy(journal: Path, tmp_path: Path) -> Path:
    (tmp_path / "run.db").write_bytes(journal.read_bytes())
    return tmp_path / "run.db"


# --------------------------------------------------------------------------- the one home


def test_a_signal_inside_a_deferred_block_waits_for_its_end_then_stops():
    """The renames that install an output happen all together: a real SIGINT sent inside
    `deferred` is raised as `Stopped` only when the block ends."""
    done = []
    with pytest.raises(Stopped) as stop, stop_signals():
        with deferred():
            signal.raise_signal(signal.SIGINT)  # a real signal; its handler has run when this returns
            done.append("the rest of the block")
        done.append("after the block")  # never reached
    assert done == ["the rest of the block"] and stop.value.signum == signal.SIGINT


def test_both_commands_use_the_one_signal_home():
    from oasis_gym.cli import interrupt
    from oasis_gym.scenarios import sweep_cli as sweep

    assert interrupt.Stopped is Stopped and interrupt.stop_signals is stop_signals
    assert sweep.signum_of.__module__ == "oasis_gym.app.interrupts"


# --------------------------------------------------------------------------- report


@pytest.mark.parametrize("signum,code", SIGNALS)
def test_a_stopped_report_keeps_the_previous_report_whole(signum, code, journal, tmp_path):
    _copy(journal, tmp_path)
    assert cli(tmp_path, "report", "run.db", "--out", "r").returncode == 0
    before = visible(tmp_path / "r")
    argv = ["report", "run.db", "--out", "r", "--overwrite", "--quiet"]  # (no progress bar: the one line only)
    # paused before its second plot is saved: the first is written (in its staging folder)
    line = one_line(
        stopped(tmp_path, argv, signum, pause=("oasis_gym.metrics.report_plots", "_save", 2)), code, "report", signum
    )
    assert "no new report was written (r holds what it held before)" in line, line
    assert visible(tmp_path / "r") == before and leftovers(tmp_path) == []
    assert again(line) == argv and cli(tmp_path, *again(line)).returncode == 0


def test_a_stopped_first_report_leaves_nothing_not_even_its_folder(journal, tmp_path):
    _copy(journal, tmp_path)
    argv = ["report", "run.db", "--out", "new/report", "--quiet"]
    res = stopped(tmp_path, argv, signal.SIGINT, pause=("oasis_gym.metrics.report_plots", "_save", 2))
    line = one_line(res, 130, "report", signal.SIGINT)
    assert not (tmp_path / "new").exists() and leftovers(tmp_path) == []
    assert cli(tmp_path, *again(line)).returncode == 0 and (tmp_path / "new" / "report" / "summary.txt").is_file()


# --------------------------------------------------------------------------- import


@pytest.mark.parametrize("signum,code", SIGNALS)
def test_a_stopped_import_writes_nothing_and_its_retry_succeeds(signum, code, tmp_path):
    build_oasis_db(tmp_path / "oasis.db", users=12, steps=6, per_step=25)
    argv = ["import", "oasis.db", "--out", "newdir/", "--quiet"]
    # paused while the journal is written (its rows are in, OASIS's trace comes next)
    line = one_line(
        stopped(tmp_path, argv, signum, pause=("oasis_gym.platform.oasis_import", "_copy_trace", 1)),
        code,
        "import",
        signum,
    )
    assert "no journal was written (newdir/oasis.db is as it was before)" in line, line
    assert not (tmp_path / "newdir").exists() and leftovers(tmp_path) == []
    assert cli(tmp_path, *again(line)).returncode == 0 and (tmp_path / "newdir" / "oasis.db").is_file()


# --------------------------------------------------------------------------- sweep planning


@pytest.mark.parametrize("signum,code", SIGNALS)
def test_a_sweep_stopped_while_planned_runs_nothing_and_keeps_the_earlier_sweep(signum, code, tmp_path):
    assert cli(tmp_path, *SWEEP, "--out", "s").returncode == 0
    before = visible(tmp_path / "s")
    argv = [*SWEEP[:5], "3", *SWEEP[6:], "--out", "s", "--overwrite", "--quiet"]
    # paused at the second scenario load of the plan (the grid's settings are checked next)
    line = one_line(
        stopped(tmp_path, argv, signum, pause=("oasis_gym.scenarios.sweep", "load_scenario", 2)), code, "sweep", signum
    )
    assert "while planning the sweep: nothing was run or written" in line, line
    assert visible(tmp_path / "s") == before and leftovers(tmp_path) == []
    assert again(line) == argv


# --------------------------------------------------------------------------- run before its steps


def test_a_resume_stopped_before_its_steps_leaves_the_journal_as_it_was(journal, tmp_path):
    db = _copy(journal, tmp_path)
    before = tables(db)
    argv = ["run", "--resume", "run.db", "--steps", "4", "--quiet", "--no-tensorboard"]
    res = stopped(tmp_path, argv, signal.SIGTERM, pause=("oasis_gym.cli.run", "resumed_args", 1))
    line = one_line(res, 143, "run", signal.SIGTERM)
    assert "run.db is as it was; continue it with: " in line, line
    assert tables(db) == before
    command = shlex.split(line.split("continue it with: ", 1)[1])
    assert command == ["oasis-gym", *argv] and cli(tmp_path, *command[1:]).returncode == 0


# --------------------------------------------------------------------------- train


def _streaming(out: Path, name: str = "events.out.tfevents.*"):
    """`ready` for `stopped`: returns once the command streams `name` (SB3's TensorBoard
    events, a seed's folder) into its staging folder in `out`."""

    def ready(proc):
        deadline = time.monotonic() + WAIT_S
        while not list(out.glob(f".oasis-gym-tmp-*/**/{name}")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)

    return ready


def test_a_stopped_training_run_says_what_is_kept_and_leaves_nothing(tmp_path):
    """Training was a KeyboardInterrupt traceback (SIGTERM: a silent kill); then a stopped run
    left SB3's TensorBoard logs and checkpoints in --out (streamed there as it trained), and the
    next run needed --overwrite. Now they stream into the staging folder, which goes."""
    out = tmp_path / "t"
    argv = [*TRAIN, "--timesteps", "100000", "--quiet", "--out", str(out)]  # hours of training: stopped long before
    res = stopped(tmp_path, argv, signal.SIGINT, ready=_streaming(out))
    line = one_line(res, 130, "train recommender-v0", signal.SIGINT)
    assert f"nothing new was written ({out} holds what it held before)" in line, line
    assert not out.exists() and leftovers(tmp_path) == []  # not even the folder it created
    assert again(line) == argv  # no --overwrite needed: nothing of the stopped run is left


V1_TRAIN = ["--users", "100", "--max-steps", "5", "--n-envs", "2", "--n-steps", "10", "--batch-size", "20", "--quiet"]
V1_TRAIN += ["--cem-iterations", "1", "--cem-population", "2", "--tune-seeds", "5000", "--eval-seeds", "9000"]


def test_a_stopped_training_run_leaves_the_earlier_output_as_it_was(tmp_path):
    """The earlier run's model, eval.json, TensorBoard logs and checkpoints are replaced only
    when the new run ends: stopped midway (with --overwrite), every file is as it was."""
    out = tmp_path / "t"
    argv = ["train", "moderator", *V1_TRAIN, "--out", str(out)]
    assert cli(tmp_path, *argv, "--timesteps", "40").returncode == 0
    before = visible(out)
    assert {"model.zip", "eval.json", "learning_curve.png"} <= set(before)
    assert any(name.startswith("tb/") for name in before)
    res = stopped(tmp_path, [*argv, "--timesteps", "100000", "--overwrite"], signal.SIGTERM, ready=_streaming(out))
    one_line(res, 143, "train moderator", signal.SIGTERM)
    assert visible(out) == before and leftovers(tmp_path) == []


def test_a_stopped_benchmark_names_its_own_outputs_and_its_rerun_works(tmp_path):
    """A stopped benchmark said "model.zip, eval.json and learning_curve.png were not written":
    train's outputs, not its own; its seed folders stayed, half written."""
    out = tmp_path / "b"
    argv = ["benchmark", "moderator", "--seeds", "2", *V1_TRAIN, "--out", str(out)]
    res = stopped(tmp_path, [*argv, "--timesteps", "100000"], signal.SIGTERM, ready=_streaming(out, "seed_0"))
    line = one_line(res, 143, "benchmark", signal.SIGTERM)
    assert f"nothing new was written ({out} holds what it held before)" in line, line
    assert not out.exists() and leftovers(tmp_path) == []
    redo = cli(tmp_path, *argv, "--timesteps", "40")  # the same folder, no --overwrite: it runs
    assert redo.returncode == 0, redo.stderr[-2000:]
    assert (out / "results.json").is_file() and (out / "seed_0" / "model.zip").is_file()
    assert any((out / "seed_1" / "tb").rglob("events.out.tfevents.*")) and (out / "tb_band").is_dir()


def _signal_after(fn):
    """`fn`, then SIGINT to this thread (its handler has run when `raise_signal` returns)."""

    def wrapped(*args, **kwargs):
        out = fn(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)
        return out

    return wrapped


@pytest.mark.parametrize("pipelined", [True, False])
def test_a_signal_arriving_as_a_step_is_handed_to_the_journal_leaves_the_step_done(tmp_path, monkeypatch, pipelined):
    """SIGINT landing just after a step went to the journal's writer thread made the step raise,
    and memory was rolled back to the step before while the journal committed the step (found
    by a CI run's signal test: the journal was a step ahead of what the run said). From the
    hand-off on, the signal now waits until the step is counted as taken, and the step stays
    done: memory and journal agree, and the run goes on from there like one never stopped.
    The same for a run that commits in place (under PIPELINE_MIN_USERS users): the signal
    lands right after the step's COMMIT."""
    monkeypatch.setattr(sim_config, "PIPELINE_MIN_USERS", 0 if pipelined else 10**9)

    def run(db, stop_at=None):
        env = twitter_v0.parallel_env(users=60, max_cycles=10, db_path=str(db), activation=0.5)
        env.reset(seed=0)
        policy = ABMPolicy()
        policy.reset(env, np.arange(60), 0)
        with stop_signals():
            for step in range(6):
                if step == stop_at:
                    owner, name = (env.sim.journal._writer, "submit") if pipelined else (env.sim.journal, "_finish")
                    real = getattr(owner, name)
                    setattr(owner, name, _signal_after(real))
                    with pytest.raises(Stopped):
                        env.step_batch(policy.act(env, env.sim.obs))
                    setattr(owner, name, real)
                    assert env.sim.platform.step == step + 1  # the step is done in memory ...
                    continue
                env.step_batch(policy.act(env, env.sim.obs))
        env.close()
        assert read_meta(db)["step"] == 6  # ... and in the journal, once each

    run(tmp_path / "stopped.db", stop_at=3)
    run(tmp_path / "whole.db")
    assert tables(tmp_path / "stopped.db") == tables(tmp_path / "whole.db")


def test_a_signal_arriving_with_a_commit_in_place_leaves_the_step_done(tmp_path):
    """The same for a commit made in place (a new journal's first, or an unpipelined journal's):
    a signal right after its COMMIT no longer rolls the step back in memory (nor forgets a
    compact follow seed it committed)."""
    pf = Platform(PlatformConfig())
    pf.add_users(synthetic(50, seed=0))
    journal = Journal(str(tmp_path / "j.db"), pipelined=False)
    journal._finish = _signal_after(journal._finish)
    with stop_signals(), pytest.raises(Stopped):
        journal.commit_step(pf, advance_minutes=3)
    assert journal.steps_taken == 1 and pf.step == 1 and not pf.pending.new_users  # done in memory
    journal.close()
    assert read_meta(tmp_path / "j.db")["step"] == 1  # and in the journal
