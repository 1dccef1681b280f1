"""One policy, every world (issue 52): a policy trained for a few hundred steps by `oasis-gym train`
on the fast path loads unchanged (`train/task_policy.py`) and plays Recommender-v4 / Moderator-v2
on the fast path and on `backend="platform"`: with the task users (the fast path's episode bit for
bit), with ABM users for some users, and with LLM users (the fixtures' tiny random Llama) for some."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from llm_fixtures import llm_module
from test_one_world import _assert_same

from oasis_gym.envs.moderator_v2 import ModeratorEnv
from oasis_gym.envs.recommender_v4 import RecommenderEnv
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.policies.llm_policy import LLMPolicy
from oasis_gym.train.benchmark import evaluate
from oasis_gym.train.protocol import PROTOCOL
from oasis_gym.train.task_policy import load_task_policy

pytest_plugins = ["llm_fixtures"]
L = llm_module()

USERS, STEPS = 200, 8
ENVS = {"recommender": RecommenderEnv, "moderator": ModeratorEnv}
VERSION = {"recommender": "4", "moderator": "2"}
# a baseline of each task besides PPO: its saved parameters, not a model
BASELINE = {"recommender": "tuned_campaign_detector", "moderator": "tuned_classifier"}
TINY = ["--users", str(USERS), "--max-steps", "5", "--timesteps", "400", "--n-envs", "4", "--n-steps", "10",
        "--batch-size", "20", "--cem-iterations", "1", "--cem-population", "3", "--eval-seeds", "9000", "9001",
        "9002", "--tune-seeds", "5000"]  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """task -> the folder `oasis-gym train TASK --version N` wrote (400 PPO timesteps)."""
    out = {}
    for task, version in VERSION.items():
        folder = tmp_path_factory.mktemp(task) / "run"
        cmd = [sys.executable, "-m", "oasis_gym.cli", "train", task, "--version", version, *TINY, "--out", str(folder),
               "--quiet"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr
        out[task] = folder
    return out


@pytest.mark.parametrize("task", list(ENVS))
def test_the_loaded_policies_replay_their_training_runs_evaluation_bit_for_bit(runs, task):
    saved = json.loads((runs[task] / "eval.json").read_text())
    for name, path in (("ppo", runs[task]), ("ppo", runs[task] / "model.zip"), (BASELINE[task], runs[task])):
        policy = load_task_policy(path, name)
        assert policy.task_id == f"{task}-v{VERSION[task]}"
        got = evaluate(policy, task, policy.args.difficulty, **{k: getattr(policy.args, k) for k in PROTOCOL})
        for s, res in got["eval_sets"].items():
            assert res["runs"] == saved["eval_sets"][s]["runs"][name], f"{name} on the {s}"
    settings = {k: getattr(policy.args, k) for k in PROTOCOL}  # evaluate takes the run's path as well
    by_path = evaluate(runs[task] / "model.zip", task, policy.args.difficulty, **settings)
    for s, res in by_path["eval_sets"].items():
        assert res["runs"] == saved["eval_sets"][s]["runs"]["ppo"], f"ppo by its path on the {s}"
    vec = gym.make_vec(f"oasis_gym/{task.capitalize()}-v{VERSION[task]}", num_envs=3, users=USERS, max_steps=5)
    obs, _ = vec.reset(seed=9000)
    for _ in range(5):  # the native vector env: one batched call for its K episodes
        action = policy(obs)
        assert vec.action_space.contains(action)
        obs = vec.step(action)[0]
    vec.close()


def _episode(env, policy, seed: int = 9000) -> list:
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for _ in range(STEPS):
        action = policy(obs)
        assert env.action_space.contains(action)
        out.append(env.step(action))
        obs = out[-1][0]
        assert env.observation_space.contains(obs)
    return out


@pytest.mark.parametrize("task", list(ENVS))
def test_on_the_platform_with_task_users_it_plays_the_fast_paths_episode_bit_for_bit(runs, task):
    cls = ENVS[task]
    for name in ("ppo", BASELINE[task]):
        policy = load_task_policy(runs[task], name)
        settings = {"difficulty": "hard", "users": USERS, "max_steps": STEPS, "privileged_info": True}
        fast = _episode(cls(**settings), policy)
        env = cls(backend="platform", **settings)
        _assert_same(fast, _episode(env, policy), f"{task} {name}")
        env.close()


@pytest.mark.parametrize("task", list(ENVS))
def test_on_the_platform_with_abm_users_for_some_it_plays_and_the_spaces_check(runs, task):
    policy = load_task_policy(runs[task])
    settings = {"difficulty": "hard", "users": USERS, "max_steps": STEPS, "backend": "platform"}
    env = ENVS[task](user_policy=ABMPolicy(), policy_users=np.arange(0, USERS, 3), **settings)
    check_env(env, skip_render_check=True)
    mixed = _episode(env, policy)
    env.close()
    env = ENVS[task](**settings)
    alone = _episode(env, policy)
    env.close()
    assert mixed[-1][3] and any(not np.array_equal(a[0], b[0]) for a, b in zip(mixed[1:], alone[1:]))


def _llm(backend) -> LLMPolicy:
    config = L.SchemaConfig(max_text_chars=24, max_query_chars=12, max_reason_chars=0)
    return LLMPolicy(core=L.LLMPolicyCore(backend, schema_config=config, max_tokens=64))


@pytest.mark.parametrize("task", list(ENVS))
def test_llm_users_for_some_play_beside_the_trained_policy_and_the_model_counts_what_they_did(
    runs, task, tiny_backend, tmp_path
):
    policy, db = load_task_policy(runs[task]), tmp_path / "llm.db"
    theirs = np.arange(0, USERS, 10)
    env = ENVS[task](difficulty="hard", users=USERS, max_steps=STEPS, backend="platform", journal=True,
                     db_path=str(db), user_policy=_llm(tiny_backend), policy_users=theirs)  # fmt: skip
    # Gymnasium's checker, its same-seed determinism check included: the LLM users' posts are task
    # posts (world/user_posts.py), and an LLMPolicy's reset empties its memory and reseeds its requests
    check_env(env, skip_render_check=True)
    out = _episode(env, policy)
    assert out[-1][3] and all(np.isfinite(step[1]) for step in out[1:])
    world = env.world
    st, accounts = world.state, world.alias[theirs]
    env.close()
    ids = ",".join(map(str, accounts.tolist()))
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        acted = conn.execute(f"SELECT COUNT(*) FROM trace WHERE user_id IN ({ids}) AND action != 'do_nothing'")
        likes = conn.execute(f"SELECT user_id, post_id FROM 'like' WHERE user_id IN ({ids})").fetchall()
        reposts = conn.execute(f"SELECT user_id, post_id FROM post WHERE original_post_id IS NOT NULL "
                               f"AND user_id IN ({ids})").fetchall()  # fmt: skip
        bad = conn.execute(f"SELECT COUNT(*) FROM trace WHERE user_id IN ({ids}) AND result = 'invalid_action'")
        assert acted.fetchone()[0] > 0 and bad.fetchone()[0] == 0
    engaged = {int(u) for u, _ in likes} | {int(u) for u, _ in reposts}
    assert likes, "the LLM users liked nothing in the episode"
    user_of = {int(a): int(u) for a, u in zip(accounts, theirs)}
    for account, post in likes:  # each like of a task post is the model's engagement
        slot = np.flatnonzero(world.pid == post)
        if len(slot):
            assert st.engaged_pairs.contains(0, user_of[account], slot[0]), (account, post)
    for account, user in user_of.items():  # the ranking service's engagement summary is what they did
        assert (st.eng_ema[0, user] > 0) == (account in engaged), account
    assert (st.satisfaction[0, theirs] != 0.6).any()  # the model's satisfaction of them moved (from 0.6)


def test_loading_reads_the_run_and_changes_nothing_there(runs):
    folder = runs["moderator"]
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    load_task_policy(folder)
    load_task_policy(folder, "tuned_report_threshold")
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


def test_bad_input_is_one_line_before_any_model_is_loaded(runs, tmp_path):
    run = runs["recommender"]
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "results.json").write_text((run / "eval.json").read_text())
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "eval.json").write_text("{not json")
    (tmp_path / "notrun").mkdir()
    (tmp_path / "notrun" / "eval.json").write_text('{"settings": [1], "tuned": {}}')
    (tmp_path / "nomodel").mkdir()
    (tmp_path / "nomodel" / "eval.json").write_text((run / "eval.json").read_text())
    cases = [
        ((tmp_path / "nothing",), "no run of oasis-gym train or benchmark here"),
        ((tmp_path / "broken",), "not a training run's results"),
        ((tmp_path / "notrun",), "not a training run's results"),
        ((tmp_path / "nomodel",), "no such model"),
        ((bench,), "a benchmark of several PPO seeds: name one"),
        ((run, "best"), "no policy 'best' in"),
        ((run, "campaign_told (privileged)"), "reads the fast path's hidden truth"),
        ((run, 3), "name must be a policy's name"),
    ]
    for args, message in cases:
        with pytest.raises(ValueError, match=message) as err:
            load_task_policy(*args)
        assert "\n" not in str(err.value), args
    assert load_task_policy(tmp_path / "nomodel", "tuned_constant").name == "tuned_constant"
    assert load_task_policy(bench, "default_ranking").task_id == "recommender-v4"
    (bench / "seed_0").mkdir()  # a benchmark's PPO seed: its model, the settings in the benchmark's results.json
    for name in ("model.zip", "model.obs_norm.npz"):
        (bench / "seed_0" / name).write_bytes((run / name).read_bytes())
    obs = np.random.default_rng(0).normal(size=(3, 19)).astype(np.float32)
    assert np.array_equal(load_task_policy(bench / "seed_0")(obs), load_task_policy(run)(obs))
