"""Time engine: steps map to simulated minutes; users activate by hour of day.

One step is `minutes_per_step` simulated minutes (OASIS: 3). A user is active in a step with
the probability given by their 24-value hourly activity vector at the current hour (or by a
flat probability), sampled from the environment's seeded generator, so the same seed gives
the same activations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_MINUTES_PER_STEP = 7 * 24 * 60  # a week: a run's clock stays a readable date for 10**5 steps


@dataclass
class Clock:
    """Steps -> simulated minutes, from `start_hour` of day 0."""

    minutes_per_step: int = 3
    start_hour: int = 8

    def __post_init__(self) -> None:
        if not 0 < self.minutes_per_step <= MAX_MINUTES_PER_STEP:
            raise ValueError(f"minutes_per_step must be in [1, {MAX_MINUTES_PER_STEP}], got {self.minutes_per_step}")
        if not 0 <= self.start_hour < 24:
            raise ValueError(f"start_hour must be in [0, 24), got {self.start_hour}")

    @property
    def start_minute(self) -> int:
        """The simulated minute of step 0."""
        return self.start_hour * 60

    @staticmethod
    def hour(minute: int) -> int:
        """The hour of day (0-23) of a simulated minute."""
        return (int(minute) // 60) % 24


def sample_active(
    rng: np.random.Generator,
    activity: np.ndarray,
    hour: int,
    flat_probability: float | None = None,
    eligible: np.ndarray | None = None,
) -> np.ndarray:
    """Ids of the users active this step (sorted).

    With `flat_probability`, every user activates with that probability; otherwise with
    `activity[:, hour]`. `eligible` (bool mask) removes suspended or signed-out users.
    """
    n = len(activity)
    p = np.full(n, flat_probability, dtype=np.float32) if flat_probability is not None else activity[:, hour]
    active = rng.random(n, dtype=np.float32) < p
    if eligible is not None:
        active &= eligible
    return np.flatnonzero(active)
