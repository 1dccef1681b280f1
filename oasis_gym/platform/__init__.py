"""The social platform: in-memory columnar state, batched actions, SQLite journal."""

from .journal import Journal, JournalError, load_platform
from .loading import load_db
from .platform import (
    DOWNRANKED,
    LABELLED,
    MISINFO_LABEL,
    ORIGINAL,
    QUOTE,
    REMOVED,
    REPOST,
    TRUE_LABEL,
    UNKNOWN_LABEL,
    VISIBLE,
    ActionBatch,
    Platform,
    PlatformConfig,
)

__all__ = [
    "ActionBatch",
    "Journal",
    "JournalError",
    "Platform",
    "PlatformConfig",
    "load_platform",
    "load_db",
    "ORIGINAL",
    "REPOST",
    "QUOTE",
    "VISIBLE",
    "LABELLED",
    "DOWNRANKED",
    "REMOVED",
    "UNKNOWN_LABEL",
    "TRUE_LABEL",
    "MISINFO_LABEL",
]
