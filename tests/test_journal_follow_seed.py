"""A journal seeding a large follow graph stores it compactly (platform/follow_seed.py): its
`follow` view reads as the plain table row for row (seeded follows undone, new ones added),
resume loads the same platform, OASIS's queries run, the indexes and query plans hold, and
a first commit that fails leaves no trace. The size from which a seed is compact is
lowered so that a few hundred users make one."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from test_guarantees_step import CLI_ARGS, _cli_in, assert_same_tables, keyed_tables
from test_oasis_compat import OASIS_QUERIES

import oasis_gym.platform.follow_seed as follow_seed
from oasis_gym.actions import ActionType as A
from oasis_gym.platform import ActionBatch, Journal, JournalError, Platform
from oasis_gym.platform.store import unpack_keys
from oasis_gym.population import synthetic

FOLLOW = "SELECT follow_id, follower_id, followee_id, created_at FROM follow ORDER BY follow_id"


def journaled(path, compact: bool, monkeypatch) -> Platform:
    """A platform of 300 synthetic users journaled for 4 steps of follows and unfollows,
    seeded follows undone among them."""
    monkeypatch.setattr(follow_seed, "MIN_ROWS", 10 if compact else 10**12)
    rng = np.random.default_rng(5)
    pf = Platform()
    pf.add_users(synthetic(300, seed=3))
    journal = Journal(path, new=True)
    journal.commit_step(pf, advance_minutes=3)
    for _ in range(4):
        a, b = unpack_keys(pf.rel["follow"].keys()[rng.choice(len(pf.rel["follow"]), 25, replace=False)])
        rows = [(int(u), A.UNFOLLOW, int(v)) for u, v in zip(a, b)]
        rows += [(int(u), A.FOLLOW, int(v)) for u, v in rng.integers(0, 300, (40, 2)) if u != v]
        pf.apply(ActionBatch.of(rows))
        journal.commit_step(pf, advance_minutes=3)
    journal.close()
    return pf


def test_a_compact_seed_reads_as_the_plain_follow_table(tmp_path, monkeypatch):
    plain_pf = journaled(tmp_path / "plain.db", False, monkeypatch)
    compact_pf = journaled(tmp_path / "compact.db", True, monkeypatch)
    plain, compact = sqlite3.connect(tmp_path / "plain.db"), sqlite3.connect(tmp_path / "compact.db")
    kinds = dict(compact.execute("SELECT name, type FROM sqlite_master WHERE name LIKE 'follow%'").fetchall())
    assert kinds == {"follow": "view", "follow_seed": "table", "follow_run": "table", "follow_unfollowed": "table"}
    followers, undone = compact.execute("SELECT COUNT(*), SUM(n_unfollowed) FROM follow_seed").fetchone()
    assert followers > 250 and undone == compact.execute("SELECT COUNT(*) FROM follow_unfollowed").fetchone()[0] > 0
    assert compact.execute(FOLLOW).fetchall() == plain.execute(FOLLOW).fetchall()
    assert len(compact.execute(FOLLOW).fetchall()) == len(compact_pf.rel["follow"]) == len(plain_pf.rel["follow"])
    for sql in ("SELECT * FROM user", "SELECT * FROM meta WHERE key != 'journal_id'"):
        assert compact.execute(sql).fetchall() == plain.execute(sql).fetchall()
    loaded = Platform.from_db(tmp_path / "compact.db")
    assert np.array_equal(loaded.rel["follow"].keys(), compact_pf.rel["follow"].keys())
    assert np.array_equal(loaded.rel["follow"].values(), compact_pf.rel["follow"].values())
    assert loaded.next_row_id == compact_pf.next_row_id


def test_a_compact_journal_answers_oasis_queries_and_uses_its_keys(tmp_path, monkeypatch):
    journaled(tmp_path / "plain.db", False, monkeypatch)
    journaled(tmp_path / "compact.db", True, monkeypatch)
    plain, compact = sqlite3.connect(tmp_path / "plain.db"), sqlite3.connect(tmp_path / "compact.db")
    for name, sql in OASIS_QUERIES.items():
        got, want = (sorted(map(repr, db.execute(sql).fetchall())) for db in (compact, plain))
        assert got == want, name
    plan = " ".join(r[3] for r in compact.execute("EXPLAIN QUERY PLAN SELECT * FROM follow WHERE follower_id = 3"))
    assert "SEARCH s USING INTEGER PRIMARY KEY" in plan and "idx_follow_pair" in plan
    by_user = "SELECT followee_id FROM follow WHERE follower_id = 7 ORDER BY followee_id"
    assert compact.execute(by_user).fetchall() == plain.execute(by_user).fetchall()


def test_a_resumed_compact_run_equals_the_uninterrupted_one_in_every_table(tmp_path, monkeypatch):
    monkeypatch.setattr(follow_seed, "MIN_ROWS", 10)
    steps = ["--steps", "7"]
    _cli_in(tmp_path / "full", CLI_ARGS + steps, monkeypatch)
    _cli_in(tmp_path / "stop", CLI_ARGS + ["--steps", "3"], monkeypatch)
    _cli_in(tmp_path / "stop", ["run", "--resume", "run.db", "--quiet"] + steps, monkeypatch)
    full, stop = (tmp_path / name / "run.db" for name in ("full", "stop"))
    assert sqlite3.connect(full).execute("SELECT type FROM sqlite_master WHERE name = 'follow'").fetchone() == ("view",)
    assert_same_tables(keyed_tables(stop), keyed_tables(full))
    assert sqlite3.connect(stop).execute(FOLLOW).fetchall() == sqlite3.connect(full).execute(FOLLOW).fetchall()


def test_a_failed_first_commit_leaves_the_plain_schema(tmp_path, monkeypatch):
    monkeypatch.setattr(follow_seed, "MIN_ROWS", 10)
    pf = Platform()
    pf.add_users(synthetic(200, seed=1))
    journal = Journal(tmp_path / "j.db", new=True)

    def boom(conn):
        raise RuntimeError("a hook fails")

    with pytest.raises(RuntimeError):
        journal.commit_step(pf, extra=boom)
    assert journal.conn.execute("SELECT type FROM sqlite_master WHERE name = 'follow'").fetchone() == ("table",)
    assert journal._follow.table == "follow"
    journal.commit_step(pf)  # and the retry seeds it compactly
    assert journal.conn.execute("SELECT type FROM sqlite_master WHERE name = 'follow'").fetchone() == ("view",)
    assert journal.conn.execute("SELECT COUNT(*) FROM follow").fetchone()[0] == len(pf.rel["follow"])
    journal.close()
    with pytest.raises(JournalError):  # (what a second writer gets: the lock still works)
        Journal(tmp_path / "j.db", new=True)


def test_small_seeds_stay_plain(tmp_path):
    pf = Platform()
    pf.add_users(synthetic(200, seed=1))
    journal = Journal(tmp_path / "j.db", new=True)
    journal.commit_step(pf)
    assert journal.conn.execute("SELECT type FROM sqlite_master WHERE name = 'follow'").fetchone() == ("table",)
    journal.close()


def test_fixed_width_json_arrays():
    keys = np.array([(1 << 32) | 0, (1 << 32) | 7, (1 << 32) | 12345, (4 << 32) | 99], dtype=np.int64)
    followers, starts = follow_seed._followers(keys)
    assert followers.tolist() == [1, 4] and starts.tolist() == [0, 3]
    texts = list(follow_seed._json_arrays(keys, starts))
    assert texts == ["[    0 ,    7 ,12345]", "[   99]"]
    import json

    assert [json.loads(t) for t in texts] == [[0, 7, 12345], [99]]
