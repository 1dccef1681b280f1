"""Reddit-v0: a Reddit-like platform where every user is an agent.

Same agents, spaces, rewards and arguments as `twitter_v0` (see its docstring) with
Reddit's defaults:
- recommender "reddit" (hot score: log10(max(|u - d|, 1)) + sign(u - d) * t / 45000);
- OASIS's Reddit action set: like_post, dislike_post, create_post, create_comment,
  like_comment, dislike_comment, search_posts, search_user, trend, refresh, do_nothing,
  follow, mute.

Make it with `from oasis_gym.envs import reddit_v0; reddit_v0.parallel_env(users=...)` or
`pettingzoo.make("parallel", "oasis_gym/Reddit-v0", users=...)` once `import oasis_gym` has
registered the ids. `raw_env` is the unwrapped AEC env, `env` the AEC env with `OrderEnforcingWrapper`.

## Version history
- v0: initial release.
"""

from __future__ import annotations

from .versioned import versioned_env

__all__ = ["env", "parallel_env", "raw_env"]

# parallel_env: the parallel env (a class; static metadata); raw_env: the unwrapped AEC env;
# env: the AEC env with OrderEnforcingWrapper (PettingZoo's meanings)
parallel_env, raw_env, env = versioned_env("reddit", __name__)
