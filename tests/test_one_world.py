"""One world (issue 51): Recommender-v4 and Moderator-v2 on `backend="platform"` play the fast
path's episodes bit for bit.

The platform backend (the env's `world`, `oasis_gym/world/sim_world.py`) carries every decision of the model
onto a `Platform` as OASIS's rows and reads the counters the platform holds (likes, reposts,
reports, followers) back into the model, so an episode equals the fast path's only if the
platform accepted every row and counts as the model does. A spy records the inputs of every
model function the engine calls; when the paths drift it names the first mechanism whose inputs
differ.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from types import FunctionType

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import oasis_gym  # noqa: F401  (registers the ids)
from oasis_gym.actions import ActionType as A
from oasis_gym.batched import engine, feed, moderation, posting, tasks, users
from oasis_gym.envs.moderator_v2 import ModeratorEnv
from oasis_gym.envs.recommender_v4 import RecommenderEnv
from oasis_gym.errors import JournalError
from oasis_gym.model.ranking import DEFAULT_WEIGHTS, global_weights
from oasis_gym.platform.store import unpack_keys
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.policies.base import BasePolicy
from oasis_gym.population import synthetic
from oasis_gym.recsys import task_ranking
from oasis_gym.sim import ActionArrays, Simulation, SimulationConfig
from oasis_gym.world import sim_world
from oasis_gym.world.platform_world import PlatformWorld

USERS, STEPS, SEEDS = 300, 30, (9000, 9001)
TIERS = ("easy", "medium", "hard")


class Scripted(BasePolicy):
    """A scripted user policy: each of its visitors likes the first post of its feed, reports the
    second and writes a post."""

    def act(self, env, obs):
        """Its users' likes, reports and posts."""
        first, second = obs.post_ids[:, 0] >= 0, obs.post_ids[:, 1] >= 0
        n = len(obs.users)
        return ActionArrays.concat([
            ActionArrays(obs.users[first], np.full(first.sum(), int(A.LIKE_POST)), np.zeros(first.sum(), np.int64)),
            ActionArrays(obs.users[second], np.full(second.sum(), int(A.REPORT_POST)), np.ones(second.sum(), np.int64),
                         text=["scripted report"] * int(second.sum())),
            ActionArrays(obs.users, np.full(n, int(A.CREATE_POST)), text=["scripted"] * n,
                         stance=np.full(n, 0.5, np.float32)),
        ])  # fmt: skip


def _actions(env, kind: str):
    """The action sequence of a test episode: default, seeded random, or cycling codes."""
    rng = np.random.default_rng(0)
    for t in range(STEPS):
        if isinstance(env, RecommenderEnv):
            if kind == "default":
                yield global_weights(DEFAULT_WEIGHTS, env.task.weight_shape[0]).ravel().astype(np.float32)
            else:
                yield rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)
        elif kind == "default":
            yield np.zeros(16, np.int64)
        elif kind == "random":
            yield rng.integers(0, 4, 16)
        else:
            yield (np.arange(16) + t) % 4


def _episode(cls, difficulty: str, seed: int, kind: str, **backend):
    """Every observation, reward and info (privileged values included) of an episode, and its platform world."""
    env = cls(difficulty=difficulty, users=USERS, max_steps=STEPS, privileged_info=True, **backend)
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for action in _actions(env, kind):
        out.append(env.step(action))
    world = env.world
    env.close()
    return out, world


def _assert_same(fast, platform, what: str) -> None:
    assert np.array_equal(fast[0], platform[0]), f"{what}: reset observation"
    for t, (a, b) in enumerate(zip(fast[1:], platform[1:], strict=True), 1):
        assert np.array_equal(a[0], b[0]), f"{what}: observation of step {t}"
        assert np.array_equal(a[1], b[1]), f"{what}: reward of step {t}"
        assert a[2:4] == b[2:4], f"{what}: episode end of step {t}"
        assert set(a[4]) == set(b[4]), f"{what}: info keys of step {t}"
        for name in a[4]:
            assert np.array_equal(a[4][name], b[4][name]), f"{what}: info {name} of step {t}"


CASES = [(RecommenderEnv, t, k) for t in TIERS for k in ("default", "random")] + [
    (ModeratorEnv, t, k) for t in TIERS for k in ("default", "random", "cycling")
]


@pytest.mark.parametrize(("cls", "difficulty", "kind"), CASES)
def test_the_platform_backend_plays_the_fast_paths_episode_bit_for_bit(cls, difficulty, kind, tmp_path):
    for seed in SEEDS:
        fast, _ = _episode(cls, difficulty, seed, kind)
        for journal in (False, True):
            db = str(tmp_path / f"{seed}.db") if journal else None
            platform, world = _episode(cls, difficulty, seed, kind, backend="platform", journal=journal, db_path=db)
            what = f"{cls.__module__} {difficulty} seed {seed} {kind} journal={journal}"
            _assert_same(fast, platform, what)
            assert world.rejected == 0, f"{what}: the platform refused {world.rejected} rows"
            pf = world.platform
            assert pf.n_posts > 0 and len(pf.rel["like"]) > 0
            if journal:  # the journal holds the platform's rows: a like is a like row
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                    likes = conn.execute("SELECT COUNT(*) FROM 'like'").fetchone()[0]
                    reports = conn.execute("SELECT COUNT(*) FROM report").fetchone()[0]
                    served = conn.execute("SELECT COUNT(*) FROM rec").fetchone()[0]
                    sql = "SELECT COUNT(*) FROM rec WHERE post_id NOT IN (SELECT post_id FROM post)"
                    unknown = conn.execute(sql).fetchone()[0]
                assert likes == len(pf.rel["like"]) and reports == len(pf.rel["report"])
                assert served > likes and unknown == 0


def test_every_campaign_bot_like_is_a_like_row_of_a_bot_account():
    _, world = _episode(RecommenderEnv, "hard", 9000, "default", backend="platform")
    pf, bots = world.platform, world.bots
    bot_ids = bots[bots >= 0]
    assert len(bot_ids) > 0
    likers, _ = unpack_keys(pf.rel["like"].keys())
    liked_by_bots = np.isin(likers, bot_ids).sum()
    assert liked_by_bots > 0
    assert not pf.u_suspended.a[bot_ids].any()


# ---------------------------------------------------------------- the mechanism spy
# the glue of both paths: the fast path's, and the platform's own (the task ranking, the world)
_GLUE = (engine, feed, moderation, posting, tasks, users, task_ranking, sim_world)


def _digest(value) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{value.shape}" + hashlib.sha1(np.ascontiguousarray(value).tobytes()).hexdigest()
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_digest(v) for v in value) + ")"
    if callable(value):
        return "callable"
    return repr(value)


def _spy(monkeypatch, calls: list) -> None:
    """Wrap every model function the fast path's glue calls: each call's inputs are recorded."""
    for module in _GLUE:
        for name, fn in list(vars(module).items()):
            if isinstance(fn, FunctionType) and fn.__module__.startswith("oasis_gym.model."):

                def wrapped(*args, _fn=fn, _name=f"{fn.__module__}.{fn.__name__}", **kwargs):
                    calls.append((_name, _digest(args) + _digest(sorted(kwargs.items()))))
                    return _fn(*args, **kwargs)

                monkeypatch.setattr(module, name, wrapped)


def _first_drift(a: list, b: list) -> str | None:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"call {i}: {x[0]} (platform: {y[0]})"
    return None if len(a) == len(b) else f"call {min(len(a), len(b))}: one path made more calls"


def _spied(monkeypatch, cls, **backend) -> list:
    calls: list = []
    with monkeypatch.context() as m:
        _spy(m, calls)
        _episode(cls, "hard", 9000, "cycling" if cls is ModeratorEnv else "random", **backend)
    return calls


@pytest.mark.parametrize("cls", [RecommenderEnv, ModeratorEnv])
def test_the_spy_finds_no_model_function_whose_inputs_differ(monkeypatch, cls):
    fast = _spied(monkeypatch, cls)
    platform = _spied(monkeypatch, cls, backend="platform")
    assert len(fast) > 100 and {name for name, _ in fast} >= {"oasis_gym.model.ranking.rank"}
    assert _first_drift(fast, platform) is None, _first_drift(fast, platform)


def test_a_change_to_one_path_fails_with_the_mechanisms_name(monkeypatch):
    fast = _spied(monkeypatch, RecommenderEnv)
    monkeypatch.setattr(PlatformWorld, "bot_liked", lambda self: None)  # the bots' likes never reach the platform
    drift = _first_drift(fast, _spied(monkeypatch, RecommenderEnv, backend="platform"))
    assert drift is not None and "oasis_gym.model." in drift


# ---------------------------------------------------------------- the arguments
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "gpu"}, "backend must be one of"),
        ({"backend": "platform", "journal": "yes"}, "journal must be True or False"),
        ({"journal": True}, 'need backend="platform"'),
        ({"db_path": "x.db"}, 'need backend="platform"'),
        ({"backend": "platform", "db_path": "x.db"}, "db_path needs journal=True"),
        ({"backend": "platform", "journal": True, "db_path": ""}, "expected a file path"),
        ({"user_policy": Scripted()}, 'user_policy needs backend="platform"'),
        ({"backend": "platform", "user_policy": object()}, "user_policy must have act"),
        ({"backend": "platform", "policy_users": [1]}, "policy_users needs a user_policy"),
        ({"backend": "platform", "user_policy": Scripted(), "policy_users": [USERS]}, "user indexes in"),
        ({"backend": "platform", "user_policy": Scripted(), "policy_users": [1, 1]}, "names a user twice"),
        ({"backend": "platform", "user_policy": Scripted(), "policy_users": [0.5]}, "list of user indexes"),
    ],
)
def test_bad_backend_arguments_are_refused_in_one_line(kwargs, message):
    for cls in (RecommenderEnv, ModeratorEnv):
        with pytest.raises(ValueError, match=message) as err:
            cls(users=USERS, **kwargs)
        assert "\n" not in str(err.value)


def test_a_file_not_ours_at_db_path_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("my notes")
    env = ModeratorEnv(users=USERS, backend="platform", journal=True, db_path=str(path))
    with pytest.raises(JournalError):
        env.reset(seed=9000)
    assert path.read_text() == "my notes" and [p.name for p in tmp_path.iterdir()] == ["notes.db"]
    env = ModeratorEnv(users=USERS, max_steps=3, backend="platform", journal=True)  # an in-memory journal
    env.reset(seed=9000)
    assert env.step(np.zeros(16, np.int64))[0].shape == env.observation_space.shape
    env.close()


@pytest.mark.parametrize("env_id", ["oasis_gym/Recommender-v4", "oasis_gym/Moderator-v2"])
def test_the_platform_backed_env_passes_gymnasiums_checker(env_id):
    env = gym.make(env_id, users=USERS, max_steps=5, backend="platform")
    fast = gym.make(env_id, users=USERS, max_steps=5)
    assert env.observation_space == fast.observation_space and env.action_space == fast.action_space
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


# ---------------------------------------------------------------- resume
def _tables(path: str) -> dict[str, list]:
    """Every row of every table of a journal (its id and path aside, which name the file, not the run)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        rows = {n: conn.execute(f'SELECT * FROM "{n}" ORDER BY rowid').fetchall() for n in names}
    rows["meta"] = [r for r in rows["meta"] if r[0] != "journal_id"]
    path = re.compile(r'"db_path": "[^"]*"')
    rows["meta"] = [(k, path.sub('"db_path": ""', v) if k == "config" else v) for k, v in rows["meta"]]
    return rows


@pytest.mark.parametrize("cls", [RecommenderEnv, ModeratorEnv])
def test_a_resumed_platform_episode_equals_the_uninterrupted_one_in_every_table(cls, tmp_path):
    kind = "random" if cls is RecommenderEnv else "cycling"
    whole, broken = str(tmp_path / "whole.db"), str(tmp_path / "broken.db")
    args = {"difficulty": "hard", "users": USERS, "max_steps": STEPS, "backend": "platform", "journal": True}
    env = cls(db_path=whole, **args)
    actions = list(_actions(env, kind))
    env.reset(seed=9001)
    uninterrupted = [env.step(a) for a in actions]
    env.close()
    env = cls(db_path=broken, **args)
    env.reset(seed=9001)
    for a in actions[:12]:
        env.step(a)
    env.close()  # the run stops here; a new process picks it up
    env = cls(db_path=broken, **args)
    obs, info = env.resume()
    assert info["episode_seed"] == 9001 and np.array_equal(obs, uninterrupted[11][0])
    resumed = [env.step(a) for a in actions[12:]]
    env.close()
    for t, (a, b) in enumerate(zip(uninterrupted[12:], resumed, strict=True), 13):
        assert np.array_equal(a[0], b[0]) and a[1:4] == b[1:4] and a[4] == b[4], f"step {t}"
    assert _tables(whole) == _tables(broken)


def test_resume_refuses_what_holds_no_task_episode_and_leaves_it_as_it_was(tmp_path):
    path = tmp_path / "other.db"
    env = RecommenderEnv(users=USERS, backend="platform", journal=True, db_path=str(path))
    with pytest.raises(JournalError, match="no journal at"):
        env.resume()
    assert list(tmp_path.iterdir()) == []  # nothing created
    sim = Simulation(synthetic(20, seed=1), SimulationConfig(db_path=str(path)))
    sim.reset(seed=1)
    sim.close()  # a journal of the platform's own runs: no task state in it
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ValueError, match="holds no task episode"):
        env.resume()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    with pytest.raises(ValueError, match="resume needs"):
        RecommenderEnv(users=USERS).resume()


# ---------------------------------------------------------------- another user policy in the task users' place
@pytest.mark.parametrize("cls", [RecommenderEnv, ModeratorEnv])
def test_another_user_policy_takes_some_task_users_place_and_the_journal_holds_its_actions(cls, tmp_path):
    db = str(tmp_path / "mixed.db")
    theirs = np.arange(0, USERS, 3)
    env = cls(difficulty="hard", users=USERS, max_steps=STEPS, backend="platform", journal=True, db_path=db,
              user_policy=Scripted(), policy_users=theirs)  # fmt: skip
    fast = cls(difficulty="hard", users=USERS, max_steps=STEPS)
    assert env.observation_space == fast.observation_space and env.action_space == fast.action_space
    mixed, accounts = [env.reset(seed=9000)[0]], set(theirs.tolist())
    for action in _actions(env, "random"):
        mixed.append(env.step(action))
        assert env.observation_space.contains(mixed[-1][0])
        accounts.update(env.world.alias[theirs].tolist())  # (a returning account is a new one)
    env.close()
    alone, _ = _episode(cls, "hard", 9000, "random", backend="platform")
    assert any(not np.array_equal(a[0], b[0]) for a, b in zip(mixed[1:], alone[1:])), "the other users changed nothing"
    ids = ",".join(map(str, sorted(accounts)))
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        q = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        their_posts = q(f"SELECT COUNT(*) FROM post WHERE user_id IN ({ids})")
        scripted = q("SELECT COUNT(*) FROM post WHERE content = 'scripted' AND original_post_id IS NULL")
        reposted = q(f"SELECT COUNT(*) FROM post WHERE content = 'scripted' AND user_id NOT IN ({ids})")
        model_posts = q(f"SELECT COUNT(*) FROM post WHERE content LIKE '#%' AND user_id IN ({ids})")
        task_posts = q(f"SELECT COUNT(*) FROM post WHERE content LIKE '#%' AND user_id NOT IN ({ids})")
        their_likes = q(f"SELECT COUNT(*) FROM 'like' WHERE user_id IN ({ids})")
        other_likes = q(f"SELECT COUNT(*) FROM 'like' WHERE user_id NOT IN ({ids})")
        their_reports = q(f"SELECT COUNT(*) FROM report WHERE user_id IN ({ids}) AND report_reason = 'scripted report'")
    assert scripted > 0 and their_posts >= scripted and model_posts == 0  # their posts are theirs
    assert reposted > 0  # and task posts (world/user_posts.py): served to task users, who repost some
    assert task_posts > 0  # the task users' posts, with their texts (world/texts.py)
    assert their_likes > 0 and their_reports > 0 and other_likes > 0


def test_abm_users_take_some_task_users_place():
    env = RecommenderEnv(difficulty="medium", users=USERS, max_steps=10, backend="platform",
                         user_policy=ABMPolicy(), policy_users=list(range(100)))  # fmt: skip
    env.reset(seed=9000)
    for action in list(_actions(env, "default"))[:10]:
        obs, reward, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(obs) and np.isfinite(reward)
    assert truncated
    env.close()
