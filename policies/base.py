"""The policy protocol: one batched call per step with all of a policy's active users.

A policy answers `act(env, obs) -> ActionArrays` where `obs` is an `ObsBatch` holding the
observations of exactly the users it drives that are active this step (rows in user-id
order). Stateful policies reset in `reset(env, users, seed)`. Anyone's code plugs in:
`FunctionPolicy` wraps a per-agent function on PettingZoo dict observations, and
`DictPolicy` a function answering a whole dict of observations at once.

The `env` argument of `reset` / `act` is whatever runs the policy: a PettingZoo
`SocialMediaEnv` (or any env with a `.sim`, e.g. a platform-agent env), or the `Simulation`
itself when a caller drives it directly. A policy reads the simulation with `sim_of(env)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from oasis_gym.sim import ActionArrays, ObsBatch
from oasis_gym.sim.action_values import actions_from_dicts

if TYPE_CHECKING:
    from oasis_gym.sim import Simulation


def sim_of(env) -> Simulation:
    """The `Simulation` behind a policy's `env` argument: `env.sim`, or `env` when it is one."""
    return getattr(env, "sim", env)


@runtime_checkable
class Policy(Protocol):
    """What a user policy is: one batched `act` per step; `reset` at every episode."""

    def reset(self, env, users: np.ndarray, seed: int | None) -> None:
        """Start an episode driving `users` (ids), with this seed."""
        ...

    def act(self, env, obs: ObsBatch) -> ActionArrays:
        """The actions of the active users in `obs`, one row each, in `obs.users` order."""
        ...


class BasePolicy:
    """Stateless defaults; subclasses override `act` (and `reset` when they keep state)."""

    name = "policy"

    def reset(self, env, users: np.ndarray, seed: int | None) -> None:
        """Seed the policy's generator for a new episode."""
        self.rng = np.random.default_rng(seed)

    def act(self, env, obs: ObsBatch) -> ActionArrays:  # pragma: no cover - abstract
        """The actions of the active users in `obs`."""
        raise NotImplementedError

    def state_dict(self) -> dict:
        """JSON-able state for checkpoints (the generator state by default)."""
        rng = getattr(self, "rng", None)
        return {"rng": rng.bit_generator.state} if rng is not None else {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what `state_dict` saved."""
        if "rng" in state:
            self.rng = np.random.default_rng()
            self.rng.bit_generator.state = state["rng"]


class PolicyWrapper:
    """A policy around an inner one, with a generator of its own for what it adds.

    Subclasses implement `act` (starting from `self.inner.act`). A checkpoint holds the inner
    policy's state under `state_key` and this wrapper's generator state.
    """

    state_key = "inner"

    def __init__(self, inner):
        self.inner = inner

    def reset(self, env, users: np.ndarray, seed: int | None) -> None:
        """Reset the inner policy and this wrapper's generator (independent seeds from `seed`)."""
        s_inner, s_own = np.random.SeedSequence(seed).spawn(2)
        self.inner.reset(env, users, int(s_inner.generate_state(1)[0]))
        self.rng = np.random.default_rng(s_own)

    def act(self, env, obs: ObsBatch) -> ActionArrays:  # pragma: no cover - abstract
        """The inner policy's actions, changed by the wrapper."""
        raise NotImplementedError

    def state_dict(self) -> dict:
        """JSON-able state: the inner policy's and this wrapper's generator."""
        inner = self.inner.state_dict() if hasattr(self.inner, "state_dict") else {}
        return {self.state_key: inner, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        """Restore what `state_dict` saved."""
        if hasattr(self.inner, "load_state_dict"):
            self.inner.load_state_dict(state.get(self.state_key, {}))
        if "rng" in state:
            self.rng = np.random.default_rng()
            self.rng.bit_generator.state = state["rng"]


def filled(acts: ActionArrays) -> ActionArrays:
    """A writable copy of `acts` with every column present (missing ones at their defaults:
    0, no text, NaN stance), for wrappers that change some rows."""
    return ActionArrays.concat([acts])


def sample_masked(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """One index per row, uniform over the row's 1s (0 when a row has none). Vectorized
    Gumbel-free trick: argmax of uniform noise restricted to the mask."""
    if mask.shape[1] == 0:
        return np.zeros(len(mask), dtype=np.int64)
    noise = rng.random(mask.shape)
    noise[mask == 0] = -1.0
    return noise.argmax(axis=1).astype(np.int64)


class RandomPolicy(BasePolicy):
    """Uniform over the action types the mask allows, then over the filled target slots."""

    name = "random"

    def act(self, env, obs: ObsBatch) -> ActionArrays:
        """A uniformly random allowed action per user."""
        rng = self.rng
        return ActionArrays(
            obs.users,
            sample_masked(rng, obs.mask_type),
            sample_masked(rng, obs.mask_post),
            sample_masked(rng, obs.mask_comment),
            sample_masked(rng, obs.mask_user),
        )


class DictPolicy(BasePolicy):
    """Wrap `fn(observations: dict[agent, obs dict], env) -> dict[agent, action]`."""

    def __init__(self, fn: Callable[[dict, Any], Mapping], name: str = "dict"):
        self.fn, self.name = fn, name

    def act(self, env, obs: ObsBatch) -> ActionArrays:
        """Ask `fn` for the whole batch as PettingZoo dicts; convert the answers to columns."""
        agents = [f"user_{u}" for u in obs.users.tolist()]
        observations = {a: env.row_observation(obs, i) for i, a in enumerate(agents)}
        answers = self.fn(observations, env) if agents else {}
        return actions_from_dicts(obs.users, [answers.get(a, 0) for a in agents])


class FunctionPolicy(DictPolicy):
    """Wrap a per-agent `fn(agent, observation, env) -> action` (int or action dict)."""

    def __init__(self, fn: Callable[[str, dict, Any], Any], name: str = "function"):
        super().__init__(lambda observations, env: {a: fn(a, o, env) for a, o in observations.items()}, name)


def check_actions(acts: ActionArrays, obs: ObsBatch) -> None:
    """Guard for policy authors: a policy must answer for exactly its users."""
    if len(acts) != len(obs) or not np.array_equal(np.asarray(acts.users), obs.users):
        raise ValueError(f"policy answered for {len(acts)} users, expected its {len(obs)} active users in order")
