"""The fact-check service: one home for both paths (issue 51, plan rows 2 and 3).

A moderator sends posts to fact-checkers, at most `budget` a step (`select_checks`); a check's
verdict comes back `delay` steps after it was sent (`checks_due`) and is wrong with some
probability, decided by a uniform draw the caller makes (`verdicts`, `v0_verdicts`); one sign
for a verdict on every path (`VERDICT_MISINFO` = +1, the label's sign, `verdict`).

Who calls it, with which parameters and draws:
- the fast path's moderator task (`batched/moderation.apply`, Moderator-v1 and -v2): budget and
  accuracy per tier (`Dynamics.fact_check_budget`, `fact_check_accuracy`), requests in queue
  order, the verdict stored at once and shown in the next observation, draws from `model/rng`
  keyed by (episode, step, post), under OASIS's rules (Moderator-v2) by (episode, post) only
  (`batched/moderation.check_draws`: a re-check gives the same verdict, as on the platform);
- the platform's `agents/fact_check.FactChecker` (Moderator-v0): budget 2, delay 2, error 0.1,
  requests in view order (or the most reported first), one draw per (episode seed, post) from
  its own generator, so a post checked twice would get the same verdict.

The two paths draw right and wrong by different rules (`verdicts`: right where u < accuracy;
`v0_verdicts`: wrong where u < error). With accuracy = 1 - error both are a verdict right with
that probability, but not the same bits for the same u, so they stay two named rules (Moderator-v2
keys its draw as v0 does, by episode and post, but keeps the tasks' rule).
"""

from __future__ import annotations

import numpy as np

# a fact-check's verdict: what the checkers found the post to be (0: no verdict yet)
VERDICT_MISINFO, VERDICT_TRUE, NO_VERDICT = 1, -1, 0


def verdict(misinfo, right) -> np.ndarray:
    """The verdicts on posts whose truth is `misinfo` (bool) when each check is `right` (bool):
    VERDICT_MISINFO where the checkers call it misinformation, else VERDICT_TRUE."""
    return np.where(np.asarray(misinfo) == np.asarray(right), VERDICT_MISINFO, VERDICT_TRUE)


def verdicts(misinfo, u, accuracy: float) -> np.ndarray:
    """The tasks' verdicts: right where the uniform draw `u` < `accuracy` (Moderator-v1)."""
    return verdict(misinfo, np.asarray(u) < accuracy)


def v0_verdicts(misinfo, u, error: float) -> np.ndarray:
    """Moderator-v0's verdicts: wrong where the uniform draw `u` < `error` (`FactChecker`)."""
    return verdict(misinfo, ~(np.asarray(u) < error))


def select_checks(requested, checked, budget: int) -> np.ndarray:
    """Which requests (..., Q) bool go to the checkers this step: those not `checked` before,
    the first `budget` of them along the last axis (the caller orders the requests)."""
    want = np.asarray(requested, bool) & ~np.asarray(checked, bool)
    return want & (np.cumsum(want, axis=-1) <= budget)


def checks_due(sent_step, step, delay: int) -> np.ndarray:
    """Whether checks sent at `sent_step` have their verdict back at `step` (`delay` steps on)."""
    return np.asarray(sent_step) + delay <= step
