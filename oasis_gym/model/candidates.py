"""The candidates of a task feed: which posts a visitor's ranking sees (issue 51).

Called by the fast path (`batched/feed.py`) for every visiting (simulation, user) pair of the
v1-v3 tasks. A visitor's candidates are the newest post of each followee and the newest
repost of `SHARES_SEEN` of them (in-network, the followees taken in turn step by step; a
returned account has lost its followers, so its posts reach nobody in-network) and
`OUT_OF_NETWORK` posts drawn from the ring of the simulation's newest posts; duplicates (the
in-network copy is kept), dead and removed posts and the visitor's own posts are masked.

Posts live in a ring of P slots per simulation (P a power of two): post `id` sits in slot
``id & (P - 1)`` until a newer post takes it, so a reference to an overwritten post is
recognised by ``ring_ids[k, slot] != id``. The platform's recommenders draw their candidates
their own way (`recsys/agent_controlled.py`: a recent pool and the followees' latest posts).
"""

from __future__ import annotations

import numpy as np

SHARES_SEEN = 8  # followees whose newest repost is a candidate, taken in turn step by step
OUT_OF_NETWORK = 8  # posts drawn from the ring


def feed_candidates(
    followees: np.ndarray,
    reach: np.ndarray,
    last_post: np.ndarray,
    last_share: np.ndarray,
    ring_ids: np.ndarray,
    removed: np.ndarray,
    author: np.ndarray,
    t: np.ndarray,
    u_out: np.ndarray,
    ka: np.ndarray,
    ua: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The candidates of visitors (`ka`, `ua`) (M,): post ids (M, C), their flat ring indexes
    ``k * P + slot``, in-network flags and validity, C = F + SHARES_SEEN + OUT_OF_NETWORK.

    `followees` (N, F) of each user; per simulation and user (K, N): `reach` (whether the
    user's posts reach their followers), `last_post` / `last_share` (the newest post / repost
    id, -1 if none); per simulation and ring slot (K, P): `ring_ids` (-1: empty), `removed`,
    `author`; `t` (K,) the step; `u_out` (M, OUT_OF_NETWORK) uniforms in [0, 1) drawing the
    out-of-network slots. Candidates are sorted by id, each id once."""
    n, p, f = reach.shape[1], ring_ids.shape[1], followees.shape[1]
    rows = ka[:, None]
    fol = followees[ua] + rows * n  # flat (simulation, followee) indexes
    # the candidates' keys 2 id + (out-of-network), written in place: followees' posts, their
    # reposts, the ring's draws
    code = np.empty((len(ka), f + SHARES_SEEN + OUT_OF_NETWORK), np.int64)
    code[:, :f] = np.where(reach, last_post, -1).reshape(-1)[fol]
    turn = ((t[:, None] + np.arange(SHARES_SEEN)) % f)[ka]  # the followees' turns: one row per simulation
    turn += np.arange(len(ka))[:, None] * f
    code[:, f : f + SHARES_SEEN] = last_share.reshape(-1)[fol.reshape(-1)[turn]]
    code[:, f + SHARES_SEEN :] = ring_ids.reshape(-1)[rows * p + (u_out * p).astype(np.int64)]
    # dedupe: sort the keys and drop repeated ids, so the in-network copy of a post is the one
    # kept; the keys decode back into ids and flags
    code <<= 1
    code[:, -OUT_OF_NETWORK:] += 1
    code.sort(axis=1)
    ids = code >> 1
    in_net = (code & 1) == 0
    flat = ids & (p - 1)
    flat += rows * p
    # a slot's id where its post is live (not removed), else -2 (no candidate id): valid ids
    # are those found there
    live = np.where(removed | (ring_ids < 0), -2, ring_ids)
    valid = live.reshape(-1)[flat] == ids
    valid[:, 1:] &= ids[:, 1:] != ids[:, :-1]
    valid &= author.reshape(-1)[flat] != ua[:, None]
    return ids, flat, in_net, valid
