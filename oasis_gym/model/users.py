"""How users respond to what they are shown, and what it does to them: one home for both paths (issue 51).

The mechanism, per served post (a user of kind c, post quality q, arousal r, stance,
misinformation m): P(engage) = sigmoid(`engage_logit`: base + similarity_w * sim + quality_w[c]
* q + arousal_w[c] * r + alignment_w * opinion * stance - position_w * rank [+ in_network_w[c]
* in_network + recency_w[c] * recency in v2]); a share `share_given_engage` of engagements are
reposts; a user who does not engage reports with `report_probability` (`respond`). After the
visit the user's satisfaction moves towards the value of the session (`session_value`,
`satisfaction`: quality and engagement raise it; arousal and misinformation lower it, by kind),
a user left below `churn_below` may leave (`churn`), and comes back with `return_prob` a step
(`visits`, whose law is `visit_probability`: activity x (0.4 + 1.2 satisfaction), capped).
The ranking service's history summaries (engagement rate, arousal affinity, visit rate; in v2
the in-network and recency contrasts) are moving averages (`history_emas`, `contrast`,
`visit_rate_ema`). How engaged stances move opinions is `model/opinions.py`'s `pull_push`.

Every random input is an argument (`u_*`: uniforms in [0, 1)); the constants are a tier's
`Dynamics` (`model/tiers.py`). Called by the fast path (`oasis_gym.batched.users`, which reads
and writes its `State`, and `batched/engine.py`'s visits) and, for reports, by the platform's
`policies/reporting.py` (`ReportingUsers`, floor 0).
"""

from __future__ import annotations

import numpy as np

from .tiers import Dynamics

VISIT_CAP = 0.9  # no user visits with a probability above this
RETURN_SATISFACTION = 0.5  # a churned user who comes back starts again from here
# the history summaries: old value x 0.7 + this visit's x 0.3; the visit rate 0.9 / 0.1 a step
HISTORY_KEEP, HISTORY_NEW = 0.7, 0.3
VISIT_KEEP, VISIT_NEW = 0.9, 0.1


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function 1 / (1 + exp(-x)), in the dtype of `x`."""
    return 1.0 / (1.0 + np.exp(-x))


def engage_logit(dyn: Dynamics, kind, opinion, similarity, quality, arousal, stance, in_network, recency) -> np.ndarray:
    """(M, S) logits of engagement of M visitors with their S served posts, in rank order.

    `kind`, `opinion` (M,): the visitors'; `similarity`, `quality`, `arousal` (the true
    arousal), `stance`, `in_network`, `recency` (M, S): the served posts' (float32 on the fast
    path). The v2 tastes (in-network, recency) count only where the tier gives them a weight.
    """
    kind = np.asarray(kind)[:, None]
    logit = (
        dyn.engage_base
        + dyn.engage_similarity * similarity
        + np.asarray(dyn.engage_quality, np.float32)[kind] * quality
        + np.asarray(dyn.engage_arousal, np.float32)[kind] * arousal
        + dyn.engage_alignment * opinion[:, None] * stance
        - dyn.engage_position * np.arange(similarity.shape[1], dtype=np.float32)
    )
    for w, x in ((dyn.engage_in_network, in_network), (dyn.engage_recency, recency)):
        if any(w):  # v2 kinds' tastes (skipped at 0: v1's numbers stay bit-identical)
            logit = logit + np.asarray(w, np.float32)[kind] * x
    return logit


def respond(p_engage, p_report, u_engage, u_share, u_report, valid, share_given_engage: float,
            engaged_before=None, reported_before=None):  # fmt: skip
    """Engaged, reposted and reported flags (M, S) of served posts (`valid`): engaged where
    `u_engage < p_engage`, a repost of an engagement where `u_share < share_given_engage`, a
    report of a post not engaged where `u_report < p_report`.

    OASIS's rules (`Dynamics.oasis_rules`): `engaged_before(i, j)` and `reported_before(i, j)`
    say for cells (i, j) whether the visitor liked or reposted, or reported, that post earlier
    in the episode (asked only about the cells drawn to engage or report): such a post is not
    engaged again (a like or a repost is one row), and a post engaged or reported before is not
    reported. None (v1-v3): no rule, the flags as drawn."""
    engaged = valid & (u_engage < p_engage)
    if engaged_before is not None:
        i, j = np.nonzero(engaged)
        again = engaged_before(i, j)
        engaged[i[again], j[again]] = False
    shared = engaged & (u_share < share_given_engage)
    reported = valid & ~engaged & (u_report < p_report)
    if engaged_before is not None:
        i, j = np.nonzero(reported)
        again = engaged_before(i, j) | reported_before(i, j)
        reported[i[again], j[again]] = False
    return engaged, shared, reported


def report_probability(misinfo, opinion, stance, misinfo_rate: float, true_rate: float, floor: float) -> np.ndarray:
    """P(a user reports a post) per (user, post) cell: the rate of the post's kind
    (`misinfo_rate` where `misinfo`, else `true_rate`) times ``floor + |opinion - stance| / 2``.

    `floor` is how much a post is reported by a user who agrees with it: the fast path's tasks
    use 0.5 (`Dynamics`), the platform's `ReportingUsers` 0 (only disagreement makes a report).
    Arrays broadcast (e.g. `opinion` (M, 1) against `stance` (M, S)); the result keeps their
    float dtype (float32 on the fast path, float64 on the platform).
    """
    rate = np.where(misinfo, misinfo_rate, true_rate)
    return rate * (floor + np.abs(opinion - stance) / 2)


def served_count(valid) -> np.ndarray:
    """(M,) float32: the posts each visitor was served, at least 1 (the mean's denominator)."""
    return np.maximum(valid.sum(1), 1).astype(np.float32)


def session_value(dyn: Dynamics, kind, quality, engaged, arousal, misinfo, valid, served) -> np.ndarray:
    """(M,) the mean value of a visit's served posts: quality_gain (q - 0.5) + engaged_gain *
    engaged - arousal_cost[kind] * arousal - misinfo_cost * misinfo (hate-scrolling engages
    and sours); `served` from `served_count`."""
    value = (
        dyn.quality_gain * (quality - 0.5)
        + dyn.engaged_gain * engaged
        - np.asarray(dyn.arousal_cost, np.float32)[kind][:, None] * arousal
        - dyn.misinfo_cost * misinfo
    )
    return (value * valid).sum(1) / served


def satisfaction(s, value, rate: float, seen) -> np.ndarray:
    """Satisfaction after a visit: s <- (1 - rate) s + rate * sigmoid(4 value + 0.5) where the
    visitor was served something (`seen`), else unchanged."""
    target = sigmoid(4.0 * value + 0.5)
    return np.where(seen, (1 - rate) * s + rate * target, s)


def churn(s, u, below: float, prob: float) -> np.ndarray:
    """Who leaves: a user with satisfaction `s` below `below`, with probability `prob`."""
    return (s < below) & (u < prob)


def visit_probability(activity, s) -> np.ndarray:
    """P(visit) (K, N) of users of base `activity` (N,) and satisfaction `s` (K, N):
    activity x (0.4 + 1.2 s), at most `VISIT_CAP`."""
    return np.minimum(activity * (0.4 + 1.2 * s), VISIT_CAP)


def visits(p, u_visit, u_return, churned, away, return_prob: float, always=None):
    """Who visits this step and who comes back, both (K, N) bool.

    A churned user comes back with `return_prob` and visits at once (the caller resets their
    satisfaction to `RETURN_SATISFACTION`); the others who have not churned visit where
    `u_visit < p`, or `always` (campaign bots while their campaign runs); `away` users
    (suspended, or simulations not stepping) never visit.
    """
    back = churned & (u_return < return_prob)
    visit = back | (u_visit < p)
    if always is not None:
        visit |= always
    return visit & ~(churned & ~back) & ~away, back


def ema(old, new, seen) -> np.ndarray:
    """A history summary's moving average: HISTORY_KEEP old + HISTORY_NEW new where `seen`."""
    return np.where(seen, HISTORY_KEEP * old + HISTORY_NEW * new, old)


def history_emas(eng_ema, arousal_ema, engaged, arousal_score, served, seen):
    """The ranking service's engagement-rate and arousal-affinity summaries (M,) after a visit:
    the share of served posts engaged, and 4 x the mean of (arousal score - 0.5) over them."""
    rate = engaged.sum(1) / served
    affinity = 4.0 * (engaged * (arousal_score - 0.5)).sum(1) / served
    return ema(eng_ema, rate, seen), ema(arousal_ema, affinity, seen)


def contrast(old, a, b, engaged) -> np.ndarray:
    """The moving average `old` (`ema`) of the engagement rate on posts weighted `a` minus that
    on posts weighted `b` (M, S), updated only where both were served (v2's affinities)."""
    wa, wb = a.sum(1), b.sum(1)
    both = (wa >= 0.5) & (wb >= 0.5)
    rate = (engaged * a).sum(1) / np.maximum(wa, 0.5) - (engaged * b).sum(1) / np.maximum(wb, 0.5)
    return ema(old, rate, both).astype(np.float32)


def visit_rate_ema(old, visited) -> np.ndarray:
    """The visit-rate summary after a step: VISIT_KEEP old + VISIT_NEW visited."""
    return VISIT_KEEP * old + VISIT_NEW * visited
