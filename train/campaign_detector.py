"""The recommender's state-dependent baselines: a campaign detector, and a reference told the campaign.

In the recommender tiers with misinformation campaigns (a hidden regime in which
misinformation accounts post more and, in v3, their bots inflate the popularity of their
posts), the best ranking during a campaign differs from the best between campaigns. A
constant ranking cannot change with the regime; these two policies can, and PPO's results
are compared with both (`oasis-gym train` and `oasis-gym benchmark`):

- `tuned_campaign_detector` (not privileged): the tuned constant ranking, plus a tuned change
  d (one weight per candidate feature) to its global row wherever a *detector* fires. The
  detector is a logistic regression of "a campaign ran this step" on the step's observation
  (its time left out), fit on the tuning episodes played with the tuned constant: the hidden
  campaign is read only there, as the moderator's label classifier reads the labels
  (`train/label_classifier.py`). At evaluation it reads the observation PPO reads.
- `campaign_told (privileged)`: the same family with the detector replaced by the hidden
  campaign itself. A reference for what acting on the campaign is worth, not a proven upper
  bound (a detector can beat it: it also fires on a campaign's lingering posts).

Both changes are searched by the same cross-entropy method and budget as the constant
(`tuned_baselines.tune_constant(policy=...)`), on the same tuning seeds.
`bench/research/recommender_state_headroom.py` measures both against the constant on their own.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from oasis_gym.batched.tasks import RECOMMENDER_OBS
from oasis_gym.model.ranking import CANDIDATE_FEATURES
from oasis_gym.model.tiers import tier

from . import tuned_baselines as tb
from .label_classifier import auc, auc_note, fit_logistic

TIME = RECOMMENDER_OBS.index("time")
NF = len(CANDIDATE_FEATURES)


def has_campaigns(env: dict) -> bool:
    """Whether the recommender task of these env kwargs has campaigns (its tier's `campaign_on` > 0)."""
    return tier(env.get("difficulty", "medium"), env.get("version", 1)).campaign_on > 0


def when(base: np.ndarray, flag: Callable) -> Callable:
    """The policy family: action = base + flag x d in the ranking's global row (the first NF
    entries of the action: the whole of a global ranking, the bias row of a per-user one),
    d the policy's parameters (one row per episode); `flag(task, obs)` (K,) whether to
    change now. Returns `policy(task, params (K, NF)) -> act(obs, t)`."""
    base = np.asarray(base)

    def policy(task, params: np.ndarray):
        def act(obs, t):
            out = np.tile(base, (task.k, 1))
            out[:, :NF] += flag(task, obs)[:, None] * params
            return out

        return act

    return policy


def on_campaign(base: np.ndarray) -> Callable:
    """Changes while a campaign is on: reads the task's hidden campaign (privileged)."""
    return when(base, lambda task, obs: task.state.campaign)


def on_detector(base: np.ndarray, detector: dict) -> Callable:
    """Changes where the detector's probability is above 0.5: reads the observation only."""
    return when(base, lambda task, obs: fires(detector, obs))


def fires(detector: dict, obs: np.ndarray) -> np.ndarray:
    """(K,) bool: where the detector's campaign probability is above 0.5."""
    return detect(detector, obs) > 0.5


def detector_shift(tuned: dict) -> Callable[[np.ndarray], np.ndarray]:
    """The tuned detector's change of the global row as `shift(obs) -> (K, NF)` (its change d
    where it fires, 0 elsewhere): what `anchored.RowAnchor` adds under PPO's corrections."""
    found = tuned["campaign_detector"]
    d = np.asarray(found["action"], np.float32)
    return lambda obs: fires(found["detector"], obs)[:, None] * d


def fit_detector(env: dict, seeds, action: np.ndarray) -> dict:
    """A logistic regression of "a campaign ran this step" on the step's observation (its
    time left out), fit on one episode per tuning seed played with `action`; the campaign
    labels are read only here. Returns the model (lists: JSON-able), its AUC on those
    episodes and the env steps it took."""
    seeds = np.asarray(seeds, np.int64)
    task = tb.make_task("recommender", len(seeds), env)
    rows = np.arange(len(seeds))
    task.reset(rows, seeds)
    task.reset_obs(rows)
    xs, ys = [], []
    for _ in range(task.max_steps):
        obs, _, info = task.step(np.tile(action, (len(seeds), 1)))
        xs.append(obs)
        ys.append(info["campaign"])
    x, y = np.concatenate(xs).astype(np.float64), np.concatenate(ys).astype(np.float64)
    mean, scale = x.mean(0), x.std(0) + 1e-6
    mean[TIME], scale[TIME] = 0.0, np.inf  # time left out
    both = 0 < y.mean() < 1
    model = {"mean": mean.tolist(), "scale": scale.tolist(),
             "weights": fit_logistic((x - mean) / scale, y).tolist() if both else None}  # fmt: skip
    model["tuning_auc"] = auc(detect(model, x), y) if both else float("nan")
    model["env_steps"] = len(seeds) * task.max_steps
    return model


def detect(model: dict, obs: np.ndarray) -> np.ndarray:
    """The detector's campaign probability per observation row (0 if it was never fit)."""
    if model["weights"] is None:
        return np.zeros(len(obs))
    w, mean, scale = (np.asarray(model[k], np.float64) for k in ("weights", "mean", "scale"))
    return 1 / (1 + np.exp(-np.clip(((obs - mean) / scale) @ w[:-1] + w[-1], -30, 30)))


def tune(env: dict, seeds, base: np.ndarray, ranking: str, cem: dict) -> dict:
    """Both policies on top of the tuned constant `base`: the detector fit, then each change
    searched by the cross-entropy method from 0 (sd 0.4) with the budget `cem`
    (`tune_constant`'s keyword arguments). Returns {"campaign_detector": ..., "campaign_told": ...}."""
    say = cem.get("progress") or (lambda line: None)
    detector = fit_detector({**env, "ranking": ranking}, seeds, base)
    auc_text = auc_note(detector["tuning_auc"], "no tuning step had a campaign, or every one had")
    say(f"fit the campaign detector on the tuning episodes ({auc_text})")
    search = {"start": np.zeros(NF), "start_sd": 0.4, "ranking": ranking, **cem}
    found = tb.tune_constant(env, seeds, policy=on_detector(base, detector), label="the campaign detector's change",
                             **search)  # fmt: skip
    found["env_steps"] += detector.pop("env_steps")
    told = tb.tune_constant(env, seeds, policy=on_campaign(base), label="the change told the campaign (privileged)",
                            **search)  # fmt: skip
    return {"campaign_detector": {**found, "detector": detector}, "campaign_told": told}


def candidates(tuned: dict, base: np.ndarray) -> dict:
    """name -> act_for(task) of both policies as tuned (empty where `tune` did not run)."""
    if "campaign_detector" not in tuned:
        return {}
    detected, told = on_detector(base, tuned["campaign_detector"]["detector"]), on_campaign(base)
    change = {k: np.asarray(tuned[k]["action"]) for k in ("campaign_detector", "campaign_told")}
    return {
        "tuned_campaign_detector": lambda task: detected(task, np.tile(change["campaign_detector"], (task.k, 1))),
        "campaign_told (privileged)": lambda task: told(task, np.tile(change["campaign_told"], (task.k, 1))),
    }
