"""Any agent, one call (issue 57): `oasis_gym.train.benchmark.evaluate(policy, task, difficulty)`.

A baseline whose numbers are known gives exactly them: the platform's default and a tuned
constant played as a callable score what the benchmark's own baseline rows score on the same
seeds (one code, `protocol.play`); against a benchmark's results the policy equal to a baseline
improves on it with probability 1/2 exactly. An SB3 model is played as its deterministic
predict. Bad input is a ValueError with one line, before any episode where it can be.
"""

from __future__ import annotations

import dataclasses
import json

import gymnasium as gym
import numpy as np
import pytest

from oasis_gym.train import protocol, v1, v1_baselines
from oasis_gym.train import tuned_baselines as tb
from oasis_gym.train.benchmark import evaluate

SMALL = {"users": 200, "max_steps": 4, "eval_seeds": (9000, 9001, 9002)}


def _args(task: str, difficulty: str) -> v1.Args:
    return v1.Args(task=task, difficulty=difficulty, **SMALL)


def _constant(action):
    return lambda obs: np.tile(np.asarray(action), (len(obs), 1))


def test_the_default_ranking_scores_exactly_the_benchmarks_default_ranking_row():
    args = _args("recommender", "easy")
    default = tb.default_action("per_user", tb.user_rows(args.env()))
    result = evaluate(_constant(default), "recommender", "easy", **SMALL)
    rows = v1_baselines.baselines(args, {"constant": {"action": default}})  # the benchmark's baselines
    for name, population in protocol.held_out(args).items():
        res = result["eval_sets"][name]
        assert res["runs"] == protocol.play(args, population, rows["default_ranking"])  # to the last digit
        assert res["seeds"] == [9000, 9001, 9002] and res["population_seed"] == population
        stats = res["stats"]
        assert stats["policy"]["mean"] == stats["default_ranking"]["mean"] == res["return"]
        assert stats["default_ranking"]["p_improvement"] == {"p": 0.5, "lo": 0.5, "hi": 0.5}


def _benchmark_like(args: v1.Args, tuned_codes) -> dict:
    """A benchmark's results.json as `benchmark.run` writes it (its baselines' and PPO's episodes)."""
    rows = v1_baselines.baselines(args, {"constant": {"action": tuned_codes}})
    sets = {}
    for name, population in protocol.held_out(args).items():
        base = {c: protocol.play(args, population, rows[c]) for c in ("no_moderation", "tuned_constant")}
        ppo = [protocol.play(args, population, rows["no_moderation"])] * 2  # two "training seeds"
        sets[name] = {"baselines": base, "ppo_runs": ppo}
    return {"task": args.task_id, "settings": dataclasses.asdict(args), "eval_sets": sets}


def test_against_a_benchmarks_results_the_same_policy_as_a_baseline_scores_its_row(tmp_path):
    args = _args("moderator", "medium")
    codes = np.r_[np.full(4, 2), np.zeros(12)].astype(np.int64)  # remove the 4 most urgent posts
    saved = _benchmark_like(args, codes)
    (tmp_path / "results.json").write_text(json.dumps(saved))
    for against in (saved, tmp_path / "results.json", str(tmp_path / "results.json")):
        result = evaluate(_constant(codes), "moderator", "medium", against=against)
        for name, res in result["eval_sets"].items():
            assert res["runs"] == saved["eval_sets"][name]["baselines"]["tuned_constant"]
            stats = res["stats"]
            assert set(stats) == {"policy", "PPO", "no_moderation", "tuned_constant"}
            assert stats["tuned_constant"]["p_improvement"]["p"] == 0.5 and stats["PPO"]["runs"] == 2
    assert result["settings"]["eval_seeds"] == SMALL["eval_seeds"]  # the benchmark's settings


def test_an_sb3_model_is_played_as_its_deterministic_predict():
    from stable_baselines3 import PPO

    env = gym.make("oasis_gym/Moderator-v1", users=200, max_steps=4)
    model = PPO("MlpPolicy", env, seed=0, n_steps=8, batch_size=8, device="cpu")
    as_model = evaluate(model, "moderator", "easy", **SMALL)
    as_callable = evaluate(lambda obs: model.predict(obs, deterministic=True)[0], "moderator", "easy", **SMALL)
    assert as_model == as_callable


GOOD = _constant(np.zeros(16, np.int64))


@pytest.mark.parametrize(
    ("policy", "task", "difficulty", "extra", "match"),
    [
        (GOOD, "trader", "easy", {}, "task must be one of \\['recommender', 'moderator'\\], got 'trader'"),
        (GOOD, "moderator", "extreme", {}, "difficulty must be one of \\['easy', 'medium', 'hard'\\]"),
        (GOOD, "moderator", "easy", {"seeds": 3}, "evaluate takes the protocol's settings"),
        (GOOD, "moderator", "easy", {"version": 7}, "--version of the moderator must be one of"),
        (GOOD, "moderator", "easy", {"eval_seeds": (0, 1)}, "--eval-seeds overlap the training seeds"),
        (42, "moderator", "easy", {}, "policy must be a callable"),
        (_constant(np.zeros(15)), "moderator", "easy", {}, "got an array of shape \\(3, 15\\)"),
        (_constant(np.full(16, 4)), "moderator", "easy", {}, "integer codes in \\[0, 3\\]"),
        (lambda obs: np.full((len(obs), 72), np.nan), "recommender", "easy", {}, "got nan"),  # v3: 8 x 9
        (GOOD, "moderator", "easy", {"against": "/nonexistent/results.json"}, "against must be a benchmark's"),
    ],
)
def test_bad_input_is_one_line(policy, task, difficulty, extra, match):
    settings = {**SMALL, **extra}
    with pytest.raises(ValueError, match=match) as err:
        evaluate(policy, task, difficulty, **settings)
    assert "\n" not in str(err.value)


def test_against_another_tasks_benchmark_or_other_settings_is_refused():
    saved = {"settings": {"task": "moderator", "difficulty": "hard"}, "eval_sets": {}}
    with pytest.raises(ValueError, match="against is a benchmark of moderator \\(hard\\), not moderator \\(easy\\)"):
        evaluate(GOOD, "moderator", "easy", against=saved)
    saved = {"settings": dataclasses.asdict(_args("moderator", "easy")), "eval_sets": {}}
    with pytest.raises(ValueError, match="\\['users'\\] differ from the benchmark's"):
        evaluate(GOOD, "moderator", "easy", against=saved, users=300)
