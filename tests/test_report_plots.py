"""The report's plots read as a person needs: whole-number steps, words on the axes,
do_nothing apart, no magnified noise, legends where lines share a panel, a safe palette."""

from __future__ import annotations

import sqlite3

import numpy as np
from matplotlib.colors import to_hex
from oasis_fixture import build_oasis_db

from oasis_gym.app.run import simulate
from oasis_gym.cli.report import make_report
from oasis_gym.envs import twitter_v0
from oasis_gym.metrics import MetricsRecorder, read_metrics
from oasis_gym.metrics.report_plots import (
    PALETTE,
    actions_figure,
    metric_label,
    plan_metric_plots,
    series_figure,
    zero_series,
)
from oasis_gym.policies.abm import ABMPolicy

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
        assert _whole(ax.get_xticks()) and ax.get_xlabel() == "step" and ax.get_ylabel() == "actions per step (count)"
        assert {to_hex(line.get_color()) for line in ax.get_lines()} <= {c.lower() for c in PALETTE}


def test_series_panels_have_words_units_and_no_magnified_noise():
    fig = series_figure(METRICS, ["exposure/misinfo_share", "opinion/std"], "Mixed")
    assert len(fig.axes) == 2  # no empty panel
    share, std = fig.axes
    assert share.get_title() == "misinformation share of impressions"
    assert share.get_ylabel() == "share of impressions (0-1)"
    lo, hi = std.get_ylim()
    assert hi - lo >= 0.1 * 0.489 - 1e-9  # a 0.003 wiggle is not blown up to fill the panel
    assert "nearly flat: 0.486 to 0.489, within 1%" in std.get_title()
    assert all(_whole(ax.get_xticks()) for ax in fig.axes)


def test_metric_labels_are_words():
    assert metric_label("network/follower_gini") == ("Follow network: followers' Gini coefficient", "Gini (0-1)")
    assert metric_label("opinion/to_extreme_share")[0] == "Opinions: users moved toward an extreme"
    assert metric_label("exposure/impressions")[1] == "impressions (count)"  # was "share"


def test_series_zero_at_every_step_are_left_out_of_the_plots_and_named_once(tmp_path):
    """summary.txt carried 19 lines of `invalid/*: 0` and metrics_invalid.png 16 flat panels."""
    zeros = {f"invalid/{name}": (STEPS, np.zeros(6)) for name in ("muted", "self_target", "text_empty")}
    metrics = {**METRICS, **zeros, "invalid/rate": (STEPS, np.array([0.0, 0, 0.5, 0, 0, np.nan]))}
    assert zero_series(metrics) == sorted(zeros)
    names = [name for name, _ in plan_metric_plots(metrics, [])]
    assert names == ["actions.png", "metrics_exposure.png", "metrics_invalid.png", "metrics_opinion.png"]
    fig = dict(plan_metric_plots(metrics, []))["metrics_invalid.png"]()
    assert [ax.get_title() for ax in fig.axes] == ["share of actions rejected"]  # not flat zero
    assert fig.axes[0].get_ylabel() == "share of actions (0-1)"
    only_zero = {"actions/like_post": METRICS["actions/like_post"], **zeros}
    assert [name for name, _ in plan_metric_plots(only_zero, [])] == ["actions.png"]  # no metrics_invalid.png


def test_the_summary_names_the_zero_series_in_one_line_per_group_and_the_title_says_what_it_reads(tmp_path):
    db = tmp_path / "run.db"
    env = twitter_v0.parallel_env(users=30, activation=0.5, max_cycles=3, db_path=str(db))
    MetricsRecorder.attach(env.sim, None)
    simulate(env, ABMPolicy(), seed=0)
    env.close()
    make_report(db, tmp_path / "r")
    text = (tmp_path / "r" / "summary.txt").read_text()
    assert text.startswith(f"Report of the oasis-gym run journaled in {db}")  # was "oasis-gym run report"
    build_oasis_db(tmp_path / "oasis.db")
    make_report(tmp_path / "oasis.db", tmp_path / "o")
    assert (tmp_path / "o" / "summary.txt").read_text().startswith(f"Report of the OASIS database {tmp_path}")
    conn = sqlite3.connect(db)
    zero = set(zero_series(read_metrics(conn)))
    conn.close()
    assert zero  # (this journal has flat series)
    final = text.split("final values (last step with a value):\n")[1].split("\n\n")[0].splitlines()
    assert final and not {line.strip().split(":")[0] for line in final} & zero
    block = text.split("zero at every step")[1].split("\n\n")[0].splitlines()[1:]
    named = {f"{g}/{n}" for line in block for g, names in [line.strip().split(": ", 1)] for n in names.split(", ")}
    assert named == zero and len(block) == len({t.rpartition("/")[0] for t in zero})  # one line per group
