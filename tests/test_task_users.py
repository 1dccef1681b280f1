"""The task users as a user policy (`policies/task_users.py`, issue 51): in real platform-backed
episodes of Recommender-v4 / Moderator-v2, `TaskUsers` (the env's `world.policy`) answers the
feeds the task ranking serves with exactly the likes, reposts and reports the fast path's users
make in the same episode, in whatever order the observation lists its users, and changes nothing
of the world it reads."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from fast_path_run import fast_responses

from oasis_gym.actions import ActionType as A
from oasis_gym.envs.moderator_v2 import ModeratorEnv
from oasis_gym.envs.recommender_v4 import RecommenderEnv
from oasis_gym.policies.task_users import TaskUsers
from oasis_gym.recsys.task_ranking import TaskRecommender
from oasis_gym.world import task_state

USERS, STEPS = 300, 12


def _fast_rows(cls, difficulty, actions, monkeypatch) -> list:
    """Each step's responses of the fast path's users: sorted (model user, feed slot, action)."""
    steps = []

    def record(ua, served, ok, engaged, shared, reported):
        made = []
        for action, mask in ((A.LIKE_POST, engaged & ~shared), (A.REPOST, shared), (A.REPORT_POST, reported)):
            i, j = np.nonzero(mask & ok)
            made += zip(ua[i].tolist(), j.tolist(), [int(action)] * len(i))
        steps.append(sorted(made))

    fast_responses(cls, difficulty, USERS, actions, 9001, monkeypatch, record)
    return steps


def _play(cls, difficulty, actions, shuffle: bool, monkeypatch):
    """Step the platform-backed env; at each step, the task users' rows (as model users, feed
    slots and actions) are compared with the fast path's users' responses in the same episode."""
    fast = _fast_rows(cls, difficulty, actions, monkeypatch)
    env = cls(difficulty=difficulty, users=USERS, max_steps=len(actions), backend="platform")
    world, policy = env.world, env.world.policy
    assert isinstance(policy, TaskUsers)
    act, seen = policy.act, {"steps": 0, "rows": 0, "reports": 0}

    def spy(sim, obs):
        if shuffle:  # the observation's order need not be the model's
            obs = obs.take(np.random.default_rng(len(obs.users)).permutation(len(obs.users)))
        before = task_state.state_arrays(world.state)
        acts = act(sim, obs)
        after = task_state.state_arrays(world.state)
        assert all(np.array_equal(before[k], after[k]) for k in before), "the policy changed the world"
        model = world.recsys.model_users(acts.users)
        got = sorted(zip(model.tolist(), acts.column("post").tolist(), acts.column("type").tolist()))
        assert got == fast[seen["steps"]], f"step {seen['steps'] + 1}"
        reports = int((acts.type == int(A.REPORT_POST)).sum())
        assert sum(t == "misleading" for t in acts.texts()) == reports
        seen["steps"] += 1
        seen["rows"] += len(got)
        seen["reports"] += reports
        return acts

    policy.act = spy
    env.reset(seed=9001)
    for action in actions:
        env.step(action)
    env.close()
    return seen


@pytest.mark.parametrize(("difficulty", "shuffle"), [("medium", False), ("hard", True)])
def test_task_users_make_the_fast_paths_rows_on_the_task_feeds(difficulty, shuffle, monkeypatch):
    rng = np.random.default_rng(1)
    shape = RecommenderEnv(users=USERS).action_space.shape
    actions = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(STEPS)]
    seen = _play(RecommenderEnv, difficulty, actions, shuffle, monkeypatch)
    assert seen["steps"] == STEPS and seen["rows"] > 100 and seen["reports"] > 0


def test_task_users_make_the_fast_paths_rows_under_moderation(monkeypatch):
    codes = [(np.arange(16) + t) % 4 for t in range(2 * STEPS)]
    seen = _play(ModeratorEnv, "hard", codes, False, monkeypatch)
    assert seen["steps"] == 2 * STEPS and seen["rows"] > 100 and seen["reports"] > 0


def test_task_users_refuse_feeds_the_task_ranking_did_not_serve():
    env = RecommenderEnv(difficulty="medium", users=USERS, max_steps=STEPS, backend="platform")
    env.reset(seed=9001)
    rec = TaskRecommender(env.world)
    with pytest.raises(ValueError, match="task ranking"):
        TaskUsers().act(SimpleNamespace(recsys=rec), SimpleNamespace(users=np.arange(3)))
    rec.recommend(env.world.platform, np.arange(3), 10)
    with pytest.raises(ValueError, match="not those"):
        TaskUsers().act(SimpleNamespace(recsys=rec), SimpleNamespace(users=np.arange(1, 4)))
    env.close()
