"""Recommender-v2 (issue 30): kinds that want different feeds, the affinity history
summaries, campaign bots (v1's numbers, pinned when v2 came, are in test_pins_runner.py)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import oasis_gym  # noqa: F401  (registers the ids)
from oasis_gym.batched.engine import Engine
from oasis_gym.model.ranking import AFFINITY_FEATURES, user_feature_names
from oasis_gym.model.tiers import TIERS, TIERS_V2, tier
from oasis_gym.model.users import contrast
from oasis_gym.train import tuned_baselines as tb
from oasis_gym.train.privileged import kind_features

SMALL = {"users": 200, "max_steps": 5}


def test_v2_ranks_with_eight_user_features_and_v1_with_six():
    assert len(gym.make("oasis_gym/Recommender-v1", **SMALL).action_space.sample()) == 6 * 9
    env = gym.make("oasis_gym/Recommender-v2", **SMALL)
    assert env.action_space.shape == (8 * 9,) and env.observation_space.shape == (19,)
    assert user_feature_names(tier("medium", 2))[-2:] == AFFINITY_FEATURES
    assert gym.make("oasis_gym/Recommender-v2", ranking="global", **SMALL).action_space.shape == (9,)
    assert tb.user_rows({"difficulty": "hard", "version": 2}) == 8 and tb.user_rows({"difficulty": "hard"}) == 6


def test_v2_tiers_differ_from_v1_only_in_the_v2_mechanisms():
    for name, v1 in TIERS.items():
        v2 = TIERS_V2[name]
        assert v2.history_affinities and v2.campaign_visits and not v1.history_affinities
        same = {f for f in v1.__dataclass_fields__ if getattr(v1, f) == getattr(v2, f)}
        changed = set(v1.__dataclass_fields__) - same
        assert changed <= {
            "engage_in_network",
            "engage_recency",
            "campaign_visits",
            "history_affinities",
            "kind_shares",
        }
    with pytest.raises(ValueError, match="version"):
        tier("medium", 99)


def test_the_affinity_is_the_engagement_rate_contrast_updated_only_when_both_were_served():
    in_net = np.array([[1, 1, 0, 0], [1, 1, 1, 1]], np.float32)
    valid = np.ones_like(in_net)
    engaged = np.array([[1, 1, 0, 0], [1, 0, 0, 0]], np.float32)
    ema = np.array([0.2, 0.2], np.float32)
    out = contrast(ema, in_net * valid, (1 - in_net) * valid, engaged)
    # user 0: rate 1 in-network, 0 outside -> 0.7 * 0.2 + 0.3 * 1; user 1 saw no out-of-network post
    np.testing.assert_allclose(out, [0.7 * 0.2 + 0.3, 0.2], rtol=1e-6)


def test_in_network_affinity_separates_casual_users_from_news_seekers():
    engine = Engine(1, 1000, "medium", version=2)
    engine.reset(np.arange(1), np.array([5000]))
    for _ in range(40):
        engine.step()
    kind, visited = engine.population.kind, engine.state.last_visit[0] >= 0
    aff = engine.state.in_network_ema[0]
    casual, news = aff[visited & (kind == 0)].mean(), aff[visited & (kind == 2)].mean()
    assert casual > news + 0.05  # casual users like their friends' posts, news-seekers fresh ones


def test_campaign_bots_visit_every_step_of_a_campaign_and_v1_bots_do_not():
    for version, always in ((2, True), (1, False)):
        engine = Engine(1, 1000, "medium", version=version)
        engine.reset(np.arange(1), np.array([5000]))
        engine.state.campaign[:] = True
        bots = engine.state.misinfo_account[0]
        seen = [engine._visits(np.ones(1, bool))[0][bots].all() for _ in range(5)]
        assert all(seen) == always


def test_a_ranking_that_knows_the_kind_helps_more_in_v2():
    """The mechanism, not a tuned number: sending casual users their friends' posts and
    news-seekers fresh posts beats the same ranking for both, in v2 (not in v1's tastes)."""
    gains = {}
    for version in (1, 2):
        env = {"difficulty": "medium", "users": 400, "population_seed": 0, "max_steps": 20, "version": version}
        rows = tb.user_rows(env)
        same = np.zeros((rows, 9), np.float32)
        same[:3] = [0.5, 0.3, 0.3, 0.6, 0.5, 0.0, -0.5, 0.2, 0.5]  # one ranking for all kinds
        split = same.copy()
        split[0, 4] += 1.0  # casual: in-network first
        split[2, 0] += 1.0  # news-seekers: fresh first
        split[2, 4] -= 1.0
        with kind_features():
            r = [
                tb.run_episodes(
                    "recommender", env, range(5000, 5006), lambda o, t, w=w: np.tile(w.ravel(), (len(o), 1))
                )
                for w in (same, split)
            ]
        gains[version] = float((r[1]["engagements"] - r[0]["engagements"]).mean())
    assert gains[2] > 0 and gains[2] > gains[1]
