"""The moderator's supervised baseline (train/label_classifier.py): a logistic-regression
label classifier fit on the tuning seeds only, and the rule that acts on it."""

from __future__ import annotations

import numpy as np

from oasis_gym.model import moderation
from oasis_gym.model.observations import MODERATOR_GLOBALS
from oasis_gym.train import label_classifier as lc
from oasis_gym.train import tuned_baselines as tb

SMALL = {"users": 200, "max_steps": 8, "population_seed": 0}


def _obs(p_feature: np.ndarray, verdict: np.ndarray, filled: np.ndarray, budget: int) -> np.ndarray:
    """One observation whose slots differ only in the arousal feature, the verdict and filled."""
    x = np.zeros((1, lc.QUEUE, lc.NF), np.float32)
    x[0, :, lc.F["arousal"]] = p_feature
    x[0, :, lc.F["fact_check"]] = verdict
    x[0, :, lc.F["filled"]] = filled
    g = np.zeros((1, len(MODERATOR_GLOBALS)), np.float32)
    g[0, 2] = budget / lc.QUEUE
    return np.concatenate([x.reshape(1, -1), g], axis=1)


def test_the_rule_removes_found_and_likely_misinformation_and_checks_the_most_suspicious_within_budget():
    # a model whose probability is sigmoid(10 * (arousal - 0.5)): arousal 0.9 -> 0.98, 0.1 -> 0.02
    w = np.zeros(len(lc.PUBLIC) + 1)
    w[lc.PUBLIC.index(lc.F["arousal"])], w[-1] = 10.0, -5.0
    model = {"weights": w, "mean": np.zeros(len(lc.PUBLIC)), "scale": np.ones(len(lc.PUBLIC))}
    arousal = np.array([0.9, 0.9, 0.1, 0.1, 0.45, 0.4, 0.3, 0.2] + [0.9] * 8)
    verdict = np.array([0, 1, -1, 0, 0, 0, 0, 0] + [0] * 8)
    filled = np.array([1] * 8 + [0] * 8)
    act = lc.classifier_rule(model, np.array([0.5]), np.array([True]))
    codes = act(_obs(arousal, verdict, filled, budget=2), 0)[0]
    assert codes[0] == moderation.REMOVE  # likely misinformation
    assert codes[1] == moderation.NONE  # found true: never removed
    assert codes[2] == moderation.REMOVE  # found false, whatever the model says
    assert list(codes[4:6]) == [moderation.FACT_CHECK] * 2  # the two most suspicious it keeps
    assert codes[3] == codes[6] == codes[7] == moderation.NONE
    assert (codes[8:] == moderation.NONE).all()  # empty slots
    no_checks = lc.classifier_rule(model, np.array([0.5]), np.array([False]))(_obs(arousal, verdict, filled, 2), 0)
    assert moderation.FACT_CHECK not in no_checks


def test_tuning_fits_on_the_tuning_seeds_and_its_score_is_what_the_rule_replays():
    env = {**SMALL, "difficulty": "hard"}
    tuned = lc.tune_classifier(env, [5000, 5001])
    assert tuned["threshold"] in lc.THRESHOLDS and isinstance(tuned["check"], bool)
    assert tuned["in_sample_auc"] > 0.6 and tuned["samples"] > 0 and tuned["tune_seeds"] == [5000, 5001]
    assert tuned["env_steps"] == (1 + 2 * len(lc.THRESHOLDS)) * 2 * SMALL["max_steps"]
    replay = tb.run_episodes("moderator", env, [5000, 5001], act_for=lambda task: lc.rule_of(tuned, task.k))
    assert replay["return"].mean() == np.float64(tuned["score"])  # deterministic, exactly the tuned cell


def test_the_tuned_rule_acts_through_the_env_within_its_budget():
    env = {**SMALL, "difficulty": "medium"}
    tuned = {**lc.tune_classifier(env, [5000]), "check": True}
    task = tb.make_task("moderator", 2, env)
    rows = np.arange(2)
    task.reset(rows, np.array([9000, 9001]))
    obs, act = task.reset_obs(rows), lc.rule_of(tuned, 2)
    for t in range(SMALL["max_steps"]):
        codes = act(obs, t)
        assert ((codes == moderation.FACT_CHECK).sum(1) <= task.state.dyn.fact_check_budget).all()
        assert (codes[task.queue_ids < 0] == moderation.NONE).all()
        obs, _, info = task.step(codes)
    assert np.isfinite(info["engagements"]).all()


def test_ppo_is_anchored_on_the_tuned_policy_that_was_best_on_the_tuning_seeds():
    from oasis_gym.train import v1, v1_baselines

    args = v1.Args(task="moderator", users=200, max_steps=5)
    rule = {"remove_at": 1, "suspend_at": 99, "check_at": None}
    tuned = {"report_threshold": {**rule, "score": -5.0}, "fact_check_first": {**rule, "check_at": 1, "score": -6.0},
             "classifier": {**lc.tune_classifier({**SMALL, "max_steps": 5}, [5000]), "score": -4.0}}  # fmt: skip
    assert v1_baselines.make_anchor(args, tuned).name == "tuned_classifier"
    tuned["classifier"]["score"] = -7.0
    assert v1_baselines.make_anchor(args, tuned).name == "tuned_report_threshold"
