"""How the PettingZoo envs are published: the one `*_v0` factory and the one registry table.

PettingZoo's conventions (1.27), which every `*_v0` module follows:
- `parallel_env(**kwargs)`: the parallel env (here the native one, `SocialMediaEnv` with the
  platform fixed and the env's static `metadata`);
- `raw_env(**kwargs)`: the unwrapped AEC env (`parallel_to_aec_wrapper` over `parallel_env`);
- `env(**kwargs)`: the AEC env with PettingZoo's standard wrapper, `OrderEnforcingWrapper`.

`register_envs()` registers every env id, PettingZoo's and Gymnasium's, with string entry
points (nothing heavy is imported until an env is made). `import oasis_gym` calls it, so
`pettingzoo.make("parallel", "oasis_gym/Twitter-v0", ...)` works once `oasis_gym` is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pettingzoo
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from .gym_registry import register_gym_envs
from .social_env import SocialMediaEnv

# PettingZoo env id -> its module under oasis_gym.envs (which exports env / parallel_env / raw_env)
PETTINGZOO_ENVS = {"oasis_gym/Twitter-v0": "twitter_v0", "oasis_gym/Reddit-v0": "reddit_v0"}


def versioned_env(
    platform: str, module: str
) -> tuple[type[SocialMediaEnv], Callable[..., parallel_to_aec_wrapper], Callable[..., OrderEnforcingWrapper]]:
    """`(parallel_env, raw_env, env)` for the env of `platform` defined in `module` (its
    `__name__`, e.g. "oasis_gym.envs.twitter_v0"; the env's metadata name is its last part).

    `parallel_env` is a `SocialMediaEnv` subclass (so its metadata is a class attribute,
    the same for every instance) named after the module's attribute, so it pickles by reference."""
    name = module.rsplit(".", 1)[-1]

    class parallel_env(SocialMediaEnv):
        __doc__ = f"The {name} parallel env: `SocialMediaEnv` with platform={platform!r}; see {name}."
        metadata = {**SocialMediaEnv.metadata, "name": name}

        def __init__(self, users: Any = 100, **kwargs: Any):
            # `resume` passes the journal's platform: it must be this env's
            if kwargs.setdefault("platform", platform) != platform:
                raise TypeError(f"{name} is the {platform} platform, got platform={kwargs['platform']!r}")
            super().__init__(users, **kwargs)

    def raw_env(**kwargs: Any) -> parallel_to_aec_wrapper:
        """The unwrapped AEC env (PettingZoo's parallel-to-AEC conversion, no wrappers)."""
        return parallel_to_aec_wrapper(parallel_env(**kwargs))

    def env(**kwargs: Any) -> OrderEnforcingWrapper:
        """The AEC env with PettingZoo's standard `OrderEnforcingWrapper`."""
        return OrderEnforcingWrapper(raw_env(**kwargs))

    for fn in (parallel_env, raw_env, env):
        fn.__module__ = module
        fn.__qualname__ = fn.__name__
    return parallel_env, raw_env, env


def register_envs() -> None:
    """Register the PettingZoo ids (parallel and AEC) and the Gymnasium ids. Idempotent."""
    for env_id, module in PETTINGZOO_ENVS.items():
        if env_id not in pettingzoo.parallel_registry:
            pettingzoo.register("parallel", env_id, entry_point=f"oasis_gym.envs.{module}:parallel_env")
        if env_id not in pettingzoo.aec_registry:
            pettingzoo.register("aec", env_id, entry_point=f"oasis_gym.envs.{module}:env")
    register_gym_envs()  # Gymnasium: Recommender-v0, Moderator-v0 (their table lives beside their base class)
