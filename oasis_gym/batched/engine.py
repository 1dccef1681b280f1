"""K social platforms stepped in lockstep: the engine of the v1 platform-agent tasks.

One `step` runs, for every simulation at once: the moderator's actions on the queue it
saw, the campaign regimes, brigade retargeting, returning accounts and users, the visits
(activity x satisfaction; churned and suspended users stay away), the ranking of every
visitor's candidates with the simulation's weights W, the users' responses and what they
do to them, new posts and brigade reports (under `Dynamics.oasis_rules`, each (user, post)
pair at most once: `pairs.py`). It returns per-simulation counts (K,) from
which the tasks compute rewards. No Python loop runs over simulations or users; all
randomness is counter-based (`rng.py`), so simulation i with seed s is the same alone or
beside others.
"""

from __future__ import annotations

import numpy as np

from ..model import measures, rng
from ..model.moderation import NONE
from ..model.population import TaskPopulation, make_population
from ..model.ranking import CANDIDATE_FEATURES, DEFAULT_WEIGHTS, global_weights, rank, user_feature_names
from ..model.tiers import Dynamics, tier
from ..model.users import RETURN_SATISFACTION, visit_probability, visit_rate_ema, visits
from . import feed, moderation, posting, users
from .state import S_ACTIVE, S_RETURN, State

FEED_SIZE = 10


def segment_sums(values: np.ndarray, ka: np.ndarray, k: int) -> np.ndarray:
    """(k, ...) sums of `values` rows by simulation, `ka` sorted (as np.nonzero gives it)."""
    counts = np.bincount(ka, minlength=k)
    out = np.zeros((k, *values.shape[1:]), values.dtype)
    has = np.flatnonzero(counts)
    if len(has):
        out[has] = np.add.reduceat(values, (np.cumsum(counts) - counts)[has], axis=0)
    return out


class Engine:
    """K simulations of one population and tier (`difficulty` of `task`'s `version`, or explicit `dynamics`)."""

    def __init__(self, k: int, users: int = 1000, difficulty: str = "medium", population_seed: int = 0,
                 dynamics: Dynamics | None = None, population: TaskPopulation | None = None,
                 version: int = 1, task: str = "recommender"):  # fmt: skip
        self.dynamics = dynamics if dynamics is not None else tier(difficulty, version, task)
        self.population = (
            population if population is not None else make_population(users, self.dynamics, population_seed)
        )
        self.state = State(k, self.population, self.dynamics)
        self.k, self.n = self.state.k, self.state.n
        # whether `step` returns the candidate pools' mean features ("pool_means": the
        # recommender's observation reads them; the moderator's does not, and skips their cost)
        self.pool_means = True

    def reset(self, rows, seeds) -> None:
        """New episodes in `rows` with `seeds` (arrays of equal length)."""
        self.state.reset(np.asarray(rows), np.asarray(seeds))

    def step(self, weights=None, queue_ids=None, codes=None, stepping=None) -> dict[str, np.ndarray]:
        """One step of every simulation. `weights` (K, Z, 9): the ranking W of each (None:
        DEFAULT_WEIGHTS for everyone); `queue_ids`/`codes` (K, QUEUE): moderator actions on
        the queue it saw; `stepping` (K,) bool: only these simulations step, the others are
        left exactly as they are (None: all). Returns per-simulation counts, each (K,) (and
        "pool_means" (K, 9) where `self.pool_means`)."""
        st, dyn = self.state, self.dynamics
        go = np.ones(self.k, bool) if stepping is None else np.asarray(stepping, bool)
        out = {}
        if queue_ids is not None:
            out.update(moderation.apply(st, queue_ids, np.where(go[:, None], codes, NONE)))
        st.t += go
        st.step_reports[go] = 0
        posting.campaign_regimes(st, go)
        posting.bot_likes(st, go)
        if dyn.brigade_move_every > 0:
            st.retarget(np.flatnonzero(go & (st.t % dyn.brigade_move_every == 0)))
        posting.return_accounts(st, go)
        active = self._visits(go)
        ka, ua = np.nonzero(active)
        ids, flat, in_net, valid = feed.candidates(st, ka, ua)
        x = feed.features(st, feed.post_table(st), ka, ua, flat, in_net)
        z = feed.visitor_features(st, ka, ua)
        if weights is None:
            w = global_weights(DEFAULT_WEIGHTS, len(user_feature_names(dyn)))
            weights = np.broadcast_to(w, (self.k, *w.shape))
        top, served_ok = rank(x, z, np.asarray(weights, np.float32)[ka], valid, FEED_SIZE)
        at = top + (np.arange(len(ka)) * ids.shape[1])[:, None]  # flat cells of the served posts
        served, served_flat = ids.reshape(-1)[at], flat.reshape(-1)[at]
        sx = np.take(x.reshape(-1, x.shape[-1]), at, axis=0)
        engaged, shared, reported = users.respond_to_feeds(st, ka, ua, served, sx, served_ok)
        users.count_on_posts(st, ka, ua, served_flat, served_ok, engaged, shared, reported)
        users.update_users(st, ka, ua, served, sx, served_ok, engaged, shared)
        st.visit_ema[go] = visit_rate_ema(st.visit_ema[go], active[go])
        st.last_visit[active] = np.broadcast_to(st.t[:, None], active.shape)[active]
        made = posting.post(st, ka, ua)
        posting.brigade_reports(st, go)
        mis, arousal = sx[..., feed.COL["misinfo"]] > 0, sx[..., feed.COL["arousal"]]
        out.update(measures.feed_counts(ka, self.k, served_ok, mis, arousal, engaged, reported))
        out.update(posts=made, **measures.state_measures(st.opinion, st.churned, st.satisfaction, st.campaign))
        if self.pool_means:
            self._pool_stats(ka, x, valid, out)
        return out

    def _visits(self, go: np.ndarray) -> np.ndarray:
        """Who visits this step: (K, N) bool (`model.users.visits`). A churned user comes back
        with return_prob (satisfaction reset) and visits at once; suspended users never visit."""
        st, dyn = self.state, self.dynamics
        users_ = np.arange(self.n)[None, :]
        u_return = rng.uniform(st.key[:, None], st.t[:, None], S_RETURN, users_)
        u_visit = rng.uniform(st.key[:, None], st.t[:, None], S_ACTIVE, users_)
        p = visit_probability(self.population.activity, st.satisfaction)
        bots = st.misinfo_account & st.campaign[:, None] if dyn.campaign_visits else None  # always on in a campaign
        away = (st.suspended_at >= 0) | ~go[:, None]
        visit, back = visits(p, u_visit, u_return, st.churned & go[:, None], away, dyn.return_prob, bots)
        st.churned &= ~back
        st.satisfaction[back] = RETURN_SATISFACTION
        return visit

    def _pool_stats(self, ka: np.ndarray, x: np.ndarray, valid: np.ndarray, out: dict) -> None:
        """Per-simulation means of each candidate feature over the valid cells."""
        cells = np.bincount(ka, weights=valid.sum(1), minlength=self.k)
        nf = len(CANDIDATE_FEATURES)
        per_pair = np.einsum("mcf,mc->mf", x[..., :nf], valid.astype(np.float32))
        sums = segment_sums(per_pair.astype(np.float64), ka, self.k)
        out["pool_means"] = sums / np.maximum(cells, 1)[:, None]
