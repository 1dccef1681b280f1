"""Guarantees of the step path: a step is atomic (checked inputs, exact rollback, retry ==
never failed), a resumed run equals an uninterrupted one in every table (metrics included),
bad calls get a clear error and change nothing, an agent's feed text can be read any time."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from oasis_gym.envs import twitter_v0
from oasis_gym.platform.store import GrowArray
from oasis_gym.platform.text import TextColumn
from oasis_gym.policies.base import RandomPolicy
from oasis_gym.sim import ActionArrays, ObsBatch

ALL = tuple(range(23))


# ------------------------------------------------------------------ helpers
def platform_state(pf) -> dict:
    """Every part of a platform's in-memory state, as comparable Python values."""
    out = {"step": pf.step, "minute": pf.minute, "next_row_id": dict(pf.next_row_id)}
    for name, value in vars(pf).items():
        if isinstance(value, GrowArray):
            a = value.a
            out[name] = np.where(np.isnan(a), "nan", a.astype(str)).tolist() if a.dtype.kind == "f" else a.tolist()
        elif isinstance(value, (TextColumn, list)) and name[:2] in ("u_", "p_", "c_"):
            out[name] = list(value)
    for name, pairs in pf.rel.items():
        keys = pairs.keys()
        out[f"rel_{name}"] = (keys.tolist(), pairs.values().tolist() if pairs.has_values else None)
    pending = pf.pending
    out["pending"] = (len(pending.new_posts), len(pending.traces), len(pending.opinions), len(pending.moderation))
    return out


def obs_state(obs: ObsBatch) -> list:
    return [np.asarray(getattr(obs, f)).tolist() for f in ObsBatch.__dataclass_fields__]


def journal_tables(path) -> dict:
    """Every table of a journal, row by row in insertion (rowid) order."""
    conn = sqlite3.connect(path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {n: conn.execute(f'SELECT * FROM "{n}" ORDER BY rowid').fetchall() for n in names}
    finally:
        conn.close()


def assert_same_tables(a: dict, b: dict) -> None:
    """Equal row by row; the meta key `journal_id` (each journal file's own identity, a random
    id that tells an env its own journal from another) is the one value two runs never share."""
    a, b = (dict(t, meta=[r for r in t.get("meta", []) if r[0] != "journal_id"]) for t in (a, b))
    assert sorted(a) == sorted(b)
    for name in a:
        assert len(a[name]) == len(b[name]), f"table {name}: {len(a[name])} vs {len(b[name])} rows"
        for i, (ra, rb) in enumerate(zip(a[name], b[name])):
            assert ra == rb or _same_with_nan(ra, rb), f"table {name} row {i}: {ra} != {rb}"


def _same_with_nan(ra, rb) -> bool:
    return len(ra) == len(rb) and all(x == y or (x != x and y != y) for x, y in zip(ra, rb))


def make_env(db, module=twitter_v0, **kw):
    """`module`'s parallel env (all actions, the trainable recommender and moderator) on `db`."""
    args = dict(
        users=60,
        activation=0.5,
        max_cycles=6,
        available_actions=ALL,
        recommender_agent=True,
        moderator_agent=True,
        db_path=str(db),
    )
    args.update(kw)
    return module.parallel_env(**args)


def rec_size(env) -> int:
    """The length of a `recommender_0` action (its ranking weights)."""
    return env.action_space("recommender_0").shape[0]


def platform_actions(t: int, env) -> dict:
    rng = np.random.default_rng(100 + t)
    top_m = env.sim.platform_agents["moderator_0"].top_m
    return {
        "recommender_0": rng.uniform(-1, 1, rec_size(env)).astype(np.float32),
        "moderator_0": rng.integers(0, 5, top_m),
    }


def run_steps(env, policy, steps, fail=None):
    """Steps with the batched API; `fail(t, env, acts, pacts)` may make some calls fail first
    (each failure must raise and change nothing). Returns per-step observations + rewards."""
    trail = []
    for t in range(steps):
        acts = policy.act(env, env.sim.obs)
        pacts = platform_actions(t, env)
        if fail is not None:
            fail(t, env, acts, pacts)
        out = env.step_batch(acts, pacts)
        trail.append(
            (
                obs_state(env.sim.obs),
                out.rewards.tolist(),
                out.results.tolist(),
                {k: float(v) for k, v in out.platform_rewards.items()},
                {k: np.asarray(v).tolist() for k, v in env.sim.platform_obs.items()},
            )
        )
    return trail


def start(env, seed=3):
    env.reset(seed=seed)
    policy = RandomPolicy()
    policy.reset(env, np.arange(env.sim.platform.n_users), seed)
    return policy


# ------------------------------------------------------------------ 1. atomic steps
def test_a_failed_step_changes_nothing_and_its_retry_equals_a_run_without_it(tmp_path, monkeypatch):
    """NaN / inf / wrong-shape / out-of-range platform actions, a malformed user column, a
    step hook that raises after the users' actions were applied, and a recommender that
    raises while the next users are activated: each failure leaves platform, journal,
    generators, observations and cycle count exactly as before, and retrying gives the
    uninterrupted run, every table and every array included."""
    # both journals are "run.db" in their own folder: the config saved in them names the same path
    (tmp_path / "ref").mkdir()
    (tmp_path / "retry").mkdir()
    monkeypatch.chdir(tmp_path / "ref")
    ref_env = make_env("run.db")
    ref = run_steps(ref_env, start(ref_env), 6)
    ref_state = platform_state(ref_env.sim.platform)
    ref_env.close()

    monkeypatch.chdir(tmp_path / "retry")
    env = make_env("run.db")
    policy = start(env)
    failures = []

    def fail(t, env, acts, pacts):
        if t not in (1, 3, 4):
            return
        sim = env.sim
        before = (
            platform_state(sim.platform),
            obs_state(sim.obs),
            env._cycles,
            [g.bit_generator.state for g in sim._generators()],
            dict(sim.views),
            sim.recsys.weights.tolist(),
        )
        sim.journal.flush()
        rows_before = journal_tables(tmp_path / "retry" / "run.db")
        n = rec_size(env)
        bad_platform = [
            {**pacts, "recommender_0": np.full(n, np.nan)},
            {**pacts, "recommender_0": np.ones(3)},
            {**pacts, "recommender_0": np.array([np.inf] * n)},
            {**pacts, "moderator_0": np.full(10, 7)},
            {**pacts, "moderator_0": np.full(10, 1.5)},
            {**pacts, "moderator_0": np.full(10, -1)},
        ]
        for bad in bad_platform:
            with pytest.raises(ValueError, match="recommender_0|moderator_0"):
                env.step_batch(acts, bad)
        short = ActionArrays(
            acts.users, acts.type, acts.post, acts.comment, acts.user, ["x"] * max(len(acts) - 1, 0), None
        )
        with pytest.raises(ValueError, match="text"):
            env.step_batch(short, pacts)
        with pytest.raises(ValueError, match="type"):
            env.step_batch(ActionArrays(acts.users, np.full(len(acts), np.nan)), pacts)

        def raising_hook(sim, out, conn):
            assert len(out.users) == len(acts)  # the users' actions were applied in memory
            raise RuntimeError("hook failed")

        sim.step_hooks.append(raising_hook)
        with pytest.raises(RuntimeError, match="hook failed"):
            env.step_batch(acts, pacts)
        sim.step_hooks.remove(raising_hook)
        recommend = sim.recsys.recommend

        def raising_recommend(*a, **k):
            raise RuntimeError("recsys failed")

        sim.recsys.recommend = raising_recommend  # fails after the hooks, while activating
        with pytest.raises(RuntimeError, match="recsys failed"):
            env.step_batch(acts, pacts)
        sim.recsys.recommend = recommend
        after = (
            platform_state(sim.platform),
            obs_state(sim.obs),
            env._cycles,
            [g.bit_generator.state for g in sim._generators()],
            dict(sim.views),
            sim.recsys.weights.tolist(),
        )
        assert after[0] == before[0]
        assert after[1:4] == before[1:4]
        assert after[4].keys() == before[4].keys() and after[5] == before[5]
        assert journal_tables(tmp_path / "retry" / "run.db") == rows_before
        failures.append(t)

    trail = run_steps(env, policy, 6, fail)
    assert failures == [1, 3, 4]
    assert env._cycles == 6 and env.agents == []  # failed calls used no cycle
    assert platform_state(env.sim.platform) == ref_state
    env.close()
    assert trail == ref
    assert_same_tables(journal_tables(tmp_path / "retry" / "run.db"), journal_tables(tmp_path / "ref" / "run.db"))


def test_dict_step_with_a_bad_platform_action_applies_no_user_action(tmp_path):
    env = make_env(tmp_path / "d.db")
    obs, _ = env.reset(seed=0)
    actions = {a: {"type": 6} for a in env.agents if a.startswith("user_")}  # create_post each
    actions["recommender_0"] = np.full(rec_size(env), np.nan)
    posts = env.sim.platform.n_posts
    with pytest.raises(ValueError, match="recommender_0"):
        env.step(actions)
    assert env.sim.platform.n_posts == posts and env._cycles == 0
    actions["recommender_0"] = np.zeros(rec_size(env), np.float32)
    env.step(actions)
    active = len(env.sim.last_outcome.users)
    assert env.sim.platform.n_posts == posts + active  # one post each, not two
    assert env._cycles == 1
    env.close()


# ------------------------------------------------------------------ 3. bad calls: a clear error, nothing changed
def test_step_after_close_is_a_clear_error_before_anything_is_applied(tmp_path):
    env = twitter_v0.parallel_env(users=30, activation=1.0, max_cycles=4, db_path=str(tmp_path / "c.db"))
    with pytest.raises(RuntimeError, match="reset"):
        env.feed_text("user_0")
    env.reset(seed=0)
    env.close()
    posts = env.sim.platform.n_posts
    with pytest.raises(RuntimeError, match="closed"):
        env.step({a: {"type": 6} for a in env.agents})
    with pytest.raises(RuntimeError, match="closed"):
        env.step_batch(ActionArrays(env.sim.obs.users, np.full(len(env.sim.obs.users), 6)))
    assert env.sim.platform.n_posts == posts and env._cycles == 0
    with pytest.raises(RuntimeError, match="closed"):
        env.feed_text("user_0")
    env.reset(seed=1)  # a closed env starts a new episode
    env.step({})
    env.close()


def test_step_batch_with_too_few_texts_raises_and_uses_no_cycle(tmp_path):
    env = twitter_v0.parallel_env(users=30, activation=1.0, max_cycles=2, db_path=str(tmp_path / "t.db"))
    env.reset(seed=0)
    users = env.sim.obs.users
    trace = env.sim.journal.conn.execute("SELECT COUNT(*) FROM trace").fetchone()
    with pytest.raises(ValueError, match=f"{len(users)} users, got {len(users) - 1} entries"):
        env.step_batch(ActionArrays(users, np.full(len(users), 6), text=["hello"] * (len(users) - 1)))
    with pytest.raises(ValueError, match="stance"):
        env.step_batch(ActionArrays(users, np.full(len(users), 6), stance=np.full(len(users), np.inf)))
    assert env._cycles == 0 and env.sim.platform.n_posts == 0 and env.sim.platform.step == 0
    assert env.sim.journal.conn.execute("SELECT COUNT(*) FROM trace").fetchone() == trace
    env.step_batch(ActionArrays(users, np.full(len(users), 6), text=["hello"] * len(users)))
    env.step_batch(ActionArrays.empty())
    assert env._cycles == 2 and env.agents == []  # both cycles ran: the failed call used none
    env.close()


@pytest.mark.parametrize("agent", ["user_-1", "user_999", "user_50", "user_007", "recommender_0", "3", "user_", ""])
def test_interviewing_an_unknown_agent_is_an_error_naming_it(tmp_path, agent):
    from oasis_gym.policies.llm_policy import LLMPolicy

    class Core:  # a stand-in for the LLM: the interview path is tested, not a model
        def interview(self, view, question):
            return f"I am {view['agent']}"

    env = twitter_v0.parallel_env(users=50, activation=0.5, max_cycles=3, db_path=str(tmp_path / "i.db"))
    env.reset(seed=0)
    llm = LLMPolicy(core=Core())
    with pytest.raises(KeyError, match=repr(agent).replace("[", r"\[")):
        llm.interview(env, agent, "How are you?")
    assert env.sim.journal.conn.execute("SELECT COUNT(*) FROM interview").fetchone() == (0,)
    assert llm.interview(env, "user_49", "How are you?") == "I am user_49"
    assert env.sim.journal.conn.execute("SELECT user_id FROM interview").fetchall() == [(49,)]
    with pytest.raises(KeyError):
        env.sim.profile_views(np.array([-1]))
    env.close()


# ------------------------------------------------------------------ 4. any user's feed text, any time
def test_feed_text_works_for_every_user_any_time_and_never_changes_the_run(tmp_path, monkeypatch):
    def run(read: bool, folder: str):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        env = twitter_v0.parallel_env(users=40, activation=0.3, max_cycles=4, available_actions=ALL, db_path="run.db")
        policy = start(env, seed=5)
        views = []
        while env.agents:
            if read:
                rng = [g.bit_generator.state for g in env.sim._generators()]
                views = [env.feed_view(f"user_{u}") for u in range(40)]  # active and inactive users
                assert [env.feed_text(f"user_{u}") for u in range(40)]  # and their texts
                assert [g.bit_generator.state for g in env.sim._generators()] == rng
                active = set(env.sim.obs.users.tolist())
                for v in views:
                    if v["user_id"] in active:  # an active user's: the observation's
                        row = env.sim.obs.users.tolist().index(v["user_id"])
                        assert [p["post_id"] for p in v["posts"]] == [p for p in env.sim.obs.post_ids[row] if p >= 0]
            env.step_batch(policy.act(env, env.sim.obs))
        assert env.agents == []
        after = [env.feed_view(f"user_{u}") for u in range(40)] if read else None  # after the episode's end
        env.close()
        return journal_tables(tmp_path / folder / "run.db"), views, after

    plain, _, _ = run(False, "plain")
    read, views, after = run(True, "read")
    assert_same_tables(read, plain)
    assert len(views) == 40 and any(v["posts"] for v in views) and len(after) == 40
    assert all(v["agent"] == f"user_{u}" for u, v in enumerate(after))


# ------------------------------------------------------------------ 2. resume == uninterrupted, every table
CLI_ARGS = [
    "run",
    "--users",
    "300",
    "--policy",
    "abm",
    "--activation",
    "0.4",
    "--all-actions",
    "--seed",
    "7",
    "--db",
    "run.db",
    "--logdir",
    "tb",
    "--quiet",
]
KILL_SCRIPT = """
import os, sys, time
from oasis_gym import cli
from oasis_gym.envs.social_env import SocialMediaEnv

kill_after = int(sys.argv[1])
step_batch = SocialMediaEnv.step_batch

def step_then_wait(self, *a, **k):  # after step `kill_after` is committed, wait for the SIGKILL
    out = step_batch(self, *a, **k)
    if self._cycles == kill_after:
        self.sim.journal.flush()
        print("committed", flush=True)
        time.sleep(600)
    return out

SocialMediaEnv.step_batch = step_then_wait
cli.main(sys.argv[2:])
"""


def _cli_in(folder, argv, monkeypatch):
    from oasis_gym import cli

    folder.mkdir(exist_ok=True)
    monkeypatch.chdir(folder)
    assert cli.main(argv) == 0


def keyed_tables(path) -> dict:
    """Every table row by row: tables with a primary key in key order (their rowids are
    storage detail: an INSERT OR REPLACE of an identical row gives it a new one), the others
    (append-only logs: trace, metrics, ...) in insertion order."""
    conn = sqlite3.connect(path)
    try:
        out = {}
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name").fetchall():
            pk = [
                r[1]
                for r in sorted(conn.execute(f'PRAGMA table_info("{name}")').fetchall(), key=lambda r: r[5])
                if r[5] > 0
            ]
            order = ", ".join(f'"{c}"' for c in pk) if pk else "rowid"
            out[name] = conn.execute(f'SELECT * FROM "{name}" ORDER BY {order}').fetchall()
        return out
    finally:
        conn.close()


def test_resume_after_a_stop_or_a_kill_equals_the_uninterrupted_run_in_every_table(tmp_path, monkeypatch):
    import subprocess
    import sys

    steps = ["--steps", "9"]
    _cli_in(tmp_path / "full", CLI_ARGS + steps, monkeypatch)
    # a clean stop after 4 steps (the recorder finalizes), then a resume to 9
    _cli_in(tmp_path / "stop", CLI_ARGS + ["--steps", "4"], monkeypatch)
    _cli_in(tmp_path / "stop", ["run", "--resume", "run.db", "--quiet"] + steps, monkeypatch)
    # SIGKILL once step 5 is committed, then a resume to 9
    (tmp_path / "kill").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, "5", *CLI_ARGS, *steps],
        cwd=tmp_path / "kill",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.strip() == "committed", proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()
    _cli_in(tmp_path / "kill", ["run", "--resume", "run.db", "--quiet"] + steps, monkeypatch)

    full = keyed_tables(tmp_path / "full" / "run.db")
    assert len(full["cascade_curve"]) > 50 and len(full["metrics"]) > 500 and len(full["cascade_tree"]) > 0
    for variant in ("stop", "kill"):
        assert_same_tables(keyed_tables(tmp_path / variant / "run.db"), full)


def test_a_run_whose_recommender_set_its_weights_resumes_and_equals_the_uninterrupted_run(tmp_path, monkeypatch):
    """The trainable recommender's weights are one row per user feature; a journal saves them
    as nested lists, and resume called every such journal damaged (found in session 25 by the
    split step's tests: no test had resumed a run whose recommender acted)."""
    from oasis_gym.envs.social_env import SocialMediaEnv

    for folder in ("whole", "part"):
        (tmp_path / folder).mkdir()
    monkeypatch.chdir(tmp_path / "whole")
    env = make_env("run.db")
    whole = run_steps(env, start(env), 6)
    env.close()
    monkeypatch.chdir(tmp_path / "part")
    env = make_env("run.db")
    policy = start(env)
    part = run_steps(env, policy, 3)
    env.close()
    again = SocialMediaEnv.resume("run.db")
    assert np.asarray(again.sim.recsys.weights).ndim == 2
    for t in range(3, 6):  # the same actions as the whole run's steps 3-5
        acts = policy.act(again, again.sim.obs)
        out = again.step_batch(acts, platform_actions(t, again))
        part.append(
            (
                obs_state(again.sim.obs),
                out.rewards.tolist(),
                out.results.tolist(),
                {k: float(v) for k, v in out.platform_rewards.items()},
                {k: np.asarray(v).tolist() for k, v in again.sim.platform_obs.items()},
            )
        )
    again.close()
    assert part == whole
    assert_same_tables(journal_tables(tmp_path / "part" / "run.db"), journal_tables(tmp_path / "whole" / "run.db"))


def test_a_failed_step_rolls_back_the_metrics_recorder_too(tmp_path, monkeypatch):
    """The metrics recorder runs in the step; when a later hook (or the activation) fails,
    its state returns to the journal's last step, so the retried run's metrics, cascade
    curves and trees equal the uninterrupted run's (including a failure in the very first
    step, where the recorder first notices the episode)."""
    from oasis_gym.metrics import MetricsRecorder

    def run(folder, fail_at):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        env = twitter_v0.parallel_env(users=80, activation=0.6, max_cycles=6, available_actions=ALL, db_path="run.db")
        rec = MetricsRecorder.attach(env.sim, None)  # before reset: the first step starts its episode
        policy = start(env, seed=2)
        while env.agents:
            acts = policy.act(env, env.sim.obs)
            if env._cycles in fail_at:

                def boom(sim, out, conn):
                    raise RuntimeError("boom")

                env.sim.step_hooks.append(boom)
                with pytest.raises(RuntimeError, match="boom"):
                    env.step_batch(acts)
                env.sim.step_hooks.remove(boom)
            env.step_batch(acts)
        rec.finalize()
        env.close()
        assert rec.errors == 0
        return keyed_tables(tmp_path / folder / "run.db")

    full = run("full", ())
    assert len(full["cascade_curve"]) > 20 and len(full["metrics"]) > 100
    assert_same_tables(run("retry", (0, 2, 3, 5)), full)


def test_a_failed_step_rolls_back_the_misinformation_stream_hook(tmp_path, monkeypatch):
    """A hook with a generator of its own (the misinfo stream posting source posts in the
    step) draws again on the retry as if the failed call never happened."""
    from oasis_gym.scenarios.misinfo_stream import MisinfoScenario

    def run(folder, fail_at):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        env = twitter_v0.parallel_env(
            users=80,
            activation=0.5,
            max_cycles=5,
            db_path="run.db",
            setup=MisinfoScenario(initial_true=5, initial_misinfo=3, stream_rate=4.0),
        )
        policy = start(env, seed=4)
        while env.agents:
            acts = policy.act(env, env.sim.obs)
            if env._cycles in fail_at:

                def boom(sim, out, conn):
                    raise RuntimeError("boom")

                env.sim.step_hooks.append(boom)  # after the stream hook
                with pytest.raises(RuntimeError, match="boom"):
                    env.step_batch(acts)
                env.sim.step_hooks.remove(boom)
            env.step_batch(acts)
        env.close()
        return keyed_tables(tmp_path / folder / "run.db")

    full = run("full", ())
    assert sum(1 for row in full["post"] if row[3].startswith("Breaking")) > 12
    assert_same_tables(run("retry", (1, 2, 4)), full)


# ------------------------------------------------------------------ the platform's checkpoint itself
@pytest.mark.parametrize("seed", range(4))
def test_platform_rollback_restores_every_column_and_relation_exactly(seed):
    """Random batches of every action type (relations added, removed and re-added across
    compactions), moderation, suspensions, opinion changes, seeded posts and new users, all
    after a checkpoint: the rollback gives back exactly the state of the checkpoint, and the
    platform then behaves as if nothing had happened."""
    import copy

    from conftest import make_population

    from oasis_gym.actions import ActionType as A
    from oasis_gym.platform import ActionBatch, Platform, PlatformConfig
    from oasis_gym.platform.store import unpack_keys

    rng = np.random.default_rng(seed)
    n = 40
    pf = Platform(PlatformConfig())
    pf.add_users(make_population(n, edges=[(i, (i + 1) % n) for i in range(n)], previous_posts=[(0, "hello")]))

    def random_batch(k=300):
        act = rng.integers(0, 23, k)
        target = np.where(
            np.isin(act, [9, 10, 11, 12]),
            rng.integers(0, n, k),
            np.where(
                np.isin(act, [18, 19, 20, 21]),
                rng.integers(0, max(pf.n_comments, 1), k),
                rng.integers(0, max(pf.n_posts, 1), k),
            ),
        )
        texts = [f"text {i} about climate" if a in (4, 5, 6, 8, 17, 22) else None for i, a in enumerate(act.tolist())]
        return ActionBatch(rng.integers(0, pf.n_users, k), act, target, texts, rng.uniform(-1, 1, k).astype(np.float32))

    for _ in range(6):  # some history first (the relation sets churn)
        pf.apply(random_batch())
        pf.reset_pending()
        pf.advance(3)
    follower, followee = (int(x[0]) for x in unpack_keys(pf.rel["follow"].keys()[:1]))
    before = platform_state(pf)
    twin = copy.deepcopy(pf)
    cp = pf.checkpoint()
    pf.apply(ActionBatch.of([(follower, A.UNFOLLOW, followee)]))  # a pair removed and added back:
    pf.apply(ActionBatch.of([(follower, A.FOLLOW, followee)]))  # it gets a new row id
    for _ in range(3):  # hooks and the moderator may change more in one step
        pf.apply(random_batch())
    pf.moderate(rng.integers(0, pf.n_posts, 5), 3)
    pf.suspend(rng.integers(0, n, 3))
    pf.set_opinions(np.arange(10), rng.uniform(-1, 1, 10).astype(np.float32))
    pf.create_posts(np.array([1, 2]), ["seeded a", "seeded b"], label=np.array([1, 0]))
    pf.add_users(make_population(3, edges=[(0, 1)]))
    pf.reset_pending()
    pf.advance(3)
    assert platform_state(pf) != before
    pf.rollback(cp)
    assert platform_state(pf) == before
    batch = random_batch()  # and it goes on exactly like its untouched twin
    res, new = pf.apply(copy.deepcopy(batch))
    res2, new2 = twin.apply(batch)
    assert res.tolist() == res2.tolist() and new.tolist() == new2.tolist()
    assert platform_state(pf) == platform_state(twin)
