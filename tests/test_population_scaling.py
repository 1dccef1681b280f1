"""The synthetic follow graph grows linearly in n (bounded core follows), the populations of
before the bound are unchanged, and seeding a platform with it stays exact and cheap."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from oasis_gym.platform import platform as platform_module
from oasis_gym.platform.platform import Platform
from oasis_gym.platform.store import PairSet, pair_keys, strictly_increasing
from oasis_gym.population import synthetic


def _core_edges(pop) -> int:
    return int(np.count_nonzero(pop.is_core[pop.follow_dst]))


def _graph_fingerprint(pop) -> str:
    h = hashlib.sha256()
    for field in ("follow_src", "follow_dst", "interests"):
        a = np.ascontiguousarray(getattr(pop, field))
        h.update(field.encode() + str(a.dtype).encode() + a.tobytes())
    return h.hexdigest()[:24]


# Computed with the synthetic() of before the bound (no max_core_followees), numpy 2.3.
# They follow numpy's Generator streams: if a numpy upgrade moves them, recompute them from
# that original code; test_unbound_populations_unchanged checks the same thing without them.
FROZEN = [
    (1000, 0, {}, 8463, "618a1a283f272938a8e208d9"),
    (10_000, 1, {}, 96052, "a3ee36fde1ef9dcd54a4b23e"),
    (100_000, 0, {}, 1133479, "0a608e645f061233103594d8"),
    (3000, 0, {"n_core": 196}, 72982, "e0f159b500da671306e285c9"),  # misinformation_1m, reduced
    (20_000, 7, {"n_core": 20}, 178941, "14240ab95e5adbb9270f5cc0"),  # tests/test_population.py
]


@pytest.mark.parametrize(("n", "seed", "kw", "edges", "digest"), FROZEN)
def test_old_populations_bit_identical(n, seed, kw, edges, digest) -> None:
    pop = synthetic(n, seed=seed, **kw)
    assert pop.num_edges == edges
    assert _graph_fingerprint(pop) == digest


@pytest.mark.parametrize(("n", "seed", "kw"), [(5000, 3, {}), (4000, 1, {"n_core": 196}), (50_000, 2, {})])
def test_unbound_populations_unchanged(n, seed, kw) -> None:
    """Where the bound does not bind, the population is the unbounded rule's, every array."""
    a, b = synthetic(n, seed=seed, **kw), synthetic(n, seed=seed, max_core_followees=None, **kw)
    for field in ("follow_src", "follow_dst", "interests", "activity", "opinion", "is_core"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_edges_grow_linearly() -> None:
    """With 1% core users the unbounded rule is quadratic already at 10^4 users; the bound
    holds edges per user, and the mean number of core followees, constant."""
    kw = {"core_fraction": 0.01, "seed": 0}
    small, large = synthetic(40_000, **kw), synthetic(200_000, **kw)  # 400 and 2000 core users
    per_user = [p.num_edges / p.n for p in (small, large)]
    assert per_user[1] == pytest.approx(per_user[0], rel=0.05)
    assert 25 < per_user[1] < 35  # 20 core + ~10 scale-free followees
    for p in (small, large):
        assert _core_edges(p) / (p.n - p.is_core.sum()) == pytest.approx(20.0, rel=0.02)
    free_small, free_large = (synthetic(n, max_core_followees=None, **kw) for n in (10_000, 40_000))
    growth = (_core_edges(free_large) / free_large.n) / (_core_edges(free_small) / free_small.n)
    assert growth > 3  # the unbounded rule: core edges per user ~ n_core ~ n (4x here)


def test_bound_is_a_parameter() -> None:
    kw = {"n_core": 196, "seed": 4}
    for cap in (0.0, 5.0):
        pop = synthetic(3000, max_core_followees=cap, **kw)
        pop.validate()
        assert _core_edges(pop) / (pop.n - 196) == pytest.approx(cap, abs=0.3)
    with pytest.raises(ValueError):
        synthetic(10, max_core_followees=-1.0)


def test_heavy_tailed_in_degree_under_the_bound() -> None:
    pop = synthetic(100_000, core_fraction=0.01, seed=5)  # the bound binds (1000 core users)
    pop.validate()
    indeg = pop.in_degree()
    ordinary = indeg[~pop.is_core]
    assert ordinary.max() > 20 * ordinary.mean()
    top = np.sort(ordinary)[::-1]
    assert top[: len(top) // 100].sum() > 0.1 * top.sum()  # top 1% hold >10% of follows
    assert indeg[pop.is_core].mean() > 20 * ordinary.mean()  # core accounts stay the hubs
    src, dst = pop.follow_src, pop.follow_dst
    assert not np.any(src == dst)
    keys = np.sort(pair_keys(src, dst))
    assert np.all(keys[1:] != keys[:-1])


# --------------------------------------------------------------------------- platform seeding


def _reference_seed(pf: Platform, src, dst, offset: int):
    """What `Platform._seed_follows` did before it was made lean: (keys, ids, followings,
    followers) it should leave."""
    src, dst = np.asarray(src, np.int64) + offset, np.asarray(dst, np.int64) + offset
    n = pf.n_users
    keep = (src != dst) & (src >= 0) & (dst >= 0) & (src < n) & (dst < n)
    keys = np.unique(pair_keys(src[keep], dst[keep]))
    keys = keys[~pf.rel["follow"].contains_keys(keys)]
    first = pf.next_row_id["follow"]
    ids = np.arange(first, first + len(keys))
    a, b = keys >> 32, keys & ((1 << 32) - 1)
    return (
        keys,
        ids,
        pf.u_followings.a + np.bincount(a, minlength=n).astype(np.int32),
        pf.u_followers.a + np.bincount(b, minlength=n).astype(np.int32),
    )


def _seed_like_the_reference(pf: Platform, src, dst, offset: int) -> np.ndarray:
    """Seed the follows and check the logged keys, row ids and counters against the
    reference; returns the reference's keys."""
    keys, ids, followings, followers = _reference_seed(pf, src, dst, offset=offset)
    pf._seed_follows(src, dst, offset=offset)
    got = pf.pending.inserts["follow"][-1]
    np.testing.assert_array_equal(got[0], keys)
    np.testing.assert_array_equal(got[1], ids)
    np.testing.assert_array_equal(pf.u_followings.a, followings)
    np.testing.assert_array_equal(pf.u_followers.a, followers)
    return keys


def test_seed_follows_matches_reference() -> None:
    pf = Platform()
    pf.add_users(synthetic(400, seed=1))
    pf.add_users(synthetic(300, seed=2))  # offset 400
    rng = np.random.default_rng(0)
    m = 20_000
    src, dst = rng.integers(-5, 720, m), rng.integers(-5, 720, m)
    src[:50] = dst[:50]  # self-follows
    src[50:3000], dst[50:3000] = src[3000:5950], dst[3000:5950]  # repeats
    old_keys = pf.rel["follow"].keys().copy()
    keys = _seed_like_the_reference(pf, src, dst, offset=3)
    every = np.union1d(old_keys, keys)
    np.testing.assert_array_equal(pf.rel["follow"].keys(), every)


def test_seed_follows_in_chunks_valid_and_not_matches_reference(monkeypatch) -> None:
    """Chunks whose pairs are all valid are packed in place, the others filtered: both kinds
    in one call give the reference's keys."""
    monkeypatch.setattr(platform_module, "_CHUNK", 1000)
    pf = Platform()
    pf.add_users(synthetic(700, seed=1))
    rng = np.random.default_rng(2)
    src, dst = rng.integers(0, 690, 6500), rng.integers(0, 690, 6500)
    src[src == dst] = 695  # chunks 0-2: valid (offset 3 keeps every id below 700)
    src[3500], dst[4200], src[5100] = -9, 800, dst[5100]  # chunks 3, 4 and 5: one bad pair each
    _seed_like_the_reference(pf, src, dst, offset=3)


def test_first_seeding_matches_reference() -> None:
    pop = synthetic(5000, seed=3)
    pf = Platform()
    pf.add_users(pop)
    keys = np.unique(pair_keys(pop.follow_src, pop.follow_dst))
    np.testing.assert_array_equal(pf.rel["follow"].keys(), keys)
    np.testing.assert_array_equal(pf.rel["follow"].values(), np.arange(len(keys)))
    np.testing.assert_array_equal(pf.u_followers.a, np.bincount(pop.follow_dst, minlength=pop.n))
    np.testing.assert_array_equal(pf.u_followings.a, np.bincount(pop.follow_src, minlength=pop.n))


def test_pair_set_sorted_build_is_the_same_set() -> None:
    rng = np.random.default_rng(1)
    keys = np.unique(rng.integers(0, 1 << 40, 50_000))
    vals = rng.permutation(len(keys)).astype(np.int64)
    order = rng.permutation(len(keys))
    fast, slow = PairSet(keys, vals), PairSet(keys[order], vals[order])
    for x, y in zip(fast.state(), slow.state()):
        np.testing.assert_array_equal(x, y)
    probe = np.concatenate([keys[::7], keys[::11] + 1])
    np.testing.assert_array_equal(fast.contains_keys(probe), slow.contains_keys(probe))
    assert strictly_increasing(keys) and not strictly_increasing(keys[order])
    assert strictly_increasing(np.zeros(0, np.int64)) and not strictly_increasing(np.array([3, 3]))
    big = np.arange(0, 3 * (1 << 22) + 5, dtype=np.int64)
    assert strictly_increasing(big)
    big[1 << 22] = big[(1 << 22) - 1]  # a repeat exactly at a chunk boundary
    assert not strictly_increasing(big)
