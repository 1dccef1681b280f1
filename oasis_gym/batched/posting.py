"""What enters the platform each step: new posts, campaign regimes, brigade reports, returning accounts.

A visitor posts with their posting rate (times `chill` if wrongly moderated before); a
misinformation account posts `campaign_boost` times as often while its simulation's
campaign is on (a hidden two-state regime). A post's topic, stance, quality and arousal
are drawn around its author's; misinformation accounts post extreme, low-quality,
high-arousal misinformation (with `mimicry`, arousal drawn like true posts'), and any
post is misinformation with probability `misinfo_base + misinfo_arousal_link * max(r -
0.5, 0)`: outrage and harm go together. The arousal classifier's score is the arousal
plus noise. In Recommender-v3 the bots of a running campaign like and view every post of
the misinformation accounts (`amplify`): their popularity lies. Brigaders report each new
post of their target authors once, the step after it appears. A suspended misinformation
account comes back after `account_return_delay` steps as a new account: no followers, no
history.
"""

from __future__ import annotations

import numpy as np

from ..model import rng
from ..model.population import N_TOPICS
from .state import S_ATTR, S_BRIGADE, S_CAMPAIGN, S_POST, State


def switch_campaigns(state: State, go: np.ndarray) -> None:
    """Campaigns start with campaign_on and stop with campaign_off a step (per stepping simulation)."""
    dyn = state.dyn
    if dyn.campaign_on <= 0:
        return
    u = rng.uniform(state.key, state.t, S_CAMPAIGN)
    switched = np.where(state.campaign, u >= dyn.campaign_off, u < dyn.campaign_on)
    state.campaign = np.where(go, switched, state.campaign)


def amplify(state: State, go: np.ndarray) -> None:
    """Campaign bots like every live post of the misinformation accounts (`campaign_amplify`
    likes and twice as many views per unsuspended bot a step) while their simulation's
    campaign is on (Recommender-v3; nothing at `campaign_amplify` 0)."""
    a = state.dyn.campaign_amplify
    on = state.campaign & go
    if a <= 0 or not on.any():
        return
    bots = (state.misinfo_account & (state.suspended_at < 0)).sum(1)
    rows = np.arange(state.k)[:, None]
    theirs = state.misinfo_account[rows, state.author] & (state.post_id >= 0) & ~state.removed & on[:, None]
    add = np.where(theirs, np.float32(a) * bots[:, None].astype(np.float32), np.float32(0))
    state.likes += add
    state.impressions += 2 * add


def return_accounts(state: State, go: np.ndarray) -> None:
    """Suspended misinformation accounts whose delay is over come back as new accounts."""
    delay = state.dyn.account_return_delay
    if delay <= 0:
        return
    back = state.misinfo_account & (state.suspended_at >= 0) & (state.t[:, None] - state.suspended_at >= delay)
    back &= go[:, None]
    if not back.any():
        return
    state.suspended_at[back] = -1
    state.fans[back] = 0.0
    state.account_start[back] = np.broadcast_to(state.t[:, None], back.shape)[back]
    state.moderated[back] = 0
    state.last_post[back] = -1
    state.last_share[back] = -1


def post(state: State, ka: np.ndarray, ua: np.ndarray) -> np.ndarray:
    """New posts of this step's visitors (pairs ka, ua); returns the posts made per simulation."""
    dyn, pop = state.dyn, state.pop
    rate = pop.post_rate[ua] * state.chill[ka, ua]
    rate = np.where(state.misinfo_account[ka, ua] & state.campaign[ka], rate * dyn.campaign_boost, rate)
    draw = rng.uniform(state.key[ka], state.t[ka], S_POST, ua)
    posting = draw < rate  # visitors are never suspended
    kp, up = ka[posting], ua[posting]
    counts = np.bincount(kp, minlength=state.k)
    start = np.cumsum(counts) - counts
    rank = np.arange(len(kp)) - start[kp]
    keep = rank < state.p  # never more posts in one step than the ring holds
    kp, up, rank = kp[keep], up[keep], rank[keep]
    counts = np.minimum(counts, state.p)
    ids = state.next_post[kp] + rank
    state.next_post += counts
    slot = state.slot(ids)
    base = rng.hash64(state.key[kp], state.t[kp], S_ATTR, up)  # one hash per post, then one per attribute
    t = state.t[kp]

    def noise(j: int) -> np.ndarray:
        return rng.normal(base, j)

    mis_acc = state.misinfo_account[kp, up]
    topic = pop.interest[up] + 0.3 * np.stack([noise(d) for d in range(N_TOPICS)], axis=1)
    topic /= np.maximum(np.linalg.norm(topic, axis=1, keepdims=True), 1e-6)
    opinion = state.opinion[kp, up]
    stance = np.where(mis_acc, 0.9 * np.where(opinion >= 0, 1.0, -1.0), opinion + 0.2 * noise(10))
    quality = np.clip(pop.quality[up] + 0.15 * noise(11), 0, 1)
    true_arousal = np.clip(pop.arousal[up] + 0.15 * noise(12), 0, 1)
    mis_arousal = np.clip(0.8 + 0.1 * noise(13), 0, 1)
    arousal = np.where(mis_acc, dyn.mimicry * true_arousal + (1 - dyn.mimicry) * mis_arousal, true_arousal)
    p_mis = np.where(
        mis_acc, dyn.misinfo_account_base, dyn.misinfo_base + dyn.misinfo_arousal_link * np.maximum(arousal - 0.5, 0)
    )
    misinfo = rng.uniform(base, 14) < p_mis
    quality = np.where(misinfo, 0.4 * quality, quality)
    at = kp * state.p + slot
    values = {
        "post_id": ids,
        "author": up,
        "created": t,
        "stance": np.clip(stance, -1, 1),
        "quality": quality,
        "arousal": arousal,
        "arousal_score": np.clip(arousal + dyn.arousal_score_noise * noise(15), 0, 1),
        "misinfo": misinfo,
    }
    for name in ("likes", "shares", "reports", "impressions", "step_reports", "frequent_reports", "verdict",
                 "removed", "downranked", "checked"):  # fmt: skip
        values[name] = 0
    for name, value in values.items():
        getattr(state, name).reshape(-1)[at] = value
    state.topic.reshape(N_TOPICS, -1)[:, at] = topic.T
    state.last_post.reshape(-1)[kp * state.n + up] = ids
    return counts


def brigade(state: State, go: np.ndarray) -> None:
    """Each unsuspended brigader reports each post of a targeted author made last step,
    with `brigade_report_prob`; the reports count like any user's."""
    dyn = state.dyn
    if dyn.brigaders == 0:
        return
    fresh = (state.post_id >= 0) & ~state.removed & (state.created == state.t[:, None] - 1) & go[:, None]
    rows = np.arange(state.k)[:, None]
    fresh &= state.targeted[rows, state.author]
    kq, sq = np.nonzero(fresh)
    if len(kq) == 0:
        return
    brig = state.brigader & (state.suspended_at < 0)
    b_k, b_u = np.nonzero(brig)
    # pairs (post q, brigader of the same simulation): ragged, joined by simulation
    per_k = np.bincount(b_k, minlength=state.k)
    start = np.cumsum(per_k) - per_k
    reps = per_k[kq]
    q_idx = np.repeat(np.arange(len(kq)), reps)
    offset = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    b_idx = start[kq][q_idx] + offset
    kk, ss, uu = kq[q_idx], sq[q_idx], b_u[b_idx]
    report = rng.uniform(state.key[kk], state.t[kk], S_BRIGADE, state.post_id[kk, ss], uu) < dyn.brigade_report_prob
    kk, ss, uu = kk[report], ss[report], uu[report]
    flat = kk * state.p + ss
    size = state.k * state.p
    counts = np.bincount(flat, minlength=size).reshape(state.k, state.p).astype(np.float32)
    frequent = np.bincount(flat[state.reports_made[kk, uu] >= 3], minlength=size).reshape(state.k, state.p)
    state.reports += counts
    state.step_reports += counts
    state.frequent_reports += frequent.astype(np.float32)
    np.add.at(state.reports_made, (kk, uu), 1)
