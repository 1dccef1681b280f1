"""Every PNG a command writes reads as a person needs (`oasis_gym.figures`' rules), checked on
the matplotlib figures themselves, drawn from a small real run (the report's, through
`make_report`) or from the data the training and sweep commands pass their plots: y-labels in
words ending with a unit, counts on whole-number ticks, no line across steps without a value,
no panel that never changes, legends whose series are told apart, no text under 9 points."""

from __future__ import annotations

import json
import re

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator

from oasis_gym import figures
from oasis_gym.app.run import simulate
from oasis_gym.cli.report import make_report
from oasis_gym.envs import twitter_v0
from oasis_gym.figures import MIN_FONT, coincide_groups, save_png
from oasis_gym.metrics import MetricsRecorder, read_metrics
from oasis_gym.metrics import report_plots as RP
from oasis_gym.metrics.metric_units import UNKNOWN_UNIT, group_of
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.policies.hybrid import HybridPolicy
from oasis_gym.policies.llm.backends.base import GenerationResult
from oasis_gym.policies.llm_policy import LLMPolicy
from oasis_gym.scenarios.sweep import sweep_figure
from oasis_gym.train.benchmark import curves_figure
from oasis_gym.train.report import learning_curve_figure, pareto_figure
from oasis_gym.train.rl_stats import profile_figure


def figure_problems(fig) -> list[str]:
    """What breaks the rules in a figure (after `save_png`, which sets the text sizes and the
    ticks): one line per problem, [] when none."""
    bad = []
    for ax in fig.axes:
        lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        data = [ln for ln in ax.get_lines() if np.asarray(ln.get_ydata(), float).size > 1]
        label, where = ax.get_ylabel(), f"{ax.get_title() or fig.get_suptitle()!r}"
        if not (ax.get_lines() or ax.collections):
            continue
        if not re.fullmatch(r"\w.* \(.+\)", label) or label.lower().startswith("value") or UNKNOWN_UNIT in label:
            bad.append(f"{where}: y-label {label!r} has no words and unit")
        if figures.is_count_label(label):
            loc = ax.yaxis.get_major_locator()
            if not (isinstance(loc, MaxNLocator) and loc._integer):  # (matplotlib keeps it private)
                bad.append(f"{where}: a count's axis without whole-number ticks")
            if not all(float(t).is_integer() for t in ax.get_yticks()):
                bad.append(f"{where}: a count's axis with ticks {ax.get_yticks()}")
        ys = np.concatenate([np.asarray(ln.get_ydata(), float) for ln in data] or [np.zeros(0)])
        ys = ys[np.isfinite(ys)]
        if data and ys.size and np.all(ys == ys[0]):
            bad.append(f"{where}: constant panel ({ys[0]})")
        labels = [ln.get_label() for ln in lines]
        if len(set(labels)) < len(labels):
            bad.append(f"{where}: legend labels repeat {labels}")
        styles = [(ln.get_color(), ln.get_linestyle(), ln.get_marker()) for ln in lines]
        if len(set(styles)) < len(styles):
            bad.append(f"{where}: series styles repeat {styles}")
        if len(lines) > 1 and ax.get_legend() is None:
            bad.append(f"{where}: {len(lines)} series and no legend")
    small = {t.get_text() for t in fig.findobj(Text) if t.get_text() and t.get_fontsize() < MIN_FONT}
    if small:
        bad.append(f"texts under {MIN_FONT} pt: {sorted(small)[:5]}")
    return bad


def _gaps_crossed(fig, metrics) -> list[str]:
    """Lines (gid: the tag) drawn from one value to the next across a step of their group
    where the tag has no value."""
    bad = []
    for ln in fig.findobj(Line2D):
        tag = ln.get_gid()
        if tag not in metrics:
            continue
        grid = np.unique(np.concatenate([s for t, (s, _) in metrics.items() if group_of(t) == group_of(tag)]))
        x, y = np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)
        for i in range(len(x) - 1):
            if np.isfinite(y[i]) and np.isfinite(y[i + 1]) and np.any((grid > x[i]) & (grid < x[i + 1])):
                bad.append(f"{tag}: a line from step {x[i]:g} to {x[i + 1]:g}")
    return bad


class _Scripted:
    """An LLM backend that replies do_nothing with fixed token counts (128 of them cached)."""

    name = "scripted"

    def generate(self, conversations, schemas, *, max_tokens=256, temperature=0.0, seed=None, frequency_penalty=0.0):
        n = len(conversations)
        reply = json.dumps({"action": "do_nothing"})
        return GenerationResult(
            [reply] * n, [300] * n, [5] * n, ["stop"] * n, [None] * n, 0.01, {"cached_prompt_tokens": 128}
        )


def test_every_report_figure_of_a_real_run_reads_as_it_should(tmp_path, monkeypatch):
    """A hybrid run whose two LLM users act at some steps only: metrics_llm.png drew lines
    across the steps where none acted, labelled most axes "value", impressions "share", put
    counts on 0.5 ticks, drew cached prompt tokens 128 to 128 as a panel, and cascade.png was
    19 panels in 1000 x 3150 pixels."""
    db = tmp_path / "run.db"
    env = twitter_v0.parallel_env(users=200, activation=0.3, max_cycles=12, db_path=str(db))
    MetricsRecorder.attach(env.sim, None)
    env.reset(seed=0)
    simulate(env, HybridPolicy.top_k_by_followers(env, LLMPolicy(_Scripted()), ABMPolicy(), 2), seed=0)
    env.close()
    drawn, save = {}, RP._save
    monkeypatch.setattr(RP, "_save", lambda fig, path: drawn.setdefault(path.name, fig) and save(fig, path))
    make_report(db, tmp_path / "r")
    import sqlite3

    conn = sqlite3.connect(db)
    metrics = read_metrics(conn)
    conn.close()
    assert np.isnan(RP._on_grid(metrics, ["llm/latency_s"])["llm/latency_s"][1]).any()  # (a step without LLM users)
    assert {"metrics_llm.png", "cascade.png", "cascade_tracked.png", "cascade_curves.png"} <= set(drawn)
    for name, fig in drawn.items():
        assert figure_problems(fig) == [], name
        assert _gaps_crossed(fig, metrics) == [], name
        width, height = fig.get_size_inches() * 100
        assert width <= 1000 and height <= 1400 and len(fig.axes) <= RP.MAX_PANELS + 1, name  # legible at 100%
    assert {ln.get_gid() for ln in drawn["metrics_llm.png"].findobj(Line2D)} >= {"llm/latency_s", "llm/backend_s"}
    assert "llm/backend_cached_prompt_tokens" in RP.constant_series(metrics)  # 128 at every step: no panel
    assert "prompt tokens from the prefix cache = 128" in drawn["metrics_llm.png"].get_supxlabel()
    assert "llm/backend_cached_prompt_tokens: 128" in (tmp_path / "r" / "summary.txt").read_text()
    impressions = [ax for ax in drawn["metrics_exposure.png"].axes if "impressions (" in ax.get_title()]
    assert impressions[0].get_ylabel() == "impressions (count)"


def test_nearly_flat_is_said_only_of_a_series_within_one_percent(tmp_path):
    fig, (ax,) = figures.new_figure(1)
    assert RP.steady_ylim(ax, np.array([0.99, 0.97, 0.92])) == ""  # a 7% fall is not flat
    assert RP.steady_ylim(ax, np.array([0.486, 0.489])) == " (nearly flat: 0.486 to 0.489, within 1%)"
    lo, hi = ax.get_ylim()
    assert hi - lo >= 0.1 * 0.489 - 1e-12  # and the wiggle is not magnified


def test_learning_curve_tells_apart_baselines_that_coincide(tmp_path):
    """4 of 5 baselines at one value (or 0.0005 apart) were drawn on top of each other, one
    colour hiding three."""
    curve = [(64.0 * i, -1.2 + 0.05 * i + 0.02 * (-1) ** i) for i in range(1, 12)]
    same = -0.9213
    baselines = {"tuned_constant": same, "tuned_rule": same, "no_moderation": same, "oracle": same - 5e-4}
    fig = learning_curve_figure(curve, baselines | {"random": -1.4}, "Moderator-v1: PPO")
    save_png(fig, tmp_path / "learning_curve.png")
    assert figure_problems(fig) == []
    note = fig.axes[0].get_legend().get_title().get_text().replace("\n", " ")
    assert note == "tuned_constant (-0.921), tuned_rule (-0.921), no_moderation (-0.921) and oracle (-0.922) coincide"
    flat = [ln for ln in fig.axes[0].get_lines() if "evaluation" in ln.get_label()]
    assert len({ln.get_markevery() for ln in flat}) == len(flat)  # their markers take turns: all four show


def test_the_performance_profiles_say_their_axes_and_every_candidate(tmp_path):
    rng = np.random.default_rng(0)
    cands = {"PPO": rng.normal(0, 1, (3, 10)), "tuned_constant": rng.normal(0.5, 1, (1, 10))}
    fig = profile_figure({"held-out seeds": cands, "held-out population": cands}, "Moderator-v1 (hard)")
    save_png(fig, tmp_path / "performance_profiles.png")
    assert figure_problems(fig) == []
    ax = fig.axes[0]
    assert ax.get_xlabel() == "episode return τ (sum of rewards, held-out seeds)"
    assert ax.get_ylabel() == "runs x episodes with return > τ (share)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["PPO", "tuned_constant"]


def test_the_benchmark_band_is_a_95_percent_interval_of_the_mean(tmp_path):
    rng = np.random.default_rng(0)
    curves = [[(100.0 * i, -1 + 0.1 * i + rng.normal(0, 0.05)) for i in range(1, 9)] for _ in range(3)]
    fig = curves_figure(curves, "Recommender-v3 (easy): PPO, 3 seeds")
    save_png(fig, tmp_path / "learning_curves.png")
    assert figure_problems(fig) == []
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels[0] == "95% interval of the mean over 3 seeds (t); thin lines: each seed"
    assert "min-max" not in " ".join(labels)
    (band,) = fig.axes[0].collections
    ys = np.asarray([np.interp(np.linspace(0, 800, 50), *np.asarray(c).T) for c in curves])
    half = 4.303 * ys.std(0, ddof=1) / np.sqrt(3)  # t(0.975, 2)
    path = band.get_paths()[0].vertices[:, 1]
    assert np.isclose(path.max(), (ys.mean(0) + half).max()) and np.isclose(path.min(), (ys.mean(0) - half).min())


def test_the_sweep_figure_tells_apart_its_lines_and_says_its_units(tmp_path):
    def point(u: int, k: str) -> dict:
        mean = u / 100 + (k == "abm")
        return {"mean": mean, "lo": mean - 0.1, "hi": mean + 0.1}

    result = {
        "scenario": "misinformation",
        "params": {"population.users": [50, 100], "policy.kind": ["abm", "random"]},
        "seeds": [0, 1],
        "headline": ["reach_rumour_minus_news"],
        "points": [
            {"point": {"population.users": u, "policy.kind": k}, "effects": {"reach_rumour_minus_news": point(u, k)}}
            for u in (50, 100)
            for k in ("abm", "random")
        ],
    }
    fig = sweep_figure(result)
    save_png(fig, tmp_path / "sweep.png")
    assert figure_problems(fig) == [] and fig.axes[0].get_ylabel() == "reach rumour minus news (users reached)"


def test_coinciding_series_are_grouped():
    a, b = np.array([1.0, np.nan, 2.0]), np.array([1.0, 3.0, 2.0])
    assert coincide_groups(["x", "y", "z"], [a, b, a.copy()]) == [["x", "z"]]
    assert coincide_groups(["x", "y"], [a, a + 0.01]) == [] and coincide_groups(["x", "y"], [a, a + 0.01], 0.02)


def test_the_pareto_bench_figure_tells_apart_every_ranking(tmp_path):
    """bench/research/recommender_pareto.py drew every ranking in matplotlib's default cycle with 6 pt names."""
    points = {f"rank_{i}": {"engagement": {"mean": 1 + 0.1 * i}, "harm": 0.5 + 0.07 * i * i} for i in range(12)}
    points["ppo_seed0"] = {"engagement": {"mean": 1.5}, "harm": 1.0}
    fig = pareto_figure(points)
    save_png(fig, tmp_path / "pareto.png")
    assert figure_problems(fig) == []
