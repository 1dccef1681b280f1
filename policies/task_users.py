"""The task users as a user policy: Recommender-v4 / Moderator-v2's users on the platform (issue 51).

`TaskUsers` answers a task step's feeds (served by `oasis_gym.recsys.task_ranking.TaskRecommender`,
the simulation's recommender) with the platform's actions, as the model's users decide them:
`LIKE_POST` of each post engaged with and not reposted, `REPOST` of each post reposted,
`REPORT_POST` ("misleading") of each post reported: `model.users.respond` under OASIS's rules
(the fast path's glue, `batched/users.respond_to_feeds`, the same counter-based draws).

Several actions a user a step: the simulation takes them all (`actions_per_user="many"`). The
policy decides and changes nothing: it decides on a scratch copy of the world's arrays, and the
world learns what happened from the platform's outcome, whichever policy acted. So any user
policy (ABM, scripted, LLM) can take some task users' place. It has no generator of its own:
every draw is the world's counter-based one (`model/rng.py`), so a seed gives the same decisions
on any path. A task user's posts are the world's (`oasis_gym/world/sim_world.py`): a post's
stance reads the opinion after the step's change, which the world makes from what was applied.
"""

from __future__ import annotations

import copy

import numpy as np

from oasis_gym.actions import ActionType as A
from oasis_gym.batched import users
from oasis_gym.sim import ActionArrays, ObsBatch

from .base import BasePolicy, sim_of

REPORT_REASON = "misleading"


def scratch(state):
    """A copy of a task `State` that the model's step may change: its arrays and pair sets copied,
    the population and tier shared (read only)."""
    out = copy.copy(state)
    for name, value in vars(state).items():
        if isinstance(value, np.ndarray):
            setattr(out, name, value.copy())
    for name in ("engaged_pairs", "reported_pairs", "bot_pairs"):
        pairs = getattr(state, name, None)
        if pairs is not None:
            twin = copy.copy(pairs)
            twin.bits = pairs.bits.copy()
            setattr(out, name, twin)
    return out


class TaskUsers(BasePolicy):
    """The task's users (module docstring): the model's responses as platform actions."""

    name = "task_users"

    def reset(self, env, users: np.ndarray, seed: int | None) -> None:
        """Nothing to start: the draws are the world's (counter-based, keyed by its episode)."""

    def act(self, env, obs: ObsBatch) -> ActionArrays:
        """The likes, reposts and reports of the active users in `obs` (several rows a user)."""
        rec = sim_of(env).recsys
        served = rec.served
        if served is None:
            raise ValueError("task users answer the feeds of the task ranking (recsys TaskRecommender)")
        ua = rec.model_users(np.asarray(obs.users, np.int64))
        order = np.argsort(ua, kind="stable")  # the served rows' order: the model's
        ua, accounts = ua[order], np.asarray(obs.users, np.int64)[order]
        at = np.minimum(np.searchsorted(served.users, ua), max(len(served.users) - 1, 0))
        if len(ua) and (not len(served.users) or not np.array_equal(served.users[at], ua)):
            raise ValueError("the observation's users are not those the task ranking served")
        ids, rows, ok = served.ids[at], served.rows[at], served.ok[at]
        st = scratch(rec.world.state)  # (`respond_to_feeds` marks the pairs it decided on)
        engaged, shared, reported = users.respond_to_feeds(st, np.zeros(len(ua), np.int64), ua, ids, rows, ok)
        parts = []
        for action, mask in ((A.LIKE_POST, engaged & ~shared), (A.REPOST, shared), (A.REPORT_POST, reported)):
            row, slot = np.nonzero(mask & ok)
            text = [REPORT_REASON] * len(row) if action == A.REPORT_POST else None
            parts.append(ActionArrays(accounts[row], np.full(len(row), int(action), np.int64), slot, text=text))
        return ActionArrays.concat(parts)
