"""What `oasis-gym scratch` reports: the learning curves with bands across seeds (against env
steps and against wall time), the plateau check per agent, and the Markdown table of the
from-scratch agents against the benchmark's tuned and supervised baselines (`train/rl_stats.py`).

A learning curve is one list of points per (agent, seed) run, one point per checkpoint and one
before training: ``{"timesteps", "seconds" (training wall time so far, summed over the sessions
that ran it), "validation" (the greedy policy's mean return on the validation seeds),
"validation_returns", "training" (the mean return of the last 100 training episodes, SB3's
``rollout/ep_rew_mean``)}``.
"""

from __future__ import annotations

import numpy as np

from oasis_gym.figures import new_figure, series_style
from oasis_gym.metrics.intervals import mean_ci

from . import rl_stats

PLATEAU = 0.05  # flat: the last 20 % of the budget moved the mean validation return < 5 % of its rise
LAST = 0.2  # the share of the budget the plateau check reads


def progress(curves: list[list[dict]], budget: int) -> dict:
    """How far an agent's runs got: seeds started, seeds finished, the least and the mean share of
    the budget done, and the text the table shows ("2/10 seeds done, the rest at >= 40%")."""
    done = [c[-1]["timesteps"] if c else 0 for c in curves]
    finished = sum(d >= budget for d in done)
    least, mean = min(done) / budget, float(np.mean(done)) / budget
    text = f"{finished}/{len(done)} seeds done" + ("" if finished == len(done) else f", least {least:.0%} of budget")
    return {"seeds": len(done), "finished": finished, "least": least, "mean": mean, "text": text}


def _mean_curve(curves: list[list[dict]], x: str, grid: np.ndarray) -> np.ndarray:
    """Each seed's validation return interpolated on `grid` (seeds, points)."""
    return np.stack([np.interp(grid, [p[x] for p in c], [p["validation"] for p in c]) for c in curves])


def plateau(agent: str, curves: list[list[dict]], budget: int) -> str:
    """One line: did the agent's mean validation curve (over its seeds) flatten? Read on the last
    20 % of the budget (`LAST`): flat if it moved the return by less than 5 % (`PLATEAU`) of the
    rise from the untrained policy to the curve's best; judged only when every seed finished."""
    state = progress(curves, budget)
    if state["finished"] < state["seeds"] or not curves:
        return f"{agent}: plateau not judged: {state['text']} (judged when every seed has its whole budget)"
    y = _mean_curve(curves, "timesteps", np.array([0.0, (1 - LAST) * budget, budget])).mean(0)
    best = float(_mean_curve(curves, "timesteps", np.linspace(0, budget, 101)).mean(0).max())
    rise, last = best - y[0], y[2] - y[1]
    if rise <= 0:
        return f"{agent}: no rise over the untrained policy ({y[0]:.2f}); the last 20% moved it {last:+.2f}"
    share = last / rise
    verdict = "flat" if abs(share) < PLATEAU else ("still rising" if share > 0 else "falling")
    return (f"{agent}: the last 20% of the budget moved the mean validation return {last:+.2f}, {share:+.0%} of "
            f"its rise since the start ({rise:+.2f}): {verdict} (flat: under {PLATEAU:.0%})")  # fmt: skip


def curves_figure(curves: dict[str, list[list[dict]]], title: str, validation: int):
    """Two panels, x env steps and x training wall time: per agent every seed's validation curve
    (thin), their mean and, with 2 seeds or more, the 95% t interval of the mean (the band) where
    every seed has reached."""
    fig, axes = new_figure(2, panel=(5.0, 4.0))
    axis = (("timesteps", "env steps (timesteps, all envs together)", 1.0),
            ("seconds", "training wall time (minutes, summed over sessions)", 60.0))  # fmt: skip
    for ax, (x, label, scale) in zip(axes, axis):
        for i, (agent, runs) in enumerate(curves.items()):
            runs = [c for c in runs if len(c) > 1]
            if not runs:
                continue
            style = series_style(i) | {"marker": None}
            for c in runs:
                ax.plot(
                    [p[x] / scale for p in c], [p["validation"] for p in c], lw=0.6, alpha=0.35, color=style["color"]
                )
            grid = np.linspace(0, min(c[-1][x] for c in runs), 50)
            ys = _mean_curve(runs, x, grid)
            ax.plot(grid / scale, ys.mean(0), lw=2, label=f"{agent}: mean (thin: each seed)", **style)
            if len(runs) > 1:
                ci = [mean_ci(col) for col in ys.T]
                band = f"{agent}: 95% CI of the mean (t, {len(runs)} seeds)"
                ax.fill_between(grid / scale, [c["lo"] for c in ci], [c["hi"] for c in ci], alpha=0.2,
                                color=style["color"], label=band)  # fmt: skip
        ax.set_xlabel(label)
        ax.set_ylabel(f"greedy return (mean of {validation} validation episodes)")
        ax.set_title(title)
        if ax.get_legend_handles_labels()[0]:  # (no run has a curve yet: no legend)
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15))
    fig.set_layout_engine("constrained")
    return fig


def markdown(result: dict) -> str:
    """The from-scratch table of one task and tier (`scratch.table`'s result) as Markdown."""
    s, env = result["settings"], result["environment"]
    lines = [f"## {result['task']} ({s['difficulty']}): agents from scratch, {len(result['seeds'])} seeds x "
             f"{s['timesteps']:,} timesteps each", "",
             f"Users: rule-based, {s['users']} per platform. Baselines: {result['baselines_from']}. "
             f"Load {env['load_avg_1m']} at the table's making; training wall time per agent below.", ""]  # fmt: skip
    lines += ["| agent | trained | timesteps/s | training wall time |", "|---|---|---|---|"]
    for agent, a in result["agents"].items():
        lines.append(f"| {agent} ({a['text']}) | {a['progress']['text']} | {a['timesteps_per_s']:.0f} "
                     f"| {a['train_seconds'] / 60:.1f} min |")  # fmt: skip
    for set_name, res in result["eval_sets"].items():
        lines += ["", f"**{set_name}** (population {res['population_seed']}, {res['episodes']} episodes): IQM and "
                  "mean over runs x episodes, 95% stratified bootstrap CIs (an agent's runs: its seeds, each at "
                  "the timesteps it reached)", ""]  # fmt: skip
        lines += rl_stats.table(res["stats"])
        agents = list(res["p_improvement"])
        if agents:
            lines += ["", "P(agent > baseline) [95% CI], paired by episode:", "",
                      "| baseline | " + " | ".join(agents) + " |", "|---|" + "---|" * len(agents)]  # fmt: skip
            for base in next(iter(res["p_improvement"].values())):
                cells = [res["p_improvement"][a][base] for a in agents]
                lines.append(f"| {base} | " + " | ".join(f"{p['p']:.2f} [{p['lo']:.2f}, {p['hi']:.2f}]" for p in cells)
                             + " |")  # fmt: skip
    lines += ["", "Plateau check (validation seeds, mean over seeds):", ""]
    lines += [f"- {line}" for line in result["plateau"]]
    return "\n".join(lines) + "\n"
