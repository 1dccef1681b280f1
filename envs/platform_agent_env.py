"""The base class of the Gymnasium platform-agent envs (`PlatformAgentEnv`), scenarios by name.

`PlatformAgentEnv` runs a `SocialMediaEnv` (the PettingZoo parallel env) in which one
platform agent (`recommender_0` or `moderator_0`) is the learner, the users are driven by a
user policy and the other platform agent, if any, by a fixed rule (`platform_rules`).
Every `step(action)` asks the user policy for its batch of actions, runs one simulation step
through `SocialMediaEnv.step_batch`, and returns the learner's observation and reward.
See `recommender_v0` and `moderator_v0` for the documented envs.

The env imports no scenario and no user policy: a scenario given by name is made through the
registry (`oasis_gym.SCENARIOS`), and the users come from the `user_policy` argument, else
the scenario (`scenario.user_policy`), else the registry's default
(`oasis_gym.DEFAULT_USER_POLICY`: plain ABM users).

Pickling (e.g. for `SubprocVecEnv`): an env pickles as its settings only (no simulation, a
fresh learner) and rebuilds its simulation lazily at the next `reset`, so the user-policy factory (and any
LLM client it creates) must be picklable / created inside the factory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from oasis_gym import DEFAULT_USER_POLICY, SCENARIOS, _register, load_entry_point
from oasis_gym.actions import IS_ENGAGEMENT
from oasis_gym.actions import ActionType as A
from oasis_gym.agents import esteban_ray, exposure_stats
from oasis_gym.checks import population_size
from oasis_gym.model.seeds import draw_training_seed
from oasis_gym.platform import DOWNRANKED, LABELLED, MISINFO_LABEL, REMOVED, REPOST, TRUE_LABEL

from . import agent_spaces
from .social_env import SocialMediaEnv

PlatformRule = Callable[[Any], np.ndarray]  # rule(sim) -> platform agent action
UserPolicyFactory = Callable[[Any], Any]  # factory(env: SocialMediaEnv) -> Policy


class PlatformAgentEnv(gym.Env):
    """Base class; subclasses set `agent` and implement `_agent_config` / `_other_actions`."""

    agent: str = ""
    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}

    def __init__(
        self,
        users=None,
        *,
        scenario="misinfo_stream",
        user_policy: UserPolicyFactory | None = None,
        agent_params: dict | None = None,
        max_cycles: int | None = None,
        render_mode: str | None = None,
        population_seed: int = 0,
        **env_kwargs: Any,
    ):
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None, 'ansi' or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self.scenario = make_scenario(scenario)
        defaults = self.scenario.env_kwargs() if self.scenario is not None else {}
        settings = {**defaults, **env_kwargs}
        default_users, default_cycles = settings.pop("users", 100), settings.pop("max_cycles", 50)
        settings.pop("population_seed", None)  # (the argument's, never a scenario's)
        # the population (a count, a profile file or a Population) and its seed: attributes
        # passed as arguments down to the draws (`_build` -> `SocialMediaEnv` -> `load_population`)
        self.users = users if users is not None else default_users
        if isinstance(self.users, (int, np.integer)) and not isinstance(self.users, bool):
            population_size(int(self.users), "users")  # a count: checked before anything is built
        self.population_seed = population_seed
        self._cycles = max_cycles if max_cycles is not None else default_cycles  # as given: the config checks it
        self.max_cycles = int(self._cycles)
        self.setup = settings.pop("setup", None) or self.scenario
        self.user_policy = user_policy
        # the platform agents' parameters, merged here only: the scenario's, then the env
        # argument's (`platform_agent_params`), then the learner's (`agent_params`)
        self.platform_agent_params = _merged_params(
            self.scenario, settings.pop("platform_agent_params", None) or {}, self.agent, agent_params
        )
        self.agent_params = self.platform_agent_params[self.agent.split("_")[0]]
        self.env_kwargs = settings  # the other `SocialMediaEnv` arguments
        # the learner, made once: its spaces here, then the simulation's agent (or the scorer
        # of a fixed recommender's feeds, `RecommenderEnv(feed=...)`)
        self.learner = self._make_agent(self.agent_params)
        self.observation_space = agent_spaces.observation_space(self.learner)
        self.action_space = agent_spaces.action_space(self.learner)
        self._env = None
        self._users = None

    # ------------------------------------------------------------------ subclass hooks
    @staticmethod
    def _make_agent(params: dict):  # pragma: no cover - abstract
        raise NotImplementedError

    def _agent_config(self) -> dict:  # pragma: no cover - abstract
        """SimulationConfig values that switch on the platform agents of this env."""
        raise NotImplementedError

    def _other_actions(self, sim) -> dict:
        """Actions of the platform agents driven by fixed rules this step."""
        return {}

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict:
        """The env's settings only: the simulation is rebuilt at the next `reset`."""
        built = ("_env", "_users", "_episode", "learner")
        return {k: v for k, v in self.__dict__.items() if k not in built and not k.startswith("_np_random")}

    def __setstate__(self, state: dict) -> None:
        """The settings back, a fresh learner, nothing built yet (as a new env)."""
        self.__dict__.update(state)
        self.learner = self._make_agent(self.agent_params)
        self._env = None
        self._users = None

    # ------------------------------------------------------------------ lazy build
    @property
    def parallel_env(self):
        """The underlying PettingZoo `SocialMediaEnv` (built at the first reset)."""
        if self._env is None:
            self._build()
        return self._env

    @property
    def sim(self):
        """The running `Simulation` (builds the env on first use)."""
        return self.parallel_env.sim

    def _build(self) -> None:
        self._env = SocialMediaEnv(
            self.users,
            population_seed=self.population_seed,
            max_cycles=self._cycles,
            setup=self.setup,
            platform_agent_params=self.platform_agent_params,
            platform_agents={self.agent: self.learner},
            **{**self.env_kwargs, **self._agent_config()},
        )

    def _make_users(self):
        """The user policy, made once the first episode's platform exists (so a factory may
        route users by their followers, e.g. `HybridPolicy.top_k_by_followers`)."""
        factory = self.user_policy
        if factory is None:
            factory = getattr(self.scenario, "user_policy", None) or load_entry_point(DEFAULT_USER_POLICY)
        return factory(self._env)

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode: a seeded platform, the scenario's posts, fresh user-policy state."""
        super().reset(seed=seed)
        env = self.parallel_env
        # an explicit seed reproduces the episode; otherwise the next episode's seed comes from
        # the env's generator (seeded by the last explicit seed), drawn at or above
        # TRAIN_SEEDS_FROM so training episodes never replay an evaluation seed (model/seeds.py)
        episode_seed = int(seed) if seed is not None else draw_training_seed(self.np_random)
        env.reset(seed=episode_seed)
        if self._users is None:
            self._users = self._make_users()
        self._users.reset(env, np.arange(env.sim.platform.n_users), episode_seed)
        self._episode = _EpisodeStats()
        return self._obs(), {"seed": episode_seed, "step": 0}

    def step(self, action):
        """Play the learner's action for one step; returns (obs, reward, terminated, truncated, info)."""
        if self._env is None or not self._env.agents:
            raise RuntimeError("step() called before reset() or after the episode ended")
        action = self._checked(action)  # before the users act: a refused action changes nothing
        env, sim = self._env, self._env.sim
        served = exposure_stats(sim.agent_view())
        acts = self._users.act(env, sim.obs)
        platform_actions = {**self._other_actions(sim), **self._learner_action(action)}
        before = _moderation_counts(sim)
        out = env.step_batch(acts, platform_actions)
        reward = self._reward(sim, out, served)
        info = self._info(sim, out, served, before)
        self._episode.add(info, reward)
        truncated = not env.agents
        if truncated:
            info["episode_metrics"] = self._episode.summary(sim)
        return self._obs(), reward, False, truncated, info

    def _checked(self, action):
        """The learner's action checked against the action space (`agent_spaces.check_action`)."""
        return agent_spaces.check_action(self, action)

    def _learner_action(self, action) -> dict:
        return {self.agent: action}

    def _reward(self, sim, out, served: tuple[float, float, int]) -> float:
        return float(out.platform_rewards[self.agent])

    def _obs(self) -> np.ndarray:
        return np.asarray(self._env.sim.platform_obs[self.agent], dtype=np.float32)

    def _info(self, sim, out, served_stats: tuple[float, float, int], before: tuple[np.ndarray, int]) -> dict:
        """Emergent metrics of this step (exposure of the feeds users acted on, actions, opinions)."""

        ok = out.results == 0
        engaged = int(IS_ENGAGEMENT(out.actions[ok]).sum())
        op = sim.platform.u_opinion.a
        served = _served(served_stats)
        return {
            "impressions": served["impressions"],
            "misinfo_impressions": served["misinfo_impressions"],
            "misinfo_share": served["misinfo_share"],
            "cross_cutting_share": served["cross_cutting_share"],
            "engagements": engaged,
            "engagement_rate": engaged / served["impressions"] if served["impressions"] else 0.0,
            "reports": int((out.actions[ok] == A.REPORT_POST).sum()),
            "opinion_std": float(op.std()),
            "esteban_ray": esteban_ray(op),
            "moderation": _moderated_since(sim, before),
            "active_users": len(out.users),
        }

    def render(self) -> str | np.ndarray | None:
        """A text view (`ansi`) or an opinion histogram frame (`rgb_array`); None before the first reset."""
        if self._env is None or self.render_mode is None:
            return None
        if self.render_mode == "rgb_array":
            return opinion_image(self._env.sim)
        env = self._env
        env.render_mode = "ansi"
        return env.render()

    def close(self) -> None:
        """Close the simulation and its journal."""
        if self._env is not None:
            self._env.close()


def opinion_image(sim, height: int = 64, bins: int = 32) -> np.ndarray:
    """(height, 4 * bins, 3) uint8 frame: the histogram of user opinions in [-1, 1] (left
    blue, right red), for `render_mode="rgb_array"` (SB3 / video recorders)."""
    op = np.clip(sim.platform.u_opinion.a, -1.0, 1.0)
    counts, _ = np.histogram(op, bins=bins, range=(-1.0, 1.0))
    bars = np.round(counts / max(counts.max(), 1) * (height - 1)).astype(int)
    img = np.full((height, bins * 4, 3), 255, np.uint8)
    rows = np.arange(height)[:, None] >= height - 1 - np.repeat(bars, 4)[None, :]
    color = np.where(np.repeat(np.arange(bins), 4) < bins // 2, 0, 1)
    img[rows & (color == 0)[None, :]] = (40, 90, 200)
    img[rows & (color == 1)[None, :]] = (200, 60, 40)
    return img


def _served(stats: tuple[float, float, int]) -> dict:
    misinfo, cross, n = stats
    return {
        "impressions": n,
        "misinfo_impressions": int(round(misinfo * n)),
        "misinfo_share": misinfo,
        "cross_cutting_share": cross,
    }


def _moderation_counts(sim) -> tuple[np.ndarray, int]:
    """Snapshot before a step: every post's moderation status and the suspended-user count."""
    pf = sim.platform
    return pf.p_status.a.copy(), int(pf.u_suspended.a.sum())


def _moderated_since(sim, before: tuple[np.ndarray, int]) -> dict:
    """Posts that entered each moderation status this step, and users suspended this step."""

    status, suspended = before
    pf = sim.platform
    now = pf.p_status.a[: len(status)]
    changed = now != status
    return {
        "label": int((changed & (now == LABELLED)).sum()),
        "downrank": int((changed & (now == DOWNRANKED)).sum()),
        "remove": int((changed & (now == REMOVED)).sum()),
        "suspend": int(pf.u_suspended.a.sum()) - suspended,
    }


class _EpisodeStats:
    """Running totals of one episode, summarized when it ends (`info["episode_metrics"]`)."""

    def __init__(self):
        self.ret = 0.0
        self.steps = 0
        self.impressions = 0
        self.misinfo_impressions = 0
        self.engagements = 0

    def add(self, info: dict, reward: float) -> None:
        self.ret += reward
        self.steps += 1
        self.impressions += info["impressions"]
        self.misinfo_impressions += info["misinfo_impressions"]
        self.engagements += info["engagements"]

    def summary(self, sim) -> dict:
        return {
            "return": self.ret,
            "steps": self.steps,
            "impressions": self.impressions,
            "misinfo_impressions": self.misinfo_impressions,
            "misinfo_share": self.misinfo_impressions / max(self.impressions, 1),
            "engagement_rate": self.engagements / max(self.impressions, 1),
            **moderation_outcome(sim),
        }


def moderation_outcome(sim) -> dict:
    """Who the moderation hit: shares of misinformation / true / unlabelled original posts
    (quotes included, reposts excluded) with any moderation status."""

    pf = sim.platform
    original = pf.p_kind.a != REPOST
    acted = pf.p_status.a > 0
    label = pf.p_label.a

    def share(sel: np.ndarray) -> float:
        sel = sel & original
        return float(acted[sel].mean()) if sel.any() else 0.0

    return {
        "misinfo_actioned_share": share(label == MISINFO_LABEL),
        "true_actioned_share": share(label == TRUE_LABEL),
        "non_misinfo_actioned_share": share(label != MISINFO_LABEL),
        "posts_actioned": int((acted & original).sum()),
    }


def _merged_params(scenario: Any, env_params: dict, learner: str, learner_params: dict | None) -> dict:
    """{"recommender": {...}, "moderator": {...}}: the scenario's platform agent parameters,
    then the env argument's (`platform_agent_params`), then the learner's (`agent_params`)."""
    params = {k: dict(v) for k, v in (scenario.agent_params if scenario is not None else {}).items()}
    for key, value in env_params.items():
        params[key] = {**params.get(key, {}), **value}
    key = learner.split("_")[0]
    params[key] = {**params.get(key, {}), **(learner_params or {})}
    return params


def make_scenario(scenario: Any, **params: Any) -> Any:
    """A platform-agent scenario: by registered name (`oasis_gym.SCENARIOS`; params set its
    fields), an instance (copied with params), or None."""
    if scenario is None:
        return None
    if isinstance(scenario, str):
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; choose from {sorted(SCENARIOS)}")
        return load_entry_point(SCENARIOS[scenario])(**params)
    return replace(scenario, **params) if params else scenario


def register_gym_envs() -> None:
    """Register `oasis_gym/Recommender-v0` and `oasis_gym/Moderator-v0` with Gymnasium (done
    by `import oasis_gym`, from its one table; kept for explicit callers). Idempotent."""
    _register()
