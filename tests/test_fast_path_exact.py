"""The fast path's speed work keeps every number (issue 57): the forms that replaced slower ones
give what the old ones gave, and work nobody reads is skipped only where nobody reads it."""

from __future__ import annotations

import numpy as np

from oasis_gym.batched.tasks import ModeratorTask, RecommenderTask
from oasis_gym.model import rng


def test_a_hash_continued_from_its_start_is_the_hash_of_all_its_parts():
    """`start=` (the parts shared by a simulation's draws, hashed once) gives the same draws."""
    key, t, users = rng.episode_key(np.arange(3))[:, None], np.array([[4], [0], [9]]), np.arange(5)
    start = rng.hash64(key, t, 7)
    assert np.array_equal(rng.hash64(key, t, 7, users), rng.hash64(users, start=start))
    assert np.array_equal(rng.uniform(key, t, 7, users), rng.uniform(users, start=start))
    assert rng.hash64(1, 2, 3) == rng.hash64(3, start=rng.hash64(1, 2))  # scalars too


def test_top_columns_are_the_highest_scores_best_first_ties_to_the_lower_column():
    """The packed int32 sort is a stable sort of the scores (distinct beyond 2**-19), -inf last;
    -0.0 sorts just below 0.0."""
    from oasis_gym.model.ranking import top_columns

    draw = np.random.default_rng(0)
    score = np.round(draw.standard_normal((200, 32)), 3).astype(np.float32)
    score[:, 3] = score[:, 7]  # ties
    score[draw.random(score.shape) < 0.2] = -np.inf
    score[:5] = 0.0
    want = np.argsort(-score, axis=1, kind="stable")[:, :10]
    assert np.array_equal(top_columns(score, 10), want)
    score[:5, 1::2] = -0.0
    assert np.array_equal(top_columns(score, 16)[:5], np.r_[0:32:2, 1:12:2][None, :16].repeat(5, 0))


def test_only_the_recommender_task_computes_the_candidate_pools_mean_features():
    """The moderator's observation never reads "pool_means", so its engine skips them; the
    recommender's observation ends with them."""
    for task, wanted in ((RecommenderTask(2, users=60), True), (ModeratorTask(2, users=60), False)):
        task.reset(np.arange(2), np.arange(2))
        out = task.engine.step()
        assert task.engine.pool_means is wanted and ("pool_means" in out) is wanted
        if wanted:
            assert out["pool_means"].shape == (2, 9) and np.isfinite(out["pool_means"]).all()
