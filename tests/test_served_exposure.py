"""The served feeds' exposure of the v0 platform agents is counted once for the same feeds and
viewers' opinions (issue 51's cheap win: it was counted 3-4 times a step), and never stale."""

from __future__ import annotations

import numpy as np
import pytest

from oasis_gym.agents import exposure
from oasis_gym.envs.moderator_v0 import ModeratorEnv
from oasis_gym.envs.recommender_v0 import RecommenderEnv
from oasis_gym.metrics.exposure import served_exposure
from oasis_gym.scenarios.misinfo_stream import MisinfoScenario

SCENARIO = MisinfoScenario(initial_true=8, initial_misinfo=4, stream_rate=1.5, n_outlets=5, n_misinfo_accounts=3)
TINY = dict(users=80, max_cycles=6, activation=0.3, scenario=SCENARIO)


def _counted(monkeypatch) -> list:
    calls = []

    def counting(pf, feeds):
        calls.append(id(feeds))
        return served_exposure(pf, feeds)

    monkeypatch.setattr(exposure, "served_exposure", counting)
    return calls


def _fresh(view) -> tuple[float, float, int]:
    e = served_exposure(view.platform, view.feeds)
    return float(np.nan_to_num(e.misinfo_share)), float(np.nan_to_num(e.cross_cutting_share)), e.impressions


def test_a_recommender_v0_step_counts_its_feeds_once_and_again_only_where_opinions_moved(monkeypatch):
    calls = _counted(monkeypatch)
    env = RecommenderEnv(moderator="report_threshold", **TINY)  # the moderator's reward reads the feeds too
    env.reset(seed=3)
    for _ in range(TINY["max_cycles"]):
        del calls[:]
        env.step(env.action_space.sample())
        # the next feeds once (the recommender's observation; the moderator's reward and the env's
        # next step reuse it), the feeds served this step again only after the users moved opinions
        assert 1 <= len(calls) <= 2 and calls[-1] == id(env.sim.obs)
        view = env.sim.agent_view()
        assert exposure.exposure_stats(view) == _fresh(view) and len(calls) <= 2
    env.close()


def test_a_moderator_v0_step_counts_its_feeds_once(monkeypatch):
    calls = _counted(monkeypatch)
    env = ModeratorEnv(**TINY)
    env.reset(seed=4)
    for step in range(TINY["max_cycles"]):
        del calls[:]
        served = id(env.sim.obs)
        env.step(env.action_space.sample())
        # the next feeds once (the moderator's reward; the env's next step reuses it); the first
        # step also counts the feeds served at reset, which no reward read
        assert calls == [served, id(env.sim.obs)][1 if step else 0 :]
    env.close()


def test_an_opinion_that_moves_is_counted_anew():
    env = RecommenderEnv(**TINY)
    env.reset(seed=5)
    env.step(env.action_space.sample())
    view = env.sim.agent_view()
    before = exposure.exposure_stats(view)
    assert before == _fresh(view)
    pf = view.platform
    viewers = np.unique(view.feeds.users)
    pf.set_opinions(viewers, -pf.u_opinion.a[viewers])  # every viewer crosses to the other side
    after = exposure.exposure_stats(view)
    assert after == _fresh(view)
    assert before[1] + after[1] == pytest.approx(1.0) or before[1] == after[1] == 0.0  # cross-cutting flips
    env.close()
