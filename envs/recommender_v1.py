"""Recommender-v1: rank the feeds of users whose satisfaction, return and opinions follow what they are shown.

Make it with ``gymnasium.make("oasis_gym/Recommender-v1", difficulty="medium")`` (after
`import oasis_gym`), K of them stepped together with
``gymnasium.make_vec("oasis_gym/Recommender-v1", num_envs=K)`` (a native vector env: one
batched numpy step for all K), or import `RecommenderEnv` / `RecommenderVectorEnv`.

| Action space       | `Box(-1.0, 1.0, (54,), float32)` (`ranking="global"`: `(9,)`)  |
|--------------------|-----------------------------------------------------------------|
| Observation space  | `Box(-inf, inf, (19,), float32)`                                |
| Import             | `gymnasium.make("oasis_gym/Recommender-v1")`                    |

## Description
The agent is a social platform's recommender. Each step it chooses a *scoring function*
for every visitor's feed: score(u, p) = x(p, u) . w(u), w(u) = z(u) @ W. The 1 000
simulated users (`oasis_gym.batched`; rule-based, not LLMs) follow 16 accounts each, post,
like, repost and report, and unlike Recommender-v0 they carry state that the ranking
changes: a satisfaction that follows the value of their sessions, so that users who are
served outrage engage more now and come back less later (some leave and return much
later: churn), opinions that move with what they engage with and stay moved (hard tier),
and three kinds of user for whom the same post has different value (casual,
outrage-prone, news-seeking). Outrage (arousal) draws engagement and carries
misinformation (medium and hard), and misinformation campaigns come and go unseen. The
dynamics are built so that a policy *could* gain by depending on the user (per-user
weights) and on the state (the campaign, the satisfaction the history summaries reveal, the
time left); measured (README, Benchmarks), no tier shows such a gain: neither PPO nor the
tuned per-user constant beats the tuned *global* constant on held-out seeds, and even a
ranking that knows each user's hidden kind gains at most 1.5 %. Recommender-v2
(`envs/recommender_v2.py`) gives the kinds different tastes.

## Action space
`Box(-1, 1, (6 * 9,))`: W row-major, rows the user features (`model.ranking.USER_FEATURES`: bias,
opinion, |opinion|, engagement_rate, visit_rate, arousal_affinity: history summaries a
ranking service keeps), columns the candidate features (`model.ranking.CANDIDATE_FEATURES`: recency,
popularity, author_fans, similarity, in_network, arousal (a classifier's noisy score),
reports, alignment, like_rate). `ranking="global"`: `Box(-1, 1, (9,))`, one weight vector
for everyone.
Accepted: an array of exactly this shape (the vector env: `(num_envs, 54)`, one row per env)
of finite numbers (ints or floats within float32's range); finite values outside [-1, 1] are
clipped to it, as RL libraries do. NaN, infinities, another shape, bools or texts raise a
ValueError naming the env, the value (and its env) and what is allowed, before any episode
steps (`envs/agent_spaces.check_action`, one check of the whole batch).

## Observation space
`Box(-inf, inf, (19,))` float32 (`RECOMMENDER_OBS`): engagements per visitor, visitor
share, dormant share (not seen for 10 steps), reports per impression, mean arousal score
served, opinion mean / std / std change since reset / mean |opinion|, time (step /
max_steps), then the means of the 9 candidate features over this step's candidate pools.
No labels: misinformation and the users' satisfaction are hidden.

## Rewards
`RecommenderReward`: 10 x engagements / N - 20 x misinformation impressions / N - 50 x
(opinion std now - one step ago), with N all users (a churned user engages nothing), so
retention is part of the return. The observable components are in `info` (Info).

## Info
`info` of a step: `engagements` and `visitors` (per user), `opinion_std`, `polarization_increase`,
`episode_seed`. Privileged, for evaluation only: `RecommenderEnv(..., privileged_info=True)` (the
vector env too) adds what is computed from the hidden truth (`oasis_gym.batched.tasks.PRIVILEGED_INFO`):
`misinfo_impressions` (a reward term), `misinfo_share`, `campaign`, `satisfaction`, `churned`. No
training path turns them on (`tests/test_privileged_info.py`); observations and rewards are the same.

## Starting state
`reset(seed)` draws the episode (misinformation accounts, brigaders, all randomness) from
the seed on a population fixed by `population_seed`. Every user starts at satisfaction 0.6.

## Episode end
No termination; truncation after `max_steps` (100) steps.

## Arguments
`RecommenderEnv(difficulty="medium", users=1000, population_seed=0, max_steps=100,
ranking="per_user", reward=None, *, privileged_info=False)`; `RecommenderVectorEnv(num_envs, ..., autoreset_mode=
AutoresetMode.NEXT_STEP)` takes the same and steps `num_envs` episodes at once.
- `difficulty`: "easy" (one kind of user, no retention dynamics, harm independent of
  arousal: a constant ranking is near-optimal), "medium", "hard" (`oasis_gym/model/tiers.py`).
- `population_seed`: the population (evaluate on one never trained on).
- `reward`: a `RecommenderReward` (weights of the reward's terms).

Nothing is journaled: the v1 tasks run on the batched engine, not on the SQLite platform
(use Recommender-v0 or the PettingZoo envs to record a run in OASIS tables).

## Version history
- v1 (issue 57): the values computed from the hidden truth leave `info` unless
  `privileged_info=True` (Info); observations and rewards unchanged (no version bump).
- v1 (issue 53): bad actions are refused (NaN, inf, a code out of range or not whole, another
  shape); valid actions give the same results as before (no version bump).
- v1 (issues 26, 30): the batched engine, stateful users, tiers, a native vector env.
  Bump the version whenever a change could change any result of a seed.
- v2 is `envs/recommender_v2.py` (kinds that want different feeds); v1 is unchanged.
"""

from __future__ import annotations

from gymnasium.spaces import Box
from gymnasium.vector import AutoresetMode

from oasis_gym.batched.tasks import RecommenderTask
from oasis_gym.model.rewards import RecommenderReward

from .lockstep import LockstepEnv, LockstepVectorEnv

__all__ = ["RecommenderEnv", "RecommenderVectorEnv", "RecommenderReward"]


def _task(k, difficulty, users, population_seed, max_steps, ranking, reward, version):
    return RecommenderTask(k, users, difficulty, population_seed, max_steps, ranking, reward, version=version)


def _space(task) -> Box:
    return Box(-1.0, 1.0, (task.action_size,), dtype="float32")


class RecommenderEnv(LockstepEnv):
    """One Recommender-v1 episode at a time (module docstring)."""

    version = 1  # the task version (`oasis_gym.model.tiers.TIERS_BY_VERSION`); Recommender-v2 subclasses

    def __init__(self, difficulty="medium", users=1000, population_seed=0, max_steps=100, ranking="per_user",
                 reward: RecommenderReward | None = None, render_mode=None, *, privileged_info=False):  # fmt: skip
        task = _task(1, difficulty, users, population_seed, max_steps, ranking, reward, self.version)
        super().__init__(task, _space(task), render_mode, privileged_info)


class RecommenderVectorEnv(LockstepVectorEnv):
    """`num_envs` Recommender-v1 episodes stepped together (module docstring)."""

    version = 1

    def __init__(self, num_envs=8, difficulty="medium", users=1000, population_seed=0, max_steps=100,
                 ranking="per_user", reward: RecommenderReward | None = None,
                 autoreset_mode=AutoresetMode.NEXT_STEP, render_mode=None, *, privileged_info=False):  # fmt: skip
        task = _task(num_envs, difficulty, users, population_seed, max_steps, ranking, reward, self.version)
        super().__init__(task, _space(task), autoreset_mode, render_mode, privileged_info)
