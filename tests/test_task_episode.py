"""The journal records the platform agent's episode (`oasis_gym/world/task_episode.py`, issue 52):
one `task_episode` row a step of a platform-backed Recommender-v4 / Moderator-v2 episode, with
the agent's action, the env's reward and its components, the step's info and the users'
satisfaction and churn, written in the step's transaction: resumed, the rows are the
uninterrupted run's; a step that fails leaves no row."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from oasis_gym.envs.moderator_v2 import ModeratorEnv
from oasis_gym.envs.recommender_v4 import RecommenderEnv
from oasis_gym.errors import JournalError
from oasis_gym.world import task_episode

USERS, STEPS = 300, 12


def _actions(env, steps=STEPS):
    rng = np.random.default_rng(3)
    if isinstance(env, RecommenderEnv):
        return [rng.uniform(-1.5, 1.5, env.action_space.shape).astype(np.float32) for _ in range(steps)]
    return [rng.integers(0, 4, 16) for _ in range(steps)]


def _env(cls, db, **kwargs):
    return cls(difficulty="hard", users=USERS, max_steps=STEPS, backend="platform", journal=True, db_path=str(db),
               **kwargs)  # fmt: skip


def _play(cls, db, seed, actions, resume=False):
    """`actions` on a platform-backed env journaled at `db` (a new episode from `seed`, or the
    journal's resumed); the env, left open."""
    env = _env(cls, db)
    env.resume() if resume else env.reset(seed=seed)
    for a in actions:
        env.step(a)
    return env


@pytest.mark.parametrize("cls", [RecommenderEnv, ModeratorEnv])
@pytest.mark.parametrize("privileged", [False, True])
def test_a_row_a_step_holds_the_envs_action_reward_and_info(cls, privileged, tmp_path):
    db = tmp_path / "episode.db"
    env = _env(cls, db, privileged_info=privileged)
    env.reset(seed=9000)
    steps = [(a, env.step(a)) for a in _actions(env)]
    env.close()
    rows = task_episode.read(str(db))
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    agent = "recommender_0" if cls is RecommenderEnv else "moderator_0"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        posts = {p for (p,) in conn.execute("SELECT post_id FROM post")}
    for row, (action, (_, reward, _, _, info)) in zip(rows, steps, strict=True):
        assert row["agent"] == agent and row["reward"] == reward
        assert {k: row["info"][k] for k in info if k != "episode_seed"} == {
            k: v for k, v in info.items() if k != "episode_seed"
        }
        assert set(info) - set(row["info"]) == {"episode_seed"}
        assert row["satisfaction"] == row["info"]["satisfaction"] and row["churned"] == row["info"]["churned"]
        assert row["visitors"] == info["visitors"] and 0 < row["satisfaction"] <= 1
        terms = list(row["components"].values())
        assert list(row["components"]) == list(env.task.reward_params.weights())
        assert np.float32(sum(terms[1:], terms[0])) == np.float32(reward)
        if cls is RecommenderEnv:  # the weights the feeds were ranked with
            assert np.array_equal(np.float32(row["action"]), np.clip(action, -1, 1).reshape(env.task.weight_shape))
            assert row["queue_posts"] is None
        else:
            assert row["action"] == action.tolist() and len(row["queue_posts"]) == 16
            assert all(p == -1 or p in posts for p in row["queue_posts"])
    assert cls is RecommenderEnv or max(max(r["queue_posts"]) for r in rows) >= 0  # (the first queue is empty)


@pytest.mark.parametrize("cls", [RecommenderEnv, ModeratorEnv])
def test_a_resumed_episode_writes_the_uninterrupted_rows(cls, tmp_path):
    whole, broken = tmp_path / "whole.db", tmp_path / "broken.db"
    actions = _actions(cls(users=USERS))
    _play(cls, whole, 9001, actions).close()
    _play(cls, broken, 9001, actions[:5]).close()
    assert [r["step"] for r in task_episode.read(str(broken))] == [1, 2, 3, 4, 5]
    _play(cls, broken, None, actions[5:], resume=True).close()
    assert task_episode.read(str(broken)) == task_episode.read(str(whole))


def test_a_step_that_fails_in_its_transaction_leaves_no_row_and_resume_goes_on(tmp_path, monkeypatch):
    whole, broken = tmp_path / "whole.db", tmp_path / "broken.db"
    actions = _actions(RecommenderEnv(users=USERS))
    _play(RecommenderEnv, whole, 9000, actions).close()
    env = _play(RecommenderEnv, broken, 9000, actions[:4])
    save = task_episode.save

    def failing(conn, row):
        save(conn, row)
        raise OSError("disk gone")  # after the row was written in the transaction

    monkeypatch.setattr(task_episode, "save", failing)
    with pytest.raises(OSError, match="disk gone"):
        env.step(actions[4])
    monkeypatch.setattr(task_episode, "save", save)
    env.close()
    assert [r["step"] for r in task_episode.read(str(broken))] == [1, 2, 3, 4]
    _play(RecommenderEnv, broken, None, actions[4:], resume=True).close()
    assert task_episode.read(str(broken)) == task_episode.read(str(whole))


def test_reading_changes_nothing_and_a_journal_without_the_table_has_no_rows(tmp_path):
    with pytest.raises(JournalError):
        task_episode.read(str(tmp_path / "missing.db"))
    assert list(tmp_path.iterdir()) == []
    db = tmp_path / "episode.db"
    env = _env(ModeratorEnv, db)
    env.reset(seed=9000)
    assert task_episode.read(str(db)) == []  # the reset writes no row
    env.step(np.zeros(16, np.int64))
    env.close()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert len(task_episode.read(str(db))) == 1
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
