"""The report's plots read as a person needs: whole-number steps, words on the axes,
do_nothing apart, no magnified noise, legends where lines share a panel, a safe palette."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import to_hex

from oasis_gym.metrics.report_plots import PALETTE, actions_figure, metric_label, series_figure

STEPS = np.arange(6, dtype=np.int64)
METRICS = {
    "actions/do_nothing": (STEPS, np.array([70.0, 75, 80, 72, 71, 79])),
    "actions/like_post": (STEPS, np.array([3.0, 1, 4, 1, 5, 9])),
    "actions/repost": (STEPS, np.array([0.0, 1, 0, 2, 0, 1])),
    "opinion/std": (STEPS, np.array([0.486, 0.487, 0.488, 0.489, 0.488, 0.487])),
    "exposure/misinfo_share": (STEPS, np.array([0.1, 0.3, 0.2, 0.25, 0.15, 0.2])),
}


def _whole(ticks) -> bool:
    return all(float(t).is_integer() for t in ticks)


def test_actions_put_do_nothing_in_a_panel_of_its_own_on_whole_steps():
    fig = actions_figure(METRICS, sorted(t for t in METRICS if t.startswith("actions/")))
    acting, idle = fig.axes
    assert [line.get_label() for line in acting.get_lines()] == ["like post", "repost"]
    assert [line.get_label() for line in idle.get_lines()] == ["do nothing"]
    assert acting.get_legend() is not None and "nothing" in idle.get_title()
    for ax in fig.axes:
        assert _whole(ax.get_xticks()) and ax.get_xlabel() == "step" and ax.get_ylabel() == "actions per step"
        assert {to_hex(line.get_color()) for line in ax.get_lines()} <= {c.lower() for c in PALETTE}


def test_series_panels_have_words_units_and_no_magnified_noise():
    fig = series_figure(METRICS, ["exposure/misinfo_share", "opinion/std"], "Mixed")
    assert len(fig.axes) == 2  # no empty panel
    share, std = fig.axes
    assert share.get_title() == "Exposure of the served feeds: misinfo share"
    assert share.get_ylabel() == "share of all (0-1)"
    lo, hi = std.get_ylim()
    assert hi - lo >= 0.1 * 0.489 - 1e-9  # a 0.003 wiggle is not blown up to fill the panel
    assert "nearly flat: 0.486 to 0.489" in std.get_title()
    assert all(_whole(ax.get_xticks()) for ax in fig.axes)


def test_metric_labels_are_words():
    assert metric_label("network/follower_gini") == ("Follow network: follower gini", "Gini (0-1)")
    assert metric_label("opinion/to_extreme_share")[0] == "Opinions: to extreme share"
