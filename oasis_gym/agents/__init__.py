"""The platform agents: the trainable recommender (`recommender_0`) and moderator
(`moderator_0`), the moderator's fact-check service, and what both measure.

They plug into the engine through `oasis_gym.sim.agent_protocol` (the engine names none of
them); the envs build them (`make_platform_agents`) and give them Gymnasium spaces
(`envs/agent_spaces.py`): nothing here imports gymnasium.
"""

from .exposure import esteban_ray, exposure_stats
from .fact_check import STATE_KEY, FactChecker
from .moderator import MODERATION_ACTIONS, ModeratorAgent, PostActions
from .recommender import RECOMMENDER_FEATURES, RecommenderAgent

__all__ = [
    "MODERATION_ACTIONS",
    "RECOMMENDER_FEATURES",
    "STATE_KEY",
    "FactChecker",
    "ModeratorAgent",
    "PostActions",
    "RecommenderAgent",
    "esteban_ray",
    "exposure_stats",
    "make_platform_agents",
]


def make_platform_agents(recommender: bool, moderator: bool, params: dict | None = None, made=None) -> dict:
    """The platform agents by name, in the order the step drives them (`recommender_0`, then
    `moderator_0`); `params`: {"recommender": {...}, "moderator": {...}} field values; `made`:
    agents already made by name (used as they are where switched on, never made twice)."""
    params, made = params or {}, made or {}
    agents: dict = {}
    if recommender:
        agents["recommender_0"] = made.get("recommender_0") or RecommenderAgent(**params.get("recommender", {}))
    if moderator:
        agents["moderator_0"] = made.get("moderator_0") or ModeratorAgent(**params.get("moderator", {}))
    return agents
