"""The fast path's glue to the model's moderation (`model/moderation.py`, `model/fact_check.py`).

Moderator-v1 on the ring of K simulations: `queue` is the model's priority queue over the
state's posts, `features` gathers each queued post's columns for the model's
`QUEUE_FEATURES`, and `apply` carries out the moderator's codes: fact-checks within the tier's
budget, in slot order (the verdict is right with `fact_check_accuracy`, stored at once and
shown from the next step; `check_draws`), removals, suspensions (every post of a suspended account leaves the
platform) and their costs (a wrongly moderated author is chilled: posts `chill_factor` as
often, loses `chill_satisfaction`; suspending a user who posts no misinformation drives them
away for good).
"""

from __future__ import annotations

import numpy as np

from ..model import rng
from ..model.fact_check import select_checks, verdicts
from ..model.moderation import (
    FACT_CHECK,
    NONE,
    chill,
    moderation_effects,
    priority_queue,
    queue_features,
    shown_verdict_sign,
)
from .state import S_CHECK, State

NO_STEP = -1  # the step part of a draw that does not depend on the step


def queue(state: State) -> np.ndarray:
    """Post ids (K, QUEUE) of the review queue, highest priority first; -1 where empty."""
    age = state.t[:, None] - state.created
    live = (state.post_id >= 0) & ~state.removed
    return priority_queue(state.post_id, live, age, state.likes, state.shares, state.reports)


# the queued posts' own columns, passed to the model under their names
_POST_COLUMNS = ("likes", "shares", "reports", "step_reports", "arousal_score", "stance", "frequent_reports",
                 "impressions", "verdict")  # fmt: skip


def features(state: State, ids: np.ndarray) -> np.ndarray:
    """QUEUE_FEATURES of the queue `ids` (K, QUEUE): (K, QUEUE, 14) float32, zeros where empty."""
    rows, slots = np.arange(state.k)[:, None], state.slot(ids)
    author = state.author[rows, slots]
    return queue_features(
        ids >= 0,
        age=state.t[:, None] - state.created[rows, slots],
        author_fans=state.fans[rows, author],
        account_age=state.t[:, None] - state.account_start[rows, author],
        author_moderated=state.moderated[rows, author],
        verdict_sign=shown_verdict_sign(state.dyn),
        **{name: getattr(state, name)[rows, slots] for name in _POST_COLUMNS},
    )


def check_draws(state: State, ids: np.ndarray) -> np.ndarray:
    """The uniforms (K, Q) that decide fact-checks of posts `ids` (K, Q) now: keyed by (episode,
    step, post) (Moderator-v1), under OASIS's rules by (episode, post) only, so a verdict is a fact
    about the post: checked again at any step it comes out the same (Moderator-v2)."""
    if state.dyn.oasis_rules:  # the step part fixed at -1, a step that never comes: no other draw's parts
        return rng.uniform(state.key[:, None], NO_STEP, S_CHECK, ids)
    return rng.uniform(state.key[:, None], state.t[:, None], S_CHECK, ids)


def apply(state: State, ids: np.ndarray, codes: np.ndarray) -> dict[str, np.ndarray]:
    """Carry out the moderator's codes (K, QUEUE) on the queue `ids` it saw; per-simulation
    counts of what was done, split by the (hidden) truth."""
    dyn, rows = state.dyn, np.arange(state.k)[:, None]
    slots = state.slot(ids)
    codes = np.where(state.live(ids, rows), codes, NONE)
    truth = state.misinfo[rows, slots]
    author = state.author[rows, slots]
    check = select_checks(codes == FACT_CHECK, state.checked[rows, slots], dyn.fact_check_budget)
    found = verdicts(truth, check_draws(state, ids), dyn.fact_check_accuracy)
    kc, jc = np.nonzero(check)
    state.checked[kc, slots[kc, jc]] = True
    state.verdict[kc, slots[kc, jc]] = found[kc, jc]
    done = moderation_effects(codes, truth, author, state.suspended_at, state.misinfo_account)
    remove, suspended = done["removed"], done["suspended"]
    kr, jr = np.nonzero(remove)
    state.removed[kr, slots[kr, jr]] = True
    kw, jw = np.nonzero(done["wrong"])
    aw = author[kw, jw]
    state.chill[kw, aw], state.satisfaction[kw, aw] = chill(
        state.chill[kw, aw], state.satisfaction[kw, aw], dyn.chill_factor, dyn.chill_satisfaction
    )
    state.moderated[kr, author[kr, jr]] += 1
    state.suspended_at = np.where(suspended, state.t[:, None], state.suspended_at)
    if suspended.any():
        state.removed |= (state.post_id >= 0) & suspended[rows, state.author]
    return {
        "fact_checks": check.sum(1),
        "removed_misinfo": (remove & truth).sum(1),
        "removed_true": done["wrong"].sum(1),
        "suspended_misinfo": (suspended & state.misinfo_account).sum(1),
        "suspended_true": done["innocent"].sum(1),
    }
