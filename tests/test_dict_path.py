"""The PettingZoo dict path in one pass: a step's action dicts read column by column give
what `parse_action` gives one by one (valid, odd and malformed values alike); the
observation dicts are views of the batch; the inactive agents share one info and one
observation."""

from __future__ import annotations

import random

import numpy as np
import pytest

from oasis_gym.actions import ACTION_BY_NAME
from oasis_gym.envs import twitter_v0
from oasis_gym.sim.action_values import _from_rows, actions_from_dicts, parse_action

ODD = [0, 1, 5, -3, 2**31, -(2**31), 2**31 - 1, 2**63, 2**70, True, False, 1.0, 2.5, float("nan"), float("inf")]
ODD += [np.int32(3), np.int64(2**40), np.float32(4.0), np.array(7), np.array([1, 2]), "3", None, [1]]
TEXTS = [None, "hi", 3, b"x", ""]
STANCES = [None, 0.5, 2, -3.5, float("nan"), float("inf"), "0.2", "x", np.float32(0.3), True, 1, 10**400]


def one_by_one(users, actions):
    return _from_rows(np.asarray(users, dtype=np.int64), [parse_action(a) for a in actions])


def assert_same(a, b):
    for field in ("users", "type", "post", "comment", "user"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.text == b.text
    assert a.stance.dtype == b.stance.dtype and np.array_equal(a.stance, b.stance, equal_nan=True)


@pytest.mark.parametrize("seed", [0, 1])
def test_columns_equal_the_one_by_one_decoding(seed):
    rng = random.Random(seed)
    actions = []
    for _ in range(5000):
        act = {}
        for key in ("type", "post", "comment", "user"):
            if rng.random() < 0.8:
                act[key] = rng.choice(ODD) if rng.random() < 0.3 else rng.randint(0, 20)
        if rng.random() < 0.5:
            act["text"] = rng.choice(TEXTS)
        if rng.random() < 0.5:
            act["stance"] = rng.choice(STANCES)
        actions.append(act)
    users = np.arange(len(actions))
    assert_same(actions_from_dicts(users, actions), one_by_one(users, actions))
    clean = [{"type": i % 23, "post": i % 10, "text": "t" if i % 3 else None, "stance": 0.1} for i in range(300)]
    assert_same(actions_from_dicts(users[:300], clean), one_by_one(users[:300], clean))
    mixed = actions[:40] + [5, np.array([1, 2, 3, 4]), {"type": 2}]  # not only dicts: one by one
    assert_same(actions_from_dicts(users[:43], mixed), one_by_one(users[:43], mixed))
    assert len(actions_from_dicts(users[:0], []).type) == 0


def env_after_a_step():
    env = twitter_v0.parallel_env(users=60, activation=0.5, max_cycles=5)
    obs, infos = env.reset(seed=3)
    active = env.active_agents
    actions = {a: {"type": int(ACTION_BY_NAME["like_post"]), "post": 0} for a in active[: len(active) // 2]}
    return env, env.step(actions)


def test_observations_are_row_views_of_the_batch_and_inactive_ones_are_shared():
    env, (obs, rewards, terms, truncs, infos) = env_after_a_step()
    batch = env.sim.obs
    active = set(env.active_agents)
    assert active and len(active) < 60
    for row, u in enumerate(batch.users.tolist()):
        o, want = obs[f"user_{u}"], env.row_observation(batch, row)
        assert o.keys() == want.keys() and o["action_mask"].keys() == want["action_mask"].keys()
        for key in ("post_ids", "feed", "comment_ids", "comments", "user_ids", "users", "self"):
            assert np.array_equal(o[key], want[key]) and o[key].base is not None  # a view
        for key, mask in o["action_mask"].items():
            assert np.array_equal(mask, want["action_mask"][key])
        assert o["active"].tolist() == [1] and env.observation_space(f"user_{u}").contains(o)
        assert infos[f"user_{u}"]["active"] is True
    inactive = [a for a in env.agents if a not in active]
    assert len({id(obs[a]) for a in inactive}) == 1 and obs[inactive[0]]["active"].tolist() == [0]
    quiet = [a for a in inactive if "last_action" not in infos[a]]  # (those who acted: their result)
    assert len({id(infos[a]) for a in quiet}) == 1 and infos[quiet[0]] == {"active": False}
    env.close()


def test_acted_users_get_their_result_and_unknown_agents_are_refused():
    env, (obs, rewards, terms, truncs, infos) = env_after_a_step()
    acted = [a for a in infos if "last_action" in infos[a]]
    assert acted and all(infos[a]["last_action"] == "like_post" for a in acted)
    with pytest.raises(KeyError, match="nobody"):
        env.step({"nobody": 0, "user_0": 0})
    env.close()
