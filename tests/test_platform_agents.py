"""Platform agents (issue 18): per-user ranking, the trade-off reward, a moderator without
the label in its observation, the oracle as an upper bound, and the frictions fixed."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium
import numpy as np
import pytest

from oasis_gym.agents import RecommenderAgent
from oasis_gym.envs.moderator_v0 import ModeratorEnv
from oasis_gym.envs.platform_rules import OracleModerator, ReportThresholdModerator
from oasis_gym.envs.recommender_v0 import RecommenderEnv
from oasis_gym.model.moderation import V0_VIEW_FEATURES
from oasis_gym.platform import MISINFO_LABEL
from oasis_gym.scenarios.misinfo_stream import MisinfoScenario

SCENARIO = MisinfoScenario(initial_true=8, initial_misinfo=4, stream_rate=1.5, n_outlets=5, n_misinfo_accounts=3)
TINY = dict(users=80, max_cycles=6, activation=0.3, scenario=SCENARIO)
README = Path(__file__).resolve().parents[1] / "README.md"


# --------------------------------------------------------------------------- frictions


def test_sb3_make_vec_env_with_defaults():
    """SB3 passes render_mode='rgb_array' to gymnasium.make; the env renders a frame."""
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env("oasis_gym/Recommender-v0", n_envs=1)  # the documented defaults: 1 000 users
    try:
        obs = vec.reset()
        assert obs.shape == (1, 26)
        obs, rew, done, info = vec.step(np.zeros((1, 24), np.float32))
        assert np.isfinite(rew).all()
        frame = vec.envs[0].render()
        assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3 and frame.min() < 255
    finally:
        vec.close()
    with pytest.raises(ValueError, match="render_mode"):
        RecommenderEnv(render_mode="human", **TINY)


def test_max_episode_steps_registered():
    """Both Gymnasium ids end episodes at 50 steps (`env.spec.max_episode_steps`), longer when asked."""
    for env_id in ("oasis_gym/Recommender-v0", "oasis_gym/Moderator-v0"):
        env = gymnasium.make(env_id, **TINY)
        assert env.spec.max_episode_steps == 50
        env.close()
    # a longer episode: max_episode_steps passed with max_cycles (documented), runs to its end
    env = gymnasium.make("oasis_gym/Moderator-v0", max_episode_steps=55, **{**TINY, "max_cycles": 55, "users": 30})
    env.reset(seed=0)
    steps, trunc = 0, False
    while not trunc:
        _, _, _, trunc, info = env.step(np.zeros(env.action_space.shape, np.int64))
        steps += 1
    assert steps == 55 and info["episode_metrics"]["steps"] == 55
    env.close()


def test_readme_sampling_loop_runs_with_platform_agents():
    """The README's sampling loop, exactly as shown, with recommender_0 and moderator_0 in the env."""
    from oasis_gym.envs import twitter_v0

    text = README.read_text()
    block = re.search(r"```python\n(from oasis_gym.envs import twitter_v0\n.*?)```", text, re.S).group(1)
    loop = block[block.index("while env.agents:") : block.index("print(env.feed_text")]
    env = twitter_v0.parallel_env(
        users=30, max_cycles=3, activation=0.5, db_path=":memory:", recommender_agent=True, moderator_agent=True
    )
    observations, infos = env.reset(seed=0)
    scope = {"env": env, "observations": observations}
    exec(compile(loop, "README.md", "exec"), scope)
    assert not env.agents
    env.close()


def test_no_stale_moderator_cost():
    """The action cost is charged on the step of the action only."""
    from oasis_gym.agents import exposure_stats
    from oasis_gym.envs import twitter_v0
    from oasis_gym.sim import ActionArrays

    env = twitter_v0.parallel_env(
        users=60,
        max_cycles=5,
        activation=0.5,
        db_path=":memory:",
        moderator_agent=True,
        platform_agent_params={"moderator": {"action_cost": 0.5}},
    )
    env.reset(seed=0)
    sim = env.sim
    sim.platform.create_posts(np.arange(5), ["hello"] * 5)  # true-by-default posts in the view
    env.step_batch(ActionArrays.empty())
    agent = sim.platform_agents["moderator_0"]
    assert (agent.slots >= 0).any()
    out = env.step_batch(ActionArrays.empty(), {"moderator_0": np.full(agent.top_m, 2)})  # downrank all
    assert out.platform_rewards["moderator_0"] < -exposure_stats(sim.agent_view())[0] - 0.4
    out = env.step_batch(ActionArrays.empty())  # no moderator action this step: no cost
    assert out.platform_rewards["moderator_0"] == pytest.approx(-exposure_stats(sim.agent_view())[0])
    env.close()


# --------------------------------------------------------------------------- recommender


def test_per_user_weights_rank_users_differently():
    """One W, different rankings: the alignment weight follows each user's opinion."""
    env = RecommenderEnv(**TINY)
    env.reset(seed=0)
    sim = env.sim
    pf = sim.platform
    rec = sim.recsys
    users = np.array([int(np.argmin(pf.u_opinion.a)), int(np.argmax(pf.u_opinion.a))])
    W = np.zeros((3, 8), np.float32)
    W[0, 7] = 1.0  # alignment: echo chamber for everyone
    rec.set_weights(W)
    feeds = rec.recommend(pf, users, 5)
    stance = np.nan_to_num(pf.p_stance.a)
    assert stance[feeds[0][feeds[0] >= 0]].mean() < 0 < stance[feeds[1][feeds[1] >= 0]].mean()
    # the global ranking is the per-user one with only the bias row
    w = np.array([1.0, 0.5, 0.25, 1.0, 0.5, 0.0, -0.2, 0.3], np.float32)
    all_users = np.arange(pf.n_users)
    rec.set_weights(w)
    flat = rec.recommend(pf, all_users, 5)
    rec.set_weights(RecommenderAgent().weights_action(w).reshape(3, 8))
    assert np.array_equal(rec.recommend(pf, all_users, 5), flat)
    env.close()


def test_reward_components_in_info_and_sum_to_reward():
    """The recommender's reward components are in `info` and their weighted sum is the reward."""
    env = RecommenderEnv(agent_params={"polarization_penalty": 10.0, "diversity_bonus": 0.3}, **TINY)
    env.reset(seed=2)
    total_increase = 0.0
    p0 = float(env.sim.platform.u_opinion.a.std())
    for _ in range(TINY["max_cycles"]):
        _, r, _, trunc, info = env.step(env.action_space.sample())
        c = info["reward_components"]
        assert set(c) == {"engagement", "misinfo_exposure", "polarization_increase", "diversity"}
        assert r == pytest.approx(
            10.0 * c["engagement"] - c["misinfo_exposure"] - 10.0 * c["polarization_increase"] + 0.3 * c["diversity"]
        )
        assert c["misinfo_exposure"] == info["misinfo_share"]
        total_increase += c["polarization_increase"]
    # the episode's polarization term is the increase since reset, not the level
    assert total_increase == pytest.approx(float(env.sim.platform.u_opinion.a.std()) - p0, abs=1e-6)
    env.close()


# --------------------------------------------------------------------------- moderator


def test_moderator_observation_has_no_label():
    """Flipping every true label leaves the first observation unchanged: the label is not in it."""
    assert "misinfo_score" not in V0_VIEW_FEATURES
    env = ModeratorEnv(**TINY)
    obs, _ = env.reset(seed=4)
    pf = env.sim.platform
    pf.p_label.a[: pf.n_posts] = 1 - np.maximum(pf.p_label.a[: pf.n_posts], 0)
    again = env.sim.platform_agents["moderator_0"].features(env.sim.agent_view())
    assert np.array_equal(obs, again)
    env.close()


def test_fact_checks_are_budgeted_delayed_and_noisy():
    """At most `budget` checks a step, verdicts back after `delay` steps, exact with error 0
    and all wrong with error 1 (the service picking the checks: `check_action=False`)."""
    params = {"check_budget": 2, "check_delay": 2, "check_error": 0.0, "check_action": False}
    env = ModeratorEnv(agent_params=params, **{**TINY, "max_cycles": 12})
    env.reset(seed=5)
    agent = env.sim.platform_agents["moderator_0"]
    fc = agent.fact_check
    i_check = V0_VIEW_FEATURES.index("fact_check")
    assert len(fc.sent_step) == 2 and not (fc.verdicts != 0).any()  # sent at reset, nothing back yet
    for step in range(1, 9):
        obs, *_ = env.step(np.zeros(env.action_space.shape, np.int64))
        fc = agent.fact_check  # a new copy every step (a failed step gets the old one back)
        assert len(fc.sent_step) <= 2 * (step + 1)
    got = np.flatnonzero(fc.verdicts)
    assert len(got) and all(fc.sent_step[int(p)] + 2 <= env.sim.platform.step for p in got)
    label = env.sim.platform.p_label.a[got]
    assert np.array_equal(fc.verdicts[got] > 0, label == MISINFO_LABEL)  # error 0: exact
    x = obs.reshape(agent.top_m, -1)
    shown = agent.slots >= 0
    assert np.array_equal(x[shown, i_check], fc.verdicts[agent.slots[shown]])
    # with error 1 every verdict is wrong
    bad = ModeratorEnv(agent_params={**params, "check_error": 1.0}, **{**TINY, "max_cycles": 12})
    bad.reset(seed=5)
    for _ in range(8):
        bad.step(np.zeros(bad.action_space.shape, np.int64))
    bfc = bad.sim.platform_agents["moderator_0"].fact_check
    bgot = np.flatnonzero(bfc.verdicts)
    assert np.array_equal(bfc.verdicts[bgot] > 0, bad.sim.platform.p_label.a[bgot] != MISINFO_LABEL)
    env.close()
    bad.close()


def test_oracle_is_an_upper_bound_on_exposure():
    """No moderator here beats the oracle on misinformation exposure, seed by seed."""
    from oasis_gym.train.common import EnvConfig
    from oasis_gym.train.evaluate import evaluate_moderator, oracle_check

    cfg = EnvConfig(kind="moderator", users=80, max_cycles=8, scenario=SCENARIO, env_kwargs={"activation": 0.3})
    seeds = (1, 2, 3)
    oracle = evaluate_moderator("oracle_suspend", seeds, cfg)
    rng = np.random.default_rng(0)
    others = {name: evaluate_moderator(name, seeds, cfg) for name in ("none", "report_threshold_suspend")}
    m = SCENARIO.agent_params["moderator"]["top_m"]
    others["random"] = evaluate_moderator(lambda obs: rng.integers(0, 5, m), seeds, cfg)
    others["suspend_all_in_view"] = evaluate_moderator(lambda obs: np.full(m, 4), seeds, cfg)
    for name, runs in others.items():
        check = oracle_check(runs, oracle)
        assert check["beaten_on"] == [], name
        assert all(o["return"] >= r["return"] for o, r in zip(oracle, runs)), name
    assert all(r["true_actioned_share"] == 0.0 and r["return"] == 0.0 for r in oracle)  # the maximum


def test_oracle_acts_beyond_the_view():
    """The oracle removes misinformation the moderator's `top_m` view does not show."""
    env = ModeratorEnv(agent_params={"top_m": 2}, **TINY)
    env.reset(seed=1)
    pf = env.sim.platform
    view = set(env.sim.platform_agents["moderator_0"].slots.tolist())
    action = OracleModerator(4)(env.sim)
    assert set(action.posts.tolist()) - view  # more than the 2 posts of the view
    env.step(action)
    assert (pf.p_status.a[action.posts] == 3).all() and pf.u_suspended.a[pf.p_author.a[action.posts]].all()
    # the report rule still acts on the view only
    acted = ReportThresholdModerator(threshold=0)(env.sim)
    assert acted.shape == (2,)
    env.close()


# --------------------------------------------------------------------------- training CLI


@pytest.mark.parametrize("target", ["recommender-v0", "moderator-v0"])
def test_train_cli_prints_baseline_table_and_writes_eval(target, tmp_path, capsys, monkeypatch):
    """`oasis-gym train <agent>` evaluates on held-out seeds and another population, prints
    mean ± std and PPO's paired wins against every baseline, writes eval.json and a PNG."""
    import json

    import torch

    from oasis_gym import cli
    from oasis_gym.train import common

    torch.set_num_threads(1)
    # the scenario's 1 000 users are too slow for a test: the tiny scenario through EnvConfig
    orig = common.EnvConfig.kwargs
    monkeypatch.setattr(
        common.EnvConfig, "kwargs", lambda self: {**orig(self), "scenario": SCENARIO, "activation": 0.3}
    )
    out = tmp_path / target
    rc = cli.main(
        [
            "train",
            target,
            "--users",
            "60",
            "--max-cycles",
            "4",
            "--timesteps",
            "16",
            "--n-envs",
            "1",
            "--n-steps",
            "8",
            "--eval-seeds",
            "1000",
            "1001",
            "--out",
            str(out),
            *(["--tune-seeds", str(2**20 + 5)] if target == "moderator-v0" else []),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    baselines = (
        ("reddit", "random", "chronological", "twitter", "default_weights")
        if target == "recommender-v0"
        else ("none", "report_threshold", "report_threshold_suspend", "oracle_suspend")
    )
    for name in ("held_out_seeds (population 0", "held_out_population (population 1", "PPO wins", "±", *baselines):
        assert name in text, name
    result = json.loads((out / "eval.json").read_text())
    assert set(result["eval_sets"]) == {"held_out_seeds", "held_out_population"}
    for s in result["eval_sets"].values():
        assert set(s["ppo_vs"]) >= set(baselines) - {"ppo"}
        assert all(0 <= v["return"]["wins"] <= 2 for v in s["ppo_vs"].values())
    if target == "moderator-v0":
        assert result["eval_sets"]["held_out_seeds"]["oracle_beaten"] == []
        tuned = result["tuned_rules"]  # tuned on the training seed, evaluated next to the fixed rules
        assert tuned["tune_seeds"] == [2**20 + 5] and "tuned on training seeds" in text
        for rule in ("report_threshold", "report_threshold_suspend"):
            assert tuned[rule] in result["eval_sets"]["held_out_population"]["ppo_vs"]
    png = out / "learning_curve.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "\nNext:\n  tensorboard --logdir" in text  # a summary, then the next step
    # SB3's TensorBoard logs, streamed into the staging folder, are installed with the rest
    assert any((out / "tb").rglob("events.out.tfevents.*"))
    assert json.loads((out / "eval.json").read_text())["learning_curve_png"] == str(png)
    assert not list(out.glob(".oasis-gym-tmp-*"))


def test_report_rules_are_tuned_on_training_seeds_only():
    """The rules' thresholds are picked by mean return on training seeds (never evaluation
    seeds); a threshold can be named in the rule ("report_threshold_suspend:2")."""
    from dataclasses import replace

    from oasis_gym.envs.platform_rules import ReportThresholdModerator
    from oasis_gym.train import moderator
    from oasis_gym.train.common import EnvConfig
    from oasis_gym.train.evaluate import evaluate_moderator, moderator_rule, summarize, tune_report_rules

    assert moderator_rule("report_threshold_suspend:2") == ReportThresholdModerator(2, 4)
    assert moderator_rule("report_threshold:5") == ReportThresholdModerator(5, 3)
    for bad in ("report_threshold:0", "report_threshold:x", "report_threshold_suspend:", "oracle:2"):
        with pytest.raises(ValueError):
            moderator_rule(bad)
    config = EnvConfig(kind="moderator", users=60, max_cycles=4, scenario=SCENARIO, env_kwargs={"activation": 0.3})
    seeds = (2**20 + 1, 2**20 + 2)
    tuned = tune_report_rules(seeds, config, thresholds=(1, 3))
    for base in ("report_threshold", "report_threshold_suspend"):
        cands = {t: tuned["scores"][f"{base}:{t}"] for t in (1, 3)}
        best = max(cands, key=lambda t: (cands[t], -t))
        assert tuned[base] == f"{base}:{best}"
        assert cands[best] == summarize(evaluate_moderator(f"{base}:{best}", seeds, config))["mean"]
    with pytest.raises(ValueError, match=r"--tune-seeds: expected a whole number in \[1,048,576, "):
        replace(moderator.Args(), tune_seeds=(1000,))  # refused at construction (the option's range)
    args = moderator.Args()
    args.tune_seeds = (1000,)  # set past the check: tuning refuses it all the same
    with pytest.raises(ValueError, match="could be evaluation seeds"):
        moderator.tuned_rules(args)


def test_moderator_features_read_reports_authors_and_clock():
    """The report velocity, the author's suspension and the hours since reset are what the
    platform knows; the counts are log-scaled."""
    env = ModeratorEnv(**TINY)
    env.reset(seed=2)
    for _ in range(3):
        env.step(np.zeros(env.action_space.shape, np.int64))
    sim = env.sim
    pf = sim.platform
    agent = sim.platform_agents["moderator_0"]
    p = agent.slots[agent.slots >= 0]
    pf.p_reports.a[p[0]] = 4
    pf.u_suspended.a[pf.p_author.a[p[1]]] = True
    x = agent.features(sim.agent_view()).reshape(agent.top_m, -1)[: len(p)]
    f = {name: x[:, i] for i, name in enumerate(V0_VIEW_FEATURES)}
    age_h = (pf.minute - pf.p_minute.a[p]) / 60.0
    np.testing.assert_allclose(f["age_hours"], age_h, rtol=1e-6)
    np.testing.assert_allclose(f["log_reports_per_hour"][0], np.log1p(4 / max(age_h[0], 1 / 20)), rtol=1e-6)
    np.testing.assert_allclose(f["log_likes"], np.log1p(pf.p_likes.a[p]), rtol=1e-6)
    assert f["reports"][0] == 4 and f["author_suspended"][1] == 1.0
    assert np.all(f["author_suspended"] == pf.u_suspended.a[pf.p_author.a[p]])
    np.testing.assert_allclose(f["hours_since_reset"], 3 * sim.clock.minutes_per_step / 60.0)
    env.close()


def test_eval_sets_disjoint_from_training():
    """Evaluation sets that could replay a training episode are refused."""
    from oasis_gym.train.report import EvalSet, check_disjoint

    check_disjoint([EvalSet("a", 0, (1000, 1001))], train_seed=0, n_envs=2)
    with pytest.raises(ValueError, match="training episodes"):
        check_disjoint([EvalSet("a", 0, (1, 1000))], train_seed=0, n_envs=2)
    with pytest.raises(ValueError, match="training episodes"):
        check_disjoint([EvalSet("a", 1, (2**21,))], train_seed=0, n_envs=2)
    env = ModeratorEnv(**TINY)
    env.reset(seed=0)
    assert all(env.reset()[1]["seed"] >= 2**20 for _ in range(3))  # unseeded resets: training draws
    env.close()


def test_reward_components_reach_tensorboard(tmp_path):
    """Each reward component is its own TensorBoard curve (reward/<name>), read back from
    the event file SB3 wrote."""
    import torch
    from stable_baselines3 import PPO
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from oasis_gym.train.callbacks import EnvMetricsCallback

    torch.set_num_threads(1)
    env = RecommenderEnv(**{**TINY, "users": 50, "max_cycles": 4})
    model = PPO(
        "MlpPolicy", env, n_steps=8, batch_size=8, n_epochs=1, seed=0, device="cpu", tensorboard_log=str(tmp_path)
    )
    model.learn(16, callback=EnvMetricsCallback(), tb_log_name="rec")
    env.close()
    run_dir = next(tmp_path.glob("rec_*"))
    ea = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    ea.Reload()
    tags = set(ea.Tags()["scalars"])
    for name in ("engagement", "misinfo_exposure", "polarization_increase", "diversity"):
        assert f"reward/{name}" in tags, tags
        assert len(ea.Scalars(f"reward/{name}")) == 2  # one value per rollout


def test_train_cli_agent_params(capsys):
    """--agent-param sets the reward weights; a bad one is one line and exit code 2."""
    import argparse

    from oasis_gym import cli
    from oasis_gym.train.recommender import Args, add_arguments, args_from_namespace

    p = argparse.ArgumentParser()
    add_arguments(p)
    args = args_from_namespace(
        p.parse_args(["--agent-param", "misinfo_penalty=0", "--agent-param", "polarization_penalty=5"]),
        "recommender",
        Args(),
    )
    env = args.env.make()
    assert env.agent_params["misinfo_penalty"] == 0.0 and env.agent_params["polarization_penalty"] == 5.0
    assert cli.main(["train", "recommender-v0", "--agent-param", "nonsense=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nonsense" in err[0] and "misinfo_penalty" in err[0]
    with pytest.raises(SystemExit) as exc:
        cli.main(["train", "moderator-v0", "--agent-param", "action_cost"])
    assert exc.value.code == 2


def test_fact_check_requests_are_part_of_the_action():
    """With `check_action` (the default) the moderator picks the fact-checks (code 5, within the
    budget, by view order): nothing is sent on its own, a request neither moderates nor costs,
    the verdicts come back after the delay; SB3's check_env passes; code 5 is refused without it."""
    from stable_baselines3.common.env_checker import check_env

    params = {"check_action": True, "check_budget": 2, "check_delay": 1, "check_error": 0.0}
    env = ModeratorEnv(agent_params=params, **TINY)
    check_env(env)
    assert env.action_space.nvec.tolist() == [6] * env.action_space.shape[0]
    env.reset(seed=5)
    agent = env.sim.platform_agents["moderator_0"]
    assert agent.fact_check.sent_step == {}  # the service sends nothing by itself
    view = agent.slots.copy()
    filled = view[view >= 0]
    assert len(filled) >= 3
    _, reward, *_ = env.step(np.where(view >= 0, 5, 0))
    sent = sorted(agent.fact_check.sent_step)
    assert sent == sorted(filled[:2].tolist())  # the budget, in view order
    assert (env.sim.platform.p_status.a[filled] == 0).all() and agent.true_actions == 0
    env.step(np.zeros(env.action_space.shape, np.int64))
    fc = agent.fact_check
    assert np.array_equal(fc.verdicts[sent] > 0, env.sim.platform.p_label.a[sent] == MISINFO_LABEL)
    with pytest.raises(ValueError):
        env.step(np.full(env.action_space.shape, 6))
    env.close()
    assert ModeratorEnv(**TINY).action_space == env.action_space  # on by default
    plain = ModeratorEnv(agent_params={"check_action": False}, **TINY)
    plain.reset(seed=5)
    with pytest.raises(ValueError):
        plain.step(np.full(plain.action_space.shape, 5))
    plain.close()


# --------------------------------------------------------------------------- settings as arguments (issue 55)


def test_the_population_and_the_seeds_go_down_as_arguments_and_the_learner_is_made_once():
    """From `gymnasium.make` to the draws the population size and both seeds are the env's
    arguments (no settings dict between), and the learner is one agent: the spaces', the simulation's."""
    from oasis_gym.population import synthetic

    env = gymnasium.make("oasis_gym/Moderator-v0", users=37, population_seed=3, max_cycles=2, scenario=SCENARIO)
    env = env.unwrapped
    try:
        assert (env.users, env.population_seed, env.max_cycles) == (37, 3, 2)
        env.reset(seed=5)
        sim, drawn = env.sim, synthetic(37, seed=3)
        assert sim.population.n == 37 and sim.seed == 5
        np.testing.assert_array_equal(sim.population.follow_src, drawn.follow_src)
        np.testing.assert_array_equal(sim.population.follow_dst, drawn.follow_dst)
        assert sim.platform_agents["moderator_0"] is env.learner
        assert env.agent_params["top_m"] == SCENARIO.agent_params["moderator"]["top_m"]
    finally:
        env.close()


def test_a_fixed_feed_is_scored_by_the_learner_outside_the_simulation():
    """`feed=`: no recommender_0 in the simulation; the env's one learner scores the fixed feeds."""
    env = RecommenderEnv(feed="chronological", **TINY)
    try:
        env.reset(seed=1)
        assert "recommender_0" not in env.sim.platform_agents
        _, reward, _, _, info = env.step(np.zeros(24, np.float32))
        assert info["reward_components"] == env.learner.last_components and np.isfinite(reward)
    finally:
        env.close()
