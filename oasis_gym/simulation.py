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

The data types (`ObsBatch`, `ActionArrays`, `StepOutcome`) live in `batches.py`, the settings
in `simulation_config.py`; building the observations in `observation.py` (`Observer`) and the
LLM users' feed views in `feed_views.py` (`FeedViews`), both mixins of `Simulation`; the
step's input checks in `step_input.py`; template texts and stances in `content.py`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Callable

import numpy as np

from .actions import COMMENT_TARGET, POST_TARGET, USER_TARGET
from .batches import (
    COMMENT_FEATURES,
    FEED_FEATURES,
    FEED_INDEX,
    SELF_FEATURES,
    USER_FEATURES,
    ActionArrays,
    ObsBatch,
    RewardFn,
    StepOutcome,
    engagement_reward,
)
from .clock import Clock, sample_active
from .content import fill_text, score_stance
from .errors import ConfigError
from .feed_views import FeedViews
from .observation import Observer
from .platform import ActionBatch, Journal, JournalError, Platform, PlatformConfig
from .platform.journal import RowWriter, Same, read_meta
from .platform.journal_file import JournalLock
from .platform.platform import REPOST
from .platform_agents import ModeratorAgent, RecommenderAgent, exposure_stats
from .recsys import make_recommender
from .simulation_config import SimulationConfig, check_resumable, platform_config
from .step_atomic import capture, restore
from .step_input import check_step_input

# the data types live in batches.py, the settings in simulation_config.py; policies and envs
# import them from here too
__all__ = [
    "Simulation",
    "SimulationConfig",
    "check_resumable",
    "ActionArrays",
    "ObsBatch",
    "StepOutcome",
    "RewardFn",
    "engagement_reward",
    "FEED_FEATURES",
    "COMMENT_FEATURES",
    "USER_FEATURES",
    "SELF_FEATURES",
    "FEED_INDEX",
]


class Simulation(Observer, FeedViews):
    """Batched social-media simulation over a fixed user population."""

    def __init__(
        self,
        population,
        config: SimulationConfig | None = None,
        reward_fn: RewardFn | None = None,
        setup: Callable[[Simulation], None] | None = None,
    ):

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
        """The platform's settings (`simulation_config.platform_config`)."""
        return platform_config(self.config)

    def reset(self, seed: int | None = None) -> ObsBatch:
        """Start a new episode (a new journal) from the population; the first users' observations."""
        if self.population is None:
            raise RuntimeError(
                "this simulation was resumed from a journal and has no starting population: "
                "make a new env (with users=...) to start a new episode"
            )
        with contextlib.suppress(JournalError):  # a failed episode's journal: raised at its steps already
            self._close_journal(query_indexes=False)  # the new episode's journal replaces it
        self.seed = seed
        seqs = np.random.SeedSequence(seed).spawn(3)
        self.rng_active, self.rng_recsys, self.rng_text = (np.random.default_rng(s) for s in seqs)
        self.platform = Platform(self.platform_config(), start_minute=self.clock.start_minute)
        self.platform.add_users(self.population)
        self.db_path = self._fresh_db_path()
        # a new episode, a new journal: never over a file that is not ours without `overwrite`
        self.journal = Journal(
            self.db_path,
            new=True,
            overwrite=self.config.overwrite or self._tmpdir is not None,
            own_journal_id=self._journal_id,
        )
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
        return {
            "config": dataclasses.asdict(self.config),
            "seed": self.seed,
            "rng": [g.bit_generator.state for g in self._generators()],
            "views": [[u, kind, ids.tolist()] for u, (kind, ids) in self.views.items()],
            "state": {name: fn() for name, fn in self.state_providers.items()},
            "recsys_weights": (np.asarray(self.recsys.weights).tolist() if hasattr(self.recsys, "weights") else None),
        }

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
        checked = check_step_input(acts, platform_actions, self.platform_agents)

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

    def _step(self, users: np.ndarray, cols: tuple, texts_in, stance_in, platform_actions: dict) -> StepOutcome:
        """One step in named phases: platform agents act, the users' actions are admitted and
        resolved to targets, the platform applies them, then the step is committed."""
        served = None
        if self.platform_agents:
            served = exposure_stats(self)
        if "moderator_0" in platform_actions:
            self.platform_agents["moderator_0"].apply(self, platform_actions["moderator_0"])
        batch, ignored = self._admit(users, cols, texts_in, stance_in)
        out = self._apply(batch, ignored)
        if "recommender_0" in platform_actions:
            self.platform_agents["recommender_0"].apply(self, platform_actions["recommender_0"])
        self._commit(out, served)
        return out

    def _admit(self, users: np.ndarray, cols: tuple, texts_in, stance_in) -> tuple[ActionBatch, np.ndarray]:
        """The actions of active users (a user's first action only), their feed slots turned
        into platform ids, texts and stances filled; and the users whose actions were ignored."""
        obs = self.obs
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
            fill_text(self.platform, self.rng_text, users, action, texts, stance)
        if self.config.stance_scorer == "lexicon":
            score_stance(action, texts, stance)
        return ActionBatch(users, action, target, texts, stance), ignored

    def _apply(self, batch: ActionBatch, ignored: np.ndarray) -> StepOutcome:
        """The platform applies the batch; the outcome carries rewards and resolved targets."""
        pf = self.platform
        users, action, target, texts = batch.user, batch.action, batch.target, batch.text
        res, new_ids = pf.apply(batch)
        self._record_views(users, action, texts, res)
        # the platform resolves reposts to roots; recompute the resolved target for rewards
        resolved = target.copy()
        on_post = np.isin(action, list(POST_TARGET)) & (target >= 0) & (target < pf.n_posts)
        resolved[on_post] = np.where(
            pf.p_kind.a[target[on_post]] == REPOST, pf.p_root.a[target[on_post]], target[on_post]
        )
        out = StepOutcome(users, action, resolved, res, new_ids, np.zeros(0, np.float32), ignored)
        out.rewards = self.reward_fn(self, out)
        self.recsys.update(pf)
        self.last_outcome = out
        return out

    def _commit(self, out: StepOutcome, served) -> None:
        """Journal the step (hooks first, in its transaction), advance the clock, activate the
        next users and reward the platform agents; a failure anywhere leaves neither memory
        nor journal changed (the caller restores memory, the journal aborts)."""
        pf, obs = self.platform, self.obs

        def extra(conn):
            for hook in self.step_hooks:
                self.hooks_ran.append(hook)  # (a failed step rolls back the state of those that ran)
                hook(self, out, conn)
            if self.config.log_recs and len(obs.users):
                r, k = np.nonzero(obs.post_ids >= 0)
                RowWriter(conn).rows(
                    "INSERT INTO rec(user_id, post_id, step) VALUES ", [obs.users[r], obs.post_ids[r, k], Same(pf.step)]
                )

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
