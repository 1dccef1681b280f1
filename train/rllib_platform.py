"""RLlib's env adapter for the platform agents: the PettingZoo env of `recommender_0` (and `moderator_0`).

The driver is `train/rllib.py` (``python -m oasis_gym.train.rllib platform [--with-moderator]``);
this module holds only what this env needs. RLlib sees the simulation through
`ray.rllib.env.wrappers.pettingzoo_env.ParallelPettingZooEnv` wrapped around
`PlatformAgentsParallelEnv`, a PettingZoo `ParallelEnv` whose agents are the platform agents only:

* the **users are fixed**: they are driven inside the env, in one batched call per step, by
  the scenario's user policy (ABM users who report; any `Policy` factory can replace it).
  Exposing 1 000 users as RLlib agents would make RLlib build and step 1 000 per-agent
  observation dicts per step for agents that never learn;
* `recommender_0` is **learned** (RLModule "recommender", in `policies_to_train`);
* `moderator_0` is either off, driven by a fixed rule inside the env (`moderator_rule=
  "report_threshold"`), or -- with `learn_moderator` (`--with-moderator`) -- a second learned
  module ("moderator"), so the policy mapping sends each platform agent to its own module.

Spaces, rewards and the scenario are exactly those of `oasis_gym/Recommender-v0` (see
`oasis_gym.envs.recommender_v0`), so SB3 and RLlib results are comparable.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv

from oasis_gym.agents import ModeratorAgent, RecommenderAgent
from oasis_gym.envs import agent_spaces
from oasis_gym.envs.moderator_v0 import ModeratorEnv
from oasis_gym.envs.recommender_v0 import RecommenderEnv
from oasis_gym.model.ranking import V0_DEFAULT_WEIGHTS
from oasis_gym.model.seeds import draw_training_seed

ENV_NAME = "oasis_platform_agents"
# PPO's settings where the caller gives none (the driver's `build_config`)
DEFAULTS = {"train_batch_size": 200, "minibatch_size": 100, "num_epochs": 5, "lr": 3e-4, "gamma": 0.9,
            "num_envs_per_env_runner": 1}  # fmt: skip

POLICY_OF_AGENT = {"recommender_0": "recommender", "moderator_0": "moderator"}
AGENTS = tuple(POLICY_OF_AGENT)  # the learning curve's series, in this order
_INSTANCES = itertools.count()  # PlatformAgentsParallelEnv instances made in this process


def policy_mapping_fn(agent_id: str, episode: Any = None, **kwargs) -> str:
    """recommender_0 -> the "recommender" module, moderator_0 -> "moderator"."""
    return POLICY_OF_AGENT[agent_id]


class PlatformAgentsParallelEnv(ParallelEnv):
    """The platform agents of a scenario as a PettingZoo ParallelEnv (users driven inside)."""

    metadata = {"name": "oasis_platform_agents_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(
        self,
        users=None,
        max_cycles: int | None = None,
        scenario=None,
        learn_moderator: bool = False,
        moderator_rule: str | None = None,
        seed: int | None = 0,
        worker_index: int = 0,
        **env_kwargs,
    ):
        # the single-agent env supplies the scenario, users and fixed rules; this class only
        # exposes its platform agents side by side. scenario None: the single-agent env's
        # default (Recommender-v0: misinfo_stream; with the moderator learning, Moderator-v0's
        # misinfo_brigading), so RLlib trains on what SB3 trains on
        base = RecommenderEnv if not learn_moderator else ModeratorEnv
        extra = {"recommender": _LearnedSlot()} if learn_moderator else {"moderator": moderator_rule}
        if scenario is not None:
            extra["scenario"] = scenario
        if "journal" not in env_kwargs and env_kwargs.get("db_path") in (None, ":memory:"):
            env_kwargs["journal"] = False  # the training mode: the same episodes, nothing written
        self._gym = base(users=users, max_cycles=max_cycles, **extra, **env_kwargs)
        self.possible_agents = ["recommender_0"] + (["moderator_0"] if learn_moderator else [])
        self.agents: list[str] = []
        self._spaces = {"recommender_0": _agent_spaces("recommender", self._gym)}
        if learn_moderator:
            self._spaces["moderator_0"] = (self._gym.observation_space, self._gym.action_space)
        # every env instance draws its episodes from a stream of its own, keyed by the run's
        # seed, the env runner (worker index) and the instance's number in its process (RLlib
        # makes a runner's sub-envs one after another): no two sub-envs of a run replay the
        # same episodes, and all are training seeds (>= TRAIN_SEEDS_FROM), never evaluation ones
        self._stream_key = (int(worker_index), next(_INSTANCES))
        self._stream = self._seed_stream(seed)
        self.episode_seeds: list[int] = []  # the episode seeds this env played, in order

    def observation_space(self, agent: str):
        """The observation space of one platform agent."""
        return self._spaces[agent][0]

    def action_space(self, agent: str):
        """The action space of one platform agent."""
        return self._spaces[agent][1]

    def _seed_stream(self, seed: int | None) -> np.random.Generator:
        return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=self._stream_key))

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start the next training episode; the platform agents' first observations. A `seed`
        seeds this env's stream of episode seeds (as Gymnasium's `reset(seed=)` seeds an env's
        generator): the episode seed itself is drawn from the stream, in the training range
        [TRAIN_SEEDS_FROM, 2**31), disjoint from every evaluation seed."""
        if seed is not None:
            self._stream = self._seed_stream(int(seed))
        episode_seed = draw_training_seed(self._stream)
        self.episode_seeds.append(episode_seed)
        self._gym.reset(seed=episode_seed)
        self.agents = list(self.possible_agents)
        return self._observations(), {a: {} for a in self.agents}

    def step(self, actions: dict):
        """One step: the platform agents' actions, the background users' own; PettingZoo's five dicts."""
        env = self._gym
        sim = env.sim
        if "moderator_0" in self.possible_agents:
            env._recommender.action = np.asarray(actions["recommender_0"], dtype=np.float32)
            learner_action = actions["moderator_0"]
        else:
            learner_action = actions["recommender_0"]
        _, _, _, truncated, info = env.step(learner_action)
        out = sim.last_outcome
        rewards = {a: float(out.platform_rewards[a]) for a in self.agents}
        obs = self._observations()
        infos = {a: {k: info[k] for k in ("misinfo_share", "engagement_rate", "opinion_std")} for a in self.agents}
        terminations = dict.fromkeys(self.agents, False)
        truncations = dict.fromkeys(self.agents, bool(truncated))
        if truncated:
            self.agents = []
        return obs, rewards, terminations, truncations, infos

    def _observations(self) -> dict:
        return {a: np.asarray(self._gym.sim.platform_obs[a], dtype=np.float32) for a in self.possible_agents}

    def close(self) -> None:
        """Close the underlying env and its journal."""
        self._gym.close()


class _LearnedSlot:
    """Rule stand-in for a platform agent whose action comes from RLlib this step."""

    action: np.ndarray | None = None

    def __call__(self, sim) -> np.ndarray:
        return (
            self.action
            if self.action is not None
            else sim.platform_agents["recommender_0"].weights_action(V0_DEFAULT_WEIGHTS)
        )


def _agent_spaces(kind: str, gym_env) -> tuple:
    agent = RecommenderAgent() if kind == "recommender" else ModeratorAgent(**gym_env.agent_params)
    return agent_spaces.observation_space(agent), agent_spaces.action_space(agent)


def played_episode_seeds(runner) -> list[tuple[int, list[int]]]:
    """(worker index, episode seeds played) of every sub-env of an RLlib env runner: pass it
    to `algo.env_runner_group.foreach_env_runner(played_episode_seeds, local_env_runner=False)`
    to check which episodes a run trained on."""
    out = []
    for sub in runner.env.unwrapped.envs:
        env = sub
        while not hasattr(env, "par_env"):  # gymnasium wrappers around RLlib's ParallelPettingZooEnv
            env = env.env
        out.append((int(runner.worker_index), list(env.par_env.episode_seeds)))
    return out


def make_env(env_config: dict):
    """RLlib env creator: ParallelPettingZooEnv around PlatformAgentsParallelEnv."""
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    worker = getattr(env_config, "worker_index", 0)  # an EnvContext: which env runner makes it
    return ParallelPettingZooEnv(PlatformAgentsParallelEnv(**{"worker_index": worker, **env_config}))


def env_config_of(env_config: dict, seed: int) -> dict:
    """The env_config RLlib hands `make_env`: `env_config` with the run's `seed` (the seed of
    every sub-env's stream of episode seeds)."""
    return {**env_config, "seed": seed}


def configure(config, env_config: dict):
    """This env's part of RLlib's `PPOConfig` (`config`): one RLModule per platform agent,
    only the learned ones trained."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    learned = ["recommender"] + (["moderator"] if env_config.get("learn_moderator") else [])
    return config.multi_agent(
        policies=set(learned), policy_mapping_fn=policy_mapping_fn, policies_to_train=learned
    ).rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={p: RLModuleSpec() for p in learned}))
