"""Policy wrappers the paper scenarios use: cascades that decay with age, herding comment votes.

Both are built from a scenario's [policy] table (oasis_gym.scenarios.policies).
"""

from __future__ import annotations

import numpy as np

from oasis_gym.actions import ActionType as A
from oasis_gym.sim import FEED_INDEX, ActionArrays

from .abm import ABMPolicy
from .base import PolicyWrapper, filled, sim_of
from .diffusion import independent_cascade


class DecayingCascadeABM(ABMPolicy):
    """ABMPolicy whose independent-cascade repost probability decays with the post's age:
    p = cascade_p * 0.5 ** (age_minutes / half_life) (attention decay; Wu & Huberman 2007).
    Without `half_life` (or in other modes) it is exactly ABMPolicy."""

    name = "abm"

    def __init__(self, config=None, half_life: float | None = None, **overrides):
        super().__init__(config, **overrides)
        if half_life is not None and half_life <= 0:
            raise ValueError("cascade_half_life must be positive")
        self.half_life = half_life

    def _diffuse(self, sim, obs, has, rng):
        if self.config.diffusion != "independent_cascade" or not self.half_life:
            return super()._diffuse(sim, obs, has, rng)
        fresh = has & (obs.feed[..., FEED_INDEX["reposted_by_me"]] == 0)
        age = np.maximum(obs.feed[..., FEED_INDEX["age_minutes"]].astype(np.float64), 0.0)
        p = np.clip(self.config.cascade_p * np.exp2(-age / self.half_life), 0.0, 1.0)
        slot = independent_cascade(rng, fresh, p)
        action = np.where(slot >= 0, self.config.diffusion_action, A.DO_NOTHING).astype(np.int64)
        return ActionArrays(obs.users, action, np.maximum(slot, 0))


class CommentVoter(PolicyWrapper):
    """Adds comment votes with a herding rule to another policy (the ABM never votes on
    comments). An active user votes on one comment in view, not yet voted by them and not
    their own, with probability 1 - (1 - vote_rate)^(such comments); the comment is drawn
    uniformly among them; the vote is up with probability
    sigmoid(up_bias + herd_weight * clip(shown score, -herd_cap, herd_cap)), shown score =
    likes - dislikes, else down (the cap keeps one early lead from deciding every later vote).
    Otherwise the inner policy's action stands (the inner policy is always asked, so its
    random stream does not depend on the votes)."""

    name = "comment_voter"

    def __init__(
        self, inner, vote_rate: float = 0.1, up_bias: float = 0.0, herd_weight: float = 0.5, herd_cap: float = 3.0
    ):
        if not 0 <= vote_rate <= 1:
            raise ValueError("vote_rate must be in [0, 1]")
        if herd_cap < 0:
            raise ValueError("herd_cap must be >= 0")
        super().__init__(inner)
        self.vote_rate, self.up_bias = vote_rate, up_bias
        self.herd_weight, self.herd_cap = herd_weight, herd_cap

    def act(self, env, obs):
        """The wrapped policy's actions; some users vote on a comment of their view instead."""
        acts = self.inner.act(env, obs)
        n = len(obs)
        if n == 0:
            return acts
        pf = sim_of(env).platform
        cids = obs.comment_ids
        c = np.maximum(cids, 0)
        feats = obs.comments
        ok = obs.mask_comment.astype(bool) & (feats[..., 2] == 0) & (feats[..., 3] == 0)
        if pf.n_comments:
            ok &= pf.c_author.a[c] != obs.users[:, None]
        noise = self.rng.random(ok.shape)
        u_vote, u_dir = self.rng.random(n), self.rng.random(n)
        vote = ok.any(1) & (u_vote < 1.0 - (1.0 - self.vote_rate) ** ok.sum(1))
        noise[~ok] = -1.0
        slot = noise.argmax(1)
        rows = np.arange(n)
        score = np.clip(feats[rows, slot, 0] - feats[rows, slot, 1], -self.herd_cap, self.herd_cap).astype(np.float64)
        p_up = 1.0 / (1.0 + np.exp(-(self.up_bias + self.herd_weight * score)))
        kind = np.where(u_dir < p_up, A.LIKE_COMMENT, A.DISLIKE_COMMENT)
        out = filled(acts)
        out.type[vote], out.comment[vote] = kind[vote], slot[vote]
        for i in np.flatnonzero(vote).tolist():
            out.text[i] = None
        out.stance[vote] = np.nan
        return out
