"""The settings of a simulation, and the check that a journal's saved settings can be resumed."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..actions import ALL_ACTIONS, REDDIT_DEFAULT_ACTIONS, TWITTER_DEFAULT_ACTIONS
from ..errors import ConfigError
from ..platform import JournalError, PlatformConfig


@dataclass
class SimulationConfig:
    """Arguments of a simulation (the env's keyword arguments map onto these)."""

    platform: str = "twitter"
    available_actions: tuple[int, ...] | None = None  # None: the platform's OASIS defaults
    recsys: str = "twitter"
    recsys_params: dict = field(default_factory=dict)
    feed_size: int = 10  # K post slots
    comments_per_post: int = 2  # C comment slots per post slot
    search_size: int = 5  # S user slots from search results
    minutes_per_step: int = 3
    start_hour: int = 8
    activation: str | float = "activity"  # "activity" (24-h vectors) or a flat probability
    max_cycles: int = 50
    db_path: str | None = None  # None: a temp file; ":memory:" allowed
    overwrite: bool = False  # reset may replace an existing journal at db_path
    allow_self_rating: bool = True
    max_text_length: int = 5000
    auto_text: bool = True  # fill missing text of text actions from a template
    log_recs: bool = False  # journal every served feed into `rec`
    # False: the training mode, no SQLite journal at all (nothing recorded, no resume; see
    # sim/no_journal.py); the run itself is the journaled run's, same seed, same steps
    journal: bool = True
    stance_scorer: str | None = "lexicon"  # stance of texts sent without one (None: unknown)
    # which platform agents the envs plug in (oasis_gym.agents.make_platform_agents; the engine
    # itself drives whatever agents it is given), saved with the journal so a resume has them
    recommender_agent: bool = False  # the trainable recommender
    moderator_agent: bool = False  # the trainable moderator
    platform_agent_params: dict = field(default_factory=dict)  # {"recommender": {...}, "moderator": {...}}
    # the order of a step. False: the platform agents' feeds are built at the end of the step
    # before, so a recommender's action ranks the next step's feeds (`Simulation.step`: v0, the
    # PettingZoo envs). True: the split step `begin(platform_actions)` (the agents act, then the
    # active users' feeds are built) / `finish(acts)`: an action ranks the feeds of its own step,
    # as on the fast path (the one-world task envs, whose users are the env's own)
    feeds_after_agents: bool = False
    # "one": only a user's first action of a step counts (OASIS: an agent acts once a turn);
    # "many": every action of an active user counts, in order (a task user's visit: like, repost,
    # report ... of the fast path's users; the platform still refuses a second like of a post)
    actions_per_user: str = "one"


def check_config(cfg: SimulationConfig) -> None:
    """Raise ConfigError (or ValueError) naming the first setting a simulation cannot run with."""
    if cfg.feed_size < 1 or cfg.comments_per_post < 0 or cfg.search_size < 0:
        raise ValueError("feed_size must be >= 1, comments_per_post and search_size >= 0")
    if isinstance(cfg.max_cycles, bool) or not isinstance(cfg.max_cycles, (int, np.integer)) or cfg.max_cycles < 1:
        raise ConfigError(f"max_cycles must be a whole number >= 1, got {cfg.max_cycles!r}")
    act = cfg.activation  # a share above 1 or NaN silently made every user (or none) active
    if act != "activity" and (
        isinstance(act, (bool, str)) or not isinstance(act, (int, float, np.number)) or not 0 <= act <= 1
    ):
        raise ConfigError(f"activation must be 'activity' or a probability in [0, 1], got {act!r}")
    if not cfg.journal and (cfg.db_path not in (None, ":memory:") or cfg.log_recs):
        raise ConfigError("journal=False records nothing: it takes no db_path (a file) and no log_recs")
    if cfg.actions_per_user not in ("one", "many"):
        raise ConfigError(f"actions_per_user must be 'one' or 'many', got {cfg.actions_per_user!r}")
    if not isinstance(cfg.feeds_after_agents, bool):
        raise ConfigError(f"feeds_after_agents must be True or False, got {cfg.feeds_after_agents!r}")


PIPELINE_MIN_USERS = 100_000


def pipelined(n_users: int) -> bool:
    """Whether a run of `n_users` users commits its steps on the journal's writer thread
    (`Journal(pipelined=True)`) rather than in place. The writer thread pays off only where the
    simulation's own work releases the GIL (large numpy arrays): measured 5 % faster steps at
    1M users, equal at 1k-100k, and 10-15 % slower at 100 users, where the writer waits for the
    GIL at each statement and the next step waits for the writer. Decided once per run, so a
    run's failure timing never changes between steps: in place, a failed commit fails its own
    step (rolled back in memory too); on the writer thread, the next step raises."""
    return n_users >= PIPELINE_MIN_USERS


def platform_config(cfg: SimulationConfig) -> PlatformConfig:
    """The platform's settings of a simulation (its actions: the given ones, else the
    platform's OASIS defaults)."""
    if cfg.available_actions is not None:
        actions = tuple(int(a) for a in cfg.available_actions)
    else:
        actions = tuple(
            int(a)
            for a in {"twitter": TWITTER_DEFAULT_ACTIONS, "reddit": REDDIT_DEFAULT_ACTIONS}.get(
                cfg.platform, ALL_ACTIONS
            )
        )
    return PlatformConfig(
        name=cfg.platform,
        available_actions=actions,
        allow_self_rating=cfg.allow_self_rating,
        max_text_length=cfg.max_text_length,
    )


def check_resumable(meta: dict, path) -> dict:
    """`meta` if it holds what `Simulation.resume` needs, else a `JournalError` naming `path`."""
    config = meta.get("config")
    problem = None
    if "step" not in meta:
        problem = "no step was committed"
    elif not isinstance(config, dict) or config.get("platform") not in ("twitter", "reddit"):
        problem = "its config is missing or names an unknown platform"
    elif set(config) - set(SimulationConfig.__dataclass_fields__):
        problem = f"its config has unknown keys {sorted(set(config) - set(SimulationConfig.__dataclass_fields__))}"
    elif (
        not isinstance(meta.get("rng"), list)
        or len(meta["rng"]) != 3
        or not all(isinstance(r, dict) for r in meta["rng"])
    ):
        problem = "its generator states are missing"
    elif not isinstance(meta.get("state", {}), dict) or not isinstance(meta.get("views", []), list):
        problem = "its saved state is damaged"
    else:
        problem = _damaged_values(meta)
    if problem:
        raise JournalError(f"{path}: cannot resume this journal: {problem}")
    return meta


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _finite_numbers(value) -> bool:
    """Whether `value` is a finite number or a non-empty (nested) list of them: a recommender's
    weights (a vector, or one row per user feature: `agents/recommender.py`)."""
    if isinstance(value, list):
        return bool(value) and all(_finite_numbers(v) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _rectangular(value: list) -> bool:
    try:
        np.asarray(value, dtype=np.float64)
    except ValueError:  # rows of different lengths
        return False
    return True


def _damaged_values(meta: dict) -> str | None:
    """What `Simulation.resume` would fail on in meta of the right shape, or None."""
    if not _whole(meta["step"]):
        return f"its step {meta['step']!r} is not a step count"
    for view in meta.get("views", []):
        if not (isinstance(view, list) and len(view) == 3 and _whole(view[0]) and _whole(view[1])) or not (
            isinstance(view[2], list) and all(_whole(i) for i in view[2])
        ):
            return "its pending views are damaged"
    weights = meta.get("recsys_weights")
    if weights is not None and not (isinstance(weights, list) and _finite_numbers(weights) and _rectangular(weights)):
        return "its recommender weights are damaged"
    try:
        for state in meta["rng"]:
            np.random.default_rng().bit_generator.state = state
    except (TypeError, ValueError, KeyError, OverflowError):
        return "its generator states are damaged"
    return None
