"""Whether a Platform read back from a file is consistent: every id it holds names a row that
exists, every code is one the platform knows. `journal_load.load_platform` runs it on every
journal it loads (`Platform.from_db`, `run --resume`), so a damaged journal is refused with
one `JournalError` line before a run goes on from it (rather than an `IndexError` steps later).

Vectorized: O(rows), a fraction of what reading the rows costs.
"""

from __future__ import annotations

import numpy as np

from .config import MINUTE_RANGE, MISINFO_LABEL, MODERATION_NAMES, UNKNOWN_LABEL
from .kinds import ORIGINAL, QUOTE
from .oasis_rows import OASIS_RELATIONS
from .platform import Platform
from .store import unpack_keys

__all__ = ["first_inconsistency"]


def _outside(values: np.ndarray, low: int, high: int) -> int:
    """How many of `values` are outside [low, high)."""
    return int(np.count_nonzero((values < low) | (values >= high)))


def first_inconsistency(pf: Platform) -> str | None:
    """The first inconsistency of `pf` found (a phrase naming it), or None if there is none."""
    n = {"user": pf.n_users, "post": pf.n_posts, "comment": pf.n_comments}
    author, root, kind = pf.p_author.a, pf.p_root.a, pf.p_kind.a
    checks = [
        (_outside(author, 0, n["user"]), "posts name authors that are not users"),
        (_outside(root, -1, n["post"]) + int(np.count_nonzero(root == np.arange(len(root)))), "posts share no post"),
        (_outside(kind, ORIGINAL, QUOTE + 1), "posts have an unknown kind"),
        (int(np.count_nonzero((kind == ORIGINAL) != (root == -1))), "posts' kinds disagree with what they share"),
        (_outside(pf.p_status.a, 0, len(MODERATION_NAMES)), "posts have an unknown moderation state"),
        (_outside(pf.p_label.a, UNKNOWN_LABEL, MISINFO_LABEL + 1), "posts have an unknown fact-check label"),
        (_outside(pf.c_post.a, 0, n["post"]), "comments name posts that do not exist"),
        (_outside(pf.c_author.a, 0, n["user"]), "comments name authors that are not users"),
    ]
    counters = (pf.u_followers, pf.u_followings, pf.p_likes, pf.p_dislikes, pf.p_shares, pf.p_reports)
    for counter in (*counters, pf.p_comments, pf.c_likes, pf.c_dislikes):
        checks.append((int(np.count_nonzero(counter.a < 0)), "counters are negative"))
    for rel, (*_, kind_a, kind_b) in OASIS_RELATIONS.items():
        a, b = unpack_keys(pf.rel[rel].keys())
        row_ids = pf.rel[rel].values()
        checks.append((_outside(a, 0, n[kind_a]) + _outside(b, 0, n[kind_b]), f"{rel} rows name missing ids"))
        checks.append((int(len(row_ids) > 0 and pf.next_row_id[rel] <= row_ids.max()), f"{rel} row ids repeat"))
    if pf.step < 0 or not MINUTE_RANGE[0] <= pf.minute <= MINUTE_RANGE[1]:
        return f"its clock (step {pf.step}, minute {pf.minute}) is out of range"
    return next((f"{what} ({count} row{'s' if count > 1 else ''})" for count, what in checks if count), None)
