"""Shared pieces of the v0 training scripts: thread limits, env factories, their vector env and
network (the builder of `ppo.train_ppo`'s input: `train_on_platform`) and result files.

The v0 scripts `recommender.py` / `moderator.py` read top to bottom, but not as a CleanRL
script: their loop is here (`train_on_platform`) and in `ppo.train_ppo` (SB3's `PPO.learn`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from oasis_gym.envs.moderator_v0 import ModeratorEnv
from oasis_gym.envs.platform_agent_env import make_scenario
from oasis_gym.envs.recommender_v0 import RecommenderEnv

from .outputs import train_output
from .ppo import SLOT, PolicySpec, PPOConfig, train_ppo
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


def platform_vec_env(config: EnvConfig, n_envs: int, seed: int, subproc: bool = True):
    """The v0 envs' SB3 vector env (the builder `train_on_platform` hands `ppo.train_ppo`; a
    platform env is one simulation, so this is SB3's own Dummy / SubprocVecEnv, not an adapter):
    `n_envs` copies under VecMonitor (episode returns / lengths for SB3's rollout/ curves),
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


def platform_policy(cfg: PPOConfig, action_space: spaces.Space) -> PolicySpec:
    """The v0 scripts' network: an MLP of `cfg.net_arch` (Box actions: initial std
    exp(`cfg.log_std_init`)) or the slot-shared policy (`cfg.policy == "slot"`)."""
    policy: Any = "MlpPolicy"
    kwargs: dict[str, Any] = {"net_arch": list(cfg.net_arch)}
    if cfg.policy == "slot":
        policy, kwargs = SLOT, {"hidden": cfg.net_arch[0], "first_bias": cfg.first_bias}
    elif cfg.policy != "mlp":
        raise ValueError(f"policy must be 'mlp' or 'slot', got {cfg.policy!r}")
    if isinstance(action_space, spaces.Box):
        kwargs["log_std_init"] = cfg.log_std_init
    return PolicySpec(policy, kwargs)


def train_on_platform(
    env_config: EnvConfig, cfg: PPOConfig, baselines: dict[str, float] | None = None, evaluate: Callable | None = None
):
    """PPO (`ppo.train_ppo`) on the v0 envs of `env_config` (`platform_vec_env`), with
    checkpoints, the env metrics in TensorBoard and, every `cfg.eval_every` timesteps,
    `evaluate(act)` against `baselines`; saves model, observation statistics, checkpoints and
    TensorBoard logs under `cfg.out_dir`. Returns (model, VecNormalize (closed), run info)."""
    from stable_baselines3.common.callbacks import CheckpointCallback

    from .callbacks import BaselineEvalCallback, EnvMetricsCallback

    limit_threads(1)
    vec_env = platform_vec_env(env_config, cfg.n_envs, cfg.seed, cfg.subproc)
    policy = platform_policy(cfg, vec_env.action_space)
    evaluator: list = []

    def callbacks(vec, logs: Path) -> list:
        extra: list = [EnvMetricsCallback()]
        if cfg.checkpoint_every:
            every = max(cfg.checkpoint_every // cfg.n_envs, 1)
            extra.append(
                CheckpointCallback(
                    every, str(logs / "checkpoints"), name_prefix=env_config.kind, save_vecnormalize=True
                )
            )
        if cfg.eval_every and evaluate is not None:
            evaluator.append(
                BaselineEvalCallback(evaluate, baselines or {}, cfg.eval_every, normalize=vec.normalize_obs)
            )
        return extra + evaluator

    model, vec, info = train_ppo(vec_env, policy, cfg, callbacks, log_name=env_config.kind)
    vec.close()
    info["eval_history"] = evaluator[0].history if evaluator else []
    return model, vec, info
