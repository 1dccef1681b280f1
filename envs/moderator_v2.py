"""Moderator-v2: Moderator-v1 under OASIS's rules, with the fact-check verdict's one sign.

Make it with ``gymnasium.make("oasis_gym/Moderator-v2", difficulty="medium")`` (after
`import oasis_gym`), K of them with ``gymnasium.make_vec("oasis_gym/Moderator-v2",
num_envs=K)`` (a native vector env), or import `ModeratorEnv` / `ModeratorVectorEnv`.

| Action space       | `MultiDiscrete([4] * 16)`                                       |
|--------------------|-----------------------------------------------------------------|
| Observation space  | `Box(-inf, inf, (227,), float32)`                               |
| Import             | `gymnasium.make("oasis_gym/Moderator-v2")`                      |

## Description
Moderator-v1 (`envs/moderator_v1.py`: the review queue, the fact-check budget, adversaries
that adapt, costly mistakes) with the platform's rules (`oasis_gym.model.tiers.MODERATOR_TIERS`,
`Dynamics.oasis_rules`), so that a platform backend can reproduce it (issue 51):
- a user likes or reposts a post at most once per episode and reports it at most once (a post
  once engaged or reported is not reported); a brigader does not report a post it reported
  before. Moderator-v1's users repeat about 1 % of their reports and a fifth of their likes,
  which inflates the reports and popularity the queue ranks by.
- a fact-check's verdict is a fact about the post: its draw depends on the episode and the
  post, not on the step, so a post checked again (on the platform) gets the same verdict.
- the verdict in the observation has the model's sign (`oasis_gym.model.fact_check`): +1 found
  misinformation, -1 found true, 0 not checked (Moderator-v1 shows it negated).

## Action space
`MultiDiscrete([4] * 16)`, per queue slot: 0 none, 1 fact-check, 2 remove the post, 3 remove it
and suspend its author, as in Moderator-v1 (budget, accuracy and accepted actions the same).

## Observation space
`Box(-inf, inf, (16 * 14 + 3,))` float32: Moderator-v1's, except the fact-check column
(`model/moderation.QUEUE_FEATURES` 12): the verdict itself, +1 = misinformation.

## Rewards, episode end, arguments
As Moderator-v1 (`ModeratorReward`, truncation after `max_steps` (100) steps,
`ModeratorEnv(difficulty="medium", users=1000, population_seed=0, max_steps=100, reward=None)`,
`ModeratorVectorEnv(num_envs, ..., autoreset_mode=AutoresetMode.NEXT_STEP)`).

## Backends
`ModeratorEnv(..., backend="platform", journal=False, db_path=None, overwrite=False,
user_policy=None, policy_users=None)`: the episode on the platform, codes as platform moderation
(`envs/lockstep.py`, `use_backend`). The platform backend runs the task on a `Simulation`'s split
step (`oasis_gym/world/sim_world.py`): the feeds are the task ranking (`recsys/task_ranking.py`),
the users a user policy, `oasis_gym.TASK_USER_POLICY` (`policies/task_users.py`: the model's likes,
reposts and reports). `user_policy=` (any user policy: `act(env, obs)` -> `ActionArrays`; ABM,
scripted, LLM) drives the users `policy_users` names (indexes, default all) in the task users'
place: their rows are applied and journaled as any user's, and the world counts what they did (their
likes, reposts and reports move the model's counters, satisfaction and opinions); their posts are
theirs (only the task users' posts enter the task's feeds). The spaces are the same.

## LLM users
As Recommender-v4's (`envs/recommender_v4.py`, "LLM users": what an LLM user reads, what the
model infers from its actions); here its reports also fill the moderator's review queue.

## Version history
- v2 (issue 57): `info` as Moderator-v1's (its Info): the hidden truth's values only with
  `privileged_info=True`; observations and rewards unchanged.
- v2 + `backend="platform"` (issue 51, plan commits 15-16): the same episodes on the platform; no result changes.
- v2 (issue 51, plan commit 12): Moderator-v1's tiers under OASIS's rules (once per pair), the
  fact-check draw per (episode, post), the verdict's sign +1 = misinformation. A new id because
  results change: Moderator-v1 keeps its numbers (tests/test_pins.py).
- v1: `envs/moderator_v1.py` (unchanged).
"""

from __future__ import annotations

from . import moderator_v1
from .lockstep import check_backend, check_policy_users, use_backend
from .moderator_v1 import ModeratorReward

__all__ = ["ModeratorEnv", "ModeratorVectorEnv", "ModeratorReward"]


class ModeratorEnv(moderator_v1.ModeratorEnv):
    """One Moderator-v2 episode at a time (module docstring)."""

    version = 2

    def __init__(self, difficulty="medium", users=1000, population_seed=0, max_steps=100,
                 reward: ModeratorReward | None = None, render_mode=None, backend="fast", journal=False,
                 db_path=None, overwrite=False, user_policy=None, policy_users=None, *,
                 privileged_info=False):  # fmt: skip
        check_backend(backend, journal, db_path)
        check_policy_users(backend, users, user_policy, policy_users)
        super().__init__(
            difficulty, users, population_seed, max_steps, reward, render_mode, privileged_info=privileged_info
        )
        self.world = use_backend(self.task, backend, journal, db_path, overwrite, user_policy, policy_users)


class ModeratorVectorEnv(moderator_v1.ModeratorVectorEnv):
    """`num_envs` Moderator-v2 episodes stepped together (module docstring)."""

    version = 2
