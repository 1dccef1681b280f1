"""SB3 callbacks: the env's emergent metrics in TensorBoard, periodic evaluation against the
fixed baselines, and a wall-clock budget.

`EnvMetricsCallback` averages the per-step `info` of every worker over each rollout and
records them with `self.logger.record`, so they are written with SB3's own `rollout/` and
`train/` curves at the same x (timesteps):

    env/engagement_rate, env/misinfo_share, env/cross_cutting_share, env/opinion_std,
    env/esteban_ray, env/reports_per_step, env/moderation_<label|downrank|remove|suspend>
    (per step), episode/<return|misinfo_share|engagement_rate|true_actioned_share|...>
    (mean over the episodes that ended in the rollout), and for the recommender each
    reward component per step: reward/<engagement|misinfo_exposure|polarization_increase|
    diversity>.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

_STEP_KEYS = ("engagement_rate", "misinfo_share", "cross_cutting_share", "opinion_std", "esteban_ray")


class EnvMetricsCallback(BaseCallback):
    """Log the env's emergent metrics next to SB3's curves (see the module docstring)."""

    def __init__(self, verbose: int = 0):
        super().__init__(verbose)
        self._step = defaultdict(list)
        self._episode = defaultdict(list)
        self._reward = defaultdict(list)

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", ()):
            if "impressions" not in info:
                continue
            for k in _STEP_KEYS:
                self._step[k].append(float(info[k]))
            self._step["reports_per_step"].append(float(info["reports"]))
            for k, v in info["moderation"].items():
                self._step[f"moderation_{k}"].append(float(v))
            for k, v in info.get("reward_components", {}).items():  # the recommender's trade-off
                self._reward[k].append(float(v))
            for k, v in info.get("episode_metrics", {}).items():
                if isinstance(v, (int, float)):
                    self._episode[k].append(float(v))
        return True

    def _on_rollout_end(self) -> None:
        for k, values in self._step.items():
            self.logger.record(f"env/{k}", float(np.mean(values)))
        for k, values in self._episode.items():
            self.logger.record(f"episode/{k}", float(np.mean(values)))
        for k, values in self._reward.items():
            self.logger.record(f"reward/{k}", float(np.mean(values)))
        self._step.clear()
        self._episode.clear()
        self._reward.clear()


class LearningCurve(BaseCallback):
    """(timesteps, mean return, episodes) of the training episodes that ended in each
    rollout (VecMonitor's `info["episode"]`): the data of the learning-curve PNG."""

    def __init__(self, verbose: int = 0):
        super().__init__(verbose)
        self.points: list[tuple[int, float, int]] = []
        self._returns: list[float] = []

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", ()):
            if "episode" in info:
                self._returns.append(float(info["episode"]["r"]))
        return True

    def _on_rollout_end(self) -> None:
        if self._returns:
            self.points.append((int(self.num_timesteps), float(np.mean(self._returns)), len(self._returns)))
            self._returns.clear()


class StopAfterSeconds(BaseCallback):
    """Stop training once `seconds` of wall-clock time have passed since training started."""

    def __init__(self, seconds: float, verbose: int = 0):
        super().__init__(verbose)
        self.seconds = seconds
        self.stopped_early = False

    def _on_training_start(self) -> None:
        self._start = time.perf_counter()

    def _on_step(self) -> bool:
        if time.perf_counter() - self._start >= self.seconds:
            self.stopped_early = True
            return False
        return True


def machine_busy(cores: int, loadavg: str | None = None) -> bool:
    """Does another process want a core now? Linux's /proc/loadavg (or `loadavg`, its text): another
    runnable task beside this one at this instant, or a 1-minute load of at least `cores` (a
    training on both cores alone keeps it at 1.2-1.5 on 2 cores); elsewhere the load alone."""
    try:
        text = loadavg if loadavg is not None else Path("/proc/loadavg").read_text(encoding="ascii")
        fields = text.split()
        load, runnable = float(fields[0]), int(fields[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0] >= cores
    return runnable > 1 or load >= cores


class UpdateThreads(BaseCallback):
    """Torch runs the gradient updates on `threads` threads while the machine has no other work
    (`machine_busy`, checked before each update), and the rollouts on the count it had when
    training started (one under `oasis-gym train`), put back at the end: the cores the env
    workers (`envs/vector_shards.py`) step on during a rollout are idle during an update.
    Measured (Moderator-v1 hard, the slot policy, 2 cores): quiet, the update 3.5 -> 2.3 s per
    16,384 timesteps; beside another busy process, 2 threads made it 3x slower (2.0 -> 6.0 s per
    8,192: a thread that loses its core stalls the other), hence the check. The same parameters
    to the last bit with 1, 2 or 3 threads (SB3's PPO; tests/test_vector_shards.py holds it), so
    the choice never changes a run. The recommender's small MLP gains nothing (0.25 -> 0.32 s),
    so `oasis-gym train` asks for it on the moderator's slot policy only; `oasis-gym scratch`
    also for SAC (`scratch_agents.callbacks`: its many small gradient steps, 1.2x)."""

    def __init__(self, threads: int, verbose: int = 0):
        super().__init__(verbose)
        self.threads, self._base = threads, 1
        self.updates_threaded = 0  # updates run on `threads` threads (the others: on the base count)

    @staticmethod
    def _torch():
        import torch

        return torch

    def _on_training_start(self) -> None:
        self._base = self._torch().get_num_threads()

    def _on_rollout_start(self) -> None:
        self._torch().set_num_threads(self._base)

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        if not machine_busy(self.threads):
            self._torch().set_num_threads(self.threads)
            self.updates_threaded += 1

    def _on_training_end(self) -> None:
        self._torch().set_num_threads(self._base)


class BaselineEvalCallback(BaseCallback):
    """Every `every` timesteps, evaluate the current model on fixed seeds and log
    `eval/return` next to the (constant) returns of the baselines, `eval/baseline_<name>`,
    so TensorBoard draws the learning curve against flat reference lines.

    `evaluate(act) -> float` runs the evaluation episodes with `act(obs) -> action`;
    `baselines` maps a name to its mean return (computed once, before training)."""

    def __init__(
        self,
        evaluate: Callable[[Callable], float],
        baselines: dict[str, float],
        every: int,
        normalize: Callable[[np.ndarray], np.ndarray] | None = None,
        verbose: int = 0,
    ):
        super().__init__(verbose)
        self.evaluate, self.baselines, self.every = evaluate, baselines, every
        self.normalize = normalize
        self._next = every
        self.history: list[tuple[int, float]] = []

    def _act(self, obs: np.ndarray):
        x = self.normalize(obs) if self.normalize is not None else obs
        return self.model.predict(x, deterministic=True)[0]

    def _on_step(self) -> bool:
        if self.num_timesteps >= self._next:
            self._next += self.every
            ret = float(self.evaluate(self._act))
            self.history.append((self.num_timesteps, ret))
            self.logger.record("eval/return", ret)
            for name, value in self.baselines.items():
                self.logger.record(f"eval/baseline_{name}", float(value))
        return True


class PairedAdvantages(BaseCallback):
    """Common random numbers for PPO. The envs play in groups of `group` that share their
    episode seeds (`LockstepSB3VecEnv(group=...)`), so the v1 tasks' counter-based randomness
    (the users, the campaigns) is the same within a group and what differs is the policy's
    own exploration. After each rollout, every step's advantages are centered within their
    group, before PPO's update: the noise a group shares cancels, and the estimate stays
    unbiased up to a factor (G - 1) / G (each member's own term in the mean), which PPO's
    per-minibatch normalization removes. The critic's targets (returns) are left as they are.
    """

    def __init__(self, group: int, verbose: int = 0):
        super().__init__(verbose)
        if group < 2:
            raise ValueError(f"group must be at least 2, got {group}")
        self.group = group

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        adv = self.model.rollout_buffer.advantages  # (n_steps, n_envs), env i in column i
        grouped = adv.reshape(adv.shape[0], -1, self.group)  # a view: centered in place
        grouped -= grouped.mean(axis=2, keepdims=True)
