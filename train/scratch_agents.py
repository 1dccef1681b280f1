"""The agents `oasis-gym scratch` trains from scratch (no anchor, no supervised start), how each is
built, played greedily, and checkpointed so that a continued run equals an uninterrupted one.

Every agent trains on the task's native vector env as `oasis-gym train` does (`v1.sb3_vec_env`,
no anchor, under VecMonitor and `ppo.normalized`'s VecNormalize), torch at one thread, with the
libraries' defaults except where a setting is stated here:

- `ppo`: SB3's PPO with its MlpPolicy (both tasks).
- `framestack_ppo`: SB3's PPO with its MlpPolicy on the last `STACK` observations (SB3's
  VecFrameStack over the normalized ones; zeros before an episode's first): memory for a state
  the observation hides (campaigns, adversaries) at PPO's speed. The table's memory agent.
- `recurrent_ppo`: sb3-contrib's RecurrentPPO with MlpLstmPolicy (both tasks): memory by an LSTM.
  Not a default agent: its updates run the LSTM one step at a time in Python over every
  minibatch's sequences (sb3-contrib's `_process_sequence` where a sequence holds an episode
  start), about 4x slower than PPO here (151 against 652 timesteps/s on Moderator-v2 hard, 1,000
  users, one core, the same load), so 2M timesteps take about 4 hours a seed on this machine.
- `sac`: SB3's SAC (the recommender's continuous ranking action only).
- `slot_ppo`: PPO with the slot-shared actor-critic (`train/slot_policy.py`; the moderator
  only), every code's logit starting equal (`first_bias` 0: no preference for "none").

The default agents (`--agents` unset) are the protocol's three per task: `ppo`, `framestack_ppo`
and `sac` (recommender) or `slot_ppo` (moderator).

Stated settings, and why:

- Every PPO agent and RecurrentPPO collect 2048 transitions per rollout in all (`n_steps` = 2048
  // envs per env): SB3's default rollout for one env. Its `n_steps` 2048 per env would make 65,536
  transitions a rollout with 32 envs, 30 updates in 2M timesteps.
- SAC takes one gradient step per transition (`gradient_steps=-1`: as many as the vector env's
  step collected), the update-to-data ratio of SB3's default with one env; its default 1 step per
  call of the vector env would give 32 envs one update per 32 transitions.

Checkpoints (`snapshot` / `restore`): the model with its optimizer (SB3's zip, with the last
observation and episode starts and the timestep count; loaded with `force_reset=False`, else SB3
would reset the env), RecurrentPPO's LSTM states (its `load` zeroes them), VecNormalize's
statistics and discounted returns (its pickle drops them), the vector env itself (its episodes in
flight and seed chains: the native vector env pickles), VecMonitor's episode sums, the RNG states
(Python, NumPy, torch, the action space's: `load` reseeds them all), the frame stack's last
observations and SAC's replay buffer (about 4 bytes x (2 x obs + action + 3) per stored
transition, up to SB3's default 1M). Restored, the run goes on as the uninterrupted one: every
parameter equal, for each agent (tests/test_scratch.py).
"""

from __future__ import annotations

import io
import pickle
import random
from dataclasses import dataclass

import numpy as np

from oasis_gym.envs.vector_shards import cores
from oasis_gym.model import moderation
from oasis_gym.model.observations import MODERATOR_GLOBALS

from .ppo import SLOT, normalized, policy_class
from .v1 import sb3_vec_env

MONITOR = ("episode_returns", "episode_lengths")  # VecMonitor's sums of the episodes in flight
ROLLOUT = 2048  # transitions per (Recurrent)PPO rollout, all envs together: SB3's default with one env
STACK = 4  # framestack_ppo's observations: the last 4 (DQN's Atari stack, SB3's usual n_stack)


@dataclass(frozen=True)
class Agent:
    """One from-scratch agent: its name, the tasks it fits, what it is (one line), whether the
    protocol's table runs it by default."""

    name: str
    tasks: tuple[str, ...]
    text: str
    default: bool = True


AGENTS = {
    a.name: a
    for a in (
        Agent("ppo", ("recommender", "moderator"), "PPO, MLP (SB3)"),
        Agent("framestack_ppo", ("recommender", "moderator"), f"PPO, MLP on the last {STACK} observations (SB3)"),
        Agent("recurrent_ppo", ("recommender", "moderator"), "recurrent PPO, LSTM (sb3-contrib)", default=False),
        Agent("sac", ("recommender",), "SAC, off-policy, continuous actions (SB3)"),
        Agent("slot_ppo", ("moderator",), "PPO, slot-shared actor-critic (train/slot_policy.py)"),
    )
}
DEFAULT_AGENTS = {
    task: tuple(a for a, spec in AGENTS.items() if task in spec.tasks and spec.default)
    for task in ("recommender", "moderator")
}


def rollout(agent: str, n_envs: int, transitions: int = ROLLOUT) -> int:
    """Timesteps between two points where the agent may stop: a whole rollout of about `transitions`
    (PPO's; `n_envs` at least), SAC's one step of the vector env."""
    return n_envs if agent == "sac" else max(1, transitions // n_envs) * n_envs


def make_env(args):
    """The training env of a run (`args`: its `v1.Args`, anchor none): (VecNormalize, VecMonitor)."""
    from stable_baselines3.common.vec_env import VecMonitor

    monitor = VecMonitor(sb3_vec_env(args))
    return normalized(monitor, args.gamma), monitor


def _algorithm(agent: str):
    if agent == "recurrent_ppo":
        from sb3_contrib import RecurrentPPO

        return RecurrentPPO
    if agent == "sac":
        from stable_baselines3 import SAC

        return SAC
    from stable_baselines3 import PPO

    return PPO


def build(agent: str, vec, seed: int, n_envs: int, transitions: int = ROLLOUT):
    """A new model of `agent` on `vec` (its defaults and the module's stated settings; PPO's rollouts
    of `transitions`, `rollout`)."""
    cls, kw = _algorithm(agent), {"seed": seed, "device": "cpu", "verbose": 0}
    if agent == "sac":
        return cls("MlpPolicy", vec, gradient_steps=-1, **kw)
    n_steps = rollout(agent, n_envs, transitions) // n_envs
    if agent == "recurrent_ppo":
        return cls("MlpLstmPolicy", vec, n_steps=n_steps, **kw)
    if agent == "slot_ppo":
        slots = {"n_slots": moderation.QUEUE, "n_global": len(MODERATOR_GLOBALS), "first_bias": 0.0}
        return cls(policy_class(SLOT), vec, n_steps=n_steps, policy_kwargs=slots, **kw)
    return cls("MlpPolicy", _stacked(vec) if agent == "framestack_ppo" else vec, n_steps=n_steps, **kw)


def _stacked(vec):
    """framestack_ppo's env: the last `STACK` normalized observations of `vec`, oldest first."""
    from stable_baselines3.common.vec_env import VecFrameStack

    return VecFrameStack(vec, STACK)


def callbacks(agent: str, args) -> list:
    """The callbacks of an agent's training (`args`: the run's `v1.Args`): the slot policy's updates
    on as many torch threads as env workers, SAC's on two where there are two cores (its gradient
    steps are nearly all its time, the env idle meanwhile: 59-63 -> 71-74 timesteps/s on
    Recommender-v4 medium, quiet), by `callbacks.UpdateThreads` (no bit changes)."""
    from .callbacks import UpdateThreads

    if agent == "slot_ppo" and args.workers() > 1:
        return [UpdateThreads(args.workers())]
    return [UpdateThreads(2)] if agent == "sac" and cores() > 1 else []


def snapshot(agent: str, model, vec, monitor) -> dict:
    """Everything a run continues from (module docstring), as a picklable dict."""
    import torch

    buf = io.BytesIO()
    model.save(buf)
    state = {
        "model": buf.getvalue(),
        "normalize": pickle.dumps(vec),
        "returns": vec.returns.copy(),
        "env": pickle.dumps(monitor.venv),  # the SB3 adapter with the native vector env in it
        "monitor": {k: getattr(monitor, k).copy() for k in MONITOR},
        "rng": (random.getstate(), np.random.get_state(), torch.get_rng_state(), model.action_space.np_random),
    }
    if agent == "sac":
        state["replay_buffer"] = pickle.dumps(model.replay_buffer)
    if agent == "recurrent_ppo":  # (its zip has them, but `load` sets them to zeros again)
        state["lstm_states"] = pickle.dumps(model._last_lstm_states)
    if agent == "framestack_ppo":
        state["stack"] = model.get_env().stacked_obs.stacked_obs.copy()
    return state


def restore(agent: str, state: dict):
    """The (model, VecNormalize, VecMonitor) of `snapshot`, every RNG as it was."""
    import torch
    from stable_baselines3.common.vec_env import VecMonitor

    monitor = VecMonitor(pickle.loads(state["env"]))
    for k in MONITOR:
        setattr(monitor, k, state["monitor"][k].copy())
    vec = pickle.loads(state["normalize"])
    vec.set_venv(monitor)
    vec.returns = state["returns"].copy()
    # force_reset=False: keep the last observation (SB3 drops it by default, so the next rollout would reset
    # the env); `load` reseeds every RNG with the run's seed: their saved states are put back after it
    env = vec
    if agent == "framestack_ppo":
        env = _stacked(vec)
        env.stacked_obs.stacked_obs[...] = state["stack"]
    model = _algorithm(agent).load(io.BytesIO(state["model"]), env=env, device="cpu", force_reset=False)
    py, np_state, torch_state, space_rng = state["rng"]
    random.setstate(py)
    np.random.set_state(np_state)
    torch.set_rng_state(torch_state)
    model.action_space._np_random = space_rng
    if agent == "sac":
        model.replay_buffer = pickle.loads(state["replay_buffer"])
    if agent == "recurrent_ppo":
        model._last_lstm_states = pickle.loads(state["lstm_states"])
    return model, vec, monitor


class Greedy:
    """A trained agent as the protocol plays it: a callable from raw observations (K, obs) to its
    deterministic actions, through the run's observation statistics (and, for framestack_ppo, a
    stack of them as SB3's VecFrameStack builds it in training); `reset()` (called before each
    batch of episodes by `protocol.evaluate`, whose episodes start and end together) clears the
    agent's memory: an LSTM's states, the frame stack."""

    def __init__(self, model, vec):
        self.model, self.vec = model, vec
        self.recurrent = hasattr(model.policy, "lstm_actor")
        self.frames = model.observation_space.shape[-1] // vec.observation_space.shape[-1]
        self._state, self._start = None, True

    def reset(self) -> None:
        """Forget the episodes played so far (the next call starts new ones)."""
        self._state, self._start = None, True

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """The actions of a batch of observations."""
        x = self.vec.normalize_obs(obs)
        if self.frames > 1:
            x = self._stack(x)
        if not self.recurrent:
            self._start = False
            return self.model.predict(x, deterministic=True)[0]
        starts = np.full(len(obs), self._start)
        action, self._state = self.model.predict(x, self._state, starts, deterministic=True)
        self._start = False
        return action

    def _stack(self, x: np.ndarray) -> np.ndarray:
        """The last `frames` normalized observations, oldest first, zeros before an episode's first
        (SB3's `StackedObservations`, the one VecFrameStack keeps in training)."""
        from stable_baselines3.common.vec_env.stacked_observations import StackedObservations

        if self._start:
            self._state = StackedObservations(len(x), self.frames, self.vec.observation_space)
            return self._state.reset(x).copy()
        return self._state.update(x, np.zeros(len(x), bool), [{} for _ in x])[0].copy()

    def act_for(self, task):
        """`act_for(task) -> act(obs, t)`, as `protocol.play` takes it (new episodes: reset)."""
        self.reset()
        return lambda obs, t: self(obs)
