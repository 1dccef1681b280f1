"""TaskPlatform-v0 (`envs/task_platform_v0.py`, issue 52): Recommender-v4 / Moderator-v2 on the
platform as a PettingZoo parallel env. Its platform agent is the Gymnasium env's (spaces, reward,
the same episode bit for bit), agent users act through the world's user-policy route, PettingZoo's
API tests pass, and a policy trained on the fast path plays it unchanged as `recommender_0` and as
`moderator_0` beside rule-based users, ABM users and the fixtures' tiny random LLM."""

from __future__ import annotations

import sqlite3

import numpy as np
import pettingzoo
import pytest
from llm_fixtures import llm_module
from pettingzoo.test import api_test, parallel_api_test
from test_one_world import _assert_same
from test_transfer import _llm, runs  # noqa: F401 - the fixture of the trained runs, reused

import oasis_gym
from oasis_gym.actions import ActionType as A
from oasis_gym.envs import task_platform_v0
from oasis_gym.envs.moderator_v2 import ModeratorEnv
from oasis_gym.envs.recommender_v4 import RecommenderEnv
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.train.task_policy import load_task_policy

pytest_plugins = ["llm_fixtures"]
L = llm_module()

USERS, STEPS = 120, 4
TASKS = {"recommender": (RecommenderEnv, "recommender_0"), "moderator": (ModeratorEnv, "moderator_0")}


def _gym_episode(env, actions, seed=9000) -> list:
    out = [env.reset(seed=seed)[0]]
    out += [env.step(a) for a in actions]
    return out


def _parallel_episode(env, actions, seed=9000, users=None) -> list:
    """The platform agent's part of an episode, as `_gym_episode` returns it."""
    observations, _ = env.reset(seed=seed)
    agent, out = env.platform_agent, [observations[env.platform_agent]]
    for a in actions:
        step = {u: users(u, o) for u, o in observations.items() if u != agent} if users else {}
        observations, rewards, terms, truncs, infos = env.step({**step, agent: a})
        out.append((observations[agent], rewards[agent], terms[agent], truncs[agent], infos[agent]))
    return out


@pytest.mark.parametrize("task", list(TASKS))
def test_the_platform_agent_is_the_gymnasium_envs_spaces_reward_and_episode_bit_for_bit(task, tmp_path):
    cls, agent = TASKS[task]
    settings = {"difficulty": "hard", "users": USERS, "max_steps": STEPS}
    for journal in (False, True):
        db = {"db_path": str(tmp_path / f"{journal}-gym.db")} if journal else {}
        gym_env = cls(backend="platform", journal=journal, **db, **settings)
        space = gym_env.action_space
        space.seed(3)
        actions = [space.sample() for _ in range(STEPS)]
        want = _gym_episode(gym_env, actions)
        db = {"db_path": str(tmp_path / f"{journal}-ptz.db")} if journal else {}
        env = task_platform_v0.parallel_env(task=task, journal=journal, **db, **settings)
        assert env.possible_agents == [agent]
        assert env.observation_space(agent) == gym_env.observation_space
        assert env.action_space(agent) == gym_env.action_space
        _assert_same(want, _parallel_episode(env, actions), f"{task} journal={journal}")
        assert not env.agents
        env.close()
        gym_env.close()


@pytest.mark.parametrize("task", list(TASKS))
def test_pettingzoos_parallel_and_aec_api_tests_pass_with_agent_users(task):
    settings = {"task": task, "users": 60, "max_steps": 6, "agent_users": [0, 5, 7]}
    parallel_api_test(task_platform_v0.parallel_env(**settings), num_cycles=6)
    api_test(task_platform_v0.env(**settings), num_cycles=6)
    env = pettingzoo.make("parallel", "oasis_gym/TaskPlatform-v0", **settings)  # the registered id
    assert "oasis_gym/TaskPlatform-v0" in oasis_gym.PETTINGZOO_ENVS
    assert env.possible_agents == [TASKS[task][1], "user_0", "user_5", "user_7"]


def _like_first(agent, obs) -> dict:
    """A user agent that likes the first post of the feed it observed (after a visit)."""
    return {"type": int(A.LIKE_POST), "post": 0} if obs["active"][0] else {"type": int(A.DO_NOTHING)}


def test_agent_users_likes_are_platform_rows_the_world_counts_and_other_actions_are_rejected(tmp_path):
    db, theirs = tmp_path / "agents.db", list(range(0, USERS, 2))
    env = task_platform_v0.parallel_env(task="recommender", users=USERS, max_steps=8, journal=True, db_path=str(db),
                                        agent_users=theirs)  # fmt: skip
    observations, _ = env.reset(seed=9000)
    results, follows = [], 0
    while env.agents:
        actions = {a: _like_first(a, o) for a, o in observations.items() if a.startswith("user_")}
        for a in list(actions)[:3]:  # a type the task platform does not offer
            actions[a], follows = {"type": int(A.FOLLOW), "user": 0}, follows + 1
        actions["recommender_0"] = env.action_space("recommender_0").sample()
        observations, rewards, _, _, infos = env.step(actions)
        results += [(i["last_action"], i["last_result"]) for a, i in infos.items() if "last_result" in i]
        for a, o in observations.items():
            assert env.observation_space(a).contains(o), a
            assert a == "recommender_0" or bool(o["active"][0]) == infos[a]["active"]
    world = env.task_env.world
    st = world.state
    env.close()
    assert ("like_post", "ok") in results and ("follow", "action_unavailable") in results
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        likes = conn.execute("SELECT user_id, post_id FROM 'like'").fetchall()
        refused = conn.execute("SELECT COUNT(*) FROM trace WHERE action = 'follow'").fetchone()[0]
    assert refused >= 1
    user_of = {int(world.alias[u]): u for u in theirs}
    mine = [(user_of[a], p) for a, p in likes if a in user_of]
    assert mine, "the agent users liked nothing"
    for user, post in mine:  # each like of a task post is the model's engagement of that user
        slot = np.flatnonzero(world.pid == post)
        assert len(slot) and st.engaged_pairs.contains(0, user, slot[0]), (user, post)


def test_malformed_or_textless_user_actions_are_rejected_rows_and_a_user_policy_drives_the_other_users():
    env = task_platform_v0.parallel_env(users=60, max_steps=6, agent_users=list(range(60)))
    observations, _ = env.reset(seed=2)
    results = set()
    while env.agents:
        kinds = ("banana", {"type": int(A.CREATE_POST), "text": "hello there"}, {"type": int(A.CREATE_POST)})
        actions = {a: kinds[i % 3] for i, a in enumerate(env.agents[1:])}
        actions["recommender_0"] = env.action_space("recommender_0").sample()
        observations, _, _, _, infos = env.step(actions)
        results |= {(i["last_action"], i["last_result"]) for i in infos.values() if "last_result" in i}
    env.close()
    assert results == {("invalid", "invalid_action"), ("create_post", "ok"), ("create_post", "text_empty")}
    env = task_platform_v0.parallel_env(users=60, max_steps=2, agent_users=[0, 9], user_policy=ABMPolicy())
    assert not env.task_env.world.task_users.any()  # ABM drives all 58 others, the agents 0 and 9
    env.close()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"task": "ranker"}, "task must be one of"),
        ({"agent_users": [0, USERS]}, "agent_users must be user indexes in"),
        ({"agent_users": [3, 3]}, "agent_users names a user twice"),
        ({"agent_users": ["a"]}, "agent_users must be a list of user indexes"),
        ({"agent_users": [1], "user_policy": ABMPolicy(), "policy_users": [1, 2]}, "share users"),
        ({"render_mode": "human"}, "render_mode must be None"),
        ({"journal": "yes"}, "journal must be True or False"),
    ],
)
def test_bad_arguments_are_refused_with_one_line_before_anything_is_built(settings, message):
    with pytest.raises(ValueError, match=message) as err:
        task_platform_v0.parallel_env(**{"users": USERS, **settings})
    assert "\n" not in str(err.value)


def test_a_step_without_the_platform_agent_or_with_an_unknown_agent_is_refused():
    env = task_platform_v0.parallel_env(users=USERS, max_steps=2, agent_users=[1])
    env.reset(seed=1)
    with pytest.raises(KeyError, match="no action for recommender_0"):
        env.step({"user_1": 0})
    with pytest.raises(KeyError, match="unknown agent"):
        env.step({"recommender_0": env.action_space("recommender_0").sample(), "user_2": 0})
    env.close()


@pytest.mark.parametrize("task", list(TASKS))
def test_a_policy_trained_on_the_fast_path_plays_as_the_platform_agent_in_every_world(runs, task, tiny_backend):  # noqa: F811
    """The trained policy, unchanged, as the platform agent: with the task's rule-based users, with
    ABM users for some, with the tiny LLM for some beside agent users; spaces the Gymnasium env's."""
    policy = load_task_policy(runs[task])
    assert policy.task_id == f"{task}-v{4 if task == 'recommender' else 2}"
    cls, agent = TASKS[task]
    settings = {"task": task, "difficulty": "hard", "users": 200, "max_steps": STEPS}
    gym_env = cls(**{k: v for k, v in settings.items() if k != "task"})
    worlds = [
        {},
        {"user_policy": ABMPolicy(), "policy_users": list(range(0, 200, 3))},
        {"user_policy": _llm(tiny_backend), "policy_users": list(range(0, 200, 10)), "agent_users": [1, 2]},
    ]
    for world in worlds:
        env = task_platform_v0.parallel_env(**settings, **world)
        assert env.observation_space(agent) == gym_env.observation_space
        assert env.action_space(agent) == gym_env.action_space
        ret = task_platform_v0.play(env, policy, seed=9000, users=_like_first if "agent_users" in world else None)
        assert np.isfinite(ret) and not env.agents, world
        env.close()
    gym_env.close()
