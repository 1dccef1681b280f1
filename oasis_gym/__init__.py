"""oasis-gym: an OASIS-style social media simulator as a PettingZoo parallel environment."""

from __future__ import annotations

__version__ = "0.1.0"


def _register() -> None:
    """Register the envs with PettingZoo's and Gymnasium's registries (one table, in
    `oasis_gym.envs.registration`; string entry points)."""
    from .envs.registration import register_envs

    register_envs()


_register()
