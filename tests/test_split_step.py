"""The split step (`SimulationConfig.feeds_after_agents`, `sim/split_step.py`) and a visit of many
actions (`actions_per_user="many"`): the platform order the one-world task envs need (issue 51).

`begin(platform_actions)` lets the platform agents act and then builds the active users' feeds,
so a recommender's weights rank the feeds of their own step (with `step`, the next step's);
`finish(acts)` plays the users' actions and commits; `cancel()` undoes `begin`. The whole split
step is as atomic as `step`, and a resumed split run equals an uninterrupted one in every table.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_guarantees_step import assert_same_tables, journal_tables, obs_state, platform_state

from oasis_gym.actions import ActionType as A
from oasis_gym.agents import make_platform_agents
from oasis_gym.envs import twitter_v0
from oasis_gym.envs.social_env import load_population
from oasis_gym.errors import ConfigError
from oasis_gym.sim import ActionArrays, Simulation, SimulationConfig

USERS, STEPS = 60, 6


def make_sim(db=None, **kw) -> Simulation:
    """A split-step simulation of 60 users (many actions a visit) with the trainable recommender and moderator."""
    args = dict(
        recsys="agent",
        recommender_agent=True,
        moderator_agent=True,
        activation=0.5,
        max_cycles=STEPS,
        feeds_after_agents=True,
        actions_per_user="many",
        db_path=str(db) if db is not None else ":memory:",
    )
    args.update(kw)
    cfg = SimulationConfig(**args)
    agents = make_platform_agents(True, True, cfg.platform_agent_params)
    return Simulation(load_population(USERS, 0), cfg, platform_agents=agents)


def agent_actions(sim: Simulation, t: int) -> dict:
    rng = np.random.default_rng(100 + t)
    rec = sim.platform_agents["recommender_0"]
    return {
        "recommender_0": rng.uniform(-1, 1, rec.action_shape).astype(np.float32),
        "moderator_0": rng.integers(0, 5, sim.platform_agents["moderator_0"].top_m),
    }


def user_actions(obs, t: int) -> ActionArrays:
    """Every active user likes a post of its feed, a third of them also repost one, and a
    third write a post (after the first action, so `actions_per_user="one"` drops them)."""
    rng = np.random.default_rng(t)
    users, k = obs.users, obs.post_ids.shape[1]
    rep = users[rng.random(len(users)) < 1 / 3]
    new = users[rng.random(len(users)) < 1 / 3]
    return ActionArrays(
        np.concatenate([users, rep, new]),
        np.concatenate(
            [np.full(len(users), A.LIKE_POST), np.full(len(rep), A.REPOST), np.full(len(new), A.CREATE_POST)]
        ),
        post=np.concatenate([rng.integers(0, k, len(users)), rng.integers(0, k, len(rep)), np.zeros(len(new), int)]),
    )


def play(sim: Simulation, steps: range, trail: list) -> None:
    for t in steps:
        obs = sim.begin(agent_actions(sim, t))
        out = sim.finish(user_actions(obs, t))
        trail.append(
            (obs_state(obs), out.actions.tolist(), out.results.tolist(), sim.platform_obs["recommender_0"].tolist())
        )


def test_the_recommenders_action_ranks_the_feeds_of_its_own_step():
    sim = make_sim()
    sim.reset(seed=3)
    play(sim, range(3), [])
    a, b = agent_actions(sim, 0), agent_actions(sim, 1)
    first = obs_state(sim.begin(a))
    sim.cancel()
    other = obs_state(sim.begin(b))
    assert first != other  # other weights, other feeds: in this step, not the next
    sim.cancel()
    assert obs_state(sim.begin(a)) == first  # `cancel` left nothing behind
    rec = sim.recsys.weights.copy()
    sim.finish(ActionArrays.empty())
    assert np.array_equal(rec, sim.recsys.weights)


def test_cancel_and_a_failed_finish_restore_the_state_before_begin_exactly():
    sim = make_sim()
    sim.reset(seed=4)
    before = platform_state(sim.platform)
    obs = sim.begin(agent_actions(sim, 0))
    sim.cancel()
    assert platform_state(sim.platform) == before
    obs = sim.begin(agent_actions(sim, 0))
    with pytest.raises(ValueError):  # checked before anything: the step stays begun
        sim.finish(ActionArrays(obs.users[:1], np.array([A.LIKE_POST]), stance=np.array([2.0])))
    acts = user_actions(obs, 0)

    def boom(sim, out, conn):
        raise RuntimeError("a hook failed")

    sim.step_hooks.append(boom)
    with pytest.raises(RuntimeError, match="a hook failed"):
        sim.finish(acts)
    sim.step_hooks.remove(boom)
    assert platform_state(sim.platform) == before and sim.begun is None
    again = sim.begin(agent_actions(sim, 0))
    assert obs_state(again) == obs_state(obs)
    out = sim.finish(acts)
    assert (out.results >= 0).any()


def test_a_resumed_split_run_equals_an_uninterrupted_one_in_every_table(tmp_path, monkeypatch):
    # both journals are "run.db" in a folder of their own: the config saved in them names the same path
    for folder in ("whole", "part"):
        (tmp_path / folder).mkdir()
    monkeypatch.chdir(tmp_path / "whole")
    whole, trail_whole = make_sim("run.db"), []
    whole.reset(seed=5)
    play(whole, range(STEPS), trail_whole)
    whole.close()

    monkeypatch.chdir(tmp_path / "part")
    part, trail = make_sim("run.db"), []
    part.reset(seed=5)
    play(part, range(3), trail)
    part.begin(agent_actions(part, 3))  # ended between the halves: nothing of the step is journaled
    part.close()
    again = make_sim("run.db")
    again.resume("run.db")
    play(again, range(3, STEPS), trail)
    again.close()
    assert trail == trail_whole
    assert_same_tables(journal_tables(tmp_path / "whole" / "run.db"), journal_tables(tmp_path / "part" / "run.db"))


def test_many_actions_per_user_count_in_order_and_one_keeps_only_the_first():
    counts = {}
    for mode in ("one", "many"):
        sim = make_sim(actions_per_user=mode)
        sim.reset(seed=6)
        obs = sim.begin({})
        out = sim.finish(user_actions(obs, 0))
        acts = user_actions(obs, 0)
        counts[mode] = (len(out.actions), int((out.actions == A.CREATE_POST).sum()), len(out.ignored))
    n = len(obs.users)
    assert counts["one"] == (n, 0, len(acts) - n)  # each user's first action: its like
    assert counts["many"] == (len(acts), int((acts.type == A.CREATE_POST).sum()), 0)
    assert counts["many"][1] > 0


def test_the_split_step_is_called_in_its_order_or_refused_with_what_to_do():
    sim = make_sim()
    sim.reset(seed=7)
    with pytest.raises(RuntimeError, match="begin"):
        sim.step(ActionArrays.empty())
    with pytest.raises(RuntimeError, match="begin"):
        sim.finish(ActionArrays.empty())
    sim.begin({})
    with pytest.raises(RuntimeError, match="finish"):
        sim.begin({})
    sim.cancel()
    with pytest.raises(KeyError, match="no platform agent"):
        sim.begin({"nobody": 1})
    assert sim.begun is None
    plain = make_sim(feeds_after_agents=False)
    plain.reset(seed=7)
    with pytest.raises(RuntimeError, match="step\\(\\)"):
        plain.begin({})
    for bad in ({"actions_per_user": "two"}, {"feeds_after_agents": 1}):
        with pytest.raises(ConfigError):
            make_sim(**bad)


def test_a_pettingzoo_env_refuses_the_split_step_its_users_act_in_the_same_call():
    with pytest.raises(ConfigError, match="feeds_after_agents"):
        twitter_v0.parallel_env(users=10, feeds_after_agents=True)


def test_an_activation_hook_picks_the_active_users_after_the_agents_acted():
    sim = make_sim()
    sim.reset(seed=3)
    seen = []

    def hook(s):
        seen.append(s.platform.minute)  # called in begin, after the platform agents acted
        return np.array([2, 5, 7], np.int64)

    sim.activation_hook = hook
    obs = sim.begin(agent_actions(sim, 0))
    assert obs.users.tolist() == [2, 5, 7] and len(seen) == 1
    out = sim.finish(ActionArrays(np.array([5, 9]), np.full(2, int(A.CREATE_POST)), text=["hi", "no"]))
    assert out.users.tolist() == [5] and out.ignored.tolist() == [9]  # only the hook's users act
    sim.close()
