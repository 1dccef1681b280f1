"""The task ranking as a platform recommender (`recsys/task_ranking.py`, issue 51): in a real
platform-backed episode of Recommender-v4 / Moderator-v2, `TaskRecommender` (the env's
`world.recsys`) serves every visitor the feed the fast path's engine ranks with
`model.ranking.rank` in the same episode, as platform post ids."""

from __future__ import annotations

import numpy as np
import pytest
from fast_path_run import fast_responses

from oasis_gym.envs.moderator_v2 import ModeratorEnv
from oasis_gym.envs.recommender_v4 import RecommenderEnv
from oasis_gym.recsys.task_ranking import TaskRecommender

USERS, STEPS = 300, 12


def _check_every_step(cls, difficulty, actions, monkeypatch):
    """Step the platform-backed env and, at each step, compare the feeds its recommender serves
    (the model's view and the platform post ids) with the fast path's; the feeds compared."""
    fast = []  # the fast path's feeds at each step: visitors, post ids, whether a slot holds a post
    fast_responses(cls, difficulty, USERS, actions, 9000, monkeypatch, lambda *feed: fast.append(feed[:3]))
    env = cls(difficulty=difficulty, users=USERS, max_steps=STEPS, backend="platform")
    world = env.world
    rec, compared = world.recsys, []
    recommend = rec.recommend

    def spy(platform, accounts, k, rng=None):
        feeds = recommend(platform, accounts, k, rng)
        ua, served, valid = fast[len(compared)]
        assert np.array_equal(rec.served.users, ua)
        assert np.array_equal(rec.served.ok, valid)
        assert np.array_equal(rec.served.ids[valid], served[valid])
        row = np.searchsorted(ua, rec.model_users(np.asarray(accounts)))  # the platform's order -> the model's
        expected = np.where(valid, world.pid[world.state.slot(served)], -1)[row]
        assert np.array_equal(feeds, expected)
        assert (feeds[valid[row]] >= 0).all()
        authors = world.alias[world.state.author[0, world.state.slot(served[valid])]]
        assert np.array_equal(platform.p_author.a[world.pid[world.state.slot(served[valid])]], authors)
        compared.append(int(valid.any(1).sum()))
        return feeds

    rec.recommend = spy
    env.reset(seed=9000)
    for action in actions:
        env.step(action)
    env.close()
    assert len(compared) == len(fast) == STEPS
    return sum(compared)


@pytest.mark.parametrize("difficulty", ["medium", "hard"])
def test_the_task_recommender_serves_what_the_engine_ranks_with_random_weights(difficulty, monkeypatch):
    rng = np.random.default_rng(0)
    shape = RecommenderEnv(users=USERS).action_space.shape
    actions = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(STEPS)]
    assert _check_every_step(RecommenderEnv, difficulty, actions, monkeypatch) > 100


def test_the_task_recommender_serves_what_the_engine_ranks_with_the_default_weights(monkeypatch):
    codes = [(np.arange(16) + t) % 4 for t in range(STEPS)]
    assert _check_every_step(ModeratorEnv, "medium", codes, monkeypatch) > 100


def test_the_task_recommender_refuses_weights_of_another_shape_and_accounts_of_no_task_user():
    env = RecommenderEnv(difficulty="medium", users=USERS, max_steps=STEPS, backend="platform")
    env.reset(seed=9000)
    world = env.world
    rec = TaskRecommender(world)
    with pytest.raises(ValueError, match="weights are"):
        rec.set_weights(np.zeros(9, np.float32))
    rec.set_weights(np.ones(rec.weight_shape(), np.float32))
    bots = world.bots[world.bots >= 0]
    with pytest.raises(ValueError, match="task users only"):
        rec.recommend(world.platform, bots[:1], 10)
    env.close()
