"""Shared pieces of the training scripts: thread limits, env factories, vector envs,
observation normalization and result files.

Everything here is small and explicit so `recommender.py` / `moderator.py` read top to
bottom like a CleanRL script.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from oasis_gym.envs.moderator_v0 import ModeratorEnv
from oasis_gym.envs.platform_agent_env import make_scenario
from oasis_gym.envs.recommender_v0 import RecommenderEnv
from oasis_gym.policies.sb3 import normalizer_path

from .outputs import train_output
from .report import plot_learning_curve


def limit_threads(n: int = 1) -> None:
    """One BLAS / torch thread per process. On a small shared machine, multi-threaded
    BLAS in every env worker oversubscribes the cores (measured: a 800x256 gram matrix
    takes 25 ms with 2 OpenBLAS threads under load, 1 ms with one). Environment variables
    only reach libraries loaded later (subprocess workers); torch is set directly."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(n))
    try:
        import torch

        torch.set_num_threads(n)
    except ImportError:  # pragma: no cover - torch comes with stable-baselines3
        pass


def env_class(kind: str):
    """The env class of an agent kind ("recommender" or "moderator")."""
    classes = {"recommender": RecommenderEnv, "moderator": ModeratorEnv}
    if kind not in classes:
        raise ValueError(f"kind must be one of {sorted(classes)}, got {kind!r}")
    return classes[kind]


@dataclass
class EnvConfig:
    """Which env to train on: the kind and the env's keyword arguments."""

    kind: str = "recommender"
    users: Any = None  # None: the scenario's (1 000)
    max_cycles: int | None = None  # None: the scenario's (50)
    scenario: Any = "default"  # each env's default: misinfo_brigading (moderator), misinfo_stream
    scenario_params: dict = field(default_factory=dict)
    agent_params: dict = field(default_factory=dict)
    env_kwargs: dict = field(default_factory=dict)
    population_seed: int = 0  # the synthetic population (evaluation also uses another)

    def __post_init__(self) -> None:
        if isinstance(self.scenario, str) and self.scenario == "default":
            self.scenario = "misinfo_brigading" if self.kind == "moderator" else "misinfo_stream"

    def kwargs(self) -> dict:
        """The env's keyword arguments (the scenario built from its name and params)."""
        return {
            "users": self.users,
            "max_cycles": self.max_cycles,
            "population_seed": self.population_seed,
            "scenario": make_scenario(self.scenario, **self.scenario_params),
            "agent_params": dict(self.agent_params),
            **self.env_kwargs,
        }

    def make(self, **overrides):
        """A new env with these settings (`overrides` replace keyword arguments)."""
        return env_class(self.kind)(**{**self.kwargs(), **overrides})


class EnvFactory:
    """A picklable `() -> env` for vector envs (SubprocVecEnv sends it to its workers)."""

    def __init__(self, config: EnvConfig, **overrides: Any):
        self.config, self.overrides = config, overrides

    def __call__(self):
        """A new env of the configured settings."""
        return self.config.make(**self.overrides)


def make_vec_env(config: EnvConfig, n_envs: int, seed: int, subproc: bool = True):
    """`n_envs` copies under VecMonitor (episode returns / lengths for SB3's rollout/ curves),
    seeded seed, seed + 1, ... . Subprocess workers (SB3's default forkserver start) get the
    env factory pickled and inherit the thread limits set by `limit_threads`. Training envs
    run in the training mode (`journal=False`: the same episodes, nothing written) unless
    the env settings ask for a journal (`journal` or a `db_path` file in `env_kwargs`)."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor

    kw = config.env_kwargs
    journaled = "journal" in kw or kw.get("db_path") not in (None, ":memory:")
    fns = [EnvFactory(config, **({} if journaled else {"journal": False})) for _ in range(n_envs)]
    vec = SubprocVecEnv(fns) if subproc and n_envs > 1 else DummyVecEnv(fns)
    vec.seed(seed)
    return VecMonitor(vec)


# --------------------------------------------------------------------------- observation normalization


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


# --------------------------------------------------------------------------- results


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, numpy scalars / arrays and paths as plain JSON values."""
    if hasattr(obj, "__dataclass_fields__"):
        return to_jsonable(asdict(obj))
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    if callable(obj) or not isinstance(obj, (str, int, float, bool, type(None))):
        return getattr(obj, "name", type(obj).__name__)
    return obj


def write_json(path: str | Path, obj: Any) -> Path:
    """Write `obj` as indented JSON (see `to_jsonable`), creating the folder; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_jsonable(obj), indent=2))
    return path


def write_results(out_dir: str | Path, result: dict, curve, baselines: dict[str, float], title: str) -> None:
    """learning_curve.png (`plot_learning_curve`) and eval.json (`result`, which gets the PNG's
    path) in `out_dir`, written beside it and renamed into place together (oasis_gym.outputs)."""
    with train_output(out_dir).staging() as tmp:
        plot_learning_curve(curve, baselines, tmp / "learning_curve.png", title)
        result["learning_curve_png"] = str(Path(out_dir) / "learning_curve.png")
        write_json(tmp / "eval.json", result)


# --------------------------------------------------------------------------- PPO


@dataclass
class PPOConfig:
    """Training run settings (defaults sized for a 2-core machine; see the scripts)."""

    total_timesteps: int = 50_000
    time_limit_s: float | None = None  # stop earlier once this much wall-clock time has passed
    n_envs: int = 2
    subproc: bool = True
    seed: int = 0
    n_steps: int = 250  # per env and rollout (5 episodes of 50 steps)
    batch_size: int = 250
    n_epochs: int = 10
    learning_rate: float = 3e-4
    gamma: float = 0.9
    gae_lambda: float = 0.95
    ent_coef: float = 0.0
    clip_range: float = 0.2
    log_std_init: float = -1.0  # continuous actions only: initial std exp(-1) = 0.37
    net_arch: tuple[int, ...] = (64, 64)
    policy: str = "mlp"  # "mlp" or "slot" (slot-shared net for MultiDiscrete, see slot_policy)
    first_bias: float = 0.0  # slot policy: initial logit bonus of action 0 ("none")
    norm_reward: bool = True
    checkpoint_every: int = 10_000  # timesteps (summed over envs); 0: no checkpoints
    eval_every: int = 0  # timesteps between BaselineEvalCallback runs; 0: off
    eval_seeds: tuple[int, ...] = (10_000, 10_001)
    out_dir: str = "runs/train"
    verbose: int = 0
    progress: bool = False  # SB3's progress bar (the CLI's default; --quiet / --json: off)


def train_ppo(
    env_config: EnvConfig, cfg: PPOConfig, baselines: dict[str, float] | None = None, evaluate: Callable | None = None
):
    """Train PPO on `env_config`; save model, observation statistics, checkpoints and
    TensorBoard logs under `cfg.out_dir`. Returns (model, VecNormalize, run info)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback
    from stable_baselines3.common.vec_env import VecNormalize

    from .callbacks import BaselineEvalCallback, EnvMetricsCallback, LearningCurve, StopAfterSeconds

    limit_threads(1)
    out = Path(cfg.out_dir)
    logs = train_output(out).claim_trees().path  # tb/ and checkpoints/ are this run's (staged under the CLI)
    vec = VecNormalize(
        make_vec_env(env_config, cfg.n_envs, cfg.seed, cfg.subproc),
        norm_obs=True,
        norm_reward=cfg.norm_reward,
        gamma=cfg.gamma,
        clip_obs=10.0,
    )
    policy: Any = "MlpPolicy"
    policy_kwargs: dict[str, Any] = {"net_arch": list(cfg.net_arch)}
    if cfg.policy == "slot":
        from .slot_policy import SlotActorCriticPolicy

        policy, policy_kwargs = SlotActorCriticPolicy, {"hidden": cfg.net_arch[0], "first_bias": cfg.first_bias}
    elif cfg.policy != "mlp":
        raise ValueError(f"policy must be 'mlp' or 'slot', got {cfg.policy!r}")
    if isinstance(vec.action_space, spaces.Box):
        policy_kwargs["log_std_init"] = cfg.log_std_init
    model = PPO(
        policy,
        vec,
        n_steps=cfg.n_steps,
        batch_size=cfg.batch_size,
        n_epochs=cfg.n_epochs,
        learning_rate=cfg.learning_rate,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        ent_coef=cfg.ent_coef,
        clip_range=cfg.clip_range,
        policy_kwargs=policy_kwargs,
        seed=cfg.seed,
        device="cpu",
        tensorboard_log=str(logs / "tb"),
        verbose=cfg.verbose,
    )
    curve = LearningCurve()
    callbacks: list = [EnvMetricsCallback(), curve]
    if cfg.checkpoint_every:
        callbacks.append(
            CheckpointCallback(
                max(cfg.checkpoint_every // cfg.n_envs, 1),
                str(logs / "checkpoints"),
                name_prefix=env_config.kind,
                save_vecnormalize=True,
            )
        )
    stopper = StopAfterSeconds(cfg.time_limit_s) if cfg.time_limit_s else None
    if stopper is not None:
        callbacks.append(stopper)
    evaluator = None
    if cfg.eval_every and evaluate is not None:
        evaluator = BaselineEvalCallback(evaluate, baselines or {}, cfg.eval_every, normalize=vec.normalize_obs)
        callbacks.append(evaluator)
    start = time.perf_counter()
    model.learn(
        cfg.total_timesteps, callback=CallbackList(callbacks), tb_log_name=env_config.kind, progress_bar=cfg.progress
    )
    seconds = time.perf_counter() - start
    model_path = out / "model.zip"
    with train_output(out).staging() as tmp:  # renamed into place together (oasis_gym.outputs)
        model.save(str(tmp / model_path.name))
        save_obs_normalizer(vec, normalizer_path(tmp / model_path.name))
    vec.close()
    info = {
        "timesteps": int(model.num_timesteps),
        "train_seconds": seconds,
        "model": str(model_path),
        "stopped_by_time_limit": bool(stopper is not None and stopper.stopped_early),
        "eval_history": evaluator.history if evaluator is not None else [],
        "learning_curve": curve.points,
    }
    return model, vec, info
