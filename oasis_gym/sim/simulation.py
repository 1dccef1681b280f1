"""The batched simulation engine under the PettingZoo adapter.

`Simulation` owns the platform, its SQLite journal, the recommender, the clock and the
seeded random generators. Everything here works on arrays of active users: observations are
built for all active users at once, and `step` takes one columnar batch of actions.

One step:
    check every input -> platform agents act first -> actions (slots) -> ids via the feeds
    the users saw -> Platform.apply -> rewards -> step hooks + the step's rows (one
    transaction, not yet committed) -> clock advance -> who is active next -> feeds -> obs
    -> commit

With `feeds_after_agents=True` a step is split in two calls (`begin` / `finish`, see
`split_step.py`): the platform agents act, then the feeds are built, then the users act.

The commit's SQL runs in place, or, in runs of 100,000 users and more (`pipelined`), on the
journal's writer thread while the next step is computed (see `Journal`); step hooks run in
the calling thread, first in the step's transaction. A step is atomic: anything failing
before the commit restores the state before the call (`step_atomic`), and the database never
sees the step.

Its collaborators, each in a module of its own: the data types (`batches.py`), the settings
(`config.py`), the users' default reward (`rewards.py`), building observations
(`observation.Observer`), the LLM users' feed views (`feed_views.FeedViews`), admitting the
users' actions (`admission.py`), the input checks (`step_input.py`), template texts and
stances (`content.py`), what a journal saves to resume (`journal_state.py`). Platform agents
plug in through `agent_protocol.PlatformAgent`: the engine names none of them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping

import numpy as np

from .. import blas
from ..actions import IS_POST_TARGET
from ..platform import ActionBatch, Journal, JournalError, Platform, PlatformConfig
from ..platform.platform import REPOST
from ..platform.row_writer import RowWriter, Same
from ..recsys import make_recommender
from . import journal_state, split_step
from .admission import admit
from .agent_protocol import AgentView, PlatformAgent
from .batches import ActionArrays, ObsBatch, StepOutcome
from .clock import Clock, sample_active
from .config import SimulationConfig, check_config, pipelined, platform_config
from .content import fill_text, score_stance
from .feed_views import FeedViews, user_id
from .heap import warm_heap
from .no_journal import NoJournal
from .observation import Observer
from .rewards import RewardFn, engagement_reward
from .step_atomic import capture, unless_committed
from .step_input import check_step_input


class Simulation:
    """Batched social-media simulation over a fixed user population; `platform_agents`:
    the platform-side agents by name (`agent_protocol`), driven in that order."""

    def __init__(
        self,
        population,
        config: SimulationConfig | None = None,
        reward_fn: RewardFn | None = None,
        setup: Callable[[Simulation], None] | None = None,
        platform_agents: Mapping[str, PlatformAgent] | None = None,
    ):

        self.population = population
        self.config = cfg = config or SimulationConfig()
        check_config(cfg)
        self.clock = Clock(cfg.minutes_per_step, cfg.start_hour)
        self.recsys = make_recommender(cfg.recsys, **cfg.recsys_params)
        self.reward_fn = reward_fn or engagement_reward
        self.setup = setup
        # fn(sim, outcome, conn), first in the step's transaction: the journal holds the steps
        # before, memory this one; platform changes a hook makes (posts, ...) join the step
        self.step_hooks: list[Callable] = []
        # fn(sim) -> the active users, sorted: called by the split step's `begin` after the
        # platform agents acted, it replaces `_activate`'s draw (a task world's visits)
        self.activation_hook: Callable | None = None
        # name -> fn() returning JSON-able state saved in the journal each step (policies, ...)
        self.state_providers: dict[str, Callable[[], dict]] = {}
        self.saved_state: dict = {}  # the states saved with the journal's last step (set by resume)
        self.observer = Observer(cfg.feed_size, cfg.comments_per_post, cfg.search_size, self.clock)
        self.views_renderer = FeedViews(self.observer)
        self.K, self.C, self.S, self.U = self.observer.K, self.observer.C, self.observer.S, self.observer.U
        self.platform_agents: dict[str, PlatformAgent] = dict(platform_agents or {})
        for agent in self.platform_agents.values():
            agent.check(self.recsys)
            if agent.state_key is not None:  # saved with every step, loaded on resume
                self.state_providers[agent.state_key] = lambda a=agent: a.state_dict(self.agent_view())
        self.platform_obs: dict[str, np.ndarray] = {}
        self.hooks_ran: list = []  # step hooks run by the step in progress
        self._tmpdir: str | None = None
        self.platform: Platform | None = None
        self.journal: Journal | None = None
        self.seed: int | None = None
        self.obs: ObsBatch | None = None
        self.begun = None  # the state before a split step's `begin` (`split_step`), until it finishes
        self.views: dict[int, tuple[int, np.ndarray]] = {}  # user -> pending info-action view
        self.last_outcome: StepOutcome | None = None
        self.db_path: str | None = None
        self._journal_id: str | None = None  # of the journal this Simulation created (reset may replace it)

    # ------------------------------------------------------------------ lifecycle
    def platform_config(self) -> PlatformConfig:
        """The platform's settings (`config.platform_config`)."""
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
        self.begun = None
        warm_heap(self.population.n)
        blas.load()  # (once per process: not in a step)
        self.seed = seed
        seqs = np.random.SeedSequence(seed).spawn(3)
        self.rng_active, self.rng_recsys, self.rng_text = (np.random.default_rng(s) for s in seqs)
        self.platform = Platform(self.platform_config(), start_minute=self.clock.start_minute)
        self.platform.add_users(self.population)
        self.journal = self._new_journal()
        if self.setup is not None:
            self.setup(self)
        self.recsys.reset(self.platform, self.rng_recsys)
        self.views = {}
        self.last_outcome = None
        self.journal.commit_step(self.platform, meta=self._meta())
        return self._activate()

    def _new_journal(self) -> Journal | NoJournal:
        """The new episode's journal (`NoJournal` in the training mode)."""
        if not self.config.journal:
            return NoJournal()
        self.db_path = self._fresh_db_path()
        # a new episode, a new journal: never over a file that is not ours without `overwrite`
        journal = Journal(
            self.db_path,
            new=True,
            overwrite=self.config.overwrite or self._tmpdir is not None,
            own_journal_id=self._journal_id,
            pipelined=pipelined(self.platform.n_users),
        )
        self._journal_id = journal.journal_id
        return journal

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
                shutil.rmtree(self._tmpdir, ignore_errors=True)
        except Exception:  # interpreter shutdown: modules may be gone
            pass

    def _generators(self) -> tuple[np.random.Generator, ...]:
        return self.rng_active, self.rng_recsys, self.rng_text

    def _meta(self) -> dict | None:
        """Saved with every step: what `resume` needs to continue exactly (`journal_state.meta`)."""
        return journal_state.meta(self)

    def resume(self, db_path: str) -> ObsBatch:
        """Continue from a journal: restore the platform, generators and pending views, then
        activate the next step's users exactly as the uninterrupted run would have."""
        return journal_state.resume(self, db_path)

    def agent_view(self) -> AgentView:
        """What a platform agent may read of this simulation now (`agent_protocol`)."""
        return AgentView(
            self.platform,
            self.obs,
            self.last_outcome,
            self.recsys,
            self.seed,
            self.clock.start_minute,
            self.saved_state,
        )

    # ------------------------------------------------------------------ observations and views
    def observe(self, users: np.ndarray) -> ObsBatch:
        """Build the observations of `users` (recsys feeds, or the view an info action asked
        for); draws from the recommender's generator."""
        return self.observer.observe(self.platform, self.recsys, self.rng_recsys, self.views, users)

    def feed_views(
        self, users: np.ndarray, memories: dict[int, list[str]] | None = None, obs: ObsBatch | None = None
    ) -> list[dict]:
        """What an LLM user reads, one dict per user (`feed_views.FeedViews.feed_views`): an
        active user's current observation; any other user's is a side-effect-free preview."""
        obs = obs if obs is not None else self.obs
        return self.views_renderer.feed_views(self.platform, obs, self.recsys, self.rng_recsys, users, memories)

    def preview(self, users: np.ndarray) -> ObsBatch:
        """The observations `users` would get from a refresh now, with no side effect."""
        return self.views_renderer.preview(self.platform, self.recsys, self.rng_recsys, users)

    def profile_views(self, users: np.ndarray) -> list[dict]:
        """Feed views with an empty feed, for any user (an interview serves no feed)."""
        return self.views_renderer.profile_views(self.platform, self.recsys, users)

    def user_id(self, agent: str) -> int:
        """The user id of the agent named `user_<id>`, or KeyError naming the agent."""
        return user_id(self.platform, agent)

    # ------------------------------------------------------------------ activation
    def _activate(self) -> ObsBatch:
        pf = self.platform
        act = self.config.activation
        flat = None if act == "activity" else float(act)
        eligible = pf.u_signed_up.a & ~pf.u_suspended.a
        self.active = sample_active(self.rng_active, pf.u_activity.a, self.clock.hour(pf.minute), flat, eligible)
        # (the split step builds the feeds in `begin`, once the platform agents have acted)
        self.obs = self.observe(self.active[:0] if self.config.feeds_after_agents else self.active)
        view = self.agent_view()
        self.platform_obs = {name: agent.observe(view) for name, agent in self.platform_agents.items()}
        return self.obs

    # ------------------------------------------------------------------ step
    def step(self, acts: ActionArrays, platform_actions: dict | None = None) -> StepOutcome:
        """Apply a batch of slot-based actions of active users, journal the step, advance the clock
        and activate the next users. Actions of inactive users are ignored (returned in `ignored`).

        `platform_actions` holds the platform agents' actions by name: those that act first
        (a moderator: removed posts can no longer be rated this step) are applied before the
        users' actions, the others (a recommender: ranking weights of the next feeds) after.

        Atomic: every input is checked before anything is applied (a malformed one raises
        ValueError / KeyError), and if anything fails later (a step hook, a recommender), the
        platform, the journal, the generators and every other part of the state are restored
        exactly as they were before the call (see `step_atomic`), so a retry gives the result
        the failed call never had."""
        self.require_live()
        if self.config.feeds_after_agents:
            raise RuntimeError("feeds_after_agents=True: a step is begin(platform_actions), then finish(acts)")
        checked = check_step_input(acts, platform_actions, self.platform_agents)

        with unless_committed(self, capture(self)):
            return self._step(*checked)

    def begin(self, platform_actions: dict | None = None) -> ObsBatch:
        """A split step's first half (`feeds_after_agents=True`, `split_step`): the platform
        agents act, then the active users' feeds are built; returns them."""
        return split_step.begin(self, platform_actions)

    def finish(self, acts: ActionArrays) -> StepOutcome:
        """A split step's second half: the users' actions on `begin`'s feeds, committed."""
        return split_step.finish(self, acts)

    def cancel(self) -> None:
        """Undo a split step's `begin` (nothing if no step is begun)."""
        split_step.cancel(self)

    def require_live(self) -> None:
        """Raise a clear error unless an episode is open (reset or resumed, not closed)."""
        if self.platform is None:
            raise RuntimeError("no episode: call reset() first")
        if self.journal is None:
            raise RuntimeError("this env is closed (close() was called): call reset() to start a new episode")

    def _step(self, users: np.ndarray, cols: tuple, texts_in, stance_in, platform_actions: dict) -> StepOutcome:
        """One step in named phases: platform agents act, the users' actions are admitted and
        resolved to targets, the platform applies them, then the step is committed."""
        view = self.agent_view()
        for agent in self.platform_agents.values():
            agent.begin_step(view)
        self._platform_agents_act(platform_actions, first=True)
        batch, ignored = self._admit(users, cols, texts_in, stance_in)
        out = self._apply(batch, ignored)
        self._platform_agents_act(platform_actions, first=False)
        self._commit(out)
        return out

    def _platform_agents_act(self, platform_actions: dict, first: bool) -> None:
        for name, agent in self.platform_agents.items():
            if name in platform_actions and agent.acts_first == first:
                agent.apply(self.agent_view(), platform_actions[name])

    def _admit(self, users: np.ndarray, cols: tuple, texts_in, stance_in) -> tuple[ActionBatch, np.ndarray]:
        """The admitted actions (`admission.admit`) with texts and stances filled, and the
        users whose actions were ignored."""
        many = self.config.actions_per_user == "many"
        users, action, target, texts, stance, ignored = admit(self.obs, users, cols, texts_in, stance_in, many)
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
        self.observer.record_views(pf, self.views, users, action, texts, res)
        # the platform resolves reposts to roots; recompute the resolved target for rewards
        resolved = target.copy()
        on_post = IS_POST_TARGET(action) & (target >= 0) & (target < pf.n_posts)
        resolved[on_post] = np.where(
            pf.p_kind.a[target[on_post]] == REPOST, pf.p_root.a[target[on_post]], target[on_post]
        )
        out = StepOutcome(users, action, resolved, res, new_ids, np.zeros(0, np.float32), ignored)
        out.rewards = self.reward_fn(self, out)
        self.recsys.update(pf)
        self.last_outcome = out
        return out

    def _commit(self, out: StepOutcome) -> None:
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
        taken = journal.steps_taken
        try:
            pf.reset_pending()
            pf.advance(self.clock.minutes_per_step)
            self._activate()
            view = self.agent_view()
            out.platform_rewards = {name: agent.reward(view) for name, agent in self.platform_agents.items()}
            journal.finish_step(statements)
        except BaseException:
            if journal.steps_taken == taken:
                journal.abort_step()
            raise
