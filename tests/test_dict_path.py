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
    # ints, str or no text, no stance: decoded by type sets; one int out of range or a text of
    # another type: the column by column path
    plain = [
        {"type": i % 23, "post": i % 10, "comment": i, "user": -i, **({"text": "t"} if i % 3 else {})}
        for i in range(200)
    ]
    assert_same(actions_from_dicts(users[:200], plain), one_by_one(users[:200], plain))
    odds = ({"type": 2**31}, {"post": -(2**31)}, {"comment": 2**63}, {"user": -(2**70)}, {"text": b"x"}, {"user": True})
    for odd in (*odds, {"stance": None}):
        with_odd = plain[:50] + [{**plain[50], **odd}] + plain[51:60]
        assert_same(actions_from_dicts(users[:60], with_odd), one_by_one(users[:60], with_odd))
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


def _type_mask_by_slots(avail, n, has, feed, cm, comments, um, user_feats):
    """The action-type mask slot by slot, as it was first written (the reference)."""
    from oasis_gym.actions import NUM_ACTIONS
    from oasis_gym.actions import ActionType as A
    from oasis_gym.sim.batches import FEED_INDEX

    m = np.zeros((n, NUM_ACTIONS), dtype=bool)
    for a in (A.DO_NOTHING, A.REFRESH, A.TREND, A.SEARCH_POSTS, A.SEARCH_USER, A.CREATE_POST):
        m[:, a] = True
    liked, disliked, reposted = (
        feed[..., FEED_INDEX[k]] > 0 for k in ("liked_by_me", "disliked_by_me", "reposted_by_me")
    )
    m[:, A.LIKE_POST], m[:, A.UNLIKE_POST] = (has & ~liked).any(1), (has & liked).any(1)
    m[:, A.DISLIKE_POST], m[:, A.UNDO_DISLIKE_POST] = (has & ~disliked).any(1), (has & disliked).any(1)
    m[:, A.REPOST] = (has & ~reposted).any(1)
    for a in (A.QUOTE_POST, A.CREATE_COMMENT, A.REPORT_POST):
        m[:, a] = has.any(1)
    cl, cd = comments[..., 2] > 0, comments[..., 3] > 0
    m[:, A.LIKE_COMMENT], m[:, A.UNLIKE_COMMENT] = (cm & ~cl).any(1), (cm & cl).any(1)
    m[:, A.DISLIKE_COMMENT], m[:, A.UNDO_DISLIKE_COMMENT] = (cm & ~cd).any(1), (cm & cd).any(1)
    followed, muted = user_feats[..., 1] > 0, user_feats[..., 2] > 0
    m[:, A.FOLLOW], m[:, A.UNFOLLOW] = (um & ~followed).any(1), (um & followed).any(1)
    m[:, A.MUTE], m[:, A.UNMUTE] = (um & ~muted).any(1), (um & muted).any(1)
    m &= avail[None, :]
    m[:, A.DO_NOTHING] = True
    return m.astype(np.int8)


@pytest.mark.parametrize("seed", range(40))
def test_the_counted_type_mask_equals_the_slot_by_slot_one(seed):
    """`type_mask` counts done slots per row; the same mask as slot-by-slot `any`s, also where a
    feature is set on an empty slot (it counts only filled ones) and for every availability."""
    from oasis_gym.actions import NUM_ACTIONS
    from oasis_gym.sim.batches import COMMENT_FEATURES, FEED_FEATURES, VIEW_USER_FEATURES
    from oasis_gym.sim.observation import type_mask

    rng = np.random.default_rng(seed)
    n, K, C, U = int(rng.integers(1, 30)), int(rng.integers(1, 6)), int(rng.integers(1, 3)), int(rng.integers(1, 8))
    dense = rng.random()

    def flags(*shape):
        return (rng.random(shape) < dense).astype(np.float32) * rng.choice([1.0, 2.0, -1.0], shape)

    args = (
        rng.random(NUM_ACTIONS) < 0.8,
        n,
        rng.random((n, K)) < dense,
        flags(n, K, len(FEED_FEATURES)),
        rng.random((n, K * C)) < dense,
        flags(n, K * C, len(COMMENT_FEATURES)),
        rng.random((n, U)) < dense,
        flags(n, U, len(VIEW_USER_FEATURES)),
    )
    np.testing.assert_array_equal(type_mask(*args), _type_mask_by_slots(*args))
