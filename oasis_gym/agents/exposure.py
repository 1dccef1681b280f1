"""What both platform agents measure of the feeds and the opinions: exposure and polarization.

Thin adapters over the metric formulas (`metrics.exposure`, `metrics.opinions`): they turn
a NaN (nothing to count) into 0.0, because the values enter rewards and observations.

The served feeds' exposure is computed once for a feed and the opinions its viewers hold:
the recommender's observation at the end of a step, the moderator's reward and the env's
next step (`envs/platform_agent_env.py`) read the same feeds, and all but the first get the
first call's values (a post's label, root and stance never change). The recommender's
`begin_step` reads them again after the users acted: where a viewer's opinion moved, the
cross-cutting share is counted anew.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..metrics.exposure import served_exposure
from ..metrics.formulas import esteban_ray_polarization
from ..sim.agent_protocol import AgentView

# id(feeds) -> (feeds, platform, the viewers' opinions, stats), weakly held: an entry leaves with its feeds
_SERVED: dict[int, tuple] = {}


def exposure_stats(view: AgentView) -> tuple[float, float, int]:
    """(misinformation share, cross-cutting share, impressions) of the feeds just served
    (`metrics.exposure.served_exposure`); a share with nothing to count is 0.0 here, not NaN,
    because it enters the reward. Counted once for the same feeds and viewers' opinions
    (module docstring)."""
    feeds, pf = view.feeds, view.platform
    key, opinions = id(feeds), pf.u_opinion.a[feeds.users]
    seen = _SERVED.get(key)
    if seen is None or seen[0]() is not feeds:
        weakref.finalize(feeds, _SERVED.pop, key, None)
    elif seen[1]() is pf and np.array_equal(seen[2], opinions, equal_nan=True):
        return seen[3]
    e = served_exposure(pf, feeds)
    stats = float(np.nan_to_num(e.misinfo_share)), float(np.nan_to_num(e.cross_cutting_share)), e.impressions
    _SERVED[key] = (weakref.ref(feeds), weakref.ref(pf), opinions, stats)
    return stats


def esteban_ray(x: np.ndarray, bins: int = 10, alpha: float = 1.6) -> float:
    """Esteban-Ray polarization of opinions `x` (0 when undefined, e.g. one bin)."""

    v = esteban_ray_polarization(x, bins=bins, alpha=alpha)
    return float(v) if np.isfinite(v) else 0.0
