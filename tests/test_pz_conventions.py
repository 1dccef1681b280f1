"""PettingZoo 1.27 conventions: raw_env / env / parallel_env mean what PettingZoo means,
metadata is static, and the registry (PettingZoo and Gymnasium) makes every env."""

from __future__ import annotations

import warnings
from importlib import import_module

import gymnasium as gym
import pettingzoo
import pytest
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.utils import BaseWrapper
from pettingzoo.utils.conversions import aec_to_parallel
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

import oasis_gym
from oasis_gym.envs import reddit_v0, twitter_v0
from oasis_gym.envs.social_env import SocialMediaEnv


def _platform(env_id: str) -> str:
    """The platform an id names: "oasis_gym/Twitter-v0" -> "twitter"."""
    return env_id.rpartition("/")[2].rpartition("-v")[0].lower()


# every registered PettingZoo env: module name under oasis_gym.envs -> (module, its platform)
MODULES = {
    name: (import_module(f"oasis_gym.envs.{name}"), _platform(env_id))
    for env_id, name in oasis_gym.PETTINGZOO_ENVS.items()
}
SMALL = {"users": 12, "population_seed": 1, "activation": 0.5, "max_cycles": 3}
# an env whose arguments are not a social platform's: small arguments of its own
SMALL_OF = {
    "task_platform_v0": {"task": "moderator", "difficulty": "hard", "users": 40, "max_steps": 3, "agent_users": [0]}
}


def small(name: str) -> dict:
    """Small constructor arguments of the env `name`."""
    return SMALL_OF.get(name, SMALL)


def social(name: str) -> bool:
    """Whether `name` is a social-platform env (a `SocialMediaEnv`: platform, ansi rendering)."""
    return issubclass(MODULES[name][0].parallel_env, SocialMediaEnv)


@pytest.mark.parametrize("name", MODULES)
def test_parallel_env_is_the_parallel_env(name):
    module, platform = MODULES[name]
    env = module.parallel_env(**small(name))
    assert isinstance(env, pettingzoo.ParallelEnv)
    if social(name):
        assert env.sim.config.platform == platform
    parallel_api_test(env, num_cycles=3)


@pytest.mark.parametrize("name", MODULES)
def test_raw_env_is_the_unwrapped_aec_env(name):
    module, _ = MODULES[name]
    raw = module.raw_env(**small(name))
    assert isinstance(raw, pettingzoo.AECEnv) and not isinstance(raw, BaseWrapper)
    raw.reset(seed=0)
    assert raw.agents and raw.agent_selection in raw.agents


@pytest.mark.parametrize("name", MODULES)
def test_env_is_order_enforced_aec(name):
    module, _ = MODULES[name]
    env = module.env(**small(name))
    assert isinstance(env, OrderEnforcingWrapper)
    with pytest.raises(AssertionError, match="reset"):  # the wrapper refuses a step before reset
        env.step(None)
    # the conversion round-trips to the very parallel env inside
    assert isinstance(aec_to_parallel(env), module.parallel_env)
    api_test(module.env(**small(name)), num_cycles=3)


@pytest.mark.parametrize("name", MODULES)
def test_metadata_is_static(name):
    module, _ = MODULES[name]
    cls = module.parallel_env
    assert cls.metadata["name"] == name and cls.metadata["render_modes"] == (["ansi"] if social(name) else [])
    env = cls(**small(name))
    assert "metadata" not in vars(env), "metadata must not be patched per instance"
    assert env.metadata is cls.metadata
    assert module.env(**small(name)).metadata["name"] == name
    assert SocialMediaEnv.metadata["name"] == "oasis_social_v0"  # the base is untouched


def test_the_registries_list_every_env():
    # the parametrized tests cover whatever the registry lists; these at least
    assert MODULES["twitter_v0"] == (twitter_v0, "twitter") and MODULES["reddit_v0"] == (reddit_v0, "reddit")
    assert {"oasis_gym/Recommender-v0", "oasis_gym/Moderator-v0"} <= set(oasis_gym.GYMNASIUM_ENVS)


def test_versioned_env_keeps_its_platform():
    with pytest.raises(TypeError, match="twitter"):
        twitter_v0.parallel_env(platform="reddit", **SMALL)


def test_registry_ids_are_in_one_table_and_make_their_envs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # idempotent: no "Overriding environment" warning
        oasis_gym._register()
    for env_id, module_name in oasis_gym.PETTINGZOO_ENVS.items():
        module, _ = MODULES[module_name]
        par = pettingzoo.make("parallel", env_id, **small(module_name))
        assert type(par) is module.parallel_env
        aec = pettingzoo.make("aec", env_id, **small(module_name))
        assert isinstance(aec, OrderEnforcingWrapper) and type(aec.unwrapped) is module.parallel_env
        assert pettingzoo.spec("parallel", env_id).entry_point == f"oasis_gym.envs.{module_name}:parallel_env"
    for env_id, entry_point in oasis_gym.GYMNASIUM_ENVS.items():
        assert env_id in gym.registry and gym.spec(env_id).entry_point == entry_point


def test_resume_through_a_versioned_class_keeps_it(tmp_path):
    db = tmp_path / "run.db"
    env = twitter_v0.parallel_env(**SMALL, db_path=str(db))
    env.reset(seed=0)
    env.step({a: 0 for a in env.agents})
    env.close()
    resumed = twitter_v0.parallel_env.resume(str(db))
    assert type(resumed) is twitter_v0.parallel_env and resumed.metadata["name"] == "twitter_v0"
    assert resumed.agents
    resumed.close()
    with pytest.raises(TypeError, match="reddit_v0 is the reddit platform"):
        reddit_v0.parallel_env.resume(str(db))
