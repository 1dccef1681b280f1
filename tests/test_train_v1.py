"""Training on the v1 tasks: the SB3 adapter of the native vector env, the tuned baselines and
the `train.v1` protocol end to end (tiny settings; real SB3, real files)."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.vec_env import VecMonitor  # noqa: E402

from oasis_gym.envs.moderator_v1 import ModeratorVectorEnv  # noqa: E402
from oasis_gym.envs.recommender_v1 import RecommenderVectorEnv  # noqa: E402
from oasis_gym.train import tuned_baselines as tb  # noqa: E402
from oasis_gym.train.sb3_vec_env import LockstepSB3VecEnv  # noqa: E402

SMALL = {"users": 200, "max_steps": 5}


@pytest.mark.parametrize("cls", [RecommenderVectorEnv, ModeratorVectorEnv])
def test_the_sb3_adapter_restarts_episodes_as_sb3_expects(cls):
    vec = LockstepSB3VecEnv(cls(3, autoreset_mode="SameStep", **SMALL))
    vec.seed(11)
    obs = vec.reset()
    assert obs.shape == (3, *vec.observation_space.shape) and [i["episode_seed"] for i in vec.reset_infos] == [
        11,
        12,
        13,
    ]
    single = gym.make(f"oasis_gym/{'Recommender' if cls is RecommenderVectorEnv else 'Moderator'}-v1", **SMALL)
    single.reset(seed=12)
    vec.action_space.seed(0)
    for _ in range(SMALL["max_steps"]):
        action = vec.action_space.sample()
        actions = np.stack([action] * 3)
        obs, reward, dones, infos = vec.step(actions)
        s_obs, s_rew, _, s_trunc, _ = single.step(action)
        assert reward[1] == np.float32(s_rew)
    assert dones.all() and s_trunc
    assert np.array_equal(infos[1]["terminal_observation"], s_obs) and infos[1]["TimeLimit.truncated"]
    s_next, _ = single.reset()  # the next episode of the chain, as the adapter's restart
    assert np.array_equal(obs[1], s_next) and infos[1]["episode_seed"] == 12


def test_ppo_learns_on_the_adapter():
    vec = VecMonitor(LockstepSB3VecEnv(RecommenderVectorEnv(4, autoreset_mode="SameStep", **SMALL)))
    model = PPO("MlpPolicy", vec, n_steps=10, batch_size=20, n_epochs=1, seed=0, device="cpu")
    model.learn(80)
    assert model.num_timesteps == 80 and len(model.ep_info_buffer) >= 8


def test_the_adapter_refuses_next_step_autoreset():
    with pytest.raises(ValueError, match="SAME_STEP"):
        LockstepSB3VecEnv(RecommenderVectorEnv(2, **SMALL))


def test_the_tuned_constant_is_never_worse_than_the_default_on_its_tuning_seeds():
    env = {**SMALL, "difficulty": "medium"}
    tuned = tb.tune_constant(env, [5000, 5001], iterations=2, population=4)
    default = tb.run_episodes("recommender", env, [5000, 5001], lambda obs, t: np.tile(tb.default_action(), (2, 1)))
    assert tuned["score"] >= default["return"].mean() - 1e-6
    assert tuned["env_steps"] == 2 * 4 * 2 * SMALL["max_steps"] and np.abs(tuned["action"]).max() <= 1


def test_tuned_rules_and_the_privileged_reference_run():
    env = {**SMALL, "difficulty": "hard"}
    tuned = tb.tune_rules(env, [5000])
    assert set(tuned) >= {"report_threshold", "fact_check_first", "env_steps"}
    truth = tb.run_episodes("moderator", env, [9000, 9001], act_for=tb.truth_rule)
    none = tb.run_episodes("moderator", env, [9000, 9001], lambda obs, t: np.zeros((2, 16), np.int64))
    assert (truth["misinfo_impressions"] <= none["misinfo_impressions"]).all()


TINY = ["--users", "200", "--max-steps", "5", "--timesteps", "200", "--n-envs", "4", "--n-steps", "10",
        "--batch-size", "20", "--cem-iterations", "1", "--cem-population", "3", "--eval-seeds", "9000", "9001",
        "9002", "--tune-seeds", "5000"]  # fmt: skip


@pytest.mark.parametrize("task", ["recommender", "moderator"])
def test_train_v1_writes_its_results_and_says_where(tmp_path, task):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "oasis_gym.train.v1", task, *TINY, "--out", str(out), "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "PPO - row [95% CI]" in done.stdout and f"{out}/eval.json" in done.stdout
    result = json.loads((out / "eval.json").read_text())
    assert set(result["eval_sets"]) == {"held-out seeds", "held-out population"}
    assert (
        result["train"]["timesteps"] >= 200 and (out / "model.zip").is_file() and (out / "learning_curve.png").is_file()
    )
    for vs in result["eval_sets"]["held-out seeds"]["ppo_vs"].values():
        assert vs["n"] == 3 and vs["lo"] <= vs["mean"] <= vs["hi"]
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 2 and "--overwrite" in again.stderr and len(again.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--timesteps", "0"], "--timesteps must be an integer >= 1"),
        (["--eval-seeds", "9000", "--tune-seeds", "9000"], "disjoint"),
        (["--eval-seeds", "2"], "overlap the training seeds"),
        (["--eval-population", "0"], "held-out population"),
        (["--gamma", "1.5"], "--gamma must be"),
        (["--gamma", "nan"], "--gamma must be"),
    ],
)
def test_bad_settings_are_one_line_and_exit_code_2_before_any_compute(tmp_path, extra, match):
    cmd = [sys.executable, "-m", "oasis_gym.train.v1", "recommender", *TINY, "--out", str(tmp_path / "r"), *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and match in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()
