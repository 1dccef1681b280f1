"""ABMPolicy: rule-based users, vectorized over all of the policy's active users.

Each step, for every active user at once:
1. opinion dynamics on what the user sees: the stances of the posts in their feed move the
   user's opinion by the chosen model (bounded confidence / Deffuant-Weisbuch, Hegselmann-
   Krause, relative agreement, social judgment, Lorenz 2021; see oasis_gym.model.opinions);
2. behaviour: like / dislike / repost / quote / comment / follow an author with
   probabilities driven by agreement with the post's stance, its popularity and the author's
   fame; create_post at the user's own rate with their current opinion as stance; do_nothing
   otherwise (behaviour.choose_actions). Or, for calibrating spread against real
   cascades, an information-diffusion rule: independent cascade (each exposure reposts with
   probability p) or a linear threshold on the share of followees who shared.
ABM-written posts carry their stance as data and a short template text LLM users can read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from oasis_gym.actions import ActionType as A
from oasis_gym.model.opinions import update_opinions
from oasis_gym.platform import REPOST
from oasis_gym.sim import FEED_INDEX, ActionArrays, ObsBatch
from oasis_gym.sim.content import template_text

from .base import BasePolicy, sim_of
from .behaviour import BehaviourParams, choose_actions
from .diffusion import independent_cascade, linear_threshold


@dataclass
class ABMConfig:
    """Parameters of the ABM users (defaults: HiSim's bounded-confidence calibration range)."""

    opinion_model: str | None = "deffuant_weisbuch"  # None: opinions stay fixed
    opinion_params: object | None = None  # the model's params dataclass; None: defaults
    behaviour: BehaviourParams = field(default_factory=BehaviourParams)
    post_rate: float = 0.05  # P(create_post) per active step, ordinary users
    core_post_rate: float = 0.2  # ... core users
    diffusion: str | None = None  # None (behaviour model), "independent_cascade" or "threshold"
    cascade_p: float = 0.05  # independent cascade: repost probability per exposure
    threshold_low: float = 0.0  # linear threshold: per-user thresholds ~ U(low, high)
    threshold_high: float = 0.5
    diffusion_action: int = int(A.REPOST)  # what a triggered user does (repost, or like_post)
    topic: str = "this"  # word the template texts use


class ABMPolicy(BasePolicy):
    """Rule-based users: opinion dynamics on the feed, then one action each (see module doc)."""

    name = "abm"

    def __init__(self, config: ABMConfig | None = None, **overrides):
        cfg = config or ABMConfig()
        for k, v in overrides.items():
            if not hasattr(cfg, k):
                raise TypeError(f"unknown ABM parameter {k!r}")
            setattr(cfg, k, v)
        self.config = cfg

    def reset(self, env, users: np.ndarray, seed: int | None) -> None:
        """Seed the generator; forget the linear-threshold thresholds."""
        super().reset(env, users, seed)
        self.thresholds: dict[int, float] = {}

    def act(self, env, obs: ObsBatch) -> ActionArrays:
        """One action per active user, vectorized: opinions move, then behaviour or diffusion."""
        sim = sim_of(env)
        pf, cfg, rng = sim.platform, self.config, self.rng
        users = obs.users
        n = len(users)
        if n == 0:
            return ActionArrays.empty()
        has = obs.mask_post.astype(bool)
        known = has & (obs.feed[..., FEED_INDEX["stance_known"]] > 0)
        stance = np.where(known, obs.feed[..., FEED_INDEX["stance"]], np.nan).astype(np.float32)
        opinion = pf.u_opinion.a[users].astype(np.float64)
        if cfg.opinion_model and known.any():
            new, _ = update_opinions(
                cfg.opinion_model, opinion, np.nan_to_num(stance), known, cfg.opinion_params, rng=rng
            )
            changed = np.flatnonzero(new != opinion)
            if len(changed):
                pf.set_opinions(users[changed], new[changed].astype(np.float32))
            opinion = new
        if cfg.diffusion:
            return self._diffuse(sim, obs, has, rng)
        post_rate = np.where(pf.u_is_core.a[users], cfg.core_post_rate, cfg.post_rate)
        action, slot, out_stance = choose_actions(
            rng,
            cfg.behaviour,
            opinion,
            stance,
            has,
            obs.feed[..., FEED_INDEX["likes"]],
            obs.feed[..., FEED_INDEX["author_followers"]],
            post_rate,
            obs.mask_type.astype(bool),
            obs.feed[..., FEED_INDEX["liked_by_me"]] > 0,
            obs.feed[..., FEED_INDEX["followed_author"]] > 0,
            already_disliked=obs.feed[..., FEED_INDEX["disliked_by_me"]] > 0,
            already_reposted=obs.feed[..., FEED_INDEX["reposted_by_me"]] > 0,
        )
        action = action.astype(np.int64)
        slot = np.maximum(slot, 0)
        text: list[str | None] = [None] * n
        writes = np.flatnonzero(np.isin(action, [A.CREATE_POST, A.QUOTE_POST, A.CREATE_COMMENT]))
        if len(writes):
            for i, t in zip(writes.tolist(), template_text(out_stance[writes], cfg.topic, rng)):
                text[i] = t
        # user slot i is the author of post slot i, so "follow the author of slot k" is user=k
        return ActionArrays(users, action, slot, np.zeros(n, np.int64), slot, text, out_stance)

    def _diffuse(self, sim, obs: ObsBatch, has: np.ndarray, rng) -> ActionArrays:
        """Calibration mode: reposts by independent cascade or linear threshold only."""
        cfg = self.config
        users = obs.users
        fresh = has & (obs.feed[..., FEED_INDEX["reposted_by_me"]] == 0)
        if cfg.diffusion == "independent_cascade":
            slot = independent_cascade(rng, fresh, cfg.cascade_p)
        elif cfg.diffusion == "threshold":
            for u in users[~np.isin(users, list(self.thresholds))].tolist():
                self.thresholds[u] = float(rng.uniform(cfg.threshold_low, cfg.threshold_high))
            thr = np.array([self.thresholds[u] for u in users.tolist()])
            frac = _followee_share(sim, users, obs.post_ids)
            slot = linear_threshold(np.where(fresh, frac, 0.0), thr)
        else:
            raise ValueError(f"unknown diffusion rule {cfg.diffusion!r}")
        action = np.where(slot >= 0, cfg.diffusion_action, A.DO_NOTHING).astype(np.int64)
        slot = np.maximum(slot, 0)
        return ActionArrays(users, action, slot)

    def state_dict(self) -> dict:
        """The generator state and the users' linear-threshold thresholds."""
        return {**super().state_dict(), "thresholds": {str(k): v for k, v in getattr(self, "thresholds", {}).items()}}

    def load_state_dict(self, state: dict) -> None:
        """Restore what `state_dict` saved."""
        super().load_state_dict(state)
        self.thresholds = {int(k): float(v) for k, v in state.get("thresholds", {}).items()}


def abm_users(env=None) -> ABMPolicy:
    """Picklable user-policy factory `f(env) -> ABMPolicy()` (default settings)."""
    return ABMPolicy()


def _followee_share(sim, users: np.ndarray, post_ids: np.ndarray) -> np.ndarray:
    """(n, K): share of each user's followees who already shared (reposted) each feed post's root."""
    pf = sim.platform
    owner, followee = pf.followees(users)
    n, K = post_ids.shape
    out = np.zeros((n, K), dtype=np.float64)
    deg = np.bincount(owner, minlength=n).astype(np.float64)
    has = post_ids >= 0
    if not len(owner) or not has.any():
        return out
    p = np.where(has, post_ids, 0)
    root = np.where(pf.p_kind.a[p] == REPOST, pf.p_root.a[p], p)
    for k in range(K):  # K is the feed size (~10): a loop over slots, never over users
        shared = pf.rel["repost"].contains(followee, root[owner, k]) | (pf.p_author.a[root[owner, k]] == followee)
        out[:, k] = np.bincount(owner, weights=shared, minlength=n)
    return np.where(has, out / np.maximum(deg, 1)[:, None], 0.0)
