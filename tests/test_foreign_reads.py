"""Reading a user's database (issue 53, items 1, 4 and 6): its committed state, as SQLite would
read it, never written and never left with new files beside it; a database that is not what
it claims refused with one line; a read that never ends stopped by SIGINT / SIGTERM.

Real SQLite files and real writer processes killed mid-transaction (`_killed_writer`), the
real command line, and, for the signals, a real process and a real signal.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from oasis_fixture import build_oasis_db
from test_guarantees_journal import _cli_journal, cli, run_env

from oasis_gym.platform.journal_load import load_platform, read_meta
from oasis_gym.platform.oasis_import import load_oasis


def snapshot(folder: Path) -> dict:
    """Each entry of `folder`: its bytes and modification time (a file) or its kind."""
    out = {}
    for name in sorted(os.listdir(folder)):
        p = folder / name
        out[name] = (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else "folder"
    return out


def _killed_writer(db: Path, script: str) -> None:
    """Run `script` (SQL-writing Python, `conn` open on `db`) in a process that then dies
    without closing: what a writer killed mid-work leaves."""
    code = f"import os, sqlite3\nconn = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
    code += textwrap.dedent(script) + "\nos._exit(0)\n"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


@pytest.fixture
def oasis(tmp_path) -> tuple[Path, Path]:
    """(an OASIS database in its own folder, a copy of it elsewhere: its committed state)."""
    (tmp_path / "user").mkdir()
    db = build_oasis_db(tmp_path / "user" / "oasis.db", users=12, steps=6, per_step=25)
    ref = tmp_path / "ref.db"
    shutil.copy(db, ref)
    return db, ref


def _state(path: Path) -> dict:
    """What `load_oasis` reads from `path`: its counts, counter mismatches, step, ..."""
    return load_oasis(path).summary()


def test_a_hot_rollback_journal_is_read_as_its_committed_state(oasis, tmp_path, capsys):
    """A writer killed mid-transaction whose changed pages already reached the file (a small
    cache spills them): they are not data. Before: read with immutable=1, imported as rows."""
    db, ref = oasis
    _killed_writer(
        db,
        """
        conn.execute("PRAGMA cache_size = 1")
        conn.execute("BEGIN")
        conn.execute("DELETE FROM follow")
        conn.execute("UPDATE user SET name = 'uncommitted'")
        for i in range(3000):
            conn.execute("INSERT INTO post (user_id, content, created_at) VALUES (0, ?, '9')", ('x' * 200,))
        """,
    )
    assert Path(f"{db}-journal").stat().st_size > 0 and db.read_bytes() != ref.read_bytes()  # hot, pages spilled
    before = snapshot(db.parent)
    assert _state(db) == _state(ref)
    code, err = cli(capsys, "import", str(db), "--out", str(tmp_path / "out.db"), "--quiet")
    assert code == 0, err
    code, err = cli(capsys, "report", str(db), "--out", str(tmp_path / "report"), "--quiet")
    assert code == 0, err
    assert snapshot(db.parent) == before  # the user's file, its journal, its folder: as they were
    assert load_platform(tmp_path / "out.db").n_posts == load_oasis(ref).platform.n_posts


@pytest.mark.parametrize("keep_shm", [True, False])
def test_a_wal_databases_committed_frames_count_and_nothing_appears_beside_it(oasis, keep_shm, tmp_path, capsys):
    """OASIS in WAL mode, its writer killed after a commit (the commit only in the -wal), and a
    transaction it had not committed. Before: a -shm appeared beside the user's file."""
    db, ref = oasis
    _killed_writer(
        db,
        """
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("INSERT INTO follow (follower_id, followee_id, created_at) VALUES (0, 11, '6')")
        conn.execute("UPDATE user SET num_followers = num_followers + 1 WHERE user_id = 11")
        conn.execute("UPDATE user SET num_followings = num_followings + 1 WHERE user_id = 0")
        conn.execute("BEGIN")
        conn.execute("DELETE FROM post")
        """,
    )
    assert Path(f"{db}-wal").stat().st_size > 0
    if not keep_shm:  # (a database copied with its -wal only)
        Path(f"{db}-shm").unlink()
    before = snapshot(db.parent)
    ref_follows = load_oasis(ref).counts["follow"]
    loaded = load_oasis(db)
    assert loaded.counts["follow"] == ref_follows + 1 and not loaded.mismatches  # the commit, and only it
    assert loaded.platform.n_posts == load_oasis(ref).platform.n_posts
    for command, out in (("import", "out.db"), ("report", "report")):
        code, err = cli(capsys, command, str(db), "--out", str(tmp_path / out), "--quiet")
        assert code == 0, err
    assert snapshot(db.parent) == before
    private = tmp_path / "tmp"  # a command's private copy goes when it ends
    private.mkdir()
    env = {**os.environ, "TMPDIR": str(private)}
    argv = [sys.executable, "-m", "oasis_gym.cli", "import", str(db), "--out", str(tmp_path / "again.db"), "--quiet"]
    assert subprocess.run(argv, env=env, capture_output=True, timeout=300).returncode == 0
    assert os.listdir(private) == [] and snapshot(db.parent) == before


def test_report_of_a_journal_with_a_wal_leaves_it_as_it_was(tmp_path, capsys):
    """A journal whose last commits are only in its -wal (its run killed): report reads them
    and changes nothing. Before: closing the reader checkpointed the -wal into the file."""
    (tmp_path / "runs").mkdir()
    path = tmp_path / "runs" / "run.db"
    run_env(path, steps=3)
    _killed_writer(
        path,
        """
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("INSERT INTO meta (key, value) VALUES ('note', '[1]')")
        """,
    )
    assert Path(f"{path}-wal").stat().st_size > 0
    before = snapshot(path.parent)
    code, err = cli(capsys, "report", str(path), "--out", str(tmp_path / "report"), "--quiet")
    assert code == 0, err
    assert snapshot(path.parent) == before
    assert read_meta(path)["note"] == [1] and snapshot(path.parent) == before


def test_resuming_a_killed_run_reads_its_journal_in_place_never_a_copy(tmp_path, capsys, monkeypatch):
    """A killed run's journal keeps its last commits in its -wal. Its resume is its writer: it
    takes the journal's lock before it reads anything, so it reads the journal in place and
    never copies it (a private copy of a large journal would cost its whole size on disk)."""
    path = _cli_journal(tmp_path)
    _killed_writer(
        path,
        """
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("INSERT INTO meta (key, value) VALUES ('note', '[1]')")
        """,
    )
    assert Path(f"{path}-wal").stat().st_size > 0

    def no_copy(p):
        raise AssertionError(f"{p} was copied")

    monkeypatch.setattr("oasis_gym.platform.journal_file.committed_copy", no_copy)
    code, err = cli(capsys, "run", "--resume", str(path), "--steps", "3", "--quiet", "--no-tensorboard")
    assert code == 0, err
    monkeypatch.undo()
    meta = read_meta(path)
    assert meta["step"] == 3 and meta["note"] == [1]


def test_a_user_id_that_repeats_is_refused_with_one_line(oasis, tmp_path, capsys):
    """Two user rows of one id would be two users (phantoms). Before: imported, exit 0."""
    db, _ = oasis
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE u2 AS SELECT * FROM user; INSERT INTO u2 SELECT * FROM user WHERE user_id = 3;"
        "DROP TABLE user; ALTER TABLE u2 RENAME TO user;"
    )
    conn.close()
    before = snapshot(tmp_path)
    code, err = cli(capsys, "import", str(db), "--out", str(tmp_path / "out.db"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "user.user_id repeats" in err and "3" in err
    assert snapshot(tmp_path) == before


HOSTILE = (
    "DROP TABLE {table}; CREATE VIEW {table} AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r)"
    " SELECT {columns} FROM r;"
)
POST_COLUMNS = (
    "x AS post_id, 0 AS user_id, NULL AS original_post_id, 'a' AS content, NULL AS quote_content,"
    " '1' AS created_at, 0 AS num_likes, 0 AS num_dislikes, 0 AS num_shares, 0 AS num_reports"
)


@pytest.mark.parametrize("command", ["import", "report"])
def test_a_view_in_place_of_an_oasis_table_is_refused_with_one_line(oasis, command, tmp_path, capsys):
    """An endless recursive view named `post`. Before: import and report never ended."""
    db, _ = oasis
    conn = sqlite3.connect(db)
    conn.executescript(HOSTILE.format(table="post", columns=POST_COLUMNS))
    conn.close()
    before = snapshot(db.parent)
    code, err = cli(capsys, command, str(db), "--out", str(tmp_path / "out"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "`post` is a view" in err, err
    assert snapshot(db.parent) == before and not (tmp_path / "out").exists()


_MARKED = """\
import pathlib, sys
from oasis_gym.platform import sqlite_read
real = sqlite_read._watch
def watch(stops):  # a connection opens: its reads come next
    pathlib.Path({marker!r}).write_text("reading")
    return real(stops)
sqlite_read._watch = watch
from oasis_gym.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_read_that_never_ends_stops_at_a_signal_with_one_line(signum, code, tmp_path):
    """A journal whose `trace` is an endless recursive view (not refused: our own kind of
    file): report reads it for ever; a signal ends it with one line and 128 + the signal.
    Before: neither SIGINT nor SIGTERM ended it (SQLite's C code never ran the handler)."""
    path = tmp_path / "run.db"
    run_env(path, steps=2)
    conn = sqlite3.connect(path)
    columns = "x AS user_id, 'like_post' AS action, 'ok' AS result, 0 AS step"
    conn.executescript(HOSTILE.format(table="trace", columns=columns))
    conn.close()
    marker = tmp_path / ".reading"
    script = _MARKED.format(marker=str(marker))
    argv = [sys.executable, "-c", script, "report", str(path), "--out", str(tmp_path / "out"), "--quiet"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300  # (only to catch a hang)
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        time.sleep(1.0)  # into the endless read (if not yet, the signal stops it all the same)
        os.kill(proc.pid, signum)
        out, err = proc.communicate(timeout=120)  # generous: catches a hang only
    finally:
        proc.kill()
        proc.wait()
    lines = err.strip().splitlines()
    assert proc.returncode == code and len(lines) == 1, (proc.returncode, lines)
    assert lines[0].startswith(f"oasis-gym report: stopped by {signal.Signals(signum).name}") and out == ""
    assert not (tmp_path / "out").exists()


def test_a_live_runs_journal_without_its_wal_gets_advice_that_works(tmp_path):
    """The -wal and -shm of a live run's journal deleted: its file is behind the run (no step).
    Before: resume said "start the run again; it replaces this journal" (the lock then refused
    it) and report showed 0 users with exit 0. Now both name the live run and say to wait for
    its end; the test follows that advice: stop the run, resume it, report it."""
    db = tmp_path / "live.db"
    command = [sys.executable, "-m", "oasis_gym.cli"]
    run = ["run", "--users", "20", "--policy", "abm", "--steps", "100000", "--db", str(db), "--quiet"]
    proc = subprocess.Popen(
        [*command, *run, "--no-tensorboard"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300  # (only to catch a hang)
        while not (os.path.exists(f"{db}-wal") and os.path.getsize(f"{db}-wal") > 0):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        for suffix in ("-wal", "-shm"):
            os.remove(f"{db}{suffix}")
        for argv in (["run", "--resume", str(db), "--steps", "5", "--quiet"], ["report", str(db), "--quiet"]):
            refused = subprocess.run([*command, *argv], capture_output=True, text=True, timeout=300)
            lines = refused.stderr.strip().splitlines()
            assert refused.returncode == 2 and len(lines) == 1, refused.stderr
            assert f"being written by another process (pid {proc.pid})" in lines[0] and "once that run ends" in lines[0]
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130 and "continue it with: oasis-gym run --resume" in err, err
    step = read_meta(db)["step"]  # every step the run took is in the file again
    resumed = subprocess.run(
        [*command, "run", "--resume", str(db), "--steps", str(step + 2), "--quiet", "--no-tensorboard"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0 and read_meta(db)["step"] == step + 2, resumed.stderr
    reported = subprocess.run([*command, "report", str(db), "--quiet"], capture_output=True, text=True, timeout=300)
    assert reported.returncode == 0, reported.stderr
    assert "users: 20" in (tmp_path / "live_report" / "summary.txt").read_text()


def test_report_of_a_journal_with_no_step_is_refused_with_one_line(tmp_path, capsys):
    """A journal whose run ended before its first commit is no empty run. Before: exit 0, 0 users."""
    from oasis_gym.platform import Journal

    db = tmp_path / "empty.db"
    Journal(str(db)).close()
    code, err = cli(capsys, "report", str(db), "--out", str(tmp_path / "r"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "holds no step" in err, err
    assert not (tmp_path / "r").exists()
