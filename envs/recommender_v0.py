"""Recommender-v0: learn the feed ranking of a social platform whose users are simulated.

This environment is part of oasis-gym. Make it with
``gymnasium.make("oasis_gym/Recommender-v0", ...)`` (after `import oasis_gym`) or
``from oasis_gym.envs.recommender_v0 import RecommenderEnv``.

| Action space       | `Box(-1.0, 1.0, (24,), float32)` (`ranking="global"`: `(8,)`)   |
|--------------------|-----------------------------------------------------------------|
| Observation space  | `Box(-inf, inf, (26,), float32)`                                |
| Import             | `gymnasium.make("oasis_gym/Recommender-v0")`                    |

## Description
The agent is the platform's recommender (`recommender_0` of the PettingZoo env). Each step
it chooses a *scoring function* that ranks every active user's candidate posts for the
next step: score(u, p) = x(u, p) . w(u), with per-user weights w(u) = z(u) @ W computed
from the user's features z(u) = (1, opinion, |opinion|), so different users get different
rankings from one shared function (the slate-recommender set-up of RecSim and the
per-request weights of Virtual-Taobao). `ranking="global"` is the simple baseline
variant: one weight vector for every user. The users are simulated (by default the
1 000 ABM users of the `misinfo_stream` scenario, see `oasis_gym.scenarios.misinfo_stream`) and react to
what they are shown: they like, dislike, repost, follow, post, report, and their opinions
move with what they read. The moderator is off unless `moderator="report_threshold"`
(remove posts with >= 3 reports) or another rule is given.

## Action space
`Box(-1, 1, (3 * 8,))`: W row-major, rows the user features (`model.ranking.V0_USER_FEATURES`:
bias, opinion, |opinion|), columns the candidate features (`model.ranking.V0_FEATURES`):
recency (exp(-age / 180 min)), popularity (log_1000(1 + likes + shares)), author_fans
(log_1000(1 + followers)), similarity (user-post interest cosine), in_network (author
followed or shared by a followee), controversy (min/max of likes and dislikes), reports
(log_1000(1 + reports)), alignment (user opinion x post stance: > 0 is an echo chamber).
Downranked posts are demoted; the top `feed_size` are served. `ranking="global"`:
`Box(-1, 1, (8,))`, the weights over the candidate features for everyone.
`RecommenderAgent(ranking=...).weights_action(w)` (`oasis_gym/agents/recommender.py`) gives the action of
global weights in either variant.
Accepted: an array of exactly this shape of finite numbers (ints or floats within float32's
range); finite values outside [-1, 1] are clipped to it, as RL libraries do. NaN,
infinities, another shape, bools or texts raise a ValueError naming the env, the value and
what is allowed, before the users act (`envs/agent_spaces.check_action`).

## Observation space
`Box(-inf, inf, (26,))`, float32: engagement rate, impressions per active user,
misinformation share of impressions, cross-cutting share, opinion mean / std / mean |x|,
Esteban-Ray polarization, active-user fraction, opinion-std increase since reset (10
values, of the step just played), then the candidate pool's 8 feature means and 8 stds
(alignment and similarity over the (user, pool post) cells of the last ranking).

## Rewards
`RecommenderAgent.reward` (`oasis_gym/agents/recommender.py`), a trade-off between engagement and what the
ranking changes: `engagement_weight * engagement_rate - misinfo_penalty * misinfo_share
- polarization_penalty * (opinion std now - opinion std one step ago)
+ diversity_bonus * cross_cutting_share` (defaults 10, 1, 50, 0.2; set them with
`agent_params`). The polarization term telescopes: an episode's return holds the
increase since reset, not the level. Each component is in `info["reward_components"]`
(and in TensorBoard under `reward/` when trained with `oasis_gym.train`). Engagement
and exposure are measured on the feeds the users acted on this step, ranked by the
action of step t-1: the effect of an action shows in the next reward (use gamma > 0).
`bench/research/recommender_pareto.py` shows the trade-off: engagement-greedy rankings (alignment
+1) reach the highest engagement with over 10x the misinformation exposure and a polarization
increase; harm-averse ones lose ~10-30 % engagement.

## Starting state
`reset(seed)` rebuilds the platform: the population (fixed by `population_seed`), the
scenario's seeded posts and news accounts (from `seed`), fresh user policy state.
Without a seed, the episode seed is drawn from the env's generator (seeded by the last
explicit seed), so `SubprocVecEnv` workers started with different seeds stay different.

## Episode end
No termination. Truncation after `max_cycles` steps (scenario default 50).

## Info
Every step: `reward_components` (engagement, misinfo_exposure, polarization_increase,
diversity), `impressions`, `misinfo_impressions`, `misinfo_share`, `cross_cutting_share`,
`engagements`, `engagement_rate`, `reports`, `opinion_std`, `esteban_ray`, `moderation`
(posts labelled / downranked / removed and users suspended this step), `active_users`.
At the last step also `episode_metrics` (return, totals, moderation shares).

## Arguments
`RecommenderEnv(users=None, scenario="misinfo_stream", user_policy=None, moderator=None,
feed=None, ranking="per_user", agent_params=None, max_cycles=None, render_mode=None,
population_seed=0, **env_kwargs)`
- `users`: user count / profile file / Population (default: the scenario's, 1 000).
- `scenario`: "misinfo_stream", a `MisinfoScenario` (fields overridable) or None (plain
  env: 100 users, no seeded posts). The scenario sets `setup`, activation, action set,
  `max_cycles` and the default user policy.
- `user_policy`: a factory `f(parallel_env) -> Policy` (e.g. a HybridPolicy with LLM
  core users, or `SB3Policy.load(...)`); picklable for subprocess vector envs.
- `moderator`: None (off), "report_threshold", "oracle" or a rule `f(sim) -> action` for
  `moderator_0` (then it is switched on with `agent_params`-independent defaults).
- `feed`: None (the agent ranks the feeds), or a baseline recsys name ("reddit" hot
  score, "random", "chronological", "twitter"): the feeds come from that recsys, the
  action is ignored, and the reward is still `RecommenderAgent.reward` of the served
  feeds, so baselines and learned rankings are scored alike on the same scenario. The
  observation then has zeros for the pool statistics (the baseline has no pool).
- `ranking`: "per_user" (W over user features) or "global" (one weight vector).
- `agent_params`: `RecommenderAgent` fields (`engagement_weight`, `misinfo_penalty`,
  `polarization_penalty`, `diversity_bonus`).
- `render_mode`: None, "ansi" (text) or "rgb_array" (a histogram of user opinions; what
  SB3's `make_vec_env` asks for).

Registered with `max_episode_steps=50` (the scenario's episode length); with a longer
`max_cycles=N` pass `max_episode_steps=N` to `gymnasium.make` too. Unseeded resets draw
episode seeds >= 2**20, so evaluation seeds below that never replay a training episode.
- `**env_kwargs`: any `SocialMediaEnv` argument (`activation`, `feed_size`,
  `recsys_params`, `db_path`, ...), overriding the scenario's.
- `journal`: True (default: every step journaled in SQLite, in memory unless `db_path`
  names a file) or False, the training mode (`oasis-gym train` uses it): the same episodes
  step for step, about a third faster, but nothing is recorded (no OASIS tables, no metrics,
  no resume; `oasis_gym/sim/no_journal.py`). To record an evaluation episode in full, make
  its env with `journal=True` and `db_path="eval.db"`.

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
- v0 (issue 18): per-user ranking, the alignment feature, the trade-off reward (polarization
  increase instead of level, diversity), `rgb_array` rendering, `max_episode_steps=50`.
- v0: initial release.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from oasis_gym.agents import RECOMMENDER_FEATURES, RecommenderAgent
from oasis_gym.model.ranking import V0_FEATURES

from .platform_agent_env import PlatformAgentEnv, PlatformRule, register_gym_envs
from .platform_rules import NoModeration, OracleModerator, ReportThresholdModerator

__all__ = ["RecommenderEnv", "register_gym_envs"]


def _moderator_rule(moderator) -> PlatformRule | None:

    if moderator is None or callable(moderator):
        return moderator
    rules = {"none": NoModeration, "report_threshold": ReportThresholdModerator, "oracle": OracleModerator}
    if moderator not in rules:
        raise ValueError(f"moderator must be None, a rule f(sim) or one of {sorted(rules)}, got {moderator!r}")
    return rules[moderator]()


class RecommenderEnv(PlatformAgentEnv):
    """The Gymnasium env of `recommender_0` (module docstring); `feed=` scores a fixed
    recommender with the same reward (baselines), `moderator=` adds a moderator rule."""

    agent = "recommender_0"

    def __init__(
        self, users=None, *, moderator=None, feed: str | None = None, ranking: str = "per_user", **kwargs: Any
    ):
        self._moderator = _moderator_rule(moderator)
        kwargs["agent_params"] = {"ranking": ranking, **(kwargs.get("agent_params") or {})}
        if feed is not None and feed in ("agent", "agent_controlled", "agent-controlled"):
            raise ValueError("feed names a fixed baseline recsys; leave it None for the learned ranking")
        self.feed = feed
        super().__init__(users, **kwargs)

    @staticmethod
    def _make_agent(params: dict):

        return RecommenderAgent(**params)

    def _agent_config(self) -> dict:
        if self.feed is not None:
            return {"recsys": self.feed, "recommender_agent": False, "moderator_agent": self._moderator is not None}
        return {"recsys": "agent", "recommender_agent": True, "moderator_agent": self._moderator is not None}

    # baseline mode: no recommender_0 in the simulation; the env scores the fixed feeds itself
    def _learner_action(self, action) -> dict:
        return {} if self.feed is not None else {self.agent: action}

    def _reward(self, sim, out, served) -> float:
        if self.feed is None:
            return float(out.platform_rewards[self.agent])
        return float(self.learner.score(sim.agent_view(), served))  # the same reward of the fixed feeds

    def _obs(self) -> np.ndarray:
        if self.feed is None:
            return super()._obs()

        x = np.zeros(self.observation_space.shape, dtype=np.float32)
        view = replace(self._env.sim.agent_view(), recsys=_NoPool())
        x[: len(RECOMMENDER_FEATURES)] = self.learner.observe(view)[: len(RECOMMENDER_FEATURES)]
        return x

    def _other_actions(self, sim) -> dict:
        return {"moderator_0": self._moderator(sim)} if self._moderator is not None else {}

    def _info(self, sim, out, served_stats, before) -> dict:
        info = super()._info(sim, out, served_stats, before)
        info["reward_components"] = dict(self.learner.last_components)  # in the simulation, or the feeds' scorer
        return info


class _NoPool:
    """A fixed recsys seen by the recommender agent: no candidate pool, pool statistics read as 0."""

    @staticmethod
    def candidate_pool_stats(platform) -> np.ndarray:
        """Zeros: no candidate pool in feed mode."""

        return np.zeros(2 * len(V0_FEATURES.names), dtype=np.float32)
