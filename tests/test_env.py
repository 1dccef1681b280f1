"""The PettingZoo envs, MiniGrid-style: the same checks over every env and population."""

from __future__ import annotations

import json
import sqlite3
from importlib import import_module
from pathlib import Path

import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.utils.conversions import parallel_to_aec

import oasis_gym
from oasis_gym.actions import ActionType as A
from oasis_gym.envs import reddit_v0, twitter_v0
from oasis_gym.envs.social_env import SocialMediaEnv

# every registered PettingZoo env: its module name under oasis_gym.envs -> the module
ALL_ENVS = {name: import_module(f"oasis_gym.envs.{name}") for name in oasis_gym.PETTINGZOO_ENVS.values()}
# the social-platform envs (users of a population file or a synthetic one): the cases below; a
# task env has its own tests (TaskPlatform-v0: tests/test_task_platform.py, its API tests included)
ENVS = {name: m for name, m in ALL_ENVS.items() if issubclass(m.parallel_env, SocialMediaEnv)}
OWN_TESTS = {"task_platform_v0": "tests/test_task_platform.py"}


def population_args(kind: str, shared_data) -> dict:
    if kind == "synthetic":
        return {"users": 40, "population_seed": 3}
    if kind == "oasis_csv":
        return {"users": str(shared_data / "False_Business_0.csv")}
    return {"users": str(shared_data / "user_data_36.json")}


CASES = [(e, p) for e in ENVS for p in ("synthetic", "oasis_csv", "oasis_json")]


def make(name, kind, shared_data, **kw):
    kw = {**population_args(kind, shared_data), "activation": 0.5, "max_cycles": 8, **kw}
    return ENVS[name].parallel_env(**kw)


def random_actions(env, obs, rng):
    """Masked random actions; text where the type needs it."""
    actions = {}
    for agent in env.agents:
        space = env.action_space(agent)
        space.seed(int(rng.integers(1 << 31)))
        a = space.sample(mask=obs[agent]["action_mask"])
        a["text"] = f"text of {agent} at random {int(rng.integers(1000))}"
        actions[agent] = a
    return actions


@pytest.mark.parametrize("name,kind", CASES)
def test_parallel_api(name, kind, shared_data):
    parallel_api_test(make(name, kind, shared_data), num_cycles=8)


@pytest.mark.parametrize("name,kind", CASES)
def test_aec_api(name, kind, shared_data):
    api_test(parallel_to_aec(make(name, kind, shared_data)), num_cycles=3)


@pytest.mark.parametrize("name,kind", CASES)
def test_observations_stay_in_their_spaces(name, kind, shared_data):
    env = make(name, kind, shared_data, available_actions=tuple(range(23)))
    obs, infos = env.reset(seed=5)
    rng = np.random.default_rng(0)
    while env.agents:
        for agent, o in obs.items():
            assert env.observation_space(agent).contains(o), agent
        obs, rewards, terms, truncs, infos = env.step(random_actions(env, obs, rng))
        assert all(isinstance(r, float) for r in rewards.values())


def rollout(name, kind, shared_data, seed, tmp_path):
    env = make(name, kind, shared_data, db_path=str(tmp_path / f"{seed}.db"), available_actions=tuple(range(23)))
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    history = []
    while env.agents:
        obs, rewards, _, _, infos = env.step(random_actions(env, obs, rng))
        history.append(
            (
                {
                    a: {
                        k: (v.copy() if not isinstance(v, dict) else {kk: vv.copy() for kk, vv in v.items()})
                        for k, v in o.items()
                    }
                    for a, o in obs.items()
                    if o["active"][0]
                },
                dict(rewards),
                {a: i.get("last_result") for a, i in infos.items()},
            )
        )
    conn = sqlite3.connect(env.sim.db_path)
    journal = conn.execute("SELECT user_id, action, info, step, result FROM trace ORDER BY rowid").fetchall()
    posts = conn.execute("SELECT * FROM post ORDER BY post_id").fetchall()
    env.close()
    return history, journal, posts


def assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


@pytest.mark.parametrize("name,kind", CASES)
def test_same_seed_same_run(name, kind, shared_data, tmp_path):
    """Multi-step determinism: observations, rewards, results and the journal (the stock
    parallel_seed_test compares one step only)."""
    first = rollout(name, kind, shared_data, 7, tmp_path / "a")
    second = rollout(name, kind, shared_data, 7, tmp_path / "b")
    assert_same(first, second)
    other = rollout(name, kind, shared_data, 8, tmp_path / "c")
    assert other[1] != first[1]


def test_the_registry_lists_both_platforms():
    # the parametrized tests cover whatever the registry lists; these two at least
    assert {twitter_v0, reddit_v0} <= set(ENVS.values())
    assert {"oasis_gym/Twitter-v0", "oasis_gym/Reddit-v0"} <= set(oasis_gym.PETTINGZOO_ENVS)
    # an env that is not a social platform is tested in a file of its own, never in none
    assert set(ALL_ENVS) - set(ENVS) == set(OWN_TESTS)
    assert all((Path(__file__).parents[1] / path).is_file() for path in OWN_TESTS.values())


def test_registry_makes_every_env():
    for env_id, name in oasis_gym.PETTINGZOO_ENVS.items():  # registered on `import oasis_gym`
        if name not in ENVS:
            continue
        env = pettingzoo.make("parallel", env_id, users=20, max_cycles=3)
        obs, _ = env.reset(seed=0)
        assert len(obs) == 20
        aec = pettingzoo.make("aec", env_id, users=20, max_cycles=3)
        aec.reset(seed=0)
        assert aec.agents


def test_inactive_users_share_one_constant_observation():
    env = twitter_v0.parallel_env(users=2000, activation=0.01, max_cycles=2)
    obs, infos = env.reset(seed=0)
    inactive = [o for o in obs.values() if not o["active"][0]]
    assert len(inactive) > 1900 and all(o is inactive[0] for o in inactive)
    assert inactive[0]["action_mask"]["type"].tolist() == [1] + [0] * 22
    active = [a for a, i in infos.items() if i["active"]]
    assert len(active) == len(env.sim.obs.users) > 0


def test_bad_actions_are_recorded_noops(tmp_path):
    env = twitter_v0.parallel_env(
        users=30, activation=1.0, db_path=str(tmp_path / "r.db"), max_cycles=3, available_actions=tuple(range(23))
    )
    obs, _ = env.reset(seed=1)
    agents = env.agents[:8]
    bad = {
        agents[0]: {"type": float("nan")},
        agents[1]: {"type": 99},
        agents[2]: np.zeros((2, 2)),
        agents[3]: {"type": A.LIKE_POST, "post": 999},
        agents[4]: "like",
        agents[5]: {"type": A.CREATE_POST, "text": 12345},
        agents[6]: {"type": A.FOLLOW, "user": -5},
        agents[7]: {"type": A.CREATE_POST, "text": "'; DROP TABLE trace; --"},
    }
    before = env.sim.platform.n_posts
    _, _, _, _, infos = env.step(bad)
    results = [infos[a]["last_result"] for a in agents]
    assert results == [
        "invalid_action",
        "invalid_action",
        "invalid_action",
        "unknown_post",
        "invalid_action",
        "invalid_action",
        "unknown_target_user",
        "ok",
    ]
    assert env.sim.platform.n_posts == before + 1
    env.sim.journal.flush()  # mid-episode, the journal's writer thread may still be committing the step
    conn = sqlite3.connect(env.sim.db_path)
    assert conn.execute("SELECT COUNT(*) FROM trace WHERE step=0").fetchone()[0] == 8
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with pytest.raises(KeyError, match="unknown agent"):
        env.step({"user_99999": 0})
    with pytest.raises(KeyError):
        env.step({"recommender_7": 0})


def test_info_actions_shape_the_next_observation():
    env = twitter_v0.parallel_env(users=30, activation=1.0, max_cycles=5, available_actions=tuple(range(23)))
    obs, _ = env.reset(seed=2)
    pf = env.sim.platform
    pf.create_posts(np.array([1, 2, 3]), ["unique zebra story", "another zebra tale", "no match here"])
    searcher, trender, finder = env.agents[5], env.agents[6], env.agents[7]
    obs, *_ = env.step(
        {
            searcher: {"type": A.SEARCH_POSTS, "text": "zebra"},
            trender: {"type": A.TREND},
            finder: {"type": A.SEARCH_USER, "text": "u"},
        }
    )
    ids = obs[searcher]["post_ids"]
    zebra = {i for i in range(pf.n_posts) if "zebra" in pf.p_content[i]}
    assert set(ids[ids >= 0].tolist()) == zebra
    trend = obs[trender]["post_ids"]
    assert trend[0] == pf.trending(6)[0]
    assert (obs[finder]["users"][env.sim.K :, 3] == 1).any()


def test_step_batch_fast_path_matches_dict_path(tmp_path):
    from oasis_gym.policies.base import RandomPolicy, actions_from_dicts

    def run(fast: bool):
        env = twitter_v0.parallel_env(users=200, activation=0.3, max_cycles=4, db_path=str(tmp_path / f"{fast}.db"))
        env.reset(seed=3)
        policy = RandomPolicy()
        policy.reset(env, np.arange(200), 3)
        while env.agents:
            acts = policy.act(env, env.sim.obs)
            if fast:
                env.step_batch(acts)
            else:
                env.step(
                    {
                        f"user_{u}": {"type": t, "post": p, "comment": c, "user": us}
                        for u, t, p, c, us in zip(acts.users, acts.type, acts.post, acts.comment, acts.user)
                    }
                )
        return sqlite3.connect(env.sim.db_path).execute("SELECT user_id, action, info, result FROM trace").fetchall()

    assert run(True) == run(False)
    assert actions_from_dicts(np.array([1]), [{"type": 3}]).type.tolist() == [3]


def test_render_ansi():
    env = reddit_v0.parallel_env(users=20, activation=1.0, render_mode="ansi", max_cycles=2)
    obs, _ = env.reset(seed=0)
    env.step(random_actions(env, obs, np.random.default_rng(0)))
    text = env.render()
    assert "step 1" in text and "active" in text and "actions:" in text


def test_feed_view_matches_the_observation_and_feed_text_is_its_text():
    env = twitter_v0.parallel_env(users=40, activation=1.0, max_cycles=3, available_actions=tuple(range(23)))
    obs, _ = env.reset(seed=4)
    agent = env.active_agents[0]
    view = env.feed_view(agent)
    text = env.feed_text(agent)  # it returned the dict: now the text a person reads
    assert isinstance(text, str) and text.startswith(f"{agent}: ") and view["persona"] in text
    assert all(f"post {p['post_id']} by @{p['author_name']}" in text and p["text"] in text for p in view["posts"])
    assert "May do: " + ", ".join(view["allowed_actions"]) in text
    ids = obs[agent]["post_ids"]
    assert [p["post_id"] for p in view["posts"]] == ids[ids >= 0].tolist()
    assert view["agent"] == agent and view["persona"]
    names = set(view["allowed_actions"])
    assert names == {
        n for n, m in zip(__import__("oasis_gym.actions").actions.ACTION_NAMES, obs[agent]["action_mask"]["type"]) if m
    }


def test_cli_run_leaves_a_journal_with_one_trace_row_per_action(tmp_path, capsys):
    from oasis_gym.cli import main

    db = tmp_path / "cli.db"
    assert (
        main(
            [
                "run",
                "--users",
                "300",
                "--steps",
                "5",
                "--policy",
                "abm",
                "--db",
                str(db),
                "--activation",
                "0.2",
                "--quiet",
                "--logdir",
                str(tmp_path / "tb"),
                "--json",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM trace").fetchone()[0] == summary["actions"] > 0
    assert conn.execute("SELECT MAX(step) FROM trace").fetchone()[0] == 4


def test_cli_resume_continues_like_an_uninterrupted_run(tmp_path, capsys):
    from oasis_gym.cli import main

    common = ["--users", "300", "--policy", "abm", "--activation", "0.3", "--quiet", "--no-tensorboard"]
    assert main(["run", "--steps", "8", "--db", str(tmp_path / "full.db"), *common]) == 0
    assert main(["run", "--steps", "4", "--db", str(tmp_path / "part.db"), *common]) == 0
    assert main(["run", "--resume", str(tmp_path / "part.db"), "--steps", "8", "--quiet", "--no-tensorboard"]) == 0
    query = "SELECT user_id, action, info, step, result FROM trace ORDER BY rowid"
    full = sqlite3.connect(tmp_path / "full.db").execute(query).fetchall()
    assert full == sqlite3.connect(tmp_path / "part.db").execute(query).fetchall()
    assert max(r[3] for r in full) == 7


def test_a_kept_journal_gets_its_query_indexes_at_close(tmp_path):
    db = tmp_path / "kept.db"
    env = twitter_v0.parallel_env(users=30, max_cycles=3, db_path=str(db))
    for seed in (0, 1):  # a reset replaces the journal: the first episode's is deleted, not indexed
        obs, _ = env.reset(seed=seed)
        env.step({a: env.action_space(a).sample(mask=obs[a]["action_mask"]) for a in env.agents})
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name='idx_trace_step'").fetchone()[0] == 0
    env.close()
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name='idx_trace_step'").fetchone()[0] == 1
    plan = " ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN SELECT * FROM post WHERE user_id = 3"))
    assert "idx_post_user" in plan
