"""Intervals a reader can trust: a share's interval stays in [0, 1]."""

from __future__ import annotations

import math

from oasis_gym.scenarios.stats import is_share, mean_ci, summarize


def test_a_share_interval_stays_in_zero_one():
    wide = mean_ci([0.02, 0.98])  # n = 2: t(0.975, 1) = 12.7
    assert wide["lo"] < 0 and wide["hi"] > 1
    clipped = mean_ci([0.02, 0.98], (0.0, 1.0))
    assert (clipped["lo"], clipped["hi"]) == (0.0, 1.0) and clipped["mean"] == wide["mean"]
    tight = mean_ci([0.4, 0.41, 0.42, 0.43], (0.0, 1.0))
    assert tight == mean_ci([0.4, 0.41, 0.42, 0.43])  # inside the bounds nothing changes


def test_summaries_know_which_effects_are_shares():
    assert is_share("to_extreme_share") and is_share("up_vote_share_up") and is_share("rumour_reach_share")
    assert not is_share("up_share_lift_up_vs_control") and not is_share("d_esteban_ray")
    rows = [{"to_extreme_share": x, "d_esteban_ray": x} for x in (0.02, 0.98)]
    s = summarize(rows)
    assert s["to_extreme_share"]["lo"] == 0.0 and s["to_extreme_share"]["hi"] == 1.0
    assert s["d_esteban_ray"]["lo"] < 0 and math.isfinite(s["d_esteban_ray"]["hi"])
