"""What the tasks' platform agents observe of their simulations, one row per simulation (issue 51).

The recommender sees the step's flows (engagement, visitors, reports, arousal), where the
opinions stand and the time, then the candidate pool's mean features; the moderator sees its
review queue (`batched/moderation.queue_features`) and the globals here. Called by the fast
path's tasks (`batched/tasks.py`: Recommender-v1..v3, Moderator-v1); v0's platform agents
observe the platform through their own views (`agents/recommender.py`, `agents/moderator.py`:
other lists, other spaces).
"""

from __future__ import annotations

import numpy as np

from .measures import opinion_extremity, opinion_spread

# the recommender's first columns; the means of the candidate features over the step's
# candidate pools follow them (`batched/tasks.RECOMMENDER_OBS` names all)
RECOMMENDER_STEP_FEATURES = (
    "engagements_per_visitor",
    "visitor_share",
    "dormant_share",  # users not seen for 10 steps or more (the service knows who stays away)
    "reports_per_impression",
    "arousal_served",  # mean arousal score of the served posts
    "opinion_mean",
    "opinion_std",
    "opinion_std_change",  # since the episode's start
    "abs_opinion_mean",
    "time",  # step / max_steps
)
MODERATOR_GLOBALS = ("time", "reports_per_impression", "fact_check_budget_share")


def recommender_obs(out: dict, opinion, opinion_std0, t, last_visit, max_steps: int) -> np.ndarray:
    """(K, 10 + F) float32: the recommender's observations after a step whose per-simulation
    counts are `out` (`Engine.step`: flows, ``opinion_std``, ``abs_opinion``, ``pool_means``
    (K, F)), with opinions (K, N), their std at the episode's start (K,), the step `t` (K,) and
    each user's last visit (K, N)."""
    impressions = np.maximum(out["impressions"], 1)
    values = {
        "engagements_per_visitor": out["engagements"] / np.maximum(out["active"], 1),
        "visitor_share": out["active"] / opinion.shape[1],
        "dormant_share": (t[:, None] - np.maximum(last_visit, 0) >= 10).mean(1),
        "reports_per_impression": out["reports"] / impressions,
        "arousal_served": out["arousal_served"] / impressions,
        "opinion_mean": opinion.mean(1),
        "opinion_std": out["opinion_std"],
        "opinion_std_change": out["opinion_std"] - opinion_std0,
        "abs_opinion_mean": out["abs_opinion"],
        "time": t / max_steps,
    }
    pool = out["pool_means"]
    obs = np.empty((len(opinion), len(values) + pool.shape[1]), np.float32)
    for col, name in enumerate(RECOMMENDER_STEP_FEATURES):
        obs[:, col] = values[name]
    obs[:, len(values) :] = pool
    return obs


def recommender_reset_obs(opinion, size: int) -> np.ndarray:
    """(R, size) float32: the observations of freshly reset episodes with opinions (R, N): no
    flows yet, the opinions, time 0."""
    obs = np.zeros((len(opinion), size), np.float32)
    col = RECOMMENDER_STEP_FEATURES.index
    obs[:, col("opinion_mean")] = opinion.mean(1)
    obs[:, col("opinion_std")] = opinion_spread(opinion)
    obs[:, col("abs_opinion_mean")] = opinion_extremity(opinion)
    return obs


def moderator_globals(t, max_steps: int, reports, impressions, budget: int, queue_size: int) -> np.ndarray:
    """(K, 3) float32 `MODERATOR_GLOBALS`: the time (step / max_steps), the reports per
    impression of each simulation's posts (K, P) so far, the fact-check budget as a share of
    the queue."""
    g = np.zeros((len(t), len(MODERATOR_GLOBALS)), np.float32)
    g[:, 0] = t / max_steps
    g[:, 1] = reports.sum(1) / np.maximum(impressions.sum(1), 1)
    g[:, 2] = budget / queue_size
    return g
