"""Moderator-v0: learn to moderate a social platform whose users are simulated.

This environment is part of oasis-gym. Make it with
``gymnasium.make("oasis_gym/Moderator-v0", ...)`` (after `import oasis_gym`) or
``from oasis_gym.envs.moderator_v0 import ModeratorEnv``.

| Action space       | `MultiDiscrete([6] * top_m)` (scenario default top_m = 20)      |
|--------------------|-----------------------------------------------------------------|
| Observation space  | `Box(-inf, inf, (top_m * 18,), float32)`                        |
| Import             | `gymnasium.make("oasis_gym/Moderator-v0")`                      |

## Description
The agent is the platform's content moderator (`moderator_0` of the PettingZoo env). Each
step it sees the `top_m` visible original posts spreading fastest over the last
`window_minutes` and may act on each of them. The users are simulated (by default the
1 000 ABM users of the `misinfo_brigading` scenario, see `oasis_gym.scenarios.misinfo_stream`: a
stream of true news and extreme-stance misinformation, users who report what they disagree
with, and a report brigade: 20 accounts that mass-report the true posts of 5 of the 20
outlets, so a post's report count alone misleads);
feeds come from the platform's own recommender (Twitter-like by default) unless
`recsys="agent"` with a `recommender` rule is given.

The moderator never sees a post's true label. It has to learn from the platform's own
evidence -- user reports (noisy: users report true posts they disagree with, brigaders
report targeted outlets' posts en masse), who reported (their false-report record, how
many posts they report), spread, the author's history -- and a fact-check service
(`oasis_gym/agents/fact_check.py` over `oasis_gym/model/fact_check.py`, MOSAIC-style): each
step the moderator may send up to `check_budget` (2) posts of its view to fact-checkers; the
verdict comes back `check_delay` (2) steps later and is wrong with probability `check_error`
(0.1).

## Action space
`MultiDiscrete([6] * top_m)`: per observed post slot 0 none, 1 label, 2 downrank,
3 remove, 4 remove and suspend the author, 5 send the post to fact-checkers (the first
`check_budget` such requests of a step, in view order; no moderation, no cost). Effects are
real and journaled: labels show in feeds, downranked posts rank lower, removed posts leave
every feed, suspended users never activate again. Actions on empty slots are ignored. With
`agent_params={"check_action": False}` the space is `MultiDiscrete([5] * top_m)` and the
service picks the checks itself (the most reported unchecked posts of the view).
Accepted: an array of exactly `top_m` integer codes of the space (integral floats such as
2.0 too), or a `PostActions` (post ids and codes, what the report and oracle rules give;
`oasis_gym/agents/moderator.py`). A code out of range, a number that is not a whole one
(2.7, NaN, inf), another shape, bools or texts raise a ValueError naming the env, the value
and what is allowed, before the users act (`envs/agent_spaces.check_action`).

## Observation space
`Box(-inf, inf, (top_m * 18,))`, float32, slot-major (`model/moderation.V0_VIEW_FEATURES`):
per post slot log(1 + velocity) (likes + shares + comments per hour of age), log(1 + likes),
log(1 + shares), reports, log(1 + reports per hour of age), age in hours, log(1 + author
followers), log(1 + the author's removed posts), log(1 + the author's posts fact-checked as
misinformation),
author suspended (1 / 0), log(1 + the author's posts fact-checked true), the share of the
post's reporters who reported another post that was fact-checked true, the reporters' mean
log(1 + their reports of other posts), fact-check verdict (+1 misinformation, -1 true, 0 none yet),
fact-check pending (1 / 0), moderation status, hours since reset, slot filled (1) or
empty (0, all features 0). Slots are ordered by velocity. No feature reads the label.

## Rewards
`ModeratorAgent.reward` (`oasis_gym/agents/moderator.py`): - misinformation share of the feeds served
after the action - action_cost * (posts acted on that are not misinformation) (default
cost 0.02). The reward follows the action of the same step; a step without a moderator
action costs nothing.

## Baselines and the upper bound
`train.evaluate.moderator_rule`: "none", "report_threshold" (remove at >= 3 reports),
"report_threshold_suspend" (remove + suspend), and "oracle_suspend", which reads the
ground truth (every visible misinformation post on the platform, the scenario's source
accounts): the stated upper bound, unbeatable by construction (see
`envs.platform_rules.OracleModerator`; every evaluation checks it with `oracle_check`).

## Starting state
As Recommender-v0: `reset(seed)` rebuilds the platform and the scenario's posts from the
seed; without a seed the episode seed comes from the env's generator.

## Episode end
No termination. Truncation after `max_cycles` steps (scenario default 50).

## Info
As Recommender-v0 (impressions, misinformation exposure, engagement, reports, opinions,
moderation counts of the step); at the last step `episode_metrics` also has
`misinfo_actioned_share`, `true_actioned_share` (posts labelled true with any
moderation status), `non_misinfo_actioned_share` and `posts_actioned`.

## Arguments
`ModeratorEnv(users=None, scenario="misinfo_brigading", user_policy=None, recommender=None,
agent_params=None, max_cycles=None, render_mode=None, population_seed=0, **env_kwargs)`
- `users`, `scenario`, `user_policy`, `max_cycles`, `population_seed`, `journal` (the
  training mode), `**env_kwargs`: as Recommender-v0 (e.g. `recsys="reddit"` for hot-score
  feeds).
- `recommender`: None (the `recsys` argument ranks the feeds) or a rule
  `f(sim) -> weights` for `recommender_0` (then `recsys="agent"` is used), e.g.
  `FixedWeights(...)` or a trained recommender.
- `agent_params`: `ModeratorAgent` fields (`top_m`, `window_minutes`, `action_cost`,
  `check_budget`, `check_delay`, `check_error`, `check_action`);
  they override the scenario's (`misinfo_stream` sets `top_m=20`; without a scenario the
  `ModeratorAgent` default is 10).

## Vector envs
`gymnasium.make_vec(id, num_envs=K)` gives Gymnasium's `SyncVectorEnv` (a Python loop over K
envs, each its own SQLite-backed simulation): batching K of these simulations in one step
would change their results, so the native vector env is v1's (`oasis_gym/Recommender-v1`,
`oasis_gym/Moderator-v1`). Each env checks its own row of the actions, one env after another:
a refused row leaves the envs before it stepped (the native vector env checks the whole batch
first).

## Version history
- v0 (issue 53): bad actions are refused (NaN, inf, a code out of range or not whole, another
  shape); valid actions give the same results as before (no version bump).
- v0 (issue 26): the `journal=False` training mode (results unchanged).
- v0 (issue 18, fact-check requests by default): `check_action` is on, so the action space is
  `MultiDiscrete([6] * top_m)` and the moderator picks which posts get checked (PPO trained this
  way beats the report rules on held-out seeds and populations; with the service picking the
  checks it tied them). Models trained with 5 codes: `agent_params={"check_action": False}`.
- v0 (issue 18, report brigading): default scenario `misinfo_brigading` (`misinfo_stream`
  plus coordinated false reports; `scenario="misinfo_stream"` gives the previous one);
  18 features per slot (author's posts fact-checked true, reporters' false-report share,
  reporters' activity). Models trained on 15 features do not load into this space.
  Optional `check_action`: fact-check requests as action code 5.
- v0 (issue 18): 15 features per slot (log-scaled counts, report velocity, author
  suspended, hours since reset); the label left the observation (fact-checks, author history instead);
  the oracle acts platform-wide; no stale action cost; `max_episode_steps=50`.
- v0: initial release.
"""

from __future__ import annotations

from typing import Any

from oasis_gym.agents import ModeratorAgent, PostActions

from .platform_agent_env import PlatformAgentEnv, register_gym_envs

__all__ = ["ModeratorEnv", "register_gym_envs"]


class ModeratorEnv(PlatformAgentEnv):
    """The Gymnasium env of `moderator_0` (module docstring); `recommender` optionally
    drives `recommender_0` with a fixed rule or a trained model."""

    agent = "moderator_0"

    def __init__(self, users=None, *, recommender=None, scenario="misinfo_brigading", **kwargs: Any):
        self._recommender = recommender
        super().__init__(users, scenario=scenario, **kwargs)

    @staticmethod
    def _make_agent(params: dict):

        return ModeratorAgent(**params)

    def _agent_config(self) -> dict:
        cfg = {"moderator_agent": True}
        if self._recommender is not None:
            cfg.update(recsys="agent", recommender_agent=True)
        return cfg

    def _checked(self, action):
        """A `PostActions` (what the report and oracle rules give) as the moderator checks it,
        any other action against the action space."""
        return action if isinstance(action, PostActions) else super()._checked(action)

    def _other_actions(self, sim) -> dict:
        return {"recommender_0": self._recommender(sim)} if self._recommender is not None else {}
