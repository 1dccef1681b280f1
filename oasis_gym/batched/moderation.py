"""The moderator's side of the batched engine: the review queue, its public features, actions.

Each step the queue holds the `QUEUE` live posts at most `MAX_AGE` steps old with the
highest priority log(1 + likes + shares) + 2 log(1 + reports) - 0.3 age (what a trust and
safety team reviews first). Per queued post the moderator sees only `QUEUE_FEATURES`:
public counts, the author's account age and record, the arousal classifier's score, how
many of its reports came from frequent reporters, and the verdict of a fact-check if one
was made (no label). Actions per slot: 0 none, 1 fact-check (at most `fact_check_budget`
a step, in slot order; the verdict is right with `fact_check_accuracy` and shows from the
next step), 2 remove the post, 3 remove it and suspend its author (every post of a
suspended account leaves the platform). Moderating a true post chills its author (posts
`chill_factor` as often, loses `chill_satisfaction`); suspending a user who posts no
misinformation drives them away for good.
"""

from __future__ import annotations

import numpy as np

from ..model import rng
from ..model.moderation import CODES, FACT_CHECK, NONE, REMOVE, REMOVE_AND_SUSPEND, verdict
from .state import S_CHECK, State

QUEUE = 16
MAX_AGE = 6
ACTIONS = CODES[:4]  # Moderator-v1's action codes: the model's first four (model/moderation.py)
QUEUE_FEATURES = (
    "age",  # steps since posted / MAX_AGE
    "log_likes",
    "log_shares",
    "log_reports",
    "log_reports_this_step",
    "log_author_fans",
    "log_account_age",  # log(1 + steps since the account was created, 0 for the original ones' start)
    "author_moderated",  # earlier removals of the author's posts this episode
    "arousal",  # the classifier's score
    "abs_stance",
    "frequent_reporter_share",  # share of its reports by users with >= 3 earlier reports
    "like_rate",
    "fact_check",  # +1 found true, -1 found misinformation, 0 not checked (minus the model's verdict)
    "filled",
)


def queue(state: State) -> np.ndarray:
    """Post ids (K, QUEUE) of the review queue, highest priority first; -1 where empty."""
    age = state.t[:, None] - state.created
    live = (state.post_id >= 0) & ~state.removed & (age <= MAX_AGE)
    priority = np.log1p(state.likes + state.shares) + 2 * np.log1p(state.reports) - 0.3 * age
    priority = np.where(live, priority, -np.inf)
    m = min(QUEUE, state.p)
    top = np.argpartition(-priority, m - 1, axis=1)[:, :m]
    top_p = np.take_along_axis(priority, top, 1)
    order = np.lexsort((np.take_along_axis(state.post_id, top, 1), -top_p), axis=1)
    top = np.take_along_axis(top, order, 1)
    ids = np.take_along_axis(state.post_id, top, 1)
    return np.where(np.isfinite(np.take_along_axis(top_p, order, 1)), ids, -1)


def queue_features(state: State, ids: np.ndarray) -> np.ndarray:
    """QUEUE_FEATURES of the queue `ids` (K, QUEUE): (K, QUEUE, 14) float32, zeros where empty."""
    rows, slots = np.arange(state.k)[:, None], state.slot(ids)
    filled = ids >= 0
    author = state.author[rows, slots]
    reports = state.reports[rows, slots]
    x = np.zeros((*ids.shape, len(QUEUE_FEATURES)), np.float32)
    x[..., 0] = (state.t[:, None] - state.created[rows, slots]) / MAX_AGE
    x[..., 1] = np.log1p(state.likes[rows, slots])
    x[..., 2] = np.log1p(state.shares[rows, slots])
    x[..., 3] = np.log1p(reports)
    x[..., 4] = np.log1p(state.step_reports[rows, slots])
    x[..., 5] = np.log1p(state.fans[rows, author])
    x[..., 6] = np.log1p(state.t[:, None] - state.account_start[rows, author])
    x[..., 7] = state.moderated[rows, author]
    x[..., 8] = state.arousal_score[rows, slots]
    x[..., 9] = np.abs(state.stance[rows, slots])
    x[..., 10] = state.frequent_reports[rows, slots] / np.maximum(reports, 1)
    x[..., 11] = (state.likes[rows, slots] + state.shares[rows, slots]) / (state.impressions[rows, slots] + 5)
    x[..., 12] = -state.verdict[rows, slots]  # Moderator-v1 shows +1 for "found true" (its published encoding)
    x[..., 13] = 1.0
    return np.where(filled[..., None], x, 0.0).astype(np.float32)


def apply(state: State, ids: np.ndarray, codes: np.ndarray) -> dict[str, np.ndarray]:
    """Carry out the moderator's codes (K, QUEUE) on the queue `ids` it saw; per-simulation
    counts of what was done, split by the (hidden) truth."""
    dyn, rows = state.dyn, np.arange(state.k)[:, None]
    slots = state.slot(ids)
    ok = state.live(ids, rows)
    codes = np.where(ok, codes, NONE)
    truth = state.misinfo[rows, slots]
    author = state.author[rows, slots]
    # fact-checks within the budget, in slot order
    check = (codes == FACT_CHECK) & ~state.checked[rows, slots]
    check &= np.cumsum(check, axis=1) <= dyn.fact_check_budget
    right = rng.uniform(state.key[:, None], state.t[:, None], S_CHECK, ids) < dyn.fact_check_accuracy
    found = verdict(truth, right)
    kc, jc = np.nonzero(check)
    state.checked[kc, slots[kc, jc]] = True
    state.verdict[kc, slots[kc, jc]] = found[kc, jc]
    remove = (codes == REMOVE) | (codes == REMOVE_AND_SUSPEND)
    kr, jr = np.nonzero(remove)
    state.removed[kr, slots[kr, jr]] = True
    wrong = remove & ~truth
    kw, jw = np.nonzero(wrong)
    state.chill[kw, author[kw, jw]] *= dyn.chill_factor
    state.satisfaction[kw, author[kw, jw]] = np.maximum(
        state.satisfaction[kw, author[kw, jw]] - dyn.chill_satisfaction, 0
    )
    ks, js = np.nonzero(codes == REMOVE_AND_SUSPEND)
    suspended_users = np.zeros((state.k, state.n), bool)
    suspended_users[ks, author[ks, js]] = True
    suspended_users &= state.suspended_at < 0
    state.moderated[kr, author[kr, jr]] += 1
    innocent = suspended_users & ~state.misinfo_account  # suspended for good: they never return
    state.suspended_at = np.where(suspended_users, state.t[:, None], state.suspended_at)
    if suspended_users.any():
        state.removed |= (state.post_id >= 0) & suspended_users[rows, state.author]
    return {
        "fact_checks": check.sum(1),
        "removed_misinfo": (remove & truth).sum(1),
        "removed_true": wrong.sum(1),
        "suspended_misinfo": (suspended_users & state.misinfo_account).sum(1),
        "suspended_true": innocent.sum(1),
    }
