"""The platform side of a task episode's stages: what `SimWorld` (`sim_world.py`) carries onto the platform.

`PlatformWorld` holds what both halves of a platform-backed Recommender-v4 / Moderator-v2 step
share (`SimWorld` is the one world: `backend="platform"`, the env's `world`): at each stage the
model's decisions (`oasis_gym.model`, called as on the fast path) are carried onto the episode's
`Platform`, as OASIS would record them:

- the task population are platform users with the model's follow graph (their followers are
  the model's `fans`); each misinformation account's campaign bots are accounts of their own;
- campaign bots' likes are `LIKE_POST` rows of the bot accounts, applied when the model makes
  them (before the feeds are ranked: `bot_liked`), brigades' reports `REPORT_POST` rows of the
  brigaders (`brigaded`); a returning account is a new platform account aliased to the model's
  user (its old account stays suspended, its followers do not follow it: `returned`);
- the moderator's removals and suspensions are `Platform.moderate(REMOVED)` / `suspend`
  (`moderated`);
- after each apply, the counters the platform holds (likes, reposts and reports of each post in
  the ring, followers of each user) are read back into the model's arrays (`_read_counters`),
  so every count the model reads is the platform's. Were a row refused (`rejected`), the counts
  would differ from the fast path's and the agreement test (tests/test_one_world.py) would fail.

The model's own state (satisfaction, churn, opinions, post quality, arousal, topic, label,
impressions ...) stays in the engine's arrays beside the platform.
"""

from __future__ import annotations

import numpy as np

from ..actions import ActionType as A
from ..platform import Platform
from ..platform.config import REMOVED
from ..platform.records import ActionBatch
from ..population import Population
from .texts import post_texts

STEP_MINUTES = 3  # the platform clock of one task step (the model reads steps only)


def _population(n: int, opinion=None, follow_src=None, follow_dst=None, names: str = "u") -> Population:
    """A platform `Population` of `n` task accounts (template profiles, the given follow graph)."""
    empty = np.zeros(0, np.int64)
    return Population(
        n=n,
        user_name=[f"{names}{i}" for i in range(n)],
        name=[f"{names}{i}" for i in range(n)],
        bio=[""] * n,
        persona=[""] * n,
        activity=np.zeros((n, 24), np.float32),
        follow_src=empty if follow_src is None else follow_src,
        follow_dst=empty if follow_dst is None else follow_dst,
        previous_posts=[],
        opinion=np.zeros(n, np.float32) if opinion is None else opinion,
        interests=np.zeros(n, np.uint64),
        is_core=np.zeros(n, bool),
        extra=None,
        source="task",
    )


def new_pairs(before: np.ndarray, after: np.ndarray, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """The (slot, user) pairs set in `after` and not in `before` (`PairSet.bits` of K = 1),
    by slot then user."""
    diff = after & ~before
    rows = np.flatnonzero(diff.any(1))
    if len(rows) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    bits = np.unpackbits(diff[rows].view(np.uint8), axis=1, bitorder="little")
    r, user = np.nonzero(bits)
    return rows[r] % slots, user.astype(np.int64)


class PlatformWorld:
    """The platform side of one task episode's stages (module docstring); `SimWorld` is the world."""

    def __init__(self, engine, journal: bool = False, db_path=None, overwrite: bool = False):
        if engine.k != 1:
            raise ValueError("the platform backend runs one episode (K = 1)")
        if not engine.dynamics.oasis_rules:
            raise ValueError("the platform backend needs OASIS's rules (Recommender-v4, Moderator-v2)")
        self.engine, self.state = engine, engine.state
        self.journal_on, self.db_path, self.overwrite = bool(journal), db_path, bool(overwrite)
        self.writes_texts = self.journal_on  # whether something reads the posts' texts (`_texts`)
        self.platform: Platform | None = None

    # ------------------------------------------------------------------ the stages
    def begin(self) -> None:
        """Before the step: what the diffs of this step's stages start from."""
        st = self.state
        self._removed = st.removed[0].copy()
        self._suspended = st.suspended_at[0].copy()
        self._bot_bits = None if st.bot_pairs is None else st.bot_pairs.bits.copy()
        self._next_post = int(st.next_post[0])

    def moderated(self) -> None:
        """The moderator's removals and suspensions, as platform moderation."""
        st, pf = self.state, self.platform
        removed = np.flatnonzero(st.removed[0] & ~self._removed & (self.pid >= 0))
        if len(removed):
            pf.moderate(self.pid[removed], REMOVED)
        suspended = np.flatnonzero((st.suspended_at[0] >= 0) & (self._suspended < 0))
        if len(suspended):
            pf.suspend(self.alias[suspended])

    def bot_liked(self) -> None:
        """The campaign bots' new likes: one `LIKE_POST` row per bot account and post, applied now
        (before the feeds are ranked)."""
        st = self.state
        if self._bot_bits is None:
            return
        slot, account = new_pairs(self._bot_bits, st.bot_pairs.bits, st.p)
        if len(slot) == 0:
            return
        bots = self.bots[account]  # (m, a)
        likes = np.full(bots.size, int(A.LIKE_POST))
        self._apply(ActionBatch(bots.ravel(), likes, np.repeat(self.pid[slot], bots.shape[1])))
        self._read_counters()  # the ranking of this step reads the likes the platform counts

    def returned(self) -> None:
        """Returning accounts: new platform accounts aliased to the model's users."""
        st = self.state
        back = np.flatnonzero((st.suspended_at[0] < 0) & (self._suspended >= 0))
        if len(back):
            ids = self.platform.add_users(_population(len(back), st.opinion[0, back].copy(), names="returned"))
            self.alias[back] = ids

    def brigaded(self) -> None:
        """The brigades' reports: the pairs new in `State.reported_pairs` since the responses."""
        st = self.state
        slot, user = new_pairs(self._reported, st.reported_pairs.bits, st.p)
        self._add(self.alias[user], A.REPORT_POST, self.pid[slot])

    def _add(self, users: np.ndarray, action: A, targets: np.ndarray) -> None:
        if len(users):
            self._rows.append((np.asarray(users, np.int64), int(action), np.asarray(targets, np.int64)))

    def _texts(self, ids: np.ndarray) -> list[str]:
        """The texts of the new posts `ids`: written from the model's attributes (`texts.py`) where
        something reads them (`writes_texts`: a journal, a user policy other than the task users'),
        else a placeholder (the fast training path pays nothing)."""
        if self.writes_texts:
            return post_texts(self.state, ids)
        return [f"post {i}" for i in ids.tolist()]

    def _apply(self, batch: ActionBatch) -> np.ndarray:
        """`Platform.apply`, counting the rows it refused (0 while OASIS's rules are kept); new ids."""
        res, new_id = self.platform.apply(batch)
        self.rejected += int((res != 0).sum())
        return new_id

    def _read_counters(self) -> None:
        """The counters the platform holds, read back into the model's arrays: likes, reposts and
        reports of the posts in the ring, followers of each user's account now."""
        st, pf = self.state, self.platform
        live = np.flatnonzero((st.post_id[0] >= 0) & (self.pid >= 0))
        p = self.pid[live]
        for name, column in (("likes", pf.p_likes), ("shares", pf.p_shares), ("reports", pf.p_reports)):
            getattr(st, name)[0, live] = column.a[p].astype(np.float32)
        st.fans[0] = pf.u_followers.a[self.alias].astype(np.float32)
