"""Counters of the steps since the previous logged step, and the metric values they give.

Used by the online recorder at every step (``MetricsRecorder``) and offline over a journal's
trace rows (``metrics.offline``): one implementation of action counts, exposure and rates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..actions import ACTION_NAMES_OR_INVALID, NUM_ACTIONS, RESULT_NAMES
from ..actions import ActionType as A
from ..actions import Result as R
from .exposure import ratio, served_exposure

if TYPE_CHECKING:  # pragma: no cover
    from ..platform import Platform
    from ..sim import StepOutcome

__all__ = ["Interval", "count_actions", "count_exposure", "interval_values", "POST_ENGAGEMENT", "OTHER_ENGAGEMENT"]

POST_ENGAGEMENT = (A.LIKE_POST, A.DISLIKE_POST, A.REPOST, A.QUOTE_POST, A.CREATE_COMMENT)
OTHER_ENGAGEMENT = (A.LIKE_COMMENT, A.DISLIKE_COMMENT, A.FOLLOW)


class Interval:
    """Counters summed over the steps since the previous logged step, and the distinct users
    active and acting in them (`users`: ids, each array without repeats)."""

    def __init__(self) -> None:
        self.users: dict[str, np.ndarray] = {k: np.empty(0, dtype=np.int64) for k in ("active", "acting")}
        self.actions = np.zeros(NUM_ACTIONS + 1, dtype=np.int64)  # last: codes outside the action set
        self.results = np.zeros(len(RESULT_NAMES), dtype=np.int64)
        self.n: dict[str, float] = dict.fromkeys(
            (
                "applied",
                "ignored",
                "active",
                "acting",
                "posts",
                "shares",
                "comments",
                "follows",
                "unfollows",
                "eng_post",
                "eng_all",
                "impressions",
                "misinfo",
                "cc_num",
                "cc_den",
                "div_sum",
                "div_cnt",
                "new_shares",
            ),
            0.0,
        )


def _add_users(acc: Interval, key: str, ids) -> None:
    acc.users[key] = np.union1d(acc.users[key], np.asarray(ids, dtype=np.int64))


def count_actions(acc: Interval, out: StepOutcome, active) -> None:
    """Add one step's applied actions and results (``out``: actions, results, users, ignored)
    and the users served a feed in it (``active``: their ids)."""
    codes = np.asarray(out.actions, dtype=np.int64)
    bad = (codes < 0) | (codes >= NUM_ACTIONS)  # traced as action "invalid"
    codes = np.where(bad, NUM_ACTIONS, codes)
    res = np.asarray(out.results, dtype=np.int64)
    acc.actions += np.bincount(codes, minlength=NUM_ACTIONS + 1)
    acc.results += np.bincount(res, minlength=len(RESULT_NAMES))[: len(RESULT_NAMES)]
    ok = np.bincount(codes[res == R.OK], minlength=NUM_ACTIONS + 1)
    n = acc.n
    n["applied"] += codes.size
    n["ignored"] += len(out.ignored)
    acting = (codes != A.DO_NOTHING) & ~bad
    n["active"] += len(active)  # user-steps: what engagement/per_active_user divides by
    n["acting"] += int(acting.sum())
    _add_users(acc, "active", active)
    _add_users(acc, "acting", np.asarray(out.users, dtype=np.int64)[acting])
    n["posts"] += ok[A.CREATE_POST]
    n["shares"] += ok[A.REPOST] + ok[A.QUOTE_POST]
    n["comments"] += ok[A.CREATE_COMMENT]
    n["follows"] += ok[A.FOLLOW]
    n["unfollows"] += ok[A.UNFOLLOW]
    n["eng_post"] += ok[list(POST_ENGAGEMENT)].sum()
    n["eng_all"] += ok[list(POST_ENGAGEMENT + OTHER_ENGAGEMENT)].sum()


def count_exposure(acc: Interval, pf: Platform, obs) -> None:
    """Add the impressions of the feeds served this step (``sim.obs`` during the step's commit)."""
    e = served_exposure(pf, obs)
    n = acc.n
    n["impressions"] += e.impressions
    n["misinfo"] += e.misinfo
    n["cc_num"] += e.cross_cutting
    n["cc_den"] += e.signed
    n["div_sum"] += e.diversity_sum
    n["div_cnt"] += e.diversity_viewers


def interval_values(acc: Interval, pf: Platform) -> dict[str, float]:
    """The interval's tags: ``actions/*``, ``activity/*``, ``engagement/*``, ``invalid/*``, the
    follow counts, ``exposure/*`` and ``cascade/new_shares``; rates are NaN with a zero
    denominator (``metrics.arrays.ratio``)."""
    n = acc.n
    values = {f"actions/{name}": float(c) for name, c in zip(ACTION_NAMES_OR_INVALID, acc.actions)}
    rejected = acc.results.sum() - acc.results[R.OK]
    values["activity/active_users"] = acc.users["active"].size  # distinct users over the interval
    values["activity/acting_users"] = acc.users["acting"].size
    values["activity/posts_created"] = float(n["posts"])
    values["activity/shares_created"] = float(n["shares"])
    values["activity/comments_created"] = float(n["comments"])
    values["activity/posts_total"] = float(pf.n_posts)
    values["engagement/rate"] = ratio(n["eng_post"], n["impressions"])
    values["engagement/per_active_user"] = ratio(n["eng_all"], n["active"])
    values["invalid/rate"] = ratio(rejected, n["applied"])
    for code, name in enumerate(RESULT_NAMES):
        if code != R.OK:
            values[f"invalid/{name}"] = float(acc.results[code])
    values["invalid/inactive"] += n["ignored"]
    values["network/new_follows"] = float(n["follows"])
    values["network/unfollows"] = float(n["unfollows"])
    values["network/follow_edges"] = float(len(pf.rel["follow"]))
    values["exposure/impressions"] = n["impressions"]
    values["exposure/misinfo_share"] = ratio(n["misinfo"], n["impressions"])
    values["exposure/cross_cutting_share"] = ratio(n["cc_num"], n["cc_den"])
    values["exposure/feed_diversity"] = ratio(n["div_sum"], n["div_cnt"])
    values["cascade/new_shares"] = n["new_shares"]
    return {k: float(v) for k, v in values.items()}
