"""A policy's `env` argument is the env or the Simulation itself (policies.base.sim_of): the
same policy, seeds and steps act the same either way (from an empty platform on: the
reporting wrapper once failed on a platform without posts)."""

from __future__ import annotations

import numpy as np

from oasis_gym.actions import TWITTER_DEFAULT_ACTIONS
from oasis_gym.actions import ActionType as A
from oasis_gym.envs import twitter_v0
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.policies.base import sim_of
from oasis_gym.policies.hybrid import HybridPolicy
from oasis_gym.policies.reporting import ReportingUsers
from oasis_gym.policies.wrappers import CommentVoter


def _run(pass_sim: bool) -> list[tuple]:
    actions = (*TWITTER_DEFAULT_ACTIONS, A.REPORT_POST, A.CREATE_COMMENT, A.LIKE_COMMENT, A.DISLIKE_COMMENT)
    env = twitter_v0.parallel_env(users=60, activation=0.5, max_cycles=8, available_actions=actions)
    env.reset(seed=1)
    arg = env.sim if pass_sim else env
    core = ReportingUsers(ABMPolicy(), misinfo_report_rate=1.0, true_report_rate=1.0)
    policy = HybridPolicy.top_k_by_followers(arg, core, CommentVoter(ABMPolicy(), vote_rate=1.0), 20)
    policy.reset(arg, np.arange(env.sim.platform.n_users), 1)
    out = []
    while env.agents:
        acts = policy.act(arg, env.sim.obs)
        out.append((acts.users.tolist(), np.asarray(acts.type).tolist(), np.asarray(acts.post).tolist()))
        env.step_batch(acts)
    env.close()
    return out


def test_sim_of_takes_an_env_or_a_simulation():
    env = twitter_v0.parallel_env(users=10, max_cycles=1)
    assert sim_of(env) is env.sim and sim_of(env.sim) is env.sim
    env.close()


def test_policies_act_the_same_given_the_env_or_its_simulation():
    with_env, with_sim = _run(False), _run(True)
    assert with_env == with_sim
    types = {t for _, ts, _ in with_env for t in ts}  # both wrappers changed some actions
    assert int(A.REPORT_POST) in types and types & {int(A.LIKE_COMMENT), int(A.DISLIKE_COMMENT)}
