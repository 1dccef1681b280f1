"""oasis-gym: an OASIS-style social media simulator as a PettingZoo parallel environment.

`import oasis_gym` registers the envs with PettingZoo and Gymnasium (cheap: only the two
registries are imported; an env's module is imported when the env is made).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"


def load_entry_point(entry_point: str) -> Any:
    """The object an entry point ``"package.module:attr"`` names (imports the module)."""
    module, _, attr = entry_point.partition(":")
    return getattr(import_module(module), attr)


# The command line's first signal handling, by name as the table below names what it registers
# (the core imports no application module): in a process started as the command, a Ctrl-C while
# it loads its modules ends it with one line. Called first, before gymnasium is imported.
COMMAND_START = "oasis_gym.app.interrupts:starting"
load_entry_point(COMMAND_START)()


# The one registration table: names -> entry points ("module:attr"), imported only when used.
# Like Gymnasium's registry, this is how a lower layer uses an implementation from a higher
# one without importing it (docs/ARCHITECTURE.md).
# PettingZoo ids -> module under oasis_gym.envs exporting `parallel_env` / `raw_env` / `env`
PETTINGZOO_ENVS = {
    "oasis_gym/Twitter-v0": "twitter_v0",
    "oasis_gym/Reddit-v0": "reddit_v0",
    "oasis_gym/TaskPlatform-v0": "task_platform_v0",
}
# Gymnasium ids (single platform agent) -> env class
GYMNASIUM_ENVS = {
    "oasis_gym/Recommender-v0": "oasis_gym.envs.recommender_v0:RecommenderEnv",
    "oasis_gym/Moderator-v0": "oasis_gym.envs.moderator_v0:ModeratorEnv",
    "oasis_gym/Recommender-v1": "oasis_gym.envs.recommender_v1:RecommenderEnv",
    "oasis_gym/Recommender-v2": "oasis_gym.envs.recommender_v2:RecommenderEnv",
    "oasis_gym/Recommender-v3": "oasis_gym.envs.recommender_v3:RecommenderEnv",
    "oasis_gym/Recommender-v4": "oasis_gym.envs.recommender_v4:RecommenderEnv",
    "oasis_gym/Moderator-v1": "oasis_gym.envs.moderator_v1:ModeratorEnv",
    "oasis_gym/Moderator-v2": "oasis_gym.envs.moderator_v2:ModeratorEnv",
}
# native vector envs (`gymnasium.make_vec(id, num_envs=K)` steps K episodes in one batched call)
GYMNASIUM_VECTOR_ENVS = {
    "oasis_gym/Recommender-v1": "oasis_gym.envs.recommender_v1:RecommenderVectorEnv",
    "oasis_gym/Recommender-v2": "oasis_gym.envs.recommender_v2:RecommenderVectorEnv",
    "oasis_gym/Recommender-v3": "oasis_gym.envs.recommender_v3:RecommenderVectorEnv",
    "oasis_gym/Recommender-v4": "oasis_gym.envs.recommender_v4:RecommenderVectorEnv",
    "oasis_gym/Moderator-v1": "oasis_gym.envs.moderator_v1:ModeratorVectorEnv",
    "oasis_gym/Moderator-v2": "oasis_gym.envs.moderator_v2:ModeratorVectorEnv",
}
# the registered TimeLimit of the v0 ids: the misinfo_stream scenario's episode length. With a
# longer max_cycles pass gymnasium.make(..., max_cycles=N, max_episode_steps=N). The v1 envs
# end their episodes themselves (`max_steps`) and register no TimeLimit.
GYMNASIUM_MAX_EPISODE_STEPS = 50
# platform-agent scenarios by name (a scenario supplies the env defaults and the users)
SCENARIOS = {
    "misinfo_stream": "oasis_gym.scenarios.misinfo_stream:MisinfoScenario",
    "misinfo_brigading": "oasis_gym.scenarios.misinfo_stream:BrigadingScenario",
}
# the users of a platform-agent env made without a scenario or user policy: plain ABM users
DEFAULT_USER_POLICY = "oasis_gym.policies.abm:abm_users"
# the task users of Recommender-v4 / Moderator-v2 on backend="platform" (the model's responses)
TASK_USER_POLICY = "oasis_gym.policies.task_users:TaskUsers"


def vector_envs(task: str) -> dict[int, str]:
    """A platform-agent task's native vector envs by version: {N: entry point} of the
    registered ``"oasis_gym/{Task}-vN"`` ids in GYMNASIUM_VECTOR_ENVS (task "recommender", ...)."""
    prefix = f"oasis_gym/{task.capitalize()}-v"
    return {int(i[len(prefix) :]): e for i, e in GYMNASIUM_VECTOR_ENVS.items() if i.startswith(prefix)}


def _register() -> None:
    """Register the envs with PettingZoo (parallel: `parallel_env`, AEC: `env`) and Gymnasium,
    with string entry points: nothing is imported until an env is made. Idempotent."""
    import gymnasium
    import pettingzoo

    for env_id, module in PETTINGZOO_ENVS.items():
        if env_id not in pettingzoo.parallel_registry:
            pettingzoo.register("parallel", env_id, entry_point=f"oasis_gym.envs.{module}:parallel_env")
        if env_id not in pettingzoo.aec_registry:
            pettingzoo.register("aec", env_id, entry_point=f"oasis_gym.envs.{module}:env")
    for env_id, entry_point in GYMNASIUM_ENVS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point=entry_point,
                vector_entry_point=GYMNASIUM_VECTOR_ENVS.get(env_id),
                disable_env_checker=False,
                max_episode_steps=None if env_id in GYMNASIUM_VECTOR_ENVS else GYMNASIUM_MAX_EPISODE_STEPS,
            )


_register()
