"""What both platform agents measure of the feeds and the opinions: exposure and polarization.

Thin adapters over the metric formulas (`metrics.exposure`, `metrics.opinions`): they turn
a NaN (nothing to count) into 0.0, because the values enter rewards and observations.
"""

from __future__ import annotations

import numpy as np

from ..metrics.exposure import served_exposure
from ..metrics.formulas import esteban_ray_polarization
from ..sim.agent_protocol import AgentView


def exposure_stats(view: AgentView) -> tuple[float, float, int]:
    """(misinformation share, cross-cutting share, impressions) of the feeds just served
    (`metrics.exposure.served_exposure`); a share with nothing to count is 0.0 here, not NaN,
    because it enters the reward."""
    e = served_exposure(view.platform, view.feeds)
    return float(np.nan_to_num(e.misinfo_share)), float(np.nan_to_num(e.cross_cutting_share)), e.impressions


def esteban_ray(x: np.ndarray, bins: int = 10, alpha: float = 1.6) -> float:
    """Esteban-Ray polarization of opinions `x` (0 when undefined, e.g. one bin)."""

    v = esteban_ray_polarization(x, bins=bins, alpha=alpha)
    return float(v) if np.isfinite(v) else 0.0
