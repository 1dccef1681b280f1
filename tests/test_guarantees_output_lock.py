"""One command writes an output folder at a time (`oasis_gym.outputs`, `outputs.files.hold_folder`).

A command holds an OS lock (`flock`) on its output folder itself from its check until it ends,
so a second command on that folder, in another process and under any name of the folder, is
refused with one line (exit code 2) before it computes anything; the lock dies with its
process. Two real processes: the first is held at a known point of its work (the
`test_guarantees_interrupts` pattern: a wrapped function writes a marker file and waits), the
second runs while it waits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_guarantees_interrupts import _PAUSED, WAIT_S
from test_guarantees_outputs import SWEEP, cli, refused, visible

from oasis_gym.outputs import OutputDir

RUN = ["run", "--users", "20", "--policy", "abm", "--activation", "0.5", "--quiet", "--no-tensorboard"]


def held(cwd: Path, argv: list[str], module: str, name: str, call: int) -> subprocess.Popen:
    """`oasis-gym ARGV` in `cwd`, stopped at call `call` of `module.name` (it waits there)."""
    marker = cwd / ".paused"
    code = _PAUSED.format(module=module, name=name, call=call, marker=str(marker))
    cmd = [sys.executable, "-c", code, *argv]
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + WAIT_S
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    marker.unlink()
    return proc


def _end(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.communicate()


@pytest.fixture()
def journal(tmp_path) -> Path:
    assert cli(tmp_path, *RUN, "--steps", "2", "--db", "run.db").returncode == 0
    return tmp_path / "run.db"


def test_a_second_command_on_a_folder_being_written_is_refused_until_the_first_ends(tmp_path, journal):
    """Two sweeps (or a sweep and a report) writing one folder at once interleaved their files;
    now the second is one line naming the folder and the first's pid, before any compute."""
    assert cli(tmp_path, *SWEEP, "--out", "s").returncode == 0
    before = visible(tmp_path / "s")
    # the first: replacing its earlier sweep, held at its first run (after the plan and its check)
    first = held(tmp_path, [*SWEEP, "--out", "s", "--overwrite"], "oasis_gym.scenarios.sweep", "load_scenario", 3)
    try:
        for argv in ([*SWEEP, "--out", "s", "--overwrite"], [*SWEEP, "--out", "s", "--resume"]):
            res = cli(tmp_path, *argv)
            refused(res, "s is being written by another oasis-gym command")
            assert f"(pid {first.pid})" in res.stderr
        os.symlink("s", tmp_path / "alias")  # another name of the folder sees the same lock
        refused(cli(tmp_path, *SWEEP, "--out", "alias", "--overwrite"), "being written by another oasis-gym command")
        refused(cli(tmp_path, "report", "run.db", "--out", "s"), "being written by another oasis-gym command")
        assert visible(tmp_path / "s") == before
    finally:
        _end(first)  # SIGKILL: the lock dies with its process
    assert cli(tmp_path, *SWEEP, "--out", "s", "--overwrite").returncode == 0


def test_a_report_being_written_blocks_a_second_report_into_its_folder(tmp_path, journal):
    first = held(tmp_path, ["report", "run.db", "--out", "r"], "oasis_gym.metrics.report_plots", "_save", 1)
    try:
        refused(cli(tmp_path, "report", "run.db", "--out", "r", "--overwrite"), "r is being written by another")
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=WAIT_S)
    assert not (tmp_path / "r").exists()  # the stopped first report left nothing, not even its folder
    assert cli(tmp_path, "report", "run.db", "--out", "r").returncode == 0


def test_one_process_shares_the_lock_and_a_folder_it_made_for_nothing_goes(tmp_path):
    first = OutputDir(tmp_path / "new" / "out", "report", ("summary.txt",)).check()
    second = OutputDir(tmp_path / "new" / "out", "report", ("summary.txt",)).check()  # the same process: no refusal
    second.write("summary.txt", b"ours\n")
    second.release()
    first.release()
    assert (tmp_path / "new" / "out" / "summary.txt").read_bytes() == b"ours\n"
    OutputDir(tmp_path / "other" / "out", "report", ("summary.txt",)).check().release()
    assert not (tmp_path / "other").exists()  # created by the check, nothing written: removed
