"""Recommender-v3: Recommender-v2 with campaigns that fake popularity, so the best ranking depends on the state.

Make it with ``gymnasium.make("oasis_gym/Recommender-v3", difficulty="medium")`` (after
`import oasis_gym`), K of them stepped together with
``gymnasium.make_vec("oasis_gym/Recommender-v3", num_envs=K)`` (a native vector env: one
batched numpy step for all K), or import `RecommenderEnv` / `RecommenderVectorEnv`.

| Action space       | `Box(-1.0, 1.0, (72,), float32)` (`ranking="global"`: `(9,)`)  |
|--------------------|-----------------------------------------------------------------|
| Observation space  | `Box(-inf, inf, (19,), float32)`                                |
| Import             | `gymnasium.make("oasis_gym/Recommender-v3")`                    |

## Description
Everything of Recommender-v2 (`envs/recommender_v2.py`: kinds of users that want
different feeds, their history summaries, satisfaction, churn and return, opinion change,
outrage that carries misinformation), with misinformation campaigns that change what a
good ranking is (`oasis_gym.model.tiers.TIERS_V3`). v2's measurements asked for this
(README, Benchmarks): there, a ranking that knows when a campaign is on gains nothing, so
the best policy is a constant and PPO ties the tuned constant.
- Campaigns are longer and more frequent: they start with probability 0.03 and stop with
  0.05 a step (on about 40 % of the time, about 20 steps each).
- The campaign accounts' bots post twelve times as often as between campaigns.
- **Coordinated inauthentic amplification**: while a campaign runs, the bots like every
  live post of the campaign accounts (one like per unsuspended bot a step) and view it
  twice as often, so those posts look popular, with a plausible like rate.
Between campaigns, popularity and freshness are signals of posts users value; during a
campaign they point at misinformation. A constant ranking must compromise; a ranking that
knows the campaign is on should change. The campaign is hidden; what the observation shows
of it is what a ranking service sees (the candidate pools' popularity, like rate, recency,
reports and arousal; reports per impression). Measured (README, Benchmarks;
`bench/research/recommender_state_headroom.py`): changing the ranking while a campaign runs beats the
tuned per-user constant in medium and hard, by 8.6-15.7 when told the campaign
(privileged) and by 3.9-17.2 when a logistic-regression detector reads it from the
observation; PPO at the documented budget does not (it ties or trails the constant): the
tier where learning has something to find.
These constants were chosen from a first look (4 settings, each compared by a privileged
campaign-aware ranking against the tuned global ranking) on the tuning seeds 5000-5007 and
seeds 6000-6019, disjoint from the evaluation seeds (9000-9019), and not changed after.

## Action space, observation space, rewards, starting state, episode end, arguments
As Recommender-v2 (W of 8 x 9, the same accepted actions, the same 19 observations, the same
reward, 100 steps, the same arguments). `difficulty` "easy" has no campaigns: it is v2's easy tier.

Nothing is journaled: the task runs on the batched engine (rule-based users, not LLMs).

## Version history
- v3 (issue 57): `info` as Recommender-v1's (its Info): the hidden truth's values only with
  `privileged_info=True`; observations and rewards unchanged.
- v3 (issue 53): bad actions are refused (NaN, inf, a code out of range or not whole, another
  shape); valid actions give the same results as before (no version bump).
- v3 (issue 30): campaigns that fake popularity (`campaign_amplify`), twelve times the
  posting, longer campaigns. Bump the version whenever a change could change any result
  of a seed.
- v2: `envs/recommender_v2.py`; v1: `envs/recommender_v1.py` (both unchanged); v4:
  `envs/recommender_v4.py` (v3 under OASIS's rules; v3 is unchanged).
"""

from __future__ import annotations

from . import recommender_v1
from .recommender_v1 import RecommenderReward

__all__ = ["RecommenderEnv", "RecommenderVectorEnv", "RecommenderReward"]


class RecommenderEnv(recommender_v1.RecommenderEnv):
    """One Recommender-v3 episode at a time (module docstring)."""

    version = 3


class RecommenderVectorEnv(recommender_v1.RecommenderVectorEnv):
    """`num_envs` Recommender-v3 episodes stepped together (module docstring)."""

    version = 3
