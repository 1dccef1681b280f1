"""Recommender-v2: Recommender-v1 with users who want different feeds, so one ranking for everyone is not enough.

Make it with ``gymnasium.make("oasis_gym/Recommender-v2", difficulty="medium")`` (after
`import oasis_gym`), K of them stepped together with
``gymnasium.make_vec("oasis_gym/Recommender-v2", num_envs=K)`` (a native vector env: one
batched numpy step for all K), or import `RecommenderEnv` / `RecommenderVectorEnv`.

| Action space       | `Box(-1.0, 1.0, (72,), float32)` (`ranking="global"`: `(9,)`)  |
|--------------------|-----------------------------------------------------------------|
| Observation space  | `Box(-inf, inf, (19,), float32)`                                |
| Import             | `gymnasium.make("oasis_gym/Recommender-v2")`                    |

## Description
Everything of Recommender-v1 (`envs/recommender_v1.py`: satisfaction, churn and return,
opinion change, outrage that draws engagement and carries misinformation, hidden
campaigns), with three changes (`oasis_gym.model.tiers.TIERS_V2`) that v1's measurements
asked for (README, Benchmarks: in v1 even a ranking that knows each user's hidden kind beat
the best global ranking by at most 1.5 %):
- the kinds want different feeds: casual users engage more with their friends' posts
  (in-network, logit +1.5), news-seekers with fresh posts (logit +2.0 x recency) and less
  with in-network ones (-0.8); outrage-prone users as in v1;
- the ranking service keeps two more history summaries per user, the engagement contrasts
  that reveal those tastes (`AFFINITY_FEATURES`): engagement rate on in-network minus
  out-of-network posts, on fresh minus old posts (recency-weighted), moving averages
  updated when both were served;
- campaign bots: while a campaign runs, the misinformation accounts visit, and so post,
  every step.
These constants were chosen from the mechanisms before any policy was tuned or trained on
v2 and were not changed after (a first look at the headroom used seeds 6000-7015, disjoint
from the tuning and evaluation seeds). Measured (README, Benchmarks): a ranking that knows
each user's kind beats the best global ranking by 3-7 % of the return, the tuned per-user
constant and PPO beat it in most tiers and sets; PPO does not beat the tuned per-user
constant (no state-dependent gain shown).

## Action space
`Box(-1, 1, (8 * 9,))`: W row-major, rows the user features (v1's six, then
`in_network_affinity`, `recency_affinity`), columns the 9 candidate features (as v1).
`ranking="global"`: `Box(-1, 1, (9,))`. Accepted as in Recommender-v1: finite numbers of
exactly this shape (the vector env: one row per env), values outside [-1, 1] clipped; NaN,
infinities, another shape, bools or texts raise a ValueError before any episode steps.

## Observation space, rewards, starting state, episode end, arguments
As Recommender-v1 (same 19 observations, same reward, 100 steps, same arguments;
`difficulty` "easy" has casual users and news-seekers only, no retention dynamics).

Nothing is journaled: the task runs on the batched engine (rule-based users, not LLMs).

## Version history
- v2 (issue 57): `info` as Recommender-v1's (its Info): the hidden truth's values only with
  `privileged_info=True`; observations and rewards unchanged.
- v2 (issue 53): bad actions are refused (NaN, inf, a code out of range or not whole, another
  shape); valid actions give the same results as before (no version bump).
- v2 (issue 30): kinds with different tastes, the affinity history summaries, campaign
  bots. Bump the version whenever a change could change any result of a seed.
- v1: `envs/recommender_v1.py`; v3: `envs/recommender_v3.py` (campaigns that fake
  popularity; v2 is unchanged).
"""

from __future__ import annotations

from . import recommender_v1
from .recommender_v1 import RecommenderReward

__all__ = ["RecommenderEnv", "RecommenderVectorEnv", "RecommenderReward"]


class RecommenderEnv(recommender_v1.RecommenderEnv):
    """One Recommender-v2 episode at a time (module docstring)."""

    version = 2


class RecommenderVectorEnv(recommender_v1.RecommenderVectorEnv):
    """`num_envs` Recommender-v2 episodes stepped together (module docstring)."""

    version = 2
