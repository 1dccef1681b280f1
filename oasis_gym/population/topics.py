"""Interest topics (the bitmask vocabulary), the hour count and OASIS' activity formula."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

HOURS = 24

# Interest topics. The first ten are the topic_category values of OASIS' all_topics.csv
# (Twitter15/16 cascades), the next five the interested_topics of OASIS' Reddit user
# generator, then common platform topics. "Other" is the catch-all bit for any name not in
# this list (the raw names stay in Population.extra). Fixed order: bit i is TOPICS[i].
TOPICS: tuple[str, ...] = (
    "Politics",
    "Entertainment",
    "Terrorism & War",
    "Science & Technology",
    "Business",
    "Urban Legends",
    "Health",
    "Natural Disasters",
    "Education",
    "Economics",
    "Information Technology",
    "Culture & Society",
    "General News",
    "Fun",
    "Technology",
    "Science",
    "Sports",
    "Finance",
    "Environment",
    "Climate",
    "Religion",
    "Crime",
    "Law",
    "Music",
    "Movies",
    "Gaming",
    "Art",
    "Books",
    "Food",
    "Travel",
    "Fashion",
    "Lifestyle",
    "Parenting",
    "Pets",
    "Celebrities",
    "Memes",
    "History",
    "Philosophy",
    "Psychology",
    "Relationships",
    "Cryptocurrency",
    "Space",
    "Fitness",
    "Career",
    "Marketing",
    "Media",
    "Other",
)
assert len(TOPICS) <= 64 and len(set(TOPICS)) == len(TOPICS)
OTHER_TOPIC = "Other"
TOPIC_INDEX: dict[str, int] = {t: i for i, t in enumerate(TOPICS)}
_TOPIC_LOOKUP: dict[str, int] = {t.lower(): i for i, t in enumerate(TOPICS)}
_TOPIC_LOOKUP.update(
    {
        "others": TOPIC_INDEX["Other"],
        "it": TOPIC_INDEX["Information Technology"],
        "it (information technology)": TOPIC_INDEX["Information Technology"],
        "science and technology": TOPIC_INDEX["Science & Technology"],
        "culture and society": TOPIC_INDEX["Culture & Society"],
        "terrorism and war": TOPIC_INDEX["Terrorism & War"],
        "news": TOPIC_INDEX["General News"],
        "tech": TOPIC_INDEX["Technology"],
    }
)

# Activation probability per 3-minute step when a file carries no activity information.
# Twitter: current OASIS activates every agent it is handed at each env.step (its examples
# pass LLMAction() for all agents), i.e. probability 1. Reddit: OASIS' Reddit scripts
# activate each agent with ``activate_prob`` whose default is 0.1.
DEFAULT_TWITTER_ACTIVITY = 1.0
DEFAULT_REDDIT_ACTIVITY = 0.1


# --------------------------------------------------------------------------- topics


def topic_mask(names: Sequence[str]) -> int:
    """Bitmask of topic names (case-insensitive, common aliases); unknown names set Other."""
    mask = 0
    for name in names:
        mask |= 1 << _TOPIC_LOOKUP.get(str(name).strip().lower(), TOPIC_INDEX[OTHER_TOPIC])
    return mask


@functools.lru_cache(maxsize=1 << 16)
def _topics_text(mask: int) -> str:
    """Comma-joined topic names of a mask (cached: a million users share few masks)."""
    return ", ".join(topic_names(mask)) or "nothing in particular"


def topic_names(mask: int) -> list[str]:
    """The TOPICS whose bits are set in ``mask``, in TOPICS order."""
    mask = int(mask) & ((1 << len(TOPICS)) - 1)
    names = []
    while mask:  # lowest set bit first: TOPICS order, one step per set bit
        low = mask & -mask
        names.append(TOPICS[low.bit_length() - 1])
        mask ^= low
    return names


# --------------------------------------------------------------------------- activity


def oasis_activity_probability(freq: np.ndarray) -> np.ndarray:
    """OASIS' conversion of ``activity_level_frequency`` counts to activation probabilities.

    Formula (camel-ai/oasis ``oasis/social_agent/agents_generator.py``, ``generate_agents``
    before the env API rewrite; the Twitter scripts then activate an agent in a 3-minute
    step when ``random() < active_threshold[int(hour % 24)]``)::

        p = freq / max(freq over ALL users and hours of the file)
        p[p < 0.6] += 0.1          # "make sure probability is not too small"
        p = round(p, 2)

    The normalisation is over the whole population, not per user, so relative activity
    between users survives. One deviation: OASIS divides by zero when every count is 0;
    here that case gives p = 0 + 0.1 everywhere (what the formula yields for any zero
    count). Input (n, 24) non-negative; output (n, 24) float32 in [0.1, 1].
    """
    freq = np.asarray(freq, dtype=np.float64)
    top = float(freq.max()) if freq.size else 0.0
    p = freq / top if top > 0 else np.zeros_like(freq)
    p[p < 0.6] += 0.1
    return np.round(p, 2).astype(np.float32)
