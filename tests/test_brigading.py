"""Report brigading (issue 18): the `misinfo_brigading` scenario, Moderator-v0's default, where
a cluster of accounts mass-reports the true posts of some outlets. Deterministic per seed,
brigade reports land on the targeted outlets' true posts only, they are ordinary journaled
reports, the observation still carries no label and the oracle is still an upper bound."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from oasis_gym.envs.moderator_v0 import ModeratorEnv
from oasis_gym.model.moderation import V0_VIEW_FEATURES
from oasis_gym.platform import MISINFO_LABEL, ORIGINAL, TRUE_LABEL
from oasis_gym.platform.store import unpack_keys
from oasis_gym.scenarios.misinfo_stream import BrigadingScenario

SMALL = dict(initial_true=8, initial_misinfo=4, stream_rate=1.5, n_outlets=5, n_misinfo_accounts=3)
BRIGADE = BrigadingScenario(**SMALL, n_brigade_accounts=8, brigade_targets=2, brigade_rate=0.5)
TINY = dict(users=80, max_cycles=6, activation=0.3, scenario=BRIGADE)


def _stream(sim):
    return next(h for h in sim.step_hooks if hasattr(h, "brigaders"))


def _episode(seed: int, **kw) -> ModeratorEnv:
    env = ModeratorEnv(**{**TINY, **kw})
    env.reset(seed=seed)
    for _ in range(env.max_cycles):
        env.step(np.zeros(env.action_space.shape, np.int64))
    return env


def test_moderator_default_scenario_brigades_and_recommender_does_not():
    from oasis_gym.envs.recommender_v0 import RecommenderEnv
    from oasis_gym.train.common import EnvConfig

    assert ModeratorEnv().scenario.name == "misinfo_brigading" and ModeratorEnv().scenario.n_brigade_accounts > 0
    assert RecommenderEnv().scenario.name == "misinfo_stream" and RecommenderEnv().scenario.n_brigade_accounts == 0
    assert EnvConfig(kind="moderator").scenario == "misinfo_brigading"
    assert EnvConfig(kind="recommender").scenario == "misinfo_stream"


def test_brigading_is_deterministic_per_seed():
    a, b, c = _episode(3), _episode(3), _episode(4)
    keys = [e.sim.platform.rel["report"].keys() for e in (a, b, c)]
    assert len(keys[0]) and np.array_equal(keys[0], keys[1])
    assert np.array_equal(_stream(a.sim).brigaders, _stream(b.sim).brigaders)
    assert not np.array_equal(keys[0], keys[2])
    # the sources are those of the same scenario without brigading (drawn first)
    plain = _episode(3, scenario=BrigadingScenario(**SMALL, n_brigade_accounts=0))
    assert np.array_equal(_stream(plain.sim).misinfo_accounts, _stream(a.sim).misinfo_accounts)
    assert len(_stream(plain.sim).brigaders) == 0
    for e in (a, b, c, plain):
        e.close()


def test_brigade_reports_land_on_targeted_true_posts_only():
    """Users who never report on their own: every report is the brigade's."""
    quiet = BrigadingScenario(
        **SMALL, n_brigade_accounts=8, brigade_targets=2, brigade_rate=0.5, misinfo_report_rate=0, true_report_rate=0
    )
    env = _episode(2, scenario=quiet)
    pf, st = env.sim.platform, _stream(env.sim)
    users, posts = unpack_keys(pf.rel["report"].keys())
    assert len(posts) > 5
    assert np.isin(users, st.brigaders).all()
    assert (pf.p_label.a[posts] == TRUE_LABEL).all() and (pf.p_kind.a[posts] == ORIGINAL).all()
    assert np.isin(pf.p_author.a[posts], st.brigade_targets).all()
    assert not np.isin(st.brigaders, np.r_[st.outlets, st.misinfo_accounts]).any()
    env.close()


def test_brigade_reports_are_ordinary_journaled_reports(tmp_path):
    """Same reason text as a user's report, journaled rows, and the journal's next row id
    counts them (a resumed run numbers its reports after them)."""
    db = tmp_path / "b.db"
    env = _episode(5, db_path=str(db))
    pf = env.sim.platform
    env.close()
    con = sqlite3.connect(db)
    rows = con.execute("SELECT report_id, user_id, post_id, report_reason FROM report").fetchall()
    meta = json.loads(con.execute("SELECT value FROM meta WHERE key = 'next_row_id'").fetchone()[0])
    con.close()
    assert len(rows) == len(pf.rel["report"]) > 0
    assert {r[3] for r in rows} == {"misleading"}
    assert meta["report"] == max(r[0] for r in rows) + 1


@pytest.mark.parametrize("check_action", [True, False])
def test_observation_has_no_label_and_evidence_against_brigading(check_action):
    """Flipping every label leaves the observation unchanged; the reporters' record and the
    authors' true verdicts set brigaded posts apart from misinformation, whether the moderator
    asks for the checks of the reported posts (code 5) or the service picks the most reported."""
    params = {"check_error": 0.0, "check_action": check_action}
    env = ModeratorEnv(**{**TINY, "max_cycles": 14}, agent_params=params)
    obs, _ = env.reset(seed=1)
    agent = env.sim.platform_agents["moderator_0"]
    st = _stream(env.sim)
    f = {n: i for i, n in enumerate(V0_VIEW_FEATURES)}
    seen = {"brigaded": [], "misinfo": []}
    for _ in range(14):
        x = obs.reshape(agent.top_m, -1)
        unchecked = (x[:, f["fact_check"]] == 0) & (x[:, f["fact_check_pending"]] == 0)
        ask = (x[:, f["reports"]] > 0) & unchecked & (x[:, f["filled"]] > 0)
        action = np.where(ask, 5, 0) if check_action else np.zeros(env.action_space.shape, np.int64)
        obs, *_ = env.step(action)
        x = obs.reshape(agent.top_m, -1)
        pf = env.sim.platform
        for i, p in enumerate(agent.slots):
            if p >= 0 and pf.p_reports.a[p] > 0:
                if pf.p_label.a[p] == MISINFO_LABEL:
                    seen["misinfo"].append(x[i])
                elif pf.p_author.a[p] in st.brigade_targets:
                    seen["brigaded"].append(x[i])
    pf = env.sim.platform
    pf.p_label.a[: pf.n_posts] = 1 - np.maximum(pf.p_label.a[: pf.n_posts], 0)
    assert np.array_equal(obs, agent.features(env.sim.agent_view()))
    b, m = (np.array(seen[k]) for k in ("brigaded", "misinfo"))
    assert len(b) and len(m)
    for name in ("reporters_false_report_share", "log_reporter_activity", "log_author_cleared"):
        assert b[:, f[name]].mean() > m[:, f[name]].mean(), name
    env.close()


def test_oracle_is_still_an_upper_bound_under_brigading():
    from oasis_gym.train.common import EnvConfig
    from oasis_gym.train.evaluate import evaluate_moderator, oracle_check

    cfg = EnvConfig(kind="moderator", users=80, max_cycles=8, scenario=BRIGADE, env_kwargs={"activation": 0.3})
    seeds = (1, 2)
    oracle = evaluate_moderator("oracle_suspend", seeds, cfg)
    for name in ("none", "report_threshold", "report_threshold_suspend"):
        runs = evaluate_moderator(name, seeds, cfg)
        assert oracle_check(runs, oracle)["beaten_on"] == [], name
        assert all(o["return"] >= r["return"] for o, r in zip(oracle, runs)), name
    assert all(r["true_actioned_share"] == 0.0 and r["return"] == 0.0 for r in oracle)
