"""The fast path's glue of the users' model (`oasis_gym.model.users`): it reads the served
posts' columns and the visitors' rows of the `State`, draws the uniforms (counter-based,
`model/rng.py`), calls the model, and writes back what it returns: engagement, reposts and
reports, the posts' counters, the history summaries, satisfaction, churn, opinions and the
repost each visitor's followers see. Under OASIS's rules it tells the model which served posts
each visitor engaged with or reported before, and remembers this step's (`State.engaged_pairs`).
"""

from __future__ import annotations

import numpy as np

from ..model import rng
from ..model.opinions import pull_push
from ..model.users import (
    churn,
    contrast,
    engage_logit,
    history_emas,
    report_probability,
    respond,
    satisfaction,
    served_count,
    session_value,
    sigmoid,
)
from .feed import COL
from .state import S_CHURN, S_ENGAGE, S_REPORT, State


def respond_to_feeds(state: State, ka: np.ndarray, ua: np.ndarray, ids: np.ndarray, sx: np.ndarray, valid: np.ndarray):
    """Engaged, reposted and reported flags (M, F) of pairs (ka, ua) served post `ids`
    (`sx`: their rows of the feed's table, `feed.features`)."""
    dyn, rows = state.dyn, ka[:, None]
    opinion = np.take(state.opinion, state.users_at(ka, ua))
    stance = sx[..., COL["stance"]]
    logit = engage_logit(
        dyn, state.pop.kind[ua], opinion, *(sx[..., COL[c]] for c in ("similarity", "quality", "true_arousal")),
        stance, sx[..., COL["in_network"]], sx[..., COL["recency"]],
    )  # fmt: skip
    h = rng.hash64(ua[:, None], ids, start=state.step_hash(S_ENGAGE)[rows])  # one hash per impression
    u_engage, u_share = rng.two_uniforms(h)
    p_report = report_probability(
        sx[..., COL["misinfo"]] > 0, opinion[:, None], stance, dyn.misinfo_report_prob, dyn.true_report_prob, floor=0.5
    )
    u_report = rng.uniform(h, S_REPORT)
    if not dyn.oasis_rules:
        return respond(sigmoid(logit), p_report, u_engage, u_share, u_report, valid, dyn.share_given_engage)
    engaged_pairs, reported_pairs = state.engaged_pairs, state.reported_pairs
    engaged, shared, reported = respond(
        sigmoid(logit), p_report, u_engage, u_share, u_report, valid, dyn.share_given_engage,
        lambda i, j: engaged_pairs.contains(ka[i], ua[i], ids[i, j]),
        lambda i, j: reported_pairs.contains(ka[i], ua[i], ids[i, j]),
    )  # fmt: skip
    for pairs, done in ((state.engaged_pairs, engaged), (state.reported_pairs, reported)):
        i, j = np.nonzero(done)
        pairs.add(ka[i], ua[i], ids[i, j])
    return engaged, shared, reported


def count_on_posts(state: State, ka, ua, flat, valid, engaged, shared, reported) -> None:
    """Add one step's impressions, likes, reposts and reports to the posts' counters, and
    the reports to the reporters' records (a report by a user with 3 or more earlier
    reports this episode also counts as a frequent reporter's)."""
    flat = flat.ravel()
    size = state.k * state.p

    def add(counter: np.ndarray, mask: np.ndarray) -> None:
        counter += np.bincount(flat[mask.ravel()], minlength=size).reshape(counter.shape).astype(np.float32)

    add(state.impressions, valid)
    add(state.likes, engaged & ~shared)
    add(state.shares, shared)
    add(state.reports, reported)
    add(state.step_reports, reported)
    at = state.users_at(ka, ua)
    made = np.take(state.reports_made, at)
    add(state.frequent_reports, reported & (made >= 3)[:, None])
    np.put(state.reports_made, at, made + reported.sum(1))


def update_users(state: State, ka, ua, ids, sx, valid, engaged, shared) -> None:
    """History summaries, satisfaction, churn, opinions and reposts of the visitors."""
    dyn, at = state.dyn, state.users_at(ka, ua)
    served = served_count(valid)
    seen = valid.any(1)
    eng, arousal = history_emas(
        np.take(state.eng_ema, at), np.take(state.arousal_ema, at), engaged, sx[..., COL["arousal"]], served, seen
    )
    np.put(state.eng_ema, at, eng)
    np.put(state.arousal_ema, at, arousal)
    if dyn.history_affinities:
        for ema, name in ((state.in_network_ema, "in_network"), (state.recency_ema, "recency")):
            a, b = sx[..., COL[name]] * valid, (1 - sx[..., COL[name]]) * valid
            np.put(ema, at, contrast(np.take(ema, at), a, b, engaged))
    if dyn.satisfaction_rate > 0:
        value = session_value(
            dyn, state.pop.kind[ua], sx[..., COL["quality"]], engaged, sx[..., COL["true_arousal"]],
            sx[..., COL["misinfo"]], valid, served,
        )  # fmt: skip
        np.put(
            state.satisfaction, at, satisfaction(np.take(state.satisfaction, at), value, dyn.satisfaction_rate, seen)
        )
    if dyn.churn_prob > 0:
        u = rng.uniform(ua, start=state.step_hash(S_CHURN)[ka])
        leave = churn(np.take(state.satisfaction, at), u, dyn.churn_below, dyn.churn_prob)
        np.put(state.churned, at[leave], True)
    if dyn.opinion_pull > 0 or dyn.opinion_arousal_push > 0:
        opinion = pull_push(
            np.take(state.opinion, at), sx[..., COL["stance"]], engaged, sx[..., COL["true_arousal"]],
            dyn.opinion_pull, dyn.opinion_confidence, dyn.opinion_arousal_push,
        )  # fmt: skip
        np.put(state.opinion, at, opinion)
    # the last reposted post (lowest rank) becomes the user's repost seen by followers
    any_share = shared.any(1)
    last = shared.shape[1] - 1 - np.argmax(shared[:, ::-1], axis=1)
    pick = ids[np.arange(len(ids)), last]
    np.put(state.last_share, at[any_share], pick[any_share])
