"""How the simulated users respond to their feeds, and what that does to them.

Per served post (a user of kind c, post quality q, arousal r, stance, misinformation m):
P(engage) = sigmoid(base + similarity_w * sim + quality_w[c] * q + arousal_w[c] * r
+ alignment_w * opinion * stance - position_w * rank [+ in_network_w[c] * in_network +
recency_w[c] * recency in v2]); a quarter of engagements are
reposts (the post enters the reposter's followers' candidates). A user who does not engage
reports with probability (misinfo ? misinfo_report_prob : true_report_prob) x (0.5 +
|opinion - stance| / 2) (`model.users.report_probability`, floor 0.5). After the visit the
user's satisfaction moves towards the value of the session (quality and engagement raise
it; arousal and misinformation lower it, by kind), a user left below `churn_below` may
leave, and engaged stances move opinions (bounded confidence; aroused agreement pushes
outward). The ranking service's history
summaries (engagement rate, visit rate, arousal affinity; in v2 the in-network and recency
affinities, `_contrast`) are updated from what it saw.
"""

from __future__ import annotations

import numpy as np

from ..model import rng
from ..model.users import report_probability
from .feed import COL
from .state import S_CHURN, S_ENGAGE, S_REPORT, State


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def respond(state: State, ka: np.ndarray, ua: np.ndarray, ids: np.ndarray, sx: np.ndarray, valid: np.ndarray):
    """Engaged, reposted and reported flags (M, F) of pairs (ka, ua) served post `ids`
    (`sx`: their rows of the feed's table, `feed.features`)."""
    dyn, rows = state.dyn, ka[:, None]
    kind = state.pop.kind[ua][:, None]
    opinion = state.opinion[ka, ua][:, None]
    stance = sx[..., COL["stance"]]
    logit = (
        dyn.engage_base
        + dyn.engage_similarity * sx[..., COL["similarity"]]
        + np.asarray(dyn.engage_quality, np.float32)[kind] * sx[..., COL["quality"]]
        + np.asarray(dyn.engage_arousal, np.float32)[kind] * sx[..., COL["true_arousal"]]
        + dyn.engage_alignment * opinion * stance
        - dyn.engage_position * np.arange(ids.shape[1], dtype=np.float32)
    )
    for name, w in (("in_network", dyn.engage_in_network), ("recency", dyn.engage_recency)):
        if any(w):  # v2 kinds' tastes (skipped at 0: v1's numbers stay bit-identical)
            logit = logit + np.asarray(w, np.float32)[kind] * sx[..., COL[name]]
    h = rng.hash64(state.key[rows], state.t[rows], S_ENGAGE, ua[:, None], ids)  # one hash per impression
    u_engage, u_share = rng.two_uniforms(h)
    engaged = valid & (u_engage < _sigmoid(logit))
    shared = engaged & (u_share < dyn.share_given_engage)
    p_report = report_probability(
        sx[..., COL["misinfo"]] > 0, opinion, stance, dyn.misinfo_report_prob, dyn.true_report_prob, floor=0.5
    )
    reported = valid & ~engaged & (rng.uniform(h, S_REPORT) < p_report)
    return engaged, shared, reported


def _contrast(ema: np.ndarray, a: np.ndarray, b: np.ndarray, engaged: np.ndarray) -> np.ndarray:
    """The moving average `ema` (0.7 old + 0.3 new) of the engagement rate on posts weighted
    `a` minus that on posts weighted `b` (M, F), updated only where both were served."""
    wa, wb = a.sum(1), b.sum(1)
    both = (wa >= 0.5) & (wb >= 0.5)
    rate = (engaged * a).sum(1) / np.maximum(wa, 0.5) - (engaged * b).sum(1) / np.maximum(wb, 0.5)
    return np.where(both, 0.7 * ema + 0.3 * rate, ema).astype(np.float32)


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
    add(state.frequent_reports, reported & (state.reports_made[ka, ua] >= 3)[:, None])
    state.reports_made[ka, ua] += reported.sum(1)


def update_users(state: State, ka, ua, ids, sx, valid, engaged, shared) -> None:
    """History summaries, satisfaction, churn, opinions and reposts of the visitors."""
    dyn = state.dyn
    served = np.maximum(valid.sum(1), 1).astype(np.float32)
    seen = valid.any(1)
    rate = engaged.sum(1) / served
    score = sx[..., COL["arousal"]]
    affinity = 4.0 * (engaged * (score - 0.5)).sum(1) / served
    state.eng_ema[ka, ua] = np.where(seen, 0.7 * state.eng_ema[ka, ua] + 0.3 * rate, state.eng_ema[ka, ua])
    state.arousal_ema[ka, ua] = np.where(
        seen, 0.7 * state.arousal_ema[ka, ua] + 0.3 * affinity, state.arousal_ema[ka, ua]
    )
    if dyn.history_affinities:
        for ema, name in ((state.in_network_ema, "in_network"), (state.recency_ema, "recency")):
            ema[ka, ua] = _contrast(ema[ka, ua], sx[..., COL[name]] * valid, (1 - sx[..., COL[name]]) * valid, engaged)
    kind = state.pop.kind[ua]
    if dyn.satisfaction_rate > 0:
        arousal, misinfo = sx[..., COL["true_arousal"]], sx[..., COL["misinfo"]]
        value = (
            dyn.quality_gain * (sx[..., COL["quality"]] - 0.5)
            + dyn.engaged_gain * engaged
            - np.asarray(dyn.arousal_cost, np.float32)[kind][:, None] * arousal
            - dyn.misinfo_cost * misinfo
        )
        value = (value * valid).sum(1) / served
        s = state.satisfaction[ka, ua]
        target = 1.0 / (1.0 + np.exp(-(4.0 * value + 0.5)))
        state.satisfaction[ka, ua] = np.where(seen, (1 - dyn.satisfaction_rate) * s + dyn.satisfaction_rate * target, s)
    if dyn.churn_prob > 0:
        low = state.satisfaction[ka, ua] < dyn.churn_below
        leave = low & (rng.uniform(state.key[ka], state.t[ka], S_CHURN, ua) < dyn.churn_prob)
        state.churned[ka[leave], ua[leave]] = True
    if dyn.opinion_pull > 0 or dyn.opinion_arousal_push > 0:
        o = state.opinion[ka, ua][:, None]
        stance = sx[..., COL["stance"]]
        close = np.abs(stance - o) < dyn.opinion_confidence
        agree = np.sign(stance) == np.sign(o)
        n_eng = np.maximum(engaged.sum(1), 1)
        pull = (engaged * close * (stance - o)).sum(1) / n_eng
        push = (engaged * agree * sx[..., COL["true_arousal"]] * np.sign(stance)).sum(1) / n_eng
        new = o[:, 0] + dyn.opinion_pull * pull + dyn.opinion_arousal_push * push
        state.opinion[ka, ua] = np.clip(new, -1.0, 1.0)
    # the last reposted post (lowest rank) becomes the user's repost seen by followers
    any_share = shared.any(1)
    last = shared.shape[1] - 1 - np.argmax(shared[:, ::-1], axis=1)
    pick = ids[np.arange(len(ids)), last]
    state.last_share[ka[any_share], ua[any_share]] = pick[any_share]
