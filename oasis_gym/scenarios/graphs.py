"""A generated follow graph for the information-spread users.

The shipped False_Business_0.csv follow edges are a star: 73 of its 85 edges point at the
root author, so any reconstructed repost tree has depth <= 2 whatever the users do. This
module draws a directed preferential-attachment graph (Price's model) over the same users:
users join in a random order (the root author first) and each follows 1 + Poisson(mean - 1)
earlier users chosen with probability proportional to (followers + 1). Hubs emerge (the root
author is the oldest node, so usually the largest), and chains of followers let a cascade
grow deeper than 2. It is a structural hypothesis, not Twitter's real graph among these users.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..population import Population

__all__ = ["price_follow_graph", "with_generated_graph"]


def price_follow_graph(n: int, first: int, mean_following: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) follow edges (src follows dst) of a Price-model graph over users 0..n-1 with
    user `first` joining first; no self or duplicate edges."""
    if n < 1:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if mean_following < 1:
        raise ValueError("mean_following must be >= 1")
    rng = np.random.default_rng([seed, 29])
    others = np.setdiff1d(np.arange(n), [first])
    order = np.r_[first, rng.permutation(others)]
    followers = np.zeros(n, np.float64)
    src, dst = [], []
    for j in range(1, n):  # sequential by nature: each join sees the degrees so far
        earlier = order[:j]
        k = min(j, 1 + int(rng.poisson(mean_following - 1)))
        w = followers[earlier] + 1.0
        pick = rng.choice(earlier, size=k, replace=False, p=w / w.sum())
        followers[pick] += 1
        src.extend([int(order[j])] * k)
        dst.extend(pick.tolist())
    return np.asarray(src, np.int64), np.asarray(dst, np.int64)


def with_generated_graph(pop: Population, mean_following: float = 3.0, seed: int = 0) -> Population:
    """`pop` with its follow edges replaced by a Price-model graph rooted at the author of its
    first previous post (the cascade root), else at user 0."""
    first = int(pop.previous_posts[0][0]) if pop.previous_posts else 0
    src, dst = price_follow_graph(pop.n, first, mean_following, seed)
    out = dataclasses.replace(pop, follow_src=src, follow_dst=dst, source=f"{pop.source}+price_graph")
    out.validate()
    return out
