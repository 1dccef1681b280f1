"""Mean and 95% confidence interval over independent seeds, and ordering shares.

The interval is Student's t: mean +- t(0.975, n-1) * sd / sqrt(n) (sd with ddof=1); seeds are
independent replications, so this is the textbook interval for the mean effect. The t
quantiles are tabulated (no scipy dependency); beyond 30 degrees of freedom the table's
values approach 1.96 and the normal quantile is used from df 121 on. A share (a value that
lies in [0, 1] by definition) gets the same interval clipped to [0, 1] (`bounds`): with
few seeds the t interval of a share can reach past both ends (-0.98 to 2.12 with n = 2),
and the clipped one then honestly says the seeds pin nothing down. A share of seeds (each
seed 0 or 1, `ordering_share`'s rows) gets the Wilson score interval (`metrics.intervals`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from oasis_gym.metrics.intervals import mean_ci, t975

__all__ = ["t975", "mean_ci", "is_share", "ordering_share", "summarize"]


def ordering_share(rows: Sequence[Sequence[float]]) -> float:
    """Share of rows (one per seed) that are strictly decreasing, e.g. (up, control, down)
    user-vote scores; NaN when there are no rows. A row with a NaN is not ordered."""
    arr = np.asarray(rows, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0:
        return math.nan
    ok = np.all(np.diff(arr, axis=1) < 0, axis=1)
    return float(ok.mean())


def is_share(name: str) -> bool:
    """Whether an effect is a share, in [0, 1] by definition ("to_extreme_share",
    "up_vote_share_up", "ordered_share"; not a lift or a difference of shares)."""
    share = name.endswith("_share") or "_share_" in name
    return share and not (name.startswith("d_") or "lift" in name or "minus" in name)


def summarize(per_seed: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    """{effect name: mean_ci over seeds} for dicts of per-seed effects (same keys); shares'
    intervals stay in [0, 1]."""
    keys = list(per_seed[0]) if per_seed else []
    return {k: mean_ci([row.get(k, math.nan) for row in per_seed], (0.0, 1.0) if is_share(k) else None) for k in keys}
