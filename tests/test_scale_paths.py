"""The fast paths of a large step give the bits of the simple ones: the recent-post sum,
profile vectors cached by interest mask, the feed similarity, follow look-ups among the
served users' followees, sorted look-ups in a large pair set, bulk text rendering."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from oasis_gym.platform import Platform
from oasis_gym.platform.store import PairSet, pair_keys
from oasis_gym.population import synthetic
from oasis_gym.recsys import EmbeddingIndex, TwitterRecommender
from oasis_gym.recsys.base import dense_ranks
from oasis_gym.recsys.embed import l2_normalize


def synthetic_platform(n: int = 3000, posts: int = 2000, seed: int = 0) -> Platform:
    rng = np.random.default_rng(seed)
    pf = Platform()
    pf.add_users(synthetic(n, seed=seed))
    words = np.array(["economy", "climate", "music", "vote", "match", "film", "tax", "rain"])
    for _ in range(4):
        authors = rng.integers(0, n, posts // 4)
        pf.create_posts(authors, [" ".join(rng.choice(words, 4)) for _ in range(len(authors))])
        pf.advance(3)
    return pf


def test_recent_sum_has_the_bits_of_the_plain_sum():
    idx = EmbeddingIndex()
    pf = synthetic_platform()
    idx.reset(pf)
    mat = idx.post_matrix
    mat[5, :3] = -0.0  # a -0.0 survives only where nothing (not even a missing post's 0) is added
    rng = np.random.default_rng(1)
    recent = rng.integers(0, pf.n_posts, (500, 3))
    cut = rng.integers(0, 4, 500)  # padding comes last
    recent[np.arange(3)[None, :] >= cut[:, None]] = -1
    recent[:4, 0] = 5
    plain = idx.post_vectors(recent).sum(axis=1)
    assert np.array_equal(idx._recent_sum(recent).view(np.int32), plain.view(np.int32))


def test_profile_vectors_cached_by_interest_mask_equal_each_users_own():
    pf = synthetic_platform()
    users = np.arange(0, pf.n_users, 3)
    keyed = EmbeddingIndex()
    assert keyed._profile_keys(pf, users) is not None  # synthetic bios: keyed by mask
    got = keyed._profile_vectors(pf, users)
    assert len(keyed._key_sorted) == len(np.unique(pf.u_interests.a[users])) < len(users)
    one_by_one = np.stack([EmbeddingIndex()._compute_profiles(pf, np.array([u]))[0] for u in users[:200]])
    assert np.array_equal(got[:200].view(np.int32), one_by_one.view(np.int32))
    again = keyed._profile_vectors(pf, users[::-1])  # from the cache
    assert np.array_equal(again[::-1], got)
    small = EmbeddingIndex(user_cache_size=10)  # the cache starts over when full
    assert np.array_equal(small._profile_vectors(pf, users), got)


def test_persona_profiles_are_not_keyed():
    pf = synthetic_platform(300, 100)
    idx = EmbeddingIndex(profile_fields=("bio", "persona"))
    assert idx._profile_keys(pf, np.arange(10)) is None
    assert idx._profile_vectors(pf, np.arange(10)).shape == (10, idx.dim)


def test_similarity_equals_the_per_slot_dot_products():
    pf = synthetic_platform()
    rec = TwitterRecommender()
    rec.reset(pf)
    rng = np.random.default_rng(2)
    users = np.sort(rng.choice(pf.n_users, 2500, replace=False))  # > one block of users
    posts = rng.integers(-1, pf.n_posts, (len(users), 7))
    sim = rec.similarity(pf, users, posts)
    u = rec.index.user_vectors(pf, users)
    for j in range(posts.shape[1]):
        want = np.einsum("ud,ud->u", rec.index.post_vectors(posts[:, j]), u)
        want[posts[:, j] < 0] = 0
        assert np.array_equal(sim[:, j].view(np.int32), want.view(np.int32))


def test_dense_ranks():
    ids = np.array([[7, -1, 3], [3, 9, -1]])
    distinct, local = dense_ranks(ids, 10)
    assert distinct.tolist() == [3, 7, 9]
    assert local.tolist() == [[1, 3, 0], [0, 2, 3]]


@pytest.mark.parametrize("n_keys", [100, 300_000])  # below and above the sorted look-up's bounds
def test_pair_set_lookups_and_contains_among(n_keys):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 5000, n_keys)
    b = rng.integers(0, 5000, n_keys)
    keys = np.unique(pair_keys(a, b))
    s = PairSet(keys, np.arange(len(keys)))
    extra = np.setdiff1d(pair_keys(rng.integers(0, 5000, 50), rng.integers(0, 5000, 50)), keys)
    s.add_keys(extra, np.arange(len(extra)))
    s.remove_keys(keys[:20])
    truth = set(s.keys().tolist())
    qa, qb = rng.integers(0, 5000, 20_000), rng.integers(0, 5000, 20_000)
    m = min(5000, n_keys)
    qa[:m], qb[:m] = a[:m], b[:m]
    want = np.array([int(k) in truth for k in pair_keys(qa, qb).tolist()])
    assert np.array_equal(s.contains(qa, qb), want)
    users = np.unique(qa[:3000])
    owner = np.searchsorted(users, qa[:3000])
    assert np.array_equal(s.contains_among(users, owner, qb[:3000]), want[:3000])  # sorted keys (15M cells)
    few = owner < 300  # 300 owners x a span under 5000: a bit table
    assert np.array_equal(s.contains_among(users[:300], owner[few], qb[:3000][few]), want[:3000][few])
    outside = s.contains_among(users[:300], np.zeros((2, 3), np.int64), np.array([-1, 5000, 10**9]))
    assert outside.shape == (2, 3) and not outside.any()
    first = s.partners(users)
    assert s.partners(users.copy()) is first  # kept while the set does not change
    if not s.contains(users[:1], [4999])[0]:
        s.add_keys(pair_keys(users[:1], [4999]), np.array([7]))
    owner0, second0 = s.partners(users)
    assert not owner0.flags.writeable
    assert sorted(second0[owner0 == 0].tolist()) == sorted(
        (np.array([k for k in s.keys().tolist() if k >> 32 == users[0]]) & 0xFFFFFFFF).tolist()
    )


def test_bulk_rendering_and_text_keys_of_synthetic_columns():
    pop = synthetic(2000, seed=4)
    ids = np.array([5, 17, 5, 1999, 0])
    assert pop.bio.render_many(ids) == [pop.bio[i] for i in ids.tolist()]
    assert pop.persona.render_many(ids) == [pop.persona[i] for i in ids.tolist()]
    assert np.array_equal(pop.bio.text_keys(ids), pop.interests[ids])
    assert pop.persona.text_keys(ids) is None and pop.user_name.text_keys(ids) is None
    sub = pop.bio.take(np.array([10, 11, 12]))  # a subset renders its own rows
    assert sub.render_many(np.array([2, 0])) == [pop.bio[12], pop.bio[10]]
    pf = Platform()
    pf.add_users(pop)
    assert pf.u_bio.texts(ids) == [pop.bio[i] for i in ids.tolist()]
    pf.u_bio.append("an added row")  # beyond the lazy base: no keys, plain reads
    assert pf.u_bio.text_keys(np.array([2000])) is None
    assert pf.u_bio.texts(np.array([2000, 3])) == ["an added row", pop.bio[3]]


def test_l2_normalize_in_place_has_the_same_bits():
    x = np.random.default_rng(5).normal(size=(50, 8)).astype(np.float32)
    x[3] = 0
    want = l2_normalize(x)
    y = x.copy()
    assert l2_normalize(y, inplace=True) is y
    assert np.array_equal(y.view(np.int32), want.view(np.int32))


def test_bulk_personas_and_figures_are_the_one_at_a_time_texts():
    from oasis_gym.population.bulk_text import id_texts, signed_2f

    pop = synthetic(5000, seed=6)
    pop.opinion[:8] = [0.6, 0.2, -0.6, -0.2, -0.0, -0.004, 0.005, 1.0]  # thresholds, signed zeros
    ids = np.arange(5000)
    assert pop.persona.render_many(ids) == [pop.persona[i] for i in range(5000)]
    grid = np.arange(-1, 1.00001, 0.0005).astype(np.float32)  # every figure and its halves
    values = np.concatenate([grid, np.nextafter(grid, 2), np.nextafter(grid, -2), [np.nan, 3.5, -0.0]])
    values = values.astype(np.float32)
    assert signed_2f(values) == [f"{float(v):+.2f}" for v in values]
    assert id_texts("user{i}", np.array([0, 12])) == ["user0", "user12"]
    assert id_texts("{i}:{i}", np.array([3])) == ["3:3"]  # (not the simple form: str.format)


@pytest.mark.parametrize(
    "flags, commit, api", [((), "in-place", "batch"), (("--commit", "thread", "--dict-api"), "thread", "dict")]
)
def test_the_million_bench_prints_one_json_line_and_leaves_no_journal_behind(tmp_path, flags, commit, api):
    """bench/throughput/million.py left its journal (7 GB at 10M users) in the temp folder on every run.
    Its commit mode follows the user count unless --commit says otherwise; --dict-api steps
    through env.step."""
    bench = Path(__file__).resolve().parents[1] / "bench" / "throughput" / "million.py"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(bench), "--users", "3000", "--steps", "2", *flags], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["users"] == 3000 and out["db_mb"] > 0 and out["median_step_s"] > 0
    assert (out["commit"], out["api"]) == (commit, api)
    assert list(tmp_path.iterdir()) == []


def test_the_soak_bench_reports_step_jitter_and_leaves_no_journal_behind(tmp_path):
    """bench/throughput/soak.py times each step on its own (median, p99, the slowest steps) and removes
    its journal; bad flags get argparse's one line and exit 2."""
    bench = Path(__file__).resolve().parents[1] / "bench" / "throughput" / "soak.py"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    argv = [sys.executable, str(bench), "--users", "60", "--steps", "40", "--activation", "1", "--recsys", "random"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.strip().splitlines()]
    assert [r["step"] for r in lines[:-1]] == [20, 40]
    out = lines[-1]
    assert (out["bench"], out["users"], out["steps"], out["recsys"]) == ("soak_summary", 60, 40, "random")
    assert 0 < out["step_ms_median"] <= out["step_ms_p99"] <= out["step_ms_max"] == out["slowest_steps"][0][1]
    assert len(out["slowest_steps"]) == 3 and all(1 <= s <= 40 for s, _ in out["slowest_steps"])
    assert list(tmp_path.iterdir()) == []
    for bad in (["--steps", "5"], ["--activation", "0"], ["--users", "x"]):
        done = subprocess.run([sys.executable, str(bench), *bad], env=env, capture_output=True, text=True)
        assert done.returncode == 2 and "error:" in done.stderr.strip().splitlines()[-1]


def test_the_step_cost_bench_fits_a_fixed_and_a_per_user_part_and_leaves_no_journal_behind(tmp_path):
    """bench/oasis/step_cost.py runs oasis_throughput's steps in fresh processes per population size,
    fits step = fixed + per_user x users, and removes every run's journal; bad flags exit 2."""
    bench = Path(__file__).resolve().parents[1] / "bench" / "oasis" / "step_cost.py"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    argv = [sys.executable, str(bench), "--users", "4,12", "--steps", "3", "--reps", "2"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert (out["bench"], out["steps"], out["reps"]) == ("step_cost", 3, 2)
    assert [r["users"] for r in out["rows"]] == [4, 12] and all(len(r["runs_ms"]) == 2 for r in out["rows"])
    (x0, y0), (x1, y1) = ((r["users"], r["step_ms"]) for r in out["rows"])  # two sizes: the line through them
    assert out["per_user_us"] == pytest.approx((y1 - y0) / (x1 - x0) * 1000, abs=0.02)
    assert out["fixed_ms"] == pytest.approx(y0 - (y1 - y0) / (x1 - x0) * x0, abs=0.002)
    assert len(done.stderr.strip().splitlines()) == 2  # a progress line per size
    assert list(tmp_path.iterdir()) == []
    for bad in (["--users", "5"], ["--users", "5,5"], ["--users", "0,3"], ["--steps", "1"], ["--reps", "0"]):
        done = subprocess.run([sys.executable, str(bench), *bad], env=env, capture_output=True, text=True)
        assert done.returncode == 2 and "error:" in done.stderr.strip().splitlines()[-1]
