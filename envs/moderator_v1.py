"""Moderator-v1: moderate a platform whose adversaries adapt, with a fact-check budget and costly mistakes.

Make it with ``gymnasium.make("oasis_gym/Moderator-v1", difficulty="medium")`` (after
`import oasis_gym`), K of them with ``gymnasium.make_vec("oasis_gym/Moderator-v1",
num_envs=K)`` (a native vector env), or import `ModeratorEnv` / `ModeratorVectorEnv`.

| Action space       | `MultiDiscrete([4] * 16)`                                       |
|--------------------|-----------------------------------------------------------------|
| Observation space  | `Box(-inf, inf, (227,), float32)`                               |
| Import             | `gymnasium.make("oasis_gym/Moderator-v1")`                      |

## Description
The agent is the platform's trust and safety team. Each step it sees a review queue of the
16 most urgent recent posts (most engaged and most reported first) and decides per post.
The feeds are ranked by the platform's default ranking; the 1 000 simulated users
(`oasis_gym.batched`; rule-based, not LLMs) are as in Recommender-v1. Misinformation comes
mostly from 1 % of accounts drawn per episode. In medium and hard, suspended
misinformation accounts come back as new accounts after a few steps (no followers, no
record), brigades of users report the posts of targeted true outlets (the targets move
every 10 steps in hard), misinformation campaigns come and go, and in hard misinformation
mimics true posts' arousal and users report less reliably. Wrongly moderated authors post
less and are less satisfied; a wrongly suspended user is lost. Public signals are not
enough in hard: a classifier on them stays below AUC 0.85 (`bench/research/moderator_v1_auc.py`);
a fact-check verdict is right 90 % of the time, for one post a step.

## Action space
`MultiDiscrete([4] * 16)`, per queue slot (`model/moderation.ACTIONS`, the first four codes of
`model/moderation.CODES`): 0 none, 1 fact-check
(at most `fact_check_budget` a step: 4 easy, 2 medium, 1 hard; checks beyond it are
ignored, in slot order; the verdict is right with probability 0.95 / 0.95 / 0.9 and shows
in the next observation), 2 remove the post, 3 remove it and suspend its author (all
their posts leave). An action on an empty slot does nothing.
Accepted: an array of exactly 16 integer codes in [0, 3] (the vector env: `(num_envs, 16)`,
one row per env; integral floats such as 2.0 too). A code out of range (-1, 4), a number
that is not a whole one (2.7, NaN, inf), another shape, bools or texts raise a ValueError
naming the env, the value (and its env) and what is allowed, before any episode steps
(`envs/agent_spaces.check_action`, one check of the whole batch).

## Observation space
`Box(-inf, inf, (16 * 14 + 3,))` float32: per slot the `model/moderation.QUEUE_FEATURES` (age, log likes,
log reposts, log reports, log reports this step, log author followers, log account age,
author's earlier removals, arousal score, |stance|, share of reports from frequent
reporters, like rate, fact-check verdict (+1 true / -1 misinformation / 0 none: the
negated verdict of `model/fact_check.py`, kept as v1 published it), filled),
then time, the platform's reports per impression, the budget as a share of the queue.
No labels.

## Rewards
`ModeratorReward`: -20 x misinformation impressions / N + 1 x engagements / N - 0.05 x
(true posts removed + 10 x true users suspended). A false positive costs now and later
(the author's and their audience's lost engagement).

## Info
`info` of a step: `engagements` and `visitors` (per user), `opinion_std`, `fact_checks`, `episode_seed`.
Privileged, for evaluation only: `ModeratorEnv(..., privileged_info=True)` (the vector env too) adds
what is computed from the hidden truth (`oasis_gym.batched.tasks.PRIVILEGED_INFO`): the counts split
by it (`removed_misinfo`, `removed_true`, `suspended_misinfo`, `suspended_true`), `misinfo_impressions`,
`misinfo_share`, `campaign`, `satisfaction`, `churned`. A learner reading them could learn the labels:
no training path turns them on (`tests/test_privileged_info.py`); observations and rewards are the same.

## Episode end
No termination; truncation after `max_steps` (100) steps.

## Arguments
`ModeratorEnv(difficulty="medium", users=1000, population_seed=0, max_steps=100,
reward=None, *, privileged_info=False)`; `ModeratorVectorEnv(num_envs, ..., autoreset_mode=AutoresetMode.NEXT_STEP)`.
Nothing is journaled (see Recommender-v1).

## Version history
- v1 (issue 57): the values computed from the hidden truth leave `info` unless
  `privileged_info=True` (Info); observations and rewards unchanged (no version bump).
- v1 (issue 53): bad actions are refused (NaN, inf, a code out of range or not whole, another
  shape); valid actions give the same results as before (no version bump).
- v1 (issues 26, 30): the batched engine, adaptive adversaries, budgeted fact-checks,
  tiers, a native vector env. Bump the version whenever a change could change any result.
- v2 is `envs/moderator_v2.py` (OASIS's rules, the verdict's sign); v1 is unchanged.
"""

from __future__ import annotations

from gymnasium.spaces import MultiDiscrete
from gymnasium.vector import AutoresetMode

from oasis_gym.batched.tasks import ModeratorTask
from oasis_gym.model.rewards import ModeratorReward

from .lockstep import LockstepEnv, LockstepVectorEnv

__all__ = ["ModeratorEnv", "ModeratorVectorEnv", "ModeratorReward"]


def _space(task) -> MultiDiscrete:
    return MultiDiscrete([task.n_codes] * task.queue_size)


class ModeratorEnv(LockstepEnv):
    """One Moderator-v1 episode at a time (module docstring)."""

    version = 1  # the task version (`oasis_gym.model.tiers.MODERATOR_TIERS`); Moderator-v2 subclasses

    def __init__(self, difficulty="medium", users=1000, population_seed=0, max_steps=100,
                 reward: ModeratorReward | None = None, render_mode=None, *, privileged_info=False):  # fmt: skip
        task = ModeratorTask(1, users, difficulty, population_seed, max_steps, reward, version=self.version)
        super().__init__(task, _space(task), render_mode, privileged_info)


class ModeratorVectorEnv(LockstepVectorEnv):
    """`num_envs` Moderator-v1 episodes stepped together (module docstring)."""

    version = 1

    def __init__(self, num_envs=8, difficulty="medium", users=1000, population_seed=0, max_steps=100,
                 reward: ModeratorReward | None = None, autoreset_mode=AutoresetMode.NEXT_STEP,
                 render_mode=None, *, privileged_info=False):  # fmt: skip
        task = ModeratorTask(num_envs, users, difficulty, population_seed, max_steps, reward, version=self.version)
        super().__init__(task, _space(task), autoreset_mode, render_mode, privileged_info)
