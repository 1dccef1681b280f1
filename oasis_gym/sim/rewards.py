"""The users' rewards: the default (engagement each user received) and the reward-function type.

A reward function is called once per step as ``reward_fn(sim, outcome)`` (pass your own as
the env's ``reward_fn``) and returns one float32 reward per user of the platform.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..actions import ActionType as A
from ..actions import KindMask
from ..actions import Result as R
from .batches import StepOutcome

# reward_fn(sim, outcome) -> (n_users,) float32; `sim` is the `Simulation` (it reads `sim.platform`)
RewardFn = Callable[[Any, StepOutcome], np.ndarray]


_ENGAGES_POST = KindMask((A.LIKE_POST, A.REPOST, A.QUOTE_POST, A.CREATE_COMMENT))  # +1 to the post's author


def engagement_reward(sim: Any, out: StepOutcome) -> np.ndarray:
    """Default reward: engagement each user RECEIVED this step — likes on their posts and
    comments, reposts/quotes and comments on their posts, and new followers (+1 each)."""
    pf = sim.platform
    rewards = np.zeros(pf.n_users, dtype=np.float32)
    ok = out.results == int(R.OK)  # (plain ints in numpy: an enum costs ~2.5 us an operation)
    a, t = out.actions[ok], out.targets[ok]
    on_post = _ENGAGES_POST(a)
    np.add.at(rewards, pf.p_author.a[t[on_post]], 1.0)
    on_comment = a == int(A.LIKE_COMMENT)
    np.add.at(rewards, pf.c_author.a[t[on_comment]], 1.0)
    np.add.at(rewards, t[a == int(A.FOLLOW)], 1.0)
    return rewards
