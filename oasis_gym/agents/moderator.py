"""The trainable moderator (`moderator_0`): acts once per step with numeric arrays (the
envs wrap them in Gymnasium spaces: `envs/agent_spaces.py`).

Moderator
    observation  Box(M * 18): the top-M visible posts by recent spread (velocity = likes +
                 shares + comments per hour of age, over the last `window_minutes`), each:
                 log velocity, log likes, log shares, reports, log reports per hour of age,
                 age (h), log author followers, log author removed posts, log author posts
                 fact-checked as misinformation, author suspended, log author posts
                 fact-checked true, the share of its reporters with a false-report record
                 (they reported another post fact-checked true), its reporters' mean log
                 number of other reports (evidence against report brigading), fact-check verdict (+1 /
                 -1 / 0 none), fact-check pending, moderation status, hours since reset,
                 slot filled. Heavy-tailed counts are log1p-scaled (VecNormalize alone lets a
                 few viral posts dominate their statistics). No ground truth: labels reach it
                 only through the noisy, delayed, budgeted fact-checks (`fact_check.py`).
    action       MultiDiscrete([6] * M): per slot none / label / downrank / remove /
                 remove + suspend the author / request a fact-check of the post (code 5;
                 `check_action=False`: MultiDiscrete([5] * M), and the service picks the
                 checks itself). Effects are real and journaled: labels show in
                 feeds and text, downranked posts score lower, removed posts leave every
                 feed, suspended users never activate again. `PostActions` (posts named
                 directly) is the privileged form the oracle upper bound uses.
    reward       -misinfo_share of the next feeds - action_cost * (this step's actions on
                 posts not labelled misinformation)  (action_cost 0.02)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..checks import action_array
from ..model.fact_check import VERDICT_TRUE
from ..model.moderation import (
    CODES,
    DOWNRANK,
    FACT_CHECK,
    LABEL,
    REMOVE,
    REMOVE_AND_SUSPEND,
    V0_CODES,
    V0_VIEW_FEATURES,
    reporter_evidence,
    v0_view_features,
    velocity_view,
)
from ..model.rewards import V0ModeratorReward, linear_reward
from ..platform import DOWNRANKED, LABELLED, MISINFO_LABEL, REMOVED, REPOST
from ..platform.store import unpack_keys
from ..sim.agent_protocol import AgentView
from .exposure import exposure_stats
from .fact_check import STATE_KEY, FactChecker

# the names of moderator_0's action values 0-4 (model/moderation.V0_CODES: value -> code)
MODERATION_ACTIONS = tuple(CODES[c] for c in V0_CODES[:5])
# what each moderating code does to a post's status
_STATUS = ((LABEL, LABELLED), (DOWNRANK, DOWNRANKED), (REMOVE, REMOVED), (REMOVE_AND_SUSPEND, REMOVED))


@dataclass
class PostActions:
    """A privileged moderator action naming posts directly instead of view slots: what the
    oracle upper bound uses to act on every visible misinformation post, not only the
    `top_m` the learner sees. `kinds` are moderator_0's action values 1-4 (`MODERATION_ACTIONS`)."""

    posts: np.ndarray
    kinds: np.ndarray
    suspend_users: np.ndarray | None = None  # accounts to suspend without acting on a post


@dataclass
class ModeratorAgent:
    """The trainable moderator: acts on the `top_m` fastest-spreading posts it sees, never
    reads a label (module docstring); fact-checks come from `fact_check.FactChecker`."""

    top_m: int = 10
    window_minutes: int = 360
    action_cost: float = V0ModeratorReward.action_cost
    check_budget: int = 2  # fact-checks sent per step (see fact_check.py)
    check_delay: int = 2  # steps until a verdict comes back
    check_error: float = 0.1  # probability a verdict is wrong
    # True: the action picks the checks, code 5 of a slot = "send this post to fact-checkers"
    # (within `check_budget`, by view order); False: the service picks them (most reported
    # first). True by default: PPO then beats the report rules under brigading (issue 18 notes)
    check_action: bool = True
    # the platform-agent protocol (oasis_gym.sim.agent_protocol): moderates before the users
    # act (a removed post can no longer be rated this step); the fact-check service's state
    # is saved in the journal with every step, so a resumed run continues its checks
    acts_first: ClassVar[bool] = True
    state_key: ClassVar[str | None] = STATE_KEY

    def __post_init__(self):

        self.n_codes = len(MODERATION_ACTIONS) + (1 if self.check_action else 0)
        # observation: observation_size floats; action: one code per slot, action_nvec[i]
        # codes for slot i (the envs make the Gymnasium spaces of these, envs/agent_spaces.py)
        self.observation_size = self.top_m * len(V0_VIEW_FEATURES)
        self.action_nvec = (self.n_codes,) * self.top_m
        self.slots = np.full(self.top_m, -1, dtype=np.int64)
        self.fact_check = FactChecker(self.check_budget, self.check_delay, self.check_error)
        self.true_actions = 0

    def check(self, recsys) -> None:
        """Any simulation can host the moderator (it needs no particular recsys)."""

    def begin_step(self, view: AgentView) -> None:
        """Nothing to remember before the step: the reward is of the next feeds."""

    def state_dict(self, view: AgentView) -> dict:
        """The fact-check service's state (`fact_check.FactChecker.state_dict`)."""
        return self.fact_check.state_dict(view)

    def candidates(self, view: AgentView) -> np.ndarray:
        """Top-M visible original posts of the window by spread velocity (ties: newer first;
        `model/moderation.velocity_view`)."""
        pf = view.platform
        start = np.searchsorted(pf.p_minute.a, pf.minute - self.window_minutes)
        cand = np.arange(start, pf.n_posts, dtype=np.int64)
        cand = cand[(pf.p_kind.a[cand] != REPOST) & (pf.p_status.a[cand] != REMOVED)]
        return velocity_view(
            cand,
            pf.p_likes.a[cand],
            pf.p_shares.a[cand],
            pf.p_comments.a[cand],
            pf.minute - pf.p_minute.a[cand],
            self.top_m,
        )

    def observe(self, view: AgentView) -> np.ndarray:
        """The view's features; no ground truth: the label reaches the moderator only
        through the fact-check service's noisy, delayed verdicts."""
        pf = view.platform
        fc = self.fact_check = self.fact_check.copy()  # a failed step restores the previous one
        fc.sync(view)
        fc.deliver(view)
        self.slots = self.candidates(view)
        filled = self.slots >= 0
        if filled.any() and not self.check_action:
            fc.send(view, self.slots, np.where(filled, pf.p_reports.a[np.maximum(self.slots, 0)], -1))
        return self.features(view)

    def features(self, view: AgentView) -> np.ndarray:
        """The features of the current view (`slots`) and fact-check state
        (`model/moderation.v0_view_features`); no side effects."""
        pf, fc = view.platform, self.fact_check
        filled = self.slots >= 0
        p = self.slots[filled]
        author, reports, n = pf.p_author.a[p], pf.p_reports.a[p], pf.n_posts
        removed = np.bincount(pf.p_author.a[:n][pf.p_status.a[:n] == REMOVED], minlength=pf.n_users)
        cleared = np.bincount(pf.p_author.a[:n][fc.verdicts[:n] == VERDICT_TRUE], minlength=pf.n_users)
        # who reported what, from the platform's report records (never the label)
        rel = pf.rel["report"]
        reporters, reported = unpack_keys(rel.keys()) if len(rel) and reports.any() else (np.zeros(0, np.int64),) * 2
        false_share, activity = reporter_evidence(reporters, reported, fc.verdicts, p, pf.n_users, n)
        return v0_view_features(
            filled,
            likes=pf.p_likes.a[p],
            shares=pf.p_shares.a[p],
            comments=pf.p_comments.a[p],
            reports=reports,
            age_minutes=pf.minute - pf.p_minute.a[p],
            author_followers=pf.u_followers.a[author],
            author_removed=removed[author],
            author_flagged=fc.author_flags[author],
            author_suspended=pf.u_suspended.a[author],
            author_cleared=cleared[author],
            reporters_false_share=false_share,
            reporter_activity=activity,
            verdict=fc.verdicts[p],
            pending=fc.pending(p),
            status=pf.p_status.a[p],
            minutes_since_reset=pf.minute - view.start_minute,
        ).reshape(-1)

    def validate(self, action) -> np.ndarray | PostActions:
        """The action as one code per slot (a `PostActions` checked and kept), or ValueError
        (`oasis_gym.checks.action_array`: wrong shape, NaN, inf, not an integer, a code outside
        [0, n_codes - 1])."""
        if isinstance(action, PostActions):
            posts = np.asarray(action.posts, dtype=np.int64).reshape(-1)
            kinds = np.asarray(action.kinds, dtype=np.int64).reshape(-1)
            if posts.shape != kinds.shape or ((kinds < 1) | (kinds >= len(MODERATION_ACTIONS))).any():
                raise ValueError("PostActions needs post ids and action codes 1-4 of the same length")
            return PostActions(posts, kinds, action.suspend_users)
        return action_array(action, "moderator_0 action", (self.top_m,), 0, self.n_codes - 1, codes=True)

    def apply(self, view: AgentView, action) -> None:
        """Apply the moderation action: statuses on the chosen posts, suspensions of their
        authors (code 4); records what the reward's action cost needs."""
        a = self.validate(action)
        pf = view.platform
        if isinstance(a, PostActions):
            posts, kinds = a.posts, a.kinds
            if ((posts < 0) | (posts >= pf.n_posts)).any():
                raise ValueError("PostActions needs existing post ids")
        else:
            act = (a > 0) & (a < len(MODERATION_ACTIONS)) & (self.slots >= 0)
            posts, kinds = self.slots[act], a[act]
            if self.check_action:  # fact-check requests: no moderation, no cost; on a copy, so
                self.fact_check = self.fact_check.copy()  # a failed step gets the old service back
                asked = (V0_CODES[a] == FACT_CHECK) & (self.slots >= 0)
                self.fact_check.request(view, self.slots[asked])
        self.true_actions = int((pf.p_label.a[posts] != MISINFO_LABEL).sum())
        codes = V0_CODES[kinds]
        for code, status in _STATUS:
            sel = posts[(codes == code) & (pf.p_status.a[posts] < status)]
            if len(sel):
                pf.moderate(sel, status)
        suspend = pf.p_author.a[posts[codes == REMOVE_AND_SUSPEND]]
        if isinstance(action, PostActions) and action.suspend_users is not None:
            suspend = np.concatenate([suspend, np.asarray(action.suspend_users, dtype=np.int64)])
        suspend = np.unique(suspend)
        suspend = suspend[~pf.u_suspended.a[suspend]]
        if len(suspend):
            pf.suspend(suspend)

    def reward(self, view: AgentView) -> float:
        """-misinformation share of the feeds just served - the cost of this step's actions
        on posts that are not misinformation. The action count is consumed here, so a step
        without a moderator action costs nothing (no stale cost from an earlier step)."""
        terms = {"misinfo_exposure": exposure_stats(view)[0], "true_actions": self.true_actions}  # 0.0, not NaN
        self.true_actions = 0
        return linear_reward(terms, V0ModeratorReward(self.action_cost).weights())
