"""Society-level metric formulas over plain numpy arrays: one namespace for all of them.

Every function is pure and vectorized: it takes columnar arrays (ids, opinions, counts) and
never the platform object, so the same code serves the live simulation, a finished run's
SQLite journal and the tests. The formulas live in one module per concept and are
re-exported here (``from oasis_gym.metrics import formulas as F``):

* ``repost_trees``: tree parents (explicit or inferred from the follow graph), depths, sizes;
* ``cascade_measures``: scale, depth, max breadth, structural virality, per-minute curves;
* ``opinions``: bias, diversity, bimodality, Esteban-Ray polarization, shifts;
* ``network``: Gini coefficients, opinion assortativity, neighbourhood correlation;
* ``exposure``: misinformation and cross-cutting shares of impressions, feed diversity;
* ``herd``: the herd effect; ``action_counts``: per-action scalars.

Conventions (``metrics.arrays``): ids are non-negative int64 positions unless a function
takes an explicit ``post_id`` array; NaN marks "unknown" in float inputs and is ignored; a
metric undefined for its input returns NaN rather than raising.
"""

from __future__ import annotations

from .action_counts import action_count_scalars
from .cascade_measures import (
    CascadeCurves,
    CascadeStats,
    cascade_curves,
    cascade_stats,
    cascade_stats_from_posts,
    cascade_summary,
)
from .exposure import cross_cutting_share, feed_diversity, misinformation_share
from .herd import herd_effect
from .network import gini, neighbourhood_correlation, opinion_assortativity, received_per_user
from .opinions import (
    ESTEBAN_RAY_ALPHA,
    bimodality_coefficient,
    esteban_ray_polarization,
    opinion_mean,
    opinion_shift_shares,
    opinion_std,
    opinion_summary,
)
from .repost_trees import cascade_parents, infer_repost_parents, subtree_sizes, tree_depths

__all__ = [
    "CascadeStats",
    "CascadeCurves",
    "tree_depths",
    "subtree_sizes",
    "cascade_parents",
    "infer_repost_parents",
    "cascade_stats",
    "cascade_stats_from_posts",
    "cascade_curves",
    "cascade_summary",
    "opinion_mean",
    "opinion_std",
    "bimodality_coefficient",
    "esteban_ray_polarization",
    "opinion_shift_shares",
    "opinion_summary",
    "gini",
    "received_per_user",
    "opinion_assortativity",
    "neighbourhood_correlation",
    "misinformation_share",
    "cross_cutting_share",
    "feed_diversity",
    "herd_effect",
    "action_count_scalars",
    "ESTEBAN_RAY_ALPHA",
]
