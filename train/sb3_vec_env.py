"""SB3's `VecEnv` over a native Gymnasium vector env of the v1 tasks: no subprocesses, no copies.

`LockstepSB3VecEnv(vector_env, anchor=None)` drives a `LockstepVectorEnv` in `SAME_STEP` autoreset mode
(what SB3 expects: a finished episode's last observation in
`infos[i]["terminal_observation"]`, the next episode's first in the returned batch) and
hands SB3 the batch as it is. Seeds follow SB3: `seed(s)` makes the next `reset()` start
env i with s + i; a reset without seeds continues each env's chain of training seeds. With
`group=G` (common random numbers, `callbacks.PairedAdvantages`), env i starts with s + i // G
instead, so each G envs in a row play the same episodes for as long as they run (the chain
of seeds is a function of the seed). An `anchor` (`train.anchored`) turns PPO's actions into
the env's, relative to a tuned baseline. It is the one SB3 adapter: the v0 platform envs have
no native vector env (each is one simulation), so `common.platform_vec_env` builds SB3's own
Dummy / SubprocVecEnv of single envs for them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv

from oasis_gym.model.seeds import TRAIN_SEEDS_FROM

from .anchored import NoAnchor


class LockstepSB3VecEnv(VecEnv):
    """SB3 VecEnv of a native v1 vector env (module docstring)."""

    def __init__(self, vector_env, anchor: NoAnchor | None = None, group: int = 1):
        if vector_env.autoreset_mode != AutoresetMode.SAME_STEP:
            raise ValueError("LockstepSB3VecEnv needs a vector env made with autoreset_mode=SAME_STEP")
        if group < 1 or vector_env.num_envs % group:
            raise ValueError(f"group must divide the number of envs ({vector_env.num_envs}), got {group}")
        self.group, self._reset_once = group, False
        self.venv, self.anchor = vector_env, anchor or NoAnchor()
        action_space = self.anchor.space(vector_env.single_action_space)
        super().__init__(vector_env.num_envs, vector_env.single_observation_space, action_space)
        self._actions: np.ndarray | None = None
        self._obs: np.ndarray | None = None  # the last raw observations (what an anchor's rule reads)

    def reset(self) -> np.ndarray:
        """Start every env: with the seeds of `seed()` if given (s + i, or s + i // group), else
        each env's next seed."""
        first = self._seeds[0]
        if first is None and self.group > 1 and not self._reset_once:  # groups share one seed (from the OS)
            first = TRAIN_SEEDS_FROM + int(np.random.SeedSequence().generate_state(1, np.uint64)[0]) % 2**40
        seeds = None if first is None else [int(first) + i // self.group for i in range(self.num_envs)]
        obs, info = self.venv.reset(seed=seeds)
        self._reset_once = True
        self._reset_seeds()
        self.reset_infos = [{"episode_seed": int(s)} for s in info["episode_seed"]]
        self._obs = obs
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Remember the env's actions (PPO's through the anchor; the step runs in `step_wait`)."""
        self._actions = self.anchor.env_action(actions, self._obs)

    def step_wait(self):
        """One batched step of all envs; finished ones restart in the same call."""
        obs, reward, terminated, truncated, info = self.venv.step(self._actions)
        self._obs = obs
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(dones):  # only at episode ends, once per episode
            infos[i] = {
                "terminal_observation": info["final_obs"][i],
                "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                "episode_seed": int(info["episode_seed"][i]),
            }
        return obs, reward.astype(np.float32), dones, infos

    def close(self) -> None:
        """Close the vector env."""
        self.venv.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        """The vector env's attribute, once per index (the envs share one object)."""
        return [getattr(self.venv, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        """Set an attribute of the vector env (shared by all indices)."""
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        """Call a vector env method once and return its result per index."""
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        """No env is wrapped (there are no per-env objects)."""
        return [False for _ in self._get_indices(indices)]
