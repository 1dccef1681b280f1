"""The state of K simulations in lockstep: one array row per simulation.

Users: shape (K, N). Posts: a ring of the `POST_SLOTS` newest posts per simulation, shape
(K, P); a post's id counts up per simulation and its slot is `id % P` (`slot`), so a
reference to an overwritten post is recognised (`post_id[k, slot] != id`) without
bookkeeping. Gathers use flat indexes `k * P + slot`: one index array per gather
(`model.candidates.feed_candidates` gives the candidates' ones).
`reset(rows, seeds)` starts new episodes in some rows and leaves the others untouched.
Under `Dynamics.oasis_rules` the state also remembers which (user, post) pairs engaged (likes
and reposts), which reported and which accounts' campaign bots liked (`engaged_pairs`,
`reported_pairs`, `bot_pairs`: `pairs.PairSet`), for as long as the post is in the ring.
"""

from __future__ import annotations

import numpy as np

from ..model import adversaries, rng
from ..model.population import N_TOPICS, TaskPopulation
from ..model.tiers import Dynamics
from .pairs import PairSet

POST_SLOTS = 512  # a power of two: a post's slot is id & (POST_SLOTS - 1)
# counter streams (the third part of every draw), one per kind of draw
(S_SETUP, S_ACTIVE, S_RETURN, S_CANDIDATE, S_ENGAGE, S_REPORT, S_CHURN, S_POST,
 S_ATTR, S_CAMPAIGN, S_BRIGADE, S_CHECK) = range(12)  # fmt: skip

USER_FLOATS = ("satisfaction", "opinion", "eng_ema", "visit_ema", "arousal_ema", "in_network_ema", "recency_ema",
               "fans", "chill")  # fmt: skip
USER_INTS = ("last_visit", "last_post", "last_share", "account_start", "suspended_at", "reports_made", "moderated")
POST_FLOATS = ("stance", "quality", "arousal", "arousal_score", "likes", "shares", "reports", "impressions",
               "step_reports", "frequent_reports")  # fmt: skip
POST_INTS = ("author", "created", "verdict")


class State:
    """Arrays of K simulations over one population (attributes listed in the tuples above)."""

    def __init__(self, k: int, population: TaskPopulation, dynamics: Dynamics):
        self.k, self.n, self.p = int(k), population.n, POST_SLOTS
        self.pop, self.dyn = population, dynamics
        shape_u, shape_p = (self.k, self.n), (self.k, self.p)
        for name in USER_FLOATS:
            setattr(self, name, np.zeros(shape_u, np.float32))
        for name in USER_INTS:
            setattr(self, name, np.zeros(shape_u, np.int64))
        for name in POST_FLOATS:
            setattr(self, name, np.zeros(shape_p, np.float32))
        for name in POST_INTS:
            setattr(self, name, np.zeros(shape_p, np.int64))
        self.churned = np.zeros(shape_u, bool)
        self.misinfo_account = np.zeros(shape_u, bool)
        self.post_id = np.full(shape_p, -1, np.int64)
        self.topic = np.zeros((N_TOPICS, *shape_p), np.float32)  # topic-major: one plane per topic
        self.misinfo = np.zeros(shape_p, bool)
        self.removed = np.zeros(shape_p, bool)
        self.checked = np.zeros(shape_p, bool)
        self.seed = np.zeros(self.k, np.int64)
        self.key = np.zeros(self.k, np.uint64)
        self.t = np.zeros(self.k, np.int64)
        self.next_post = np.zeros(self.k, np.int64)
        self.campaign = np.zeros(self.k, bool)
        self.brigader = np.zeros(shape_u, bool)
        self.targeted = np.zeros(shape_u, bool)
        self.opinion_std0 = np.zeros(self.k, np.float32)
        # OASIS's rules: who liked or reposted, who reported, whose bots liked (by account) each post
        rules = dynamics.oasis_rules
        self.engaged_pairs = PairSet(self.k, self.p, self.n) if rules else None
        self.reported_pairs = PairSet(self.k, self.p, self.n) if rules else None
        self.bot_pairs = PairSet(self.k, self.p, self.n) if rules and dynamics.campaign_amplify > 0 else None

    def reset(self, rows: np.ndarray, seeds: np.ndarray) -> None:
        """New episodes with `seeds` in simulation `rows` (integer index arrays)."""
        rows = np.asarray(rows, np.int64)
        seeds = np.asarray(seeds, np.int64)
        pop = self.pop
        self.seed[rows], self.key[rows] = seeds, rng.episode_key(seeds)
        self.t[rows] = 0
        self.next_post[rows] = 0
        self.campaign[rows] = False
        for name in USER_FLOATS + USER_INTS + POST_FLOATS + POST_INTS:
            getattr(self, name)[rows] = 0
        self.satisfaction[rows] = 0.6
        self.opinion[rows] = pop.opinion
        self.visit_ema[rows] = pop.activity
        self.fans[rows] = pop.fans
        self.chill[rows] = 1.0
        self.last_visit[rows] = -1
        self.last_post[rows] = -1
        self.last_share[rows] = -1
        self.suspended_at[rows] = -1
        self.churned[rows] = False
        self.post_id[rows] = -1
        self.topic[:, rows] = 0
        for flag in (self.misinfo, self.removed, self.checked):
            flag[rows] = False
        self.opinion_std0[rows] = pop.opinion.std()
        # who posts misinformation and who brigades: drawn per episode, never outlets
        draw = rng.uniform(self.key[rows, None], 0, S_SETUP, np.arange(self.n)[None, :])
        self.misinfo_account[rows], self.brigader[rows] = adversaries.draw_roles(draw, pop.outlet, self.dyn.brigaders)
        self.targeted[rows] = False
        self.retarget(rows)
        for pairs in self.pair_sets():
            pairs.reset(rows)

    def pair_sets(self) -> list[PairSet]:
        """The `PairSet`s kept under OASIS's rules (none without them)."""
        return [s for s in (self.engaged_pairs, self.reported_pairs, self.bot_pairs) if s is not None]

    def retarget(self, rows: np.ndarray) -> None:
        """Brigade targets: `brigade_targets` outlets, drawn from the episode key and step
        (`model.adversaries.retarget`)."""
        if self.dyn.brigaders == 0 or len(rows) == 0:
            return
        outlets = np.flatnonzero(self.pop.outlet)
        if len(outlets) == 0:
            return
        draw = rng.uniform(self.key[rows, None], self.t[rows, None], S_BRIGADE, outlets[None, :])
        self.targeted[rows] = False
        self.targeted[rows[:, None], adversaries.retarget(draw, outlets, self.dyn.brigade_targets)] = True

    def step_hash(self, stream: int) -> np.ndarray:
        """(K,) hashes of (episode key, step, `stream`): the start of each simulation's draws of
        this step in `stream` (`rng.hash64(..., start=)`), hashed once per simulation."""
        return rng.hash64(self.key, self.t, stream)

    def users_at(self, ka: np.ndarray, ua: np.ndarray) -> np.ndarray:
        """Flat indexes ``k * N + u`` of (simulation, user) pairs into the (K, N) arrays: one
        index array per gather (`array.reshape(-1)[at]`), cheaper than indexing with both."""
        return ka * self.n + ua

    def slot(self, ids: np.ndarray) -> np.ndarray:
        """The ring slots of post ids."""
        return ids & (self.p - 1)

    def live(self, ids: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Whether post ids (any shape, rows broadcast) still sit in their slots, unremoved."""
        slots = self.slot(ids)
        return (ids >= 0) & (self.post_id[rows, slots] == ids) & ~self.removed[rows, slots]
