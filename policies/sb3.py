"""SB3Policy: a stable-baselines3 model as an oasis-gym policy.

One class serves both kinds of agents:

* **Platform agents** (`recommender_0`, `moderator_0`): `policy(sim)` returns the agent's
  action from `sim.platform_obs[agent]`, so a trained model plugs in wherever a fixed rule
  does (`ModeratorEnv(recommender=SB3Policy.load(...))`, `RecommenderEnv(moderator=...)`),
  and `platform_actions(env)` gives the dict `SocialMediaEnv.step_batch` takes.
* **Users**: `act(env, obs: ObsBatch) -> ActionArrays` (the batched `Policy` protocol). Each
  user's observation is flattened exactly as `gymnasium.spaces.flatten` flattens the
  env's user observation space (a `Dict`, whose keys Gymnasium keeps sorted):
  action_mask.comment (K*C), action_mask.post (K), action_mask.type (23),
  action_mask.user (U), active (1), comment_ids (K*C), comments (K*C*5), feed (K*16),
  post_ids (K), self (6), user_ids (U), users (U*4) -- as float32 rows (ids included as
  numbers, -1 for empty slots). The model's action space must be
  `MultiDiscrete([23, K, K*C, U])` = (type, post slot, comment slot, user slot), the
  env's 4-array action form; `user_model_spaces(env)` returns both spaces. Action types
  the observation's mask rules out become do_nothing (`respect_mask=True`).

Observation normalization: if training used `VecNormalize`, pass its statistics
(`train.ppo.save_obs_normalizer` writes them next to the model; `SB3Policy.load` picks
up `<model>.obs_norm.npz` or an explicit `normalizer=` path) so the policy acts on raw
env observations exactly as the model saw them in training.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gymnasium import spaces

from oasis_gym.actions import NUM_ACTIONS
from oasis_gym.actions import ActionType as A
from oasis_gym.sim import ActionArrays, ObsBatch

from .base import BasePolicy, sim_of

__all__ = ["SB3Policy", "flatten_user_obs", "user_model_spaces", "normalizer_path"]

_ALGOS = ("PPO", "A2C", "DQN", "SAC", "TD3", "DDPG")


def flatten_user_obs(obs: ObsBatch) -> np.ndarray:
    """(n, D) float32: row i equals `spaces.flatten(user_space, env.row_observation(obs, i))`."""
    n = len(obs)
    parts = [
        obs.mask_comment,
        obs.mask_post,
        obs.mask_type,
        obs.mask_user,
        np.ones((n, 1)),
        obs.comment_ids,
        obs.comments,
        obs.feed,
        obs.post_ids,
        obs.self_feats,
        obs.user_ids,
        obs.user_feats,
    ]
    return np.concatenate([np.asarray(p, dtype=np.float32).reshape(n, -1) for p in parts], axis=1)


def user_model_spaces(env) -> tuple[spaces.Box, spaces.MultiDiscrete]:
    """(observation, action) spaces a user-driving model must have for a `SocialMediaEnv`."""
    sim = env.sim
    dim = spaces.flatdim(env.observation_space(env.possible_agents[0]))
    return (
        spaces.Box(-np.inf, np.inf, (dim,), np.float32),
        spaces.MultiDiscrete([NUM_ACTIONS, sim.K, sim.K * sim.C, sim.U]),
    )


def normalizer_path(model_path: str | Path) -> Path:
    """Where the observation statistics of a saved model live: `<model stem>.obs_norm.npz`."""
    p = Path(model_path)
    return p.with_name(p.name.removesuffix(".zip") + ".obs_norm.npz")


class SB3Policy(BasePolicy):
    """Wrap a trained SB3 model (see the module docstring)."""

    name = "sb3"

    def __init__(
        self,
        model,
        agent: str | None = None,
        deterministic: bool = True,
        normalizer: dict | str | Path | None = None,
        respect_mask: bool = True,
    ):
        self.model = model
        self.agent = agent
        self.deterministic = deterministic
        self.respect_mask = respect_mask
        self._norm = _load_normalizer(normalizer)

    @classmethod
    def load(
        cls,
        path: str | Path,
        algo: str | type = "PPO",
        agent: str | None = None,
        normalizer: dict | str | Path | None = None,
        device: str = "cpu",
        **kwargs,
    ) -> SB3Policy:
        """Load a model saved by `model.save(path)`; its `.obs_norm.npz` is used if present."""
        import stable_baselines3 as sb3

        if isinstance(algo, str):
            if algo.upper() not in _ALGOS:
                raise ValueError(f"algo must be one of {_ALGOS} or an SB3 class, got {algo!r}")
            algo = getattr(sb3, algo.upper())
        model = algo.load(str(path), device=device)
        if normalizer is None and normalizer_path(path).exists():
            normalizer = normalizer_path(path)
        return cls(model, agent=agent, normalizer=normalizer, **kwargs)

    # ------------------------------------------------------------------ core
    def normalize(self, obs: np.ndarray) -> np.ndarray:
        """Observations scaled by the saved VecNormalize statistics (unchanged without them)."""
        if self._norm is None:
            return np.asarray(obs, dtype=np.float32)
        n = self._norm
        x = (np.asarray(obs, dtype=np.float64) - n["mean"]) / np.sqrt(n["var"] + n["epsilon"])
        return np.clip(x, -n["clip_obs"], n["clip_obs"]).astype(np.float32)

    def predict(self, obs: np.ndarray) -> np.ndarray:
        """Actions for a batch of raw observations (n, D), or one observation (D,)."""
        action, _ = self.model.predict(self.normalize(obs), deterministic=self.deterministic)
        return action

    # ------------------------------------------------------------------ platform agents
    def __call__(self, sim) -> np.ndarray:
        """The platform agent's action for the current step (usable as a fixed rule)."""
        if self.agent is None:
            raise ValueError("this SB3Policy drives users; pass agent='recommender_0' or 'moderator_0'")
        return self.predict(sim.platform_obs[self.agent])

    def platform_actions(self, env) -> dict:
        """{agent: action} for `SocialMediaEnv.step_batch(acts, platform_actions)`."""
        return {self.agent: self(sim_of(env))}

    # ------------------------------------------------------------------ users
    def act(self, env, obs: ObsBatch) -> ActionArrays:
        """The model's action per user; with `respect_mask`, a type the mask forbids becomes do_nothing."""
        n = len(obs)
        if n == 0:
            return ActionArrays.empty()
        a = np.asarray(self.predict(flatten_user_obs(obs)), dtype=np.int64).reshape(n, -1)
        if a.shape[1] != 4:
            raise ValueError(f"a user model must output (type, post, comment, user); got {a.shape[1]} values")
        typ = a[:, 0]
        if self.respect_mask:
            allowed = obs.mask_type[np.arange(n), np.clip(typ, 0, NUM_ACTIONS - 1)] > 0
            typ = np.where(allowed & (typ >= 0) & (typ < NUM_ACTIONS), typ, int(A.DO_NOTHING))
        return ActionArrays(obs.users, typ, a[:, 1], a[:, 2], a[:, 3])


def _load_normalizer(normalizer) -> dict | None:
    if normalizer is None:
        return None
    if isinstance(normalizer, (str, Path)):
        with np.load(normalizer) as f:
            normalizer = {k: f[k] for k in f.files}
    out = {
        "mean": np.asarray(normalizer["mean"], dtype=np.float64),
        "var": np.asarray(normalizer["var"], dtype=np.float64),
        "clip_obs": float(normalizer.get("clip_obs", 10.0)),
        "epsilon": float(normalizer.get("epsilon", 1e-8)),
    }
    return out
