"""Tests of the ABM engine (policies/abm_dynamics.py: model/opinions.py, diffusion, behaviour).

Hand-computed cases pin each opinion model's equations (bounds, the multiple-exposure rule,
who updates); slow per-user reference loops check the vectorized code on random inputs;
seeded statistical checks cover diffusion and behaviour with wide margins.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

try:
    from oasis_gym.policies import abm_dynamics as abm
    from oasis_gym.policies import behaviour
except ImportError:  # source tree without the editable install
    from policies import abm_dynamics as abm
    from policies import behaviour
from oasis_gym.actions import NUM_ACTIONS, REDDIT_DEFAULT_ACTIONS, TWITTER_DEFAULT_ACTIONS, ActionType
from oasis_gym.model import opinion_kernels

A = ActionType


def one(x, exposed, mask=None):
    """(1,) opinions and (1, K) exposures for a single hand-made user."""
    exposed = np.array([exposed], dtype=float)
    mask = np.ones_like(exposed, dtype=bool) if mask is None else np.array([mask])
    return np.array([x], dtype=float), exposed, mask


# --------------------------------------------------------------------------------------------
# hand-made cases
# --------------------------------------------------------------------------------------------


class TestDeffuantWeisbuch:
    def test_single_in_bound_exposure(self):
        x, e, m = one(0.0, [0.1])
        assert abm.deffuant_weisbuch(x, e, m, mu=0.5, eps=0.2)[0] == pytest.approx(0.05)

    def test_outside_bound_and_strict_boundary(self):
        x, e, m = one(0.0, [0.5, 0.25, -0.3])
        # 0.25 is exactly eps away: Deffuant's rule is strict (<), so no move at all
        assert abm.deffuant_weisbuch(x, e, m, mu=0.5, eps=0.25)[0] == 0.0

    def test_sequential_slot_order(self):
        # x=0: 0.19 in bound -> 0.095; then |0.25 - 0.095| = 0.155 < 0.2 -> 0.095 + 0.5*0.155
        x, e, m = one(0.0, [0.19, 0.25])
        assert abm.deffuant_weisbuch(x, e, m, mu=0.5, eps=0.2)[0] == pytest.approx(0.1725)
        # reversed: 0.25 is out of bound of 0, then 0.19 pulls to 0.095 only
        x, e, m = one(0.0, [0.25, 0.19])
        assert abm.deffuant_weisbuch(x, e, m, mu=0.5, eps=0.2)[0] == pytest.approx(0.095)

    def test_mask_nan_and_weights(self):
        x, e, m = one(0.0, [0.1, np.nan, 0.1], [False, True, True])
        # only the last slot counts; weight 2 doubles the step, weight 10 caps it at 1
        w = np.array([[1.0, 1.0, 2.0]])
        assert abm.deffuant_weisbuch(x, e, m, mu=0.25, eps=0.2, weights=w)[0] == pytest.approx(0.05)
        w = np.array([[1.0, 1.0, 10.0]])
        assert abm.deffuant_weisbuch(x, e, m, mu=0.25, eps=0.2, weights=w)[0] == pytest.approx(0.1)

    def test_per_user_parameters_and_inputs_untouched(self):
        x = np.array([0.0, 0.0])
        e = np.array([[0.1], [0.1]])
        m = np.ones((2, 1), bool)
        e_before = e.copy()
        out = abm.deffuant_weisbuch(x, e, m, mu=np.array([0.5, 1.0]), eps=np.array([0.2, 0.05]))
        np.testing.assert_allclose(out, [0.05, 0.0])
        assert np.array_equal(e, e_before) and np.array_equal(x, [0.0, 0.0])


class TestHegselmannKrause:
    def test_mean_includes_self(self):
        # in bound (<= 0.1): 0.05 and 0.1 (boundary included); 0.5 is out
        x, e, m = one(0.0, [0.05, 0.1, 0.5])
        mean = (0.0 + 0.05 + 0.1) / 3
        assert abm.hegselmann_krause(x, e, m, alpha=0.5, eps=0.1)[0] == pytest.approx(0.5 * mean)
        assert abm.hegselmann_krause(x, e, m, alpha=1.0, eps=0.1)[0] == pytest.approx(mean)

    def test_without_self(self):
        x, e, m = one(0.0, [0.05, 0.1, 0.5])
        out = abm.hegselmann_krause(x, e, m, alpha=0.5, eps=0.1, include_self=False)
        assert out[0] == pytest.approx(0.5 * 0.075)
        x, e, m = one(0.3, [0.9, -0.5])
        assert abm.hegselmann_krause(x, e, m, alpha=0.5, eps=0.1, include_self=False)[0] == 0.3

    def test_weights_and_mask(self):
        x, e, m = one(0.0, [0.1, 0.05, 0.02], [True, True, False])
        w = np.array([[3.0, 1.0, 1.0]])
        mean = (0.0 + 3 * 0.1 + 0.05) / (1 + 3 + 1)
        assert abm.hegselmann_krause(x, e, m, alpha=1.0, eps=0.1, weights=w)[0] == pytest.approx(mean)


class TestRelativeAgreement:
    def test_update_equations(self):
        x, e, m = one(0.0, [0.3])
        # h = min(0.4, 0.5) - max(-0.4, 0.1) = 0.3 > u_j = 0.2 -> g = mu (0.3/0.2 - 1) = 0.25
        xn, un = abm.relative_agreement(x, np.array([0.4]), e, np.array([[0.2]]), m, mu=0.5)
        assert xn[0] == pytest.approx(0.25 * 0.3)
        assert un[0] == pytest.approx(0.4 + 0.25 * (0.2 - 0.4))

    def test_no_update_when_overlap_small(self):
        x, e, m = one(0.0, [0.55])
        # h = min(0.4, 0.75) - max(-0.4, 0.35) = 0.05 < 0.2
        xn, un = abm.relative_agreement(x, np.array([0.4]), e, np.array([[0.2]]), m, mu=0.5)
        assert xn[0] == 0.0 and un[0] == 0.4

    def test_denominator_is_the_influencers_uncertainty(self):
        # receiver at 0.3 with u=0.2, influencer at 0 with u=0.4: h = 0.3 is not > 0.4, so the
        # confident receiver does not move (it would if its own u were the denominator)
        x, e, m = one(0.3, [0.0])
        xn, un = abm.relative_agreement(x, np.array([0.2]), e, np.array([[0.4]]), m, mu=0.5)
        assert xn[0] == 0.3 and un[0] == 0.2

    def test_sequential_exposures(self):
        x, e, m = one(0.0, [0.3, 0.3])
        xn, un = abm.relative_agreement(x, np.array([0.4]), e, np.array([[0.2, 0.2]]), m, mu=0.5)
        x1, u1 = 0.075, 0.35
        h = min(x1 + u1, 0.5) - max(x1 - u1, 0.1)
        g = 0.5 * (h / 0.2 - 1)
        assert xn[0] == pytest.approx(x1 + g * (0.3 - x1))
        assert un[0] == pytest.approx(u1 + g * (0.2 - u1))


class TestSocialJudgment:
    def test_assimilation_noncommitment_contrast(self):
        x = np.array([0.0, 0.0, 0.2])
        e = np.array([[0.2], [0.6], [-0.9]])
        out = abm.social_judgment(x, e, np.ones((3, 1), bool), mu=0.5, lat_accept=0.3, lat_reject=1.0)
        # 0.2: |d| < 0.3 assimilate; 0.6: between latitudes; -0.9: |d| = 1.1 > 1 contrast
        np.testing.assert_allclose(out, [0.1, 0.0, 0.2 - 0.5 * (-1.1)])

    def test_clipped_after_each_exposure(self):
        x, e, m = one(0.9, [-0.5, 0.9])
        # contrast: 0.9 + 0.5*1.4 = 1.6 -> clipped 1.0; then |0.9 - 1| < 0.3: 1.0 - 0.05
        assert abm.social_judgment(x, e, m, 0.5, 0.3, 1.0)[0] == pytest.approx(0.95)

    def test_rejects_bad_latitudes(self):
        x, e, m = one(0.0, [0.1])
        with pytest.raises(ValueError):
            abm.social_judgment(x, e, m, 0.5, lat_accept=0.8, lat_reject=0.3)


class TestLorenz:
    def test_motivated_cognition_assimilation(self):
        x, e, m = one(0.2, [0.6])
        f = 0.3**2 / (0.3**2 + 0.4**2)
        out = abm.lorenz2021(x, e, m, alpha=0.5, rho=1.0, lam=0.3, k=2)
        assert out[0] == pytest.approx(0.2 + 0.5 * 0.4 * f)

    def test_contagion_and_polarity(self):
        x, e, m = one(0.2, [0.6])
        assert abm.lorenz2021(x, e, m, alpha=0.5, rho=0.0, lam=None)[0] == pytest.approx(0.5)
        out = abm.lorenz2021(x, e, m, alpha=0.5, rho=0.0, lam=None, polarity=True)
        assert out[0] == pytest.approx(0.2 + 0.5 * 0.6 * (1 - 0.04))

    def test_idiosyncrasy(self):
        rng = np.random.default_rng(3)
        n = 20_000
        x = np.full(n, 0.5)
        e = np.full((n, 2), 0.5)
        m = np.ones((n, 2), bool)
        out = abm.lorenz2021(x, e, m, theta=1.0, idio_sd=0.3, rng=rng)
        assert abs(out.mean()) < 0.02 and 0.27 < out.std() < 0.33  # all redrawn from N(0, 0.3)
        out = abm.lorenz2021(x, e, m, theta=0.1, rng=rng)
        assert 0.08 < np.mean(out != 0.5) < 0.12
        with pytest.raises(ValueError):
            abm.lorenz2021(x, e, m, theta=0.1)


# --------------------------------------------------------------------------------------------
# vectorized == slow per-user reference
# --------------------------------------------------------------------------------------------


def _step(mu, w):
    return min(1.0, mu * max(w, 0.0))


def ref_dw(x, e, m, w, mu, eps):
    out = []
    for i in range(len(x)):
        xi = x[i]
        for k in range(e.shape[1]):
            if m[i, k] and not math.isnan(e[i, k]) and abs(xi - e[i, k]) < eps[i]:
                xi += _step(mu[i], w[i, k]) * (e[i, k] - xi)
        out.append(min(1.0, max(-1.0, xi)))
    return np.array(out)


def ref_hk(x, e, m, w, alpha, eps, include_self):
    out = []
    for i in range(len(x)):
        num, den = (x[i], 1.0) if include_self else (0.0, 0.0)
        for k in range(e.shape[1]):
            if m[i, k] and not math.isnan(e[i, k]) and abs(x[i] - e[i, k]) <= eps[i]:
                num += max(w[i, k], 0.0) * e[i, k]
                den += max(w[i, k], 0.0)
        target = num / den if den > 0 else x[i]
        out.append(min(1.0, max(-1.0, x[i] + alpha[i] * (target - x[i]))))
    return np.array(out)


def ref_ra(x, u, e, eu, m, w, mu):
    xs, us = [], []
    for i in range(len(x)):
        xi, ui = x[i], u[i]
        for k in range(e.shape[1]):
            xj, uj = e[i, k], eu[i, k]
            if not m[i, k] or math.isnan(xj) or math.isnan(uj) or uj <= 0:
                continue
            h = min(xi + ui, xj + uj) - max(xi - ui, xj - uj)
            if h > uj:
                g = _step(mu[i], w[i, k]) * (h / uj - 1)
                xi, ui = xi + g * (xj - xi), ui + g * (uj - ui)
        xs.append(min(1.0, max(-1.0, xi)))
        us.append(ui)
    return np.array(xs), np.array(us)


def ref_sj(x, e, m, w, mu, acc, rej):
    out = []
    for i in range(len(x)):
        xi = x[i]
        for k in range(e.shape[1]):
            if not m[i, k] or math.isnan(e[i, k]):
                continue
            d = e[i, k] - xi
            if abs(d) < acc[i]:
                xi += _step(mu[i], w[i, k]) * d
            elif abs(d) > rej[i]:
                xi -= _step(mu[i], w[i, k]) * d
            xi = min(1.0, max(-1.0, xi))
        out.append(xi)
    return np.array(out)


def ref_lorenz(x, e, m, w, alpha, rho, lam, k_exp, polarity):
    out = []
    for i in range(len(x)):
        xi = x[i]
        for k in range(e.shape[1]):
            if not m[i, k] or math.isnan(e[i, k]):
                continue
            delta = e[i, k] - rho[i] * xi
            delta *= lam**k_exp / (lam**k_exp + abs(e[i, k] - xi) ** k_exp)
            if polarity:
                delta *= 1 - xi * xi
            xi = min(1.0, max(-1.0, xi + _step(alpha[i], w[i, k]) * delta))
        out.append(xi)
    return np.array(out)


@pytest.fixture(params=[0, 1, 2])
def batch(request):
    """Random users with masks, NaN stances, weights and per-user parameters."""
    rng = np.random.default_rng(100 + request.param)
    n, k = 257, 7
    e = rng.uniform(-1, 1, (n, k))
    e[rng.random((n, k)) < 0.1] = np.nan
    return {
        "rng": rng,
        "x": rng.uniform(-1, 1, n),
        "e": e,
        "m": rng.random((n, k)) < 0.8,
        "w": np.where(rng.random((n, k)) < 0.5, 1.0, rng.uniform(0, 3, (n, k))),
        "u": rng.uniform(0.05, 0.6, n),
        "eu": rng.uniform(0.05, 0.6, (n, k)),
        "p1": rng.uniform(0.05, 0.6, n),
        "p2": rng.uniform(0.1, 0.5, n),
    }


@pytest.fixture(params=[abm.BLOCK_ROWS, 10])
def block_rows(request, monkeypatch):
    """Run once with the real block size and once with tiny blocks (block seams)."""
    monkeypatch.setattr(opinion_kernels, "BLOCK_ROWS", request.param)
    return request.param


def test_dw_matches_reference(batch, block_rows):
    b = batch
    got = abm.deffuant_weisbuch(b["x"], b["e"], b["m"], b["p1"], b["p2"], weights=b["w"])
    np.testing.assert_allclose(got, ref_dw(b["x"], b["e"], b["m"], b["w"], b["p1"], b["p2"]), atol=1e-12)
    ones = np.ones_like(b["w"])
    got = abm.deffuant_weisbuch(b["x"], b["e"], b["m"], 0.3, 0.4)
    np.testing.assert_allclose(got, ref_dw(b["x"], b["e"], b["m"], ones, [0.3] * 257, [0.4] * 257), atol=1e-12)


@pytest.mark.parametrize("include_self", [True, False])
def test_hk_matches_reference(batch, block_rows, include_self):
    b = batch
    got = abm.hegselmann_krause(b["x"], b["e"], b["m"], b["p1"], b["p2"], weights=b["w"], include_self=include_self)
    want = ref_hk(b["x"], b["e"], b["m"], b["w"], b["p1"], b["p2"], include_self)
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_ra_matches_reference(batch, block_rows):
    b = batch
    eu = b["eu"].copy()
    eu[0, :3] = [0.0, -0.1, np.nan]  # invalid uncertainties are ignored
    xg, ug = abm.relative_agreement(b["x"], b["u"], b["e"], eu, b["m"], b["p1"], weights=b["w"])
    xw, uw = ref_ra(b["x"], b["u"], b["e"], eu, b["m"], b["w"], b["p1"])
    np.testing.assert_allclose(xg, xw, atol=1e-12)
    np.testing.assert_allclose(ug, uw, atol=1e-12)


def test_sj_matches_reference(batch, block_rows):
    b = batch
    rej = b["p2"] + 0.5
    got = abm.social_judgment(b["x"], b["e"], b["m"], b["p1"], b["p2"], rej, weights=b["w"])
    np.testing.assert_allclose(got, ref_sj(b["x"], b["e"], b["m"], b["w"], b["p1"], b["p2"], rej), atol=1e-12)


@pytest.mark.parametrize("polarity", [False, True])
def test_lorenz_matches_reference(batch, block_rows, polarity):
    b = batch
    got = abm.lorenz2021(
        b["x"], b["e"], b["m"], alpha=b["p1"], rho=b["p2"] * 2, lam=0.3, k=3.0, polarity=polarity, weights=b["w"]
    )
    want = ref_lorenz(b["x"], b["e"], b["m"], b["w"], b["p1"], b["p2"] * 2, 0.3, 3.0, polarity)
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_random_order_is_some_permutation_and_seeded():
    rng = np.random.default_rng(7)
    n, k = 400, 3
    x, e = rng.uniform(-0.3, 0.3, n), rng.uniform(-0.5, 0.5, (n, k))
    m = np.ones((n, k), bool)
    got = abm.deffuant_weisbuch(x, e, m, 0.5, 0.3, rng=np.random.default_rng(1), order="random")
    again = abm.deffuant_weisbuch(x, e, m, 0.5, 0.3, rng=np.random.default_rng(1), order="random")
    assert np.array_equal(got, again)
    ones = np.ones((1, k))
    results = []
    for i in range(n):
        cands = [
            ref_dw(x[i : i + 1], e[i : i + 1, list(p)], m[i : i + 1], ones, [0.5], [0.3])[0]
            for p in itertools.permutations(range(k))
        ]
        assert min(abs(c - got[i]) for c in cands) < 1e-12
        results.append(abs(got[i] - cands[0]) < 1e-12)
    assert not all(results)  # some users really were processed out of slot order
    with pytest.raises(ValueError):
        abm.deffuant_weisbuch(x, e, m, 0.5, 0.3, order="random")


def test_dispatcher():
    rng = np.random.default_rng(0)
    n, k = 50, 5
    x, e, m = rng.uniform(-1, 1, n), rng.uniform(-1, 1, (n, k)), rng.random((n, k)) < 0.7
    out, u = abm.update_opinions("bc", x, e, m)
    assert u is None
    np.testing.assert_array_equal(out, abm.deffuant_weisbuch(x, e, m, 0.125, 0.2))
    out, _ = abm.update_opinions("HK", x, e, m, abm.HKParams(alpha=0.25))
    np.testing.assert_array_equal(out, abm.hegselmann_krause(x, e, m, 0.25, 0.1))
    out, u = abm.update_opinions("ra", x, e, m)
    want = abm.relative_agreement(x, np.full(n, 0.3), e, np.full((n, k), 0.3), m, 0.125)
    np.testing.assert_array_equal(out, want[0])
    np.testing.assert_array_equal(u, want[1])
    for name in ("sj", "lorenz", "social_judgment", "lorenz2021", "deffuant_weisbuch"):
        out, _ = abm.update_opinions(name, x, e, m)
        assert out.shape == (n,) and np.all(np.abs(out) <= 1)
    with pytest.raises(ValueError):
        abm.update_opinions("voter", x, e, m)
    with pytest.raises(TypeError):
        abm.update_opinions("hk", x, e, m, abm.DWParams())
    assert abm.DWParams().mu == pytest.approx(0.125) and 0.1 <= abm.DWParams().eps <= 0.3
    assert 0.1 <= abm.HKParams().alpha <= 0.25 and abm.HKParams().eps == 0.1


def test_shape_errors():
    with pytest.raises(ValueError):
        abm.deffuant_weisbuch(np.zeros(3), np.zeros((2, 4)), np.ones((2, 4), bool))
    with pytest.raises(ValueError):
        abm.hegselmann_krause(np.zeros(3), np.zeros((3, 4)), np.ones((3, 5), bool))
    with pytest.raises(ValueError):
        abm.deffuant_weisbuch(np.zeros(3), np.zeros((3, 4)), np.ones((3, 4), bool), mu=np.ones(2))


def test_empty_batch():
    out = abm.deffuant_weisbuch(np.zeros(0), np.zeros((0, 4)), np.zeros((0, 4), bool))
    assert out.shape == (0,)


# --------------------------------------------------------------------------------------------
# diffusion
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k,p", [(1, 0.1), (3, 0.1), (5, 0.3)])
def test_independent_cascade_rate(k, p):
    n = 200_000
    got = abm.independent_cascade(np.random.default_rng(11), np.full((n, 1), k), p)
    want = 1 - (1 - p) ** k
    assert abs(np.mean(got == 0) - want) < 0.01  # sd ~ 0.001
    assert set(np.unique(got)) <= {-1, 0}


def test_independent_cascade_choice():
    rng = np.random.default_rng(12)
    n = 100_000
    counts = np.tile([2, 0, 2, 1], (n, 1))
    got = abm.independent_cascade(rng, counts, np.array([0.2, 0.9, 0.2, 0.5]))
    q = 1 - (1 - np.array([0.2, 0.0, 0.2, 0.5])) ** np.array([2, 0, 2, 1])
    assert abs(np.mean(got >= 0) - (1 - np.prod(1 - q))) < 0.01
    assert not np.any(got == 1)  # never exposed, never reposted
    # items 0 and 2 have identical odds: chosen equally often
    assert abs(np.mean(got == 0) - np.mean(got == 2)) < 0.01
    eligible = np.tile([True, True, False, True], (n, 1))
    got = abm.independent_cascade(rng, counts.astype(bool), 1.0, eligible=eligible)
    assert set(np.unique(got)) == {0, 3}
    again = abm.independent_cascade(np.random.default_rng(5), counts, 0.3)
    assert np.array_equal(again, abm.independent_cascade(np.random.default_rng(5), counts, 0.3))


def test_linear_threshold():
    frac = np.array([[0.2, 0.5, 0.4], [0.2, 0.5, 0.4], [0.0, 0.0, 0.0], [0.3, 0.3, 0.1], [0.2, 0.5, 0.4]])
    thr = np.array([0.3, 0.6, 0.0, 0.3, 0.3])
    eligible = np.array([[True] * 3] * 4 + [[True, False, True]])
    np.testing.assert_array_equal(abm.linear_threshold(frac, thr, eligible), [1, -1, -1, 0, 2])
    th = abm.sample_thresholds(np.random.default_rng(0), 1000)
    assert np.all((th > 0) & (th <= 1))


# --------------------------------------------------------------------------------------------
# behaviour
# --------------------------------------------------------------------------------------------


def allowed_of(actions) -> np.ndarray:
    a = np.zeros(NUM_ACTIONS, dtype=bool)
    a[list(actions)] = True
    return a


def feed(rng, n, k, nan_frac=0.2):
    stance = rng.uniform(-1, 1, (n, k))
    stance[rng.random((n, k)) < nan_frac] = np.nan
    return dict(
        opinion=rng.uniform(-1, 1, n),
        feed_stance=stance,
        feed_mask=rng.random((n, k)) < 0.7,
        feed_likes=rng.poisson(5, (n, k)),
        feed_author_followers=rng.poisson(100, (n, k)),
        post_rate=rng.uniform(0, 0.2, n),
        already_liked=rng.random((n, k)) < 0.3,
        already_followed_author=rng.random((n, k)) < 0.3,
    )


BUSY = abm.BehaviourParams(
    like_rate=0.3, dislike_rate=0.3, repost_rate=0.3, quote_rate=0.3, comment_rate=0.3, follow_rate=0.3
)


def test_choose_actions_seeded():
    f = feed(np.random.default_rng(0), 3000, 8)
    allowed = allowed_of(TWITTER_DEFAULT_ACTIONS)
    a1 = abm.choose_actions(np.random.default_rng(42), BUSY, allowed=allowed, **f)
    a2 = abm.choose_actions(np.random.default_rng(42), BUSY, allowed=allowed, **f)
    a3 = abm.choose_actions(np.random.default_rng(43), BUSY, allowed=allowed, **f)
    for x, y in zip(a1, a2):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a1[0], a3[0])
    assert a1[0].dtype == np.int8 and a1[1].dtype == np.int64 and a1[2].dtype == np.float32


@pytest.mark.parametrize("seed", [1, 2])
def test_choose_actions_respects_constraints(seed, monkeypatch):
    monkeypatch.setattr(behaviour, "CHOICE_BLOCK_ROWS", 1000)  # several blocks
    rng = np.random.default_rng(seed)
    n, k = 5000, 6
    f = feed(rng, n, k)
    extra = dict(
        already_disliked=rng.random((n, k)) < 0.2,
        already_reposted=rng.random((n, k)) < 0.2,
        own_post=rng.random((n, k)) < 0.1,
    )
    allowed = np.zeros((n, NUM_ACTIONS), bool)
    allowed[:, list(REDDIT_DEFAULT_ACTIONS) + [A.REPOST, A.QUOTE_POST]] = True
    allowed &= rng.random((n, NUM_ACTIONS)) < 0.7  # per-user masks
    action, slot, stance = abm.choose_actions(rng, BUSY, allowed=allowed, **f, **extra)
    rows = np.arange(n)
    engaged = np.isin(action, [int(a) for a in abm.ENGAGE_ACTIONS])
    assert engaged.mean() > 0.3  # the checks below see real choices
    ok_action = allowed[rows, action] | (action == A.DO_NOTHING)
    assert ok_action.all()
    assert np.all(slot[~engaged] == -1) and np.all((slot[engaged] >= 0) & (slot[engaged] < k))
    s = np.where(engaged, slot, 0)
    assert f["feed_mask"][rows, s][engaged].all()
    liked, followed = f["already_liked"][rows, s], f["already_followed_author"][rows, s]
    disliked, reposted, own = (extra[x][rows, s] for x in ("already_disliked", "already_reposted", "own_post"))
    assert not np.any((action == A.LIKE_POST) & (liked | disliked))
    assert not np.any((action == A.DISLIKE_POST) & (liked | disliked))
    assert not np.any((action == A.FOLLOW) & followed)
    assert not np.any((action == A.REPOST) & reposted)
    assert not np.any(engaged & own & (action != A.CREATE_COMMENT))
    text = np.isin(action, [A.CREATE_POST, A.CREATE_COMMENT, A.QUOTE_POST])
    assert np.all(np.isnan(stance[~text])) and np.all(np.abs(stance[text]) <= 1)


def test_choose_actions_nothing_allowed():
    f = feed(np.random.default_rng(3), 500, 4)
    action, slot, _ = abm.choose_actions(np.random.default_rng(0), BUSY, allowed=np.zeros(NUM_ACTIONS, bool), **f)
    assert np.all(action == A.DO_NOTHING) and np.all(slot == -1)


def uniform_feed(n, k, stance, x=0.8, likes=0, followers=0):
    return dict(
        opinion=np.full(n, x),
        feed_stance=np.full((n, k), stance),
        feed_mask=np.ones((n, k), bool),
        feed_likes=np.full((n, k), likes),
        feed_author_followers=np.full((n, k), followers),
        post_rate=np.zeros(n),
        already_liked=np.zeros((n, k), bool),
        already_followed_author=np.zeros((n, k), bool),
    )


def rate(action, code):
    return float(np.mean(action == code))


def test_agreement_drives_likes_and_dislikes():
    n, k = 20_000, 4
    allowed = allowed_of(REDDIT_DEFAULT_ACTIONS)
    agree, _, _ = abm.choose_actions(
        np.random.default_rng(0), abm.BehaviourParams(), allowed=allowed, **uniform_feed(n, k, 0.8)
    )
    disagree, _, _ = abm.choose_actions(
        np.random.default_rng(1), abm.BehaviourParams(), allowed=allowed, **uniform_feed(n, k, -0.8)
    )
    # agreement 1 vs 0.2: expected like rates ~0.12 vs ~0.005
    assert rate(agree, A.LIKE_POST) > 3 * rate(disagree, A.LIKE_POST) + 0.01
    assert rate(disagree, A.DISLIKE_POST) > 3 * rate(agree, A.DISLIKE_POST) + 0.01
    # in a mixed feed the liked slot is mostly an agreeing one
    f = uniform_feed(n, k, 0.8)
    f["feed_stance"][:, ::2] = -0.8
    action, slot, _ = abm.choose_actions(np.random.default_rng(2), abm.BehaviourParams(), allowed=allowed, **f)
    liked_slots = slot[action == A.LIKE_POST]
    assert liked_slots.size > 500 and np.mean(liked_slots % 2 == 1) > 0.8


def test_popularity_fame_and_unknown_stance():
    n, k = 20_000, 4
    allowed = allowed_of(TWITTER_DEFAULT_ACTIONS)
    p = abm.BehaviourParams()
    quiet, _, _ = abm.choose_actions(np.random.default_rng(0), p, allowed=allowed, **uniform_feed(n, k, 0.8))
    hot, _, _ = abm.choose_actions(
        np.random.default_rng(1), p, allowed=allowed, **uniform_feed(n, k, 0.8, likes=10_000, followers=1_000_000)
    )
    assert rate(hot, A.LIKE_POST) > 1.5 * rate(quiet, A.LIKE_POST)
    assert rate(hot, A.FOLLOW) > 2 * rate(quiet, A.FOLLOW)
    known, _, _ = abm.choose_actions(np.random.default_rng(2), p, allowed=allowed, **uniform_feed(n, k, 0.0, x=0.0))
    unknown, _, _ = abm.choose_actions(
        np.random.default_rng(3), p, allowed=allowed, **uniform_feed(n, k, np.nan, x=0.0)
    )
    ratio = rate(unknown, A.LIKE_POST) / rate(known, A.LIKE_POST)
    assert 0.35 < ratio < 0.65  # unknown_stance_weight = 0.5


def test_post_rate_and_post_stance():
    n, k = 20_000, 3
    f = uniform_feed(n, k, 0.0, x=0.5)
    f["post_rate"] = np.full(n, 0.3)
    action, slot, stance = abm.choose_actions(
        np.random.default_rng(0), abm.BehaviourParams(), allowed=allowed_of(TWITTER_DEFAULT_ACTIONS), **f
    )
    posts = action == A.CREATE_POST
    assert abs(posts.mean() - 0.3) < 0.02 and np.all(slot[posts] == -1)
    assert abs(stance[posts].mean() - 0.5) < 0.01 and 0.08 < stance[posts].std() < 0.12
    action, _, _ = abm.choose_actions(
        np.random.default_rng(0), abm.BehaviourParams(), allowed=allowed_of([A.LIKE_POST]), **f
    )
    assert not np.any(action == A.CREATE_POST)


# --------------------------------------------------------------------------------------------
# text
# --------------------------------------------------------------------------------------------


def test_template_lexicon_round_trip():
    rng = np.random.default_rng(0)
    stance = rng.uniform(-1, 1, 3000)
    topic = "the new climate law"
    texts = abm.template_text(stance, topic, rng)
    assert all(topic in t for t in texts)
    score = abm.lexicon_stance(texts, topic=topic)
    label = abm.stance_label(stance)
    polar = label != 2
    assert np.all(np.sign(score[polar]) == np.sign(stance[polar]))
    assert np.all(np.isnan(score[label == 2]))
    strong, mild = np.abs(score[(label == 0) | (label == 4)]), np.abs(score[(label == 1) | (label == 3)])
    assert strong.min() > mild.max()  # wording is graded
    np.testing.assert_array_equal(abm.lexicon_stance(texts), score)  # topic has no lexicon word


def test_template_text_is_seeded():
    stance = np.linspace(-1, 1, 50)
    a = abm.template_text(stance, "x", np.random.default_rng(5))
    b = abm.template_text(stance, "x", np.random.default_rng(5))
    assert a == b and len(a) == 50
    assert abm.template_text([np.nan], "x", np.random.default_rng(0))[0] in [
        t.format(topic="x") for t in abm._TEMPLATES[2]
    ]


def test_topic_words_are_ignored():
    topic = "the fake news law"  # "fake" is a negative word
    texts = abm.template_text(np.array([0.4, 0.9]), topic, np.random.default_rng(1))
    assert np.all(abm.lexicon_stance(texts, topic=topic) > 0)


def test_lexicon_negation_and_no_signal():
    s = abm.lexicon_stance(
        [
            "This is good.",
            "This is not good.",
            "I don't support this at all",
            "The meeting is on Tuesday.",
            "",
            "Absolutely terrible idea!!",
        ]
    )
    assert s[0] > 0 and s[1] < 0 and s[2] < 0
    assert np.isnan(s[3]) and np.isnan(s[4])
    assert s[5] < -0.9
    assert np.isnan(abm.lexicon_stance([None])[0])
