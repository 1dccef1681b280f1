"""The journal's guarantees (issue 15): nothing that is not an oasis-gym journal is deleted or
truncated, a journal is replaced only when asked, a journal has one writer, any legal file
name works, a run is resumable from the moment its journal exists, and bad command-line input
gets one line and exit code 2. Real SQLite files, real processes (killed with SIGKILL where a
crash is the point)."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oasis_gym.actions import ActionType
from oasis_gym.cli import main
from oasis_gym.envs import twitter_v0
from oasis_gym.envs.social_env import SocialMediaEnv
from oasis_gym.platform import JournalError, Platform
from oasis_gym.platform.journal import read_meta

POST = int(ActionType.CREATE_POST)
ENV = dict(users=20, activation=1.0, max_cycles=3)
QUIET = ["--quiet", "--no-tensorboard"]
RUN = ["run", "--users", "30", "--policy", "abm", "--activation", "0.5", *QUIET]
TABLES = (
    "user_account",
    "user_state",
    "user_profile",
    "post",
    "comment",
    "follow",
    "mute",
    "like",
    "dislike",
    "comment_like",
    "comment_dislike",
    "report",
    "trace",
    "opinion",
    "moderation",
)


def run_env(path, steps: int = 3, **kw):
    """A finished, closed run journaled at `path`."""
    env = twitter_v0.parallel_env(db_path=str(path), **{**ENV, "max_cycles": steps, **kw})
    env.reset(seed=0)
    while env.agents:
        env.step({a: POST for a in env.agents})
    env.close()


def tables(path) -> dict:
    conn = sqlite3.connect(str(path))  # a plain file name (no URI); closing, SQLite tidies its -wal
    try:
        return {t: conn.execute(f'SELECT * FROM "{t}" ORDER BY rowid').fetchall() for t in TABLES}
    finally:
        conn.close()


def snapshot(folder: Path) -> dict:
    """Every entry of a folder: its kind and, for a regular file, its bytes."""
    out = {}
    for name in sorted(os.listdir(folder)):
        st = os.lstat(folder / name)
        out[name] = (folder / name).read_bytes() if stat.S_ISREG(st.st_mode) else stat.S_IFMT(st.st_mode)
    return out


def cli(capsys, *argv) -> tuple[int, str]:
    """Run the real command line in this process: (exit code, stderr)."""
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = exit_.code
    return code, capsys.readouterr().err


# --------------------------------------------------------------------------- nothing clobbered


def _text(path: Path) -> None:
    path.write_text("my notes, not a database\n")


def _foreign_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE results (x)")
    conn.execute("INSERT INTO results VALUES (42)")
    conn.commit()
    conn.close()


def _oasis_db(path: Path) -> None:  # OASIS's own database: `user` is a table, no meta
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE user (user_id INTEGER PRIMARY KEY, user_name TEXT);"
        "CREATE TABLE post (post_id INTEGER PRIMARY KEY, content TEXT);"
        "CREATE TABLE trace (user_id INTEGER, action TEXT); INSERT INTO user VALUES (1, 'a');"
    )
    conn.commit()
    conn.close()


def _device(path: Path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # a /dev/null of our own
    except PermissionError:
        pytest.skip("creating a device node needs root (the FIFO case covers non-regular files)")


NOT_JOURNALS = {
    "text": _text,
    "foreign_sqlite": _foreign_sqlite,
    "oasis_db": _oasis_db,
    "directory": lambda p: p.mkdir(),
    "fifo": lambda p: os.mkfifo(p),
    "device": _device,
}


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("kind", sorted(NOT_JOURNALS))
def test_a_file_that_is_not_a_journal_is_never_deleted(kind, overwrite, tmp_path):
    path = tmp_path / "target.db"
    NOT_JOURNALS[kind](path)
    if kind != "directory":
        for suffix in ("-wal", "-shm"):  # siblings of the user's file: theirs too
            Path(f"{path}{suffix}").write_text(f"keep {suffix}\n")
    before = snapshot(tmp_path)
    env = twitter_v0.parallel_env(db_path=str(path), overwrite=overwrite, **ENV)
    with pytest.raises(JournalError, match="target.db"):
        env.reset(seed=0)
    env.close()
    assert snapshot(tmp_path) == before


def test_the_input_profile_file_is_never_the_journal(shared_data, tmp_path, capsys):
    profiles = tmp_path / "prof.csv"
    shutil.copy(shared_data / "False_Business_0.csv", profiles)
    before = snapshot(tmp_path)
    with pytest.raises(JournalError, match="profile file"):
        twitter_v0.parallel_env(users=str(profiles), db_path=str(profiles), max_cycles=2).reset(seed=0)
    code, err = cli(capsys, *RUN, "--users", str(profiles), "--db", str(profiles), "--overwrite")
    assert code == 2 and "profile file" in err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", ["target.db-wal", "target.db-shm", "target.db-new"])
def test_odd_siblings_are_refused_and_left_alone(name, tmp_path):
    """A FIFO where SQLite's -wal/-shm or where a new journal is first written: refused, never opened."""
    os.mkfifo(tmp_path / name)
    env = twitter_v0.parallel_env(db_path=str(tmp_path / "target.db"), **ENV)
    with pytest.raises(JournalError, match="target.db"):
        env.reset(seed=0)
    env.close()
    assert snapshot(tmp_path) == {name: stat.S_IFIFO}


def test_an_empty_file_is_replaced_only_with_overwrite(tmp_path):
    path = tmp_path / "empty.db"
    path.touch()
    with pytest.raises(JournalError, match="empty file"):
        twitter_v0.parallel_env(db_path=str(path), **ENV).reset(seed=0)
    assert path.read_bytes() == b""
    run_env(path, overwrite=True)  # nothing to lose
    assert read_meta(path)["step"] == 3


@pytest.mark.parametrize(
    "sibling,data", [("-wal", b"not a WAL"), ("-wal", bytes.fromhex("377f0682") + bytes(28)), ("-shm", b"my -shm")]
)
def test_a_stray_sibling_without_its_database_is_refused(sibling, data, tmp_path):
    path = tmp_path / "gone.db"
    Path(f"{path}{sibling}").write_bytes(data)
    with pytest.raises(JournalError, match="left over"):
        twitter_v0.parallel_env(db_path=str(path), **ENV).reset(seed=0)
    assert snapshot(tmp_path) == {f"gone.db{sibling}": data}


def test_an_existing_journal_is_replaced_only_with_overwrite(tmp_path, capsys):
    path = tmp_path / "run.db"
    run_env(path, steps=3)
    before = snapshot(tmp_path)
    env = twitter_v0.parallel_env(db_path=str(path), **{**ENV, "max_cycles": 1})
    with pytest.raises(JournalError, match=r"run\.db.*--overwrite \(overwrite=True"):
        env.reset(seed=1)
    env.close()
    code, err = cli(capsys, *RUN, "--steps", "1", "--db", str(path))
    assert code == 2 and "--overwrite" in err and str(path) in err
    assert snapshot(tmp_path) == before
    assert cli(capsys, *RUN, "--steps", "1", "--db", str(path), "--overwrite")[0] == 0
    assert read_meta(path)["step"] == 1
    run_env(path, steps=2, overwrite=True)
    assert read_meta(path)["step"] == 2


def test_reset_replaces_the_envs_own_journal_and_no_one_elses(tmp_path):
    """A new episode starts a new journal at db_path: the env's own journal of its previous
    episode is replaced; a journal another env wrote is not (without overwrite)."""
    path = tmp_path / "episodes.db"
    env = twitter_v0.parallel_env(db_path=str(path), **ENV)
    for seed in (0, 1):
        env.reset(seed=seed)
        while env.agents:
            env.step({a: POST for a in env.agents})
        rows = sqlite3.connect(path).execute("SELECT COUNT(*), MAX(step) FROM trace").fetchone()
        assert rows == (3 * 20, 2)  # this episode only
    env.close()
    before = snapshot(tmp_path)
    other = twitter_v0.parallel_env(db_path=str(path), **ENV)
    with pytest.raises(JournalError, match="--overwrite"):
        other.reset(seed=0)
    assert snapshot(tmp_path) == before


# --------------------------------------------------------------------------- one writer


def test_two_envs_in_one_process_the_second_is_refused(tmp_path):
    path = tmp_path / "shared.db"
    first = twitter_v0.parallel_env(db_path=str(path), **ENV)
    first.reset(seed=0)
    second = twitter_v0.parallel_env(db_path=str(path), **ENV)
    with pytest.raises(JournalError, match="being written by another env or Journal of this process"):
        second.reset(seed=0)
    with pytest.raises(JournalError, match="being written"):
        SocialMediaEnv.resume(str(path))
    (tmp_path / "alias.db").symlink_to(path)  # another name of the same file: the same lock
    with pytest.raises(JournalError, match="being written"):
        twitter_v0.parallel_env(db_path=str(tmp_path / "alias.db"), overwrite=True, **ENV).reset(seed=0)
    while first.agents:  # the first run is untouched and completes
        first.step({a: POST for a in first.agents})
    first.close()
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM post").fetchone() == (3 * 20,)
    assert read_meta(path)["step"] == 3
    resumed = SocialMediaEnv.resume(str(path))  # closed: the lock is free again
    assert resumed.sim.platform.n_posts == 60
    resumed.close()


HOLDER = textwrap.dedent("""
    import sys
    from oasis_gym.envs import twitter_v0
    env = twitter_v0.parallel_env(users=20, activation=1.0, max_cycles=3, db_path=sys.argv[1])
    env.reset(seed=0)
    print("ready", flush=True)
    sys.stdin.readline()
    while env.agents:
        env.step({a: 6 for a in env.agents})  # create_post
    env.close()
    print("done", flush=True)
""")


def _holder(path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_two_processes_on_one_journal_the_second_is_refused(tmp_path, capsys):
    path = tmp_path / "shared.db"
    proc = _holder(path)
    try:
        with pytest.raises(JournalError, match=rf"being written by another process \(pid {proc.pid}\)"):
            twitter_v0.parallel_env(db_path=str(path), **ENV).reset(seed=0)
        code, err = cli(capsys, *RUN, "--db", str(path), "--overwrite")
        assert code == 2 and "being written by another process" in err
        with pytest.raises(JournalError, match="being written by another process"):
            SocialMediaEnv.resume(str(path))
        out, _ = proc.communicate("go\n", timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0 and out.strip() == "done"
    assert read_meta(path)["step"] == 3
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM post").fetchone() == (3 * 20,)


def test_the_lock_dies_with_its_process(tmp_path):
    path = tmp_path / "killed.db"
    proc = _holder(path)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    env = SocialMediaEnv.resume(str(path))  # a killed writer never blocks the resume
    assert env.sim.platform.step == 0 and env.sim.platform.n_users == 20
    env.close()


# --------------------------------------------------------------------------- any legal path


def test_a_path_object_is_a_journal_path(tmp_path):
    run_env(tmp_path / "as_path.db", steps=2)
    assert read_meta(tmp_path / "as_path.db")["step"] == 2


@pytest.mark.parametrize("name", ["q?mode=rw.db", "h#frag.db", "p%20c%.db", "sp ace ü.db", "a?b#c%d.db"])
def test_any_legal_file_name_writes_reads_and_resumes(name, tmp_path, capsys):
    plain, odd = tmp_path / "plain.db", tmp_path / name
    assert cli(capsys, *RUN, "--steps", "4", "--db", str(plain))[0] == 0
    assert cli(capsys, *RUN, "--steps", "2", "--db", str(odd))[0] == 0
    assert read_meta(odd)["step"] == 2 and Platform.from_db(odd).n_users == 30
    assert cli(capsys, "run", "--resume", str(odd), "--steps", "4", *QUIET)[0] == 0
    assert tables(odd) == tables(plain)  # resumed equals uninterrupted
    assert sorted(os.listdir(tmp_path)) == sorted(["plain.db", name])  # no stray file


def test_resume_never_touches_the_journal_named_by_the_path_cut_at_a_question_mark(tmp_path, capsys):
    other, mine = tmp_path / "t.db", tmp_path / "t.db?x=1"
    assert cli(capsys, *RUN, "--steps", "2", "--db", str(other))[0] == 0
    assert cli(capsys, "run", "--users", "40", "--policy", "abm", "--steps", "2", "--db", str(mine), *QUIET)[0] == 0
    before = snapshot(tmp_path)
    assert cli(capsys, "run", "--resume", str(mine), "--steps", "4", *QUIET)[0] == 0
    assert snapshot(tmp_path)["t.db"] == before["t.db"]
    assert read_meta(mine)["step"] == 4 and Platform.from_db(mine).n_users == 40
    env = SocialMediaEnv.resume(str(mine))
    assert env.sim.platform.n_users == 40 and len(env.possible_agents) == 40
    env.close()


# --------------------------------------------------------------------------- resumable from the start

KILLED_BEFORE_STEP_1 = textwrap.dedent("""
    import os, signal, sys
    import oasis_gym.app.run
    oasis_gym.app.run.simulate = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)  # dies before step 1
    from oasis_gym.cli import main
    main(sys.argv[1:])
""")


def test_a_run_killed_before_its_first_step_resumes_from_the_cli(tmp_path, capsys):
    path, full = tmp_path / "early.db", tmp_path / "full.db"
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_BEFORE_STEP_1, *RUN, "--steps", "3", "--db", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL
    assert read_meta(path)["step"] == 0
    assert cli(capsys, "run", "--resume", str(path), *QUIET)[0] == 0  # 3 steps, as the killed run asked
    assert cli(capsys, *RUN, "--steps", "3", "--db", str(full))[0] == 0
    assert read_meta(path)["step"] == 3
    assert tables(path) == tables(full)


# --------------------------------------------------------------------------- bad input: one line, exit 2


def _journal(tmp_path: Path) -> Path:
    path = tmp_path / "j.db"
    run_env(path, steps=2)
    return path


def _cli_journal(tmp_path: Path) -> Path:
    path = tmp_path / "cli.db"
    assert main([*RUN, "--steps", "2", "--db", str(path)]) == 0
    return path


def _edit_meta(sql: str, build=None):
    """A file made by `build(tmp_path)` (default: an `oasis-gym run` journal), then edited by `sql`."""

    def make(tmp_path: Path) -> Path:
        path = (build or _cli_journal)(tmp_path)
        conn = sqlite3.connect(path)
        conn.execute(sql)
        conn.commit()
        conn.close()
        return path

    return make


def _file(write):
    def make(tmp_path: Path) -> Path:
        path = tmp_path / "f.db"
        write(path)
        return path

    return make


def _profile(text: str, suffix: str = ".csv"):
    def make(tmp_path: Path) -> Path:
        path = tmp_path / f"prof{suffix}"
        path.write_text(text)
        return path

    return make


# (extra arguments, or a function of tmp_path giving the file the case is about; its arguments)
BAD = {
    "activation_word": ["--activation", "abc"],
    "activation_above_1": ["--activation", "1.5"],
    "activation_nan": ["--activation", "nan"],
    "seed_negative": ["--seed", "-1"],
    "steps_zero": ["--steps", "0"],
    "steps_negative": ["--steps", "-2"],
    "core_users_negative": ["--core-users", "-3"],
    "seed_posts_negative": ["--seed-posts", "-1"],
    "users_zero": ["--users", "0"],
    "users_negative": ["--users", "-3"],
    "users_missing_file": ["--users", "no_such_profiles.csv"],
    "db_empty": ["--db", ""],
    "recsys_unknown": ["--recsys", "nosuch"],
    "db_in_a_file": (_file(_text), ["--db", "{}/run.db"]),
    "db_is_directory": (lambda t: t, ["--db", "{}"]),
    "llm_backend_unknown": ["--policy", "hybrid", "--llm-backend", "nosuch"],
    "llm_openai_without_endpoint": ["--policy", "hybrid", "--llm-backend", "openai"],
    "scenario_unknown": ["--scenario", "nosuch"],
    "scenario_unknown_setting": ["--scenario", "twitter_information_spread", "--set", "nosuch.key=1"],
    "scenario_with_resume": (_cli_journal, ["--scenario", "twitter_information_spread", "--resume", "{}"]),
    "profile_bad_columns": (_profile("a,b\n1,2\n"), ["--users", "{}"]),
    "profile_unknown_format": (_profile("hello", ".txt"), ["--users", "{}"]),
    "profile_bad_json": (_profile("{not json", ".json"), ["--users", "{}"]),
    "db_is_profile": (_profile("a,b\n1,2\n"), ["--users", "{}", "--db", "{}"]),
    "db_is_text_file": (_file(_text), ["--db", "{}"]),
    "db_is_journal_without_overwrite": (_journal, ["--db", "{}"]),
    "logdir_is_db": (_journal, ["--db", "{}", "--logdir", "{}", "--overwrite"]),
    "resume_missing": (lambda t: t / "none.db", ["--resume", "{}"]),
    "resume_empty_file": (_file(lambda p: p.touch()), ["--resume", "{}"]),
    "resume_text_file": (_file(_text), ["--resume", "{}"]),
    "resume_foreign_sqlite": (_file(_foreign_sqlite), ["--resume", "{}"]),
    "resume_oasis_db": (_file(_oasis_db), ["--resume", "{}"]),
    "resume_not_written_by_cli": (_journal, ["--resume", "{}"]),
    "resume_meta_json_damaged": (_edit_meta("UPDATE meta SET value = '{' WHERE key = 'config'"), ["--resume", "{}"]),
    "resume_meta_config_gone": (_edit_meta("DELETE FROM meta WHERE key = 'config'"), ["--resume", "{}"]),
    "resume_rows_damaged": (_edit_meta("DELETE FROM user_account WHERE user_id = 0"), ["--resume", "{}"]),
    "resume_meta_rng_gone": (_edit_meta("DELETE FROM meta WHERE key = 'rng'"), ["--resume", "{}"]),
    "resume_cli_settings_damaged": (
        _edit_meta('UPDATE meta SET value = \'{"cli": {"steps": "x"}}\' WHERE key = \'state\''),
        ["--resume", "{}"],
    ),
    "resume_other_platform_journal": (
        _edit_meta("UPDATE meta SET value = json_set(value, '$.platform', 'mastodon') WHERE key = 'config'"),
        ["--resume", "{}"],
    ),
    "resume_as_another_platform": (_cli_journal, ["--resume", "{}", "--platform", "reddit"]),
    "resume_with_other_users": (_cli_journal, ["--resume", "{}", "--users", "99"]),
    "resume_with_other_policy": (_cli_journal, ["--resume", "{}", "--policy", "random"]),
    "resume_into_another_db": (_cli_journal, ["--resume", "{}", "--db", "elsewhere.db"]),
    "resume_with_overwrite": (_cli_journal, ["--resume", "{}", "--overwrite"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_command_line_input_is_one_line_and_exit_code_2(case, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = BAD[case]
    if isinstance(spec, tuple):
        target = str(spec[0](tmp_path))
        args = [a.replace("{}", target) for a in spec[1]]
    else:
        args = spec
    argv = ["run", "--users", "20", "--steps", "2", "--policy", "abm", *QUIET, *args]
    if "--resume" in args:
        argv = ["run", *QUIET, *args]
    before = snapshot(tmp_path)
    code, err = cli(capsys, *argv)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "error" in err, err
    assert snapshot(tmp_path) == before  # nothing written, nothing deleted (no 20-step run for --steps 0)


def test_report_of_a_file_that_is_not_a_journal_is_one_line(tmp_path, capsys):
    path = tmp_path / "notes.db"
    _text(path)
    code, err = cli(capsys, "report", str(path), "--out", str(tmp_path / "out"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a SQLite database" in err
    assert sorted(os.listdir(tmp_path)) == ["notes.db"]


def test_report_of_a_journal_reads_it_and_leaves_nothing_beside_it(tmp_path, capsys):
    """`oasis-gym report` writes only its own output: the journal keeps its bytes and gets no
    -wal / -shm files (a mode=ro connection to a WAL database leaves both behind)."""
    path = tmp_path / "run.db"
    run_env(path)
    before = snapshot(tmp_path)
    code, err = cli(capsys, "report", str(path), "--out", str(tmp_path / "out"))
    assert code == 0, err
    after = snapshot(tmp_path)
    assert sorted(after) == sorted([*before, "out"]) and all(after[k] == before[k] for k in before)
    assert any(p.suffix == ".png" for p in (tmp_path / "out").iterdir())


def test_a_refused_reset_leaves_no_live_episode(tmp_path):
    path = tmp_path / "notes.db"
    _text(path)
    env = twitter_v0.parallel_env(db_path=str(path), **ENV)
    with pytest.raises(JournalError):
        env.reset(seed=0)
    assert env.agents == []
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})


def test_bad_arguments_in_a_real_process(tmp_path):
    for argv in (["--steps", "0"], ["--users", "0"], ["--activation", "abc"]):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "oasis_gym.cli",
                "run",
                "--policy",
                "abm",
                "--db",
                str(tmp_path / "x.db"),
                *QUIET,
                *argv,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr and not (tmp_path / "x.db").exists()


@pytest.mark.parametrize(
    "kwargs", [{"max_cycles": 0}, {"max_cycles": -1}, {"users": True}, {"users": 0}, {"users": -5}]
)
def test_the_api_rejects_values_that_define_no_run(kwargs):
    with pytest.raises(ValueError, match="max_cycles|users"):
        twitter_v0.parallel_env(**{**ENV, **kwargs}).reset(seed=0)


def test_a_resume_that_contradicts_its_journal_is_refused_from_python(tmp_path):
    path = tmp_path / "j.db"
    run_env(path, steps=2)
    with pytest.raises(ValueError, match="twitter journal"):
        SocialMediaEnv.resume(str(path), platform="reddit")
    env = SocialMediaEnv.resume(str(path), max_cycles=4)  # a longer run is no contradiction
    assert env.sim.config.platform == "twitter" and env.agents
    env.close()
