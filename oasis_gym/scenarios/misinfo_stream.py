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
from oasis_gym.content import template_text
from oasis_gym.platform import MISINFO_LABEL, TRUE_LABEL
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.policies.reporting import ReportingUsers

__all__ = ["MisinfoScenario"]


# --------------------------------------------------------------------------- news stream


class _Stream:
    """Per-simulation step hook creating the scenario's source posts after each step."""

    def __init__(
        self, scenario: MisinfoScenario, rng: np.random.Generator, outlets: np.ndarray, misinfo_accounts: np.ndarray
    ):
        self.scenario, self.rng = scenario, rng
        self.outlets, self.misinfo_accounts = outlets, misinfo_accounts

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
        n = int(self.rng.poisson(self.scenario.stream_rate))
        n_mis = int(self.rng.binomial(n, self.scenario.misinfo_fraction))
        if n:
            self.post(sim, n - n_mis, n_mis)

    def rollback_step(self, sim) -> None:
        """The step this hook ran in failed and was rolled back (its posts with it): the
        stream draws again as if it never ran (see oasis_gym.step_atomic)."""
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
        stream = _Stream(self, rng, outlets, misinfo_accounts)
        sim.step_hooks[:] = [h for h in sim.step_hooks if not isinstance(h, _Stream)] + [stream]
        stream.post(sim, self.initial_true, self.initial_misinfo)

    __call__ = setup

    def user_policy(self, env=None) -> ReportingUsers:
        """The scenario's users: ABM users who also report posts (a picklable factory)."""
        return ReportingUsers(ABMPolicy(), self.misinfo_report_rate, self.true_report_rate)

    def env_kwargs(self, **overrides: Any) -> dict:
        """The env arguments of this scenario (users, activation, actions, ...), overridden."""
        return {**self.env_defaults, **overrides}
