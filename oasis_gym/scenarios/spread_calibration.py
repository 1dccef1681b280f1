"""Information spread: calibrate on one part of the data, score on another.

The shipped calibration (the TOML's grid) fitted `cascade_p` and `cascade_half_life` to the
whole scale curve that the run is then scored on. Here the fit only sees minutes
0..fit_minutes of the SCALE curve (in-sample error) and the score is taken on minutes
fit_minutes..horizon of all three curves (scale, depth, max breadth: held-out error), on
seeds disjoint from the calibration seeds. Both errors are reported.

    window_nrmse(sim, real, 60, 150)     # sqrt(mean((sim - real)^2 over minutes 60..150)) / real[150]
    calibrate_heldout(grid, calib_seeds=range(100, 104), eval_seeds=range(0, 10))

The normalizer is the real curve's value at the window's end, as for the full-window NRMSE
(scenarios.nrmse), so the two are on the same scale.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .cascades import CURVES, split_errors, window_nrmse
from .scenario import load_scenario
from .stats import mean_ci

__all__ = ["window_nrmse", "split_errors", "calibrate_heldout", "CURVES"]


def calibrate_heldout(
    grid: Mapping[str, Iterable[Any]],
    calib_seeds: Iterable[int],
    eval_seeds: Iterable[int],
    overrides: Mapping[str, Any] | None = None,
    scenario: str = "twitter_information_spread",
    log=None,
) -> dict:
    """Grid search on the in-sample error (scale, minutes 0..fit) with `calib_seeds`; the best
    point is then run on `eval_seeds` (must be disjoint) and both errors are reported with
    95% CIs. `grid` maps dotted config keys to values; `log(row)` sees every grid point."""
    calib, evals = list(calib_seeds), list(eval_seeds)
    if set(calib) & set(evals):
        raise ValueError(f"evaluation seeds overlap the calibration seeds: {sorted(set(calib) & set(evals))}")
    base = {"metrics.enabled": False, **dict(overrides or {})}
    keys = list(grid)
    rows = []
    for values in itertools.product(*(list(grid[k]) for k in keys)):
        point = dict(zip(keys, values))
        sc = load_scenario(scenario, {**base, **point})
        errs = [split_errors(sc.run(db_path=":memory:", seed=s)) for s in calib]
        row = {"point": point, "insample_nrmse_scale": float(np.nanmean([e["insample_nrmse_scale"] for e in errs]))}
        rows.append(row)
        if log is not None:
            log(row)
    best = min(rows, key=lambda r: (math.isnan(r["insample_nrmse_scale"]), r["insample_nrmse_scale"]))
    sc = load_scenario(scenario, {**base, **best["point"]})
    per_seed = [split_errors(sc.run(db_path=":memory:", seed=s)) for s in evals]
    names = ["insample_nrmse_scale"] + [f"heldout_nrmse_{k}" for k in CURVES] + ["final_depth"]
    return {
        "best": best["point"],
        "fitted_on": "scale curve, minutes 0..fit_minutes",
        "calib_seeds": calib,
        "eval_seeds": evals,
        "grid": rows,
        "eval": {n: mean_ci([e[n] for e in per_seed]) for n in names},
    }
