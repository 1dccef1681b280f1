"""Evaluate learned and fixed platform agents on the same scenario, seed by seed.

Every candidate is scored by the *same* reward on the *same* episodes (same population,
scenario posts, user policy and seeds):

* recommender: the learned ranking (an SB3 model / `SB3Policy` / any `act(obs)`), fixed
  ranking weights ("default_weights"), and the fixed feeds of the other recommenders --
  "reddit" (hot score), "random", "chronological", "twitter" -- run through
  `RecommenderEnv(feed=...)`, which scores them with `RecommenderAgent.reward`;
* moderator: the learned policy, "none" (no moderation), "report_threshold" (remove posts
  with >= 3 reports), "report_threshold_suspend" (remove + suspend), either with another
  threshold as "report_threshold_suspend:2" (`tune_report_rules` picks it on training
  seeds, so the rules are tuned as PPO is trained), "oracle" (remove every
  visible misinformation post, a reference) and "oracle_suspend" (also suspend its authors
  and the scenario's sources: the upper bound, not a baseline; `oracle_check` verifies
  that nothing beat it).

`summarize` gives mean, std, standard error, min and max over seeds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from oasis_gym.envs.platform_rules import FixedWeights, NoModeration, OracleModerator, ReportThresholdModerator
from oasis_gym.policies.sb3 import SB3Policy

from .common import EnvConfig

RECOMMENDER_FEEDS = ("reddit", "random", "chronological", "twitter")
MODERATOR_RULES = ("none", "report_threshold", "report_threshold_suspend", "oracle", "oracle_suspend")


def run_episode(env, act: Callable[[np.ndarray], Any], seed: int) -> dict:
    """One episode from `reset(seed)`; returns the env's `episode_metrics`."""
    obs, _ = env.reset(seed=int(seed))
    while True:
        obs, _, terminated, truncated, info = env.step(act(obs))
        if terminated or truncated:
            return info["episode_metrics"]


def as_act(policy) -> Callable[[np.ndarray], Any]:
    """`act(obs) -> action` from an SB3 model, an `SB3Policy` or a plain function."""
    if isinstance(policy, SB3Policy):
        return policy.predict
    if hasattr(policy, "predict"):
        return lambda obs: policy.predict(obs, deterministic=True)[0]
    if callable(policy):
        return policy
    raise TypeError(f"cannot act with {type(policy).__name__}")


def _rule_act(env, rule) -> Callable[[np.ndarray], Any]:
    return lambda obs: rule(env.sim)


def evaluate_recommender(policy, seeds: Sequence[int], config: EnvConfig | None = None) -> list[dict]:
    """Episode metrics (incl. "return") per seed. `policy`: a feed name of
    RECOMMENDER_FEEDS, "default_weights", or something `as_act` accepts."""
    config = config or EnvConfig(kind="recommender")
    if isinstance(policy, str) and policy in RECOMMENDER_FEEDS:
        env = config.make(feed=policy)
        act = lambda obs: np.zeros(env.action_space.shape, np.float32)  # noqa: E731 - ignored in feed mode
    elif isinstance(policy, str) and policy == "default_weights":
        env = config.make()
        act = _rule_act(env, FixedWeights())
    elif isinstance(policy, str):
        raise ValueError(
            f"unknown recommender baseline {policy!r}; choose from {RECOMMENDER_FEEDS + ('default_weights',)}"
        )
    else:
        env = config.make()
        act = as_act(policy)
    try:
        return [run_episode(env, act, s) for s in seeds]
    finally:
        env.close()


def moderator_rule(name: str):
    """The fixed moderator of a MODERATOR_RULES name; the report rules also as
    "report_threshold:T" / "report_threshold_suspend:T" (act at >= T reports, T >= 1)."""
    base, sep, t = name.partition(":")
    if sep and base in ("report_threshold", "report_threshold_suspend"):
        if not t.isdigit() or int(t) < 1:
            raise ValueError(f"report threshold must be an integer >= 1, got {name!r}")
        return ReportThresholdModerator(int(t), 4 if base.endswith("suspend") else 3)

    rules = {
        "none": NoModeration(),
        "report_threshold": ReportThresholdModerator(3, 3),
        "report_threshold_suspend": ReportThresholdModerator(3, 4),
        "oracle": OracleModerator(3),
        "oracle_suspend": OracleModerator(4),
    }
    if name not in rules:
        raise ValueError(f"unknown moderator baseline {name!r}; choose from {MODERATOR_RULES}")
    return rules[name]


def evaluate_moderator(policy, seeds: Sequence[int], config: EnvConfig | None = None) -> list[dict]:
    """Episode metrics (incl. "return", "misinfo_impressions", "true_actioned_share") per seed.
    `policy`: a rule name of MODERATOR_RULES or something `as_act` accepts."""
    config = config or EnvConfig(kind="moderator")
    rule = moderator_rule(policy) if isinstance(policy, str) else None  # a bad name fails before the env is built
    env = config.make()
    act = _rule_act(env, rule) if rule is not None else as_act(policy)
    try:
        return [run_episode(env, act, s) for s in seeds]
    finally:
        env.close()


def tune_report_rules(
    seeds: Sequence[int], config: EnvConfig | None = None, thresholds: Sequence[int] = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16)
) -> dict:
    """Pick each report rule's threshold by mean return on `seeds` (training seeds: never
    the evaluation's), as PPO is fitted on training episodes. Returns {"report_threshold":
    "report_threshold:T", "report_threshold_suspend": "report_threshold_suspend:T",
    "scores": {rule name: mean return}}; ties go to the lower threshold."""
    scores: dict[str, float] = {}
    best: dict[str, str] = {}
    for base in ("report_threshold", "report_threshold_suspend"):
        for t in thresholds:
            name = f"{base}:{int(t)}"
            scores[name] = summarize(evaluate_moderator(name, seeds, config))["mean"]
            if base not in best or scores[name] > scores[best[base]]:
                best[base] = name
    return {**best, "scores": scores}


def summarize(runs: Sequence[dict], key: str = "return") -> dict:
    """Mean, std, standard error, min, max and the per-seed values of one metric."""
    x = np.array([r[key] for r in runs], dtype=np.float64)
    std = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    return {
        "mean": float(x.mean()),
        "std": std,
        "sem": std / np.sqrt(len(x)) if len(x) else 0.0,
        "min": float(x.min()),
        "max": float(x.max()),
        "values": x.tolist(),
    }


def oracle_check(runs: Sequence[dict], oracle_runs: Sequence[dict], tol: float = 0.0) -> dict:
    """Is the oracle still an upper bound? Compares, seed by seed (same seeds, same order),
    misinformation impressions (lower is better) and true posts actioned (the oracle acts on
    none). `beaten_on` lists the metrics where the candidate's mean is better than the
    oracle's; evaluation reports it, and a non-empty list means the oracle is not one."""
    mis = np.array([r["misinfo_impressions"] for r in runs], dtype=np.float64)
    o_mis = np.array([r["misinfo_impressions"] for r in oracle_runs], dtype=np.float64)
    true = np.array([r["true_actioned_share"] for r in runs])
    o_true = np.array([r["true_actioned_share"] for r in oracle_runs])
    beaten = []
    if mis.mean() < o_mis.mean() - tol:
        beaten.append("misinfo_impressions")
    if true.mean() < o_true.mean() - tol:
        beaten.append("true_actioned_share")
    return {
        "beaten_on": beaten,
        "seeds_below_oracle_exposure": int((mis < o_mis).sum()),
        "oracle_misinfo_impressions": float(o_mis.mean()),
        "misinfo_impressions": float(mis.mean()),
    }
