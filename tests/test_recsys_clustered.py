"""Clustered out-of-network retrieval (recsys/clustered.py): the exact ranking when every
cluster is probed, the feed rules at any setting, its recall on template posts, the "auto"
switch, and its building blocks (ordered keys, distinct rows, k-means)."""

from __future__ import annotations

import numpy as np
import pytest
from test_recsys import busy, check_visible, fresh  # noqa: F401  (busy: a fixture)

from oasis_gym.actions import ActionType as A
from oasis_gym.platform import ActionBatch, Platform
from oasis_gym.population import synthetic
from oasis_gym.recsys import TwitterRecommender
from oasis_gym.recsys.clustered import distinct_rows, key_cols, score_keys, spherical_kmeans, top_keys
from oasis_gym.sim.content import TOPIC_WORDS, template_text


def template_platform(n_users: int = 3000, n_posts: int = 3000, seed: int = 0) -> tuple[Platform, np.ndarray]:
    """Users of a synthetic population posting the engine's template texts (many posts share
    a text), some mutes; returns the platform and the users who posted."""
    rng = np.random.default_rng(seed)
    pf = Platform()
    pf.add_users(synthetic(n_users, seed=seed))
    for _ in range(6):
        m = n_posts // 6
        authors = rng.integers(0, n_users, m)
        topics = np.array(TOPIC_WORDS)[rng.integers(0, len(TOPIC_WORDS), m)]
        texts = [template_text(rng.uniform(-1, 1, 1), str(t), rng)[0] for t in topics]
        pf.create_posts(authors, texts)
        pf.apply(ActionBatch(rng.integers(0, n_users, 50), np.full(50, A.MUTE), rng.integers(0, n_users, 50)))
        pf.advance(3)
    return pf, np.unique(pf.p_author.a)


def assert_same_up_to_rounding(rec, pf: Platform, users: np.ndarray, got: np.ndarray, want: np.ndarray) -> None:
    """Feeds equal up to float rounding: where they differ, the posts' scores (float64 here)
    agree slot by slot within float32 rounding (posts of different texts can tie exactly,
    and each path breaks such a tie by the last bit of its own float32 sums)."""
    vec = rec.index.user_vectors(pf, users).astype(np.float64)

    def scores(r: int, feed: np.ndarray) -> np.ndarray:
        p = feed[feed >= 0]
        cos = rec.index.post_matrix[p].astype(np.float64) @ vec[r]
        return rec.post_prior(pf, p) * (cos + rec.tie_epsilon)

    differ = np.flatnonzero((got != want).any(axis=1))
    for r in differ:
        a, b = scores(r, got[r]), scores(r, want[r])
        assert len(a) == len(b) and np.allclose(a, b, rtol=1e-5, atol=1e-9), (r, got[r], want[r])


def recall(exact: np.ndarray, approx: np.ndarray) -> float:
    hits = [len(np.intersect1d(e[e >= 0], a[a >= 0])) / max(1, (e >= 0).sum()) for e, a in zip(exact, approx)]
    return float(np.mean(hits))


@pytest.mark.parametrize("k", [1, 5, 12])
def test_probing_every_cluster_ranks_as_the_exact_path(busy, k):  # noqa: F811
    users = np.arange(busy.n_users)
    exact = fresh("twitter", busy, retrieval="exact").out_of_network(busy, users, k)
    every = fresh("twitter", busy, retrieval="clustered", n_clusters=8, n_probe=8, n_fallback=0)
    assert_same_up_to_rounding(every, busy, users, every.out_of_network(busy, users, k), exact)


def test_probing_every_cluster_ranks_template_posts_as_exact():
    """Posts sharing a text (ties broken towards the newer post), muted authors, own posts."""
    pf, users = template_platform()
    exact = TwitterRecommender(retrieval="exact")
    every = TwitterRecommender(retrieval="clustered", n_clusters=16, n_probe=16, n_fallback=0)
    for rec in (exact, every):
        rec.reset(pf)
    got, want = every.out_of_network(pf, users, 10), exact.out_of_network(pf, users, 10)
    assert_same_up_to_rounding(every, pf, users, got, want)


@pytest.mark.parametrize("probe, fallback", [(1, 0), (2, 3), (3, 40)])
def test_clustered_feeds_follow_the_feed_rules(busy, probe, fallback):  # noqa: F811
    users = np.arange(busy.n_users)
    rec = fresh("twitter", busy, retrieval="clustered", n_clusters=6, n_probe=probe, n_fallback=fallback)
    feed = rec.recommend(busy, users, 8, None)
    check_visible(busy, users, feed)
    oon = rec.out_of_network(busy, users, 8)
    check_visible(busy, users, oon)
    assert (oon >= 0).sum(axis=1).min() == 8  # enough candidates for every user


def test_clustered_recall_on_template_posts():
    pf, users = template_platform()
    exact = TwitterRecommender(retrieval="exact")
    approx = TwitterRecommender(retrieval="clustered", n_clusters=32, n_probe=4, n_fallback=16)
    for rec in (exact, approx):
        rec.reset(pf)
    ex, ap = exact.out_of_network(pf, users, 10), approx.out_of_network(pf, users, 10)
    assert 0.9 <= recall(ex, ap) < 1.0  # an approximation, and a close one
    assert np.array_equal(approx.out_of_network(pf, users, 10), ap)  # deterministic


def test_auto_ranks_exactly_below_the_threshold_and_clustered_from_it(busy):  # noqa: F811
    users = np.arange(busy.n_users)
    auto = fresh("twitter", busy)
    assert auto.retrieval == "auto" and not auto.clustered(busy)
    exact = fresh("twitter", busy, retrieval="exact").out_of_network(busy, users, 6)
    assert np.array_equal(auto.out_of_network(busy, users, 6), exact)
    low = fresh("twitter", busy, clustered_min_users=busy.n_users, n_clusters=4, n_probe=1)
    assert low.clustered(busy)
    clustered = fresh("twitter", busy, retrieval="clustered", n_clusters=4, n_probe=1)
    assert np.array_equal(low.out_of_network(busy, users, 6), clustered.out_of_network(busy, users, 6))
    assert not np.array_equal(low.out_of_network(busy, users, 6), exact)


@pytest.mark.parametrize(
    "params",
    [{"retrieval": "ivf"}, {"n_clusters": 0}, {"n_probe": 1.5}, {"n_fallback": -1}, {"n_probe": True}],
)
def test_bad_retrieval_settings_are_refused(params):
    with pytest.raises(ValueError):
        TwitterRecommender(**params)


def test_score_keys_order_by_score_then_column():
    scores = np.array([0.5, -0.5, 0.5, -np.inf, 0.0, -0.0, 3e-39, -2.0, np.inf], np.float32)
    cols = np.arange(len(scores))
    keys = score_keys(scores, cols)
    expected = sorted(range(len(scores)), key=lambda i: (float(scores[i]), cols[i]))
    assert np.argsort(keys, kind="stable").tolist() == expected
    assert np.array_equal(key_cols(keys), cols)
    best = top_keys(keys[None, :], 3)[0]
    assert key_cols(best).tolist() == [8, 2, 0]


def test_distinct_rows_group_equal_rows_in_order_of_appearance():
    rows = np.array([[1, 0], [0, 1], [1, 0], [0, 0], [0, 1]], np.float32)
    distinct, of = distinct_rows(rows)
    assert distinct.tolist() == [[1, 0], [0, 1], [0, 0]]
    assert of.tolist() == [0, 1, 0, 2, 1]
    assert np.array_equal(distinct[of], rows)


def test_spherical_kmeans_groups_by_direction_deterministically():
    rng = np.random.default_rng(3)
    centres = np.eye(4, dtype=np.float32)
    vecs = centres[np.repeat(np.arange(4), 25)] + rng.normal(0, 0.05, (100, 4)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    cent, assign = spherical_kmeans(vecs, 4)
    assert len(np.unique(assign)) == 4
    for g in range(4):  # each true group lands in one cluster
        assert len(np.unique(assign[g * 25 : (g + 1) * 25])) == 1
    again = spherical_kmeans(vecs, 4)
    assert np.array_equal(again[1], assign) and np.array_equal(again[0], cent)
    # fewer distinct rows than clusters asked for: one cluster each
    assert len(spherical_kmeans(centres[[0, 1, 0, 1]], 8)[0]) == 2
