"""Moderation: one home for both paths (issue 51, plan rows 1 and 4-6).

- The one table of moderator codes (`CODES`). Before it the fast path's code 1 meant
  "fact-check" and the platform moderator's code 1 meant "label". Now a code is an index of
  `CODES` everywhere inside the simulator; Moderator-v1's action space is the first four codes
  as they are (`ACTIONS`), `moderator_0` (Moderator-v0) keeps its published order, translated
  by one array (`V0_CODES`). The verdict's sign is the fact-check service's (`fact_check.py`).
- The review views, two named ones: the tasks' `priority_queue` (the fast path,
  `batched/moderation.queue`) and v0's `velocity_view` (`agents/moderator.ModeratorAgent`).
- Their features: `QUEUE_FEATURES` (`queue_features`, Moderator-v1's observation) and
  `V0_VIEW_FEATURES` (`v0_view_features` with `reporter_evidence`, moderator_0's).
- What moderating does and costs (`moderation_effects`: removed posts, suspended users, wrongly
  removed posts, innocent users suspended; `chill`: a wrongly moderated author posts less and
  is less satisfied): the fast path applies them to its ring (`batched/moderation.apply`);
  Moderator-v0's effects are the platform's own statuses (`pf.moderate`, `pf.suspend`).

Per-post arrays are (K, P) on the fast path and (M,) on the platform; the functions keep the
float type and the order of operations each path had, so both give the bits they gave before.
"""

from __future__ import annotations

import numpy as np

from .fact_check import VERDICT_TRUE

CODES = ("none", "fact_check", "remove", "remove_and_suspend", "label", "downrank")
NONE, FACT_CHECK, REMOVE, REMOVE_AND_SUSPEND, LABEL, DOWNRANK = range(len(CODES))
ACTIONS = CODES[:4]  # Moderator-v1's action codes: the first four
# moderator_0's action values in the order of its published action space (Moderator-v0): value
# a means code V0_CODES[a]; value 5 (a fact-check request) exists only with `check_action`
V0_CODES = np.array([NONE, LABEL, DOWNRANK, REMOVE, REMOVE_AND_SUSPEND, FACT_CHECK], dtype=np.int64)

# the tasks' review queue: the QUEUE live posts at most MAX_AGE steps old of highest priority
QUEUE = 16
MAX_AGE = 6
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
    "fact_check",  # Moderator-v1: +1 found true, -1 misinformation (minus the verdict); v2: the verdict; 0 none
    "filled",
)
# moderator_0's view (Moderator-v0), per post
V0_VIEW_FEATURES = (
    "log_velocity",
    "log_likes",
    "log_shares",
    "reports",
    "log_reports_per_hour",
    "age_hours",
    "log_author_followers",
    "log_author_removed",
    "log_author_flagged",
    "author_suspended",
    "log_author_cleared",
    "reporters_false_report_share",
    "log_reporter_activity",
    "fact_check",
    "fact_check_pending",
    "status",
    "hours_since_reset",
    "filled",
)


def priority_queue(post_id, live, age, likes, shares, reports, size: int = QUEUE, max_age: int = MAX_AGE):
    """The tasks' review queue: post ids (K, size) of the `live` posts (K, P) at most `max_age`
    steps old with the highest priority log(1 + likes + shares) + 2 log(1 + reports) - 0.3 age
    (what a trust and safety team reviews first), highest first, ties lower id; -1 where empty."""
    live = live & (age <= max_age)
    priority = np.log1p(likes + shares) + 2 * np.log1p(reports) - 0.3 * age
    priority = np.where(live, priority, -np.inf)
    m = min(size, post_id.shape[1])
    top = np.argpartition(-priority, m - 1, axis=1)[:, :m]
    top_p = np.take_along_axis(priority, top, 1)
    order = np.lexsort((np.take_along_axis(post_id, top, 1), -top_p), axis=1)
    top = np.take_along_axis(top, order, 1)
    ids = np.take_along_axis(post_id, top, 1)
    return np.where(np.isfinite(np.take_along_axis(top_p, order, 1)), ids, -1)


def velocity(likes, shares, comments, age_minutes) -> np.ndarray:
    """v0's spread velocity: likes + shares + comments per hour of age (at least 3 minutes)."""
    age_h = np.maximum(age_minutes / 60.0, 1.0 / 20)
    return (likes + shares + comments) / age_h


def velocity_view(posts, likes, shares, comments, age_minutes, size: int) -> np.ndarray:
    """v0's view: the `size` fastest spreading of the candidate `posts` (M,) ids (ties newer
    first), padded with -1. The caller picks the candidates (moderator_0: the visible original
    posts of its window)."""
    top = posts[np.lexsort((-posts, -velocity(likes, shares, comments, age_minutes)))[:size]]
    view = np.full(size, -1, dtype=np.int64)
    view[: len(top)] = top
    return view


def queue_features(filled, *, age, likes, shares, reports, step_reports, author_fans, account_age,
                   author_moderated, arousal_score, stance, frequent_reports, impressions, verdict,
                   max_age: int = MAX_AGE, verdict_sign: int = -1) -> np.ndarray:  # fmt: skip
    """QUEUE_FEATURES of the queued posts, from per-slot arrays (K, Q) gathered by the caller
    (`age`, `account_age` in steps, `verdict` the model's sign): (K, Q, 14) float32, zeros
    where not `filled`. The fact-check column shows `verdict_sign` x the verdict: -1, the negated
    verdict (+1 found true), as Moderator-v1 published it; +1, the model's sign (Moderator-v2)."""
    x = np.zeros((*filled.shape, len(QUEUE_FEATURES)), np.float32)
    x[..., 0] = age / max_age
    x[..., 1] = np.log1p(likes)
    x[..., 2] = np.log1p(shares)
    x[..., 3] = np.log1p(reports)
    x[..., 4] = np.log1p(step_reports)
    x[..., 5] = np.log1p(author_fans)
    x[..., 6] = np.log1p(account_age)
    x[..., 7] = author_moderated
    x[..., 8] = arousal_score
    x[..., 9] = np.abs(stance)
    x[..., 10] = frequent_reports / np.maximum(reports, 1)
    x[..., 11] = (likes + shares) / (impressions + 5)
    x[..., 12] = verdict_sign * verdict
    x[..., 13] = 1.0
    return np.where(filled[..., None], x, 0.0).astype(np.float32)


def shown_verdict_sign(dyn) -> int:
    """The sign with which a task tier (`Dynamics`) shows fact-check verdicts in the queue's
    `fact_check` column: -1, negated, as Moderator-v1 published it (+1 found true); +1, the
    model's own (+1 found misinformation) under OASIS's rules (Moderator-v2)."""
    return 1 if dyn.oasis_rules else -1


def reporter_evidence(reporters, reported, verdicts, posts, n_users: int, n_posts: int):
    """Who reported each of `posts` (M,), from the report pairs (`reporters`, `reported`) and
    the fact-check `verdicts` per post (never the label): the share of its reporters who
    reported some *other* post that fact-checks found true (a false-report record), and the
    mean log1p of the number of other posts its reporters reported (how prolific they are).
    Two (M,) float32 arrays, 0 for a post without reports."""
    share = np.zeros(len(posts), np.float32)
    activity = np.zeros(len(posts), np.float32)
    if not len(reporters):
        return share, activity
    u, q = reporters, reported
    false = verdicts[q] == VERDICT_TRUE  # the reported post was fact-checked true
    n_false = np.bincount(u, weights=false, minlength=n_users)
    n_all = np.bincount(u, minlength=n_users)
    slot = np.full(n_posts, -1, np.int64)
    slot[posts] = np.arange(len(posts))
    mine = slot[q] >= 0
    u, s, own_false = u[mine], slot[q[mine]], false[mine]
    k = np.maximum(np.bincount(s, minlength=len(posts)), 1)
    share[:] = np.bincount(s, weights=(n_false[u] - own_false) > 0, minlength=len(posts)) / k
    activity[:] = np.bincount(s, weights=np.log1p(n_all[u] - 1), minlength=len(posts)) / k
    return share, activity


def v0_view_features(filled, *, likes, shares, comments, reports, age_minutes, author_followers, author_removed,
                     author_flagged, author_suspended, author_cleared, reporters_false_share, reporter_activity,
                     verdict, pending, status, minutes_since_reset) -> np.ndarray:  # fmt: skip
    """V0_VIEW_FEATURES of moderator_0's view: (len(filled), 18) float32, the per-post arrays
    (M,) given for the `filled` slots, zeros elsewhere. Heavy-tailed counts are log1p-scaled;
    `verdict` is the model's sign (+1 misinformation)."""
    x = np.zeros((len(filled), len(V0_VIEW_FEATURES)), dtype=np.float32)
    if not filled.any():
        return x
    age_h = age_minutes / 60.0
    n = int(filled.sum())
    x[filled] = np.stack(
        [
            np.log1p(velocity(likes, shares, comments, age_minutes)),
            np.log1p(likes),
            np.log1p(shares),
            reports,
            # reports arrive with exposure: a young post with 2 reports is stronger evidence
            # than an old one with 3 (same age floor as the velocity)
            np.log1p(reports / np.maximum(age_h, 1.0 / 20)),
            age_h,
            np.log1p(author_followers),
            np.log1p(author_removed),
            np.log1p(author_flagged),
            author_suspended,
            np.log1p(author_cleared),
            reporters_false_share,
            reporter_activity,
            verdict,
            pending,
            status,
            np.full(n, minutes_since_reset / 60.0),
            np.ones(n),
        ],
        axis=1,
    )
    return x


def moderation_effects(codes, misinfo, author, suspended_at, misinfo_account) -> dict[str, np.ndarray]:
    """What the codes (K, Q) do to the queued posts (their truth `misinfo` and `author`, (K, Q))
    and their authors (`suspended_at` (K, N), -1 never; `misinfo_account` (K, N)). Masks:
    `removed` (K, Q) (remove, remove_and_suspend), `wrong` (K, Q) (removed but true),
    `suspended` (K, N) (authors newly suspended), `innocent` (K, N) (suspended, yet posting no
    misinformation: on the fast path they never return)."""
    removed = (codes == REMOVE) | (codes == REMOVE_AND_SUSPEND)
    ks, js = np.nonzero(codes == REMOVE_AND_SUSPEND)
    suspended = np.zeros(suspended_at.shape, bool)
    suspended[ks, author[ks, js]] = True
    suspended &= suspended_at < 0
    return {
        "removed": removed,
        "wrong": removed & ~misinfo,
        "suspended": suspended,
        "innocent": suspended & ~misinfo_account,
    }


def chill(rate, satisfaction, factor: float, loss: float):
    """The cost of being moderated wrongly, for the authors concerned: their posting `rate`
    factor times `factor`, their `satisfaction` less `loss` (not below 0). Returns both, new."""
    return rate * factor, np.maximum(satisfaction - loss, 0)
