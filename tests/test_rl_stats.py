"""The RL-paper statistics (`train/rl_stats.py`) against hand-computed cases.

IQM as scipy's trim_mean(x, 0.25), a stratified bootstrap interval that covers the truth on
seeded samples about as often as it says, the probability of improvement (1 when one
candidate dominates on every episode, hand-counted pairs, ties half), performance profiles.
"""

from __future__ import annotations

import numpy as np
import pytest

from oasis_gym.train import rl_stats as rs


def test_the_iqm_is_the_mean_of_the_middle_half():
    assert rs.iqm(np.arange(1.0, 9.0)) == 4.5  # (3 + 4 + 5 + 6) / 4
    assert rs.iqm([0, 1, 2, 3, 100, -100, 4, 5]) == 2.5  # the outliers cut: (1 + 2 + 3 + 4) / 4
    assert rs.iqm(np.arange(10.0)) == 4.5  # int(10 / 4) = 2 cut each end, as scipy: mean of 2..7
    assert rs.iqm([[1.0, 9.0], [5.0, 3.0]]) == 4.0  # all runs x episodes together: (3 + 5) / 2
    assert np.array_equal(rs.iqm(np.array([[1.0, 2, 3, 40], [0, 0, 4, 4]]), axis=-1), [2.5, 2.0])


def test_the_bootstrap_interval_covers_the_truth_on_a_seeded_sample():
    x = np.random.default_rng(0).normal(3.0, 1.0, (5, 40))  # 5 runs x 40 episodes
    s = rs.summarize(x)
    assert s["mean_lo"] < 3.0 < s["mean_hi"] and s["iqm_lo"] < 3.0 < s["iqm_hi"]  # symmetric: IQM's truth 3 too
    assert s["mean"] == pytest.approx(x.mean()) and (s["runs"], s["episodes"]) == (5, 40)
    assert s["mean_hi"] - s["mean_lo"] == pytest.approx(2 * 1.96 / np.sqrt(200), rel=0.2)  # the normal width


def test_the_intervals_cover_about_95_percent_of_seeded_samples():
    rng = np.random.default_rng(0)
    hits = [(lambda s: s["mean_lo"] < 0 < s["mean_hi"])(rs.summarize(rng.normal(0, 1, (4, 30)), reps=500, seed=i))
            for i in range(200)]  # fmt: skip
    assert 0.88 <= np.mean(hits) <= 0.99


def test_a_policy_that_dominates_on_every_episode_improves_with_probability_one():
    episodes = np.random.default_rng(1).normal(0, 50, 20)  # episodes far apart: only the pairing sees it
    better, worse = episodes[None, :] + np.array([[0.5], [1.0]]), episodes
    assert rs.prob_improvement(better, worse) == {"p": 1.0, "lo": 1.0, "hi": 1.0}
    assert rs.prob_improvement(worse, better) == {"p": 0.0, "lo": 0.0, "hi": 0.0}
    assert rs.prob_improvement(worse, worse)["p"] == 0.5  # ties count half


def test_the_probability_of_improvement_counts_pairs_by_hand():
    assert rs.prob_improvement([[1.0, 2.0, 3.0]], [[0.0, 2.0, 4.0]])["p"] == 0.5  # (1 + 0.5 + 0) / 3
    assert rs.prob_improvement([[3.0, 5.0], [3.0, 0.0]], [[2.0, 4.0]])["p"] == 0.75  # 3 of 4 pairs
    p = rs.prob_improvement(np.random.default_rng(2).normal(1, 1, (3, 30)), np.zeros(30))
    assert p["lo"] <= p["p"] <= p["hi"] and p["lo"] > 0.5  # one sigma better: surely more often


def test_performance_profiles_count_the_scores_above_each_threshold():
    x = [[1.0, 2.0], [3.0, 4.0]]
    assert rs.performance_profile(x, [0, 1, 2.5, 4]).tolist() == [1.0, 0.75, 0.5, 0.0]  # strictly above
    lo, hi = rs.profile_band(x, [0, 4])
    assert lo.tolist() == [1.0, 0.0] and hi.tolist() == [1.0, 0.0]


def test_the_report_and_its_table_say_the_same_numbers():
    cands = {"PPO": np.array([[2.0, 3.0, 4.0], [2.0, 3.0, 5.0]]), "tuned": np.array([[1.0, 1.0, 9.0]])}
    rep = rs.report(cands, "PPO")
    assert rep["tuned"]["p_improvement"]["p"] == pytest.approx(4 / 6) and "p_improvement" not in rep["PPO"]
    rows = rs.table(rep, "PPO")
    assert rows[0] == "| policy | runs x episodes | IQM [95% CI] | mean [95% CI] | P(PPO > policy) [95% CI] |"
    assert rows[3].startswith("| tuned | 1 x 3 | 3.67 [") and " 0.67 [" in rows[3]  # 3 values: none cut


@pytest.mark.parametrize("bad", [[], [[np.nan, 1.0]], np.zeros((2, 2, 2))])
def test_bad_scores_are_one_line(bad):
    with pytest.raises(ValueError, match="non-empty finite"):
        rs.summarize(bad)


def test_candidates_scored_on_different_episodes_are_refused():
    with pytest.raises(ValueError, match="same episodes, got 3 and 2"):
        rs.prob_improvement([[1.0, 2.0, 3.0]], [[1.0, 2.0]])
