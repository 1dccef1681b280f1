"""The task ranking as a platform recommender (`recsys/task_ranking.py`, issue 51): in a real
platform-backed episode of Recommender-v4 / Moderator-v2, `TaskRecommender` serves every
visitor the feed the fast path's engine ranked with `model.ranking.rank`, as platform post ids."""

from __future__ import annotations

import numpy as np
import pytest

from oasis_gym.envs.moderator_v2 import ModeratorEnv
from oasis_gym.envs.recommender_v4 import RecommenderEnv
from oasis_gym.recsys.task_ranking import TaskRecommender
from oasis_gym.world.platform_world import PlatformWorld

USERS, STEPS = 300, 12


def _check_every_step(env, actions):
    """Step `env` (platform backend) and, at each step's responses, compare the recommender's
    feeds of the visitors with the ones the engine served; returns the number of feeds compared."""
    engine = env.task.engine
    world = engine.tap = PlatformWorld(engine)  # the engine-driven platform backend: its stages seen
    rec = TaskRecommender(world)
    weights, compared = {}, []
    step, responded = engine.step, world.responded

    def spy_step(w=None, *args, **kwargs):
        weights["w"] = None if w is None else np.asarray(w, np.float32)[0]
        return step(w, *args, **kwargs)

    def spy_responded(ua, served, valid, *flags):
        rec.weights = weights["w"]
        feeds = rec.recommend(world.platform, world.alias[ua], 10)
        assert np.array_equal(rec.served.users, ua)
        assert np.array_equal(rec.served.ok, valid)
        assert np.array_equal(rec.served.ids[valid], served[valid])
        expected = np.where(valid, world.pid[world.state.slot(served)], -1)
        assert np.array_equal(feeds, expected)
        assert (feeds[valid] >= 0).all()
        compared.append(int(valid.any(1).sum()))
        return responded(ua, served, valid, *flags)

    engine.step, world.responded = spy_step, spy_responded
    env.reset(seed=9000)
    for action in actions:
        env.step(action)
    env.close()
    return sum(compared)


@pytest.mark.parametrize("difficulty", ["medium", "hard"])
def test_the_task_recommender_serves_what_the_engine_ranks_with_random_weights(difficulty):
    env = RecommenderEnv(difficulty=difficulty, users=USERS, max_steps=STEPS)
    rng = np.random.default_rng(0)
    actions = [rng.uniform(-1, 1, env.action_space.shape).astype(np.float32) for _ in range(STEPS)]
    assert _check_every_step(env, actions) > 100


def test_the_task_recommender_serves_what_the_engine_ranks_with_the_default_weights():
    env = ModeratorEnv(difficulty="medium", users=USERS, max_steps=STEPS)
    codes = [(np.arange(16) + t) % 4 for t in range(STEPS)]
    assert _check_every_step(env, codes) > 100


def test_the_task_recommender_refuses_weights_of_another_shape_and_accounts_of_no_task_user():
    env = RecommenderEnv(difficulty="medium", users=USERS, max_steps=STEPS)
    world = env.task.engine.tap = PlatformWorld(env.task.engine)
    env.reset(seed=9000)
    rec = TaskRecommender(world)
    with pytest.raises(ValueError, match="weights are"):
        rec.set_weights(np.zeros(9, np.float32))
    rec.set_weights(np.ones(rec.weight_shape(), np.float32))
    bots = world.bots[world.bots >= 0]
    with pytest.raises(ValueError, match="task users only"):
        rec.recommend(world.platform, bots[:1], 10)
    env.close()
