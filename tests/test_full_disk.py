"""A disk that fills in the middle of `oasis-gym run`: a real full filesystem (a small tmpfs
mounted for the test; skipped where mounting is not permitted). The run ends with the journal's
one line and exit code 2, as other journal errors do, and once there is room again
`run --resume` finishes it exactly as an uninterrupted run would have."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest
from test_guarantees_journal import tables
from test_guarantees_outputs import cli

RUN = ["run", "--users", "200", "--policy", "abm", "--steps", "60", "--quiet", "--no-tensorboard"]


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs at tmp_path/disk (`grow()` makes it 64 MiB), unmounted at the end."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root needed): {mounted.stderr.decode().strip()}")

    def grow() -> None:
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)

    try:
        yield disk, grow
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_disk_filling_mid_run_ends_with_the_journal_line_and_the_run_resumes_exactly(small_disk, tmp_path):
    """It ended in an sqlite3.OperationalError traceback from the query indexes built at close,
    which hid the step's one-line JournalError."""
    disk, grow = small_disk
    full = cli(disk, *RUN, "--db", "run.db")
    lines = full.stderr.strip().splitlines()
    assert full.returncode == 2 and len(lines) == 1, full.stderr[-3000:]
    assert lines[0].startswith("oasis-gym run: error: run.db: a step failed to commit (database or disk is full)")
    grow()  # room again: the journal continues from the step it holds
    resumed = cli(disk, "run", "--resume", "run.db", "--steps", "60", "--quiet", "--no-tensorboard")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert cli(tmp_path, *RUN, "--db", "whole.db").returncode == 0
    assert tables(disk / "run.db") == tables(tmp_path / "whole.db")
    indexes = "SELECT count(*) FROM sqlite_master WHERE name LIKE 'idx_%'"
    assert _one(disk / "run.db", indexes) == _one(tmp_path / "whole.db", indexes) > 0


def _one(db: Path, sql: str):
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()
