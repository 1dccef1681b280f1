"""Intervals a reader can trust: a share's interval stays in [0, 1]."""

from __future__ import annotations

import math

import pytest

from oasis_gym.metrics.intervals import wilson
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


def test_a_share_of_seeds_gets_the_wilson_interval():
    """Every seed ordered (1, 1, 1): the clipped t interval was [1, 1], certainty from 3 seeds."""
    assert wilson(3, 3) == pytest.approx((0.4385, 1.0), abs=1e-4)  # (textbook values)
    assert wilson(7, 10) == pytest.approx((0.3968, 0.8922), abs=1e-4)
    agree = mean_ci([1.0, 1.0, 1.0], (0.0, 1.0))
    assert agree["mean"] == 1.0 and agree["lo"] == pytest.approx(0.4385, abs=1e-4) and agree["hi"] == 1.0
    mixed = mean_ci([1.0, 0.0, 1.0, 1.0], (0.0, 1.0))
    assert (mixed["lo"], mixed["hi"]) == wilson(3, 4) and 0 < mixed["lo"] < 0.75 < mixed["hi"] < 1
    assert mean_ci([1.0, 1.0, 1.0])["lo"] == 1.0  # not a share: the t interval, as before
    s = summarize([{"ordered_share": v} for v in (1.0, 1.0, 0.0)])
    assert (s["ordered_share"]["lo"], s["ordered_share"]["hi"]) == wilson(2, 3)
