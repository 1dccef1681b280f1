"""The Gymnasium side of the batched v1 tasks: a native vector env and the single env beside it.

`LockstepVectorEnv` is a `gymnasium.vector.VectorEnv` over one task of K episodes
(`oasis_gym.batched.tasks`): `step` advances all K in one call of batched numpy, with
Gymnasium 1.x autoreset (`AutoresetMode.NEXT_STEP` by default, `SAME_STEP` for SB3: the
final observation then goes to `infos["final_obs"]`). `LockstepEnv` is the single
`gymnasium.Env`: the same task with K = 1, so env i of a vector env reset with seed s + i
plays exactly the single env's episode with seed s + i (tested). Seeds: `reset(seed=s)`
gives env i the seed s + i (Gymnasium's convention); an episode that starts without a
seed, by autoreset or `reset()`, gets `next_episode_seed` of the one before (>= 2**20,
never an evaluation seed), in the single env and in each env of a vector env alike; the
first `reset()` without any seed draws from the OS.
`info["episode_seed"]` of a step is the seed of the episode that made it (with SAME_STEP,
the finished one's, not the one started in its place).
The single env of Recommender-v4 and Moderator-v2 also runs on the platform: `backend="platform"`
(`use_backend`; `journal=False` or `True`, `db_path=None`: an in-memory journal, `overwrite`) plays
the fast path's episode bit for bit (`tests/test_one_world.py`: every observation, reward and
info, three tiers, seeds 9000 and 9001, journal off and on) with the task's users, campaign bots,
brigaders and returning accounts as platform accounts acting through platform rows (a like is a
`like` row, OASIS's rules), the moderator's removals and suspensions as platform moderation, and
the likes, reposts, reports and followers the model reads counted by the platform
(`oasis_gym/world/sim_world.py`). The env's `world` is that backend (`SimWorld`: its platform,
simulation, maps and recommender; None on the fast path), the one way to reach it. Journaled,
each step is one transaction with the task's state; `LockstepEnv.resume()` continues an episode
from its journal exactly. The vector env is the fast path only.
`info` holds no label: the values computed from the hidden truth (`batched.tasks.PRIVILEGED_INFO`:
counts split by the misinformation labels, the campaign, the users' satisfaction and churn) are an
evaluation's diagnostic, in `info` only with `privileged_info=True` (never in a training path:
`tests/test_privileged_info.py`); observations and rewards are the same either way.
Both check a step's actions against their action space first (`agent_spaces.check_action`:
one vectorized check of the whole batch): a bad one is refused before anything changes.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

import oasis_gym
from oasis_gym import load_entry_point
from oasis_gym.batched.tasks import learner_info
from oasis_gym.checks import path_name
from oasis_gym.model.seeds import TRAIN_SEEDS_FROM, next_episode_seed
from oasis_gym.world.sim_world import SimWorld

from .agent_spaces import check_action

MAX_EPISODE_SEED = 2**62
BACKENDS = ("fast", "platform")


def check_backend(backend: str, journal: bool = False, db_path=None) -> None:
    """Refuse bad backend arguments (ValueError, one line) before anything is built."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    if not isinstance(journal, bool):
        raise ValueError(f"journal must be True or False, got {journal!r}")
    if backend == "fast" and (journal or db_path is not None):
        raise ValueError('journal and db_path need backend="platform" (the fast path journals nothing)')
    if db_path is not None and not journal:
        raise ValueError("db_path needs journal=True")
    if db_path is not None:
        path_name(os.fspath(db_path) if isinstance(db_path, os.PathLike) else db_path, "db_path")


def use_backend(task, backend: str, journal: bool = False, db_path=None, overwrite: bool = False,
                user_policy=None, policy_users=None) -> SimWorld | None:  # fmt: skip
    """Run a single env's task on `backend`: "fast" (the batched engine alone: None) or
    "platform" (the task on a `Simulation`'s split step, journaled with `journal=True` at
    `db_path`, a temporary file when None: the `oasis_gym.world.sim_world.SimWorld` returned, the
    env's `world`); its task users are `oasis_gym.TASK_USER_POLICY`, but `user_policy` (any user
    policy) drives `policy_users`."""
    check_backend(backend, journal, db_path)
    policy_users = check_policy_users(backend, task.n, user_policy, policy_users)
    if backend == "fast":
        return None
    task_users = load_entry_point(oasis_gym.TASK_USER_POLICY)()
    return SimWorld(task, task_users, journal, db_path, overwrite, user_policy, policy_users)


def check_policy_users(backend: str, n: int, user_policy, policy_users) -> np.ndarray | None:
    """Refuse a bad `user_policy` / `policy_users` (ValueError, one line); the users, sorted."""
    if user_policy is None:
        if policy_users is not None:
            raise ValueError("policy_users needs a user_policy (the policy that drives them)")
        return None
    if backend != "platform":
        raise ValueError('user_policy needs backend="platform" (the fast path\'s users are its own)')
    if not callable(getattr(user_policy, "act", None)):
        raise ValueError(f"user_policy must have act(env, obs) (a user policy), got {type(user_policy).__name__}")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        return None  # (the env refuses `users` itself)
    users = np.arange(n) if policy_users is None else np.asarray(policy_users)
    if users.ndim != 1 or not np.issubdtype(users.dtype, np.integer):
        raise ValueError("policy_users must be a list of user indexes (integers)")
    if len(users) and (users.min() < 0 or users.max() >= n):
        raise ValueError(f"policy_users must be user indexes in [0, {n}), got {users.min()}..{users.max()}")
    if len(np.unique(users)) != len(users):
        raise ValueError("policy_users names a user twice")
    return np.sort(users).astype(np.int64)


RENDER_MODES = ("ansi",)  # a line of text per episode: its step and the last step's values


def reset_seeds(seed, k: int) -> np.ndarray:
    """Episode seeds of k envs from a reset's `seed` (None, an int or k ints)."""
    if seed is None:
        return TRAIN_SEEDS_FROM + np.random.default_rng().integers(0, 2**40, k)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        seeds = np.arange(k, dtype=np.int64) + int(seed)
    else:
        seeds = np.asarray(list(seed))
        if seeds.shape != (k,) or not np.issubdtype(seeds.dtype, np.integer):
            raise ValueError(f"seed must be None, an int or {k} ints, got {seed!r}")
        seeds = seeds.astype(np.int64)
    if (seeds < 0).any() or (seeds >= MAX_EPISODE_SEED).any():
        raise ValueError(f"seeds must be in [0, 2**62), got {seed!r}")
    return seeds


class _Lockstep:
    """Shared by both envs: the task, its spaces and the episode seeds."""

    task_factory: Callable  # (k) -> task
    world: SimWorld | None = None  # the platform backend of a single env (`use_backend`), else None

    def _setup(self, k: int, task, single_action_space, privileged_info: bool = False) -> None:
        if not isinstance(privileged_info, bool):
            raise ValueError(f"privileged_info must be True or False, got {privileged_info!r}")
        self.privileged_info = privileged_info  # the hidden truth's values in info (evaluation only)
        self.task = task
        self.max_steps = task.max_steps
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (task.obs_size,), np.float32)
        self.single_action_space = single_action_space
        self.episode_seeds = np.full(k, -1, np.int64)

    seeds_played: list | None = None  # set a list to record every episode seed started

    def _set_render_mode(self, render_mode) -> None:
        if render_mode not in (None, *RENDER_MODES):
            raise ValueError(f"render_mode must be None or one of {list(RENDER_MODES)}, got {render_mode!r}")
        self.render_mode = render_mode
        self._last: dict[str, np.ndarray] = {}

    def _text(self, i: int) -> str:
        """One line on episode i now: its step and the last step's info values (hidden ones too:
        a person watching may see what the agent does not)."""
        values = ", ".join(f"{k} {float(v[i]):.3f}" for k, v in self._last.items() if not k.startswith("_"))
        return f"step {int(self.task.state.t[i])}/{self.max_steps} (episode seed {int(self.episode_seeds[i])})" + (
            f": {values}" if values else ""
        )

    def _start(self, rows: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        self.episode_seeds[rows] = seeds
        if self.seeds_played is not None:
            self.seeds_played.extend(int(s) for s in seeds)
        self.task.reset(rows, seeds)
        if self.world is not None:  # the platform's episode for the one just reset
            self.world.reset()
        return self.task.reset_obs(rows)


class LockstepVectorEnv(_Lockstep, VectorEnv):
    """K episodes of a v1 task stepped together (module docstring)."""

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 4, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, task, single_action_space, autoreset_mode=AutoresetMode.NEXT_STEP, render_mode=None,
                 privileged_info=False):  # fmt: skip
        mode = AutoresetMode(autoreset_mode)
        if mode == AutoresetMode.DISABLED:
            raise ValueError("autoreset_mode must be NEXT_STEP or SAME_STEP")
        self.num_envs = task.k
        self._setup(task.k, task, single_action_space, privileged_info)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        self.autoreset_mode = mode
        self._autoreset = np.zeros(self.num_envs, bool)
        self._started = False
        self._set_render_mode(render_mode)

    def render(self) -> tuple[str, ...] | None:
        """ "ansi": one line per episode (`_text`); None without a render mode."""
        return tuple(self._text(i) for i in range(self.num_envs)) if self.render_mode == "ansi" else None

    def reset(self, *, seed=None, options=None):
        """Start all K episodes (seed: s -> s + i, or K seeds; None: each env's next episode of
        its chain, or seeds from the OS at the very first reset)."""
        if seed is None and self._started:
            seeds = next_episode_seed(self.episode_seeds)
        else:
            seeds = reset_seeds(seed, self.num_envs)
        super().reset(seed=None if seed is None else int(seeds[0]))
        obs = self._start(np.arange(self.num_envs), seeds)
        self._autoreset[:] = False
        self._started = True
        return obs, {"episode_seed": seeds.copy(), "_episode_seed": np.ones(self.num_envs, bool)}

    def step(self, actions):
        """Step every episode; autoreset per `autoreset_mode`."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        actions = check_action(self, actions, batched=True)  # before anything changes
        k, infos = self.num_envs, {}
        stepping = ~self._autoreset
        resetting = np.flatnonzero(self._autoreset)
        if len(resetting):  # NEXT_STEP: these envs start their next episode now, ignoring the action
            reset_obs = self._start(resetting, next_episode_seed(self.episode_seeds[resetting]))
        obs, reward, step_info = self.task.step(actions, stepping=None if stepping.all() else stepping)
        self._last = step_info
        truncated = stepping & (self.task.state.t >= self.max_steps)
        terminated = np.zeros(k, bool)
        for name, value in learner_info(step_info, self.privileged_info).items():
            infos[name], infos["_" + name] = value, stepping.copy()
        if len(resetting):
            obs[resetting] = reset_obs
            reward[resetting] = 0.0
        infos["episode_seed"], infos["_episode_seed"] = self.episode_seeds.copy(), np.ones(k, bool)
        done = np.flatnonzero(truncated | terminated)
        if self.autoreset_mode == AutoresetMode.SAME_STEP and len(done):
            final = np.empty(k, dtype=object)
            final[done] = list(obs[done])
            infos["final_obs"], infos["_final_obs"] = final, truncated | terminated
            infos["final_info"] = {name: value for name, value in infos.items() if not name.startswith(("final", "_"))}
            infos["_final_info"] = truncated | terminated
            obs[done] = self._start(done, next_episode_seed(self.episode_seeds[done]))
            self._autoreset[:] = False
        else:
            self._autoreset = truncated | terminated
        return obs, reward.astype(np.float64), terminated, truncated, infos


class LockstepEnv(_Lockstep, gym.Env):
    """One episode of a v1 task: the task with K = 1 (module docstring)."""

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 4}

    def __init__(self, task, action_space, render_mode=None, privileged_info=False):
        self._setup(1, task, action_space, privileged_info)
        self.observation_space, self.action_space = self.single_observation_space, action_space
        self._started = False
        self._set_render_mode(render_mode)

    def render(self) -> str | None:
        """ "ansi": a line on the episode (its step, the last step's values); None without a mode."""
        return self._text(0) if self.render_mode == "ansi" else None

    def reset(self, *, seed=None, options=None):
        """Start an episode (seed None: the next of the chain, see the module docstring)."""
        self._last = {}
        if seed is None and self.episode_seeds[0] >= 0:
            seeds = next_episode_seed(self.episode_seeds[:1])
        else:
            seeds = reset_seeds(seed, 1)
        super().reset(seed=None if seed is None else int(seeds[0]))
        self._started = True
        obs = self._start(np.zeros(1, np.int64), seeds)
        return obs[0], {"episode_seed": int(seeds[0])}

    def resume(self):
        """Continue a platform-backed episode journaled at the env's `db_path` from its last
        step (`backend="platform", journal=True`): returns its last observation and info, and
        the episode goes on exactly as the uninterrupted one."""
        if self.world is None:
            raise ValueError('resume needs backend="platform" with journal=True and a db_path')
        obs = self.world.resume(self.task)
        self.episode_seeds[0] = int(self.task.state.seed[0])
        self._last, self._started = {}, True
        return obs[0], {"episode_seed": int(self.episode_seeds[0])}

    def step(self, action):
        """One step: observation, reward, terminated (never), truncated (at max_steps), info."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        obs, reward, info = self.task.step(check_action(self, action)[None])
        self._last = info
        truncated = bool(self.task.state.t[0] >= self.max_steps)
        info = {name: float(value[0]) for name, value in learner_info(info, self.privileged_info).items()}
        info["episode_seed"] = int(self.episode_seeds[0])
        return obs[0], float(reward[0]), False, truncated, info

    def close(self) -> None:
        """Close the platform backend's journal, if any (`use_backend`)."""
        if self.world is not None:
            self.world.close()
        super().close()
