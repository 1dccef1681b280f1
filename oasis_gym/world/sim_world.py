"""A task episode on `Simulation`'s split step: `backend="platform"` of Recommender-v4 and Moderator-v2.

`SimWorld` runs a Recommender-v4 / Moderator-v2 step on a `Simulation` (`feeds_after_agents=True`,
`actions_per_user="many"`), in the order docs/ARCHITECTURE.md's table gives:

- `begin`: the world's pre-feed stages (moderation of the queue seen, campaigns, the bots'
  likes, brigade targets, returning accounts) and the visits, as the simulation's
  `activation_hook`; then the feeds, by the simulation's recommender, the world's
  `TaskRecommender` (`recsys/task_ranking.py`);
- the users' policy answers the feeds: `oasis_gym.TASK_USER_POLICY` (`policies/task_users.py`, the
  model's responses), and another user policy (ABM, scripted, LLM) for the users the env's
  `policy_users` names (their posts are theirs, their texts their own; the task users' posts
  are the model's);
- `finish`: the platform applies the users' rows; a step hook, in the step's transaction, reads
  what was applied (the outcome, not the policy's intent) back into the model: the pairs of
  OASIS's rules, the posts' counters, the users' summaries, satisfaction, churn and opinions,
  the new posts (the model's attributes, the platform's ids; their texts from the attributes,
  `texts.py`, where a journal or another user policy reads them), the posts the other policy's
  users wrote (task posts by `user_posts.py`'s rule: they enter the ring of candidates), the
  brigades' reports; with a journal, the task's state (`task_state.py`) and the agent's step
  (`task_episode.py`: its action, reward and components, info, the users' satisfaction and
  churn) join the step's transaction.

The counts a step returns are `Engine.step`'s, so the tasks (`batched/tasks.py`) compute the
same observations and rewards. A `SimWorld` is the env's `world` (`envs/lockstep.py`'s
`use_backend`), the one way to the platform backend: the env calls its `reset`, `resume` and
`close`, and the task's `engine.step` is its `step`.
"""

from __future__ import annotations

import numpy as np

from ..actions import ActionType as A
from ..batched import moderation, posting, users
from ..batched.feed import COL
from ..model import measures
from ..model.moderation import NONE
from ..model.observations import recommender_obs
from ..model.users import visit_rate_ema
from ..platform.records import ActionBatch
from ..recsys.task_ranking import TaskRecommender
from ..sim import ActionArrays, Simulation, SimulationConfig
from . import task_episode, task_state, user_posts
from .platform_world import STEP_MINUTES, PlatformWorld, _population

# the actions a task episode's platform offers (its users' rows, the world's)
TASK_ACTIONS = (A.DO_NOTHING, A.CREATE_POST, A.LIKE_POST, A.REPOST, A.REPORT_POST)
ENGAGE = {int(A.LIKE_POST): 0, int(A.REPOST): 1, int(A.REPORT_POST): 2}


class SimWorld(PlatformWorld):
    """A task episode on a `Simulation` (module docstring); `user_policy` answers the feeds."""

    def __init__(self, task, task_policy, journal: bool = False, db_path=None, overwrite: bool = False,
                 user_policy=None, policy_users=None):  # fmt: skip
        engine = task.engine
        super().__init__(engine, journal, db_path, overwrite)
        self.task, self.policy, self.other = task, task_policy, user_policy
        self.agent = "moderator_0" if hasattr(task, "queue_ids") else "recommender_0"
        self.writes_texts = bool(journal) or user_policy is not None  # an LLM user reads the texts
        # the users the task policy drives (their posts are the model's); `user_policy` the others
        self.task_users = np.ones(engine.n, bool)
        if user_policy is not None:
            self.task_users[np.asarray(policy_users, np.int64)] = False
        st, pop = self.state, engine.population
        src = np.repeat(np.arange(st.n, dtype=np.int64), pop.followees.shape[1])
        population = _population(st.n, None, src, pop.followees.ravel().astype(np.int64))
        config = SimulationConfig(
            available_actions=tuple(int(a) for a in TASK_ACTIONS),
            recsys="chronological",
            minutes_per_step=STEP_MINUTES,
            search_size=0,
            comments_per_post=0,
            journal=bool(journal),
            db_path=None if db_path is None else str(db_path),
            overwrite=overwrite,
            auto_text=False,
            log_recs=bool(journal),
            stance_scorer=None,
            feeds_after_agents=True,
            actions_per_user="many",
        )
        self.sim = Simulation(population, config, setup=self._setup)
        self.sim.recsys = self.recsys = TaskRecommender(self)
        self.sim.activation_hook = self._before_feeds
        self.sim.step_hooks.append(self._after_apply)
        engine.step = self.step  # the task's engine steps on the simulation (the task calls `engine.step`)

    # ------------------------------------------------------------------ episodes
    def reset(self) -> None:
        """A new episode of the simulation for the episode just reset in the engine (the env's
        `reset` calls it)."""
        st = self.state
        self.sim.reset(seed=int(st.seed[0]))
        seed = int(st.seed[0])
        self.policy.reset(self.sim, np.flatnonzero(self.task_users), seed)
        if self.other is not None:
            self.other.reset(self.sim, np.flatnonzero(~self.task_users), seed)

    def _setup(self, sim) -> None:
        """The platform of a new episode: the task users' opinions, the campaign bots' accounts."""
        st = self.state
        self.platform = pf = sim.platform
        pf.set_opinions(np.arange(st.n), st.opinion[0])
        self.alias = np.arange(st.n, dtype=np.int64)
        a = max(int(st.dyn.campaign_amplify), 0)
        accounts = np.flatnonzero(st.misinfo_account[0])
        self.bots = np.full((st.n, a), -1, np.int64)
        if a and len(accounts):
            self.bots[accounts] = pf.add_users(_population(len(accounts) * a, names="bot")).reshape(len(accounts), a)
        self.pid = np.full(st.p, -1, np.int64)
        self._rows, self.rejected = [], 0

    def close(self) -> None:
        """Close the simulation's journal."""
        self.sim.close()

    def resume(self, task) -> np.ndarray:
        """Continue the episode journaled at `db_path` from its last step (the simulation's
        `resume`, the task's state from `task_state`); the last observation. A journal without
        a task episode is refused (ValueError), untouched."""
        if not self.journal_on or self.db_path is None:
            raise ValueError("resume needs journal=True and the db_path of the episode")
        path = str(self.db_path)
        arrays = task_state.read(path)
        self.sim.resume(path)
        self.platform = self.sim.platform
        task_state.restore_state(self.state, arrays)
        for name in ("alias", "bots", "pid", "task_users"):
            setattr(self, name, arrays[f"world.{name}"].copy())
        self.rejected = int(arrays["world.rejected"])
        self._rows, self._visitors = [], np.zeros(0, np.int64)
        out = {k[len("out.") :]: v for k, v in arrays.items() if k.startswith("out.")}
        if hasattr(task, "queue_ids"):  # the moderator observes its review queue now
            return task.observe()
        st = self.state  # the recommender's observation of the step's counts (`RecommenderTask.step`)
        task._prev_std = out["opinion_std"].astype(np.float32)
        return recommender_obs(out, st.opinion, st.opinion_std0, st.t, st.last_visit, task.max_steps)

    # ------------------------------------------------------------------ a step
    def step(self, weights=None, queue_ids=None, codes=None, stepping=None) -> dict[str, np.ndarray]:
        """`Engine.step` of the one episode, on the simulation's split step."""
        self._args, self._out = (weights, queue_ids, codes), {}
        sim = self.sim
        obs = sim.begin(None)
        if self.other is None:
            acts = self.policy.act(sim, obs)
        else:  # the task users' policy and the other policy, each on its users' rows
            mine = self.task_users[self.recsys.model_users(obs.users)]
            parts = [(self.policy, np.flatnonzero(mine)), (self.other, np.flatnonzero(~mine))]
            acts = ActionArrays.concat([p.act(sim, obs.take(rows)) for p, rows in parts if len(rows)])
        self.sim.finish(acts)
        return self._out

    def _before_feeds(self, sim) -> np.ndarray:
        """The stages before the feeds (`Engine.step`'s order); the visitors' accounts, sorted."""
        engine, st, dyn = self.engine, self.state, self.state.dyn
        weights, queue_ids, codes = self._args
        go = np.ones(1, bool)
        self.begin()
        if queue_ids is not None:  # (the queue as platform post ids, before a new post takes a slot)
            self._queue_posts = np.where(queue_ids[0] >= 0, self.pid[st.slot(queue_ids[0])], -1)
            self._out.update(moderation.apply(st, queue_ids, np.where(go[:, None], codes, NONE)))
            self.moderated()
        st.t += go
        st.step_reports[go] = 0
        posting.campaign_regimes(st, go)
        posting.bot_likes(st, go)
        self.bot_liked()
        if dyn.brigade_move_every > 0:
            st.retarget(np.flatnonzero(go & (st.t % dyn.brigade_move_every == 0)))
        posting.return_accounts(st, go)
        self.returned()
        self.active = active = engine._visits(go)
        self.recsys.weights = None if weights is None else np.asarray(weights, np.float32)[0]
        return np.sort(self.alias[np.flatnonzero(active[0])])

    def _after_apply(self, sim, outcome, conn) -> None:
        """What the step's applied rows did to the model, the posts and brigades, the counts."""
        st, served = self.state, self.recsys.served
        self.rejected += int((outcome.results != 0).sum())
        ua, ids, rows, ok, flat = served.users, served.ids, served.rows, served.ok, served.flat  # (model order)
        ka = np.zeros(len(ua), np.int64)
        engaged, shared, reported = self._flags(outcome, ua, ids, ok)
        for pairs, done in ((st.engaged_pairs, engaged), (st.reported_pairs, reported)):
            i, j = np.nonzero(done)
            pairs.add(ka[i], ua[i], ids[i, j])
        self._visitors = ua
        self._reported = st.reported_pairs.bits.copy()
        users.count_on_posts(st, ka, ua, flat, ok, engaged, shared, reported)
        users.update_users(st, ka, ua, ids, rows, ok, engaged, shared)
        go = np.ones(1, bool)
        st.visit_ema[go] = visit_rate_ema(st.visit_ema[go], self.active[go])
        st.last_visit[self.active] = np.broadcast_to(st.t[:, None], self.active.shape)[self.active]
        made = self._posts(ka, ua) + self._their_posts(outcome)
        posting.brigade_reports(st, go)
        self.brigaded()
        self._end()
        mis, arousal = rows[..., COL["misinfo"]] > 0, rows[..., COL["arousal"]]
        out = self._out
        out.update(measures.feed_counts(ka, 1, ok, mis, arousal, engaged, reported))
        out.update(posts=made, **measures.state_measures(st.opinion, st.churned, st.satisfaction, st.campaign))
        x, valid = served.pool
        self.engine._pool_stats(ka, x, valid, out)
        if conn is not None:  # the task's state and the agent's step, in the step's transaction
            task_state.save(conn, self._arrays())
            task_episode.save(conn, self._episode_row())

    def _episode_row(self) -> tuple:
        """The agent's row of this step (`task_episode.py`): its action, the task's reward, its
        components and info of the step's counts."""
        weights, queue_ids, codes = self._args
        _, reward, info, terms = task_episode.outcome(self.task, self._out)
        action, queue = (weights[0], None) if queue_ids is None else (codes[0], self._queue_posts)
        return task_episode.step_row(self.state.t[0], self.agent, action, queue, reward, terms, info)

    def _arrays(self) -> dict[str, np.ndarray]:
        """What a resume needs beside the platform: the model's arrays, the world's maps, the
        step's counts (the task's observation is made of them)."""
        arrays = task_state.state_arrays(self.state)
        arrays.update({f"world.{name}": getattr(self, name) for name in ("alias", "bots", "pid", "task_users")})
        arrays["world.rejected"] = np.array(self.rejected)
        arrays.update({f"out.{name}": np.asarray(value) for name, value in self._out.items()})
        return arrays

    def _flags(self, outcome, ua, ids, ok):
        """Engaged, reposted and reported flags (M, F) of the served posts, from the rows applied."""
        flags = np.zeros((3, *ids.shape), bool)
        applied = (outcome.results == 0) & np.isin(outcome.actions, list(ENGAGE))
        if applied.any():
            row = np.searchsorted(ua, self.recsys.model_users(outcome.users[applied]))
            pid = np.where(ok, self.pid[self.state.slot(ids)], -2)[row]
            hit = pid == outcome.targets[applied][:, None]
            r, j = np.nonzero(hit)
            kind = np.array([ENGAGE[int(a)] for a in outcome.actions[applied][r].tolist()], np.int64)
            flags[kind, row[r], j] = True
        engaged = flags[0] | flags[1]
        return engaged, flags[1], flags[2]

    def _posts(self, ka, ua) -> np.ndarray:
        """The task users' new posts (the model's `posting.post`) as `CREATE_POST` rows, applied
        with the brigades' reports by `_end`; the posts made (K,)."""
        st = self.state
        first = int(st.next_post[0])
        mine = self.task_users[ua]
        made = posting.post(st, ka[mine], ua[mine])
        self._new = np.arange(first, int(st.next_post[0]), dtype=np.int64)
        return made

    def _their_posts(self, outcome) -> np.ndarray:
        """The posts the other policy's users wrote this step (`CREATE_POST` rows applied), made
        task posts in the ring (`user_posts.admit`); the posts made (K,)."""
        if self.other is None:
            return np.zeros(1, np.int64)
        made = (outcome.actions == int(A.CREATE_POST)) & (outcome.results == 0) & (outcome.new_ids >= 0)
        authors = self.recsys.model_users(outcome.users[made])
        mine = (authors >= 0) & ~self.task_users[np.maximum(authors, 0)]
        posts = outcome.new_ids[made][mine]
        ids = user_posts.admit(self.state, authors[mine], [self.platform.p_content[p] for p in posts.tolist()])
        self.pid[self.state.slot(ids)] = posts[len(posts) - len(ids) :]
        return np.array([len(ids)], np.int64)

    def _end(self) -> None:
        """One more `Platform.apply` in the step: the task users' new posts, then the brigades'
        reports; the visitors' opinions; the platform's counters read back."""
        st = self.state
        slots = st.slot(self._new)
        authors = self.alias[st.author[0, slots]]
        stance = st.stance[0, slots].astype(np.float32)
        texts = self._texts(self._new)
        self._rows.insert(0, (authors, int(A.CREATE_POST), np.full(len(authors), -1, np.int64)))
        user = np.concatenate([r[0] for r in self._rows]).astype(np.int64)
        act = np.concatenate([np.full(len(r[0]), r[1]) for r in self._rows]).astype(np.int64)
        target = np.concatenate([r[2] for r in self._rows]).astype(np.int64)
        texts += ["misleading"] * (len(user) - len(authors))
        stance = np.concatenate([stance, np.full(len(user) - len(authors), np.nan, np.float32)])
        new_id = self._apply(ActionBatch(user, act, target, texts, stance))
        self.pid[slots] = new_id[: len(authors)]
        self._rows = []
        if len(self._visitors):
            self.platform.set_opinions(self.alias[self._visitors], st.opinion[0, self._visitors])
        self._read_counters()
