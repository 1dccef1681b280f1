"""Mean and 95% confidence interval over independent seeds (Student's t).

The interval is mean +- t(0.975, n-1) * sd / sqrt(n) (sd with ddof=1); seeds are independent
replications, so this is the textbook interval for the mean effect (or, of per-seed paired
differences, for the mean difference). The t quantiles are tabulated (no scipy dependency);
beyond 30 degrees of freedom the table's values approach 1.96 and the normal quantile is used
from df 121 on. `bounds` clips the interval of a value bounded by definition (a share of
users in each seed). A share of *seeds* (every value 0 or 1, e.g. the share of seeds whose
votes come out ordered) is a binomial proportion: it gets the Wilson score interval, which
stays in [0, 1] and, unlike t, is not empty when every seed agrees (3 of 3: [0.44, 1]).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["t975", "mean_ci", "wilson"]

# t(0.975, df) for df = 1..30, then a few larger df (linear in 1/df between them)
_T975 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]
_T975_LARGE = [(30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980)]


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError("t975 needs df >= 1")
    if df <= 30:
        return _T975[df - 1]
    if df > 120:
        return 1.960
    for (d0, t0), (d1, t1) in zip(_T975_LARGE, _T975_LARGE[1:]):
        if df <= d1:  # interpolate in 1/df, as t quantile tables advise
            w = (1 / d0 - 1 / df) / (1 / d0 - 1 / d1)
            return t0 + w * (t1 - t0)
    return 1.960


def mean_ci(values: Sequence[float], bounds: tuple[float, float] | None = None) -> dict[str, float]:
    """{"mean", "lo", "hi", "sd", "n"} of the finite values; lo/hi are the 95% t interval (NaN
    with fewer than 2 values, the mean NaN with none), clipped to `bounds` (e.g. (0, 1) for
    a share) when given."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return {"mean": math.nan, "lo": math.nan, "hi": math.nan, "sd": math.nan, "n": 0}
    m = float(x.mean())
    if n == 1:
        return {"mean": m, "lo": math.nan, "hi": math.nan, "sd": math.nan, "n": 1}
    sd = float(x.std(ddof=1))
    if bounds == (0.0, 1.0) and np.all((x == 0) | (x == 1)):
        lo, hi = wilson(int(x.sum()), n)
        return {"mean": m, "lo": lo, "hi": hi, "sd": sd, "n": n}
    half = t975(n - 1) * sd / math.sqrt(n)
    lo, hi = m - half, m + half
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return {"mean": m, "lo": lo, "hi": hi, "sd": sd, "n": n}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score 95% interval of a proportion k of n (n >= 1)."""
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)
