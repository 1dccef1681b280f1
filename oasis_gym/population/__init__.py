"""User populations: OASIS profile files (Twitter CSV, Reddit JSON) and synthetic ones.

A :class:`Population` is the columnar description of every user a simulation starts with:
profile text, a 24-value hourly activation probability, the initial follow graph, posts
that exist before step 0, an opinion score, an interest bitmask and a core-user flag.
Agent ids are row positions (0-based), exactly as in OASIS, where the row index of the
profile CSV is the agent id that ``following_agentid_list`` refers to.

Loaders raise :class:`ProfileError` naming the file, the 1-based data row (CSV) or the
0-based JSON index, and the field, so a broken profile file is fixed in one look.

Modules: ``topics`` (topic bitmasks, OASIS activity formula), ``model`` (Population),
``parsing`` (cell parsers shared by the loaders), ``twitter_csv``, ``reddit_json``, ``files``
(load by extension, packaged data) and ``synthetic``.
"""

from __future__ import annotations

from .files import data_path, load_profiles, oasis_daily_rhythm
from .model import IdStrings, Population, ProfileError, ProfileStrings
from .reddit_json import load_reddit_json
from .synthetic import synthetic
from .topics import (
    DEFAULT_REDDIT_ACTIVITY,
    DEFAULT_TWITTER_ACTIVITY,
    HOURS,
    OTHER_TOPIC,
    TOPIC_INDEX,
    TOPICS,
    oasis_activity_probability,
    topic_mask,
    topic_names,
)
from .twitter_csv import load_twitter_csv

__all__ = [
    "TOPICS",
    "TOPIC_INDEX",
    "OTHER_TOPIC",
    "HOURS",
    "DEFAULT_TWITTER_ACTIVITY",
    "DEFAULT_REDDIT_ACTIVITY",
    "ProfileError",
    "Population",
    "IdStrings",
    "ProfileStrings",
    "topic_mask",
    "topic_names",
    "oasis_activity_probability",
    "oasis_daily_rhythm",
    "load_twitter_csv",
    "load_reddit_json",
    "load_profiles",
    "synthetic",
    "data_path",
]
