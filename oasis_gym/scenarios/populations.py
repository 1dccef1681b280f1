"""Population builders the scenarios share: seed accounts, concatenation, extra edges, LLM core users."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..population import HOURS, Population


def accounts(names: Sequence[str], bio: str = "") -> Population:
    """Seed accounts (scenario hosts, vote seeders): activity 0, so they never act."""
    n = len(names)
    return Population(
        n=n,
        user_name=list(names),
        name=list(names),
        bio=[bio] * n,
        persona=[bio] * n,
        activity=np.zeros((n, HOURS), np.float32),
        follow_src=np.zeros(0, np.int64),
        follow_dst=np.zeros(0, np.int64),
        previous_posts=[],
        opinion=np.zeros(n, np.float32),
        interests=np.zeros(n, np.uint64),
        is_core=np.zeros(n, bool),
        extra=None,
        source="accounts",
    )


def concat_populations(parts: Sequence[Population], source: str | None = None) -> Population:
    """One population from several, ids shifted in order (edges and previous posts follow)."""
    offsets = np.cumsum([0] + [p.n for p in parts])

    def strings(field: str) -> list[str]:
        return [s for p in parts for s in getattr(p, field)]

    extra = None
    if any(p.extra is not None for p in parts):
        extra = [e for p in parts for e in (p.extra if p.extra is not None else [{}] * p.n)]
    pop = Population(
        n=int(offsets[-1]),
        user_name=strings("user_name"),
        name=strings("name"),
        bio=strings("bio"),
        persona=strings("persona"),
        activity=np.concatenate([p.activity for p in parts]).astype(np.float32),
        follow_src=np.concatenate([p.follow_src + o for p, o in zip(parts, offsets)]).astype(np.int64),
        follow_dst=np.concatenate([p.follow_dst + o for p, o in zip(parts, offsets)]).astype(np.int64),
        previous_posts=[(int(a) + int(o), t) for p, o in zip(parts, offsets) for a, t in p.previous_posts],
        opinion=np.concatenate([p.opinion for p in parts]).astype(np.float32),
        interests=np.concatenate([p.interests for p in parts]).astype(np.uint64),
        is_core=np.concatenate([p.is_core for p in parts]).astype(bool),
        extra=extra,
        source=source or "+".join(p.source for p in parts),
    )
    pop.validate()
    return pop


def _with_edges(pop: Population, src: np.ndarray, dst: np.ndarray) -> Population:
    """`pop` with extra follow edges (duplicates of existing edges dropped)."""
    s = np.concatenate([pop.follow_src, np.asarray(src, np.int64)])
    d = np.concatenate([pop.follow_dst, np.asarray(dst, np.int64)])
    key, first = np.unique(s * np.int64(pop.n) + d, return_index=True)
    del key
    first.sort()
    return dataclasses.replace(pop, follow_src=s[first], follow_dst=d[first])


def _core_ids(spec: Mapping[str, Any], population: Population) -> np.ndarray:
    """Users routed to the LLM in a hybrid run: flagged core users or the most followed."""
    k = int(spec.get("core_users", 10))
    if spec.get("core", "top_followers") == "is_core":
        return np.flatnonzero(population.is_core)[:k]
    order = np.lexsort((np.arange(population.n), -population.in_degree()))
    return np.sort(order[:k])
