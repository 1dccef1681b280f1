"""The trainable recommender (`recommender_0`): acts once per step with numeric arrays
(the envs wrap them in Gymnasium spaces: `envs/agent_spaces.py`).

Recommender
    observation  Box(10 + 16): engagement rate, impressions per active user, misinformation
                 share of impressions, cross-cutting share, opinion mean / std / mean |x|,
                 Esteban-Ray polarization, active-user fraction, opinion-std increase since
                 reset, then the candidate pool's feature means and stds
                 (model.ranking.V0_FEATURES).
    action       per user (default): Box(-1, 1, (3 * 8,)), the matrix W of a shared scoring
                 function; user u's weights are (1, opinion, |opinion|) @ W. Global:
                 Box(-1, 1, (8,)), one weight vector for every feed of the next step.
    reward       engagement_weight * engagement_rate - misinfo_penalty * misinfo_share
                 - polarization_penalty * (opinion-std increase of the step)
                 + diversity_bonus * cross_cutting_share  (defaults 10, 1, 50, 0.2);
                 the components of the last step in `last_components`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..actions import IS_ENGAGEMENT
from ..checks import action_array
from ..metrics.opinions import opinion_std
from ..model.ranking import V0_FEATURES, V0_USER_FEATURES
from ..model.rewards import V0RecommenderReward, linear_reward
from ..sim.agent_protocol import AgentView
from .exposure import esteban_ray, exposure_stats

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


@dataclass
class RecommenderAgent:
    """The trainable recommender. `ranking="per_user"`: the action is a shared scoring
    function, a (len(V0_USER_FEATURES), N_FEATURES) weight matrix applied to every active
    user's candidates (user u ranks by z(u) @ W, see recsys.agent_controlled);
    `ranking="global"`: one weight vector for everyone (the simple baseline variant)."""

    # the reward's weights (`model.rewards.V0RecommenderReward`: its defaults, and why)
    engagement_weight: float = V0RecommenderReward.engagement_weight
    misinfo_penalty: float = V0RecommenderReward.misinfo_penalty
    polarization_penalty: float = V0RecommenderReward.polarization_penalty
    diversity_bonus: float = V0RecommenderReward.diversity_bonus
    ranking: str = "per_user"
    # the platform-agent protocol (oasis_gym.sim.agent_protocol): ranks the next feeds after
    # the users acted; keeps no state in the journal beyond the ranking weights the recsys saves
    acts_first: ClassVar[bool] = False
    state_key: ClassVar[str | None] = None

    def __post_init__(self):

        if self.ranking not in ("per_user", "global"):
            raise ValueError(f"ranking must be 'per_user' or 'global', got {self.ranking!r}")
        self.weight_shape = (
            (len(V0_USER_FEATURES), len(V0_FEATURES.names)) if self.ranking == "per_user" else (len(V0_FEATURES.names),)
        )
        # observation: a vector of observation_size floats; action: action_shape floats in
        # [-1, 1] (the envs make the Gymnasium spaces of these, envs/agent_spaces.py)
        self.observation_size = len(RECOMMENDER_FEATURES) + 2 * len(V0_FEATURES.names)
        self.action_shape = (int(np.prod(self.weight_shape)),)
        self.action_bounds = (-1.0, 1.0)
        self._platform = None
        self._served = (0.0, 0.0, 0)
        self.last_components: dict[str, float] = {}

    def check(self, recsys) -> None:
        """Raise ValueError unless the simulation's recsys takes ranking weights."""
        if not hasattr(recsys, "set_weights"):
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
        """The action as ranking weights, or ValueError (`oasis_gym.checks.action_array`: wrong
        shape, NaN, inf, not numbers). Finite values outside [-1, 1] are clipped to the box, as
        RL libraries do."""
        return action_array(action, "recommender_0 action", self.action_shape, *self.action_bounds, codes=False)

    def begin_step(self, view: AgentView) -> None:
        """Remember the exposure of the feeds just served: the reward's engagement and harm
        are of the feeds the users act on this step."""
        self._served = exposure_stats(view)

    def apply(self, view: AgentView, action) -> None:
        """Set the next feeds' ranking weights from the (validated) action."""
        view.recsys.set_weights(self.validate(action).reshape(self.weight_shape))

    def state_dict(self, view: AgentView) -> dict:
        """No state of its own in the journal (the recsys saves the ranking weights)."""
        return {}

    def _sync(self, view: AgentView) -> None:
        """Remember the polarization at reset (every reset builds a new Platform)."""
        if view.platform is not self._platform:
            self._platform = view.platform
            self.polarization0 = self.polarization_prev = opinion_std(view.platform.u_opinion.a)

    def observe(self, view: AgentView) -> np.ndarray:
        """The observation of the step just played (see the module docstring)."""
        self._sync(view)
        pf = view.platform
        out = view.last_outcome
        misinfo, cross, impressions = exposure_stats(view)
        op = pf.u_opinion.a
        active = max(len(view.feeds.users), 1)
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
            len(view.feeds.users) / max(pf.n_users, 1),
            opinion_std(op) - self.polarization0,
        ]
        pool = view.recsys.candidate_pool_stats(pf)
        return np.concatenate([np.asarray(feats, np.float32), pool]).astype(np.float32)

    @staticmethod
    def _engagement(out, impressions: int) -> float:

        if out is None or impressions == 0:
            return 0.0
        ok = out.results == 0
        engaged = IS_ENGAGEMENT(out.actions[ok])
        return float(engaged.sum()) / impressions

    def reward(self, view: AgentView) -> float:
        """Engagement with the feeds users acted on (ranked by the previous action, measured
        at `begin_step`) against what the ranking changed: misinformation exposure, the
        polarization increase of this step (opinion std; the episode return holds the
        increase since reset, not the level), and feed diversity (cross-cutting share).
        Components: `last_components`."""
        return self.score(view, self._served)

    def score(self, view: AgentView, served: tuple[float, float, int]) -> float:
        """The reward of the step just played, whose feeds had the exposure `served`
        (`exposure_stats` before the step): what `reward` gives, and what the env gives a
        fixed recommender's feeds (baselines)."""
        self._sync(view)
        misinfo, cross, impressions = served
        engagement = self._engagement(view.last_outcome, impressions)
        pol = opinion_std(view.platform.u_opinion.a)
        increase, self.polarization_prev = pol - self.polarization_prev, pol
        self.last_components = {
            "engagement": engagement,
            "misinfo_exposure": misinfo,
            "polarization_increase": increase,
            "diversity": cross,
        }
        weights = V0RecommenderReward(
            self.engagement_weight, self.misinfo_penalty, self.polarization_penalty, self.diversity_bonus
        ).weights()
        return linear_reward(self.last_components, weights)
