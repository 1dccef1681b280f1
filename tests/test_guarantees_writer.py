"""The journal's writer (red-team holes): the one-writer lock is on the journal itself, so
deleting a file beside it frees nothing and a second name of the journal sees it; a journal
with two names is never written; a journal a run left before its first commit (killed, or
its disk full) holds nothing of the user's, and a new run replaces it without --overwrite.
Real SQLite files, real processes (killed with SIGKILL where a crash is the point); a full
disk is SQLite's own SQLITE_FULL (max_page_count caps the file)."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from test_guarantees_journal import _holder

from oasis_gym.platform import Journal, JournalError, Platform, PlatformConfig
from oasis_gym.platform.journal import read_meta
from oasis_gym.population import synthetic

CLI_RUN = ["run", "--users", "20", "--policy", "abm", "--steps", "2", "--quiet", "--no-tensorboard"]


@contextlib.contextmanager
def live_journal(path):
    """Another process writes a 3-step journal at `path` (waiting while the block runs); then
    it completes, and the journal holds its run, undamaged."""
    proc = _holder(path)
    try:
        yield proc
        out, _ = proc.communicate("go\n", timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0 and out.strip() == "done"
    assert read_meta(path)["step"] == 3
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT COUNT(*) FROM post").fetchone() == (3 * 20,)
    finally:
        conn.close()


def cli(*argv, script: str = "from oasis_gym.cli import main; main()") -> subprocess.CompletedProcess:
    """The command line in a process of its own (`script` may first break something in it)."""
    return subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=120)


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    err = proc.stderr.strip()
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for word in words:
        assert word in err, err


def platform(n: int = 20) -> Platform:
    pf = Platform(PlatformConfig())
    pf.add_users(synthetic(n, seed=0))
    return pf


def uncommitted(path) -> bool:
    """Whether `path` holds a journal with no committed step."""
    return "step" not in read_meta(path)


# --------------------------------------------------------------------------- 1: the lock is the journal's


def test_deleting_the_files_beside_a_live_journal_never_lets_a_second_run_replace_it(tmp_path):
    path = tmp_path / "live.db"
    with live_journal(path):
        for name in os.listdir(tmp_path):  # whatever sits beside the journal, a lock file included
            if name != "live.db" and not name.endswith(("-wal", "-shm")):
                os.remove(tmp_path / name)
        second = cli(*CLI_RUN, "--db", str(path), "--overwrite")
        one_line_error(second, str(path), "being written by another process")


# --------------------------------------------------------------------------- 2: one name, one writer


def test_a_second_name_of_a_live_journal_gets_no_second_writer(tmp_path):
    path, alias = tmp_path / "live.db", tmp_path / "alias.db"
    with live_journal(path):
        os.link(path, alias)
        with pytest.raises(JournalError, match="alias.db"):
            Journal(alias)
        with pytest.raises(JournalError, match="alias.db"):
            Journal(alias, new=True, overwrite=True)
        second = cli(*CLI_RUN, "--db", str(alias), "--overwrite")
        one_line_error(second, str(alias))
        os.remove(alias)


def test_a_journal_with_more_than_one_name_is_never_opened_as_a_writer(tmp_path):
    path, alias = tmp_path / "run.db", tmp_path / "alias.db"
    assert cli(*CLI_RUN, "--db", str(path)).returncode == 0
    os.link(path, alias)
    before = path.read_bytes()
    for name in (path, alias):
        with pytest.raises(JournalError, match=rf"{name.name}.*2 names \(hard links\)"):
            Journal(name)
        with pytest.raises(JournalError, match=rf"{name.name}.*hard links"):
            Journal(name, new=True, overwrite=True)
    resumed = cli("run", "--resume", str(alias), "--steps", "3", "--quiet", "--no-tensorboard")
    one_line_error(resumed, str(alias), "hard links")
    assert path.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["alias.db", "run.db"]
    assert read_meta(alias)["step"] == 2  # reading is fine
    os.remove(alias)  # one name again: a writer may continue it
    Journal(path).close()


# --------------------------------------------------------------------------- 3: killed before the first commit

KILLED_AT = textwrap.dedent("""
    import importlib, os, signal, sys
    from oasis_gym.cli import main
    module, attr = sys.argv.pop(1).split(":")
    owner = importlib.import_module(module)
    *parents, name = attr.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    setattr(owner, name, lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL))
    main()
""")

KILL_POINTS = {  # where the run dies -> the names it leaves, and how many names the journal has
    "os:link": (["early.db-new"], None),  # the new journal written, not yet named
    "os:remove": (["early.db", "early.db-new"], 2),  # named, its first name not yet removed
    "oasis_gym.platform.journal:connect": (["early.db"], 1),  # before SQLite opens it
    "oasis_gym.platform.journal:Journal.begin_step": (["early.db", "early.db-shm", "early.db-wal"], 1),  # open
}


@pytest.mark.parametrize("where", sorted(KILL_POINTS))
def test_a_run_killed_before_its_first_commit_is_replaced_by_a_new_run_without_overwrite(where, tmp_path):
    path = tmp_path / "early.db"
    killed = cli(where, *CLI_RUN, "--db", str(path), script=KILLED_AT)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    names, links = KILL_POINTS[where]
    assert sorted(os.listdir(tmp_path)) == names
    if links is not None:
        assert os.stat(path).st_nlink == links and uncommitted(path)
    again = cli(*CLI_RUN, "--db", str(path))  # no --overwrite: the file holds nothing of the user's
    assert again.returncode == 0, again.stderr
    assert read_meta(path)["step"] == 2
    assert sorted(os.listdir(tmp_path)) == ["early.db"] and os.stat(path).st_nlink == 1


def _text(path):
    path.write_text("my notes\n")


def _journal_with_rows(path):
    journal = Journal(path)
    journal.commit_step(platform())
    journal.close()


@pytest.mark.parametrize("make", [_text, _journal_with_rows, os.mkfifo], ids=["text", "journal", "fifo"])
def test_a_file_where_a_new_journal_is_first_written_is_never_deleted(make, tmp_path):
    path, new = tmp_path / "run.db", tmp_path / "run.db-new"
    make(new)
    before = new.read_bytes() if new.is_file() else None
    with pytest.raises(JournalError, match="run.db-new"):
        Journal(path, new=True, overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["run.db-new"]
    assert (new.read_bytes() if new.is_file() else None) == before


def _posix_locks(path) -> list[str]:
    """The POSIX (fcntl) locks this process holds on the file at `path`: SQLite's."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with open("/proc/locks") as f:
        return [line for line in f if line.split()[1] == "POSIX" and f" {os.getpid()} {dev} " in line]


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="reads the locks in /proc/locks (Linux)")
def test_a_refused_writer_never_drops_the_sqlite_locks_of_this_process(tmp_path):
    """A descriptor of the journal closed in this process would drop SQLite's POSIX locks on it."""
    mine, theirs = tmp_path / "mine.db", tmp_path / "theirs.db"
    journal = Journal(mine, new=True)
    journal.commit_step(platform())
    held = _posix_locks(mine)
    assert held  # SQLite's shared lock of a WAL connection
    with pytest.raises(JournalError, match="this process"):
        Journal(mine)
    assert _posix_locks(mine) == held
    journal.close()
    with live_journal(theirs) as proc:
        reader = sqlite3.connect(theirs)
        assert reader.execute("SELECT COUNT(*) FROM user").fetchone() == (20,)
        held = _posix_locks(theirs)
        assert held
        with pytest.raises(JournalError, match=rf"another process \(pid {proc.pid}\)"):
            Journal(theirs, new=True, overwrite=True)
        assert _posix_locks(theirs) == held
        reader.close()


def test_an_uncommitted_journal_is_replaced_from_python_but_one_holding_rows_is_not(tmp_path):
    path = tmp_path / "j.db"
    Journal(path, new=True).close()  # created, never committed
    assert uncommitted(path)
    journal = Journal(path, new=True)  # replaced without overwrite
    journal.conn.execute("INSERT INTO post(post_id, content) VALUES (0, 'mine')")  # rows, but no step
    journal.close()
    with pytest.raises(JournalError, match="--overwrite"):
        Journal(path, new=True)
    assert sqlite3.connect(path).execute("SELECT content FROM post").fetchall() == [("mine",)]


# --------------------------------------------------------------------------- 4: the disk full at the first commit

FULL_AT_FIRST_COMMIT = textwrap.dedent("""
    from oasis_gym.platform.journal import Journal
    begin = Journal.begin_step
    def full(self, *args, **kwargs):  # the disk is full: the file may not grow by one page
        conn = self.conn
        conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
        return begin(self, *args, **kwargs)
    Journal.begin_step = full
    from oasis_gym.cli import main
    main()
""")


def test_a_full_disk_at_the_first_commit_is_one_line_and_a_new_run_replaces_its_journal(tmp_path):
    path = tmp_path / "full.db"
    failed = cli(*CLI_RUN, "--db", str(path), script=FULL_AT_FIRST_COMMIT)
    one_line_error(failed, str(path), "full")
    assert uncommitted(path)
    again = cli(*CLI_RUN, "--db", str(path))
    assert again.returncode == 0, again.stderr
    assert read_meta(path)["step"] == 2


def test_a_full_disk_at_the_first_commit_from_python(tmp_path):
    path = tmp_path / "full.db"
    journal = Journal(path, new=True)
    conn = journal.conn
    conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
    pf = platform()
    with pytest.raises(JournalError, match=r"full\.db.*first commit.*full"):
        journal.commit_step(pf)
    journal.close()  # no second error
    assert uncommitted(path)
    journal = Journal(path, new=True)  # replaced without overwrite
    journal.commit_step(pf)
    journal.close()
    assert Platform.from_db(path).n_users == 20


# --------------------------------------------------------------------------- 4: a busy journal is not a damaged one

HOLD_SQLITE_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA locking_mode=EXCLUSIVE")  # what a writer frozen mid-commit is to its readers
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('held', '1')")
print("held", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""


def test_a_journal_whose_writer_holds_sqlites_lock_is_called_busy_never_damaged(tmp_path):
    """A reader kept out by a writer's SQLite lock (a run suspended with Ctrl-Z mid-commit: its
    readers wait ~10 s, then SQLite says "locking protocol") was told the journal was "not a
    SQLite database" or "damaged". A reader now reads its committed state (`sqlite_read`); a
    writer is told it is busy in one line; nothing is changed."""
    path = tmp_path / "run.db"
    assert cli(*CLI_RUN, "--db", str(path)).returncode == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_SQLITE_LOCK, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        meta = read_meta(path)  # a reader reads the committed state (a private copy: no lock to wait for)
        assert meta["step"] == 2 and "held" not in meta
        one_line_error(cli("run", "--resume", str(path), "--steps", "3", "--quiet"), "is busy", "Ctrl-Z")
    finally:
        holder.communicate("\n", timeout=60)
    assert read_meta(path)["step"] == 2 and "held" not in read_meta(path)
