"""The platform agents' rewards: one linear form over named terms, and the named weight sets of
both paths (issue 51).

A reward is ``sum_i w_i * term_i`` over the terms its weight set names (`linear_reward`),
summed in the weight set's order (the order fixes the floating-point bits). A penalty is a
negative weight: ``a - p * b`` and ``a + (-p) * b`` are the same number in IEEE arithmetic, so
every path gives the bits it gave before this module.

A term's name has one meaning on every path; the two paths measure different terms:

- the fast path's tasks (`batched/tasks.py`: Recommender-v1..v3, Moderator-v1) count per
  user of the simulation (a user who left contributes nothing, so retention is worth
  reward): ``engagements`` and ``misinfo_impressions`` (each / N), ``polarization_increase``
  (opinion std now - a step ago), ``false_positives`` (true posts removed + 10 x true users
  suspended); weight sets `RecommenderReward`, `ModeratorReward`;
- the platform path (v0: `agents/recommender.py`, `agents/moderator.py`) measures shares of
  the served feeds: ``engagement`` (engagements per impression), ``misinfo_exposure`` (share of
  impressions), ``polarization_increase``, ``diversity`` (cross-cutting share),
  ``true_actions`` (this step's moderator actions on posts that are not misinformation);
  weight sets `V0RecommenderReward`, `V0ModeratorReward`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


def linear_reward(terms: Mapping, weights: Mapping[str, float]):
    """``sum_i weights[i] * terms[i]`` over the names of `weights`, in their order (left to
    right); each term a number or a (K,) array (the result has the terms' type)."""
    names = iter(weights)
    first = next(names)
    reward = weights[first] * terms[first]
    for name in names:
        reward = reward + weights[name] * terms[name]
    return reward


@dataclass(frozen=True)
class RecommenderReward:
    """The tasks' recommender reward (Recommender-v1..v3): r = engagement_weight * engagements
    / N - misinfo_penalty * misinformation impressions / N - polarization_penalty * (opinion
    std now - a step ago). Divided by all N users, not the visitors: a user who leaves
    contributes nothing, so retention is worth reward."""

    engagement_weight: float = 10.0
    misinfo_penalty: float = 20.0
    polarization_penalty: float = 50.0

    def weights(self) -> dict[str, float]:
        """The signed weights of the terms, in the reward's order."""
        return {
            "engagements": self.engagement_weight,
            "misinfo_impressions": -self.misinfo_penalty,
            "polarization_increase": -self.polarization_penalty,
        }


@dataclass(frozen=True)
class ModeratorReward:
    """The tasks' moderator reward (Moderator-v1): r = -misinfo_penalty * misinformation
    impressions / N + engagement_weight * engagements / N - action_cost * (true posts removed +
    10 x true users suspended): the cost of a false positive is immediate (action_cost) and
    lasting (the chilled or lost user's engagement)."""

    misinfo_penalty: float = 20.0
    engagement_weight: float = 1.0
    action_cost: float = 0.05

    def weights(self) -> dict[str, float]:
        """The signed weights of the terms, in the reward's order."""
        return {
            "misinfo_impressions": -self.misinfo_penalty,
            "engagements": self.engagement_weight,
            "false_positives": -self.action_cost,
        }


@dataclass(frozen=True)
class V0RecommenderReward:
    """Recommender-v0's reward (`recommender_0` on the platform): r = engagement_weight *
    engagement rate - misinfo_penalty * misinformation share - polarization_penalty *
    (opinion std now - a step ago) + diversity_bonus * cross-cutting share.

    Per step, the engagement rate is ~0.02-0.04, the misinformation share 0-0.3, the
    opinion-std increase ~+-0.002 and the cross-cutting share 0.05-0.9 (misinfo_stream, fixed
    rankings): the defaults give each term a few units of return between engagement-greedy
    and harm-averse rankings (bench/research/recommender_pareto.py)."""

    engagement_weight: float = 10.0
    misinfo_penalty: float = 1.0
    polarization_penalty: float = 50.0
    diversity_bonus: float = 0.2

    def weights(self) -> dict[str, float]:
        """The signed weights of the terms, in the reward's order."""
        return {
            "engagement": self.engagement_weight,
            "misinfo_exposure": -self.misinfo_penalty,
            "polarization_increase": -self.polarization_penalty,
            "diversity": self.diversity_bonus,
        }


@dataclass(frozen=True)
class V0ModeratorReward:
    """Moderator-v0's reward (`moderator_0` on the platform): r = -misinformation share of the
    feeds served - action_cost * this step's actions on posts that are not misinformation."""

    action_cost: float = 0.02

    def weights(self) -> dict[str, float]:
        """The signed weights of the terms, in the reward's order."""
        return {"misinfo_exposure": -1.0, "true_actions": -self.action_cost}
