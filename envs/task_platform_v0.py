"""TaskPlatform-v0: Recommender-v4 or Moderator-v2 on the platform as a PettingZoo parallel env.

One policy, every world (issue 52): the platform agent `recommender_0` or `moderator_0` takes the
benchmark's spaces, so a policy trained or tuned on the fast path (`oasis-gym train`,
`train/task_policy.load_task_policy`) plays here unchanged, beside users that are rule-based, LLMs
or PettingZoo agents of their own. Import it as ``from oasis_gym.envs import task_platform_v0`` or
make it with ``pettingzoo.make("parallel", "oasis_gym/TaskPlatform-v0", task="moderator")`` once
``import oasis_gym`` has registered the id. `parallel_env` is the parallel env, `raw_env` the
unwrapped AEC env and `env` the AEC env with `OrderEnforcingWrapper` (PettingZoo's meanings).

| Import             | `from oasis_gym.envs import task_platform_v0`                          |
|--------------------|------------------------------------------------------------------------|
| Parallel API       | Yes                                                                    |
| Agents             | `["recommender_0"]` or `["moderator_0"]`, then `user_<id>` of `agent_users` |
| Platform agent     | the spaces of Recommender-v4 / Moderator-v2 (`Box(-1, 1, (72,))` / `MultiDiscrete([4] * 16)`) |
| User agents        | twitter_v0's (a Dict of 4 Discrete; a Dict observation of the feed)     |

## Description
The task episode of `backend="platform"` (`envs/recommender_v4.py`, `envs/moderator_v2.py`,
"Backends"): the task's users, campaign bots, brigaders and returning accounts are platform
accounts acting through platform rows (OASIS's rules), the feeds the task ranking
(`oasis_gym/recsys/task_ranking.py`), the moderator's codes platform moderation; the episode is
the Gymnasium env's (`RecommenderEnv` / `ModeratorEnv` with `backend="platform"`), stepped as it
is. `play(env, policy)` plays a saved task policy as the platform agent for one episode
(`docs/task_platform.md`).

## Agents
- `recommender_0` (`task="recommender"`) or `moderator_0` (`task="moderator"`): observation
  space, action space and reward exactly those of the Gymnasium env of Recommender-v4 /
  Moderator-v2 and its tier; with the same seed the same episode, bit for bit
  (tests/test_task_platform.py, journal off and on). Its `info` is that env's.
- `user_<id>` for each model user of `agent_users` (indexes in [0, users)): driven by
  `env.step` instead of the task's model (`envs/agent_users.py`, a user policy handed to the
  world as `user_policy=` / `policy_users=` are). Spaces: twitter_v0's
  (`envs/agent_spaces.user_spaces`, K = 10 feed slots, one comment slot a post, always empty:
  the task platform keeps no comments; the user slots are the feed's authors). Reward:
  twitter_v0's, the simulation's engagement reward (`oasis_gym/sim/rewards.py`:
  `engagement_reward`: +1 a like or repost of its post by a user this step). Its posts are
  task posts from the next step, served to the task's users like any other
  (`oasis_gym/world/user_posts.py` gives them the model's attributes).

## Timing and actions of the user agents
The task step serves the feeds after the platform agent's action, so a user cannot see a
step's feed before acting in it. A user agent's observation is the feed it was served in the
step just played (`info["active"]` True), else twitter_v0's inactive observation (`active` 0; at
`reset` every user's). The action it gives to the next `step` answers that observation: applied
in that step if the user visits (the model's visit draw: who visits, churns and returns is the
model's for every user), else ignored; its post slot names a post of the feed it observed, and
the row targets that post if it is in the feed served to the user now, else no post
(`unknown_post`). The task platform offers `do_nothing`, `create_post`, `like_post`, `repost`
and `report_post` (`oasis_gym/world/sim_world.TASK_ACTIONS`): any other type is a row the
platform rejects (`action_unavailable`), recorded in the journal's trace as on any platform.
`create_post` needs a `text` (the task platform writes no automatic text: `text_empty`); a
malformed action is an `invalid_action` row. A missing agent user
in `actions` does nothing. `info[user]` holds `active`, and `last_action` / `last_result` of
its row when it acted. The world counts what the agent users did as any user's: a like or
repost of a feed post is the model's engagement (counters, satisfaction, churn, opinion), a
report a report.

## Episode end
No termination; every agent is truncated after `max_steps` steps.

## Arguments
`task_platform_v0.parallel_env(task="recommender", difficulty="medium", users=1000,
population_seed=0, max_steps=100, journal=False, db_path=None, overwrite=False,
user_policy=None, policy_users=None, agent_users=None, render_mode=None)`; the seed is
`reset(seed=...)`'s.
- `task`: "recommender" (Recommender-v4) or "moderator" (Moderator-v2); `difficulty`, `users`,
  `population_seed`, `max_steps`, `journal`, `db_path`, `overwrite`, `user_policy`,
  `policy_users`: as that env's (`backend="platform"`).
- `user_policy` (ABM, scripted, LLM) drives the users `policy_users` names; with `agent_users`
  and no `policy_users`, all the users that are not agents.
- `agent_users`: the model users that become agents `user_<id>` (none by default).
Bad arguments: a ValueError with one line, before anything is built.

## Version history
- v0 (issue 52): initial release.
"""

from __future__ import annotations

from typing import Any

from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from .task_platform import TaskPlatformEnv

__all__ = ["env", "parallel_env", "play", "raw_env"]


class parallel_env(TaskPlatformEnv):
    """The task_platform_v0 parallel env: `TaskPlatformEnv`; see task_platform_v0."""

    metadata = {**TaskPlatformEnv.metadata, "name": "task_platform_v0"}


def raw_env(**kwargs: Any) -> parallel_to_aec_wrapper:
    """The unwrapped AEC env (PettingZoo's parallel-to-AEC conversion, no wrappers)."""
    return parallel_to_aec_wrapper(parallel_env(**kwargs))


def env(**kwargs: Any) -> OrderEnforcingWrapper:
    """The AEC env with PettingZoo's standard `OrderEnforcingWrapper`."""
    return OrderEnforcingWrapper(raw_env(**kwargs))


def play(env: TaskPlatformEnv, policy, seed: int | None = None, users=None) -> float:
    """Play one episode of `env` from `reset(seed=seed)` with `policy` (observation -> action, e.g.
    `load_task_policy(path)`) as the platform agent; `users(agent, observation)` the agent users'
    actions (None: they do nothing). Returns the platform agent's return."""
    observations, _ = env.reset(seed=seed)
    agent, total = env.platform_agent, 0.0
    while env.agents:
        actions = {a: users(a, o) for a, o in observations.items() if a != agent} if users else {}
        actions[agent] = policy(observations[agent])
        observations, rewards, _, _, _ = env.step(actions)
        total += rewards[agent]
    return total
