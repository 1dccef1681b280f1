"""Training on the v1 tasks: the SB3 adapter of the native vector env, the tuned baselines and
the `train.v1` protocol end to end (tiny settings; real SB3, real files)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

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


def test_paired_envs_play_the_same_episodes_and_ppo_centers_their_advantages():
    """Common random numbers: with group=2, envs 2j and 2j+1 start with seed s + j and stay on
    the same chain; the same actions give the same rewards; after each rollout PPO's
    advantages sum to 0 within every group and step (and not before the centering)."""
    from oasis_gym.train.callbacks import PairedAdvantages

    vec = LockstepSB3VecEnv(RecommenderVectorEnv(4, autoreset_mode="SameStep", **SMALL), group=2)
    vec.seed(21)
    vec.reset()
    assert [i["episode_seed"] for i in vec.reset_infos] == [21, 21, 22, 22]
    vec.action_space.seed(0)
    for _ in range(2 * SMALL["max_steps"]):  # into the next episodes of the chain
        a, b = vec.action_space.sample(), vec.action_space.sample()
        _, reward, _, _ = vec.step(np.stack([a, a, b, b]))
        assert reward[0] == reward[1] and reward[2] == reward[3]
    assert vec.venv.episode_seeds[0] == vec.venv.episode_seeds[1] != vec.venv.episode_seeds[2]
    unseeded = LockstepSB3VecEnv(RecommenderVectorEnv(4, autoreset_mode="SameStep", **SMALL), group=2)
    unseeded.reset()  # seeds from the OS: still in pairs, and never evaluation seeds
    s = unseeded.venv.episode_seeds
    assert s[0] == s[1] and s[2] == s[3] == s[0] + 1 and s.min() >= 2**20
    from oasis_gym.train import v1

    with pytest.raises(ValueError, match="--sde-sample-freq is the recommender's"):
        v1.Args(task="moderator", sde_sample_freq=-1).check()
    with pytest.raises(ValueError, match="group must divide"):
        LockstepSB3VecEnv(RecommenderVectorEnv(4, autoreset_mode="SameStep", **SMALL), group=3)

    seen = []

    class Check(PairedAdvantages):
        def _on_rollout_end(self) -> None:
            before = self.model.rollout_buffer.advantages.copy()
            super()._on_rollout_end()
            seen.append((before, self.model.rollout_buffer.advantages.copy()))

    model = PPO("MlpPolicy", VecMonitor(vec), n_steps=10, batch_size=20, n_epochs=1, seed=0, device="cpu")
    model.learn(80, callback=Check(2))
    before, after = seen[-1]
    assert after.shape == (10, 4) and np.abs(after.reshape(10, 2, 2).sum(axis=2)).max() < 1e-5
    assert np.abs(before.reshape(10, 2, 2).sum(axis=2)).max() > 1e-3
    np.testing.assert_allclose(after[:, 0] - after[:, 1], before[:, 0] - before[:, 1], atol=1e-5)


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


def test_the_privileged_reference_removes_only_misinformation_and_suspends_only_its_sources():
    task = tb.make_task("moderator", 2, {**SMALL, "difficulty": "medium"})
    rows = np.arange(2)
    task.reset(rows, np.array([9000, 9001]))
    obs, act, removed = task.reset_obs(rows), tb.truth_rule(task), 0
    for t in range(SMALL["max_steps"]):
        codes = act(obs, t)
        removed += int((codes >= 2).sum())
        obs, _, info = task.step(codes)
        assert (info["removed_true"] == 0).all() and (info["suspended_true"] == 0).all()
    assert removed > 0  # it acted


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
        (["--timesteps", "0"], "argument --timesteps: expected a whole number in [1, "),
        (["--eval-seeds", "9000", "--tune-seeds", "9000"], "disjoint"),
        (["--eval-seeds", "2"], "overlap the training seeds"),
        (["--eval-population", "0"], "held-out population"),
        (["--gamma", "1.5"], "argument --gamma: expected a finite number in [0.0, 1.0]"),
        (["--gamma", "nan"], "argument --gamma: expected a finite number"),
        (["--anchor", "tuned_row", "--ranking", "global"], "--anchor tuned_row corrects"),
        (["--anchor", "tuned_detector", "--ranking", "global"], "--anchor tuned_detector corrects"),
        (["--anchor", "tuned_detector", "--difficulty", "easy"], "--anchor tuned_detector needs a tier with campaigns"),
        (["--action-std", "-0.1"], "argument --action-std: expected a finite number"),
        (["--action-std", "inf"], "argument --action-std: expected a finite number"),
        (["--policy-layers", "0"], "argument --policy-layers: expected a whole number in [1, 1,024]"),
        (["--paired", "3"], "--paired must divide --n-envs"),
        (["--paired", "0"], "argument --paired: expected a whole number in [1, "),
        (["--sde-sample-freq", "-2"], "argument --sde-sample-freq: expected a whole number in [-1, "),
        (["--policy-layers", "8", "8", "8", "8", "8"], "--policy-layers must be"),
    ],
)
def test_bad_settings_are_one_line_and_exit_code_2_before_any_compute(tmp_path, extra, match):
    cmd = [sys.executable, "-m", "oasis_gym.train.v1", "recommender", *TINY, "--out", str(tmp_path / "r"), *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and match in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_oasis_gym_train_trains_the_v1_task_by_default_and_says_what_next(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "oasis_gym.cli", "train", "moderator", *TINY, "--out", str(out), "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "eval.json").read_text())["task"] == "moderator-v1"
    assert "its strongest baseline" in done.stdout and "constants tuned by CEM 1 x 3 on 1 seed)" in done.stdout
    assert "Next:\n  tensorboard --logdir" in done.stdout
    assert "tuned_constant" in done.stdout and "truth (privileged)" in done.stdout
    # the next step, a benchmark of these settings, says how long it takes (it suggested 14-38 minutes silently)
    nxt = "oasis-gym benchmark moderator --users 200 --max-steps 5 --timesteps 200 --n-envs 4 "
    assert nxt in done.stdout and f"--out {out}-benchmark  # 5 training seeds" in done.stdout, done.stdout
    assert "with confidence intervals: about " in done.stdout and " at this run's speed" in done.stdout


@pytest.mark.parametrize("task", ["recommender", "moderator"])
def test_benchmark_trains_n_seeds_and_writes_a_table_with_paired_intervals(tmp_path, task):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "bench"
    cmd = [sys.executable, "-m", "oasis_gym.cli", "benchmark", task, "--seeds", "2", *TINY, "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "results.json").read_text())
    assert result["ppo_seeds"] == [0, 1] and (out / "seed_0" / "model.zip").is_file()
    assert result["environment"]["torch_threads"] == 1  # one torch thread, as `train` (it had the cores' count)
    assert (out / "seed_1" / "model.zip").is_file() and (out / "learning_curves.png").is_file()
    held = result["eval_sets"]["held-out seeds"]
    expected = (
        {
            "default_ranking",
            "tuned_constant",
            "tuned_global_constant",
            "tuned_campaign_detector",
            "campaign_told (privileged)",
        }
        if task == "recommender"
        else {
            "no_moderation",
            "tuned_constant",
            "tuned_report_threshold",
            "tuned_fact_check_first",
            "tuned_classifier",
            "truth (privileged)",
        }
    )
    assert set(held["ppo_vs"]) == expected and len(held["ppo_seed_means"]) == 2
    for v in held["ppo_vs"].values():
        assert v["n"] == 2 and v["lo"] <= v["mean"] <= v["hi"] and v["pairs"] == 2 * 3
    md = (out / "results.md").read_text()
    assert "| PPO − policy [95% CI over training seeds] |" in md and "held-out population" in md
    assert md in done.stdout and "Next:\n  tensorboard --logdir" in done.stdout
    assert f"PPO learns corrections of its anchor, {result['anchor']} (tuned on the tuning seeds)." in md
    # the statistics RL papers report (train/rl_stats.py) and their figure
    stats = held["stats"]
    assert set(stats) == {"PPO", *expected} and (stats["PPO"]["runs"], stats["PPO"]["episodes"]) == (2, 3)
    assert all(0 <= stats[c]["p_improvement"]["p"] <= 1 for c in expected) and "p_improvement" not in stats["PPO"]
    assert "| policy | runs x episodes | IQM [95% CI] | mean [95% CI] | P(PPO > policy) [95% CI] |" in md
    assert (out / "performance_profiles.png").is_file() and "performance_profiles.png" in done.stdout
    # any agent, one call: the tuned constant played through `evaluate` scores its row exactly
    from oasis_gym.train.benchmark import evaluate

    tuned = np.asarray(result["tuned"]["constant"]["action"])
    mine = evaluate(lambda obs: np.tile(tuned, (len(obs), 1)), task, "medium", against=out / "results.json")
    for name, res in mine["eval_sets"].items():
        assert res["runs"] == result["eval_sets"][name]["baselines"]["tuned_constant"]
        assert res["stats"]["tuned_constant"]["p_improvement"]["p"] == 0.5 and "PPO" in res["stats"]
    reference = "campaign_told (privileged)" if task == "recommender" else "truth (privileged)"
    assert f"Headroom on held-out seeds: {reference}" in md
    if task == "recommender":  # medium has campaigns: the detector was fit and its change tuned
        found = result["tuned"]["campaign_detector"]
        assert len(found["action"]) == 9 and {"mean", "scale", "weights", "tuning_auc"} <= set(found["detector"])
    events = [p for p in (out / "tb_band").iterdir() if p.name.startswith("events")]
    acc = EventAccumulator(str(events[0]))
    acc.Reload()
    assert {"benchmark/episode_return_mean", "benchmark/episode_return_min"} <= set(acc.Tags()["scalars"])
    if task == "recommender":  # the diagnostic that trains PPO told the campaign reads these results
        told = Path(__file__).resolve().parents[1] / "bench" / "research" / "recommender_told_ppo.py"
        cmd = [sys.executable, str(told), "--results", str(out / "results.json"), "--seeds", "1", "--eval-seeds",
               "9100-9102", "--eval-population", "2"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        line = json.loads(done.stdout.strip().splitlines()[-1])
        run = line["runs"][0]
        assert set(run["ppo_vs"]["held-out population"]) == expected and run["gate_mean_abs"] >= 0
        assert -1 <= run["gate_cosine_with_told"] <= 1 and run["drift_mean_abs"] >= 0
        assert "PPO-told minus default_ranking" in done.stderr and "flipping the flag" in done.stderr
        untold = subprocess.run(cmd + ["--untold"], capture_output=True, text=True, timeout=600)
        assert untold.returncode == 0, untold.stderr[-3000:]
        run = json.loads(untold.stdout.strip().splitlines()[-1])
        assert run["untold"] and set(run["runs"][0]["ppo_vs"]["held-out seeds"]) == expected
        assert "PPO minus default_ranking" in untold.stderr and "on the task's own observation" in untold.stderr
        refusals = (["--seeds", "0"], ["--set", "no_such_field=3"], ["--set", "policy_layers=8,x"])
        refusals += (["--eval-seeds", "x"],)
        for bad in refusals:  # before any compute
            refused = subprocess.run(cmd + bad, capture_output=True, text=True, timeout=120)
            assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        # the diagnostic of how the return responds to the size of the tuned campaign change
        response = Path(__file__).resolve().parents[1] / "bench" / "research" / "recommender_response.py"
        cmd = [sys.executable, str(response), "--results", str(out / "results.json"), "--alphas", "0.01,1",
               "--seeds", "5000-5002"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        line = json.loads(done.stdout.strip().splitlines()[-1])
        assert [r["alpha"] for r in line["rows"]] == [0.01, 1.0] and line["rows"][0]["gain"]["n"] == 3
        assert "over same-seed episodes" in done.stderr
        for bad in (["--alphas", "nan"], ["--alphas", "0"], ["--seeds", "7-7"], ["--seeds", "x"]):
            refused = subprocess.run(cmd + bad, capture_output=True, text=True, timeout=120)
            assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr


def test_results_table_gives_the_interval_over_episodes_when_the_seeds_agree():
    """Moderator-v1 medium: all 5 PPO seeds ended in the tuned rule's policy, and the table
    said PPO - tuned_constant = +21.18 [+21.18, +21.18]: certainty from an interval of width 0."""
    from oasis_gym.train.benchmark import compare, markdown

    rng = np.random.default_rng(0)
    ppo = rng.normal(-70, 10, 20)
    ppo_runs = [[{"return": float(r)} for r in ppo]] * 3  # three seeds, one policy
    baselines = {"tuned_constant": [{"return": float(r)} for r in ppo - 20 + rng.normal(0, 5, 20)]}
    vs = compare(ppo_runs, baselines)
    assert vs["tuned_constant"]["lo"] == vs["tuned_constant"]["hi"]  # width 0 over the seeds
    e = vs["tuned_constant"]["episode_ci"]
    assert e["lo"] < e["mean"] < e["hi"] and e["n"] == 20
    result = {
        "task": "moderator-v1", "settings": {"difficulty": "medium"}, "ppo_seeds": [0, 1, 2],
        "timesteps_per_seed": 100, "users": "rule-based", "tuning_env_steps": {"constant": 10},
        "environment": {"cpus": 2, "load_avg_1m_at_start": 0.1},
        "wall_seconds": 60, "ppo_seconds": 30, "tuning_seconds": 20,
        "eval_sets": {"held-out seeds": {"population_seed": 0, "seeds": list(range(20)), "baselines": baselines,
                                         "ppo_seed_means": [float(ppo.mean())] * 3, "ppo_vs": vs}},
    }  # fmt: skip
    md = markdown(result)
    assert f"[{e['lo']:+.2f}, {e['hi']:+.2f}]" in md and "| [95% CI over episodes] |" in md
    assert "ended in the same policy" in md


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--seeds", "1"], "argument --seeds: expected a whole number in [2, 100]"),
        (["--eval-seeds", "1"], "overlap the training"),
    ],
)
def test_benchmark_bad_settings_are_one_line_and_exit_code_2(tmp_path, extra, match):
    cmd = [sys.executable, "-m", "oasis_gym.cli", "benchmark", "recommender", *TINY, "--out", str(tmp_path / "b")]
    done = subprocess.run(cmd + extra, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and match in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--users", "5"], "argument --users: expected a whole number in [32, 200,000]"),
        (["--seed", "-1"], "argument --seed: expected a whole number in [0, 4,294,967,295]"),
    ],
)
def test_bad_sizes_and_seeds_are_one_line_before_any_compute(tmp_path, extra, match):
    cmd = [sys.executable, "-m", "oasis_gym.cli", "train", "recommender", *TINY, "--out", str(tmp_path / "r"), *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and match in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_slot_policy_distribution_is_sb3s_multicategorical_batched():
    """SlotCategorical (one Categorical over (B, M, A)) gives SB3's MultiCategorical numbers."""
    import torch as th
    from stable_baselines3.common.distributions import MultiCategoricalDistribution

    from oasis_gym.train.slot_policy import SlotCategorical

    th.manual_seed(0)
    logits, actions = th.randn(7, 5 * 4), th.randint(0, 4, (7, 5))
    ours, sb3 = SlotCategorical([4] * 5), MultiCategoricalDistribution([4] * 5)
    ours.proba_distribution(logits), sb3.proba_distribution(logits)
    assert th.allclose(ours.log_prob(actions), sb3.log_prob(actions), atol=1e-5)
    assert th.allclose(ours.entropy(), sb3.entropy(), atol=1e-5)
    assert th.equal(ours.mode(), sb3.mode()) and ours.sample().shape == (7, 5)


def test_the_headroom_line_takes_the_baseline_that_was_best_on_the_tuning_seeds():
    """It took the baseline with the best mean on the evaluation episodes: chosen on the data it scores."""
    from oasis_gym.train.benchmark import headroom

    runs = lambda r: [{"return": r}, {"return": r}]  # noqa: E731
    result = {
        "tuned": {"constant": {"score": -120.0}, "report_threshold": {"score": -110.0}},
        "eval_sets": {"held-out seeds": {
            "baselines": {"tuned_constant": runs(-100.0), "tuned_report_threshold": runs(-105.0),
                          "truth (privileged)": runs(-50.0)},
            "ppo_seed_means": [-105.0, -105.0]}},
    }  # fmt: skip
    (line,) = [x for x in headroom(result) if x]
    assert (
        "best on the tuning seeds, tuned_report_threshold -105.00 (on these episodes tuned_constant did better: "
        "-100.00): +55.00; PPO closes 0% of it." in line
    ), line
    result["eval_sets"]["held-out seeds"]["ppo_seed_means"] = [-110.0, -110.0]  # below the baseline: no share
    (line,) = [x for x in headroom(result) if x]
    assert line.endswith(": +55.00; PPO is -5.00 from that baseline."), line


def test_train_recommender_v2_tunes_and_trains_on_v2(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "oasis_gym.cli", "train", "recommender", "--version", "2", *TINY, "--out", str(out),
           "--quiet"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "eval.json").read_text())
    assert result["task"] == "recommender-v2" and result["settings"]["version"] == 2
    assert len(result["tuned"]["constant"]["action"]) == 8 * 9  # the affinity rows are tuned too
    assert "oasis-gym benchmark recommender --version 2" in done.stdout


def test_train_recommender_v3_with_global_row_corrections(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "oasis_gym.cli", "train", "recommender", "--version", "3", "--anchor", "tuned_row",
           "--policy-layers", "1", "--sde-sample-freq", "-1", *TINY, "--out", str(out), "--quiet"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "eval.json").read_text())
    assert result["task"] == "recommender-v3" and result["train"]["anchor"] == "tuned constant, global-row corrections"
    from stable_baselines3 import PPO

    model = PPO.load(out / "model.zip", device="cpu")
    assert model.use_sde and model.sde_sample_freq == -1  # explored with one noise matrix per rollout
    net = model.policy.mlp_extractor
    assert [m.out_features for m in net.policy_net if hasattr(m, "out_features")] == [1]  # the actor's one unit
    assert [m.out_features for m in net.value_net if hasattr(m, "out_features")] == [64, 64]


def test_train_recommender_v3_anchored_on_the_tuned_detector(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "oasis_gym.cli", "train", "recommender", "--version", "3", "--anchor",
           "tuned_detector", "--action-std", "0.03", *TINY, "--out", str(out), "--quiet"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "eval.json").read_text())
    assert result["train"]["anchor"] == "tuned campaign detector, global-row corrections"
    assert result["settings"]["anchor"] == "tuned_detector" and result["settings"]["action_std"] == 0.03
    assert "tuned_campaign_detector" in result["eval_sets"]["held-out seeds"]["ppo_vs"]


def test_the_row_anchor_corrects_only_the_global_row():
    from gymnasium import spaces

    from oasis_gym.train.anchored import RowAnchor

    base = np.linspace(-0.9, 0.9, 8 * 9).astype(np.float32)
    anchor = RowAnchor(base, 9)
    assert anchor.space(spaces.Box(-1, 1, (72,))).shape == (9,)
    got = anchor.env_action(np.full((2, 9), 0.5, np.float32), np.zeros((2, 19)))
    np.testing.assert_allclose(got[:, :9], np.tile(np.clip(base[:9] + 0.5, -1, 1), (2, 1)))
    np.testing.assert_array_equal(got[:, 9:], np.tile(base[9:], (2, 1)))
    np.testing.assert_array_equal(anchor.env_action(np.zeros((1, 9)), None)[0], base)


@pytest.mark.parametrize(("task", "version"), [("recommender", "4"), ("moderator", "2")])
def test_train_tunes_and_trains_on_the_oasis_rules_versions(tmp_path, task, version):
    """Recommender-v4 and Moderator-v2 (OASIS's rules) are one --version away, as v3 / Moderator-v1."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "oasis_gym.cli", "train", task, "--version", version, *TINY, "--out", str(out),
           "--quiet"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "eval.json").read_text())
    assert result["task"] == f"{task}-v{version}" and result["settings"]["version"] == int(version)


@pytest.mark.parametrize(
    ("task", "version", "match"),
    [("moderator", "3", "--version of the moderator must be one of [1, 2]"), ("recommender", "5", "invalid choice: 5")],
)
def test_a_version_the_task_lacks_is_one_line_and_exit_code_2(tmp_path, task, version, match):
    cmd = [sys.executable, "-m", "oasis_gym.cli", "train", task, "--version", version, *TINY, "--out",
           str(tmp_path / "r")]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and match in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("command", ["train", "benchmark"])
def test_train_and_benchmark_default_to_the_task_the_readme_recommends(command):
    """`oasis-gym train recommender` trained Recommender-v1, which the README says leaves PPO no
    headroom; its own table uses --version 3. The older versions stay one option away."""
    from oasis_gym.cli import build_parser
    from oasis_gym.train import args as cli_args
    from oasis_gym.train import v1

    def version(*argv: str) -> int:
        ns = build_parser().parse_args([command, *argv])
        return cli_args.parse_into(v1.Args, ns, v1.Args(task=ns.target)).version

    assert version("recommender") == 3 and version("moderator") == 1
    assert version("recommender", "--version", "1") == 1 and version("recommender", "--version", "2") == 2
    assert v1.Args(task="moderator").version == 1 and v1.Args().task_id == "recommender-v3"


def test_the_headroom_line_never_calls_a_baseline_best_beside_a_better_one_unnamed():
    """The text called the tuned constant (-0.92) "the best tuned baseline" beside a tuned rule at
    -0.79: the one chosen on the tuning seeds is named as such, and the one that did better here."""
    from oasis_gym.train.benchmark import headroom

    runs = lambda r: [{"return": r}]  # noqa: E731
    result = {
        "tuned": {"constant": {"score": -0.5}, "report_threshold": {"score": -0.6}},
        "eval_sets": {"held-out seeds": {
            "baselines": {"tuned_constant": runs(-0.92), "tuned_report_threshold": runs(-0.79),
                          "truth (privileged)": runs(0.5)},
            "ppo_seed_means": [-0.9]}},
    }  # fmt: skip
    (line,) = [x for x in headroom(result) if x]
    assert "the best tuned baseline" not in line
    assert (
        "best on the tuning seeds, tuned_constant -0.92 (on these episodes tuned_report_threshold did "
        "better: -0.79)" in line
    ), line


@pytest.mark.parametrize("task", ["recommender", "moderator"])
def test_each_tuning_says_one_line_of_its_own_and_no_auc_reads_nan_or_none(task):
    """ "tuning the constant ranking: iteration 1/1" came 4 times (4 tunings, one label); the
    detector's AUC read "nan" and the classifier's "None" where they are undefined."""
    from oasis_gym.train import v1, v1_baselines

    lines: list[str] = []
    args = v1.Args(task=task, difficulty="medium", users=200, max_steps=5, cem_iterations=2, cem_population=3,
                   tune_seeds=(5000,))  # fmt: skip
    v1_baselines.tune(args, lines.append)
    tunings = [line for line in lines if line.startswith("tuned ")]
    assert len(tunings) == len(set(tunings)) == 4, lines
    assert not any("iteration" in line for line in lines), lines
    assert not [line for line in lines if re.search(r"\b(nan|None)\b", line)], lines
    if task == "recommender":  # the campaign detector's AUC, defined or said to be undefined
        assert any("in-sample AUC" in line for line in lines), lines
