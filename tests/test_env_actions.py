"""Every registered env refuses a bad action with one clear error before anything changes:
NaN, infinities, codes out of range or not integral, another shape, not numbers; through
`gymnasium.make` and `gymnasium.make_vec` ("vector_entry_point" and "sync") alike, for every
id of `oasis_gym.GYMNASIUM_ENVS` and every tier / action space it takes, and for the
PettingZoo envs' `recommender_0` / `moderator_0` (issue 53, item 2). One check does it all
(`oasis_gym.checks.action_array`, over the action space: `envs/agent_spaces.check_action`).
Small envs: the v0 envs 30 users and 3 cycles, the v1 envs 60 users and 3 steps."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import oasis_gym
from oasis_gym.checks import action_array
from oasis_gym.envs import reddit_v0, twitter_v0

SMALL_V0 = {"users": 30, "max_cycles": 3, "activation": 0.5, "journal": False}
SMALL_V1 = {"users": 60, "max_steps": 3}
K = 2  # envs of a vector env


def variants(env_id: str) -> dict[str, dict]:
    """Every tier and action space an id takes: {label: its arguments beyond the small ones}."""
    if "Moderator-v0" in env_id:  # 6 codes (fact-check requests) or 5
        return {f"check_action={c}": {"agent_params": {"check_action": c}} for c in (True, False)}
    rankings = ("per_user", "global") if "Recommender" in env_id else (None,)
    tiers = ("easy", "medium", "hard") if env_id in oasis_gym.GYMNASIUM_VECTOR_ENVS else (None,)
    return {
        "-".join(filter(None, (t, r))): {**({"difficulty": t} if t else {}), **({"ranking": r} if r else {})}
        for t in tiers
        for r in rankings
    }


CASES = [
    pytest.param(env_id, kw, mode, id=f"{env_id.split('/')[1]}-{label}-{mode}")
    for env_id in oasis_gym.GYMNASIUM_ENVS
    for label, kw in variants(env_id).items()
    for mode in ("single", "vector_entry_point", "sync")
    if mode != "vector_entry_point" or env_id in oasis_gym.GYMNASIUM_VECTOR_ENVS
]


def make(env_id: str, kw: dict, mode: str):
    """The env of `mode`: gymnasium.make's, or make_vec's with K envs."""
    kw = {**(SMALL_V1 if env_id in oasis_gym.GYMNASIUM_VECTOR_ENVS else SMALL_V0), **kw}
    if mode == "single":
        return gymnasium.make(env_id, **kw)
    return gymnasium.make_vec(env_id, num_envs=K, vectorization_mode=mode, **kw)


def bad_actions(space: gymnasium.Space, row: int | None) -> list[tuple[object, str]]:
    """(action, what the error must show) for each kind of bad action of `space` (a single
    env's); with a `row`: K rows, the bad value in that one."""
    batched = row is not None
    codes = isinstance(space, gymnasium.spaces.MultiDiscrete)
    n = space.shape[0]
    top = int(np.max(space.nvec)) if codes else None

    def with_value(value, dtype=np.float64):
        a = np.zeros((K, n) if batched else (n,), dtype)
        a[(row, 1) if batched else 1] = value
        return a

    cases = [(with_value(np.nan), "nan"), (with_value(np.inf), "inf"), (with_value(-np.inf), "-inf")]
    if codes:
        cases += [
            (with_value(-1, np.int64), "-1"),
            (with_value(top, np.int64), str(top)),
            (with_value(99, np.int64), "99"),
            (with_value(2.7), "2.7"),
        ]
    else:
        cases.append((with_value(1e39), "1e+39"))  # beyond float32: not a finite float32
    short = np.zeros((K, n - 1) if batched else (n - 1,), np.int64 if codes else np.float32)
    cases += [
        (short, "shape"),
        (np.zeros((K, n, 1) if batched else (n, 1)), "shape"),
        (np.zeros((K, n) if batched else (n,), bool), "bool"),
        (np.full((K, n) if batched else (n,), "1"), "<U1"),
    ]
    return cases


def fresh_step(env_id: str, kw: dict, mode: str, action) -> tuple:
    """The first step of a fresh env with seed 7: what a refused action must not change."""
    env = make(env_id, kw, mode)
    try:
        env.reset(seed=7)
        return env.step(action)[:2]
    finally:
        env.close()


@pytest.mark.parametrize(("env_id", "kw", "mode"), CASES)
def test_every_registered_env_refuses_bad_actions_and_nothing_changes(env_id, kw, mode):
    env = make(env_id, kw, mode)
    batched = mode != "single"
    single = env.single_action_space if batched else env.action_space
    # the native vector env checks the whole batch first: the bad value may be in any env, here
    # the last. Gymnasium's SyncVectorEnv steps its envs one after another, each checking its
    # own action: those before the refused one have stepped, so there the bad value is in env 0
    row = {"single": None, "vector_entry_point": K - 1, "sync": 0}[mode]
    try:
        env.reset(seed=7)
        for action, shown in bad_actions(single, row):
            with pytest.raises(ValueError, match=r"expected .*, got ") as err:
                env.step(action)
            message = str(err.value)
            assert env_id in message and shown in message, message
            assert "\n" not in message
            if mode == "vector_entry_point" and shown not in ("shape", "bool", "<U1"):
                assert f"env {K - 1}, index 1" in message, message  # the env of the bad value
        if mode == "vector_entry_point":  # a row too many or too few (sync: Gymnasium's own zip error)
            for rows in (K - 1, K + 1):
                with pytest.raises(ValueError, match=rf"{env_id} action: expected .*, got an array of shape \({rows},"):
                    env.step(np.zeros((rows, *single.shape), single.dtype))
        codes = isinstance(single, gymnasium.spaces.MultiDiscrete)
        valid = np.full(env.action_space.shape, 1 if codes else 0.5, env.action_space.dtype)
        obs, reward = env.step(valid)[:2]
    finally:
        env.close()
    ref_obs, ref_reward = fresh_step(env_id, kw, mode, valid)  # the refused steps changed nothing
    np.testing.assert_array_equal(obs, ref_obs)
    np.testing.assert_array_equal(reward, ref_reward)


@pytest.mark.parametrize("env_id", [i for i in oasis_gym.GYMNASIUM_VECTOR_ENVS if "Recommender" in i])
def test_ranking_values_outside_the_box_are_clipped(env_id):
    """A ranking's finite values outside [-1, 1] are clipped (as documented, as Recommender-v0
    does and as RL libraries do): the same step as the clipped action."""
    env = gymnasium.make(env_id, **SMALL_V1)
    action = np.linspace(-3, 3, env.action_space.shape[0])
    env.close()
    big = fresh_step(env_id, {}, "single", action)
    clipped = fresh_step(env_id, {}, "single", np.clip(action, -1, 1).astype(np.float32))
    np.testing.assert_array_equal(big[0], clipped[0])
    assert big[1] == clipped[1]


def test_integral_float_codes_are_the_integer_codes():
    """Moderator-v1 takes codes given as integral floats (2.0), as documented: the same step."""
    codes = np.stack([np.arange(16) % 4, np.arange(16)[::-1] % 4])
    as_ints = fresh_step("oasis_gym/Moderator-v1", {}, "vector_entry_point", codes)
    as_floats = fresh_step("oasis_gym/Moderator-v1", {}, "vector_entry_point", codes.astype(np.float64))
    np.testing.assert_array_equal(as_ints[0], as_floats[0])
    np.testing.assert_array_equal(as_ints[1], as_floats[1])


@pytest.mark.parametrize("module", [twitter_v0, reddit_v0])
def test_the_pettingzoo_platform_agents_refuse_bad_actions(module):
    env = module.parallel_env(users=30, activation=0.5, max_cycles=3, recommender_agent=True, moderator_agent=True)
    try:
        env.reset(seed=7)
        n = env.action_space("recommender_0").shape[0]
        m = env.action_space("moderator_0").shape[0]
        bad = [
            ("recommender_0", np.r_[np.nan, np.zeros(n - 1)], "nan"),
            ("recommender_0", np.r_[np.zeros(n - 1), np.inf], "inf"),
            ("recommender_0", np.zeros(n - 1), "shape"),
            ("recommender_0", np.zeros((n, 1)), "shape"),
            ("moderator_0", np.r_[-1, np.zeros(m - 1, int)], "-1"),
            ("moderator_0", np.r_[99, np.zeros(m - 1, int)], "99"),
            ("moderator_0", np.r_[2.7, np.zeros(m - 1)], "2.7"),
            ("moderator_0", np.r_[np.nan, np.zeros(m - 1)], "nan"),
            ("moderator_0", np.zeros(m, bool), "bool"),
        ]
        for agent, action, shown in bad:
            with pytest.raises(ValueError, match=f"{agent} action: expected .*, got ") as err:
                env.step({agent: action})
            assert shown in str(err.value)
        assert env._cycles == 0  # nothing was applied
    finally:
        env.close()


def test_the_check_is_one_vectorized_pass_naming_the_first_bad_value():
    ok = action_array(np.array([[0.5, 2.0], [-3.0, 0.0]]), "E action", (2, 2), -1.0, 1.0, codes=False, batched=True)
    assert ok.dtype == np.float32 and ok.tolist() == [[0.5, 1.0], [-1.0, 0.0]]
    codes = action_array([3.0, 0, 1], "E action", (3,), 0, 3, codes=True)
    assert codes.dtype == np.int64 and codes.tolist() == [3, 0, 1]
    shape, codes = r"of shape \(2, 3\), one row per env", r"\(integral floats such as 2.0 too\)"
    with pytest.raises(
        ValueError, match=rf"^E action: expected integer codes in \[0, 3\] {shape} {codes}, got 4 at env 1, index 2$"
    ):
        action_array([[0, 1, 2], [0, 1, 4]], "E action", (2, 3), 0, 3, codes=True, batched=True)
    for bad in ([[1], [2, 3]], None, "abc", [1 + 2j, 0, 0], [2**64, 0, 0]):
        with pytest.raises(ValueError, match="^E action: expected "):
            action_array(bad, "E action", (3,), 0, 3, codes=True)


def test_an_env_made_without_gymnasium_names_its_registered_id():
    from oasis_gym.envs.moderator_v1 import ModeratorEnv
    from oasis_gym.envs.recommender_v2 import RecommenderVectorEnv

    for env, action, shown in (
        (RecommenderVectorEnv(num_envs=K, **SMALL_V1), np.full((K, 72), np.nan), "oasis_gym/Recommender-v2 action"),
        (ModeratorEnv(**SMALL_V1), np.full(16, 4), "oasis_gym/Moderator-v1 action"),
    ):
        env.reset(seed=1)
        with pytest.raises(ValueError, match=shown):
            env.step(action)
        env.close()
