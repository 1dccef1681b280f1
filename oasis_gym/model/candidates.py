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
    n, p = reach.shape[1], ring_ids.shape[1]
    rows = ka[:, None]
    fol = rows * n + followees[ua]  # flat (simulation, followee) indexes
    own_post = np.where(reach.reshape(-1)[fol], last_post.reshape(-1)[fol], -1)
    turn = (t[rows] + np.arange(SHARES_SEEN)) % followees.shape[1]
    shared = last_share.reshape(-1)[np.take_along_axis(fol, turn, 1)]
    out = ring_ids.reshape(-1)[rows * p + (u_out * p).astype(np.int64)]
    ids = np.concatenate([own_post, shared, out], axis=1)
    # dedupe: sort the keys 2 id + (out-of-network) and drop repeated ids, so the in-network
    # copy of a post is the one kept; the keys decode back into ids and flags
    code = ids * 2
    code[:, -OUT_OF_NETWORK:] += 1
    code.sort(axis=1)
    ids = code >> 1
    in_net = (code & 1) == 0
    flat = rows * p + (ids & (p - 1))
    valid = (ids >= 0) & (ring_ids.reshape(-1)[flat] == ids) & ~removed.reshape(-1)[flat]
    valid[:, 1:] &= ids[:, 1:] != ids[:, :-1]
    valid &= author.reshape(-1)[flat] != ua[:, None]
    return ids, flat, in_net, valid
