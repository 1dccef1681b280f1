"""oasis-gym: an OASIS-style social media simulator as a PettingZoo parallel environment."""

from __future__ import annotations

__version__ = "0.1.0"


# The one registry table. PettingZoo id -> module under oasis_gym.envs (exporting PettingZoo's
# parallel_env / raw_env / env); the Gymnasium ids are registered by `register_gym_envs`.
PETTINGZOO_ENVS = {"oasis_gym/Twitter-v0": "twitter_v0", "oasis_gym/Reddit-v0": "reddit_v0"}


def _register() -> None:
    """Register the envs with PettingZoo (parallel: `parallel_env`, AEC: `env`) and Gymnasium,
    with string entry points: nothing is imported until an env is made. Idempotent."""
    import pettingzoo

    for env_id, module in PETTINGZOO_ENVS.items():
        if env_id not in pettingzoo.parallel_registry:
            pettingzoo.register("parallel", env_id, entry_point=f"oasis_gym.envs.{module}:parallel_env")
        if env_id not in pettingzoo.aec_registry:
            pettingzoo.register("aec", env_id, entry_point=f"oasis_gym.envs.{module}:env")
    from .envs.gym_registry import register_gym_envs  # Gymnasium: Recommender-v0, Moderator-v0

    register_gym_envs()


_register()
