"""oasis-gym: an OASIS-style social media simulator as a PettingZoo parallel environment."""

from __future__ import annotations

__version__ = "0.1.0"


def _register() -> None:
    """Register the envs with PettingZoo's and Gymnasium's registries (string entry points)."""
    import pettingzoo

    for name, module in (("Twitter-v0", "twitter_v0"), ("Reddit-v0", "reddit_v0")):
        env_id = f"oasis_gym/{name}"
        if env_id not in pettingzoo.parallel_registry:
            pettingzoo.register("parallel", env_id, entry_point=f"oasis_gym.envs.{module}:parallel_env")
            pettingzoo.register("aec", env_id, entry_point=f"oasis_gym.envs.{module}:env")
    from .envs.gym_registry import register_gym_envs  # Gymnasium: Recommender-v0, Moderator-v0

    register_gym_envs()


_register()
