"""Reddit-v0: a Reddit-like platform where every user is an agent.

Same agents, spaces, rewards and arguments as `twitter_v0` (see its docstring) with
Reddit's defaults:
- recommender "reddit" (hot score: log10(max(|u - d|, 1)) + sign(u - d) * t / 45000);
- OASIS's Reddit action set: like_post, dislike_post, create_post, create_comment,
  like_comment, dislike_comment, search_posts, search_user, trend, refresh, do_nothing,
  follow, mute.

Make it with `from oasis_gym.envs import reddit_v0; reddit_v0.parallel_env(users=...)` or
`pettingzoo.make("parallel", "oasis_gym/Reddit-v0", users=...)`.

## Version history
- v0: initial release.
"""

from __future__ import annotations

from pettingzoo.utils.conversions import parallel_to_aec

from .social_env import SocialMediaEnv

__all__ = ["env", "parallel_env", "raw_env"]


def raw_env(**kwargs) -> SocialMediaEnv:
    env = SocialMediaEnv(platform="reddit", **kwargs)
    env.metadata = {**env.metadata, "name": "reddit_v0"}
    return env


parallel_env = raw_env


def env(**kwargs):
    """The AEC version (PettingZoo's parallel_to_aec conversion)."""
    return parallel_to_aec(raw_env(**kwargs))
