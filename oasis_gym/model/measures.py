"""What a step is measured by: the served feeds' exposure and engagement counts and the opinion
spread, per simulation, the terms of the tasks' rewards and observations (issue 51).

Called by the fast path (`batched/engine.py`, whose counts `batched/tasks.py` turns into
rewards and observations). The platform path (v0) measures its served feeds with
`metrics.exposure.served_exposure` instead: there a repost is a post row of its own and
inherits its root's misinformation label, a fact of the platform the tasks' posts do not have.

Names: `opinion_spread` is the population std (ddof 0) of each simulation's N opinions in
their own float type (float32 on the fast path); `metrics.opinions.opinion_std` is a
different measure (one float64 value over the known opinions of one population, NaN left
out), and keeps its name.
"""

from __future__ import annotations

import numpy as np


def feed_counts(ka, k: int, served_ok, misinfo, arousal, engaged, reported) -> dict[str, np.ndarray]:
    """Per-simulation counts (K,) of one step's visits: ``active`` (visitors), ``impressions``
    (served slots), ``engagements`` (likes or reposts), ``misinfo_impressions``, ``reports``,
    ``arousal_served`` (the sum of the served posts' arousal scores).

    `ka` (M,): the simulation of each visit, sorted (as `np.nonzero` gives it); `served_ok` (M, S)
    bool: the slots served; `misinfo` (M, S) bool and `arousal` (M, S): the slots' posts;
    `engaged`, `reported` (M, S) bool: what each visitor did with them.
    """
    return {
        "active": np.bincount(ka, minlength=k),
        "impressions": np.bincount(ka, weights=served_ok.sum(1), minlength=k),
        "engagements": np.bincount(ka, weights=engaged.sum(1), minlength=k),
        "misinfo_impressions": np.bincount(ka, weights=(misinfo & served_ok).sum(1), minlength=k),
        "reports": np.bincount(ka, weights=reported.sum(1), minlength=k),
        "arousal_served": np.bincount(ka, weights=(arousal * served_ok).sum(1), minlength=k),
    }


def opinion_spread(opinion) -> np.ndarray:
    """(K,) the population std (ddof 0) of each simulation's opinions (K, N), in their float type."""
    return opinion.std(axis=-1)


def opinion_extremity(opinion) -> np.ndarray:
    """(K,) the mean |opinion| of each simulation's opinions (K, N)."""
    return np.abs(opinion).mean(axis=-1)


def state_measures(opinion, churned, satisfaction, campaign) -> dict[str, np.ndarray]:
    """What a step leaves, per simulation (K,): the opinions' spread and extremity, the churned
    share, the mean satisfaction, whether a campaign runs (a copy)."""
    return {
        "opinion_std": opinion_spread(opinion),
        "abs_opinion": opinion_extremity(opinion),
        "churned": churned.mean(axis=1),
        "satisfaction": satisfaction.mean(axis=1),
        "campaign": campaign.copy(),
    }
