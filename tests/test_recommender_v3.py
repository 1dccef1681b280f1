"""Recommender-v3 (issue 30): misinformation campaigns whose bots fake popularity, so the best
ranking changes while a campaign runs (v2's numbers, pinned when v3 came, are in test_pins_runner.py)."""

from __future__ import annotations

import sys
from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
from bench_scripts import BENCH, run_bench

import oasis_gym  # noqa: F401  (registers the ids)
from oasis_gym.batched import posting
from oasis_gym.batched.engine import Engine
from oasis_gym.model.ranking import CANDIDATE_FEATURES, global_weights
from oasis_gym.model.tiers import TIERS_V2, TIERS_V3, tier
from oasis_gym.train import campaign_detector as cd
from oasis_gym.train import tuned_baselines as tb


def test_v3_has_v2s_spaces_and_differs_only_in_its_campaigns():
    env = gym.make("oasis_gym/Recommender-v3", users=200, max_steps=5)
    assert env.action_space.shape == (8 * 9,) and env.observation_space.shape == (19,)
    assert TIERS_V3["easy"] == TIERS_V2["easy"]  # no campaigns: v2's sanity tier
    for name in ("medium", "hard"):
        v2, v3 = TIERS_V2[name], TIERS_V3[name]
        changed = {f for f in v2.__dataclass_fields__ if getattr(v2, f) != getattr(v3, f)}
        assert changed == {"campaign_amplify", "campaign_boost", "campaign_on", "campaign_off"}
        assert v3.campaign_amplify > 0 and v3.campaign_on / (v3.campaign_on + v3.campaign_off) > 0.3


def _engine(version: int, campaign: list[bool]) -> Engine:
    e = Engine(len(campaign), 200, "medium", version=version)
    e.reset(np.arange(len(campaign)), np.arange(31, 31 + len(campaign)))
    for _ in range(6):
        e.step()
    e.state.campaign[:] = campaign
    return e


def test_campaign_bots_like_and_view_every_live_campaign_post_while_the_campaign_runs():
    e = _engine(3, [True, False])
    st = e.state
    likes, views = st.likes.copy(), st.impressions.copy()
    posting.bot_likes(st, np.ones(2, bool))
    bots = (st.misinfo_account & (st.suspended_at < 0)).sum(1)
    rows = np.arange(2)[:, None]
    theirs = st.misinfo_account[rows, st.author] & (st.post_id >= 0) & ~st.removed
    assert theirs[0].any()
    np.testing.assert_array_equal(st.likes[0] - likes[0], np.where(theirs[0], bots[0], 0))
    np.testing.assert_array_equal(st.impressions[0] - views[0], np.where(theirs[0], 2 * bots[0], 0))
    np.testing.assert_array_equal(st.likes[1], likes[1])  # no campaign, no bots
    v2 = _engine(2, [True, True])
    before = v2.state.likes.copy()
    posting.bot_likes(v2.state, np.ones(2, bool))
    np.testing.assert_array_equal(v2.state.likes, before)  # v2 has no amplification


def _misinfo_share_by_regime(dynamics) -> np.ndarray:
    """Misinformation share of impressions [between campaigns, during campaigns] when the
    ranking is popularity alone."""
    k = 8
    e = Engine(k, 300, dynamics=dynamics)
    e.reset(np.arange(k), np.arange(20, 20 + k))
    w = np.zeros(len(CANDIDATE_FEATURES), np.float32)
    w[CANDIDATE_FEATURES.index("popularity")] = 1.0
    weights = np.broadcast_to(global_weights(w, 8), (k, 8, len(w)))
    mis, imp = np.zeros(2), np.zeros(2)
    for _ in range(60):
        out = e.step(weights)
        regime = out["campaign"].astype(int)
        np.add.at(mis, regime, out["misinfo_impressions"])
        np.add.at(imp, regime, out["impressions"])
    assert imp.min() > 0  # both regimes seen
    return mis / imp


@pytest.mark.parametrize("difficulty", ["medium", "hard"])
def test_during_campaigns_popularity_points_at_misinformation(difficulty):
    v3 = tier(difficulty, 3)
    faked = _misinfo_share_by_regime(v3)
    honest = _misinfo_share_by_regime(replace(v3, campaign_amplify=0.0))
    assert faked[1] > 1.5 * honest[1]  # the bots' likes put their posts in the feeds
    assert faked[1] > 1.4 * faked[0]


def test_the_state_headroom_bench_runs_and_reports_the_paired_differences():
    out = run_bench(
        "research/recommender_state_headroom.py",
        *"--users 200 --max-steps 40 --iterations 2 --population 4 --tune-seeds 1 2 3 --eval-seeds 4 5 6".split(),
    )
    assert out["bench"] == "recommender_state_headroom" and out["version"] == 3
    for name in ("held-out seeds", "held-out population"):
        for key in ("campaign_aware_minus_per_user_constant", "detector_minus_per_user_constant"):
            diff = out[name][key]
            assert diff["episodes"] == 3 and diff["lo"] <= diff["mean"] <= diff["hi"]
    assert set(out["campaign_change"]) == set(out["detector_change"]) == set(CANDIDATE_FEATURES)
    assert out["tuned"]["campaign_aware"] >= out["tuned"]["per_user_constant"]  # the incumbent d = 0 is kept


def test_the_campaign_aware_policy_adds_its_change_only_while_a_campaign_runs():
    e = {"difficulty": "medium", "users": 200, "max_steps": 3, "version": 3}
    task = tb.make_task("recommender", 2, e)
    task.state.campaign[:] = [True, False]
    base = tb.default_action("per_user", 8)
    act = cd.on_campaign(base)(task, np.ones((2, 9), np.float32))
    got = act(None, 0)
    np.testing.assert_array_equal(got[1], base)
    np.testing.assert_array_equal(got[0, :9], base[:9] + 1)
    np.testing.assert_array_equal(got[0, 9:], base[9:])


def test_the_campaign_detector_reads_the_observation_only_and_applies_its_change_where_it_fires():
    env = {"difficulty": "medium", "users": 200, "max_steps": 40, "version": 3}
    base = tb.default_action("per_user", 8)
    det = cd.fit_detector(env, [1, 2, 3], base)
    assert det["weights"] is not None and det["tuning_auc"] > 0.75  # the campaign shows in the observation
    obs = np.zeros((3, 19), np.float32)
    obs[:, cd.TIME] = [0.0, 0.5, 1.0]
    p = cd.detect(det, obs)
    assert np.ptp(p) == 0.0  # the time is left out
    task = tb.make_task("recommender", 2, env)
    sure = {**det, "weights": np.r_[np.zeros(19), 50.0]}  # always fires
    act = cd.on_detector(base, sure)(task, np.ones((2, 9), np.float32))
    np.testing.assert_array_equal(act(obs[:2], 0)[:, :9], np.tile(base[:9] + 1, (2, 1)))
    never = {**det, "weights": None}
    np.testing.assert_array_equal(cd.on_detector(base, never)(task, np.ones((2, 9)))(obs[:2], 0), np.tile(base, (2, 1)))


@pytest.mark.parametrize(
    ("bench_file", "extra", "match"),
    [
        ("recommender_state_headroom.py", ["--users", "0"], "--users must be >= 1"),
        ("recommender_state_headroom.py", ["--tune-seeds", "1", "--eval-seeds", "1", "2"], "disjoint"),
        ("recommender_state_headroom.py", ["--difficulty", "easy"], "invalid choice"),
        ("recommender_personalization.py", ["--eval-population", "0"], "--eval-population must not be 0"),
        ("recommender_personalization.py", ["--iterations", "x"], "invalid int value"),
    ],
)
def test_the_headroom_benches_refuse_bad_input_in_one_line_before_any_compute(bench_file, extra, match):
    import subprocess

    path = BENCH / "research" / bench_file
    done = subprocess.run([sys.executable, str(path), *extra], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and match in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_campaign_baselines_are_tuned_where_the_tier_has_campaigns_and_never_lose_on_their_seeds():
    assert cd.has_campaigns({"difficulty": "medium", "version": 3})
    assert not cd.has_campaigns({"difficulty": "easy", "version": 3})  # no campaigns: no such baselines
    env = {"difficulty": "hard", "users": 200, "max_steps": 30, "version": 3, "population_seed": 0}
    seeds = [1, 2, 3]
    const = tb.tune_constant(env, seeds, iterations=1, population=3)
    cem = {"iterations": 2, "population": 4}
    found = cd.tune(env, seeds, const["action"], "per_user", cem)
    for name in ("campaign_detector", "campaign_told"):  # the incumbent d = 0 (the constant itself) is kept
        assert found[name]["score"] >= const["score"] - 1e-9 and len(found[name]["action"]) == 9
    assert found["campaign_detector"]["env_steps"] == 2 * 4 * 3 * 30 + 3 * 30  # the search and the fit's episodes
    policies = cd.candidates(found, const["action"])
    assert set(policies) == {"tuned_campaign_detector", "campaign_told (privileged)"}
    runs = tb.run_episodes("recommender", env, seeds, act_for=policies["tuned_campaign_detector"])
    assert np.isclose(runs["return"].mean(), found["campaign_detector"]["score"])  # scored as tuned
    assert cd.candidates({"constant": const}, const["action"]) == {}
    glob = tb.tune_constant(env, seeds, iterations=1, population=3, ranking="global")  # one w: its change is all of it
    found = cd.tune(env, seeds, glob["action"], "global", {"iterations": 1, "population": 3})
    act = cd.candidates(found, glob["action"])["tuned_campaign_detector"](tb.make_task("recommender", 3, env))
    assert act(np.zeros((3, len(cd.RECOMMENDER_OBS)), np.float32), 0).shape == (3, 9)


def test_the_detector_anchor_is_the_tuned_detector_policy_when_ppo_adds_nothing():
    from oasis_gym.train import v1, v1_baselines

    args = v1.Args(task="recommender", version=3, difficulty="hard", users=200, max_steps=30, anchor="tuned_detector")
    base = tb.default_action("per_user", 8)
    det = cd.fit_detector(args.env(), [1, 2], base)
    d = np.linspace(-0.3, 0.3, 9)
    tuned = {"constant": {"action": base.tolist()}, "campaign_detector": {"action": d.tolist(), "detector": det},
             "campaign_told": {"action": d.tolist()}}  # fmt: skip
    anchor = v1_baselines.make_anchor(args, tuned)
    assert anchor.name == "tuned campaign detector, global-row corrections"
    detector = cd.candidates(tuned, base)["tuned_campaign_detector"]
    task = tb.make_task("recommender", 4, args.env())
    rows = np.arange(4)
    task.reset(rows, np.array([7, 8, 9, 10]))
    obs = task.reset_obs(rows)
    fired = 0
    for t in range(task.max_steps):  # PPO's zero correction plays the tuned detector's policy, step by step
        expected, got = detector(task)(obs, t), anchor.env_action(np.zeros((4, 9), np.float32), obs)
        np.testing.assert_allclose(got, np.clip(expected, -1, 1), atol=1e-6)
        fired += int(cd.fires(det, obs).sum())
        obs = task.step(got)[0]
    assert fired > 0  # the change was applied somewhere
    got = anchor.env_action(np.full((4, 9), 0.1, np.float32), obs)  # a correction moves the global row only
    np.testing.assert_allclose(got[:, 9:], np.clip(np.tile(base[9:], (4, 1)), -1, 1))
    with pytest.raises(ValueError, match="--anchor tuned_detector needs a tier with campaigns"):
        v1.Args(task="recommender", version=3, difficulty="easy", anchor="tuned_detector").check(1)
