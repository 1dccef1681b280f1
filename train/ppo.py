"""The one PPO driver of both training paths (issue 51, one PPO path).

`train_ppo(vec_env, policy, cfg, callbacks)` trains stable-baselines3's PPO on an SB3 vector
env that its caller built, under VecNormalize, and saves the model and its observation
statistics into the training output folder (`train/outputs.py`, TensorBoard logs in its
``tb/``). What differs between the paths is only what goes in:

- the v1-v3 tasks (`train/v1.py`, `train_on_task`): the native vector env through
  `sb3_vec_env.LockstepSB3VecEnv` (anchors, paired seeds), their policy (an MLP of
  `--policy-layers`, the moderator's slot policy), `callbacks.PairedAdvantages`;
- the v0 platform envs (`train/common.py`, `train_on_platform`): N single envs built by
  `common.platform_vec_env` (SB3's Dummy / SubprocVecEnv: a platform env is one simulation,
  there is no native vector env to adapt), checkpoints, the env-metrics and evaluation callbacks.

`PPOConfig` holds PPO's settings; its last group of fields is read by the v0 builder only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from oasis_gym.policies.sb3 import normalizer_path

from .outputs import train_output


@dataclass
class PPOConfig:
    """PPO's settings (defaults sized for a 2-core machine: the v0 scripts'; `train.v1` sets its own)."""

    total_timesteps: int = 50_000
    time_limit_s: float | None = None  # stop earlier once this much wall-clock time has passed
    seed: int = 0
    n_steps: int = 250  # per env and rollout (5 episodes of 50 steps)
    batch_size: int = 250
    n_epochs: int = 10
    learning_rate: float = 3e-4
    gamma: float = 0.9
    gae_lambda: float = 0.95
    ent_coef: float = 0.0
    clip_range: float = 0.2
    sde_sample_freq: int = 0  # 0: independent Gaussian noise; -1: gSDE, one matrix a rollout; N: every N steps
    norm_reward: bool = True
    out_dir: str = "runs/train"
    verbose: int = 0
    progress: bool = False  # SB3's progress bar (the CLI's default; --quiet / --json: off)
    update_threads: int = 1  # torch threads of the gradient updates (`callbacks.UpdateThreads`; else one)
    # the v0 builder's (`common.train_on_platform`): its envs, network, checkpoints and evaluation
    n_envs: int = 2
    subproc: bool = True
    log_std_init: float = -1.0  # continuous actions only: initial std exp(-1) = 0.37
    net_arch: tuple[int, ...] = (64, 64)
    policy: str = "mlp"  # "mlp" or "slot" (slot-shared net for MultiDiscrete, see slot_policy)
    first_bias: float = 0.0  # slot policy: initial logit bonus of action 0 ("none")
    checkpoint_every: int = 10_000  # timesteps (summed over envs); 0: no checkpoints
    eval_every: int = 0  # timesteps between BaselineEvalCallback runs; 0: off
    eval_seeds: tuple[int, ...] = (10_000, 10_001)


SLOT = "SlotPolicy"  # `PolicySpec`'s name of `slot_policy.SlotActorCriticPolicy`


@dataclass(frozen=True)
class PolicySpec:
    """Which actor-critic PPO trains: SB3's policy name ("MlpPolicy"), `SLOT` (the slot-shared
    policy, `train/slot_policy.py`, imported with torch when training starts) or a class, and
    its keyword arguments."""

    policy: Any
    kwargs: dict


def save_obs_normalizer(vec_normalize, path: str | Path) -> Path:
    """Store VecNormalize's observation statistics as a small .npz (no pickle), read by
    `oasis_gym.policies.sb3.SB3Policy` so a saved model acts on raw env observations."""
    rms = vec_normalize.obs_rms
    path = Path(path)
    np.savez(
        path,
        mean=rms.mean,
        var=rms.var,
        clip_obs=np.float64(vec_normalize.clip_obs),
        epsilon=np.float64(vec_normalize.epsilon),
    )
    return path


def policy_class(net):
    """SB3's policy argument of `PolicySpec.policy`: `SLOT` is the slot-shared policy (imported
    with torch here, when training starts), anything else is passed as it is."""
    if net != SLOT:
        return net
    from .slot_policy import SlotActorCriticPolicy

    return SlotActorCriticPolicy


def normalized(vec_env, gamma: float, norm_reward: bool = True):
    """`vec_env` under VecNormalize as every SB3 learner here trains on it: observations and (with
    `norm_reward`) rewards scaled by running statistics, observations clipped to +-10."""
    from stable_baselines3.common.vec_env import VecNormalize

    return VecNormalize(vec_env, norm_obs=True, norm_reward=norm_reward, gamma=gamma, clip_obs=10.0)


def train_ppo(
    vec_env,
    policy: PolicySpec,
    cfg: PPOConfig,
    callbacks: Callable[[Any, Path], list] | None = None,
    log_name: str = "PPO",
) -> tuple:
    """Train PPO on `vec_env` (an SB3 VecEnv under VecMonitor) normalized by VecNormalize;
    `callbacks(vec_normalize, logs)` adds the caller's callbacks beside the learning curve and
    `cfg.time_limit_s`'s stop (`logs`: the output folder as SB3 writes it, staged under the
    CLI). Saves model.zip and its observation statistics under `cfg.out_dir` (TensorBoard:
    ``tb/<log_name>_1``). Returns (model, VecNormalize, run info: timesteps, train_seconds,
    stopped_by_time_limit, learning_curve, model); the caller closes the env."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import CallbackList

    from .callbacks import LearningCurve, StopAfterSeconds, UpdateThreads

    net = policy_class(policy.policy)
    out = Path(cfg.out_dir)
    logs = train_output(out).claim_trees().path  # tb/ and checkpoints/ are this run's (staged under the CLI)
    vec = normalized(vec_env, cfg.gamma, cfg.norm_reward)
    model = PPO(net, vec, n_steps=cfg.n_steps, batch_size=cfg.batch_size, n_epochs=cfg.n_epochs,
                learning_rate=cfg.learning_rate, gamma=cfg.gamma, gae_lambda=cfg.gae_lambda, ent_coef=cfg.ent_coef,
                clip_range=cfg.clip_range, use_sde=cfg.sde_sample_freq != 0,
                sde_sample_freq=cfg.sde_sample_freq or -1, policy_kwargs=policy.kwargs, seed=cfg.seed,
                device="cpu", tensorboard_log=str(logs / "tb"), verbose=cfg.verbose)  # fmt: skip
    curve = LearningCurve()
    stopper = StopAfterSeconds(cfg.time_limit_s) if cfg.time_limit_s else None
    extra = callbacks(vec, logs) if callbacks is not None else []
    extra += [UpdateThreads(cfg.update_threads)] if cfg.update_threads > 1 else []
    start = time.perf_counter()
    model.learn(
        cfg.total_timesteps,
        callback=CallbackList([curve, *extra, *([stopper] if stopper else [])]),
        tb_log_name=log_name,
        progress_bar=cfg.progress,
    )
    seconds = time.perf_counter() - start
    with train_output(out).staging() as tmp:  # renamed into place together (oasis_gym.outputs)
        model.save(str(tmp / "model.zip"))
        save_obs_normalizer(vec, normalizer_path(tmp / "model.zip"))
    info = {
        "timesteps": int(model.num_timesteps),
        "train_seconds": seconds,
        "stopped_by_time_limit": bool(stopper is not None and stopper.stopped_early),
        "learning_curve": curve.points,
        "model": str(out / "model.zip"),
    }
    return model, vec, info
