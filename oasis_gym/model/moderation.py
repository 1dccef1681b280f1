"""Moderation's vocabulary: one table of moderator codes and one sign of a fact-check verdict,
for both paths (issue 51).

Before this module the fast path's code 1 meant "fact-check" and the platform moderator's
code 1 meant "label"; a verdict of +1 meant "true" on one path and "misinformation" on the
other. Now a code is an index of `CODES` everywhere inside the simulator. An env's action
space may order its codes its own way (Moderator-v0's `moderator_0` does, for its published
results); it then translates to these codes in one array (`agents/moderator.ACTION_CODES`).
Moderator-v1's action space is the first four codes as they are.
"""

from __future__ import annotations

import numpy as np

CODES = ("none", "fact_check", "remove", "remove_and_suspend", "label", "downrank")
NONE, FACT_CHECK, REMOVE, REMOVE_AND_SUSPEND, LABEL, DOWNRANK = range(len(CODES))

# a fact-check's verdict: what the checkers found the post to be (0: no verdict yet)
VERDICT_MISINFO, VERDICT_TRUE, NO_VERDICT = 1, -1, 0


def verdict(misinfo, right) -> np.ndarray:
    """The verdicts on posts whose truth is `misinfo` (bool) when each check is `right` (bool):
    VERDICT_MISINFO where the checkers call it misinformation, else VERDICT_TRUE."""
    return np.where(np.asarray(misinfo) == np.asarray(right), VERDICT_MISINFO, VERDICT_TRUE)
