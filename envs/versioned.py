"""The one `*_v0` factory: what `twitter_v0` and `reddit_v0` export.

PettingZoo's conventions (1.27), which every `*_v0` module follows:
- `parallel_env(**kwargs)`: the parallel env (here the native one, `SocialMediaEnv` with the
  platform fixed and the env's static `metadata`);
- `raw_env(**kwargs)`: the unwrapped AEC env (`parallel_to_aec_wrapper` over `parallel_env`);
- `env(**kwargs)`: the AEC env with PettingZoo's standard wrapper, `OrderEnforcingWrapper`.

The ids (`pettingzoo.make("parallel", "oasis_gym/Twitter-v0", ...)`) are registered in one
place, `oasis_gym/__init__.py`, so they are known once `oasis_gym` is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from .social_env import SocialMediaEnv


def versioned_env(
    platform: str, module: str
) -> tuple[type[SocialMediaEnv], Callable[..., parallel_to_aec_wrapper], Callable[..., OrderEnforcingWrapper]]:
    """`(parallel_env, raw_env, env)` for the env of `platform` defined in `module` (its
    `__name__`, e.g. "oasis_gym.envs.twitter_v0"; the env's metadata name is its last part).

    `parallel_env` is a `SocialMediaEnv` subclass (so its metadata is a class attribute,
    the same for every instance) named after the module's attribute, so it pickles by reference."""
    name, fixed = module.rsplit(".", 1)[-1], platform

    class parallel_env(SocialMediaEnv):
        __doc__ = f"The {name} parallel env: `SocialMediaEnv` with platform={platform!r}; see {name}."
        metadata = {**SocialMediaEnv.metadata, "name": name}

        def __init__(self, users: Any = 100, *, population_seed: int = 0, platform: str = platform, **kwargs: Any):
            # `resume` passes the journal's platform: it must be this env's
            if platform != fixed:
                raise TypeError(f"{name} is the {fixed} platform, got platform={platform!r}")
            super().__init__(users, platform=platform, population_seed=population_seed, **kwargs)

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
