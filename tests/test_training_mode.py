"""The training mode (`journal=False`): the same run as a journaled one, nothing written."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest

import oasis_gym
from oasis_gym.errors import ConfigError
from oasis_gym.sim.no_journal import NoJournal

SMALL = dict(users=40, max_cycles=6, activation=0.3)


def _episode(env_id: str, seed: int, **kwargs) -> list:
    env = gym.make(env_id, **SMALL, **kwargs)
    env.action_space.seed(seed)
    obs, info = env.reset(seed=seed)
    out = [(obs, info)]
    done = False
    while not done:
        obs, reward, term, trunc, info = env.step(env.action_space.sample())
        out.append((obs, reward, info))
        done = term or trunc
    env.close()
    return out


def _same(a, b) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        np.testing.assert_array_equal(a, b)


# the envs over the SQLite platform (the v1 envs run the batched engine: no journal at all)
JOURNALED = sorted(set(oasis_gym.GYMNASIUM_ENVS) - set(oasis_gym.GYMNASIUM_VECTOR_ENVS))


@pytest.mark.parametrize("env_id", JOURNALED)
def test_training_mode_plays_the_journaled_episode_exactly(env_id, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    journaled = _episode(env_id, 7)
    before = set(os.listdir(tmp_path))
    free = _episode(env_id, 7, journal=False)
    _same(journaled, free)  # observations, rewards, infos (episode metrics included), step by step
    assert set(os.listdir(tmp_path)) == before  # nothing written


def test_training_mode_has_no_journal_and_refuses_what_needs_one(tmp_path):
    from oasis_gym.envs import twitter_v0

    env = twitter_v0.parallel_env(users=20, max_cycles=2, journal=False)
    env.reset(seed=0)
    assert isinstance(env.sim.journal, NoJournal) and env.sim.db_path is None
    seen = []
    env.sim.step_hooks.append(lambda sim, out, conn: seen.append(conn))
    env.step({})
    assert seen == [None]  # hooks run, with no connection
    for bad in ({"db_path": str(tmp_path / "x.db")}, {"log_recs": True}):
        with pytest.raises(ConfigError, match="journal=False"):
            twitter_v0.parallel_env(users=20, journal=False, **bad)
    assert not (tmp_path / "x.db").exists()
