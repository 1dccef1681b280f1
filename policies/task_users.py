"""The task users as a user policy: Recommender-v4 / Moderator-v2's users on the platform (issue 51).

`TaskUsers` answers a task step's feeds (served by `oasis_gym.recsys.task_ranking.TaskRecommender`,
the simulation's recommender) with the platform's actions, as the model's users decide them:

- `LIKE_POST` of each post engaged with and not reposted, `REPOST` of each post reposted,
  `REPORT_POST` ("misleading") of each post reported: `model.users.respond` under OASIS's rules
  (the fast path's glue, `batched/users.respond_to_feeds`, the same counter-based draws);
- `CREATE_POST` of each visitor who posts this step (`model.posting.posts_made`), its stance the
  model's (`post_attributes` over the opinion after this step's change, `pull_push`).

Several actions a user a step: the simulation takes them all (`actions_per_user="many"`). The
policy decides and changes nothing: it plays the model's step on a scratch copy of the world's
arrays (so the decisions are exactly the fast path's), and the world learns what happened from
the platform's outcome, whichever policy acted. So any user policy (ABM, scripted, LLM) can take
some task users' place. It has no generator of its own: every draw is the world's counter-based
one (`model/rng.py`), so a seed gives the same decisions on any path.
"""

from __future__ import annotations

import copy

import numpy as np

from oasis_gym.actions import ActionType as A
from oasis_gym.batched import posting, users
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
    """The task's users (module docstring): the model's responses and posts as platform actions."""

    name = "task_users"

    def reset(self, env, users: np.ndarray, seed: int | None) -> None:
        """Nothing to start: the draws are the world's (counter-based, keyed by its episode)."""

    def act(self, env, obs: ObsBatch) -> ActionArrays:
        """The likes, reposts, reports and posts of the active users in `obs` (one row each)."""
        rec = sim_of(env).recsys
        served = rec.served
        if served is None or len(served.users) != len(obs.users):
            raise ValueError("task users answer the feeds of the task ranking (recsys TaskRecommender)")
        ua = rec.model_users(np.asarray(obs.users, np.int64))
        if not np.array_equal(ua, served.users):
            raise ValueError("the observation's users are not those the task ranking served")
        order = np.argsort(ua, kind="stable")  # the model's order (its post ids follow it)
        ua, accounts = ua[order], np.asarray(obs.users, np.int64)[order]
        ids, rows, ok, flat = (getattr(served, name)[order] for name in ("ids", "rows", "ok", "flat"))
        st = scratch(rec.world.state)
        ka = np.zeros(len(ua), np.int64)
        engaged, shared, reported = users.respond_to_feeds(st, ka, ua, ids, rows, ok)
        users.count_on_posts(st, ka, ua, flat, ok, engaged, shared, reported)
        users.update_users(st, ka, ua, ids, rows, ok, engaged, shared)
        first = int(st.next_post[0])
        posting.post(st, ka, ua)
        new_ids = np.arange(first, int(st.next_post[0]), dtype=np.int64)
        slots = st.slot(new_ids)
        authors = accounts[np.searchsorted(ua, st.author[0, slots])]
        parts = [
            ActionArrays(
                authors,
                np.full(len(new_ids), int(A.CREATE_POST), np.int64),
                text=[f"post {i}" for i in new_ids.tolist()],
                stance=st.stance[0, slots].astype(np.float32),
            )
        ]
        for action, mask in ((A.LIKE_POST, engaged & ~shared), (A.REPOST, shared), (A.REPORT_POST, reported)):
            row, slot = np.nonzero(mask & ok)
            text = [REPORT_REASON] * len(row) if action == A.REPORT_POST else None
            parts.append(ActionArrays(accounts[row], np.full(len(row), int(action), np.int64), slot, text=text))
        return ActionArrays.concat(parts)
