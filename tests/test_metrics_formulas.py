"""Metric formulas: hand-computed small cases and vectorized == slow reference on random input."""

from __future__ import annotations

from collections import defaultdict

import networkx as nx
import numpy as np
import pytest

from oasis_gym.actions import ACTION_NAMES, ActionType
from oasis_gym.metrics import formulas as F
from oasis_gym.metrics import repost_trees
from oasis_gym.metrics.exposure import Exposure, impression_exposure, ratio
from oasis_gym.metrics.herd import group_mean_scores

# --------------------------------------------------------------------------- references


def random_forest(rng: np.random.Generator, n: int, p_root: float = 0.1) -> np.ndarray:
    """Random forest as a parent array with node labels shuffled (not topologically ordered)."""
    parent = np.full(n, -1, dtype=np.int64)
    for i in range(1, n):
        if rng.random() >= p_root:
            # bias toward recent nodes so trees get deep as well as wide
            parent[i] = rng.integers(max(0, i - 8), i)
    perm = rng.permutation(n)  # new label of old node i is perm[i]
    out = np.full(n, -1, dtype=np.int64)
    out[perm] = np.where(parent >= 0, perm[np.maximum(parent, 0)], -1)
    return out


def slow_cascade_stats(parent: np.ndarray, user: np.ndarray) -> dict[int, tuple]:
    """Per root: (size, scale, depth, max breadth, structural virality) by BFS + networkx."""
    children = defaultdict(list)
    for i, p in enumerate(parent):
        if p >= 0:
            children[int(p)].append(i)
    out = {}
    for r in np.flatnonzero(parent < 0):
        r = int(r)
        depth = {r: 0}
        queue = [r]
        g = nx.Graph()
        g.add_node(r)
        while queue:
            v = queue.pop()
            for c in children[v]:
                depth[c] = depth[v] + 1
                g.add_edge(v, c)
                queue.append(c)
        levels = defaultdict(int)
        for d in depth.values():
            if d > 0:
                levels[d] += 1
        n = len(depth)
        sv = nx.average_shortest_path_length(g) if n >= 2 else float("nan")
        scale = len({int(user[v]) for v in depth})
        out[r] = (n, scale, max(depth.values()), max(levels.values(), default=0), sv)
    return out


def slow_curves(parent: np.ndarray, minute: np.ndarray, user: np.ndarray, horizon: int):
    root_of, depth = F.tree_depths(parent)
    roots = list(np.flatnonzero(parent < 0))
    res = {}
    for r in roots:
        nodes = [i for i in range(parent.size) if root_of[i] == r]
        sc, dp, br = [], [], []
        for t in range(horizon + 1):
            seen = [i for i in nodes if max(np.floor(minute[i] - minute[r]), 0) <= t]
            sc.append(len({int(user[i]) for i in seen}))
            dp.append(max(int(depth[i]) for i in seen))
            lv = defaultdict(int)
            for i in seen:
                if depth[i] > 0:
                    lv[int(depth[i])] += 1
            br.append(max(lv.values(), default=0))
        res[int(r)] = (sc, dp, br)
    return res


def slow_infer_parents(root, author, minute, fsrc, fdst):
    follows = set(zip(fsrc.tolist(), fdst.tolist()))
    parent = np.full(root.size, -1, dtype=np.int64)
    for i in range(root.size):
        if root[i] < 0:
            continue
        best = None
        for j in range(root.size):
            same_cascade = j == root[i] or (root[j] == root[i])
            if j == i or not same_cascade or not minute[j] < minute[i]:
                continue
            if (int(author[i]), int(author[j])) in follows:
                key = (minute[j], j)
                if best is None or key > best[0]:
                    best = (key, j)
        parent[i] = root[i] if best is None else best[1]
    return parent


# --------------------------------------------------------------------------- cascades


@pytest.mark.parametrize("n", [2, 3, 4, 7, 20])
def test_structural_virality_star_vs_chain(n):
    star = np.r_[-1, np.zeros(n - 1, dtype=np.int64)]
    chain = np.arange(-1, n - 1)
    s, c = F.cascade_stats(star), F.cascade_stats(chain)
    # star: n-1 leaves, leaf-root distance 1, leaf-leaf 2 -> 2(n-1)/n; chain: (n+1)/3
    assert s.structural_virality[0] == pytest.approx(2 * (n - 1) / n)
    assert c.structural_virality[0] == pytest.approx((n + 1) / 3)
    assert (s.depth[0], s.max_breadth[0]) == (1, n - 1)
    assert (c.depth[0], c.max_breadth[0]) == (n - 1, 1)
    if n > 3:
        assert c.structural_virality[0] > s.structural_virality[0]


def test_known_forest_by_hand():
    #   0            5     7
    #  / \           |
    # 1   2          6
    # | \
    # 3  4
    parent = np.array([-1, 0, 0, 1, 1, -1, 5, -1])
    user = np.array([10, 11, 12, 11, 13, 14, 15, 16])  # user 11 appears twice in cascade 0
    st = F.cascade_stats(parent, user)
    np.testing.assert_array_equal(st.root, [0, 5, 7])
    np.testing.assert_array_equal(st.size, [5, 2, 1])
    np.testing.assert_array_equal(st.scale, [4, 2, 1])
    np.testing.assert_array_equal(st.depth, [2, 1, 0])
    np.testing.assert_array_equal(st.max_breadth, [2, 1, 0])
    # cascade 0 edges (lower side size s, n=5): 1:3 -> 6, 2:1 -> 4, 3:1 -> 4, 4:1 -> 4 => 18
    assert st.structural_virality[0] == pytest.approx(2 * 18 / 20)
    assert st.structural_virality[1] == pytest.approx(1.0)
    assert np.isnan(st.structural_virality[2])
    np.testing.assert_array_equal(F.subtree_sizes(parent), [5, 3, 1, 1, 1, 2, 1, 1])
    summ = F.cascade_summary(st)
    assert summ["cascade/count"] == 3 and summ["cascade/spread_count"] == 2
    assert summ["cascade/max_depth"] == 2 and summ["cascade/max_scale"] == 4
    assert summ["cascade/mean_structural_virality"] == pytest.approx((1.8 + 1.0) / 2)


def test_tree_depths_rejects_cycles_and_bad_ids():
    with pytest.raises(ValueError):
        F.tree_depths([-1, 2, 1])
    with pytest.raises(ValueError):
        F.tree_depths([-1, 1])
    with pytest.raises(ValueError):
        F.tree_depths([-1, 5])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cascade_stats_match_slow_reference(seed):
    rng = np.random.default_rng(seed)
    parent = random_forest(rng, 400, p_root=0.05)
    user = rng.integers(0, 150, parent.size)
    st = F.cascade_stats(parent, user)
    ref = slow_cascade_stats(parent, user)
    assert list(st.root) == sorted(ref)
    for c, r in enumerate(st.root):
        n, scale, depth, breadth, sv = ref[int(r)]
        assert (st.size[c], st.scale[c], st.depth[c], st.max_breadth[c]) == (n, scale, depth, breadth)
        if n >= 2:
            assert st.structural_virality[c] == pytest.approx(sv)
        else:
            assert np.isnan(st.structural_virality[c])


@pytest.mark.parametrize("seed", [3, 4])
def test_cascade_curves_match_slow_reference(seed):
    rng = np.random.default_rng(seed)
    parent = random_forest(rng, 150, p_root=0.1)
    root_of, depth = F.tree_depths(parent)
    base = rng.uniform(0, 100, parent.size)
    # a child never precedes its root; fractional minutes exercise the flooring
    minute = base[root_of] + np.where(parent < 0, 0.0, rng.uniform(0, 30, parent.size))
    user = rng.integers(0, 60, parent.size)
    horizon = 25
    cv = F.cascade_curves(parent, minute, horizon, user)
    ref = slow_curves(parent, minute, user, horizon)
    for c, r in enumerate(cv.root):
        sc, dp, br = ref[int(r)]
        assert cv.scale[c].tolist() == sc
        assert cv.depth[c].tolist() == dp
        assert cv.max_breadth[c].tolist() == br
    # with a horizon past every node the last column is the final statistic
    full = F.cascade_curves(parent, minute, 40, user)
    st = F.cascade_stats(parent, user)
    np.testing.assert_array_equal(full.scale[:, -1], st.scale)
    np.testing.assert_array_equal(full.depth[:, -1], st.depth)
    np.testing.assert_array_equal(full.max_breadth[:, -1], st.max_breadth)


def test_cascade_curves_by_hand():
    # root at minute 10; reposts at 11 (depth 1), 11 (depth 1), 13 (depth 2), 40 (beyond)
    parent = np.array([-1, 0, 0, 1, 3])
    minute = np.array([10, 11, 11.5, 13, 40])
    cv = F.cascade_curves(parent, minute, horizon=4)
    assert cv.scale.tolist() == [[1, 3, 3, 4, 4]]
    assert cv.depth.tolist() == [[0, 1, 1, 2, 2]]
    assert cv.max_breadth.tolist() == [[0, 2, 2, 2, 2]]


def test_cascade_parents_with_oasis_post_ids():
    # OASIS-style: post ids from 1, original_post_id = root for every repost
    post_id = np.array([1, 2, 3, 4, 5])
    post_root = np.array([-1, 1, 1, -1, 4])
    post_parent = np.array([-1, 1, 2, -1, -1])  # post 3 is a repost of post 2's share
    parent = F.cascade_parents(post_root, post_parent, post_id=post_id)
    np.testing.assert_array_equal(parent, [-1, 0, 1, -1, 3])
    np.testing.assert_array_equal(F.cascade_parents(post_root, post_id=post_id), [-1, 0, 0, -1, 3])
    st = F.cascade_stats_from_posts(post_root, np.array([7, 8, 9, 7, 8]), post_parent, post_id=post_id)
    np.testing.assert_array_equal(st.root, [0, 3])
    np.testing.assert_array_equal(st.depth, [2, 1])
    with pytest.raises(ValueError):
        F.cascade_parents(np.array([-1, 99]), post_id=np.array([1, 2]))


def test_infer_repost_parents_by_hand():
    # root by user 0 at minute 0; user1 follows nobody; user2 follows user1; user3 follows
    # users 2 and 0 (takes the more recent, user2); user4 follows user2 but reposts in the
    # same minute as user3 and user2 -> must take user2's earlier share, not user3's.
    root = np.array([-1, 0, 0, 0, 0])
    author = np.array([0, 1, 2, 3, 4])
    minute = np.array([0, 1, 2, 3, 3])
    fsrc, fdst = np.array([2, 3, 3, 4, 4]), np.array([1, 2, 0, 2, 3])
    np.testing.assert_array_equal(F.infer_repost_parents(root, author, minute, fsrc, fdst), [-1, 0, 1, 2, 2])


@pytest.mark.parametrize(
    "seed,max_pairs,packed", [(5, 4_000_000, True), (6, 7, True), (7, 1, True), (8, 4_000_000, False)]
)
def test_infer_repost_parents_match_slow_reference(seed, max_pairs, packed, monkeypatch):
    if not packed:  # the multi-key sort used for huge id ranges
        monkeypatch.setattr(repost_trees, "_PAIR_KEY_LIMIT", 0)
    rng = np.random.default_rng(seed)
    n_users, n_posts = 150, 250  # some users never post
    author = rng.integers(0, n_users, n_posts)
    minute = rng.integers(0, 30, n_posts)  # many ties
    root = np.full(n_posts, -1, dtype=np.int64)
    originals = rng.choice(n_posts, 12, replace=False)
    rest = np.setdiff1d(np.arange(n_posts), originals)
    root[rest] = rng.choice(originals, rest.size)
    minute[originals] = 0
    fsrc = rng.integers(0, n_users, 2000)
    fdst = rng.integers(0, n_users, 2000)
    got = F.infer_repost_parents(root, author, minute, fsrc, fdst, max_pairs=max_pairs)
    np.testing.assert_array_equal(got, slow_infer_parents(root, author, minute, fsrc, fdst))
    st = F.cascade_stats(got, author)  # the result is a valid forest
    assert st.size.sum() == n_posts


# --------------------------------------------------------------------------- opinions


def test_opinion_moments_by_hand():
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, np.nan])
    assert F.opinion_mean(x) == pytest.approx(0.0)
    assert F.opinion_std(x) == pytest.approx(np.sqrt(0.5))  # (1+.25+0+.25+1)/5
    # [0,0,0,1]: G1 = 2, G2 = 4 -> BC = (4+1)/(4+27/2) = 2/7
    assert F.bimodality_coefficient([0, 0, 0, 1]) == pytest.approx(2 / 7)
    # [-1,-1,1,1]: G1 = 0, G2 = -6 -> BC = 1/7.5
    assert F.bimodality_coefficient([-1, -1, 1, 1]) == pytest.approx(1 / 7.5)
    assert np.isnan(F.bimodality_coefficient([1, 2, 3]))
    assert np.isnan(F.bimodality_coefficient([2, 2, 2, 2]))


def test_bimodality_large_sample_limits():
    rng = np.random.default_rng(8)
    two_points = np.r_[-np.ones(5000), np.ones(5000)]
    assert F.bimodality_coefficient(two_points) == pytest.approx(1.0, abs=1e-3)
    assert F.bimodality_coefficient(rng.uniform(-1, 1, 200_000)) == pytest.approx(5 / 9, abs=0.01)
    assert F.bimodality_coefficient(rng.normal(size=200_000)) == pytest.approx(1 / 3, abs=0.01)


def test_esteban_ray_by_hand():
    assert F.esteban_ray_polarization([-1, -1, 1, 1], bins=2) == pytest.approx(1.0)
    assert F.esteban_ray_polarization([0.3] * 10) == pytest.approx(0.0)
    # three equal groups at centres -1, 0, 1: sum_ij |yi-yj| = 8, K = 2^2.6 / 2
    x = [-1, -1, 0, 0, 1, 1]
    expected = 2**1.6 * 8 * (1 / 3) ** 3.6
    assert F.esteban_ray_polarization(x, bins=3, value_range=(-1.5, 1.5)) == pytest.approx(expected)
    # alpha -> 0 gives the Gini mean difference scaled by 2/span
    assert F.esteban_ray_polarization(x, bins=[-1.5, -0.5, 0.5, 1.5], alpha=0.0) == pytest.approx((2 / 2) * 8 / 9)
    # clipping: out-of-range values land in the end bins
    assert F.esteban_ray_polarization([-5, 5], bins=4) == pytest.approx(1.0)


def test_esteban_ray_matches_double_loop():
    rng = np.random.default_rng(9)
    x = np.tanh(rng.normal(scale=1.5, size=3000))
    edges = np.linspace(-1, 1, 8)
    counts = np.histogram(x, edges)[0]
    pi = counts / counts.sum()
    y = (edges[:-1] + edges[1:]) / 2
    alpha = 1.6
    total = 0.0
    for i in range(7):
        for j in range(7):
            total += pi[i] ** (1 + alpha) * pi[j] * abs(y[i] - y[j])
    k = 2 ** (1 + alpha) / (y[-1] - y[0])
    assert F.esteban_ray_polarization(x, bins=7) == pytest.approx(k * total)
    assert 0.0 < k * total < 1.0


def test_opinion_shift_shares_and_summary():
    x0 = np.array([0.1, 0.5, -0.5, 0.2, 0.0, np.nan])
    x1 = np.array([0.3, 0.2, -0.9, 0.2, 0.05, 0.1])
    ext, mod = F.opinion_shift_shares(x0, x1, tol=0.01)
    assert (ext, mod) == (pytest.approx(3 / 5), pytest.approx(1 / 5))
    s = F.opinion_summary(x1)
    assert set(s) == {"opinion/mean", "opinion/std", "opinion/bimodality", "opinion/esteban_ray"}
    assert s["opinion/mean"] == pytest.approx(np.mean(x1))


# --------------------------------------------------------------------------- network


def test_gini_by_hand_and_reference():
    assert F.gini([5, 5, 5, 5]) == pytest.approx(0.0)
    assert F.gini([0, 0, 0, 10]) == pytest.approx(3 / 4)  # (n-1)/n
    assert F.gini([1, 2, 3, 4]) == pytest.approx(0.25)
    assert F.gini([0, 0]) == 0.0
    assert np.isnan(F.gini([]))
    with pytest.raises(ValueError):
        F.gini([1, -1])
    rng = np.random.default_rng(10)
    deg = rng.pareto(1.5, 500)
    mad = np.abs(deg[:, None] - deg[None, :]).sum()
    assert F.gini(deg) == pytest.approx(mad / (2 * deg.size**2 * deg.mean()))


def test_received_per_user():
    np.testing.assert_array_equal(F.received_per_user([2, 0, 2], 4), [1, 0, 2, 0])
    np.testing.assert_array_equal(F.received_per_user([2, 0, 2], 4, amount=[3, 1, 1]), [1, 0, 4, 0])


def test_opinion_assortativity_by_hand_and_reference():
    op = np.array([1.0, 1.0, -1.0, -1.0])
    assert F.opinion_assortativity([0, 1, 2, 3], [1, 0, 3, 2], op) == pytest.approx(1.0)
    assert F.opinion_assortativity([0, 2, 1, 3], [2, 0, 3, 1], op) == pytest.approx(-1.0)
    rng = np.random.default_rng(11)
    op = rng.uniform(-1, 1, 100)
    s, d = rng.integers(0, 100, 700), rng.integers(0, 100, 700)
    assert F.opinion_assortativity(s, d, op) == pytest.approx(np.corrcoef(op[s], op[d])[0, 1])


def test_neighbourhood_correlation_matches_loop():
    rng = np.random.default_rng(12)
    n = 120
    op = rng.uniform(-1, 1, n)
    op[5] = np.nan
    s, d = rng.integers(0, n, 500), rng.integers(0, n, 500)
    own, nb = [], []
    for u in range(n):
        vals = [op[v] for a, v in zip(s, d) if a == u and np.isfinite(op[v])]
        if vals and np.isfinite(op[u]):
            own.append(op[u])
            nb.append(np.mean(vals))
    assert F.neighbourhood_correlation(s, d, op) == pytest.approx(np.corrcoef(own, nb)[0, 1])
    # perfect homophily: two cliques with constant opinions
    op2 = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0])
    s2 = np.array([0, 1, 2, 3, 4, 5])
    d2 = np.array([1, 2, 0, 4, 5, 3])
    assert F.neighbourhood_correlation(s2, d2, op2) == pytest.approx(1.0)


# --------------------------------------------------------------------------- exposure / herd


def test_exposure_by_hand():
    label = np.array([1.0, 0.0, np.nan, 1.0])
    posts = np.array([0, 1, 2, 3, 3, 1])
    assert F.misinformation_share(posts, label) == pytest.approx(3 / 5)
    assert F.misinformation_share(posts, label.astype(bool)) == pytest.approx(4 / 6)
    viewer_op = np.array([0.5, -0.5, 0.0])
    stance = np.array([1.0, -1.0, 0.3, np.nan])
    viewers = np.array([0, 0, 1, 1, 2, 0])
    posts = np.array([0, 1, 0, 2, 0, 3])
    # counted: (v0,p0) same, (v0,p1) cross, (v1,p0) cross, (v1,p2) cross; v2 neutral, p3 NaN
    assert F.cross_cutting_share(viewers, posts, viewer_op, stance) == pytest.approx(3 / 4)
    # v0 saw stances [1, -1] (std 1), v1 [1, .3] (std .35), v2 only one -> left out
    assert F.feed_diversity(viewers, posts, stance) == pytest.approx((1.0 + 0.35) / 2)


def test_exposure_counts_pool_and_empty_convention():
    """One implementation: the counts give the formulas' shares, pool by +, and are NaN empty."""
    viewer_op = np.array([0.5, -0.5, 0.0])
    stance = np.array([1.0, -1.0, 0.3, np.nan])
    label = np.array([1.0, 0.0, np.nan, 1.0])
    viewers = np.array([0, 0, 1, 1, 2, 0])
    posts = np.array([0, 1, 0, 2, 0, 3])
    e = impression_exposure(viewers, viewer_op[viewers], stance[posts], label[posts])
    assert (e.impressions, e.misinfo, e.labelled, e.cross_cutting, e.signed) == (6, 4, 5, 3, 4)
    assert e.misinfo_share == F.misinformation_share(posts, label)
    assert e.cross_cutting_share == F.cross_cutting_share(viewers, posts, viewer_op, stance)
    assert e.feed_diversity == pytest.approx(F.feed_diversity(viewers, posts, stance))
    half = impression_exposure(viewers[:3], viewer_op[viewers[:3]], stance[posts[:3]], label[posts[:3]])
    rest = impression_exposure(viewers[3:], viewer_op[viewers[3:]], stance[posts[3:]], label[posts[3:]])
    pooled = half + rest
    assert (pooled.impressions, pooled.misinfo, pooled.labelled) == (e.impressions, e.misinfo, e.labelled)
    assert (pooled.cross_cutting, pooled.signed) == (e.cross_cutting, e.signed)
    empty = impression_exposure([], [], [], [])
    assert empty == Exposure()
    assert all(np.isnan(x) for x in (empty.misinfo_share, empty.cross_cutting_share, empty.feed_diversity))
    assert np.isnan(ratio(0, 0)) and ratio(1, 4) == 0.25


def test_feed_diversity_matches_loop():
    rng = np.random.default_rng(13)
    stance = rng.uniform(-1, 1, 80)
    v, p = rng.integers(0, 50, 600), rng.integers(0, 80, 600)
    per = defaultdict(list)
    for a, b in zip(v, p):
        per[int(a)].append(stance[b])
    ref = np.mean([np.std(x) for x in per.values() if len(x) >= 2])
    assert F.feed_diversity(v, p, stance) == pytest.approx(ref)


def test_herd_effect_by_hand():
    group = np.array(["up", "down", "control", "up", "down", "control", "up"])
    score = np.array([5, -2, 1, 3, 0, 2, np.nan])
    assert F.herd_effect(group, score) == {"control": 1.5, "down": -1.0, "up": 4.0}
    assert F.herd_effect(np.array([1, 1, 2]), np.array([2, 4, 6])) == {"1": 3.0, "2": 6.0}


def test_group_mean_scores_leave_out_missing_items_and_empty_groups_are_nan():
    likes, dislikes = np.array([3, 0, 5, 1]), np.array([1, 2, 0, 1])
    groups = {"up": [0, 2, 99, -1], "down": [1], "control": []}
    got = group_mean_scores(likes, dislikes, groups)
    assert got["up"] == 3.5 and got["down"] == -2.0  # (2 + 5) / 2; ids 99, -1 left out
    assert np.isnan(got["control"])
    assert list(got) == ["up", "down", "control"]


def test_action_count_scalars():
    codes = np.array([ActionType.LIKE_POST, ActionType.LIKE_POST, ActionType.REPOST, 99])
    out = F.action_count_scalars(codes)
    assert len(out) == len(ACTION_NAMES)
    assert out["actions/like_post"] == 2 and out["actions/repost"] == 1
    assert out["actions/do_nothing"] == 0


def test_empty_inputs_give_empty_or_nan():
    st = F.cascade_stats(np.array([], dtype=np.int64))
    assert st.root.size == 0 and st.structural_virality.size == 0
    summ = F.cascade_summary(st)
    assert summ["cascade/count"] == 0 and np.isnan(summ["cascade/max_depth"])
    assert F.cascade_curves([], [], 3).scale.shape == (0, 4)
    assert F.infer_repost_parents([-1, -1], [0, 1], [0, 0], [], []).tolist() == [-1, -1]
    assert F.herd_effect([], []) == {}
    assert np.isnan(F.feed_diversity([], [], []))
    assert np.isnan(F.cross_cutting_share([], [], [], []))
    assert np.isnan(F.opinion_assortativity([], [], [1.0]))
    assert all(np.isnan(v) for v in F.opinion_summary([]).values())
