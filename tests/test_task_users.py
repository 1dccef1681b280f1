"""The task users as a user policy (`policies/task_users.py`, issue 51): in real platform-backed
episodes of Recommender-v4 / Moderator-v2, `TaskUsers` answers the feeds the task ranking serves
with exactly the likes, reposts and reports the fast path's users make, and changes
nothing of the world it reads."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from oasis_gym.actions import ActionType as A
from oasis_gym.envs.moderator_v2 import ModeratorEnv
from oasis_gym.envs.recommender_v4 import RecommenderEnv
from oasis_gym.policies.task_users import TaskUsers, scratch
from oasis_gym.recsys.task_ranking import TaskRecommender
from oasis_gym.world import task_state
from oasis_gym.world.platform_world import PlatformWorld

USERS, STEPS = 300, 12


def _rows(users, actions, targets, stance=None):
    stance = np.full(len(users), 9.0) if stance is None else np.nan_to_num(stance, nan=9.0)  # (9: no stance)
    return sorted(zip(users.tolist(), actions.tolist(), targets.tolist(), stance.tolist(), strict=True))


def _play(env, actions, shuffle: bool):
    """Step `env` (platform backend); at each step, the policy's actions on a snapshot of the
    world taken when the feeds are ranked are compared with the rows the engine's users made."""
    engine = env.task.engine
    world = engine.tap = PlatformWorld(engine)  # the engine-driven platform backend: its stages seen
    policy, seen = TaskUsers(), {"steps": 0, "rows": 0, "reports": 0}
    weights, snap = {}, {}
    step, visits, responded, end = engine.step, engine._visits, world.responded, world.end

    def spy_step(w=None, *args, **kwargs):
        weights["w"] = None if w is None else np.asarray(w, np.float32)[0]
        return step(w, *args, **kwargs)

    def spy_visits(go):
        active = visits(go)
        snap["state"] = scratch(world.state)
        return active

    def spy_responded(ua, served, valid, engaged, shared, reported):
        out = responded(ua, served, valid, engaged, shared, reported)
        here = SimpleNamespace(state=snap["state"], alias=world.alias, pid=world.pid)
        rec = TaskRecommender(here)
        rec.weights = weights["w"]
        accounts = world.alias[ua]
        if shuffle:  # the observation's order is the platform's, not the model's
            accounts = accounts[np.random.default_rng(len(ua)).permutation(len(ua))]
        feeds = rec.recommend(world.platform, accounts, 10)
        before = task_state.state_arrays(here.state)
        acts = policy.act(SimpleNamespace(recsys=rec), SimpleNamespace(users=accounts))
        after = task_state.state_arrays(here.state)
        assert all(np.array_equal(before[k], after[k]) for k in before), "the policy changed the world"
        row = {int(a): i for i, a in enumerate(accounts.tolist())}
        rows = np.array([row[int(u)] for u in acts.users.tolist()], np.int64)
        target = feeds[rows, acts.post] if len(rows) else np.zeros(0, np.int64)
        snap["acts"] = acts, target
        pid = world.pid[world.state.slot(served)]
        users = np.broadcast_to(accounts_of(ua)[:, None], served.shape)
        expected = []
        for action, mask in ((A.LIKE_POST, engaged & ~shared), (A.REPOST, shared), (A.REPORT_POST, reported)):
            m = mask & valid
            expected += _rows(users[m], np.full(m.sum(), int(action)), pid[m])
        snap["expected"] = expected
        return out

    def accounts_of(ua):
        return world.alias[ua]

    def spy_end():
        acts, target = snap.pop("acts")
        got = _rows(acts.users, acts.type, target, acts.stance)
        assert got == sorted(snap.pop("expected"))
        reports = int((acts.type == int(A.REPORT_POST)).sum())
        assert sum(t == "misleading" for t in acts.texts()) == reports
        seen["reports"] += reports
        seen["steps"] += 1
        seen["rows"] += len(got)
        return end()

    engine.step, engine._visits, world.responded, world.end = spy_step, spy_visits, spy_responded, spy_end
    env.reset(seed=9001)
    for action in actions:
        env.step(action)
    env.close()
    return seen


@pytest.mark.parametrize(("difficulty", "shuffle"), [("medium", False), ("hard", True)])
def test_task_users_make_the_fast_paths_rows_on_the_task_feeds(difficulty, shuffle):
    env = RecommenderEnv(difficulty=difficulty, users=USERS, max_steps=STEPS)
    rng = np.random.default_rng(1)
    actions = [rng.uniform(-1, 1, env.action_space.shape).astype(np.float32) for _ in range(STEPS)]
    seen = _play(env, actions, shuffle)
    assert seen["steps"] == STEPS and seen["rows"] > 100 and seen["reports"] > 0


def test_task_users_make_the_fast_paths_rows_under_moderation():
    env = ModeratorEnv(difficulty="hard", users=USERS, max_steps=2 * STEPS)
    seen = _play(env, [(np.arange(16) + t) % 4 for t in range(2 * STEPS)], shuffle=False)
    assert seen["steps"] == 2 * STEPS and seen["rows"] > 100 and seen["reports"] > 0


def test_task_users_refuse_feeds_the_task_ranking_did_not_serve():
    env = RecommenderEnv(difficulty="medium", users=USERS, max_steps=STEPS)
    env.task.engine.tap = PlatformWorld(env.task.engine)
    env.reset(seed=9001)
    rec = TaskRecommender(env.task.engine.tap)
    with pytest.raises(ValueError, match="task ranking"):
        TaskUsers().act(SimpleNamespace(recsys=rec), SimpleNamespace(users=np.arange(3)))
    rec.recommend(env.task.engine.tap.platform, np.arange(3), 10)
    with pytest.raises(ValueError, match="not those"):
        TaskUsers().act(SimpleNamespace(recsys=rec), SimpleNamespace(users=np.arange(1, 4)))
    env.close()
