"""The moderator's fact-check service is part of the journaled state: a run with `moderator_0`
stopped and resumed equals the uninterrupted run in every table (meta included), the pending
checks, verdicts, author flags and error draws continuing where they were."""

from __future__ import annotations

import sqlite3

import numpy as np

from oasis_gym.actions import ActionType
from oasis_gym.agents.fact_check import STATE_KEY
from oasis_gym.envs import twitter_v0
from oasis_gym.model.moderation import V0_VIEW_FEATURES
from oasis_gym.platform import MISINFO_LABEL, TRUE_LABEL
from oasis_gym.policies.base import RandomPolicy

ALL = tuple(int(a) for a in ActionType)
PARAMS = {"moderator": {"top_m": 6, "check_budget": 2, "check_delay": 2, "check_error": 0.3}}
STEPS, STOP = 10, 5


def seed_posts(sim) -> None:
    """Labelled source posts, half of them misinformation (the scenario's role, in small)."""
    n = 16
    label = np.where(np.arange(n) % 2 == 0, MISINFO_LABEL, TRUE_LABEL).astype(np.int8)
    stance = np.linspace(-0.9, 0.9, n).astype(np.float32)
    sim.platform.create_posts(np.arange(n), [f"Breaking: news {i}" for i in range(n)], stance=stance, label=label)


def moderate(env) -> np.ndarray:
    """Act on the fact-checks: remove posts checked as misinformation, ask for checks of the
    unchecked ones (code 5: the first `check_budget` are sent), label the rest if reported."""
    x = env.sim.platform_obs["moderator_0"].reshape(PARAMS["moderator"]["top_m"], -1)
    verdict = x[:, V0_VIEW_FEATURES.index("fact_check")]
    pending = x[:, V0_VIEW_FEATURES.index("fact_check_pending")]
    filled = x[:, V0_VIEW_FEATURES.index("filled")]
    reports = x[:, V0_VIEW_FEATURES.index("reports")]
    ask = (verdict == 0) & (pending == 0) & (filled > 0)
    return np.where(verdict > 0, 3, np.where(ask, 5, np.where(reports >= 1, 1, 0))).astype(np.int64)


def make_env(path):
    """A journaled Twitter env with `moderator_0` and the labelled source posts."""
    return twitter_v0.parallel_env(
        users=40,
        activation=0.6,
        max_cycles=STEPS,
        available_actions=ALL,
        moderator_agent=True,
        platform_agent_params=PARAMS,
        db_path=str(path),
        setup=seed_posts,
    )


def users_policy(env) -> RandomPolicy:
    """The users' random policy, seeded 7."""
    policy = RandomPolicy()
    policy.reset(env, np.arange(env.sim.platform.n_users), 7)
    return policy


def started(path):
    """A new env at `path` reset with seed 7, and its users' policy."""
    env = make_env(path)
    env.reset(seed=7)
    return env, users_policy(env)


def run(env, policy, steps: int) -> None:
    """`steps` steps: the users' policy and the moderator acting on the fact-checks."""
    for _ in range(steps):
        env.step_batch(policy.act(env, env.sim.obs), {"moderator_0": moderate(env)})


def keyed_tables(path) -> dict:
    """Every table in key order (primary key, else insertion order); the journal's own
    random id is the one meta value two files never share."""
    conn = sqlite3.connect(str(path))
    try:
        out = {}
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name").fetchall():
            info = sorted(conn.execute(f'PRAGMA table_info("{name}")').fetchall(), key=lambda r: r[5])
            pk = [r[1] for r in info if r[5] > 0]
            order = ", ".join(f'"{c}"' for c in pk) if pk else "rowid"
            rows = conn.execute(f'SELECT * FROM "{name}" ORDER BY {order}').fetchall()
            out[name] = [r for r in rows if not (name == "meta" and r[0] == "journal_id")]
        return out
    finally:
        conn.close()


def same(a, b) -> bool:
    """Rows equal (NaN equal to NaN)."""
    return a == b or (len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b)))


def test_stop_and_resume_with_a_moderator_equals_the_uninterrupted_run(tmp_path, monkeypatch):
    """Stopped after 5 steps with checks in flight, resumed in a new env: the service's state
    is back as it was, and every table (meta included) equals the uninterrupted run's."""
    for d in ("full", "stop"):
        (tmp_path / d).mkdir()
    # the uninterrupted run (both journals are "run.db" in their folder: the saved config names the path)
    monkeypatch.chdir(tmp_path / "full")
    env, policy = started("run.db")
    run(env, policy, STOP)
    fc_at_stop = env.sim.platform_agents["moderator_0"].fact_check.state_dict(env.sim.agent_view())
    run(env, policy, STEPS - STOP)
    fc_full = env.sim.platform_agents["moderator_0"].fact_check
    assert len(fc_full.sent_step) > 4 and (fc_full.verdicts != 0).sum() >= 4  # checks were asked for and came back
    env.close()

    # stopped after STOP steps, then resumed from the journal in a new env
    monkeypatch.chdir(tmp_path / "stop")
    env, policy = started("run.db")
    run(env, policy, STOP)
    saved = policy.state_dict()
    env.close()
    env = twitter_v0.parallel_env.resume("run.db", setup=seed_posts)
    assert env.sim.platform.step == STOP
    fc = env.sim.platform_agents["moderator_0"].fact_check
    assert fc.state_dict(env.sim.agent_view()) == fc_at_stop  # pending checks, verdicts, flags, seed
    assert any(fc.pending(np.array(sorted(fc.sent_step))))  # checks were in flight at the stop
    policy = users_policy(env)
    policy.load_state_dict(saved)
    run(env, policy, STEPS - STOP)
    env.close()

    full, resumed = keyed_tables(tmp_path / "full" / "run.db"), keyed_tables(tmp_path / "stop" / "run.db")
    assert len(full["moderation"]) > 0
    assert sorted(full) == sorted(resumed)
    for name in full:
        assert len(full[name]) == len(resumed[name]), f"table {name}"
        for i, (a, b) in enumerate(zip(full[name], resumed[name])):
            assert same(a, b), f"table {name} row {i}: {a} != {b}"
    meta = dict(full["meta"])
    assert STATE_KEY in meta["state"]  # the service's state is in the journal


def test_the_state_saved_at_a_reset_is_the_new_episode_s(tmp_path, monkeypatch):
    """A second episode's first journal row holds its own (empty) fact-check state, not the
    previous episode's: a resume from that step starts the service over."""
    from oasis_gym.platform.journal import read_meta

    monkeypatch.chdir(tmp_path)
    env, policy = started("run.db")
    run(env, policy, 4)
    assert env.sim.platform_agents["moderator_0"].fact_check.sent_step
    env.reset(seed=9)  # a new episode: the same journal path, replaced (it is this env's own)
    state = read_meta("run.db")["state"][STATE_KEY]
    assert state == {"seed": 9, "sent": [], "verdicts": [[], []], "author_flags": [[], []]}
    env.close()
