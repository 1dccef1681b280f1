"""The v1 tasks' native vector envs: env i of a vector env is exactly the single env's episode.

Every registered v1 id, both autoreset modes, a whole episode and the autoreset into the
next one: observations, rewards, truncations and infos equal bit for bit. Plus Gymnasium's
checker on the single envs, the seeds (distinct, never evaluation seeds), bad arguments;
and the v0 ids, which vectorize through Gymnasium's SyncVectorEnv.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import oasis_gym
from oasis_gym.model.seeds import TRAIN_SEEDS_FROM

V1 = sorted(oasis_gym.GYMNASIUM_VECTOR_ENVS)
SMALL = {"users": 200, "max_steps": 6}


def _actions(space, n: int, seed: int) -> list:
    space.seed(seed)
    return [space.sample() for _ in range(n)]


@pytest.mark.parametrize("env_id", V1)
@pytest.mark.parametrize("difficulty", ["easy", "hard"])
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_env_i_of_a_vector_env_plays_the_single_envs_episode(env_id, difficulty, mode):
    k, seed, steps = 3, 40, 2 * SMALL["max_steps"] + 2
    both = {"difficulty": difficulty, "privileged_info": True, **SMALL}  # every info value compared
    vec = gym.make_vec(env_id, num_envs=k, autoreset_mode=mode, **both)
    singles = [gym.make(env_id, **both) for _ in range(k)]
    acts = [_actions(s.action_space, steps, 100 + i) for i, s in enumerate(singles)]
    v_obs, v_info = vec.reset(seed=seed)
    for i, env in enumerate(singles):
        obs, info = env.reset(seed=seed + i)
        assert np.array_equal(obs, v_obs[i]) and info["episode_seed"] == v_info["episode_seed"][i]
    pending = [False] * k  # NEXT_STEP: the single env resets where the vector env autoresets
    for t in range(steps):
        v_obs, v_rew, v_term, v_trunc, v_info = vec.step(np.stack([a[t] for a in acts]))
        for i, env in enumerate(singles):
            if pending[i]:
                obs, info = env.reset()
                rew, trunc = 0.0, False
                pending[i] = False
            else:
                obs, rew, term, trunc, info = env.step(acts[i][t])
                assert not term and not v_term[i]
                for name in ("engagements", "misinfo_impressions", "satisfaction", "opinion_std"):
                    assert info[name] == np.float32(v_info[name][i]), name
                if trunc and mode == AutoresetMode.SAME_STEP:  # info keeps the finished episode's seed
                    assert np.array_equal(v_info["final_obs"][i], obs)
                    obs, _ = env.reset()
                elif trunc:
                    pending[i] = True
            assert np.array_equal(obs, v_obs[i]), (t, i)
            assert rew == pytest.approx(v_rew[i], abs=0) and trunc == v_trunc[i]
            assert info["episode_seed"] == v_info["episode_seed"][i]
    vec.close()


@pytest.mark.parametrize("env_id", V1)
def test_gymnasium_checker_passes_the_single_env(env_id):
    with pytest.warns(UserWarning, match="Box observation space (minimum|maximum) value is"):
        check_env(gym.make(env_id, **SMALL).unwrapped, skip_render_check=True)


@pytest.mark.parametrize("env_id", V1)
def test_the_vector_env_is_native_and_its_spaces_hold_what_it_returns(env_id):
    vec = gym.make_vec(env_id, num_envs=4, **SMALL)
    assert not isinstance(vec, gym.vector.SyncVectorEnv) and vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, _ = vec.reset(seed=0)
    assert vec.observation_space.contains(obs)
    vec.action_space.seed(0)
    for _ in range(SMALL["max_steps"] + 1):
        obs, reward, term, trunc, _ = vec.step(vec.action_space.sample())
        assert vec.observation_space.contains(obs) and np.isfinite(reward).all()


@pytest.mark.parametrize("env_id", V1)
def test_unseeded_episodes_are_distinct_and_never_evaluation_seeds(env_id):
    vec = gym.make_vec(env_id, num_envs=4, **SMALL)
    _, info = vec.reset(seed=7)
    seen = [*info["episode_seed"]]
    for _ in range(3 * (SMALL["max_steps"] + 1)):
        _, _, _, trunc, info = vec.step(vec.action_space.sample())
        seen.extend(info["episode_seed"][trunc])
    started = sorted(set(np.asarray(seen).tolist()))
    assert started[:4] == [7, 8, 9, 10]
    later = [s for s in started if s not in (7, 8, 9, 10)]
    assert len(later) >= 8 and min(later) >= TRAIN_SEEDS_FROM


def test_the_same_seed_is_the_same_run_and_another_seed_another():
    def run(seed):
        env = gym.make("oasis_gym/Recommender-v1", difficulty="hard", **SMALL)
        env.reset(seed=seed)
        return [env.step(np.full(54, 0.3, np.float32))[1] for _ in range(SMALL["max_steps"])]

    assert run(1) == run(1) and run(1) != run(2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"difficulty": "impossible"}, "difficulty must be one of"),
        ({"users": 10}, "users must be an integer"),
        ({"users": 2.5}, "users must be an integer"),
        ({"max_steps": 0}, "max_steps must be an integer >= 1"),
        ({"population_seed": -1}, "population_seed must be"),
    ],
)
@pytest.mark.parametrize("env_id", V1)
def test_bad_arguments_are_one_clear_error(env_id, kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make(env_id, **{**SMALL, **kwargs})


def test_bad_vector_arguments_and_seeds_are_one_clear_error():
    with pytest.raises(ValueError, match="num_envs must be an integer >= 1"):
        gym.make_vec("oasis_gym/Recommender-v1", num_envs=0, **SMALL)
    vec = gym.make_vec("oasis_gym/Recommender-v1", num_envs=2, **SMALL)
    with pytest.raises(ValueError, match="seeds must be in"):
        vec.reset(seed=-3)
    with pytest.raises(ValueError, match="2 ints"):
        vec.reset(seed=[1, 2, 3])


@pytest.mark.parametrize("env_id", V1)
def test_ansi_render_says_the_step_and_the_last_values(env_id):
    env = gym.make(env_id, render_mode="ansi", **SMALL)
    env.reset(seed=5)
    assert env.render() == "step 0/6 (episode seed 5)"
    env.step(env.action_space.sample())
    line = env.render()
    assert line.startswith("step 1/6 (episode seed 5): engagements ") and "satisfaction" in line
    vec = gym.make_vec(env_id, num_envs=2, render_mode="ansi", **SMALL)
    vec.reset(seed=5)
    vec.step(vec.action_space.sample())
    assert [r.split(":")[0] for r in vec.render()] == ["step 1/6 (episode seed 5)", "step 1/6 (episode seed 6)"]
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        gym.make(env_id, render_mode="human", **SMALL)


@pytest.mark.filterwarnings("ignore:.*is out of date")  # Gymnasium's own hint: v1 is the newer version
@pytest.mark.parametrize("env_id", sorted(set(oasis_gym.GYMNASIUM_ENVS) - set(oasis_gym.GYMNASIUM_VECTOR_ENVS)))
def test_the_v0_ids_vectorize_through_gymnasiums_sync_vector_env(env_id):
    """The v0 ids (a journaled platform per env) register no native vector env: make_vec
    gives Gymnasium's SyncVectorEnv, whose env i plays the single env's episode with seed s + i."""
    small = {"users": 40, "max_cycles": 3}
    vec = gym.make_vec(env_id, num_envs=2, **small)
    assert isinstance(vec, gym.vector.SyncVectorEnv)
    obs, _ = vec.reset(seed=3)
    actions = _actions(vec.single_action_space, 2, seed=0)
    got = vec.step(np.stack(actions))
    for i in range(2):
        single = gym.make(env_id, **small)
        o, _ = single.reset(seed=3 + i)
        np.testing.assert_array_equal(o, obs[i])
        step = single.step(actions[i])
        np.testing.assert_array_equal(step[0], got[0][i])
        assert step[1] == got[1][i]
        single.close()
    vec.close()
