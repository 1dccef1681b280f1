"""Training scenarios for the platform agents (recommender_0, moderator_0).

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

Fixed platform rules (baselines and "the other agent" of each single-agent env):
- `NoModeration`: every slot "none".
- `ReportThresholdModerator(threshold, action)`: act on every observed post with at least
  `threshold` reports (default: remove at 3 reports).
- `OracleModerator`: reads the true labels and removes (and with action 4 suspends the
  authors of) every visible misinformation post on the platform: the upper bound, not a
  baseline (see its docstring for why it cannot be beaten on exposure).
- `FixedWeights(weights)`: constant ranking weights for the agent-controlled recsys.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from oasis_gym.actions import TWITTER_DEFAULT_ACTIONS
from oasis_gym.actions import ActionType as A
from oasis_gym.content import template_text
from oasis_gym.platform import MISINFO_LABEL, TRUE_LABEL
from oasis_gym.simulation import ActionArrays, ObsBatch

__all__ = [
    "MisinfoScenario",
    "ReportingUsers",
    "NoModeration",
    "ReportThresholdModerator",
    "OracleModerator",
    "FixedWeights",
    "SCENARIOS",
    "make_scenario",
    "default_user_policy",
]


# --------------------------------------------------------------------------- users


class ReportingUsers:
    """Wrap a user policy: users it leaves idle may report one post of their feed.

    Per feed slot the rate is `misinfo_report_rate` (post labelled misinformation) or
    `true_report_rate` (anything else), times the user's disagreement with the post's
    stance (|opinion - stance| / 2, unknown stance counts as 0). P(report) = min(1, sum of
    the slot rates); the slot is drawn in proportion to its rate. Only when report_post is
    an available action; posts the user already reported are skipped.
    """

    name = "reporting"

    def __init__(
        self, base, misinfo_report_rate: float = 0.3, true_report_rate: float = 0.01, reason: str = "misleading"
    ):
        self.base = base
        self.misinfo_report_rate = misinfo_report_rate
        self.true_report_rate = true_report_rate
        self.reason = reason

    def reset(self, env, users: np.ndarray, seed: int | None) -> None:
        base_seq, own_seq = np.random.SeedSequence(seed).spawn(2)
        self.base.reset(env, users, int(base_seq.generate_state(1)[0]))
        self.rng = np.random.default_rng(own_seq)

    def act(self, env, obs: ObsBatch) -> ActionArrays:
        acts = self.base.act(env, obs)
        sim = getattr(env, "sim", env)
        pf = sim.platform
        if not len(obs) or not pf.available[A.REPORT_POST]:
            return acts
        n = len(acts)
        rows = np.searchsorted(obs.users, np.asarray(acts.users, dtype=np.int64))
        has = obs.mask_post[rows].astype(bool)
        posts = np.where(has, obs.post_ids[rows], 0)
        users = obs.users[rows]
        stance = np.nan_to_num(pf.p_stance.a[posts])
        disagree = np.abs(pf.u_opinion.a[users][:, None] - stance) / 2.0
        rate = np.where(pf.p_label.a[posts] == MISINFO_LABEL, self.misinfo_report_rate, self.true_report_rate)
        rate = rate * disagree * has
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

    def state_dict(self) -> dict:
        base = self.base.state_dict() if hasattr(self.base, "state_dict") else {}
        return {"base": base, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        if hasattr(self.base, "load_state_dict"):
            self.base.load_state_dict(state.get("base", {}))
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = state["rng"]


def _with_reports(acts: ActionArrays, idx: np.ndarray, slot: np.ndarray, reason: str) -> ActionArrays:
    """A copy of `acts` where rows `idx` report post slot `slot`."""
    n = len(acts)

    def col(values, fill, dtype):
        return np.array(values, dtype=dtype) if values is not None else np.full(n, fill, dtype=dtype)

    typ, post = col(acts.type, 0, np.int64), col(acts.post, 0, np.int64)
    typ[idx] = A.REPORT_POST
    post[idx] = slot
    text = list(acts.text) if acts.text is not None else [None] * n
    for i in idx.tolist():
        text[i] = reason
    stance = col(acts.stance, np.nan, np.float32)
    stance[idx] = np.nan
    return ActionArrays(np.asarray(acts.users, dtype=np.int64), typ, post, acts.comment, acts.user, text, stance)


def default_user_policy(env=None) -> ReportingUsers:
    """The scenario's users: ABM users who also report posts (picklable factory)."""
    from oasis_gym.policies.abm import ABMPolicy

    return ReportingUsers(ABMPolicy())


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
        order = np.lexsort((np.arange(pf.n_users), -pf.u_followers.a))
        outlets = np.sort(order[: self.n_outlets])
        rest = order[self.n_outlets :]
        misinfo_accounts = np.sort(rng.choice(rest, min(self.n_misinfo_accounts, len(rest)), replace=False))
        stream = _Stream(self, rng, outlets, misinfo_accounts)
        sim.step_hooks[:] = [h for h in sim.step_hooks if not isinstance(h, _Stream)] + [stream]
        stream.post(sim, self.initial_true, self.initial_misinfo)

    __call__ = setup

    def user_policy(self, env=None) -> ReportingUsers:
        from oasis_gym.policies.abm import ABMPolicy

        return ReportingUsers(ABMPolicy(), self.misinfo_report_rate, self.true_report_rate)

    def env_kwargs(self, **overrides: Any) -> dict:
        """The env arguments of this scenario (users, activation, actions, ...), overridden."""
        return {**self.env_defaults, **overrides}


SCENARIOS: dict[str, Callable[..., Any]] = {"misinfo_stream": MisinfoScenario}


def make_scenario(scenario: str | MisinfoScenario | None, **params) -> MisinfoScenario | None:
    """A scenario by name (params override its fields), an instance (copied with params), or None."""
    if scenario is None:
        return None
    if isinstance(scenario, str):
        if scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {scenario!r}; choose from {sorted(SCENARIOS)}")
        return SCENARIOS[scenario](**params)
    return replace(scenario, **params) if params else scenario


# --------------------------------------------------------------------------- fixed platform rules


class NoModeration:
    """Moderator baseline: never act."""

    name = "none"

    def __call__(self, sim) -> np.ndarray:
        return np.zeros(sim.platform_agents["moderator_0"].top_m, dtype=np.int64)


@dataclass
class ReportThresholdModerator:
    """Act (`action`: 1 label, 2 downrank, 3 remove, 4 remove + suspend) on every post of the
    moderator's current view with at least `threshold` reports."""

    threshold: int = 3
    action: int = 3
    name: str = "report_threshold"

    def __call__(self, sim) -> np.ndarray:
        agent = sim.platform_agents["moderator_0"]
        slots = agent.slots
        out = np.zeros(len(slots), dtype=np.int64)
        ok = slots >= 0
        out[ok] = np.where(sim.platform.p_reports.a[slots[ok]] >= self.threshold, self.action, 0)
        return out


@dataclass
class OracleModerator:
    """Reads the ground truth and acts (`action` 3 remove, 4 remove + suspend) on *every*
    visible misinformation post of the platform, not only the moderator's `top_m` view,
    through the privileged `PostActions`. With action 4 (`oracle_suspend`, the stated upper
    bound) it also suspends the scenario's misinformation source accounts at its first step.

    Why `OracleModerator(4)` cannot be beaten: all moderators act at the same moment of a
    step (before the users), the feeds served at reset are the same for all, and after its
    first action no misinformation is visible (users cannot quote or repost a removed post)
    and no source can post any: every later feed is free of misinformation, so its
    per-step rewards are all 0, the maximum (-misinfo share - action costs <= 0), and it
    acts on no true post. `train.evaluate.oracle_check` verifies this on every evaluation.
    `OracleModerator(3)` (remove only, view-independent) is a reference, not a bound."""

    action: int = 3
    name: str = "oracle"

    def __call__(self, sim):
        from oasis_gym.platform import REMOVED, REPOST
        from oasis_gym.platform_agents import PostActions

        pf = sim.platform
        n = pf.n_posts
        posts = np.flatnonzero(
            (pf.p_label.a[:n] == MISINFO_LABEL) & (pf.p_status.a[:n] != REMOVED) & (pf.p_kind.a[:n] != REPOST)
        )
        sources = None
        if self.action == 4:
            streams = [h for h in sim.step_hooks if isinstance(h, _Stream)]
            sources = np.concatenate([h.misinfo_accounts for h in streams]) if streams else np.empty(0, np.int64)
            sources = sources[~pf.u_suspended.a[sources]]
        return PostActions(posts, np.full(len(posts), self.action, np.int64), sources)


@dataclass
class FixedWeights:
    """Recommender rule for the agent-controlled recsys: the same weights every step."""

    weights: tuple[float, ...] | None = None  # None: the recsys's DEFAULT_WEIGHTS
    name: str = "fixed_weights"

    def __call__(self, sim) -> np.ndarray:
        from oasis_gym.recsys import DEFAULT_WEIGHTS

        w = np.asarray(self.weights if self.weights is not None else DEFAULT_WEIGHTS, dtype=np.float32)
        agent = sim.platform_agents.get("recommender_0")
        return agent.weights_action(w) if agent is not None and w.ndim == 1 else w.reshape(-1)
