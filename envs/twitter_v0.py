"""Twitter-v0: an X/Twitter-like platform where every user is an agent.

This environment is part of oasis-gym. Import it as
``from oasis_gym.envs import twitter_v0`` or make it with
``pettingzoo.make("parallel", "oasis_gym/Twitter-v0", users=...)`` once
``import oasis_gym`` has registered the ids. `parallel_env` is the parallel env, `raw_env`
the unwrapped AEC env and `env` the AEC env with `OrderEnforcingWrapper` (PettingZoo's meanings).

| Import             | `from oasis_gym.envs import twitter_v0`                   |
|--------------------|-----------------------------------------------------------|
| Actions            | Dict (action type, post slot, comment slot, user slot)    |
| Parallel API       | Yes                                                       |
| Agents             | `agents = ["user_0", ..., "user_<n-1>"]`                  |
| Action shape       | Dict of 4 Discrete                                        |
| Observation shape  | Dict (feed, comments, users, self, action masks)          |

## Description
Users read the feed the recommender serves them and take one of the 21 social actions of the
OASIS paper (plus quote_post and report_post). State lives in memory, every step is journaled
to SQLite (OASIS's tables) in one transaction. Users activate by their 24-h activity vectors
(or a flat probability); inactive users stay live agents and receive a constant observation
with `active == 0` whose action is ignored.

## Agents
`user_<id>` for every user of the population (ids 0..n-1, the SQLite `user_id`).

## Observation space
A `Dict` per agent (K = feed_size, C = comments_per_post, U = K + search_size):
- `active` (1,) int8: 1 if the user acts this step.
- `post_ids` (K,) int64: the posts in the feed, -1 for an empty slot.
- `feed` (K, 16) float32: per post slot `FEED_FEATURES` = followed_author, likes, dislikes,
  shares, comments, age_minutes, reports, moderation (0 none, 1 label, 2 downrank),
  author_followers, similarity (user-post interest cosine), stance, stance_known,
  liked_by_me, disliked_by_me, reposted_by_me, is_quote.
- `comment_ids` (K*C,) int64 and `comments` (K*C, 5): the C newest comments of each slot
  (likes, dislikes, liked_by_me, disliked_by_me, stance); comments by muted users hidden.
- `user_ids` (U,) int64 and `users` (U, 4): the authors of the feed posts (slot i = author of
  post slot i), then the last `search_user` results (followers, followed_by_me, muted_by_me,
  from_search).
- `self` (6,): followers, followings, posts, opinion, hour of day, step.
- `action_mask`: a Dict with the same keys as the action space, so
  `env.action_space(a).sample(mask=obs["action_mask"])` samples a plausible action. `type`
  marks the action types that can succeed given what the user sees; `post`, `comment`,
  `user` mark filled slots. The joint validity of a type with a slot (e.g. liking a post you
  already liked) is checked when applied: an invalid action is a recorded no-op.

The text an LLM needs (post texts, author names, top comments, persona, memory) is NOT in
the space: `env.feed_view(agent)` / `env.feed_views(agents)` return it (dicts), `env.feed_text(agent)`
as text to read.

## Action space
`Dict(type=Discrete(23), post=Discrete(K), comment=Discrete(K*C), user=Discrete(U))`:
`type` is an `oasis_gym.actions.ActionType` code; `post` / `comment` / `user` pick the
target slot of post, comment and user actions. An action may also be a plain int (the
type) or carry extra keys: `text` (post / comment / quote text, search query, report
reason) and `stance` (in [-1, 1], the stance of created content). Without `text`, text
actions get a short template text following the user's opinion (`auto_text=True`).
Twitter's default action set (OASIS): create_post, like_post, repost, follow, do_nothing,
quote_post; other types are rejected as `action_unavailable` unless `available_actions`
lists them.

Errors: an unknown agent name raises `KeyError` before anything is applied. A malformed
action (wrong type, shape, NaN, out-of-range value) is recorded in the trace table as a
rejected `invalid_action`; empty slots or wrong targets are recorded with their reason
(`unknown_post`, `already_done`, ...). `infos[agent]["last_result"]` says what happened.

## Rewards
By default, the engagement each user received this step: +1 for each like of their post
or comment, repost or quote of their post, comment on their post, and new follower.
Pass `reward_fn(sim, outcome) -> ndarray(n_users)` to change it.

## Episode end
No termination; all agents are truncated after `max_cycles` steps.

## Arguments
`twitter_v0.parallel_env(users=100, population_seed=0, recsys="twitter", recsys_params={},
feed_size=10, comments_per_post=2, search_size=5, available_actions=None,
minutes_per_step=3, start_hour=8, activation="activity", max_cycles=50, db_path=None,
overwrite=False, allow_self_rating=True, max_text_length=5000, auto_text=True, log_recs=False,
render_mode=None, reward_fn=None, setup=None, platform_agents=None)`
- `users`: a user count (synthetic population from `population_seed`), a profile file
  (OASIS Twitter CSV or Reddit JSON) or a `Population`.
- `recsys`: "twitter", "reddit", "random", "chronological" or "agent"; `recsys_params`
  are passed to it.
- `activation`: "activity" (each user's 24-h vector) or a flat probability in [0, 1].
- `db_path`: SQLite journal; None -> a temp file, ":memory:" allowed. `reset` starts a new
  journal at that path: it replaces the journal this env wrote in its previous episode, an
  other existing oasis-gym journal only with `overwrite=True`, and never anything else (a
  `JournalError` names the file). An env holds its journal's writer lock until `close()`: a
  second env or process on the same path gets a `JournalError`. Steps are committed before
  `step` returns; with 100,000 users or more, on a writer thread, one behind at most (the
  episode's end and `close()` wait for the last one).
- `render_mode="ansi"`: `render()` returns a readable step summary.
- `setup(sim)`: called at every reset after users are added (seed root posts, labels...).
- `platform_agents`: platform agents already made, by name (a Gymnasium platform-agent env's
  learner), used for those `recommender_agent` / `moderator_agent` switch on.

## Version history
- v0: initial release.
"""

from __future__ import annotations

from .versioned import versioned_env

__all__ = ["env", "parallel_env", "raw_env"]

# parallel_env: the parallel env (a class; static metadata); raw_env: the unwrapped AEC env;
# env: the AEC env with OrderEnforcingWrapper (PettingZoo's meanings)
parallel_env, raw_env, env = versioned_env("twitter", __name__)
