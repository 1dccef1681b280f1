"""Adversaries and campaigns: one home for both paths (issue 51).

Who posts misinformation and who brigades (`draw_roles`), where the brigade aims
(`retarget`: fixed, or moving every few steps in the hard tier), the brigade's false reports
(`brigade`), campaign regimes (`switch_campaigns`) and their bots' fake popularity
(`amplify`; `amplify_once` under OASIS's rules, where a bot likes a post once), suspended
misinformation accounts coming back as new accounts (`returning`), and misinformation that
mimics true posts' arousal (`mimicked_arousal`).

Callers: the fast path (`oasis_gym.batched.state` draws the roles and targets of an episode,
`oasis_gym.batched.posting` runs campaigns, bots, returns and brigade reports each step, and
`oasis_gym.model.posting` mimicry) and the platform path (`oasis_gym.scenarios.misinfo_stream`:
Moderator-v0's brigade is `brigade` with its own window, probability and draws; its accounts
stay `rng.choice` draws of its own, which keeps v0's numbers). Every random input is an argument
(`u` uniforms, or a `draw` function the caller supplies), so each path keeps its own numbers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

MISINFO_ACCOUNT_SHARE = 0.01  # the tasks' share of users who are misinformation accounts


def draw_roles(u: np.ndarray, outlet: np.ndarray, brigaders: int) -> tuple[np.ndarray, np.ndarray]:
    """The roles of R episodes from their uniforms `u` (R, N): (misinformation accounts,
    brigaders), each (R, N) bool. Outlets get neither; the users with the smallest draws are
    misinformation accounts (`MISINFO_ACCOUNT_SHARE` of all, at least one), the next
    `brigaders` (at most all but one of the rest) brigade."""
    n = u.shape[1]
    n_mis = max(1, int(round(MISINFO_ACCOUNT_SHARE * n)))
    n_brig = min(brigaders, n - n_mis - 1)
    order = np.argsort(np.where(outlet, 2.0, u), axis=1, kind="stable")
    rows = np.arange(u.shape[0])[:, None]
    misinfo_account = np.zeros(u.shape, bool)
    brigader = np.zeros(u.shape, bool)
    misinfo_account[rows, order[:, :n_mis]] = True
    if n_brig > 0:
        brigader[rows, order[:, n_mis : n_mis + n_brig]] = True
    return misinfo_account, brigader


def retarget(u: np.ndarray, outlets: np.ndarray, n_targets: int) -> np.ndarray:
    """The brigade's targets (R, n_targets): the `outlets` (user ids) with the smallest of
    their uniforms `u` (R, len(outlets)), ties to the earlier outlet."""
    return outlets[np.argsort(u, axis=1, kind="stable")[:, :n_targets]]


def brigade(
    age: np.ndarray,
    eligible: np.ndarray,
    author: np.ndarray,
    targeted: np.ndarray,
    brigader: np.ndarray,
    window: tuple[int, int],
    prob: float,
    draw: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    reported_before: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Coordinated false reports: each brigader reports each recent post of a targeted author
    with probability `prob`, unless it reported that post before.

    Posts (K, P): `age` (in the caller's unit), `eligible` (what a brigade reports: live posts,
    on the platform originals only), `author` (user ids); users (K, N): `targeted`, `brigader`
    (the active ones: unsuspended). A post is recent when `window[0] <= age <= window[1]` (the
    fast path: made the step before, (1, 1) steps; Moderator-v0: (0, 9) minutes). The pairs
    (brigader, post) of each simulation are taken brigader by brigader (ascending user), each
    over its posts (ascending slot); `draw(k, slot, user)` gives one uniform per pair in that
    order (the fast path: counter-based hashes; v0: its generator's next numbers, one for every
    pair), and `reported_before(k, slot, user)` (None: nothing was) says which pairs already
    reported (v0: the platform's report relation). Returns the reports as (k, slot, user)
    arrays, in pair order; no pair, no draw.
    """
    k = age.shape[0]
    rows = np.arange(k)[:, None]
    fresh = eligible & (age >= window[0]) & (age <= window[1]) & targeted[rows, author]
    pk, ps = np.nonzero(fresh)
    if len(pk) == 0:  # most steps of most simulations: nothing to report
        return pk, ps, pk
    bk, bu = np.nonzero(brigader)
    # pairs (brigader, post of the same simulation): ragged, joined by simulation
    per_k = np.bincount(pk, minlength=k)
    reps = per_k[bk]
    b_idx = np.repeat(np.arange(len(bk)), reps)
    offset = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    p_idx = (np.cumsum(per_k) - per_k)[bk][b_idx] + offset
    kk, ss, uu = bk[b_idx], ps[p_idx], bu[b_idx]
    if len(kk) == 0:
        return kk, ss, uu
    pick = draw(kk, ss, uu) < prob
    if reported_before is not None and pick.any():
        pick[pick] = ~reported_before(kk[pick], ss[pick], uu[pick])
    return kk[pick], ss[pick], uu[pick]


def switch_campaigns(on: np.ndarray, u: np.ndarray, p_on: float, p_off: float) -> np.ndarray:
    """The campaign regime (K,) bool after one step: a running campaign stops with `p_off`, a
    quiet simulation starts one with `p_on` (uniforms `u` (K,))."""
    return np.where(on, u >= p_off, u < p_on)


def amplify(
    rate: float, misinfo_account: np.ndarray, unsuspended: np.ndarray, author: np.ndarray, live: np.ndarray,
    on: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The likes and views (each (K, P) float32) campaign bots add in one step: while a
    simulation's campaign is `on` (K,), each unsuspended misinformation account (its bots:
    `misinfo_account`, `unsuspended` (K, N)) likes every `live` post of a misinformation account
    (`author` (K, P)) `rate` times and views it twice as often (Recommender-v3's popularity lie)."""
    bots = (misinfo_account & unsuspended).sum(1)
    rows = np.arange(len(on))[:, None]
    theirs = misinfo_account[rows, author] & live & on[:, None]
    likes = np.where(theirs, np.float32(rate) * bots[:, None].astype(np.float32), np.float32(0))
    return likes, 2 * likes


def amplify_once(
    rate: float, misinfo_account: np.ndarray, unsuspended: np.ndarray, author: np.ndarray, live: np.ndarray,
    on: np.ndarray, liked_before: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:  # fmt: skip
    """`amplify` under OASIS's rules (Recommender-v4): each bot likes each post at most once.

    While a simulation's campaign is `on`, the bots of each unsuspended misinformation account
    (`rate` bot accounts each) like every `live` post of a misinformation account that they have
    not liked yet (`liked_before(k, slot, account)` (pairs,) bool) and view it twice. Returns the
    likes and views (each (K, P) float32) and the new (k, slot, account) pairs, in (k, account,
    slot) order, for the caller to remember."""
    k, p = author.shape
    rows = np.arange(k)[:, None]
    theirs = misinfo_account[rows, author] & live & on[:, None]
    pk, ps = np.nonzero(theirs)
    bk, ba = np.nonzero(misinfo_account & unsuspended & on[:, None])
    per_k = np.bincount(pk, minlength=k)
    reps = per_k[bk]  # (bot account, post of its simulation) pairs, ragged
    b_idx = np.repeat(np.arange(len(bk)), reps)
    p_idx = (np.cumsum(per_k) - per_k)[bk][b_idx] + np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    kk, ss, aa = bk[b_idx], ps[p_idx], ba[b_idx]
    if len(kk):
        new = ~liked_before(kk, ss, aa)
        kk, ss, aa = kk[new], ss[new], aa[new]
    likes = np.float32(rate) * np.bincount(kk * p + ss, minlength=k * p).reshape(k, p).astype(np.float32)
    return likes, 2 * likes, (kk, ss, aa)


def returning(suspended_at: np.ndarray, t: np.ndarray, delay: int, misinfo_account: np.ndarray) -> np.ndarray:
    """The misinformation accounts (K, N) bool that come back this step (step `t` (K,)) as new
    accounts: suspended (`suspended_at` >= 0) at least `delay` steps ago."""
    return misinfo_account & (suspended_at >= 0) & (t[:, None] - suspended_at >= delay)


def mimicked_arousal(true_arousal: np.ndarray, own_arousal: np.ndarray, mimicry: float) -> np.ndarray:
    """The arousal of a misinformation account's post: `mimicry` of the way through from its
    own distribution's draw (`own_arousal`) to a true post's (`true_arousal`)."""
    return mimicry * true_arousal + (1 - mimicry) * own_arousal
