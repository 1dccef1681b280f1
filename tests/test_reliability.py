"""Checkpoint/resume, crash safety (SIGKILL mid-run), hostile action input."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oasis_gym.app.run import resume, simulate
from oasis_gym.envs import twitter_v0
from oasis_gym.platform import JournalError, Platform
from oasis_gym.platform.journal import read_meta
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.policies.base import RandomPolicy
from oasis_gym.policies.hybrid import HybridPolicy
from oasis_gym.sim import config as sim_config

ALL = tuple(range(23))


def journal_rows(path):
    conn = sqlite3.connect(path)
    try:
        return (
            conn.execute("SELECT user_id, action, info, step, result FROM trace ORDER BY rowid").fetchall(),
            conn.execute("SELECT * FROM post ORDER BY post_id").fetchall(),
            conn.execute("SELECT * FROM opinion ORDER BY rowid").fetchall(),
            conn.execute('SELECT user_id, post_id FROM "like" ORDER BY like_id').fetchall(),
        )
    finally:
        conn.close()


def make_policy():
    return HybridPolicy([(RandomPolicy(), np.arange(5))], default=ABMPolicy())


def test_resume_continues_bit_identically(tmp_path):
    kw = dict(users=400, activation=0.3, max_cycles=12, available_actions=ALL)
    full = twitter_v0.parallel_env(db_path=str(tmp_path / "full.db"), **kw)
    simulate(full, make_policy(), seed=11)
    full.close()
    part = twitter_v0.parallel_env(db_path=str(tmp_path / "part.db"), **kw)
    simulate(part, make_policy(), 5, seed=11)
    part.close()
    env, summary = resume(str(tmp_path / "part.db"), make_policy())
    env.close()
    assert summary.steps == 7
    assert journal_rows(tmp_path / "full.db") == journal_rows(tmp_path / "part.db")


CRASH_SCRIPT = textwrap.dedent("""
    import sys
    from oasis_gym.envs import twitter_v0
    from oasis_gym.policies.abm import ABMPolicy
    from oasis_gym.app.run import simulate
    env = twitter_v0.parallel_env(users=3000, activation=0.5, max_cycles=400, db_path=sys.argv[1],
                                  available_actions=tuple(range(23)))
    simulate(env, ABMPolicy(), seed=5)
""")


def test_sigkill_mid_run_leaves_a_consistent_resumable_journal(tmp_path):
    db = tmp_path / "crash.db"
    script = tmp_path / "run.py"
    script.write_text(CRASH_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(db)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600  # only catches a hang (a loaded 2-core machine: minutes)
    steps = 0
    while time.monotonic() < deadline and steps < 4:
        time.sleep(0.2)
        try:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            row = conn.execute("SELECT value FROM meta WHERE key='step'").fetchone()
            conn.close()
            steps = int(row[0]) if row else 0
        except sqlite3.Error:
            steps = 0
    assert steps >= 4, proc.stderr.read().decode() if proc.poll() is not None else "no step 4 in 600 s"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    step = int(conn.execute("SELECT value FROM meta WHERE key='step'").fetchone()[0])
    traced = {s for (s,) in conn.execute("SELECT DISTINCT step FROM trace")}
    conn.close()
    assert step < 400 and traced <= set(range(step)) and max(traced) == step - 1  # exactly the completed steps
    restored = Platform.from_db(db)
    assert restored.step == step
    env, summary = resume(str(db), ABMPolicy(), 3)
    env.close()
    assert summary.steps == 3
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT MAX(step) FROM trace").fetchone()[0] == step + 2
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_runs_under_100k_users_commit_in_place_larger_ones_on_the_writer_thread(tmp_path):
    """The commit mode is one per run, from its user count (`sim.config.pipelined`)."""
    assert not sim_config.pipelined(99_999) and sim_config.pipelined(100_000)
    env = twitter_v0.parallel_env(users=20, max_cycles=2, db_path=str(tmp_path / "small.db"))
    env.reset(seed=0)
    assert env.sim.journal._writer is None  # in place: a step is in the file when step() returns
    env.step({})
    assert read_meta(tmp_path / "small.db")["step"] == 1
    env.close()


@pytest.mark.parametrize("pipelined", [True, False])
def test_a_failed_journal_write_is_raised_and_the_env_resets_and_closes(tmp_path, monkeypatch, pipelined):
    """Disk full (SQLite's max_page_count). Pipelined (runs of PIPELINE_MIN_USERS users and
    more): the next step raises JournalError. In place (smaller runs): the failing step itself
    raises it and changes nothing, so it goes through once there is room. Either way the
    journal keeps the steps before, and the env still resets and closes."""
    monkeypatch.setattr(sim_config, "PIPELINE_MIN_USERS", 0 if pipelined else 10**9)
    env = twitter_v0.parallel_env(
        users=300, activation=1.0, max_cycles=5, db_path=str(tmp_path / "full.db"), available_actions=ALL
    )
    policy = make_policy()
    obs, _ = env.reset(seed=1)
    policy.reset(env, np.arange(300), 1)
    env.step_batch(policy.act(env, env.sim.obs))
    conn = env.sim.journal.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={pages}")
    if pipelined:
        env.step_batch(policy.act(env, env.sim.obs))  # handed to the writer thread, which fails
        with pytest.raises(JournalError, match="full"):
            env.step_batch(policy.act(env, env.sim.obs))
    else:
        acts = policy.act(env, env.sim.obs)
        with pytest.raises(JournalError, match="a step failed to commit.*full"):
            env.step_batch(acts)
        assert env.sim.platform.step == 1  # memory as before the step
        conn.execute("PRAGMA max_page_count=1073741823")
        env.step_batch(acts)  # the same step, now with room
        assert env.sim.platform.step == Platform.from_db(tmp_path / "full.db").step == 2
        conn.execute(f"PRAGMA max_page_count={conn.execute('PRAGMA page_count').fetchone()[0]}")
        with pytest.raises(JournalError, match="full"):
            env.step_batch(policy.act(env, env.sim.obs))
    assert Platform.from_db(tmp_path / "full.db").step == (1 if pipelined else 2)
    env.reset(seed=2)  # a new episode, a new journal
    summary = simulate(env, policy, seed=2, reset=False)
    assert summary.steps == 5
    env.close()
    env.close()


action_values = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.none(),
    st.lists(st.integers(-5, 30), max_size=6),
    st.binary(max_size=10),
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(st.integers(-3, 30), st.floats(), st.text(max_size=3)),
            "post": st.one_of(st.integers(-3, 30), st.floats(), st.none()),
            "comment": st.integers(-3, 30),
            "user": st.one_of(st.integers(-(2**63), 2**63 - 1), st.floats()),
            "text": st.one_of(st.text(max_size=300), st.none(), st.integers(), st.binary(max_size=20)),
            "stance": st.one_of(st.floats(), st.text(max_size=3), st.none()),
        },
    ),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(values=st.lists(action_values, min_size=1, max_size=12))
def test_any_action_value_is_applied_or_recorded_never_crashes(tmp_path_factory, values):
    db = tmp_path_factory.mktemp("hyp") / "h.db"
    env = twitter_v0.parallel_env(users=12, activation=1.0, max_cycles=3, db_path=str(db), available_actions=ALL)
    env.reset(seed=0)
    agents = env.agents[: len(values)]
    _, _, _, _, infos = env.step(dict(zip(agents, values)))
    assert all("last_result" in infos[a] for a in agents)
    env.sim.journal.flush()  # mid-episode, the journal's writer thread may still be committing the step
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM trace WHERE step=0").fetchone()[0] == len(agents)
    likes = dict(conn.execute('SELECT post_id, COUNT(*) FROM "like" GROUP BY post_id').fetchall())
    pf = env.sim.platform
    assert [likes.get(p, 0) for p in range(pf.n_posts)] == pf.p_likes.a.tolist()
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    env.close()


def test_a_resumed_env_refuses_reset_clearly(tmp_path):
    from oasis_gym.envs.social_env import SocialMediaEnv

    env = twitter_v0.parallel_env(users=50, activation=0.5, max_cycles=4, db_path=str(tmp_path / "r.db"))
    simulate(env, ABMPolicy(), 2, seed=1)
    env.close()
    resumed = SocialMediaEnv.resume(str(tmp_path / "r.db"))
    views = resumed.sim.profile_views(np.array([5, 2]))  # any order, active or not
    assert [v["user_id"] for v in views] == [5, 2]
    with pytest.raises(RuntimeError, match="make a new env"):
        resumed.reset(seed=0)
