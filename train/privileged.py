"""Privileged features for headroom diagnostics: a ranking told what no observation holds.

`kind_features` swaps the batched engine's user features for each user's hidden kind (and,
optionally, the hidden campaign regime) while it is open, so a per-user constant ranking
becomes one ranking per kind: the most a per-user ranking can gain, the reference that
`bench/research/recommender_personalization.py` and `tests/test_recommender_v2.py` measure
against. Never used by a task, a baseline or training.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from oasis_gym.batched import feed
from oasis_gym.model.ranking import user_feature_names


@contextmanager
def kind_features(campaign: bool = False):
    """While open, every batched engine ranks with the user features [kind == 0, kind == 1,
    kind == 2, 0, ...] (the hidden kind: privileged) instead of the history summaries;
    `campaign`: also [kind == 0, kind == 1, kind == 2] x (a campaign is on) in rows 3-5 (the
    hidden campaign regime: privileged too)."""

    def by_kind(state, ka, ua):
        z = np.zeros((len(ka), len(user_feature_names(state.dyn))), np.float32)
        rows, kind = np.arange(len(ka)), state.pop.kind[ua]
        z[rows, kind] = 1.0
        if campaign:
            z[rows, 3 + kind] = state.campaign[ka]
        return z

    original = feed.visitor_features  # what the engine calls (`engine.feed` is this module)
    feed.visitor_features = by_kind
    try:
        yield
    finally:
        feed.visitor_features = original
