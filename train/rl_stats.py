"""Statistics as RL papers report them (Agarwal et al. 2021, "Deep RL at the edge of the statistical precipice").

The scores of one candidate on one task and tier are a matrix (runs, episodes): a learner's
runs are its training seeds, a fixed policy (a baseline) has one run; the episodes are the
held-out evaluation seeds, the same for every candidate (so two candidates are paired by
episode). Reported:

- the mean and the interquartile mean (IQM: the mean of the middle 50 % of all runs x episodes
  scores, `scipy.stats.trim_mean(x, 0.25)`), each with a 95 % stratified bootstrap interval:
  the strata are the runs (each keeps its weight), their episodes resampled with replacement
  (percentile interval);
- the probability of improvement P(X > Y) of X over a baseline Y: the share of (run, episode)
  pairs where X scores more than Y on the same episode, ties counted half (rliable's definition
  with each episode a task), with its bootstrap interval (episodes resampled, paired);
- performance profiles: the fraction of runs x episodes scoring above each threshold, with bands.

Why not rliable (the library of that paper): rliable 1.2.0 installs from the registries with our
numpy, but does not import: the resolver picks pandas 3, and arch 7.2.0 (its bootstrap) then fails
at import (`TypeError: deprecate_kwarg()`); with pandas < 3 it works, and it would pull scipy,
pandas, seaborn, statsmodels and arch into a project that needs none of them. Checked against it
(pandas 2.3.3, 20,000 resamples, a 5 x 20 matrix): the same IQM and mean to the last digit, the
interval ends within 0.01 (the bootstrap's noise). rliable's P(X > Y) compares all pairs of runs
(unpaired); ours pairs by episode, since the episodes share their seeds: rliable's definition with
each episode a task.
"""

from __future__ import annotations

import numpy as np

from oasis_gym.figures import new_figure, series_style

LEVEL = 0.95
REPS = 2000  # bootstrap resamples (rliable's default is 50,000: the intervals' ends move < 1 % of their width)


def scores_matrix(scores) -> np.ndarray:
    """`scores` as a finite float matrix (runs, episodes); a 1-D array is one run."""
    x = np.asarray(scores, np.float64)
    x = x[None, :] if x.ndim == 1 else x
    if x.ndim != 2 or x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"scores must be a non-empty finite (runs, episodes) matrix, got shape {x.shape}")
    return x


def iqm(scores, axis=None) -> np.ndarray | float:
    """The interquartile mean: the mean after cutting int(n / 4) values at each end (`axis`:
    None, all values; -1, each row), as `scipy.stats.trim_mean(x, 0.25)`."""
    x = np.sort(np.asarray(scores, np.float64).reshape(-1) if axis is None else np.asarray(scores, np.float64), -1)
    n = x.shape[-1]
    cut = int(0.25 * n)
    return x[..., cut : n - cut].mean(-1)


def resample(x: np.ndarray, reps: int = REPS, seed: int = 0) -> np.ndarray:
    """Stratified bootstrap indices (reps, runs, episodes): per run, its episodes drawn with replacement."""
    runs, episodes = x.shape
    return np.random.default_rng(seed).integers(0, episodes, (reps, runs, episodes))


def _interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def summarize(scores, reps: int = REPS, seed: int = 0) -> dict:
    """Mean and IQM of a candidate's scores (runs, episodes), each with its 95 % stratified
    bootstrap interval (`mean_lo`, `mean_hi`, `iqm_lo`, `iqm_hi`), and the sizes."""
    x = scores_matrix(scores)
    boot = np.take_along_axis(np.broadcast_to(x, (reps, *x.shape)), resample(x, reps, seed), -1)
    flat = boot.reshape(reps, -1)
    out = {"mean": float(x.mean()), "iqm": float(iqm(x)), "runs": x.shape[0], "episodes": x.shape[1]}
    out["mean_lo"], out["mean_hi"] = _interval(flat.mean(1))
    out["iqm_lo"], out["iqm_hi"] = _interval(iqm(flat, axis=-1))
    return out


def prob_improvement(x_scores, y_scores, reps: int = REPS, seed: int = 0) -> dict:
    """P(X > Y): the share of pairs (run of X, run of Y, episode) where X scores more than Y on
    the same episode (ties half), with its 95 % bootstrap interval (X's episodes resampled per
    run, Y read on the same episodes). Returns {"p", "lo", "hi"}."""
    x, y = scores_matrix(x_scores), scores_matrix(y_scores)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"X and Y must be scored on the same episodes, got {x.shape[1]} and {y.shape[1]}")

    def share(xs, ys):  # X's and Y's scores on the same episodes, same shape: the indicator's mean
        return ((xs > ys) + 0.5 * (xs == ys)).mean((-2, -1))

    p = np.mean([share(x, np.broadcast_to(row, x.shape)) for row in y])
    idx = resample(x, reps, seed)
    xb = np.take_along_axis(np.broadcast_to(x, (reps, *x.shape)), idx, -1)
    lo, hi = _interval(np.mean([share(xb, row[idx]) for row in y], axis=0))  # Y on the same episodes
    return {"p": float(p), "lo": lo, "hi": hi}


def performance_profile(scores, taus) -> np.ndarray:
    """The fraction of a candidate's scores (all runs x episodes) above each threshold in `taus`."""
    x = scores_matrix(scores).reshape(-1)
    return (x[None, :] > np.asarray(taus, np.float64)[:, None]).mean(1)


def profile_band(scores, taus, reps: int = REPS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The 95 % stratified bootstrap band (lo, hi) of `performance_profile` at each threshold."""
    x = scores_matrix(scores)
    boot = np.take_along_axis(np.broadcast_to(x, (reps, *x.shape)), resample(x, reps, seed), -1).reshape(reps, -1)
    fr = (boot[:, None, :] > np.asarray(taus, np.float64)[None, :, None]).mean(-1)  # (reps, taus)
    q = np.quantile(fr, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
    return q[0], q[1]


def profile_figure(sets: dict[str, dict[str, np.ndarray]], title: str, points: int = 101):
    """Performance profiles, one panel per evaluation set (set -> candidate -> scores (runs,
    episodes)), each candidate with its bootstrap band: the fraction of runs x episodes whose
    return exceeds each threshold."""
    fig, axes = new_figure(len(sets), panel=(5.0, 4.0))
    for ax, (set_name, candidates) in zip(axes, sets.items()):
        every = np.concatenate([scores_matrix(s).reshape(-1) for s in candidates.values()])
        taus = np.linspace(every.min() - 1e-9, every.max(), points)
        for i, (name, scores) in enumerate(candidates.items()):
            style = series_style(i) | {"marker": None}
            ax.plot(taus, performance_profile(scores, taus), label=name, **style)
            lo, hi = profile_band(scores, taus)
            ax.fill_between(taus, lo, hi, alpha=0.15, color=style["color"])
        ax.set_xlabel(f"episode return τ (sum of rewards, {set_name})")
        ax.set_ylabel("runs x episodes with return > τ (share)")
        ax.set_title(f"{title}: {set_name}")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    fig.set_layout_engine("constrained")
    return fig


def report(candidates: dict[str, np.ndarray], learner: str | None = None) -> dict:
    """Per candidate (name -> scores (runs, episodes)) its `summarize`, and where `learner` names
    one, every other's `p_improvement`: P(learner > candidate) with its interval (JSON-able)."""
    out = {name: summarize(scores) for name, scores in candidates.items()}
    if learner:
        for name, scores in candidates.items():
            if name != learner:
                out[name]["p_improvement"] = prob_improvement(candidates[learner], scores)
    return out


def table(stats: dict, learner: str | None = None) -> list[str]:
    """Markdown rows of a `report`: per candidate the IQM and mean with their 95 % stratified
    bootstrap intervals and, with `learner`, P(learner > candidate) with its interval."""
    head = "| policy | runs x episodes | IQM [95% CI] | mean [95% CI] |"
    rows = [head + (f" P({learner} > policy) [95% CI] |" if learner else ""),
            "|---|---|---|---|" + ("---|" if learner else "")]  # fmt: skip
    for name, s in stats.items():
        row = (f"| {name} | {s['runs']} x {s['episodes']} | {s['iqm']:.2f} [{s['iqm_lo']:.2f}, {s['iqm_hi']:.2f}] "
               f"| {s['mean']:.2f} [{s['mean_lo']:.2f}, {s['mean_hi']:.2f}] |")  # fmt: skip
        if learner:
            p = s.get("p_improvement")
            row += f" {p['p']:.2f} [{p['lo']:.2f}, {p['hi']:.2f}] |" if p else " |"
        rows.append(row)
    return rows
