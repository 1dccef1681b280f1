"""Platform rules (`PlatformConfig`) and the values its columns hold: moderation states,
fact-check labels, simulated time. (The post kinds ORIGINAL / REPOST / QUOTE are in
`kinds.py`.)"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass

from ..actions import ALL_ACTIONS

# Moderation states (`Platform.p_status`) and their names in the journal's moderation table.
VISIBLE, LABELLED, DOWNRANKED, REMOVED = 0, 1, 2, 3
MODERATION_NAMES = ("none", "label", "downrank", "remove")
# Fact-check labels (`Platform.p_label`).
UNKNOWN_LABEL, TRUE_LABEL, MISINFO_LABEL = -1, 0, 1

EPOCH = dt.datetime(2026, 1, 1)  # simulated time 0 (minute offsets are added to it)
# the minute offsets a date can show: from the year 1 to the year 9999
MINUTE_RANGE = (
    -int((EPOCH - dt.datetime.min).total_seconds() // 60),
    int((dt.datetime.max - EPOCH).total_seconds() // 60),
)


@dataclass
class PlatformConfig:
    """Platform rules. `available_actions` is the action set agents may use."""

    name: str = "twitter"
    available_actions: tuple[int, ...] = tuple(int(a) for a in ALL_ACTIONS)
    allow_self_rating: bool = True
    max_text_length: int = 5000
    trend_window_minutes: int = 24 * 60
    search_limit: int = 10
    search_scan_limit: int = 200_000  # newest posts a text search scans
    # False (OASIS): a quote of a quote points at (and is counted on) the quoted post's
    # root; True: at the quote itself (nested quote chains)
    nested_quotes: bool = False


@functools.lru_cache(maxsize=4096)
def datetime_text(minute: int) -> str:
    """Simulated wall time of a minute offset from `EPOCH`, as OASIS's DATETIME text."""
    return (EPOCH + dt.timedelta(minutes=minute)).strftime("%Y-%m-%d %H:%M:%S")
