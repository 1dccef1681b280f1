"""A task episode on the platform: `backend="platform"` of Recommender-v4 and Moderator-v2.

`PlatformWorld` plugs into the fast path's `Engine` (K = 1) as its `tap`: the engine calls the
model's functions (`oasis_gym.model`: visits, candidates and ranking, the users' response,
posting, campaigns, brigades, moderation, fact-checks) exactly as on the fast path, and at each
stage of the step the world carries what the model decided onto a `Platform`, as OASIS would
record it:

- the task population are platform users with the model's follow graph (their followers are
  the model's `fans`); each misinformation account's campaign bots are accounts of their own;
- the users' responses to the feeds served are `LIKE_POST` (engaged, not reposted), `REPOST`
  and `REPORT_POST` rows of those users; new posts are `CREATE_POST` rows (stance on the row,
  the text written from the model's attributes by `texts.py` where a journal keeps it);
  campaign bots' likes are `LIKE_POST` rows of the bot accounts, brigades' reports
  `REPORT_POST` rows of the brigaders; a returning account is a new platform account aliased
  to the model's user (its old account stays suspended, its followers do not follow it);
- the moderator's removals and suspensions are `Platform.moderate(REMOVED)` / `suspend`;
  opinions of the visitors `Platform.set_opinions`;
- the feeds the model ranked are the feeds served: journaled in OASIS's `rec` table;
- the bots' likes are applied when the model makes them (before the feeds are ranked), the
  step's other rows in one `Platform.apply` at its end (OASIS's rules: a second like of a pair
  is refused); after each, the counters the platform holds (likes, reposts and reports of each
  post in the ring, followers of each user) are read back into the model's arrays, so every
  count the model reads is the platform's. Were a row refused, the counts would differ from the fast
  path's and the agreement test (tests/test_one_world.py) would fail.

The model's own state (satisfaction, churn, opinions, post quality, arousal, topic, label,
impressions ...) stays in the engine's arrays beside the platform. With a journal, every step
is one transaction of the platform's rows (`Journal.commit_step`).
"""

from __future__ import annotations

import numpy as np

from ..actions import ActionType as A
from ..platform import Platform
from ..platform.config import REMOVED, PlatformConfig
from ..platform.journal import Journal
from ..platform.journal_file import require_journal
from ..platform.journal_lock import JournalLock
from ..platform.records import ActionBatch
from ..platform.row_writer import RowWriter, Same
from ..population import Population
from . import task_state
from .texts import post_texts

# the task's own arrays saved with each step (`RecommenderTask`'s opinion spread, `ModeratorTask`'s queue)
TASK_ARRAYS = ("_prev_std", "queue_ids")

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
    """The platform side of one task episode (module docstring): the engine's `tap`."""

    def __init__(self, engine, journal: bool = False, db_path=None, overwrite: bool = False):
        if engine.k != 1:
            raise ValueError("the platform backend runs one episode (K = 1)")
        if not engine.dynamics.oasis_rules:
            raise ValueError("the platform backend needs OASIS's rules (Recommender-v4, Moderator-v2)")
        self.engine, self.state = engine, engine.state
        self.journal_on, self.db_path, self.overwrite = bool(journal), db_path, bool(overwrite)
        self.writes_texts = self.journal_on  # whether something reads the posts' texts (`_texts`)
        self.journal: Journal | None = None
        self._journal_id: str | None = None
        self.platform: Platform | None = None

    # ------------------------------------------------------------------ episodes
    def reset(self) -> None:
        """A new platform for the episode just reset in the engine: users, follow graph, bots."""
        st, pop = self.state, self.engine.population
        n = st.n
        self.platform = pf = Platform(PlatformConfig())
        src = np.repeat(np.arange(n, dtype=np.int64), pop.followees.shape[1])
        pf.add_users(_population(n, st.opinion[0].copy(), src, pop.followees.ravel().astype(np.int64)))
        self.alias = np.arange(n, dtype=np.int64)  # model user -> platform account now
        a = max(int(st.dyn.campaign_amplify), 0)
        accounts = np.flatnonzero(st.misinfo_account[0])
        self.bots = np.full((n, a), -1, np.int64)  # model user -> its campaign bots' accounts
        if a and len(accounts):
            ids = pf.add_users(_population(len(accounts) * a, names="bot"))
            self.bots[accounts] = ids.reshape(len(accounts), a)
        self.pid = np.full(st.p, -1, np.int64)  # ring slot -> platform post id
        self._rows: list[tuple[np.ndarray, int, np.ndarray]] = []
        self._posts: tuple[np.ndarray, np.ndarray] | None = None
        self._visitors = np.zeros(0, np.int64)
        self._served = (self._visitors, self._visitors)
        self.rejected = 0
        self._open_journal()

    def _open_journal(self) -> None:
        if self.journal is not None:
            self.journal.close()
            self.journal = None
        if not self.journal_on:
            return
        self.journal = Journal(
            ":memory:" if self.db_path is None else self.db_path,
            pipelined=False,
            new=True,
            overwrite=self.overwrite,
            own_journal_id=self._journal_id,
        )
        self._journal_id = self.journal.journal_id

    def close(self) -> None:
        """Close the journal (its writer's lock released)."""
        if self.journal is not None:
            self.journal.close()
            self.journal = None

    # ------------------------------------------------------------------ the engine's stages
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

    def responded(self, ua, served, valid, engaged, shared, reported) -> None:
        """The visitors' likes, reposts and reports of the posts served to them."""
        st = self.state
        targets = self.pid[st.slot(served)]
        users = np.broadcast_to(self.alias[ua][:, None], served.shape)
        for action, mask in ((A.LIKE_POST, engaged & ~shared), (A.REPOST, shared), (A.REPORT_POST, reported)):
            mask = mask & valid
            self._add(users[mask], action, targets[mask])
        self._visitors = ua
        self._served = (users[valid], targets[valid])  # the feeds the platform served (`rec` rows)
        self._reported = st.reported_pairs.bits.copy()

    def brigaded(self) -> None:
        """The brigades' reports: the pairs new in `State.reported_pairs` since the responses."""
        st = self.state
        slot, user = new_pairs(self._reported, st.reported_pairs.bits, st.p)
        self._add(self.alias[user], A.REPORT_POST, self.pid[slot])

    def _add(self, users: np.ndarray, action: A, targets: np.ndarray) -> None:
        if len(users):
            self._rows.append((np.asarray(users, np.int64), int(action), np.asarray(targets, np.int64)))

    def end(self) -> None:
        """Apply the step's rows (one `Platform.apply`: new posts, the users' likes, reposts and
        reports, the brigades' reports), the visitors' opinions, and read the platform's counters
        back into the model's arrays."""
        st, pf = self.state, self.platform
        first, last = self._next_post, int(st.next_post[0])
        new_ids = np.arange(first, last, dtype=np.int64)
        new_slots = st.slot(new_ids)
        authors = self.alias[st.author[0, new_slots]]
        users = [authors] + [r[0] for r in self._rows]
        acts = [np.full(len(authors), int(A.CREATE_POST))] + [np.full(len(r[0]), r[1]) for r in self._rows]
        targets = [np.full(len(authors), -1)] + [r[2] for r in self._rows]
        user = np.concatenate(users).astype(np.int64)
        act = np.concatenate(acts).astype(np.int64)
        texts = self._texts(new_ids) + [
            "misleading" if a == int(A.REPORT_POST) else None for a in act[len(authors) :].tolist()
        ]
        stance = np.full(len(user), np.nan, np.float32)
        stance[: len(authors)] = st.stance[0, new_slots]
        new_id = self._apply(ActionBatch(user, act, np.concatenate(targets).astype(np.int64), texts, stance))
        self.pid[new_slots] = new_id[: len(authors)]
        self._rows = []
        if len(self._visitors):
            pf.set_opinions(self.alias[self._visitors], st.opinion[0, self._visitors])
            self._visitors = np.zeros(0, np.int64)
        self._read_counters()

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

    # ------------------------------------------------------------------ the journal
    def commit(self, task, obs: np.ndarray) -> None:
        """End a step (or a reset) on the platform: with a journal, its rows and the task's state
        (`task_state`: the model's arrays, the world's maps, the task's `TASK_ARRAYS`, the
        observation `obs`) in one transaction; the clock moves on a step."""
        pf = self.platform
        if self.journal is None:
            pf.reset_pending()
            pf.advance(STEP_MINUTES)
            return
        arrays = task_state.state_arrays(self.state)
        arrays.update({f"world.{name}": getattr(self, name) for name in ("alias", "bots", "pid")})
        arrays["world.rejected"] = np.array(self.rejected)
        arrays.update({f"task.{name}": getattr(task, name) for name in TASK_ARRAYS if hasattr(task, name)})
        arrays["task.obs"] = np.asarray(obs)
        users, posts = self._served

        def extra(conn) -> None:
            if len(users):  # the served feeds, as the platform journals them (`rec`)
                RowWriter(conn).rows("INSERT INTO rec(user_id, post_id, step) VALUES ", [users, posts, Same(pf.step)])
            task_state.save(conn, arrays)

        self.journal.commit_step(pf, advance_minutes=STEP_MINUTES, extra=extra)
        self._served = (np.zeros(0, np.int64), np.zeros(0, np.int64))

    def resume(self, task) -> np.ndarray:
        """Continue the episode journaled at `db_path` from its last step: the platform from its
        rows (`Platform.from_db`), the model's and the task's arrays from `task_state`; returns
        the last observation. A journal without a task episode is refused (ValueError), untouched."""
        if not self.journal_on or self.db_path is None:
            raise ValueError("resume needs journal=True and the db_path of the episode")
        self.close()
        path = str(self.db_path)
        require_journal(path)  # (a missing path is refused, never created)
        lock = JournalLock(path)  # the writer's lock first: nothing is read while another run writes
        try:
            arrays = task_state.read(path)
            platform = Platform.from_db(path)
        except BaseException:  # the journal is left exactly as it was
            lock.release()
            raise
        self.journal = Journal(path, pipelined=False, lock=lock)
        self._journal_id, self.platform = self.journal.journal_id, platform
        task_state.restore_state(self.state, arrays)
        for name in ("alias", "bots", "pid"):
            setattr(self, name, arrays[f"world.{name}"].copy())
        self.rejected = int(arrays["world.rejected"])
        for name in TASK_ARRAYS:
            if f"task.{name}" in arrays:
                setattr(task, name, arrays[f"task.{name}"].copy())
        self._rows, self._visitors = [], np.zeros(0, np.int64)
        self._served = (self._visitors, self._visitors)
        return arrays["task.obs"]
