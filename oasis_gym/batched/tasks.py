"""The v1 platform-agent tasks on the batched engine: observations, actions, rewards of K episodes.

A task owns an `Engine` of K simulations and turns its per-simulation counts into what a
learner sees. Both tasks step all K episodes at once (`step`), optionally only some of
them (`stepping`, for the vector env's autoreset), and start new episodes in any rows
(`reset`). The envs (`envs/recommender_v1.py`, `envs/moderator_v1.py`) add the spaces,
seeding and autoreset; nothing here imports gymnasium.

A step's info holds every per-episode count, the hidden truth's too (`PRIVILEGED_INFO`: what is
split by the labels or reads the users' hidden state); the envs hand a learner only the rest
(`learner_info`), the privileged keys only to an evaluation that asks (`privileged_info=True`).
"""

from __future__ import annotations

import numpy as np

from ..model import moderation
from ..model.observations import (
    MODERATOR_GLOBALS,
    RECOMMENDER_STEP_FEATURES,
    moderator_globals,
    recommender_obs,
    recommender_reset_obs,
)
from ..model.ranking import CANDIDATE_FEATURES, DEFAULT_WEIGHTS, global_weights, user_feature_names
from ..model.rewards import ModeratorReward, RecommenderReward, linear_reward
from .engine import Engine
from .moderation import features, queue

# the recommender's observation: the step's features, then the candidate pool's mean features
RECOMMENDER_OBS = (*RECOMMENDER_STEP_FEATURES, *(f"pool_{f}" for f in CANDIDATE_FEATURES))

# info values computed from the hidden truth: misinformation labels (and the counts split by them),
# the campaign regime, the users' satisfaction and churn. An evaluation's diagnostics, never a learner's.
PRIVILEGED_INFO = frozenset(
    {"misinfo_impressions", "misinfo_share", "campaign", "satisfaction", "churned",
     "removed_misinfo", "removed_true", "suspended_misinfo", "suspended_true"}
)  # fmt: skip


def learner_info(info: dict, privileged: bool = False) -> dict:
    """A step's info as an env hands it out: without the `PRIVILEGED_INFO` keys unless `privileged`."""
    return dict(info) if privileged else {k: v for k, v in info.items() if k not in PRIVILEGED_INFO}


class _Task:
    """What both tasks share: the engine, the episode clock, per-episode opinion baselines."""

    def __init__(self, k: int, users: int, difficulty: str, population_seed: int, max_steps: int, population=None,
                 version: int = 1, task: str = "recommender"):  # fmt: skip
        for name, value, low in (
            ("num_envs", k, 1),
            ("max_steps", max_steps, 1),
            ("population_seed", population_seed, 0),
        ):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        self.engine = Engine(k, users, difficulty, population_seed, population=population, version=version, task=task)
        self.k, self.n, self.max_steps = self.engine.k, self.engine.n, int(max_steps)
        self._prev_std = np.zeros(self.k, np.float32)

    @property
    def state(self):
        return self.engine.state

    def reset(self, rows: np.ndarray, seeds: np.ndarray) -> None:
        """New episodes in `rows`."""
        self.engine.reset(rows, seeds)
        self._prev_std[rows] = self.state.opinion_std0[rows]

    def _common(self, out: dict) -> dict:
        """Per-episode info values of one step, (K,) arrays."""
        n = float(self.n)
        return {
            "engagements": out["engagements"] / n,
            "misinfo_impressions": out["misinfo_impressions"] / n,
            "misinfo_share": out["misinfo_impressions"] / np.maximum(out["impressions"], 1),
            "visitors": out["active"] / n,
            "churned": out["churned"],
            "satisfaction": out["satisfaction"],
            "opinion_std": out["opinion_std"],
            "campaign": out["campaign"].astype(np.float32),
        }


class RecommenderTask(_Task):
    """Recommender-v1's (`version=N`: vN's) logic: the action is the ranking W (per-user) or w (global)."""

    def __init__(self, k, users=1000, difficulty="medium", population_seed=0, max_steps=100, ranking="per_user",
                 reward: RecommenderReward | None = None, population=None, version: int = 1):  # fmt: skip
        if ranking not in ("per_user", "global"):
            raise ValueError(f"ranking must be 'per_user' or 'global', got {ranking!r}")
        super().__init__(k, users, difficulty, population_seed, max_steps, population, version)
        self.ranking = ranking
        self.reward_params = reward or RecommenderReward()
        self.user_features = user_feature_names(self.engine.dynamics)
        self.weight_shape = (len(self.user_features), len(CANDIDATE_FEATURES))
        rows, cols = self.weight_shape
        self.action_size = rows * cols if ranking == "per_user" else cols
        self.obs_size = len(RECOMMENDER_OBS)

    def weights(self, actions: np.ndarray) -> np.ndarray:
        """Ranking weights (K, Z, 9) of actions (K, action_size) in [-1, 1] (clipped)."""
        a = np.clip(np.asarray(actions, np.float32).reshape(self.k, -1), -1.0, 1.0)
        if self.ranking == "per_user":
            return a.reshape(self.k, *self.weight_shape)
        w = np.zeros((self.k, *self.weight_shape), np.float32)
        w[:, 0] = a
        return w

    def reset_obs(self, rows: np.ndarray) -> np.ndarray:
        """Observations of freshly reset rows: no flows yet, the opinions, time 0."""
        return recommender_reset_obs(self.state.opinion[rows], self.obs_size)

    def step(self, actions: np.ndarray, stepping: np.ndarray | None = None):
        """One step of the episodes in `stepping` (all if None): obs, reward, info arrays."""
        out = self.engine.step(self.weights(actions), stepping=stepping)
        st = self.state
        obs = recommender_obs(out, st.opinion, st.opinion_std0, st.t, st.last_visit, self.max_steps)
        info = self._common(out)
        info["polarization_increase"] = out["opinion_std"] - self._prev_std
        self._prev_std = np.where(self._stepped(stepping), out["opinion_std"], self._prev_std).astype(np.float32)
        reward = linear_reward(info, self.reward_params.weights())
        return obs, reward.astype(np.float32), info

    def _stepped(self, stepping):
        return np.ones(self.k, bool) if stepping is None else np.asarray(stepping, bool)


class ModeratorTask(_Task):
    """Moderator-v1's (`version=2`: v2's) logic: the action is one code per review-queue slot."""

    def __init__(self, k, users=1000, difficulty="medium", population_seed=0, max_steps=100,
                 reward: ModeratorReward | None = None, population=None, version: int = 1):  # fmt: skip
        super().__init__(k, users, difficulty, population_seed, max_steps, population, version, "moderator")
        self.engine.pool_means = False  # its observation is the queue's: the feeds' pools are never read
        self.reward_params = reward or ModeratorReward()
        self.queue_size, self.n_codes = moderation.QUEUE, len(moderation.ACTIONS)
        self.obs_size = moderation.QUEUE * len(moderation.QUEUE_FEATURES) + len(MODERATOR_GLOBALS)
        self.queue_ids = np.full((self.k, moderation.QUEUE), -1, np.int64)
        w = global_weights(DEFAULT_WEIGHTS, len(user_feature_names(self.engine.dynamics)))
        self._weights = np.broadcast_to(w, (self.k, *w.shape))

    def reset(self, rows, seeds) -> None:
        """New episodes in `rows`, their review queues empty."""
        super().reset(rows, seeds)
        self.queue_ids[rows] = -1

    def reset_obs(self, rows: np.ndarray) -> np.ndarray:
        """Observations of freshly reset rows (their queues are made now)."""
        return self.observe(rows)[rows]

    def observe(self, rows=None) -> np.ndarray:
        """Observations (K, obs_size) of the review queues now (and remember the queues)."""
        st = self.state
        ids = queue(st)
        if rows is not None:
            keep = np.ones(self.k, bool)
            keep[rows] = False
            ids = np.where(keep[:, None], self.queue_ids, ids)
        self.queue_ids = ids
        x = features(st, ids).reshape(self.k, -1)
        budget = st.dyn.fact_check_budget
        g = moderator_globals(st.t, self.max_steps, st.reports, st.impressions, budget, moderation.QUEUE)
        return np.concatenate([x, g], axis=1)

    def step(self, codes: np.ndarray, stepping: np.ndarray | None = None):
        """Apply the codes to the queues last observed, step, observe: obs, reward, info."""
        codes = np.asarray(codes, np.int64).reshape(self.k, moderation.QUEUE)
        out = self.engine.step(self._weights, self.queue_ids, codes, stepping=stepping)
        info = self._common(out)
        terms = {**info, "false_positives": out["removed_true"] + 10 * out["suspended_true"]}
        reward = linear_reward(terms, self.reward_params.weights())
        for name in ("fact_checks", "removed_misinfo", "removed_true", "suspended_misinfo", "suspended_true"):
            info[name] = out[name].astype(np.float32)
        obs = self.observe()
        return obs, reward.astype(np.float32), info
