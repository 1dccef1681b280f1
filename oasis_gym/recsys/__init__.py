"""Recommender systems: random, reddit (hot), twitter (in-network + R x F x S),
chronological and agent-controlled, all vectorized over the served users.

The environment uses exactly this interface (`Recommender`):
``reset(platform, rng)``, ``update(platform)``, ``recommend(platform, users, k, rng)`` ->
(len(users), k) int64 post ids (-1 padded, best first) and
``similarity(platform, users, posts)`` -> (len(users), k) float32 cosine similarities.
See base.py for the rules every feed follows (visibility, reposts, downranking, ties).
"""

from __future__ import annotations

from .agent_controlled import AgentControlledRecommender, pool_features
from .base import BaseRecommender, Recommender
from .chronological import ChronologicalRecommender
from .embed import Embedder, HashEmbedder, SentenceTransformerEmbedder, make_embedder
from .embedding_index import EmbeddingIndex
from .random_rec import RandomRecommender
from .reddit import RedditRecommender, hot_score, post_seconds
from .twitter import TwitterRecommender, fan_score, recency_score

RECOMMENDERS: dict[str, type[BaseRecommender]] = {
    "random": RandomRecommender,
    "reddit": RedditRecommender,
    "twitter": TwitterRecommender,
    "chronological": ChronologicalRecommender,
    "agent": AgentControlledRecommender,
}
_ALIASES = {
    "agent_controlled": "agent",
    "agent-controlled": "agent",
    "hot": "reddit",
    "twhin-bert": "twitter",
    "timeline": "chronological",
}
NAMES = tuple(sorted({*RECOMMENDERS, *_ALIASES}))  # every name `make_recommender` takes


def make_recommender(name: str, **params) -> BaseRecommender:
    """A recommender by name ("random", "reddit", "twitter", "chronological", "agent").

    `params` go to the class (e.g. ``formula="paper"`` for reddit, ``pool_size=2000``,
    ``embedder="st:/path/to/all-MiniLM-L6-v2"``).
    """
    key = _ALIASES.get(name, name)
    if key not in RECOMMENDERS:
        raise ValueError(f"unknown recommender {name!r}; choose from {sorted(RECOMMENDERS)}")
    return RECOMMENDERS[key](**params)


__all__ = [
    "Recommender",
    "BaseRecommender",
    "make_recommender",
    "RECOMMENDERS",
    "NAMES",
    "RandomRecommender",
    "RedditRecommender",
    "TwitterRecommender",
    "ChronologicalRecommender",
    "AgentControlledRecommender",
    "Embedder",
    "HashEmbedder",
    "SentenceTransformerEmbedder",
    "EmbeddingIndex",
    "make_embedder",
    "hot_score",
    "post_seconds",
    "recency_score",
    "fan_score",
    "pool_features",
]
