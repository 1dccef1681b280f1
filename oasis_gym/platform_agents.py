"""Trainable platform agents: the recommender (`recommender_0`) and what both agents share.

Both act once per step with numeric spaces stable-baselines3 can use.

Recommender
    observation  Box(10 + 16): engagement rate, impressions per active user, misinformation
                 share of impressions, cross-cutting share, opinion mean / std / mean |x|,
                 Esteban-Ray polarization, active-user fraction, opinion-std increase since
                 reset, then the candidate pool's feature means and stds
                 (recsys.CANDIDATE_FEATURES).
    action       per user (default): Box(-1, 1, (3 * 8,)), the matrix W of a shared scoring
                 function; user u's weights are (1, opinion, |opinion|) @ W. Global:
                 Box(-1, 1, (8,)), one weight vector for every feed of the next step.
    reward       engagement_weight * engagement_rate - misinfo_penalty * misinfo_share
                 - polarization_penalty * (opinion-std increase of the step)
                 + diversity_bonus * cross_cutting_share  (defaults 10, 1, 50, 0.2);
                 the components of the last step in `last_components`.

The moderator (`moderator_0`) lives in `moderator_agent.py` (re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from .actions import ActionType as A
from .metrics.exposure import served_exposure
from .metrics.formulas import esteban_ray_polarization
from .metrics.opinions import opinion_std
from .moderator_agent import MODERATION_ACTIONS, MODERATOR_POST_FEATURES, ModeratorAgent, PostActions
from .recsys import CANDIDATE_FEATURES, USER_FEATURES

__all__ = [
    "MODERATION_ACTIONS",
    "MODERATOR_POST_FEATURES",
    "RECOMMENDER_FEATURES",
    "ModeratorAgent",
    "PostActions",
    "RecommenderAgent",
    "esteban_ray",
    "exposure_stats",
]

RECOMMENDER_FEATURES = (
    "engagement_rate",
    "impressions_per_active",
    "misinfo_share",
    "cross_cutting_share",
    "opinion_mean",
    "opinion_std",
    "opinion_abs_mean",
    "esteban_ray",
    "active_fraction",
    "polarization_increase",
)


def exposure_stats(sim) -> tuple[float, float, int]:
    """(misinformation share, cross-cutting share, impressions) of the feeds just served
    (`metrics.exposure.served_exposure`); a share with nothing to count is 0.0 here, not NaN,
    because it enters the reward."""
    e = served_exposure(sim.platform, sim.obs)
    return float(np.nan_to_num(e.misinfo_share)), float(np.nan_to_num(e.cross_cutting_share)), e.impressions


def esteban_ray(x: np.ndarray, bins: int = 10, alpha: float = 1.6) -> float:
    """Esteban-Ray polarization of opinions `x` (0 when undefined, e.g. one bin)."""

    v = esteban_ray_polarization(x, bins=bins, alpha=alpha)
    return float(v) if np.isfinite(v) else 0.0


@dataclass
class RecommenderAgent:
    """The trainable recommender. `ranking="per_user"`: the action is a shared scoring
    function, a (len(USER_FEATURES), N_FEATURES) weight matrix applied to every active
    user's candidates (user u ranks by z(u) @ W, see recsys.agent_controlled);
    `ranking="global"`: one weight vector for everyone (the simple baseline variant)."""

    # per step, engagement rate is ~0.02-0.04, misinformation share 0-0.3, the opinion-std
    # increase ~+-0.002 and the cross-cutting share 0.05-0.9 (misinfo_stream, fixed rankings):
    # the defaults give each term a few units of return between engagement-greedy and
    # harm-averse rankings (bench/recommender_pareto.py)
    engagement_weight: float = 10.0
    misinfo_penalty: float = 1.0
    polarization_penalty: float = 50.0
    diversity_bonus: float = 0.2
    ranking: str = "per_user"

    def __post_init__(self):

        if self.ranking not in ("per_user", "global"):
            raise ValueError(f"ranking must be 'per_user' or 'global', got {self.ranking!r}")
        self.weight_shape = (
            (len(USER_FEATURES), len(CANDIDATE_FEATURES)) if self.ranking == "per_user" else (len(CANDIDATE_FEATURES),)
        )
        n = len(RECOMMENDER_FEATURES) + 2 * len(CANDIDATE_FEATURES)
        self.observation_space = spaces.Box(-np.inf, np.inf, (n,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (int(np.prod(self.weight_shape)),), np.float32)
        self._platform = None
        self.last_components: dict[str, float] = {}

    def check(self, sim) -> None:
        """Raise ValueError unless the simulation's recsys takes ranking weights."""
        if not hasattr(sim.recsys, "set_weights"):
            raise ValueError("recommender_0 needs the agent-controlled recsys: pass recsys='agent'")

    def weights_action(self, weights) -> np.ndarray:
        """The action for global weights (N_FEATURES,): as is, or as the bias row of W."""
        w = np.asarray(weights, dtype=np.float32).reshape(-1)
        if self.ranking == "global":
            return w.copy()
        a = np.zeros(self.weight_shape, np.float32)
        a[0] = w
        return a.reshape(-1)

    def validate(self, action) -> np.ndarray:
        """The action as ranking weights, or ValueError (wrong shape, NaN, inf, not numbers).
        Finite values outside [-1, 1] are clipped to the box, as RL libraries do."""
        try:
            w = np.asarray(action, dtype=np.float32).reshape(-1)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(
                f"recommender_0 action must be {self.action_space.shape} finite floats, got {action!r}"
            ) from None
        if w.shape != self.action_space.shape or not np.all(np.isfinite(w)):
            raise ValueError(f"recommender_0 action must be {self.action_space.shape} finite floats, got {action!r}")
        return np.clip(w, -1.0, 1.0)

    def apply(self, sim, action) -> None:
        """Set the next feeds' ranking weights from the (validated) action."""
        sim.recsys.set_weights(self.validate(action).reshape(self.weight_shape))

    def _sync(self, sim) -> None:
        """Remember the polarization at reset (every reset builds a new Platform)."""
        if sim.platform is not self._platform:
            self._platform = sim.platform
            self.polarization0 = self.polarization_prev = opinion_std(sim.platform.u_opinion.a)

    def observe(self, sim) -> np.ndarray:
        """The observation of the step just played (see the module docstring)."""
        self._sync(sim)
        pf = sim.platform
        out = sim.last_outcome
        misinfo, cross, impressions = exposure_stats(sim)
        op = pf.u_opinion.a
        active = max(len(sim.obs.users), 1)
        engagement = self._engagement(out, impressions)
        feats = [
            engagement,
            impressions / active,
            misinfo,
            cross,
            float(op.mean()),
            opinion_std(op),
            float(np.abs(op).mean()),
            esteban_ray(op),
            len(sim.obs.users) / max(pf.n_users, 1),
            opinion_std(op) - self.polarization0,
        ]
        return np.concatenate([np.asarray(feats, np.float32), sim.recsys.candidate_pool_stats(pf)]).astype(np.float32)

    @staticmethod
    def _engagement(out, impressions: int) -> float:

        if out is None or impressions == 0:
            return 0.0
        ok = out.results == 0
        engaged = np.isin(out.actions[ok], [A.LIKE_POST, A.REPOST, A.QUOTE_POST, A.CREATE_COMMENT, A.LIKE_COMMENT])
        return float(engaged.sum()) / impressions

    def reward(self, sim, served_before: tuple[float, float, int]) -> float:
        """Engagement with the feeds users acted on (ranked by the previous action) against
        what the ranking changed: misinformation exposure, the polarization increase of this
        step (opinion std; the episode return holds the increase since reset, not the
        level), and feed diversity (cross-cutting share). Components: `last_components`."""
        self._sync(sim)
        misinfo, cross, impressions = served_before
        engagement = self._engagement(sim.last_outcome, impressions)
        pol = opinion_std(sim.platform.u_opinion.a)
        increase, self.polarization_prev = pol - self.polarization_prev, pol
        self.last_components = {
            "engagement": engagement,
            "misinfo_exposure": misinfo,
            "polarization_increase": increase,
            "diversity": cross,
        }
        return (
            self.engagement_weight * engagement
            - self.misinfo_penalty * misinfo
            - self.polarization_penalty * increase
            + self.diversity_bonus * cross
        )
