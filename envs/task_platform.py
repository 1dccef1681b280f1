"""TaskPlatformEnv: the PettingZoo parallel env of a benchmark task on the platform (`task_platform_v0`).

The documentation of agents, spaces, rewards and arguments lives in the versioned module
(`envs/task_platform_v0.py`); this module holds the logic: the platform agent is the Gymnasium
task env of `backend="platform"` (Recommender-v4 / Moderator-v2) stepped as it is, the agent users
a user policy of that env (`envs/agent_users.py`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from oasis_gym.actions import RESULT_NAMES
from oasis_gym.platform.platform import action_names

from . import agent_spaces
from .agent_users import AgentUsers, Routed
from .lockstep import check_policy_users
from .moderator_v2 import ModeratorEnv
from .recommender_v4 import RecommenderEnv

# the task -> its Gymnasium env (the benchmark's id and tier) and its platform agent's name
TASKS = {"recommender": (RecommenderEnv, "recommender_0"), "moderator": (ModeratorEnv, "moderator_0")}
COMMENT_SLOTS = 1  # twitter_v0's user spaces need a comment slot a post; the task platform keeps none


def check_agent_users(users, agent_users) -> np.ndarray:
    """The agent users' model indexes, sorted (ValueError, one line, for a bad list)."""
    if agent_users is None:
        return np.zeros(0, np.int64)
    if isinstance(agent_users, (str, bytes)):
        raise ValueError(f"agent_users must be a list of user indexes (integers), got {agent_users!r}")
    ids = np.asarray(list(agent_users))
    if len(ids) == 0:
        return np.zeros(0, np.int64)
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"agent_users must be a list of user indexes (integers), got {agent_users!r}")
    n = users if isinstance(users, (int, np.integer)) and not isinstance(users, bool) else None
    if ids.min() < 0 or (n is not None and ids.max() >= n):
        raise ValueError(f"agent_users must be user indexes in [0, {n}), got {ids.min()}..{ids.max()}")
    if len(np.unique(ids)) != len(ids):
        raise ValueError("agent_users names a user twice")
    return np.sort(ids).astype(np.int64)


class TaskPlatformEnv(ParallelEnv):
    """A task's platform agent and agent users on the platform (see task_platform_v0)."""

    metadata = {"name": "task_platform_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, task: str = "recommender", difficulty: str = "medium", users: int = 1000,
                 population_seed: int = 0, max_steps: int = 100, journal: bool = False, db_path=None,
                 overwrite: bool = False, user_policy=None, policy_users=None, agent_users=None,
                 render_mode=None):  # fmt: skip
        if task not in TASKS:
            raise ValueError(f"task must be one of {list(TASKS)}, got {task!r}")
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (this env renders nothing), got {render_mode!r}")
        self.render_mode = None
        ids = check_agent_users(users, agent_users)
        if user_policy is not None and policy_users is None and len(ids):  # the others: all but the agents
            policy_users = np.setdiff1d(np.arange(users), ids) if isinstance(users, (int, np.integer)) else None
        others = check_policy_users("platform", users, user_policy, policy_users)
        if others is not None and len(np.intersect1d(others, ids)):
            raise ValueError(f"policy_users and agent_users share users: {np.intersect1d(others, ids)[:5].tolist()}")
        self.agent_users = AgentUsers(ids, COMMENT_SLOTS) if len(ids) else None
        route, routed = user_policy, others
        if self.agent_users is not None:
            route = self.agent_users if user_policy is None else Routed(self.agent_users, user_policy, others)
            routed = ids if others is None else np.union1d(ids, others)
        cls, self.platform_agent = TASKS[task]
        self.task_env = cls(difficulty=difficulty, users=users, population_seed=population_seed, max_steps=max_steps,
                            backend="platform", journal=journal, db_path=db_path, overwrite=overwrite,
                            user_policy=route, policy_users=routed)  # fmt: skip
        self.task = task
        self._user = {f"user_{i}": i for i in ids.tolist()}
        self.possible_agents = [self.platform_agent, *self._user]
        self.agents: list[str] = []
        sim = self.task_env.world.sim
        self._user_obs, self._user_act, self._inactive = agent_spaces.user_spaces(sim.K, COMMENT_SLOTS, sim.U)

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        """The platform agent's: the Gymnasium task env's; a user's: twitter_v0's user space."""
        return self.task_env.observation_space if agent == self.platform_agent else self._user_obs

    def action_space(self, agent: str) -> spaces.Space:
        """The platform agent's: the Gymnasium task env's; a user's: twitter_v0's user space."""
        return self.task_env.action_space if agent == self.platform_agent else self._user_act

    # ------------------------------------------------------------------ core API
    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode (the task env's `reset(seed=seed)`); returns (observations, infos)."""
        obs, info = self.task_env.reset(seed=seed)
        self.agents = list(self.possible_agents)
        observations = {self.platform_agent: obs, **dict.fromkeys(self._user, self._inactive)}
        infos = {self.platform_agent: info, **{a: {"active": False} for a in self._user}}
        return observations, infos

    def step(self, actions: Mapping):
        """One task step: the platform agent's action and the agent users' (module docstring of
        task_platform_v0); returns (observations, rewards, terminations, truncations, infos)."""
        if not self.agents:
            raise RuntimeError("step() called on a finished episode: call reset() first")
        if not isinstance(actions, Mapping):
            raise TypeError(f"actions must be a mapping of agent name -> action, got {type(actions).__name__}")
        unknown = actions.keys() - set(self.possible_agents)
        if unknown:
            raise KeyError(f"unknown agent(s) in actions: {sorted(unknown)[:5]}")
        if self.platform_agent not in actions:
            raise KeyError(f"no action for {self.platform_agent} (the platform agent acts every step)")
        if self.agent_users is not None:
            given = [a for a in self._user if a in actions]
            self.agent_users.set_actions([self._user[a] for a in given], [actions[a] for a in given])
        obs, reward, terminated, truncated, info = self.task_env.step(actions[self.platform_agent])
        a = self.platform_agent
        observations, rewards, infos = {a: obs}, {a: float(reward)}, {a: info}
        if self.agent_users is not None:
            self._user_results(observations, rewards, infos)
        terminations = dict.fromkeys(self.agents, bool(terminated))
        truncations = dict.fromkeys(self.agents, bool(truncated))
        if terminated or truncated:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def _user_results(self, observations: dict, rewards: dict, infos: dict) -> None:
        """The agent users' observations (what they were served), rewards (twitter_v0's: the
        simulation's `reward_fn`, engagement received) and infos (their row's action and result)."""
        world = self.task_env.world
        out, seen = world.sim.last_outcome, self.agent_users.seen
        account = {int(world.alias[i]): a for a, i in self._user.items()}
        for a, i in self._user.items():
            observations[a] = seen.get(i, self._inactive)
            j = int(world.alias[i])
            rewards[a] = float(out.rewards[j]) if out is not None and j < len(out.rewards) else 0.0
            infos[a] = {"active": i in seen}
        if out is not None:
            for u, act, r in zip(out.users.tolist(), action_names(out.actions), out.results.tolist()):
                if u in account:
                    infos[account[u]].update(last_action=act, last_result=RESULT_NAMES[r])

    def render(self) -> None:
        """Nothing to render (`render_mode` None)."""

    def close(self) -> None:
        """Close the task env (its journal, if any)."""
        self.task_env.close()
