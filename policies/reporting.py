"""Users who report posts: a wrapper adding report_post to another user policy.

The users of the platform-agent scenario `misinfo_stream` are `ReportingUsers(ABMPolicy())`:
reports are the noisy signal both platform agents and the report-threshold baseline use.
"""

from __future__ import annotations

import numpy as np

from oasis_gym.actions import ActionType as A
from oasis_gym.model.users import report_probability
from oasis_gym.platform import MISINFO_LABEL
from oasis_gym.sim import ActionArrays, ObsBatch

from .base import PolicyWrapper, filled, sim_of

__all__ = ["ReportingUsers"]


class ReportingUsers(PolicyWrapper):
    """Wrap a user policy: users it leaves idle may report one post of their feed.

    Per feed slot the rate is `model.users.report_probability` with floor 0:
    `misinfo_report_rate` (post labelled misinformation) or `true_report_rate` (anything
    else), times the user's disagreement with the post's stance (|opinion - stance| / 2,
    unknown stance counts as 0). P(report) = min(1, sum of
    the slot rates); the slot is drawn in proportion to its rate. Only when report_post is
    an available action; posts the user already reported are skipped.
    """

    name = "reporting"
    state_key = "base"  # checkpoints written before PolicyWrapper keep loading

    def __init__(
        self, base, misinfo_report_rate: float = 0.3, true_report_rate: float = 0.01, reason: str = "misleading"
    ):
        super().__init__(base)
        self.misinfo_report_rate = misinfo_report_rate
        self.true_report_rate = true_report_rate
        self.reason = reason

    def act(self, env, obs: ObsBatch) -> ActionArrays:
        """The wrapped policy's actions; idle users may report a post of their feed instead."""
        acts = self.inner.act(env, obs)
        sim = sim_of(env)
        pf = sim.platform
        if not len(obs) or not pf.available[A.REPORT_POST] or not pf.n_posts:
            return acts  # nothing to report (an empty platform once crashed here)
        n = len(acts)
        rows = np.searchsorted(obs.users, np.asarray(acts.users, dtype=np.int64))
        has = obs.mask_post[rows].astype(bool)
        posts = np.where(has, obs.post_ids[rows], 0)
        users = obs.users[rows]
        stance = np.nan_to_num(pf.p_stance.a[posts])
        misinfo = pf.p_label.a[posts] == MISINFO_LABEL
        rate = report_probability(
            misinfo, pf.u_opinion.a[users][:, None], stance, self.misinfo_report_rate, self.true_report_rate, floor=0.0
        )
        rate = rate * has
        if len(pf.rel["report"]):
            rate[pf.rel["report"].contains(np.broadcast_to(users[:, None], posts.shape), posts)] = 0.0
        total = rate.sum(axis=1)
        u_act, u_slot = self.rng.random(n), self.rng.random(n)
        idle = np.asarray(acts.type, dtype=np.int64) == A.DO_NOTHING
        report = idle & (u_act < np.minimum(total, 1.0))
        if not report.any():
            return acts
        cdf = np.cumsum(rate[report], axis=1)
        slot = (cdf < (u_slot[report] * total[report])[:, None]).sum(axis=1)
        slot = np.minimum(slot, rate.shape[1] - 1)
        return _with_reports(acts, np.flatnonzero(report), slot, self.reason)


def _with_reports(acts: ActionArrays, idx: np.ndarray, slot: np.ndarray, reason: str) -> ActionArrays:
    """A copy of `acts` where rows `idx` report post slot `slot`."""
    out = filled(acts)
    out.type[idx] = A.REPORT_POST
    out.post[idx] = slot
    for i in idx.tolist():
        out.text[i] = reason
    out.stance[idx] = np.nan
    return out
