"""The platform agents' scenario: a news stream with misinformation, and reporting ABM users.

A scenario (Melting Pot's sense) = a substrate (the Twitter env) + a background population
(the users) + the env defaults. This one is what `Recommender-v0` and `Moderator-v0` run:
the envs resolve the name "misinfo_stream" through `oasis_gym.SCENARIOS` (they import no
scenario and no user policy), and the scenario supplies its users (`user_policy`).

`misinfo_stream` (the documented default of `Recommender-v0` and `Moderator-v0`)
---------------------------------------------------------------------------------
1 000 synthetic ABM users (`population.synthetic(1000, seed=population_seed)`) on a
Twitter-like platform, 3 simulated minutes per step, each user active with probability
0.1 per step (about 100 active users a step), 50 steps per episode (2.5 simulated hours).
Action set: Twitter's OASIS defaults plus dislike_post and report_post.

News sources:
- the `n_outlets` most-followed users are outlets posting *true* news (label 0), stance
  ~ Normal(0, `true_stance_sd`) clipped to [-1, 1];
- `n_misinfo_accounts` (5) ordinary users (drawn from the episode seed) post all
  *misinformation* (label 1), with an extreme stance of +-`misinfo_stance` (random sign),
  so it is engaging for users at either pole and polarizing. A handful of accounts
  producing most misinformation is the pattern measured on Twitter (Grinberg et al.,
  Science 2019: 0.1 % of users shared 80 % of fake-news posts), and it is what makes
  suspending repeat offenders effective.
At reset `initial_true` + `initial_misinfo` source posts are seeded; then, after every
step, Poisson(`stream_rate`) new source posts appear, each misinformation with probability
`misinfo_fraction`; suspended source accounts post nothing. Texts are the ABM's stance
templates about `topic`, prefixed with
"Breaking:" (readable by LLM users; the stance is stored as data). Reposts and quotes of a
labelled post inherit its label, so exposure counts every copy.

Users (`ReportingUsers(ABMPolicy())`): the ABM (bounded-confidence opinion dynamics +
agreement-driven like / dislike / repost / quote / follow / post); a user the ABM leaves
idle reports one post of their feed with rate `report_rate(post) * disagreement`, where
disagreement = |opinion - stance| / 2 and the rate is `misinfo_report_rate` for
misinformation and `true_report_rate` for everything else. Users thus detect
misinformation imperfectly, and report true posts they dislike: reports are a noisy
signal that both platform agents and the report-threshold baseline can use.

`misinfo_brigading` (`BrigadingScenario`, the documented default of `Moderator-v0`)
--------------------------------------------------------------------------------------
`misinfo_stream` plus report brigading, a documented real behaviour (coordinated groups
mass-reporting the accounts and outlets they oppose to get them taken down):
`n_brigade_accounts` (20) ordinary users (not sources) and `brigade_targets` (5) of the
outlets are drawn from the episode seed (after the sources, so the sources are the same as
without brigading); after every step each non-suspended brigader reports each original
post of a targeted outlet at most `brigade_window_minutes` (9, three steps) old that it has
not reported yet, with probability `brigade_rate` (0.2). Those are true posts: the
brigade never reports misinformation. Its reports are ordinary platform reports (same
action, reason text and journal rows as a user's), so a report count cannot tell them
apart; who reports can (brigaders report many posts, and the ones fact-checked true).
Chosen a priori, not tuned on evaluations: a brigaded post collects about 20 x 0.2 = 4
reports a step, the scale of the reports misinformation gets (measured once on a
training seed, no moderation: ~11 reports per brigaded post by the episode's end, ~6
per misinformation post, ~0.4 per other true post), so a report-count threshold that
catches misinformation also removes brigaded posts, and suspends their outlets.
`Recommender-v0` keeps `misinfo_stream` (its ranking reads report counts too).

Platform agents: the moderator watches the `top_m=20` fastest-spreading posts
(`agent_params`); the recommender uses the `RecommenderAgent` defaults.

Where exposure happens (no moderation, Twitter recsys, measured): about half of all
misinformation impressions fall in the step right after a post appears, before any
moderator can see it (a new post is ranked high by recency for everyone; the moderator
acts on what it observed in the previous step). Removing posts alone therefore cuts
exposure by about 30 % here (an oracle removing every misinformation post it sees,
top_m=20, 3 seeds); removing them and suspending their authors cuts it by 75-80 %.

Fixed platform rules (baselines and "the other agent" of each env): `oasis_gym.envs.platform_rules`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oasis_gym.actions import TWITTER_DEFAULT_ACTIONS
from oasis_gym.actions import ActionType as A
from oasis_gym.model.adversaries import brigade
from oasis_gym.platform import MISINFO_LABEL, ORIGINAL, REMOVED, TRUE_LABEL
from oasis_gym.platform.records import ActionBatch
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.policies.reporting import ReportingUsers
from oasis_gym.sim.content import template_text

__all__ = ["MisinfoScenario", "BrigadingScenario"]


# --------------------------------------------------------------------------- news stream


class _Stream:
    """Per-simulation step hook creating the scenario's source posts after each step."""

    def __init__(
        self,
        scenario: MisinfoScenario,
        rng: np.random.Generator,
        outlets: np.ndarray,
        misinfo_accounts: np.ndarray,
        brigaders: np.ndarray | None = None,
        brigade_targets: np.ndarray | None = None,
    ):
        self.scenario, self.rng = scenario, rng
        self.outlets, self.misinfo_accounts = outlets, misinfo_accounts
        self.brigaders = np.empty(0, np.int64) if brigaders is None else brigaders
        self.brigade_targets = np.empty(0, np.int64) if brigade_targets is None else brigade_targets

    def post(self, sim, n_true: int, n_misinfo: int) -> np.ndarray:
        sc, rng, pf = self.scenario, self.rng, sim.platform
        outlets = self.outlets[~pf.u_suspended.a[self.outlets]]
        spreaders = self.misinfo_accounts[~pf.u_suspended.a[self.misinfo_accounts]]
        n_true = n_true if len(outlets) else 0  # suspended accounts post nothing
        n_misinfo = n_misinfo if len(spreaders) else 0
        authors = np.concatenate([rng.choice(outlets, n_true), rng.choice(spreaders, n_misinfo)]).astype(np.int64)
        stance = np.concatenate(
            [
                np.clip(rng.normal(0.0, sc.true_stance_sd, n_true), -1.0, 1.0),
                rng.choice([-1.0, 1.0], n_misinfo) * sc.misinfo_stance,
            ]
        ).astype(np.float32)
        label = np.r_[np.full(n_true, TRUE_LABEL), np.full(n_misinfo, MISINFO_LABEL)].astype(np.int8)
        order = rng.permutation(len(authors))  # post ids carry no hint of the label
        authors, stance, label = authors[order], stance[order], label[order]
        texts = ["Breaking: " + t for t in template_text(stance, sc.topic, rng)]
        return sim.platform.create_posts(authors, texts, stance=stance, label=label)

    def __call__(self, sim, outcome, conn) -> None:
        self._rng_before = self.rng.bit_generator.state  # for `rollback_step`
        if len(self.brigaders):
            self.brigade(sim)
        n = int(self.rng.poisson(self.scenario.stream_rate))
        n_mis = int(self.rng.binomial(n, self.scenario.misinfo_fraction))
        if n:
            self.post(sim, n - n_mis, n_mis)

    def brigade(self, sim) -> None:
        """Coordinated false reports (`model.adversaries.brigade`, this scenario's window,
        probability and draws): every active brigader reports each recent original post of a
        targeted outlet it has not reported yet with probability `brigade_rate`. The reports
        go through the platform's ordinary report action (same reason text, same journal rows
        as a user's report): one report is indistinguishable from another."""
        sc, pf = self.scenario, sim.platform
        n = pf.n_posts
        start = np.searchsorted(pf.p_minute.a[:n], pf.minute - sc.brigade_window_minutes)
        posts = np.arange(start, n, dtype=np.int64)
        users = self.brigaders[~pf.u_suspended.a[self.brigaders]]
        if not len(posts) or not len(users):
            return
        brigader, targeted = np.zeros((2, 1, pf.n_users), bool)
        brigader[0, users] = True
        targeted[0, self.brigade_targets] = True
        reports = pf.rel["report"]

        def draw(k, slot, user):
            return self.rng.random(len(user))  # drawn for every pair: same seed, same reports

        def reported_before(k, slot, user):
            return reports.contains(user, posts[slot])

        _, slot, user = brigade(
            (pf.minute - pf.p_minute.a[posts])[None, :],
            ((pf.p_kind.a[posts] == ORIGINAL) & (pf.p_status.a[posts] != REMOVED))[None, :],
            pf.p_author.a[posts][None, :],
            targeted,
            brigader,
            (0, sc.brigade_window_minutes),
            sc.brigade_rate,
            draw,
            reported_before if len(reports) else None,
        )
        if len(user):
            k = len(user)
            pf.apply(ActionBatch(user, np.full(k, int(A.REPORT_POST)), posts[slot], ["misleading"] * k))

    def rollback_step(self, sim) -> None:
        """The step this hook ran in failed and was rolled back (its posts with it): the
        stream draws again as if it never ran (see oasis_gym.sim.step_atomic)."""
        self.rng.bit_generator.state = self._rng_before


@dataclass
class MisinfoScenario:
    """A stream of true and misinformation posts from source accounts (see module doc)."""

    n_outlets: int = 20
    n_misinfo_accounts: int = 5  # a few superspreaders post all misinformation
    initial_true: int = 30
    initial_misinfo: int = 10
    stream_rate: float = 2.0  # source posts per step (Poisson)
    misinfo_fraction: float = 0.3
    misinfo_stance: float = 0.85
    true_stance_sd: float = 0.35
    topic: str = "the new health policy"
    misinfo_report_rate: float = 0.3
    true_report_rate: float = 0.01
    # report brigading (off here; on in `BrigadingScenario`, Moderator-v0's default)
    n_brigade_accounts: int = 0  # ordinary users who mass-report the targeted outlets' posts
    brigade_targets: int = 0  # outlets the brigade opposes (drawn per episode seed)
    brigade_rate: float = 0.0  # P(a brigader reports a targeted post) per step while it is recent
    brigade_window_minutes: int = 9  # "recent": brigaders act on posts at most this old
    env_defaults: dict = field(
        default_factory=lambda: {
            "users": 1000,
            "activation": 0.1,
            "max_cycles": 50,
            "platform": "twitter",
            "db_path": ":memory:",
            "available_actions": tuple(int(a) for a in TWITTER_DEFAULT_ACTIONS)
            + (int(A.DISLIKE_POST), int(A.REPORT_POST)),
        }
    )
    agent_params: dict = field(default_factory=lambda: {"moderator": {"top_m": 20}})
    name: str = "misinfo_stream"

    def setup(self, sim) -> None:
        """Pick the source accounts, seed the first posts and (re)attach the stream hook."""
        pf = sim.platform
        rng = np.random.default_rng(np.random.SeedSequence([0 if sim.seed is None else int(sim.seed), 7919]))
        order = pf.most_followed()
        outlets = np.sort(order[: self.n_outlets])
        rest = order[self.n_outlets :]
        misinfo_accounts = np.sort(rng.choice(rest, min(self.n_misinfo_accounts, len(rest)), replace=False))
        brigaders = targets = None
        if self.n_brigade_accounts > 0 and self.brigade_targets > 0 and self.brigade_rate > 0:
            # drawn after the sources, so the sources are those of the scenario without brigading
            others = np.setdiff1d(rest, misinfo_accounts)
            brigaders = np.sort(rng.choice(others, min(self.n_brigade_accounts, len(others)), replace=False))
            targets = np.sort(rng.choice(outlets, min(self.brigade_targets, len(outlets)), replace=False))
        stream = _Stream(self, rng, outlets, misinfo_accounts, brigaders, targets)
        sim.step_hooks[:] = [h for h in sim.step_hooks if not isinstance(h, _Stream)] + [stream]
        stream.post(sim, self.initial_true, self.initial_misinfo)

    __call__ = setup

    def user_policy(self, env=None) -> ReportingUsers:
        """The scenario's users: ABM users who also report posts (a picklable factory)."""
        return ReportingUsers(ABMPolicy(), self.misinfo_report_rate, self.true_report_rate)

    def env_kwargs(self, **overrides: Any) -> dict:
        """The env arguments of this scenario (users, activation, actions, ...), overridden."""
        return {**self.env_defaults, **overrides}


@dataclass
class BrigadingScenario(MisinfoScenario):
    """`misinfo_stream` plus report brigading (Moderator-v0's default scenario, see the module
    doc): 20 accounts mass-report the recent posts of 5 of the 20 outlets. Parameters chosen a
    priori (not tuned on any evaluation): a brigaded post collects about 20 * 0.2 = 4 reports
    a step for three steps, the scale of the reports misinformation gets."""

    n_brigade_accounts: int = 20
    brigade_targets: int = 5
    brigade_rate: float = 0.2
    name: str = "misinfo_brigading"
