"""SocialMediaEnv: the PettingZoo ParallelEnv adapter over the batched Simulation core.

The documentation of agents, spaces, rewards and arguments lives in the versioned modules
(`twitter_v0`, `reddit_v0`); this module holds the logic they share.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from oasis_gym import population as popmod
from oasis_gym.actions import RESULT_NAMES
from oasis_gym.agents import make_platform_agents
from oasis_gym.checks import population_size
from oasis_gym.errors import ConfigError
from oasis_gym.platform.journal import read_meta
from oasis_gym.platform.journal_file import check_distinct, connect_read
from oasis_gym.platform.journal_load import held_to_resume
from oasis_gym.platform.platform import action_name, action_names
from oasis_gym.sim import (
    ActionArrays,
    ObsBatch,
    Simulation,
    SimulationConfig,
    StepOutcome,
    check_resumable,
)
from oasis_gym.sim.action_values import actions_from_dicts

from . import agent_spaces
from .agent_dicts import AgentDicts
from .feed_text import render_view

_MISSING = object()  # an active user without an action this step
_ACTIVE = np.ones(1, dtype=np.int8)  # every active user's `active` entry: one read-only array
_ACTIVE.flags.writeable = False


def load_population(users, population_seed: int = 0):
    """`users` may be a Population, a profile file path (.csv / .json) or a user count."""

    if isinstance(users, (bool, np.bool_)):
        raise ConfigError(f"users must be a user count, a profile path or a Population, got {users!r}")
    if isinstance(users, (int, np.integer)):  # at most MAX_USERS, and what the memory holds
        return popmod.synthetic(population_size(int(users), "users"), seed=population_seed)
    if isinstance(users, (str, bytes)) or hasattr(users, "__fspath__"):
        return popmod.load_profiles(users)
    if hasattr(users, "follow_src"):
        return users
    raise TypeError(f"users must be a Population, a profile path or a user count, got {type(users).__name__}")


class SocialMediaEnv(ParallelEnv):
    """Every user is an agent `user_<id>`; see twitter_v0 / reddit_v0 for the full docs."""

    metadata = {"name": "oasis_social_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(
        self,
        users=100,
        *,
        platform: str = "twitter",
        population_seed: int = 0,
        render_mode: str | None = None,
        reward_fn=None,
        setup=None,
        platform_agents: Mapping[str, Any] | None = None,
        _resume_from: str | None = None,
        **config: Any,
    ):
        """The env over a new `Simulation` of `users` (see twitter_v0's Arguments);
        `platform_agents`: platform agents already made, by name (a Gymnasium env's learner,
        made first for its spaces), used for the ones `config` switches on."""
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        unknown = set(config) - set(SimulationConfig.__dataclass_fields__)
        if unknown:
            raise TypeError(
                f"unknown argument(s) {sorted(unknown)}; valid: {sorted(SimulationConfig.__dataclass_fields__)}"
            )
        if config.get("feeds_after_agents"):
            raise ConfigError(
                "feeds_after_agents=True is the split step of envs whose users are their own: "
                "here users and platform agents act in the same call"
            )
        if config.get("comments_per_post", 2) < 1:
            raise ValueError("comments_per_post must be >= 1")
        if config.get("recsys") is None:  # the platform's own, or the trainable one
            config["recsys"] = "agent" if config.get("recommender_agent") else platform
        self.render_mode = render_mode
        db_path = config.get("db_path")
        if db_path is not None and not isinstance(db_path, (str, os.PathLike)):  # never a file named "[]"
            raise TypeError(f"db_path must be a path (str or os.PathLike) or None, got {type(db_path).__name__}")
        if isinstance(db_path, os.PathLike):  # saved in the journal's meta as a string
            config["db_path"] = os.fspath(config["db_path"])
        if isinstance(users, (str, os.PathLike)):  # the journal must not be the file it reads
            check_distinct(config.get("db_path"), {"profile file (users)": users})
        population = load_population(users, population_seed) if users is not None else None
        sim_config = SimulationConfig(platform=platform, **config)
        # the platform agents the config switches on, plugged into the engine by name
        agents = make_platform_agents(
            sim_config.recommender_agent, sim_config.moderator_agent, sim_config.platform_agent_params, platform_agents
        )
        self.sim = Simulation(population, sim_config, reward_fn=reward_fn, setup=setup, platform_agents=agents)
        n = population.n if population is not None else _count_users(_resume_from)
        self.possible_agents = [f"user_{i}" for i in range(n)] + list(self.sim.platform_agents)
        self._known: frozenset | None = None  # the agent names, made on the first dict `step`
        self.agents: list[str] = []
        self._dicts = AgentDicts()  # the per-agent dicts of a step, copied from per-episode templates
        self._build_spaces()
        self._cycles = 0
        if _resume_from is not None:
            self.sim.resume(_resume_from)

    @classmethod
    def resume(
        cls, db_path: str, *, render_mode: str | None = None, reward_fn=None, setup=None, **overrides: Any
    ) -> SocialMediaEnv:
        """Continue a run from its journal: the state after its last completed step, with the
        saved random generator states, so a non-LLM run continues bit-identically.
        `overrides` change config values (e.g. a larger `max_cycles`)."""

        with held_to_resume(db_path):
            meta = check_resumable(read_meta(db_path), db_path)
        if overrides.get("platform", meta["config"]["platform"]) != meta["config"]["platform"]:
            raise ConfigError(f"{db_path} is a {meta['config']['platform']} journal: a resumed run keeps its platform")
        config = {**meta["config"], **overrides, "db_path": str(db_path)}
        platform = config.pop("platform")
        env = cls(
            None,
            platform=platform,
            render_mode=render_mode,
            reward_fn=reward_fn,
            setup=setup,
            _resume_from=str(db_path),
            **config,
        )
        env.agents = list(env.possible_agents)
        env._cycles = env.sim.platform.step  # completed steps
        if env._cycles >= env.sim.config.max_cycles:
            env.agents = []
        return env

    # ------------------------------------------------------------------ spaces
    def _build_spaces(self) -> None:
        self._obs_space, self._act_space, self._inactive_obs = agent_spaces.user_spaces(
            self.sim.K, self.sim.C, self.sim.U
        )

    def observation_space(self, agent: str) -> spaces.Space:
        """The agent's observation space (a platform agent's own, else the users' shared one)."""
        platform_agent = self.sim.platform_agents.get(agent)
        return agent_spaces.observation_space(platform_agent) if platform_agent is not None else self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        """The agent's action space (a platform agent's own, else the users' shared one)."""
        platform_agent = self.sim.platform_agents.get(agent)
        return agent_spaces.action_space(platform_agent) if platform_agent is not None else self._act_space

    # ------------------------------------------------------------------ core API
    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start a new episode (a fresh platform and journal); returns (observations, infos)."""
        self.agents = []  # live again only once the new episode (and its journal) exists
        self._cycles = 0
        batch = self.sim.reset(seed)
        self.agents = list(self.possible_agents)
        return self._observations(batch), self._infos(batch)

    def step(self, actions: Mapping[str, Any]):
        """One step of all agents' actions; returns (observations, rewards, terminations, truncations, infos)."""
        if not self.agents:
            raise RuntimeError("step() called on a finished episode: call reset() first")
        self.sim.require_live()
        if not isinstance(actions, Mapping):
            raise TypeError(f"actions must be a mapping of agent name -> action, got {type(actions).__name__}")
        if self._known is None:
            self._known = frozenset(self.possible_agents)
        unknown = actions.keys() - self._known
        if unknown:
            raise KeyError(f"unknown agent(s) in actions: {sorted(unknown)[:5]}")
        platform_actions = {a: actions[a] for a in self.sim.platform_agents if a in actions}
        names = self.possible_agents
        active = self.sim.obs.users.tolist()
        values = [actions.get(names[u], _MISSING) for u in active]  # the active users' actions
        acted = [v is not _MISSING for v in values]
        users = np.asarray(self.sim.obs.users, dtype=np.int64)[np.array(acted, dtype=bool).reshape(-1)]
        values = [v for v in values if v is not _MISSING]
        out = self.sim.step(actions_from_dicts(users, values), platform_actions)
        self._cycles += 1  # only a step that went through uses a cycle (a failed one changed nothing)
        return self._after_step(out)

    def step_batch(self, acts: ActionArrays, platform_actions: dict | None = None) -> StepOutcome:
        """Fast path: columnar slot-based actions of active users; no per-agent dicts.
        Read the next observations from `self.sim.obs` (an ObsBatch) and, for the platform
        agents, `self.sim.platform_obs`; their rewards are in `outcome.platform_rewards`."""
        if not self.agents:
            raise RuntimeError("step_batch() called on a finished episode: call reset() first")
        out = self.sim.step(acts, platform_actions)
        self._cycles += 1
        if self._cycles >= self.sim.config.max_cycles:
            self._end_episode()
        return out

    def _end_episode(self) -> None:
        """No agents left, and the journal holds every step (its writer thread is done)."""
        self.agents = []
        if self.sim.journal is not None:
            self.sim.journal.flush()

    def _after_step(self, out: StepOutcome):
        batch = self.sim.obs
        agents = self.agents
        rewards = self._dicts.floats(agents, out.rewards)
        rewards.update({a: float(out.platform_rewards.get(a, 0.0)) for a in self.sim.platform_agents if a in agents})
        done = self._cycles >= self.sim.config.max_cycles
        terminations = self._dicts.constant(agents, "terminated", False)
        truncations = self._dicts.constant(agents, ("truncated", done), done)
        observations = self._observations(batch)
        infos = self._infos(batch)
        names = self.possible_agents
        for u, a, r in zip(out.users.tolist(), action_names(out.actions), out.results.tolist()):
            name = names[u]
            infos[name] = {"active": infos[name]["active"], "last_action": a, "last_result": RESULT_NAMES[r]}
        if done:
            self._end_episode()
        return observations, rewards, terminations, truncations, infos

    def _observations(self, batch: ObsBatch) -> dict:
        """Every live agent's observation: the active users' dicts of row views of the batch,
        one shared constant observation for the inactive ones (read them, do not write)."""
        observations = self._dicts.constant(self.agents, "observation", self._inactive_obs)
        names = self.possible_agents
        observations.update(zip([names[u] for u in batch.users.tolist()], self.row_observations(batch)))
        observations.update({a: o for a, o in self.sim.platform_obs.items() if a in observations})
        return observations

    def _infos(self, batch: ObsBatch) -> dict:
        """{"active": False} for the inactive agents (one dict shared by them all episode, as
        their observation is: read it, do not write it), a dict of its own for each active one."""
        infos = self._dicts.constant(self.agents, "info", {"active": False})
        names = self.possible_agents
        infos.update({names[u]: {"active": True} for u in batch.users.tolist()})
        for a in self.sim.platform_agents:
            if a in infos:
                infos[a] = {"active": True}
        return infos

    @staticmethod
    def row_observations(batch: ObsBatch) -> list[dict]:
        """Each row's PettingZoo observation dict (`row_observation`), the batch's arrays cut
        into row views once per field rather than indexed per agent (`active`: one shared
        read-only array)."""
        n = len(batch.users)
        if not n:
            return []
        rows = [
            list(a)  # iterating an array gives its rows as views
            for a in (
                batch.post_ids,
                batch.feed,
                batch.comment_ids,
                batch.comments,
                batch.user_ids,
                batch.user_feats,
                batch.self_feats,
                batch.mask_type,
                batch.mask_post,
                batch.mask_comment,
                batch.mask_user,
            )
        ]
        return [
            {
                "active": _ACTIVE,
                "post_ids": p,
                "feed": f,
                "comment_ids": ci,
                "comments": c,
                "user_ids": ui,
                "users": uf,
                "self": sf,
                "action_mask": {"type": mt, "post": mp, "comment": mc, "user": mu},
            }
            for p, f, ci, c, ui, uf, sf, mt, mp, mc, mu in zip(*rows)
        ]

    @staticmethod
    def row_observation(batch: ObsBatch, row: int) -> dict:
        """One user's PettingZoo observation dict from row `row` of an `ObsBatch` (views of
        its arrays; `active` a 1-element array of its own)."""
        return {
            "active": np.ones(1, dtype=np.int8),
            "post_ids": batch.post_ids[row],
            "feed": batch.feed[row],
            "comment_ids": batch.comment_ids[row],
            "comments": batch.comments[row],
            "user_ids": batch.user_ids[row],
            "users": batch.user_feats[row],
            "self": batch.self_feats[row],
            "action_mask": {
                "type": batch.mask_type[row],
                "post": batch.mask_post[row],
                "comment": batch.mask_comment[row],
                "user": batch.mask_user[row],
            },
        }

    # ------------------------------------------------------------------ text + rendering
    def feed_view(self, agent: str) -> dict:
        """What an LLM user reads, as a dict (what its prompt is built from): persona, time,
        the feed's posts with texts, authors, counts and top comments, the users in view, the
        allowed actions. Any user, any time the env is open: an inactive user (or one after
        the episode's end) sees what a refresh would show them now, read without changing the run."""
        return self.feed_views([agent])[0]

    def feed_text(self, agent: str) -> str:
        """`feed_view(agent)` as text a person reads (`envs.feed_text.render_view`)."""
        return render_view(self.feed_view(agent))

    def feed_views(self, agents: list[str], memories: dict[int, list[str]] | None = None) -> list[dict]:
        """`feed_view` for several users at once, with optional per-user memories for the prompts."""
        self.sim.require_live()
        for a in agents:
            if a in self.sim.platform_agents:
                raise KeyError(f"{a!r} is a platform agent: it has no feed (see observation_space({a!r}))")
        return self.sim.feed_views(np.array([self.sim.user_id(a) for a in agents], dtype=np.int64), memories)

    @property
    def active_agents(self) -> list[str]:
        """The users active this step (the agents expected to act)."""
        return [self.possible_agents[u] for u in self.sim.obs.users.tolist()] if self.agents else []

    def render(self) -> str | None:
        """A text summary of the step (`render_mode="ansi"`), else None."""
        if self.render_mode != "ansi":
            return None
        sim, pf = self.sim, self.sim.platform
        lines = [
            f"step {pf.step}  {pf.created_at()}  users {pf.n_users}  active {len(sim.obs.users)}"
            f"  posts {pf.n_posts}  comments {pf.n_comments}"
        ]
        out = sim.last_outcome
        if out is not None and len(out.actions):
            codes, counts = np.unique(out.actions, return_counts=True)
            lines.append("actions: " + ", ".join(f"{action_name(c)} {k}" for c, k in zip(codes, counts)))
            lines.append(f"rejected: {int((out.results != 0).sum())}")
        if pf.n_posts:
            top = np.argsort(-(pf.p_likes.a + pf.p_shares.a), kind="stable")[:3]
            for p in top.tolist():
                text = pf.p_content[p].replace("\n", " ")
                lines.append(
                    f"  #{p} by {pf.u_user_name[int(pf.p_author.a[p])]}: {text[:70]!s}"
                    f"  [likes {pf.p_likes.a[p]}, shares {pf.p_shares.a[p]}]"
                )
        return "\n".join(lines)

    def close(self) -> None:
        """Close the simulation and finish its journal."""
        self.sim.close()

    def state(self) -> np.ndarray:
        """Global state: step, users, posts, comments, follows, likes."""
        pf = self.sim.platform
        return np.array(
            [pf.step, pf.n_users, pf.n_posts, pf.n_comments, len(pf.rel["follow"]), len(pf.rel["like"])], dtype=np.int64
        )


def _count_users(db_path: str | None) -> int:
    if db_path is None:
        raise TypeError("users must be a Population, a profile path or a user count")
    with held_to_resume(db_path):  # (a journal being resumed: read in place)
        conn = connect_read(db_path)
        try:
            return conn.execute("SELECT COUNT(*) FROM user").fetchone()[0]
        finally:
            conn.close()
