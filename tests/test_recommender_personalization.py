"""bench/research/recommender_personalization.py (issue 30): the privileged per-kind ranking against the
tuned global one. Tiny settings here; the README's figures use the defaults."""

from __future__ import annotations

import numpy as np
import pytest
from bench_scripts import run_bench

from oasis_gym.batched import feed
from oasis_gym.batched.tasks import RecommenderTask
from oasis_gym.train.privileged import kind_features

SCRIPT = "research/recommender_personalization.py"
TINY = "--users 100 --max-steps 3 --iterations 1 --population 3 --tune-seeds 5000".split()


def test_the_privileged_features_are_the_hidden_kind_and_are_put_back():
    task = RecommenderTask(1, users=60, difficulty="medium", max_steps=2)
    task.reset(np.arange(1), np.array([5000]))
    ua = np.arange(60)
    ka = np.zeros(60, np.int64)
    original = feed.visitor_features
    with kind_features():
        z = feed.visitor_features(task.state, ka, ua)
    assert feed.visitor_features is original
    np.testing.assert_array_equal(z.argmax(1), task.state.pop.kind)
    assert (z.sum(1) == 1).all() and (z[:, 3:] == 0).all()


@pytest.mark.parametrize("version", ["1", "2"])
def test_the_bench_prints_one_json_line(version):
    out = run_bench(SCRIPT, "--version", version, *TINY, "--eval-seeds", "9000", "9001", "9002")
    assert out["bench"] == "recommender_personalization" and len(out["per_kind_weights"]) == 3
    assert out["version"] == int(version)
    for name in ("held-out seeds", "held-out population"):
        d = out[name]["per_kind_minus_global"]
        assert d["lo"] <= d["mean"] <= d["hi"] and out[name]["episodes"] == 3


def test_the_campaign_reference_knows_the_campaign_and_is_tuned_from_the_per_kind_ranking():
    task = RecommenderTask(1, users=60, difficulty="medium", max_steps=2)
    task.reset(np.arange(1), np.array([5000]))
    task.state.campaign[:] = True
    with kind_features(campaign=True):
        z = feed.visitor_features(task.state, np.zeros(60, np.int64), np.arange(60))
    np.testing.assert_array_equal(z[:, 3:6], z[:, :3])  # kind x campaign on
    out = run_bench(SCRIPT, "--campaign", *TINY, "--eval-seeds", "9000", "9001")
    d = out["held-out seeds"]["per_kind_campaign_minus_per_kind"]
    assert d["lo"] <= d["mean"] <= d["hi"] and out["held-out population"]["campaign_wins"] <= 2
