"""How users respond to what they are shown: one home for both paths (issue 51).

So far: the probability of reporting a post. Engagement, satisfaction, visits and churn still
live on the fast path (`oasis_gym.batched.users`); docs/ARCHITECTURE.md keeps the list.
"""

from __future__ import annotations

import numpy as np


def report_probability(misinfo, opinion, stance, misinfo_rate: float, true_rate: float, floor: float) -> np.ndarray:
    """P(a user reports a post) per (user, post) cell: the rate of the post's kind
    (`misinfo_rate` where `misinfo`, else `true_rate`) times ``floor + |opinion - stance| / 2``.

    `floor` is how much a post is reported by a user who agrees with it: the fast path's tasks
    use 0.5 (`Dynamics`), the platform's `ReportingUsers` 0 (only disagreement makes a report).
    Arrays broadcast (e.g. `opinion` (M, 1) against `stance` (M, S)); the result keeps their
    float dtype (float32 on the fast path, float64 on the platform).
    """
    rate = np.where(misinfo, misinfo_rate, true_rate)
    return rate * (floor + np.abs(opinion - stance) / 2)
