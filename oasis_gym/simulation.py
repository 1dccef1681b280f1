"""The batched simulation core under the PettingZoo adapter.

`Simulation` owns the platform, its SQLite journal, the recommender, the clock and the
seeded random generators. Everything here works on arrays of active users: observations are
built for all active users at once, and `step` takes one columnar batch of actions.

One step:
    check every input -> actions (slots) -> ids via the feeds the users saw -> Platform.apply
    -> rewards -> step hooks + the step's rows (one transaction, not yet committed) -> clock
    advance -> who is active next -> feeds -> obs -> commit

The commit's SQL runs on the journal's writer thread while the next step is computed (see
`Journal`); step hooks run in the calling thread, first in the step's transaction. A step is
atomic: anything failing before the commit restores the state before the call
(`step_atomic`), and the database never sees the step.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .actions import (
    ACTION_NAMES,
    ALL_ACTIONS,
    COMMENT_TARGET,
    NUM_ACTIONS,
    POST_TARGET,
    REDDIT_DEFAULT_ACTIONS,
    TWITTER_DEFAULT_ACTIONS,
    USER_TARGET,
    ActionType as A,
    Result as R,
)
from .clock import Clock, sample_active
from .content import lexicon_stance, template_text
from .errors import ConfigError
from .platform import REMOVED, ActionBatch, Journal, JournalError, Platform, PlatformConfig
from .platform.journal import RowWriter, Same, read_meta
from .platform.journal_file import JournalLock
from .platform.platform import MODERATION_NAMES, QUOTE, REPOST

FEED_FEATURES = (
    "followed_author", "likes", "dislikes", "shares", "comments", "age_minutes", "reports",
    "moderation", "author_followers", "similarity", "stance", "stance_known",
    "liked_by_me", "disliked_by_me", "reposted_by_me", "is_quote",
)
COMMENT_FEATURES = ("likes", "dislikes", "liked_by_me", "disliked_by_me", "stance")
USER_FEATURES = ("followers", "followed_by_me", "muted_by_me", "from_search")
SELF_FEATURES = ("followers", "followings", "posts", "opinion", "hour", "step")
FEED_INDEX = {name: i for i, name in enumerate(FEED_FEATURES)}

# Info-action view kinds shaping a user's next observation
_VIEW_TREND, _VIEW_SEARCH_POSTS, _VIEW_SEARCH_USERS = 1, 2, 3


@dataclass
class ObsBatch:
    """Observations of a batch of users, as arrays with one row per user."""

    users: np.ndarray           # (n,) user ids
    post_ids: np.ndarray        # (n, K) int64, -1 padded
    feed: np.ndarray            # (n, K, len(FEED_FEATURES)) float32
    comment_ids: np.ndarray     # (n, K*C) int64, -1 padded (C newest comments of each slot)
    comments: np.ndarray        # (n, K*C, len(COMMENT_FEATURES)) float32
    user_ids: np.ndarray        # (n, U) int64: feed authors (K) then search results (S)
    user_feats: np.ndarray      # (n, U, len(USER_FEATURES)) float32
    self_feats: np.ndarray      # (n, len(SELF_FEATURES)) float32
    mask_type: np.ndarray       # (n, NUM_ACTIONS) int8
    mask_post: np.ndarray       # (n, K) int8
    mask_comment: np.ndarray    # (n, K*C) int8
    mask_user: np.ndarray       # (n, U) int8

    def __len__(self) -> int:
        return len(self.users)

    def take(self, rows: np.ndarray) -> "ObsBatch":
        """The observations of a subset of rows (e.g. the users one policy drives)."""
        return ObsBatch(*(getattr(self, f.name)[rows] for f in dataclasses.fields(self)))


@dataclass
class ActionArrays:
    """A batch of slot-based actions (the fast path): one row per acting user."""

    users: np.ndarray
    type: np.ndarray
    post: np.ndarray | None = None
    comment: np.ndarray | None = None
    user: np.ndarray | None = None
    text: Sequence[str | None] | None = None
    stance: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.users)

    @classmethod
    def empty(cls) -> "ActionArrays":
        return cls(np.empty(0, np.int64), np.empty(0, np.int64))

    @classmethod
    def concat(cls, parts: Sequence["ActionArrays"]) -> "ActionArrays":
        """Join the actions of several policies into one batch (missing columns filled)."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()

        def col(name: str, fill, dtype):
            return np.concatenate([np.asarray(getattr(p, name), dtype=dtype) if getattr(p, name) is not None
                                   else np.full(len(p), fill, dtype=dtype) for p in parts])
        text = [t for p in parts for t in (p.text if p.text is not None else [None] * len(p))]
        return cls(col("users", 0, np.int64), col("type", 0, np.int64), col("post", 0, np.int64),
                   col("comment", 0, np.int64), col("user", 0, np.int64), text, col("stance", np.nan, np.float32))


@dataclass
class StepOutcome:
    users: np.ndarray           # users whose actions were applied
    actions: np.ndarray         # their action codes
    targets: np.ndarray         # resolved target ids
    results: np.ndarray         # Result code per action
    new_ids: np.ndarray         # created post/comment ids or -1
    rewards: np.ndarray         # (n_users,) float32
    ignored: np.ndarray         # users who sent an action while inactive (not applied)
    platform_rewards: dict = field(default_factory=dict)  # recommender_0 / moderator_0 rewards


RewardFn = Callable[["Simulation", StepOutcome], np.ndarray]


def engagement_reward(sim: "Simulation", out: StepOutcome) -> np.ndarray:
    """Default reward: engagement each user RECEIVED this step — likes on their posts and
    comments, reposts/quotes and comments on their posts, and new followers (+1 each)."""
    pf = sim.platform
    rewards = np.zeros(pf.n_users, dtype=np.float32)
    ok = out.results == R.OK
    a, t = out.actions[ok], out.targets[ok]
    on_post = np.isin(a, [A.LIKE_POST, A.REPOST, A.QUOTE_POST, A.CREATE_COMMENT])
    np.add.at(rewards, pf.p_author.a[t[on_post]], 1.0)
    on_comment = a == A.LIKE_COMMENT
    np.add.at(rewards, pf.c_author.a[t[on_comment]], 1.0)
    np.add.at(rewards, t[a == A.FOLLOW], 1.0)
    return rewards


@dataclass
class SimulationConfig:
    """Arguments of a simulation (the env's keyword arguments map onto these)."""

    platform: str = "twitter"
    available_actions: tuple[int, ...] | None = None   # None: the platform's OASIS defaults
    recsys: str = "twitter"
    recsys_params: dict = field(default_factory=dict)
    feed_size: int = 10                                 # K post slots
    comments_per_post: int = 2                          # C comment slots per post slot
    search_size: int = 5                                # S user slots from search results
    minutes_per_step: int = 3
    start_hour: int = 8
    activation: str | float = "activity"                # "activity" (24-h vectors) or a flat probability
    max_cycles: int = 50
    db_path: str | None = None                          # None: a temp file; ":memory:" allowed
    overwrite: bool = False                             # reset may replace an existing journal at db_path
    allow_self_rating: bool = True
    max_text_length: int = 5000
    auto_text: bool = True                              # fill missing text of text actions from a template
    log_recs: bool = False                              # journal every served feed into `rec`
    stance_scorer: str | None = "lexicon"               # stance of texts sent without one (None: unknown)
    recommender_agent: bool = False                     # add the trainable recommender_0
    moderator_agent: bool = False                       # add the trainable moderator_0
    platform_agent_params: dict = field(default_factory=dict)  # {"recommender": {...}, "moderator": {...}}


class Simulation:
    """Batched social-media simulation over a fixed user population."""

    def __init__(self, population, config: SimulationConfig | None = None,
                 reward_fn: RewardFn | None = None, setup: Callable[["Simulation"], None] | None = None):
        from .recsys import make_recommender

        self.population = population
        self.config = cfg = config or SimulationConfig()
        if cfg.feed_size < 1 or cfg.comments_per_post < 0 or cfg.search_size < 0:
            raise ValueError("feed_size must be >= 1, comments_per_post and search_size >= 0")
        if isinstance(cfg.max_cycles, bool) or not isinstance(cfg.max_cycles, (int, np.integer)) or cfg.max_cycles < 1:
            raise ConfigError(f"max_cycles must be a whole number >= 1, got {cfg.max_cycles!r}")
        self.clock = Clock(cfg.minutes_per_step, cfg.start_hour)
        self.recsys = make_recommender(cfg.recsys, **cfg.recsys_params)
        self.reward_fn = reward_fn or engagement_reward
        self.setup = setup
        # fn(sim, outcome, conn), first in the step's transaction: the journal holds the steps
        # before, memory this one; platform changes a hook makes (posts, ...) join the step
        self.step_hooks: list[Callable] = []
        # name -> fn() returning JSON-able state saved in the journal each step (policies, ...)
        self.state_providers: dict[str, Callable[[], dict]] = {}
        self.K, self.C, self.S = cfg.feed_size, cfg.comments_per_post, cfg.search_size
        self.platform_agents: dict = {}
        if cfg.recommender_agent or cfg.moderator_agent:
            from .platform_agents import ModeratorAgent, RecommenderAgent

            params = cfg.platform_agent_params
            if cfg.recommender_agent:
                self.platform_agents["recommender_0"] = RecommenderAgent(**params.get("recommender", {}))
            if cfg.moderator_agent:
                self.platform_agents["moderator_0"] = ModeratorAgent(**params.get("moderator", {}))
            for agent in self.platform_agents.values():
                agent.check(self)
        self.platform_obs: dict[str, np.ndarray] = {}
        self.hooks_ran: list = []  # step hooks run by the step in progress
        self.U = self.K + self.S
        self._tmpdir: str | None = None
        self.platform: Platform | None = None
        self.journal: Journal | None = None
        self.db_path: str | None = None
        self._journal_id: str | None = None  # of the journal this Simulation created (reset may replace it)

    # ------------------------------------------------------------------ lifecycle
    def platform_config(self) -> PlatformConfig:
        cfg = self.config
        if cfg.available_actions is not None:
            actions = tuple(int(a) for a in cfg.available_actions)
        else:
            actions = tuple(int(a) for a in {"twitter": TWITTER_DEFAULT_ACTIONS,
                                              "reddit": REDDIT_DEFAULT_ACTIONS}.get(cfg.platform, ALL_ACTIONS))
        return PlatformConfig(name=cfg.platform, available_actions=actions,
                              allow_self_rating=cfg.allow_self_rating, max_text_length=cfg.max_text_length)

    def reset(self, seed: int | None = None) -> ObsBatch:
        if self.population is None:
            raise RuntimeError("this simulation was resumed from a journal and has no starting population: "
                               "make a new env (with users=...) to start a new episode")
        with contextlib.suppress(JournalError):  # a failed episode's journal: raised at its steps already
            self._close_journal(query_indexes=False)  # the new episode's journal replaces it
        self.seed = seed
        seqs = np.random.SeedSequence(seed).spawn(3)
        self.rng_active, self.rng_recsys, self.rng_text = (np.random.default_rng(s) for s in seqs)
        self.platform = Platform(self.platform_config(), start_minute=self.clock.start_minute)
        self.platform.add_users(self.population)
        self.db_path = self._fresh_db_path()
        # a new episode, a new journal: never over a file that is not ours without `overwrite`
        self.journal = Journal(self.db_path, new=True, overwrite=self.config.overwrite or self._tmpdir is not None,
                               own_journal_id=self._journal_id)
        self._journal_id = self.journal.journal_id
        if self.setup is not None:
            self.setup(self)
        self.recsys.reset(self.platform, self.rng_recsys)
        self.views: dict[int, tuple[int, np.ndarray]] = {}  # user -> pending info-action view
        self.last_outcome: StepOutcome | None = None
        self.journal.commit_step(self.platform, meta=self._meta())
        return self._activate()

    def _fresh_db_path(self) -> str:
        path = self.config.db_path
        if path is None:
            self._tmpdir = self._tmpdir or tempfile.mkdtemp(prefix="oasis_gym_")
            path = os.path.join(self._tmpdir, "run.db")
        return str(path)

    def close(self) -> None:
        """Close the journal (and release its writer's lock). A journal in a temp dir of our
        own (no `db_path` given) is deleted when the Simulation is garbage-collected; pass
        `db_path` to keep it (its query indexes are built now)."""
        self._close_journal(query_indexes=self.config.db_path not in (None, ":memory:"))

    def _close_journal(self, query_indexes: bool) -> None:
        journal, self.journal = self.journal, None
        if journal is not None:
            journal.close(query_indexes=query_indexes)

    def __del__(self) -> None:
        try:
            self.close()
            if self._tmpdir is not None:
                import shutil

                shutil.rmtree(self._tmpdir, ignore_errors=True)
        except Exception:  # interpreter shutdown: modules may be gone
            pass

    def _generators(self) -> tuple[np.random.Generator, ...]:
        return self.rng_active, self.rng_recsys, self.rng_text

    def _meta(self) -> dict:
        """Saved with every step: what `resume` needs to continue exactly (generator states as
        they are before the next activation, pending info-action views, provider states)."""
        return {"config": dataclasses.asdict(self.config), "seed": self.seed,
                "rng": [g.bit_generator.state for g in self._generators()],
                "views": [[u, kind, ids.tolist()] for u, (kind, ids) in self.views.items()],
                "state": {name: fn() for name, fn in self.state_providers.items()},
                "recsys_weights": (np.asarray(self.recsys.weights).tolist() if hasattr(self.recsys, "weights") else None)}

    def resume(self, db_path: str) -> ObsBatch:
        """Continue from a journal: restore the platform, generators and pending views, then
        activate the next step's users exactly as the uninterrupted run would have."""

        self.close()
        meta = check_resumable(read_meta(db_path), db_path)
        lock = JournalLock(str(db_path))  # the writer's lock first: nothing is read while another run writes
        try:
            self.platform = Platform.from_db(db_path)
        except BaseException:  # the journal is left exactly as it was
            lock.release()
            raise
        self.journal = Journal(db_path, lock=lock)
        self.db_path, self._journal_id = str(db_path), self.journal.journal_id
        self.seed = meta.get("seed")
        self.rng_active, self.rng_recsys, self.rng_text = (np.random.default_rng() for _ in range(3))
        self.recsys.reset(self.platform, np.random.default_rng(0))  # caches only: rebuilt from state
        for g, state in zip(self._generators(), meta["rng"]):
            g.bit_generator.state = state
        self.views = {int(u): (int(kind), np.asarray(ids, dtype=np.int64)) for u, kind, ids in meta.get("views", [])}
        self.saved_state = meta.get("state", {})
        if meta.get("recsys_weights") is not None and hasattr(self.recsys, "set_weights"):
            self.recsys.set_weights(np.asarray(meta["recsys_weights"], dtype=np.float32))
        self.last_outcome = None
        return self._activate()

    # ------------------------------------------------------------------ activation + observations
    def _activate(self) -> ObsBatch:
        pf = self.platform
        act = self.config.activation
        flat = None if act == "activity" else float(act)
        eligible = pf.u_signed_up.a & ~pf.u_suspended.a
        self.active = sample_active(self.rng_active, pf.u_activity.a, self.clock.hour(pf.minute), flat, eligible)
        self.obs = self.observe(self.active)
        self.platform_obs = {name: agent.observe(self) for name, agent in self.platform_agents.items()}
        return self.obs

    def observe(self, users: np.ndarray) -> ObsBatch:
        """Build the observations of `users` (recsys feeds, or the view an info action asked for)."""
        pf, K, C, S = self.platform, self.K, self.C, self.S
        users = np.asarray(users, dtype=np.int64)
        n = len(users)
        post_ids = self.recsys.recommend(pf, users, K, self.rng_recsys) if n else np.empty((0, K), np.int64)
        post_ids = np.asarray(post_ids, dtype=np.int64).reshape(n, K).copy()
        search_users = np.full((n, S), -1, dtype=np.int64)
        if self.views:
            for row, u in enumerate(users.tolist()):
                view = self.views.pop(u, None)
                if view is None:
                    continue
                kind, ids = view
                if kind == _VIEW_SEARCH_USERS:
                    search_users[row, : min(S, len(ids))] = ids[:S]
                else:
                    post_ids[row] = -1
                    post_ids[row, : min(K, len(ids))] = ids[:K]
        # a view computed earlier may name posts removed since
        valid = post_ids >= 0
        if valid.any():
            valid &= pf.visible_posts_mask(users[:, None], post_ids)
            post_ids[~valid] = -1
        return self._features(users, post_ids, search_users)

    def _features(self, users: np.ndarray, post_ids: np.ndarray, search_users: np.ndarray) -> ObsBatch:
        pf, K, C = self.platform, self.K, self.C
        n = len(users)
        has = post_ids >= 0
        p = np.where(has, post_ids, 0)
        feed = np.zeros((n, K, len(FEED_FEATURES)), dtype=np.float32)
        authors = np.full((n, K), -1, dtype=np.int64)
        if pf.n_posts and has.any():
            authors = np.where(has, pf.p_author.a[p], -1)
            uu = np.broadcast_to(users[:, None], (n, K))
            f = feed
            f[..., FEED_INDEX["followed_author"]] = pf.rel["follow"].contains(uu, np.maximum(authors, 0))
            f[..., FEED_INDEX["likes"]] = pf.p_likes.a[p]
            f[..., FEED_INDEX["dislikes"]] = pf.p_dislikes.a[p]
            f[..., FEED_INDEX["shares"]] = pf.p_shares.a[p]
            f[..., FEED_INDEX["comments"]] = pf.p_comments.a[p]
            f[..., FEED_INDEX["age_minutes"]] = pf.minute - pf.p_minute.a[p]
            f[..., FEED_INDEX["reports"]] = pf.p_reports.a[p]
            f[..., FEED_INDEX["moderation"]] = pf.p_status.a[p]
            f[..., FEED_INDEX["author_followers"]] = pf.u_followers.a[np.maximum(authors, 0)]
            f[..., FEED_INDEX["similarity"]] = self.recsys.similarity(pf, users, post_ids)
            stance = pf.p_stance.a[p]
            f[..., FEED_INDEX["stance_known"]] = ~np.isnan(stance)
            f[..., FEED_INDEX["stance"]] = np.nan_to_num(stance)
            f[..., FEED_INDEX["liked_by_me"]] = pf.rel["like"].contains(uu, p)
            f[..., FEED_INDEX["disliked_by_me"]] = pf.rel["dislike"].contains(uu, p)
            f[..., FEED_INDEX["reposted_by_me"]] = pf.rel["repost"].contains(uu, p)
            f[..., FEED_INDEX["is_quote"]] = pf.p_kind.a[p] == QUOTE
            feed[~has] = 0.0
        # comments: the C newest of each post slot, hiding authors the viewer muted
        comment_ids = pf.recent_comments(post_ids.reshape(-1), C).reshape(n, K * C)
        cm = comment_ids >= 0
        comments = np.zeros((n, K * C, len(COMMENT_FEATURES)), dtype=np.float32)
        if cm.any():
            c = np.where(cm, comment_ids, 0)
            uc = np.broadcast_to(users[:, None], (n, K * C))
            cm &= ~pf.muted_mask(uc, pf.c_author.a[c])
            comment_ids[~cm] = -1
            comments[..., 0] = pf.c_likes.a[c]
            comments[..., 1] = pf.c_dislikes.a[c]
            comments[..., 2] = pf.rel["comment_like"].contains(uc, c)
            comments[..., 3] = pf.rel["comment_dislike"].contains(uc, c)
            comments[..., 4] = np.nan_to_num(pf.c_stance.a[c])
            comments[~cm] = 0.0
        # user slots: feed authors then search results
        user_ids = np.concatenate([authors, search_users], axis=1)
        um = (user_ids >= 0) & (user_ids != users[:, None])
        user_ids = np.where(um, user_ids, -1)
        user_feats = np.zeros((n, self.U, len(USER_FEATURES)), dtype=np.float32)
        if um.any():
            q = np.maximum(user_ids, 0)
            uu = np.broadcast_to(users[:, None], q.shape)
            user_feats[..., 0] = pf.u_followers.a[q]
            user_feats[..., 1] = pf.rel["follow"].contains(uu, q)
            user_feats[..., 2] = pf.rel["mute"].contains(uu, q)
            user_feats[:, self.K:, 3] = 1.0
            user_feats[~um] = 0.0
        self_feats = np.stack([pf.u_followers.a[users], pf.u_followings.a[users], pf.u_posts.a[users],
                               pf.u_opinion.a[users], np.full(n, self.clock.hour(pf.minute)),
                               np.full(n, pf.step)], axis=1).astype(np.float32)
        mask_type = self._type_mask(n, has, feed, cm, comments, um, user_feats)
        return ObsBatch(users, post_ids, feed, comment_ids, comments, user_ids, user_feats, self_feats,
                        mask_type, has.astype(np.int8), cm.astype(np.int8), um.astype(np.int8))

    def _type_mask(self, n, has, feed, cm, comments, um, user_feats) -> np.ndarray:
        """Which action types can succeed for each user given what they see (joint validity of
        a type with a particular slot is checked when the action is applied)."""
        avail = self.platform.available
        m = np.zeros((n, NUM_ACTIONS), dtype=bool)
        for a in (A.DO_NOTHING, A.REFRESH, A.TREND, A.SEARCH_POSTS, A.SEARCH_USER, A.CREATE_POST):
            m[:, a] = True
        liked, disliked, reposted = (feed[..., FEED_INDEX[k]] > 0 for k in ("liked_by_me", "disliked_by_me", "reposted_by_me"))
        m[:, A.LIKE_POST] = (has & ~liked).any(1)
        m[:, A.UNLIKE_POST] = (has & liked).any(1)
        m[:, A.DISLIKE_POST] = (has & ~disliked).any(1)
        m[:, A.UNDO_DISLIKE_POST] = (has & disliked).any(1)
        m[:, A.REPOST] = (has & ~reposted).any(1)
        for a in (A.QUOTE_POST, A.CREATE_COMMENT, A.REPORT_POST):
            m[:, a] = has.any(1)
        cl, cd = comments[..., 2] > 0, comments[..., 3] > 0
        m[:, A.LIKE_COMMENT] = (cm & ~cl).any(1)
        m[:, A.UNLIKE_COMMENT] = (cm & cl).any(1)
        m[:, A.DISLIKE_COMMENT] = (cm & ~cd).any(1)
        m[:, A.UNDO_DISLIKE_COMMENT] = (cm & cd).any(1)
        followed, muted = user_feats[..., 1] > 0, user_feats[..., 2] > 0
        m[:, A.FOLLOW] = (um & ~followed).any(1)
        m[:, A.UNFOLLOW] = (um & followed).any(1)
        m[:, A.MUTE] = (um & ~muted).any(1)
        m[:, A.UNMUTE] = (um & muted).any(1)
        m &= avail[None, :]
        m[:, A.DO_NOTHING] = True
        return m.astype(np.int8)

    # ------------------------------------------------------------------ step
    def step(self, acts: ActionArrays, platform_actions: dict | None = None) -> StepOutcome:
        """Apply a batch of slot-based actions of active users, journal the step, advance the clock
        and activate the next users. Actions of inactive users are ignored (returned in `ignored`).

        `platform_actions` holds the actions of `moderator_0` (applied first: removed posts can
        no longer be rated this step) and `recommender_0` (ranking weights of the next feeds).

        Atomic: every input is checked before anything is applied (a malformed one raises
        ValueError / KeyError), and if anything fails later (a step hook, a recommender), the
        platform, the journal, the generators and every other part of the state are restored
        exactly as they were before the call (see `step_atomic`), so a retry gives the result
        the failed call never had."""
        self.require_live()
        checked = self._check_step_input(acts, platform_actions)
        from .step_atomic import capture, restore

        saved = capture(self)
        try:
            return self._step(*checked)
        except BaseException:
            restore(self, saved)
            raise
        finally:
            self.platform.release()

    def require_live(self) -> None:
        """Raise a clear error unless an episode is open (reset or resumed, not closed)."""
        if self.platform is None:
            raise RuntimeError("no episode: call reset() first")
        if self.journal is None:
            raise RuntimeError("this env is closed (close() was called): call reset() to start a new episode")

    def _check_step_input(self, acts: ActionArrays, platform_actions) -> tuple:
        """Every input of a step, checked and normalized before anything is applied."""
        if platform_actions is not None and not isinstance(platform_actions, Mapping):
            raise TypeError(f"platform_actions must map platform agent names to actions, got {type(platform_actions).__name__}")
        platform_actions = dict(platform_actions or {})
        unknown = set(platform_actions) - set(self.platform_agents)
        if unknown:
            raise KeyError(f"no platform agent(s) {sorted(unknown)} in this env")
        platform_actions = {name: self.platform_agents[name].validate(a) for name, a in platform_actions.items()}
        try:
            raw_users = np.asarray(acts.users).reshape(-1)
        except (TypeError, ValueError) as err:
            raise ValueError(f"actions' users must be an array of user ids: {err}") from None
        n = raw_users.size
        users = _int_column(raw_users, n, 0, "users")
        cols = (_int_column(acts.type, n, A.DO_NOTHING, "type"), _int_column(acts.post, n, 0, "post"),
                _int_column(acts.comment, n, 0, "comment"), _int_column(acts.user, n, 0, "user"))
        texts = acts.text
        if texts is not None:
            if isinstance(texts, (str, bytes)) or not hasattr(texts, "__len__") or len(texts) != n:
                got = f"{len(texts)} entries" if hasattr(texts, "__len__") and not isinstance(texts, (str, bytes)) \
                    else type(texts).__name__
                raise ValueError(f"actions' text must be a sequence of one text (or None) per user: {n} users, got {got}")
        stance = None
        if acts.stance is not None:
            try:
                stance = np.asarray(acts.stance, dtype=np.float32).reshape(-1)
            except (TypeError, ValueError) as err:
                raise ValueError(f"actions' stance must be numbers (NaN: unknown): {err}") from None
            if stance.shape != (n,):
                raise ValueError(f"actions' stance has {stance.size} values for {n} users")
            if np.any(np.abs(stance[~np.isnan(stance)]) > 1):
                raise ValueError("actions' stance must lie in [-1, 1] (NaN: unknown)")
        return users, cols, texts, stance, platform_actions

    def _step(self, users: np.ndarray, cols: tuple, texts_in, stance_in, platform_actions: dict) -> StepOutcome:
        pf, obs = self.platform, self.obs
        served = None
        if self.platform_agents:
            from .platform_agents import exposure_stats

            served = exposure_stats(self)
        if "moderator_0" in platform_actions:
            self.platform_agents["moderator_0"].apply(self, platform_actions["moderator_0"])
        n = len(users)
        rows = np.searchsorted(obs.users, users)
        rows = np.minimum(rows, max(len(obs.users) - 1, 0))
        is_active = (len(obs.users) > 0) & (obs.users[rows] == users) if len(obs.users) else np.zeros(n, bool)
        first = np.zeros(n, dtype=bool)
        first[np.unique(users, return_index=True)[1]] = True
        take = np.flatnonzero(is_active & first)
        ignored = users[~(is_active & first)]
        rows, users = rows[take], users[take]
        action, post, comment, uslot = (c[take] for c in cols)
        target = np.full(len(take), -1, dtype=np.int64)

        def pick(table: np.ndarray, slots: np.ndarray, sel: np.ndarray) -> np.ndarray:
            ok = sel & (slots >= 0) & (slots < table.shape[1])
            target[ok] = table[rows[ok], slots[ok]]
            return ok

        pick(obs.post_ids, post, np.isin(action, list(POST_TARGET)))
        pick(obs.comment_ids, comment, np.isin(action, list(COMMENT_TARGET)))
        pick(obs.user_ids, uslot, np.isin(action, list(USER_TARGET)))
        texts = list(texts_in[i] for i in take) if texts_in is not None else [None] * len(take)
        stance = stance_in[take] if stance_in is not None else np.full(len(take), np.nan, dtype=np.float32)
        if self.config.auto_text:
            self._fill_text(users, action, texts, stance)
        self._score_stance(action, texts, stance)
        res, new_ids = pf.apply(ActionBatch(users, action, target, texts, stance))
        self._record_views(users, action, texts, res)
        # the platform resolves reposts to roots; recompute the resolved target for rewards
        resolved = target.copy()
        on_post = np.isin(action, list(POST_TARGET)) & (target >= 0) & (target < pf.n_posts)
        resolved[on_post] = np.where(pf.p_kind.a[target[on_post]] == REPOST, pf.p_root.a[target[on_post]],
                                     target[on_post])
        out = StepOutcome(users, action, resolved, res, new_ids, np.zeros(0, np.float32), ignored)
        out.rewards = self.reward_fn(self, out)
        self.recsys.update(pf)
        self.last_outcome = out
        if "recommender_0" in platform_actions:
            self.platform_agents["recommender_0"].apply(self, platform_actions["recommender_0"])

        def extra(conn):
            for hook in self.step_hooks:
                self.hooks_ran.append(hook)  # (a failed step rolls back the state of those that ran)
                hook(self, out, conn)
            if self.config.log_recs and len(obs.users):
                r, k = np.nonzero(obs.post_ids >= 0)
                RowWriter(conn).rows(
                    "INSERT INTO rec(user_id, post_id, step) VALUES ", [obs.users[r], obs.post_ids[r, k], Same(pf.step)])

        # the step's rows are built (hooks first), the next users activated, and only then is
        # the step committed: a failure anywhere before leaves neither memory nor journal changed
        journal = self.journal
        statements = journal.begin_step(pf, advance_minutes=self.clock.minutes_per_step, extra=extra, meta=self._meta())
        try:
            pf.reset_pending()
            pf.advance(self.clock.minutes_per_step)
            self._activate()
            out.platform_rewards = {}
            if "recommender_0" in self.platform_agents:
                out.platform_rewards["recommender_0"] = self.platform_agents["recommender_0"].reward(self, served)
            if "moderator_0" in self.platform_agents:
                out.platform_rewards["moderator_0"] = self.platform_agents["moderator_0"].reward(self)
            journal.finish_step(statements)
        except BaseException:
            journal.abort_step()
            raise
        return out

    def _score_stance(self, action, texts, stance) -> None:
        """Texts sent without a stance (e.g. by LLM users) get one from a cheap scorer, so
        rule-based users can react to them."""
        if self.config.stance_scorer != "lexicon":
            return
        need = np.flatnonzero(np.isin(action, [A.CREATE_POST, A.QUOTE_POST, A.CREATE_COMMENT]) & np.isnan(stance))
        need = [i for i in need.tolist() if isinstance(texts[i], str)]
        if need:
            stance[need] = lexicon_stance([texts[i] for i in need])

    def _fill_text(self, users, action, texts, stance) -> None:
        """Numeric policies send no text: give their text actions a short template text whose
        wording follows the user's opinion, and a stance equal to that opinion."""
        need = [i for i in np.flatnonzero(np.isin(action, [A.CREATE_POST, A.QUOTE_POST, A.CREATE_COMMENT,
                                                            A.SEARCH_POSTS, A.SEARCH_USER])) if texts[i] is None]
        if not need:
            return
        pf = self.platform
        for i in need:
            if action[i] in (A.SEARCH_POSTS, A.SEARCH_USER):
                texts[i] = _TOPIC_WORDS[int(self.rng_text.integers(len(_TOPIC_WORDS)))]
            else:
                op = float(pf.u_opinion.a[users[i]])
                texts[i] = template_text(np.array([op]), _TOPIC_WORDS[int(self.rng_text.integers(len(_TOPIC_WORDS)))],
                                         self.rng_text)[0]
                if np.isnan(stance[i]):
                    stance[i] = op

    def _record_views(self, users, action, texts, res) -> None:
        pf, K, S = self.platform, self.K, self.S
        ok = res == R.OK
        for i in np.flatnonzero(ok & np.isin(action, [A.TREND, A.SEARCH_POSTS, A.SEARCH_USER])):
            u, a = int(users[i]), action[i]
            if a == A.TREND:
                self.views[u] = (_VIEW_TREND, pf.trending(u, K))
            elif a == A.SEARCH_POSTS:
                self.views[u] = (_VIEW_SEARCH_POSTS, pf.search_posts(u, texts[i], K))
            else:
                self.views[u] = (_VIEW_SEARCH_USERS, pf.search_users(u, texts[i], S))

    # ------------------------------------------------------------------ text for LLM users
    def user_id(self, agent: str) -> int:
        """The user id of the agent named `user_<id>`; KeyError naming the agent if this
        env has no such user (`user_-1`, `user_007`, `user_999` of 50 users, ...)."""
        if isinstance(agent, str) and agent.startswith("user_"):
            digits = agent[len("user_"):]
            if digits.isascii() and digits.isdigit() and (digits == "0" or digits[0] != "0"):
                if self.platform is not None and int(digits) < self.platform.n_users:
                    return int(digits)
        n = self.platform.n_users if self.platform is not None else 0
        raise KeyError(f"no agent {agent!r} in this env (its users are user_0 .. user_{n - 1})")

    def _check_users(self, users) -> np.ndarray:
        if self.platform is None:
            raise RuntimeError("no episode: call reset() first")
        users = np.asarray(users).reshape(-1)
        if users.size and (not np.issubdtype(users.dtype, np.integer) or users.min() < 0
                           or users.max() >= self.platform.n_users):
            bad = [u for u in users.tolist() if not (isinstance(u, int) and 0 <= u < self.platform.n_users)]
            raise KeyError(f"no user(s) {bad[:5]} in this env (user ids are 0 .. {self.platform.n_users - 1})")
        return users.astype(np.int64)

    def profile_views(self, users: np.ndarray) -> list[dict]:
        """Feed views with an empty feed, for any user (active or not): an interview asks a
        user about themselves without serving a feed (which would draw from the generators)."""
        users = self._check_users(users)
        n = len(users)
        batch = self._features(users, np.full((n, self.K), -1, np.int64), np.full((n, self.S), -1, np.int64))
        return self.feed_views(users, obs=batch)

    def preview(self, users: np.ndarray) -> ObsBatch:
        """The observations `users` would get from a refresh now, with no side effect: the
        recommender ranks with a copy of its generator and its state is restored after, and
        pending info-action views stay pending. So reading an inactive user's feed never
        changes the run (same seed, same run)."""
        users = self._check_users(users)
        pf, n = self.platform, len(users)
        rng = np.random.Generator(type(self.rng_recsys.bit_generator)())
        rng.bit_generator.state = self.rng_recsys.bit_generator.state
        saved = self.recsys.checkpoint() if hasattr(self.recsys, "checkpoint") else None
        try:
            post_ids = self.recsys.recommend(pf, users, self.K, rng) if n else np.empty((0, self.K), np.int64)
            post_ids = np.asarray(post_ids, dtype=np.int64).reshape(n, self.K).copy()
            valid = post_ids >= 0
            if valid.any():
                valid &= pf.visible_posts_mask(users[:, None], post_ids)
                post_ids[~valid] = -1
            return self._features(users, post_ids, np.full((n, self.S), -1, dtype=np.int64))
        finally:
            if saved is not None:
                self.recsys.rollback(saved)

    def feed_views(self, users: np.ndarray, memories: dict[int, list[str]] | None = None,
                   obs: ObsBatch | None = None) -> list[dict]:
        """What an LLM user reads, one dict per user (slot order): an active user's current
        observation; any other user's is what a refresh would show them now (`preview`)."""
        users = self._check_users(users)
        pf, obs = self.platform, (obs if obs is not None else self.obs)
        source = {u: (obs, r) for r, u in enumerate(obs.users.tolist())}
        missing = np.unique([u for u in users.tolist() if u not in source]).astype(np.int64)
        if len(missing):
            extra = self.preview(missing)
            source.update({u: (extra, r) for r, u in enumerate(missing.tolist())})
        out = []
        time = pf.created_at()[:16]
        allowed_all = [ACTION_NAMES[a] for a in range(NUM_ACTIONS)]
        for u in users.tolist():
            obs, r = source[u]
            posts = []
            for slot, p in enumerate(obs.post_ids[r].tolist()):
                if p < 0:
                    continue
                a = int(pf.p_author.a[p])
                comments = []
                for cs in range(slot * self.C, (slot + 1) * self.C):
                    c = int(obs.comment_ids[r, cs])
                    if c >= 0:
                        comments.append({"slot": cs, "comment_id": c, "author_name": pf.u_user_name[int(pf.c_author.a[c])],
                                         "text": pf.c_content[c], "likes": int(pf.c_likes.a[c])})
                status = int(pf.p_status.a[p])
                posts.append({
                    "slot": slot, "post_id": p, "author_id": a, "author_name": pf.u_user_name[a],
                    "text": pf.p_content[p] if pf.p_quote[p] is None else pf.p_quote[p],
                    "quoted_text": pf.p_content[p] if pf.p_quote[p] is not None else None,
                    "likes": int(pf.p_likes.a[p]), "dislikes": int(pf.p_dislikes.a[p]),
                    "reposts": int(pf.p_shares.a[p]), "comments": int(pf.p_comments.a[p]),
                    "label": MODERATION_NAMES[status] if status and status != REMOVED else None,
                    "top_comments": comments})
            users_list = [{"slot": s, "user_id": int(v), "user_name": pf.u_user_name[int(v)], "bio": pf.u_bio[int(v)]}
                          for s, v in enumerate(obs.user_ids[r].tolist()) if v >= 0]
            out.append({
                "agent": f"user_{u}", "user_id": u, "user_name": pf.u_user_name[u], "name": pf.u_name[u],
                "persona": pf.u_persona[u] or pf.u_bio[u], "step": pf.step, "time": time,
                "allowed_actions": [allowed_all[a] for a in np.flatnonzero(obs.mask_type[r])],
                "posts": posts, "users": users_list,
                "memory": list((memories or {}).get(u, [])),
            })
        return out


def check_resumable(meta: dict, path) -> dict:
    """`meta` if it holds what `Simulation.resume` needs, else a `JournalError` naming `path`."""
    config = meta.get("config")
    problem = None
    if "step" not in meta:
        problem = "no step was committed"
    elif not isinstance(config, dict) or config.get("platform") not in ("twitter", "reddit"):
        problem = "its config is missing or names an unknown platform"
    elif set(config) - set(SimulationConfig.__dataclass_fields__):
        problem = f"its config has unknown keys {sorted(set(config) - set(SimulationConfig.__dataclass_fields__))}"
    elif not isinstance(meta.get("rng"), list) or len(meta["rng"]) != 3 or not all(isinstance(r, dict) for r in meta["rng"]):
        problem = "its generator states are missing"
    elif not isinstance(meta.get("state", {}), dict) or not isinstance(meta.get("views", []), list):
        problem = "its saved state is damaged"
    if problem:
        raise JournalError(f"{path}: cannot resume this journal: {problem}")
    return meta


def _int_column(values, n: int, default: int, name: str = "action") -> np.ndarray:
    if values is None:
        return np.full(n, default, dtype=np.int64)
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as err:
        raise ValueError(f"actions' {name} column is not an array: {err}") from None
    if arr.shape != (n,):
        raise ValueError(f"actions' {name} column has shape {arr.shape}, expected ({n},)")
    if not np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.uint64:
        if np.issubdtype(arr.dtype, np.bool_) or not np.issubdtype(arr.dtype, np.number):
            raise ValueError(f"actions' {name} column must hold integers, got {arr.dtype}")
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"actions' {name} column must hold integers, got non-integral {arr.dtype} values")
        if n and np.max(np.abs(arr.astype(np.float64))) >= 2**62:
            raise ValueError(f"actions' {name} column holds values out of the int64 range")
    return arr.astype(np.int64)


_TOPIC_WORDS = ("economy", "climate", "election", "health", "technology", "sports", "music", "science",
                "education", "travel", "food", "business")
