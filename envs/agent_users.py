"""Users of a task episode on the platform driven by a PettingZoo env's `step` (`task_platform_v0`).

`AgentUsers` is a user policy (`act(env, obs)` -> `ActionArrays`, `reset(env, users, seed)`), the
kind `backend="platform"` of Recommender-v4 / Moderator-v2 takes as `user_policy=` for the users
`policy_users=` names (`oasis_gym/world/sim_world.py`): its actions are the ones the env handed it
(`set_actions`) and what its users saw is kept for the env to return (`observations`). So the
agent users are users of the world like any other policy's: their rows are applied and journaled as
any user's, and the world counts what they did (`env`, the argument of `reset` and `act`, is
the world's `Simulation`: its recommender maps accounts to model users). `Routed` joins it to a second user policy (ABM,
scripted, LLM) that drives other users.

Timing. The task's step serves the feeds after the platform agent's action, so a user cannot
see a step's feed before acting in it. An agent user's observation is the feed it was served in
the step just played (its row of the step's feeds, twitter_v0's user spaces; the inactive
observation when it did not visit); the action it then gives to the next `step` answers that
observation: it is applied in that step if the user visits (the model's visit draw; else it is
ignored, as twitter_v0 ignores an inactive user's action), its post slot naming a post of the feed
it observed. The row targets that post when it is in the feed the user is served now; otherwise
(or after an inactive observation) the row names no post and the platform rejects it
(`unknown_post`).
"""

from __future__ import annotations

import numpy as np

from oasis_gym.actions import IS_POST_TARGET
from oasis_gym.sim import ActionArrays, ObsBatch
from oasis_gym.sim.action_values import actions_from_dicts

from .social_env import SocialMediaEnv


class AgentUsers:
    """The agent users' policy (module docstring); `users`: their model indexes, sorted."""

    name = "agent_users"

    def __init__(self, users: np.ndarray, comments: int):
        self.users = np.asarray(users, np.int64)
        self.comments = comments  # comment slots of the observation (the task platform shows none)
        self.reset(None, self.users, None)

    def reset(self, env, users: np.ndarray, seed: int | None) -> None:
        """A new episode: no actions pending, nothing seen yet."""
        self._pending = ActionArrays.empty()
        self.seen: dict[int, dict] = {}  # model user -> its observation of the step just played
        self._ids: dict[int, np.ndarray] = {}  # model user -> the post ids of that observation
        self._answered: dict[int, np.ndarray] = {}  # the same, of the observation the actions answer

    def set_actions(self, users: list[int], actions: list) -> None:
        """The actions of the next step, one per model user of `users` (PettingZoo action values:
        dicts of `type`, `post`, `comment`, `user`, optional `text` and `stance`, or an int),
        decoded before the step (a malformed one: an `invalid_action` row); what was seen moves on."""
        self._pending = actions_from_dicts(np.asarray(users, np.int64), actions)
        self._answered, self._ids, self.seen = self._ids, {}, {}

    def act(self, env, obs: ObsBatch) -> ActionArrays:
        """The pending actions of the visiting agent users in `obs` (their post slots resolved to
        the feeds served now); what they saw is kept (`seen`)."""
        accounts = np.asarray(obs.users, np.int64)
        model = env.recsys.model_users(accounts)
        self.seen, ids = self._observe(obs, model), self._answered
        self._ids = {int(u): obs.post_ids[r] for r, u in enumerate(model.tolist())}
        p = self._pending
        row = {int(u): r for r, u in enumerate(model.tolist())}
        take = np.array([int(u) in row for u in p.users.tolist()], bool).reshape(-1)
        if not take.any():
            return ActionArrays.empty()
        users = p.users[take]
        rows = np.array([row[int(u)] for u in users.tolist()], np.int64)
        kind, post = p.column("type")[take], p.column("post")[take]
        k = obs.post_ids.shape[1]
        for i in np.flatnonzero(IS_POST_TARGET(kind)).tolist():  # the post it saw, in the feed now
            before = ids.get(int(users[i]))
            wanted = before[post[i]] if before is not None and 0 <= post[i] < len(before) else -1
            found = np.flatnonzero((obs.post_ids[rows[i]] == wanted) & (wanted >= 0))
            post[i] = found[0] if len(found) else k  # a slot beyond the feed: no post (rejected)
        texts = [t for t, keep in zip(p.texts(), take.tolist()) if keep]
        columns = {c: p.column(c)[take] for c in ("comment", "user", "stance")}
        return ActionArrays(accounts[rows], kind, post, text=texts, **columns)

    def _observe(self, obs: ObsBatch, model: np.ndarray) -> dict[int, dict]:
        """Each visiting agent user's observation dict (twitter_v0's, its comment slots empty)."""
        kc = obs.post_ids.shape[1] * self.comments
        out = {}
        for u, o in zip(model.tolist(), SocialMediaEnv.row_observations(obs)):
            if obs.comment_ids.shape[1] != kc:  # the task platform keeps no comments: empty slots
                o["comment_ids"] = np.full(kc, -1, np.int64)
                o["comments"] = np.zeros((kc, obs.comments.shape[2]), np.float32)
                o["action_mask"]["comment"] = np.zeros(kc, np.int8)
            out[int(u)] = o
        return out


class Routed:
    """Two user policies, each on its users' rows: the agent users and another policy's."""

    name = "routed"

    def __init__(self, agents: AgentUsers, other, other_users: np.ndarray):
        self.agents, self.other, self.other_users = agents, other, np.asarray(other_users, np.int64)

    def reset(self, env, users: np.ndarray, seed: int | None) -> None:
        """Reset both, each with its own users."""
        self.agents.reset(env, self.agents.users, seed)
        self.other.reset(env, self.other_users, seed)

    def act(self, env, obs: ObsBatch) -> ActionArrays:
        """Both policies' rows: each policy acts on its users' rows of `obs`."""
        model = env.recsys.model_users(np.asarray(obs.users, np.int64))
        mine = np.isin(model, self.agents.users)
        parts = [(self.agents, np.flatnonzero(mine)), (self.other, np.flatnonzero(~mine))]
        return ActionArrays.concat([policy.act(env, obs.take(rows)) for policy, rows in parts if len(rows)])
