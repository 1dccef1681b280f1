"""LLM users in the env: a hybrid run (LLM core users + ABM ordinary users) end to end with a
tiny random Llama behind constrained decoding; interviews are journaled."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from llm_fixtures import llm_module

from oasis_gym.actions import ACTION_NAMES, ActionType
from oasis_gym.app.run import simulate
from oasis_gym.envs import twitter_v0
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.policies.hybrid import HybridPolicy
from oasis_gym.policies.llm_policy import LLMPolicy

pytest_plugins = ["llm_fixtures"]
L = llm_module()


class CountingLLM(LLMPolicy):
    """Records which users each call received (the hybrid contract: once per step, exactly
    the policy's active users)."""

    def __init__(self, backend):
        super().__init__(
            core=L.LLMPolicyCore(
                backend,
                schema_config=L.SchemaConfig(max_text_chars=24, max_query_chars=12, max_reason_chars=12),
                max_tokens=96,
            )
        )
        self.calls: list[np.ndarray] = []

    def act(self, env, obs):
        self.calls.append(obs.users.copy())
        return super().act(env, obs)


def test_hybrid_llm_and_abm_users_end_to_end(tmp_path, tiny_backend):
    db = tmp_path / "hybrid.db"
    env = twitter_v0.parallel_env(
        users=80, activation=0.5, max_cycles=3, db_path=str(db), available_actions=tuple(range(23))
    )
    llm = CountingLLM(tiny_backend)
    core_users = np.arange(6)
    policy = HybridPolicy([(llm, core_users)], default=ABMPolicy())
    actives = []
    summary = simulate(env, policy, seed=0, callback=lambda e, out: actives.append(out.users))
    assert summary.steps == 3 and len(llm.calls) == 3
    for call, acted in zip(llm.calls, actives):
        assert set(call.tolist()) == set(acted.tolist()) & set(core_users.tolist())
    assert llm.core.totals["agents"] == sum(len(c) for c in llm.calls) > 0
    # the run summary: the LLM users' counts and speed (transformers reports no prefix-cache hits)
    totals = llm.core.totals
    assert {k: summary.llm[k] for k in ("agents", "valid", "prompt_tokens")} == {
        k: totals[k] for k in ("agents", "valid", "prompt_tokens")
    }
    assert summary.llm["decisions_per_s"] == pytest.approx(totals["agents"] / totals["latency_s"], abs=1e-3)
    assert "prefix_cache_hit_rate" not in summary.llm
    conn = sqlite3.connect(db)
    traced = conn.execute("SELECT COUNT(*) FROM trace").fetchone()[0]
    assert traced == summary.actions
    # constrained decoding: every LLM reply parsed into an action the platform accepted or
    # recorded; no LLM user action is an `invalid_action`
    llm_rows = conn.execute(f"SELECT result FROM trace WHERE user_id < {len(core_users)}").fetchall()
    assert llm_rows and all(r != "invalid_action" for (r,) in llm_rows)
    assert llm.core.totals["invalid"] == 0
    likes = dict(conn.execute('SELECT post_id, COUNT(*) FROM "like" GROUP BY post_id').fetchall())
    pf = env.sim.platform
    assert [likes.get(p, 0) for p in range(pf.n_posts)] == pf.p_likes.a.tolist()

    answer = llm.interview(env, "user_3", "What do you think about the news today?")
    row = conn.execute("SELECT user_id, question, answer FROM interview").fetchone()
    assert row == (3, "What do you think about the news today?", answer)
    assert conn.execute("SELECT COUNT(*) FROM trace WHERE action='interview'").fetchone()[0] == 1
    env.close()


def test_information_spread_scenario_with_hybrid_llm_users(tmp_path, tiny_model_dir):
    """The paper scenario runs with LLM core users (tiny model, constrained decoding)."""
    from oasis_gym.scenarios import load_scenario

    scenario = load_scenario(
        "twitter_information_spread",
        [
            "policy.kind=hybrid",
            "policy.core_users=3",
            "policy.llm.backend=transformers",
            f"policy.llm.model={tiny_model_dir}",
            "steps=3",
        ],
    )
    figures = scenario.run(db_path=str(tmp_path / "spread.db"), logdir=str(tmp_path / "tb"))
    run = figures["run"]
    assert run["policy"] == "hybrid" and run["steps"] == 3
    assert np.isfinite(figures["summary"]["nrmse"]["scale"])
    conn = sqlite3.connect(tmp_path / "spread.db")
    assert conn.execute("SELECT COUNT(*) FROM trace").fetchone()[0] == run["actions"]


def test_llm_prompt_lists_the_platforms_actions_unless_chosen(tiny_backend):
    env = twitter_v0.parallel_env(users=20, activation=1.0, max_cycles=1)  # OASIS' Twitter action set
    env.reset(seed=0)
    adopted = LLMPolicy(core=L.LLMPolicyCore(tiny_backend, max_tokens=48))
    chosen = LLMPolicy(core=L.LLMPolicyCore(tiny_backend, max_tokens=48, action_set=list(ActionType)))
    obs = env.sim.obs
    for policy in (adopted, chosen):
        policy.act(env, obs)
    platform_actions = {ACTION_NAMES[a] for a in env.sim.platform.config.available_actions} - {"sign_up"}
    listed = adopted.core.prompt.system_prompt
    assert {ACTION_NAMES[a] for a in adopted.core.prompt.action_set} == platform_actions
    assert "create_comment" not in platform_actions and "create_comment" not in listed
    assert all(name in listed for name in platform_actions)
    assert "create_comment" in chosen.core.prompt.system_prompt  # an explicit action set is kept
    env.close()
