"""The fast path's posting step: the model's posting and adversaries on its `State`.

What enters each simulation every step, in the engine's order: campaign regimes
(`campaign_regimes`), the campaign bots' likes and views (`bot_likes`, Recommender-v3; once per
bot and post in Recommender-v4),
returning accounts (`return_accounts`: a suspended misinformation account comes back after
`account_return_delay` steps as a new account: no followers, no history), new posts (`post`)
and brigade reports (`brigade_reports`: each brigader reports each new post of its target
authors once, the step after it appears). The mechanisms are `oasis_gym.model.posting` and
`oasis_gym.model.adversaries`; here the draws are made (counter-based, `model/rng.py`) and the
results read from and written into the ring.
"""

from __future__ import annotations

import numpy as np

from ..model import rng
from ..model.adversaries import amplify, amplify_once, brigade, returning, switch_campaigns
from ..model.posting import post_attributes, posts_made
from .state import S_ATTR, S_BRIGADE, S_CAMPAIGN, S_POST, State

BRIGADE_WINDOW = (1, 1)  # a brigade reports the posts made the step before (age in steps)


def campaign_regimes(state: State, go: np.ndarray) -> None:
    """Campaigns start with campaign_on and stop with campaign_off a step (per stepping simulation)."""
    dyn = state.dyn
    if dyn.campaign_on <= 0:
        return
    u = rng.uniform(state.key, state.t, S_CAMPAIGN)
    switched = switch_campaigns(state.campaign, u, dyn.campaign_on, dyn.campaign_off)
    state.campaign = np.where(go, switched, state.campaign)


def bot_likes(state: State, go: np.ndarray) -> None:
    """The bots of each running campaign like and view the misinformation accounts' live posts
    (`model.adversaries.amplify`; nothing at `campaign_amplify` 0)."""
    a = state.dyn.campaign_amplify
    on = state.campaign & go
    if a <= 0 or not on.any():
        return
    live = (state.post_id >= 0) & ~state.removed
    if not state.dyn.oasis_rules:
        likes, views = amplify(a, state.misinfo_account, state.suspended_at < 0, state.author, live, on)
    else:  # each account's bots like a post once: the pairs (account, post) of bot_pairs
        pairs = state.bot_pairs
        likes, views, (k, slot, account) = amplify_once(
            a, state.misinfo_account, state.suspended_at < 0, state.author, live, on,
            lambda k, slot, account: pairs.contains(k, account, slot),
        )  # fmt: skip
        pairs.add(k, account, slot)
    state.likes += likes
    state.impressions += views


def return_accounts(state: State, go: np.ndarray) -> None:
    """Suspended misinformation accounts whose delay is over come back as new accounts."""
    delay = state.dyn.account_return_delay
    if delay <= 0:
        return
    back = returning(state.suspended_at, state.t, delay, state.misinfo_account) & go[:, None]
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
    at = state.users_at(ka, ua)
    boosted = np.take(state.misinfo_account, at) & state.campaign[ka]
    draw = rng.uniform(ua, start=state.step_hash(S_POST)[ka])
    posting = posts_made(draw, pop.post_rate[ua], np.take(state.chill, at), boosted, dyn.campaign_boost)
    kp, up = ka[posting], ua[posting]  # visitors are never suspended
    counts = np.bincount(kp, minlength=state.k)
    start = np.cumsum(counts) - counts
    rank = np.arange(len(kp)) - start[kp]
    keep = rank < state.p  # never more posts in one step than the ring holds
    kp, up, rank = kp[keep], up[keep], rank[keep]
    counts = np.minimum(counts, state.p)
    ids = state.next_post[kp] + rank
    state.next_post += counts
    h = rng.hash64(up, start=state.step_hash(S_ATTR)[kp])  # one hash per post, then one per attribute
    values = post_attributes(
        h, pop.interest[up], state.opinion[kp, up], pop.quality[up], pop.arousal[up], state.misinfo_account[kp, up], dyn
    )
    topic = values.pop("topic")
    values.update(post_id=ids, author=up, created=state.t[kp])
    for name in ("likes", "shares", "reports", "impressions", "step_reports", "frequent_reports", "verdict",
                 "removed", "checked"):  # fmt: skip
        values[name] = 0
    at = kp * state.p + state.slot(ids)
    for pairs in state.pair_sets():  # OASIS's rules: the slots' old posts are gone, and their pairs
        pairs.clear(at)
    for name, value in values.items():
        getattr(state, name).reshape(-1)[at] = value
    state.topic.reshape(topic.shape[1], -1)[:, at] = topic.T
    state.last_post.reshape(-1)[kp * state.n + up] = ids
    return counts


def brigade_reports(state: State, go: np.ndarray) -> None:
    """The brigades' reports of this step (`model.adversaries.brigade` over the posts made the
    step before, with `brigade_report_prob`); they count like any user's reports."""
    dyn = state.dyn
    if dyn.brigaders == 0:
        return

    reported = state.reported_pairs  # OASIS's rules: a brigader reports a post once, as any user

    def draw(k: np.ndarray, slot: np.ndarray, user: np.ndarray) -> np.ndarray:
        return rng.uniform(state.post_id[k, slot], user, start=state.step_hash(S_BRIGADE)[k])

    kk, ss, uu = brigade(
        state.t[:, None] - state.created,
        (state.post_id >= 0) & ~state.removed & go[:, None],
        state.author,
        state.targeted,
        state.brigader & (state.suspended_at < 0),
        BRIGADE_WINDOW,
        dyn.brigade_report_prob,
        draw,
        None if not dyn.oasis_rules else lambda k, slot, user: reported.contains(k, user, slot),
    )
    if len(kk) == 0:
        return
    if dyn.oasis_rules:
        reported.add(kk, uu, ss)
    flat = kk * state.p + ss
    size = state.k * state.p
    counts = np.bincount(flat, minlength=size).reshape(state.k, state.p).astype(np.float32)
    frequent = np.bincount(flat[state.reports_made[kk, uu] >= 3], minlength=size).reshape(state.k, state.p)
    state.reports += counts
    state.step_reports += counts
    state.frequent_reports += frequent.astype(np.float32)
    np.add.at(state.reports_made, (kk, uu), 1)
