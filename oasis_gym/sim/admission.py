"""Which of a step's actions count, and what their slots name: the users' actions admitted.

Only active users act, and only a user's first action of the step counts (or, with
`SimulationConfig.actions_per_user = "many"`, every action of theirs, in order); the others
are returned as `ignored`. A slot (post, comment, user) becomes the platform id shown in that
slot of the user's observation, or -1 when the slot was empty or out of range (the
platform then answers with its own result code).
"""

from __future__ import annotations

import numpy as np

from ..actions import IS_COMMENT_TARGET, IS_POST_TARGET, IS_USER_TARGET
from .batches import ObsBatch


def admit(obs: ObsBatch, users: np.ndarray, cols: tuple, texts_in, stance_in, many: bool = False) -> tuple:
    """(users, action, target, texts, stance, ignored) of the admitted actions, in input
    order; `cols`: the (type, post, comment, user) columns checked by `step_input`; `many`:
    every action of an active user counts, not only the first."""
    n = len(users)
    rows = np.searchsorted(obs.users, users)
    rows = np.minimum(rows, max(len(obs.users) - 1, 0))
    is_active = (len(obs.users) > 0) & (obs.users[rows] == users) if len(obs.users) else np.zeros(n, bool)
    first = np.ones(n, dtype=bool) if many else np.zeros(n, dtype=bool)
    first[np.unique(users, return_index=True)[1]] = True
    take = np.flatnonzero(is_active & first)
    ignored = users[~(is_active & first)]
    rows, users = rows[take], users[take]
    action, post, comment, uslot = (c[take] for c in cols)
    target = np.full(len(take), -1, dtype=np.int64)

    def pick(table: np.ndarray, slots: np.ndarray, sel: np.ndarray) -> None:
        ok = sel & (slots >= 0) & (slots < table.shape[1])
        target[ok] = table[rows[ok], slots[ok]]

    pick(obs.post_ids, post, IS_POST_TARGET(action))
    pick(obs.comment_ids, comment, IS_COMMENT_TARGET(action))
    pick(obs.user_ids, uslot, IS_USER_TARGET(action))
    texts = [texts_in[i] for i in take.tolist()] if texts_in is not None else [None] * len(take)
    stance = stance_in[take] if stance_in is not None else np.full(len(take), np.nan, dtype=np.float32)
    return users, action, target, texts, stance, ignored
