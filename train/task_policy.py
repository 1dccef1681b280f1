"""One policy, every world (issue 52): a policy trained or tuned on the fast path, loaded unchanged.

`load_task_policy(path, name="ppo")` reads what `oasis-gym train` (a folder with `eval.json` and
`model.zip`) or `oasis-gym benchmark` (`results.json`; its PPO models in `seed_<s>/`) wrote and
returns the policy as one batched callable: observations (K, obs) -> actions (K, ...) (one
observation (obs,) -> one action), what the task's single env, its native vector env and
`evaluate(policy, task, difficulty)` take. `name` is PPO ("ppo": `model.zip` with its
observation statistics, `<model>.obs_norm.npz`, and its anchor rebuilt from the saved settings
and tuned baselines, as `train.v1.ppo_policy` plays it) or a baseline of the run's tables
("tuned_constant", "tuned_report_threshold", ...: its saved parameters, `train/v1_baselines.py`);
the privileged references read the fast path's hidden truth and are refused. The same policy
plays the fast path and `backend="platform"` of Recommender-v4 / Moderator-v2:

    from oasis_gym.envs.recommender_v4 import RecommenderEnv
    from oasis_gym.train.task_policy import load_task_policy

    policy = load_task_policy("runs/rec-v4")  # oasis-gym train recommender --version 4 --out runs/rec-v4
    env = RecommenderEnv(difficulty="medium", backend="platform")
    obs, _ = env.reset(seed=9000)
    obs, reward, terminated, truncated, info = env.step(policy(obs))

Bad input (no such run, an unknown or privileged name): a ValueError with one line, before any
model is loaded.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from oasis_gym.policies.sb3 import SB3Policy

from . import v1
from .v1_baselines import baselines, make_anchor

__all__ = ["TaskPolicy", "load_task_policy"]


class TaskPolicy:
    """A task policy as a batched callable (module docstring): `act_for(task) -> act(obs, t)`, as
    `tuned_baselines.run_episodes` plays it, made once per batch size K."""

    def __init__(self, name: str, args: v1.Args, act_for):
        self.name, self.args, self.act_for = name, args, act_for
        self._acts: dict[int, object] = {}

    @property
    def task_id(self) -> str:
        """The task it was trained or tuned on, e.g. "recommender-v4"."""
        return self.args.task_id

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """Actions of a batch of raw observations (K, obs), or the action of one (obs,), in the
        action space's dtype (float32 weights, int64 codes)."""
        obs = np.asarray(obs, np.float32)
        batch = obs if obs.ndim == 2 else obs[None]
        k = len(batch)
        if k not in self._acts:  # a non-privileged policy reads only K of its task
            self._acts[k] = self.act_for(SimpleNamespace(k=k))
        action = np.asarray(self._acts[k](batch, 0), np.float32 if self.args.task == "recommender" else np.int64)
        return action if obs.ndim == 2 else action[0]


def load_task_policy(path, name: str = "ppo") -> TaskPolicy:
    """The policy `name` of the run at `path` (a train or benchmark folder, or its model.zip)
    as a `TaskPolicy` (module docstring)."""
    if not isinstance(name, str):
        raise ValueError(f"name must be a policy's name (a string), got {name!r}")
    model, args, tuned = run_files(Path(path))
    if "privileged" in name:
        raise ValueError(f"{name!r} reads the fast path's hidden truth: a reference, not a policy to transfer")
    if name != "ppo":
        found = baselines(args, tuned)
        choices = ["ppo"] + [c for c in found if "privileged" not in c]
        if name not in found:
            raise ValueError(f"no policy {name!r} in {path}: one of {choices}")
        return TaskPolicy(name, args, found[name])
    if model is None:
        raise ValueError(f"{path} is a benchmark of several PPO seeds: name one, {path}/seed_<s>/model.zip")
    if not model.is_file():
        raise ValueError(f"{model}: no such model (oasis-gym train writes model.zip beside eval.json)")
    sb3 = SB3Policy.load(model)  # with its observation statistics (<model>.obs_norm.npz)
    anchor = make_anchor(args, tuned)
    return TaskPolicy(name, args, lambda task: lambda obs, t: anchor.env_action(sb3.predict(obs), obs))


def run_files(path: Path) -> tuple[Path | None, v1.Args, dict]:
    """The model (None for a benchmark folder), the settings and the tuned baselines of the run
    at `path` (ValueError, one line)."""
    folder = path.parent if path.suffix == ".zip" else path
    model = path if path.suffix == ".zip" else folder / "model.zip"
    for results in (folder / "eval.json", folder / "results.json", folder.parent / "results.json"):
        if results.is_file():
            break
    else:
        raise ValueError(f"{path}: no run of oasis-gym train or benchmark here (eval.json or results.json)")
    try:
        saved = json.loads(results.read_text(encoding="utf-8"))
        settings = {k: tuple(v) if isinstance(v, list) else v for k, v in saved["settings"].items()}
        args = v1.Args(**{k: v for k, v in settings.items() if k in v1.Args.__dataclass_fields__})
        tuned = dict(saved["tuned"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{results}: not a training run's results ({' '.join(str(err).split())})") from None
    if results.parent == folder and results.name == "results.json":
        return None, args, tuned  # a benchmark's folder: its PPO models are in seed_<s>/
    return model, args, tuned
