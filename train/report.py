"""Honest comparisons for the training scripts: held-out evaluation sets, paired wins,
the printed baseline tables (v0 training and the v1-v3 tasks), the learning-curve PNG and the
recommender's engagement-against-harm figure (`pareto_figure`, bench/research/recommender_pareto.py's).

An evaluation set is a name, a population seed and episode seeds. The default sets are
disjoint from training by construction: training uses population 0 and episode seeds
drawn at or above `TRAIN_SEEDS_FROM` (2**20; the first episodes of PPO's vector envs use
`seed .. seed + n_envs - 1`), evaluation uses seeds 1000+ on population 0 ("held-out
seeds") and on population 1 ("held-out population", other users and follow graph).
`check_disjoint` refuses overlapping sets with a clear error.

`paired(ppo, baseline)` compares per seed (same seeds, same order): the mean and std of
the difference and the number of seeds where PPO is better ("wins").
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from oasis_gym.figures import coincide_groups, coincide_note, new_figure, save_png, series_style, visual_tolerance
from oasis_gym.model.seeds import TRAIN_SEEDS_FROM


@dataclass(frozen=True)
class EvalSet:
    """An evaluation set: its name, population seed and episode seeds."""

    name: str
    population_seed: int
    seeds: tuple[int, ...]


def default_eval_sets(seeds: Sequence[int], population_seed: int = 0, other_population: int = 1) -> list[EvalSet]:
    """Held-out seeds on the training population, and the same seeds on another population."""
    seeds = tuple(int(s) for s in seeds)
    return [EvalSet("held_out_seeds", population_seed, seeds), EvalSet("held_out_population", other_population, seeds)]


def check_disjoint(eval_sets: Sequence[EvalSet], train_seed: int, n_envs: int, train_population: int = 0) -> None:
    """Raise ValueError if an evaluation episode could replay a training episode."""
    first = set(range(train_seed, train_seed + n_envs))  # the vector envs' first, explicit seeds
    for s in eval_sets:
        bad = [x for x in s.seeds if x >= TRAIN_SEEDS_FROM or (s.population_seed == train_population and x in first)]
        if bad:
            raise ValueError(
                f"evaluation set {s.name!r} seeds {bad} may be training episodes: use seeds below "
                f"{TRAIN_SEEDS_FROM} outside {sorted(first)}"
            )


def paired(runs: Sequence[dict], base_runs: Sequence[dict], key: str = "return", higher_is_better: bool = True) -> dict:
    """PPO minus baseline per seed: mean, std, wins (PPO strictly better), n."""
    a = np.array([r[key] for r in runs], dtype=np.float64)
    b = np.array([r[key] for r in base_runs], dtype=np.float64)
    d = a - b
    better = d > 0 if higher_is_better else d < 0
    return {
        "diff_mean": float(d.mean()),
        "diff_std": float(d.std(ddof=1)) if len(d) > 1 else 0.0,
        "wins": int(better.sum()),
        "n": len(d),
    }


def mean_std(runs: Sequence[dict], key: str) -> str:
    """`mean ± std` of one metric over runs, as printed in the tables."""
    x = np.array([r[key] for r in runs], dtype=np.float64)
    return f"{x.mean():.3f} ± {x.std(ddof=1) if len(x) > 1 else 0.0:.3f}"


def table(title: str, candidates: dict[str, list[dict]], ppo: str, columns: Sequence[tuple[str, str, bool]]) -> str:
    """A plain-text table: one row per candidate, `mean ± std` per column (key, label,
    higher_is_better), then PPO's paired difference (mean ± std over seeds) and wins
    against each row on the first column."""
    key0, label0, hib0 = columns[0]
    head = (
        f"{'':28s}"
        + "".join(f"{label:>22s}" for _, label, _ in columns)
        + f"{'PPO - row (' + label0 + ')':>24s}{'PPO wins':>10s}"
    )
    lines = [title, head]
    for name, runs in candidates.items():
        row = f"{name:28s}" + "".join(f"{mean_std(runs, key):>22s}" for key, _, _ in columns)
        if name != ppo:
            p = paired(candidates[ppo], runs, key0, hib0)
            row += f"{p['diff_mean']:>+15.3f} ± {p['diff_std']:.3f}{p['wins']:>6d}/{p['n']}"
        lines.append(row)
    return "\n".join(lines)


def learning_curve_figure(curve: Sequence[Sequence[float]], baselines: dict[str, float], title: str):
    """The figure of `plot_learning_curve`: PPO's training returns and each baseline's mean
    evaluation return as a flat line, each in its own colour and marker (the markers of
    flat lines take turns, so lines on top of each other still show), and the legend's title
    names the baselines that coincide (closer than `visual_tolerance`: they cover each other)."""
    fig, (ax,) = new_figure(1, panel=(4.5, 6.0))
    xs = ys = np.zeros(0)
    if len(curve):
        xs, ys = np.asarray(curve, dtype=np.float64).T[:2]
        ax.plot(xs, ys, label="PPO: mean training episode return per rollout", linewidth=1.4, **series_style(0))
    span = np.linspace(xs.min(), xs.max(), 4 * max(len(baselines), 1) + 1) if xs.size else np.arange(5.0)
    for i, (name, v) in enumerate(baselines.items()):
        style = series_style(i + 1) | {"linestyle": "--", "markevery": (i, max(len(baselines), 1))}
        ax.plot(span, np.full(span.size, v), linewidth=1.0, label=f"{name} (evaluation mean)", **style)
    names = [f"{n} ({v:.3g})" for n, v in baselines.items()]
    flat = [np.array([v]) for v in baselines.values()]
    note = coincide_note(coincide_groups(names, flat, visual_tolerance([ys, *flat])))
    ax.set_xlabel("timesteps (env steps)")
    ax.set_ylabel("episode return (sum of rewards)")
    ax.set_title(title)
    ax.legend(title=textwrap.fill(note, 60) or None, loc="upper center", bbox_to_anchor=(0.5, -0.15))
    fig.set_layout_engine("constrained")  # room for the legend below the axes
    return fig


def plot_learning_curve(
    curve: Sequence[Sequence[float]], baselines: dict[str, float], path: str | Path, title: str
) -> Path | None:
    """Training episode returns against timesteps, with the baselines' mean evaluation
    returns as flat lines (a reference: those are measured on the evaluation sets); the
    figure is `learning_curve_figure`."""
    return save_png(learning_curve_figure(curve, baselines, title), path, dpi=110)


# the columns of a v1-v3 task's table: result key, heading
TASK_COLUMNS = (
    ("return", "return"),
    ("engagements", "engagements / user"),
    ("misinfo_impressions", "misinfo imp. / user"),
)


def pareto_front(eng: np.ndarray, harm: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both (higher engagement, lower harm)."""
    keep = [
        i
        for i in range(len(eng))
        if not any(
            (eng[j] >= eng[i]) & (harm[j] <= harm[i]) & ((eng[j] > eng[i]) | (harm[j] < harm[i]))
            for j in range(len(eng))
        )
    ]
    return np.array(sorted(keep, key=lambda i: harm[i]), dtype=int)


def pareto_figure(points: dict):
    """Engagement against harm of every ranking, each its own colour and marker in the legend
    (PPO's larger), and the fixed rankings' Pareto front."""
    names = list(points)
    eng = np.array([points[n]["engagement"]["mean"] for n in names])
    harm = np.array([points[n]["harm"] for n in names])
    fixed = np.array([not n.startswith("ppo") for n in names])
    front = np.flatnonzero(fixed)[pareto_front(eng[fixed], harm[fixed])]  # of the fixed rankings
    fig, (ax,) = new_figure(1, panel=(6.0, 5.0))
    for i, n in enumerate(names):
        style = series_style(i) | {"linestyle": "none", "markersize": 11 if n.startswith("ppo") else 6}
        ax.plot([harm[i]], [eng[i]], label=n, **style)
    ax.plot(harm[front], eng[front], color="grey", linestyle="--", lw=0.8, label="Pareto front of the fixed rankings")
    ax.set_xlabel("harm per episode (misinformation exposure\n+ 10 x polarization increase)")
    ax.set_ylabel("engagement per episode (sum of engagement rates)")
    ax.set_title("Recommender rankings on misinfo_stream\n(1 000 ABM users, 50 steps)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1 + len(names) // 16)
    fig.set_layout_engine("constrained")  # room for the legend beside the axes
    return fig


def task_table(name: str, result: dict) -> str:
    """One evaluation set's results of a v1-v3 task run (`v1.train`) as text: mean ± std per
    candidate, PPO - row with its 95 % CI and wins."""
    head = (
        f"{'':26s}" + "".join(f"{label:>22s}" for _, label in TASK_COLUMNS) + f"{'PPO - row [95% CI]':>30s}{'wins':>8s}"
    )
    lines = [f"{name} (population {result['population_seed']}, {len(result['seeds'])} seeds)", head]
    for c, runs in result["runs"].items():
        row = f"{c:26s}" + "".join(f"{mean_std(runs, key):>22s}" for key, _ in TASK_COLUMNS)
        if c in result["ppo_vs"]:
            v = result["ppo_vs"][c]
            row += f"{v['mean']:>+12.2f} [{v['lo']:+.2f}, {v['hi']:+.2f}]{v['wins']:>6d}/{v['n']}"
        lines.append(row)
    return "\n".join(lines)
