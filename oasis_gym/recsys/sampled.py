"""A recommender wrapper: OASIS's refresh (rank the top posts, show a random k of them).

Scenarios turn it on with ``[feed] sample_from = N`` (oasis_gym.scenarios.scenario).
"""

from __future__ import annotations

import numpy as np


class SampledFeed:
    """OASIS's refresh: rank the recommender's top `sample_from` posts for a user, then show
    k of them drawn uniformly at random (OASIS: rec table of max_rec_post_len posts, refresh
    shows refresh_rec_post_count of them). Without it every user of a Reddit run would see
    the same k hottest posts. Everything else is delegated to the wrapped recommender."""

    def __init__(self, inner, sample_from: int) -> None:
        if sample_from < 1:
            raise ValueError("sample_from must be >= 1")
        self.inner, self.sample_from = inner, int(sample_from)
        self.name = f"{inner.name}+sample{self.sample_from}"

    def __getattr__(self, attr):
        return getattr(self.inner, attr)

    def recommend(self, platform, users, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """A random k of the inner recommender's top `sample_from` posts, in random order (empty slots last)."""
        top = np.asarray(self.inner.recommend(platform, users, max(k, self.sample_from), rng), dtype=np.int64)
        if top.shape[1] <= k:
            return top[:, :k]
        keys = (rng if rng is not None else np.random.default_rng()).random(top.shape)
        keys[top < 0] = 2.0  # empty slots last
        pick = np.argsort(keys, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(top, pick, axis=1)
