"""The one registration table (oasis_gym/__init__.py): names -> entry points, imported only when used."""

from __future__ import annotations

import subprocess
import sys

import gymnasium
import pytest

import oasis_gym
from oasis_gym.envs.platform_agent_env import make_scenario
from oasis_gym.envs.recommender_v0 import RecommenderEnv
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.policies.reporting import ReportingUsers
from oasis_gym.scenarios.misinfo_stream import MisinfoScenario


def test_import_oasis_gym_is_cheap_and_registers_everything():
    """`import oasis_gym` imports no env, policy or scenario module, yet every id is registered
    (only `oasis_gym.app.interrupts` and `oasis_gym.signal_hold`, standard library only: the command
    line's first signal handling)."""
    code = (
        "import sys, oasis_gym, gymnasium, pettingzoo\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('oasis_gym.'))\n"
        "ids = [*oasis_gym.GYMNASIUM_ENVS, *oasis_gym.PETTINGZOO_ENVS]\n"
        "registered = all(i in gymnasium.registry or i in pettingzoo.parallel_registry for i in ids)\n"
        "print(loaded, registered)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['oasis_gym.app', 'oasis_gym.app.interrupts', 'oasis_gym.signal_hold'] True"


def test_every_entry_point_of_the_table_resolves():
    for env_id, entry_point in oasis_gym.GYMNASIUM_ENVS.items():
        assert gymnasium.spec(env_id).entry_point == entry_point
        assert isinstance(oasis_gym.load_entry_point(entry_point), type)
    for name, entry_point in oasis_gym.SCENARIOS.items():
        assert oasis_gym.load_entry_point(entry_point)().name == name
    assert isinstance(oasis_gym.load_entry_point(oasis_gym.DEFAULT_USER_POLICY)(None), ABMPolicy)
    assert oasis_gym.load_entry_point(oasis_gym.TASK_USER_POLICY)().name == "task_users"
    assert oasis_gym.load_entry_point(oasis_gym.COMMAND_START).__name__ == "starting"


def test_scenarios_by_name_or_instance_and_the_users_they_supply():
    sc = make_scenario("misinfo_stream", stream_rate=1.0)
    assert type(sc) is MisinfoScenario and sc.stream_rate == 1.0
    assert make_scenario(sc) is sc and make_scenario(sc, n_outlets=3).n_outlets == 3
    assert make_scenario(None) is None
    with pytest.raises(ValueError, match="unknown scenario 'nope'"):
        make_scenario("nope")
    users = sc.user_policy()
    assert isinstance(users, ReportingUsers) and isinstance(users.inner, ABMPolicy)


def test_platform_agent_env_users_come_from_the_argument_the_scenario_or_the_default():
    small = dict(users=30, max_cycles=2, activation=0.5)
    scenario = MisinfoScenario(initial_true=2, initial_misinfo=1, n_outlets=2, n_misinfo_accounts=1)
    cases = [
        (dict(scenario=None), ABMPolicy),  # no scenario: the registry's default, plain ABM users
        (dict(scenario=scenario), ReportingUsers),  # the scenario's users
        (dict(scenario=scenario, user_policy=lambda env: ABMPolicy()), ABMPolicy),  # the argument wins
    ]
    for kwargs, cls in cases:
        env = RecommenderEnv(**small, **kwargs)
        env.reset(seed=0)
        env.step(env.action_space.sample())
        assert type(env._users) is cls
        env.close()
