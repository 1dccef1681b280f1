"""The simulation engine: `Simulation` (one batched step over all active users) and the types
that cross its boundary. Platform agents plug in through `agent_protocol`; the engine names
none of them and imports neither gymnasium nor pettingzoo (`tests/test_layers.py`)."""

from .agent_protocol import AgentView, PlatformAgent
from .batches import (
    COMMENT_FEATURES,
    FEED_FEATURES,
    FEED_INDEX,
    SELF_FEATURES,
    VIEW_USER_FEATURES,
    ActionArrays,
    ObsBatch,
    StepOutcome,
)
from .config import SimulationConfig, check_resumable
from .rewards import RewardFn, engagement_reward
from .simulation import Simulation

__all__ = [
    "AgentView",
    "PlatformAgent",
    "Simulation",
    "SimulationConfig",
    "check_resumable",
    "ActionArrays",
    "ObsBatch",
    "StepOutcome",
    "RewardFn",
    "engagement_reward",
    "FEED_FEATURES",
    "COMMENT_FEATURES",
    "VIEW_USER_FEATURES",
    "SELF_FEATURES",
    "FEED_INDEX",
]
