"""OASIS compatibility both ways: OASIS's action semantics (quote of a quote), OASIS databases
loaded, checked, imported and continued (the OASIS file untouched), and reported.

OASIS databases here are built by `oasis_fixture` from OASIS's schema SQL, with OASIS's rules
(no camel-oasis import)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3

import numpy as np
import pytest
from conftest import make_population
from oasis_fixture import OasisWriter, build_oasis_db

from oasis_gym.actions import ActionType as A
from oasis_gym.actions import Result as R
from oasis_gym.cli import main as cli_main
from oasis_gym.platform import QUOTE, REPOST, ActionBatch, Journal, Platform, PlatformConfig
from oasis_gym.platform.oasis_import import OasisImportError, is_oasis_db, load_oasis, time_steps


def fresh(**config):
    pf = Platform(PlatformConfig(**config))
    pf.add_users(make_population(5, (), ((0, "root post"),)))
    return pf


def apply(pf, *rows):
    res, new = pf.apply(ActionBatch.of(list(rows)))
    pf.advance(3)
    return [R(r) for r in res], new


# --------------------------------------------------------------------------- semantics


def test_quote_of_a_quote_resolves_to_the_root_like_oasis():
    pf = fresh()
    _, (q1,) = apply(pf, (1, A.QUOTE_POST, 0, "first take"))
    res, (q2,) = apply(pf, (2, A.QUOTE_POST, q1, "take on a take"))
    assert res == [R.OK]
    assert pf.p_root.a[q2] == 0 and pf.p_kind.a[q2] == QUOTE  # OASIS: original_post_id = the root
    assert pf.p_content[q2] == "root post" and pf.p_quote[q2] == "take on a take"
    assert pf.p_shares.a[0] == 2 and pf.p_shares.a[q1] == 0  # the share counts on the root
    # a repost of a quote still points at the quote, and a quote of that repost at the quote
    _, (r,) = apply(pf, (3, A.REPOST, q1))
    _, (q3,) = apply(pf, (4, A.QUOTE_POST, r, "via a repost"))
    assert pf.p_root.a[r] == q1 and pf.p_kind.a[r] == REPOST and pf.p_root.a[q3] == q1
    assert pf.p_shares.a[q1] == 2 and pf.p_shares.a[0] == 2


def test_nested_quotes_option_keeps_the_chain():
    pf = fresh(nested_quotes=True)
    _, (q1,) = apply(pf, (1, A.QUOTE_POST, 0, "first take"))
    _, (q2,) = apply(pf, (2, A.QUOTE_POST, q1, "take on a take"))
    assert pf.p_root.a[q2] == q1 and pf.p_shares.a[q1] == 1 and pf.p_shares.a[0] == 1
    assert pf.p_content[q2] == "root post"  # what was quoted: the quote's own text stays in p_quote[q1]


# --------------------------------------------------------------------------- reading OASIS databases


@pytest.fixture()
def oasis_db(tmp_path):
    return build_oasis_db(tmp_path / "oasis.db", users=12, steps=6, per_step=25)


def _fingerprint(path):
    return hashlib.sha256(path.read_bytes()).hexdigest(), os.stat(path).st_mtime_ns


def test_load_oasis_matches_every_row_and_counter(oasis_db):
    before = _fingerprint(oasis_db)
    assert is_oasis_db(oasis_db)
    res = load_oasis(oasis_db)
    pf, ids = res.platform, res.ids
    assert res.mismatches == {} and res.dropped == {} and res.time_kind == "steps"
    conn = sqlite3.connect(oasis_db)
    assert pf.n_users == conn.execute("SELECT COUNT(*) FROM user").fetchone()[0]
    assert ids.user.tolist() == list(range(pf.n_users))  # OASIS user_id = agent id
    assert ids.post.tolist() == list(range(1, pf.n_posts + 1))  # AUTOINCREMENT from 1
    rows = conn.execute(
        "SELECT post_id, user_id, original_post_id, quote_content, num_likes, num_dislikes,"
        " num_shares, num_reports, CAST(created_at AS INTEGER) FROM post ORDER BY post_id"
    ).fetchall()
    for p, (_pid, uid, orig, quote, likes, dislikes, shares, reports, step) in enumerate(rows):
        assert pf.p_author.a[p] == uid and pf.p_root.a[p] == (-1 if orig is None else orig - 1)
        assert pf.p_kind.a[p] == (0 if orig is None else REPOST if quote is None else QUOTE)
        assert (pf.p_likes.a[p], pf.p_dislikes.a[p], pf.p_shares.a[p], pf.p_reports.a[p]) == (
            likes,
            dislikes,
            shares,
            reports,
        )
        assert pf.p_step.a[p] == step and pf.p_minute.a[p] == 480 + 3 * step
    assert [int(x) for x in pf.p_comments.a] == [
        conn.execute("SELECT COUNT(*) FROM comment WHERE post_id = ?", (p + 1,)).fetchone()[0]
        for p in range(pf.n_posts)
    ]
    for uid, nfr, nfg in conn.execute("SELECT user_id, num_followers, num_followings FROM user"):
        assert (pf.u_followers.a[uid], pf.u_followings.a[uid]) == (nfr, nfg)
    for name, table, a, b, a_off, b_off in (
        ("like", '"like"', "user_id", "post_id", 0, 1),
        ("comment_dislike", "comment_dislike", "user_id", "comment_id", 0, 1),
        ("follow", "follow", "follower_id", "followee_id", 0, 0),
        ("mute", "mute", "muter_id", "mutee_id", 0, 0),
        ("report", "report", "user_id", "post_id", 0, 1),
    ):
        pairs = {(x - a_off, y - b_off) for x, y in conn.execute(f"SELECT {a}, {b} FROM {table}")}
        assert len(pairs) > 0 and {(x, y) for x, y in zip(*[v.tolist() for v in _unpack(pf, name)])} == pairs, name
    # a repost carries what it shares
    r = int(np.flatnonzero(pf.p_kind.a == REPOST)[0])
    assert pf.p_content[r] == pf.p_content[pf.p_root.a[r]]
    assert pf.step == 7 and pf.minute == 480 + 3 * 7
    conn.close()
    assert _fingerprint(oasis_db) == before


def _unpack(pf, name):
    from oasis_gym.platform.store import unpack_keys

    return unpack_keys(pf.rel[name].keys())


def test_counters_that_disagree_with_the_rows_are_reported_and_recomputed(oasis_db, tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(oasis_db.read_bytes())
    conn = sqlite3.connect(bad)
    conn.execute("UPDATE post SET num_likes = num_likes + 5 WHERE post_id = 1")
    conn.execute("UPDATE user SET num_followers = 99 WHERE user_id = 3")
    conn.execute("INSERT INTO follow (follower_id, followee_id, created_at) VALUES (2, 777, '3')")  # a missing user
    conn.commit()
    conn.close()
    res = load_oasis(bad)
    assert res.mismatches == {"user.num_followers": 1, "post.num_likes": 1}
    assert ("post", 1, "num_likes") in [e[:3] for e in res.examples]
    assert res.dropped == {"follow": 1}
    good = load_oasis(oasis_db).platform
    np.testing.assert_array_equal(res.platform.p_likes.a, good.p_likes.a)  # the rows win
    np.testing.assert_array_equal(res.platform.u_followers.a, good.u_followers.a)
    with pytest.raises(OasisImportError, match="counters disagree"):
        load_oasis(bad, strict=True)


def test_not_an_oasis_database(tmp_path):
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).execute("CREATE TABLE x (a)").connection.close()
    assert not is_oasis_db(empty) and not is_oasis_db(tmp_path / "missing.db")
    with pytest.raises(OasisImportError, match="no user, post table"):
        load_oasis(empty)
    with pytest.raises(FileNotFoundError):
        load_oasis(tmp_path / "missing.db")


def test_time_steps_reads_both_oasis_clocks():
    step, minute, kind = time_steps(["0", "2", 5, None], minutes_per_step=3)
    assert kind == "steps" and step.tolist() == [0, 2, 5, 0] and minute.tolist() == [0, 6, 15, 0]
    step, minute, kind = time_steps(["2024-08-06 08:00:00", "2024-08-06 09:30:30.5", None], minutes_per_step=3)
    assert kind == "datetime" and minute.tolist() == [0, 90, 0] and step.tolist() == [0, 30, 0]


def test_reddit_clock_database_loads(tmp_path):
    """OASIS's Reddit clock writes datetimes: minutes since the earliest one."""
    w = OasisWriter(tmp_path / "reddit.db")
    for u in range(3):
        w.sign_up(u, f"u{u}", f"U{u}", "")
    w.conn.execute("UPDATE user SET created_at = '2024-08-06 08:00:00'")
    w.conn.execute("INSERT INTO post (user_id, content, created_at) VALUES (0, 'a', '2024-08-06 08:10:00')")
    w.conn.execute(
        "INSERT INTO post (user_id, original_post_id, created_at, num_shares) VALUES (1, 1, '2024-08-06 08:31:00', 0)"
    )
    w.conn.execute("UPDATE post SET num_shares = 1 WHERE post_id = 1")
    w.conn.execute("DELETE FROM trace")
    w.close()
    res = load_oasis(tmp_path / "reddit.db")
    pf = res.platform
    assert res.time_kind == "datetime" and pf.config.name == "reddit" and res.mismatches == {}
    assert pf.p_minute.a.tolist() == [480 + 10, 480 + 31] and pf.p_step.a.tolist() == [3, 10]
    assert pf.step == 11


# --------------------------------------------------------------------------- continuing OASIS runs


def test_platform_from_db_on_an_oasis_file_and_into_a_journal(oasis_db, tmp_path):
    before = _fingerprint(oasis_db)
    pf = Platform.from_db(oasis_db)
    journal = Journal(tmp_path / "ours.db", pipelined=False)
    journal.commit_step(pf)  # everything loaded is pending: the new journal gets every row
    res, new = pf.apply(ActionBatch.of([(1, A.LIKE_POST, 0), (2, A.QUOTE_POST, 3, "more"), (3, A.FOLLOW, 4)]))
    journal.commit_step(pf, advance_minutes=3)
    journal.close()
    back = Platform.from_db(tmp_path / "ours.db")
    for name in ("p_likes", "p_shares", "p_root", "u_followers", "c_likes", "p_comments"):
        np.testing.assert_array_equal(getattr(back, name).a, getattr(pf, name).a, err_msg=name)
    assert _fingerprint(oasis_db) == before


def test_import_report_and_continue_end_to_end(oasis_db, tmp_path, monkeypatch, capsys):
    """An OASIS run: reported as it is, imported, continued by `run --resume`, reported again;
    the OASIS file's bytes and mtime never change."""
    monkeypatch.chdir(tmp_path)
    before = _fingerprint(oasis_db)
    assert cli_main(["report", str(oasis_db), "--out", str(tmp_path / "oasis_report")]) == 0
    text = (tmp_path / "oasis_report" / "summary.txt").read_text()
    assert "computed from the OASIS tables" in text and "opinion" in text
    assert {"actions.png", "cascade.png", "follower_ccdf.png"} <= {
        p.name for p in (tmp_path / "oasis_report").iterdir()
    }

    ours = tmp_path / "ours.db"
    assert cli_main(["import", str(oasis_db), "--out", str(ours), "--json"]) == 0  # resumed with a metrics recorder
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["counter_mismatches"] == {} and summary["step"] == 7
    assert cli_main(["import", str(oasis_db), "--out", str(ours)]) == 2
    err = capsys.readouterr().err
    assert "exists" in err and err.count("\n") == 1 and "Traceback" not in err
    with pytest.raises(SystemExit) as stop:  # one line, exit code 2, the way to go on named
        cli_main(["run", "--resume", str(oasis_db), "--steps", "9"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "OASIS database" in err and "oasis-gym import" in err and err.count("\n") == 1
    loaded = load_oasis(oasis_db).platform
    assert cli_main(["run", "--resume", str(ours), "--steps", "10", "--quiet"]) == 0
    pf = Platform.from_db(ours)
    assert pf.step == 10
    conn = sqlite3.connect(ours)
    # OASIS's rows are all there, unchanged where nothing acted on them, and the run went on
    assert (
        conn.execute("SELECT COUNT(*) FROM post WHERE post_id < ?", (loaded.n_posts,)).fetchone()[0] == loaded.n_posts
    )
    assert conn.execute("SELECT MAX(step) FROM trace").fetchone()[0] == 9
    assert conn.execute("SELECT COUNT(*) FROM trace WHERE step >= 7").fetchone()[0] > 0
    assert (
        conn.execute("SELECT COUNT(*) FROM trace WHERE step < 7").fetchone()[0]
        == sqlite3.connect(oasis_db).execute("SELECT COUNT(*) FROM trace").fetchone()[0]
    )
    assert conn.execute("SELECT oasis_id FROM oasis_id_map WHERE kind = 'post' AND id = 0").fetchone() == (1,)
    conn.close()
    assert pf.n_users == loaded.n_users and pf.n_posts >= loaded.n_posts
    assert cli_main(["report", str(ours), "--out", str(tmp_path / "ours_report")]) == 0
    text = (tmp_path / "ours_report" / "summary.txt").read_text()
    assert "steps: 10 (step 0 to 9)" in text, text  # the OASIS steps (tables) and ours (recorded)
    assert _fingerprint(oasis_db) == before


def test_import_refuses_to_overwrite(oasis_db, tmp_path, capsys):
    target = tmp_path / "taken.db"
    target.write_bytes(b"precious")
    assert cli_main(["import", str(oasis_db), "--out", str(target)]) == 2  # a user's file: refused, untouched
    assert target.read_bytes() == b"precious"
    assert "not an output of oasis-gym import" in capsys.readouterr().err
    assert cli_main(["import", str(tmp_path / "nope.db"), "--out", str(tmp_path / "new.db")]) == 2
    assert cli_main(["import", str(target), "--out", str(tmp_path / "new.db")]) == 2  # not SQLite
    with pytest.raises(SystemExit) as bad:  # an argument argparse refuses: its one line, exit code 2
        cli_main(["import", str(oasis_db), "--out", str(tmp_path / "new.db"), "--minutes-per-step", "0"])
    assert bad.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and "cannot import" in err[0] and "not an SQLite database" in err[1], err
    assert not (tmp_path / "new.db").exists()


# --------------------------------------------------------------------------- reports: one implementation


def test_offline_metrics_equal_the_online_recorder(tmp_path):
    """A journal's curves recomputed from its tables (as for an OASIS database) equal what the
    online recorder wrote, for every tag that does not need served feeds or the follow graph
    over time."""
    from oasis_gym.envs import twitter_v0
    from oasis_gym.metrics import MetricsRecorder, read_metrics
    from oasis_gym.metrics.offline import offline_metrics

    env = twitter_v0.parallel_env(
        users=40,
        recsys="random",
        activation=0.6,
        db_path=str(tmp_path / "run.db"),
        max_cycles=20,
        available_actions=tuple(range(23)),
    )
    obs, infos = env.reset(seed=1)
    env.sim.platform.create_posts(np.array([0, 1, 2]), ["one", "two", "three"])
    rec = MetricsRecorder.attach(env.sim, None, every=1, strict=True)
    space = env.action_space("user_0")
    space.seed(2)
    for _ in range(6):
        actions = {a: space.sample(mask=obs[a]["action_mask"]) for a in env.agents if infos[a]["active"]}
        obs, _, _, _, infos = env.step(actions)
    rec.finalize()
    env.close()
    conn = sqlite3.connect(tmp_path / "run.db")
    online = read_metrics(conn)
    conn.close()
    offline, notes = offline_metrics(tmp_path / "run.db")
    tags = [
        t
        for t in online
        if t.startswith(
            (
                "actions/",
                "invalid/",
                "activity/",
                "network/new_follows",
                "network/unfollows",
                "engagement/per_active_user",
            )
        )
    ]
    tags += ["cascade/new_shares", "cascade/scale", "cascade/spread_count", "cascade/mean_scale"]
    assert len(tags) > 40 and online["cascade/new_shares"][1].sum() > 0
    for tag in tags:
        steps, values = online[tag]
        off = dict(zip(offline[tag][0].tolist(), offline[tag][1].tolist()))
        np.testing.assert_allclose([off[s] for s in steps.tolist()], values, err_msg=tag)
    assert not any(t.startswith(("exposure/", "engagement/rate")) for t in offline)
    assert any("served feeds" in n for n in notes)


# --------------------------------------------------------------------------- OASIS's analysis code paths

# The queries OASIS's own analysis scripts run (camel-ai/oasis: visualization/*/code/*.py,
# examples/*.py, oasis/testing/show_db.py, the recommender's table reads), transcribed.
OASIS_QUERIES = {
    "vis_neo4j_twitter users": "SELECT user_id, user_name, name, bio, created_at FROM user ORDER BY created_at",
    "vis_neo4j_twitter follows": "SELECT follower_id, followee_id, created_at FROM follow ORDER BY created_at",
    "vis_neo4j_reddit trace": "SELECT user_id, created_at, action, info FROM trace ORDER BY created_at",
    "analysis_couterfact comments": "SELECT user_id, created_at, info FROM trace WHERE action = 'create_comment'",
    "twitter_misinforeport": "SELECT user_id, info, created_at FROM trace WHERE action = 'report_post'",
    "graph.py posts": "SELECT * FROM post",
    "recsys user": "SELECT * FROM user",
    "recsys trace": "SELECT * FROM trace",
    "recsys rec": "SELECT user_id, post_id FROM rec",
}


@pytest.fixture(scope="module")
def our_journal(tmp_path_factory):
    from oasis_gym.envs import twitter_v0

    tmp = tmp_path_factory.mktemp("journal")
    env = twitter_v0.parallel_env(
        users=30,
        recsys="random",
        activation=0.8,
        db_path=str(tmp / "run.db"),
        max_cycles=20,
        available_actions=tuple(range(23)),
        log_recs=True,
    )
    obs, infos = env.reset(seed=4)
    env.sim.platform.create_posts(np.array([0, 1, 2]), ["one", "two", "three"])
    space = env.action_space("user_0")
    space.seed(4)
    for _ in range(6):
        actions = {a: space.sample(mask=obs[a]["action_mask"]) for a in env.agents if infos[a]["active"]}
        obs, _, _, _, infos = env.step(actions)
    pf = env.sim.platform
    env.close()
    return tmp / "run.db", pf


def test_oasis_analysis_queries_run_on_our_journal(our_journal, oasis_db):
    """Every query runs on an OASIS database and on ours with the same columns, and what
    the scripts then do with the rows works on ours."""
    path, pf = our_journal
    theirs, ours = sqlite3.connect(oasis_db), sqlite3.connect(path)
    for name, sql in OASIS_QUERIES.items():
        c1, c2 = theirs.execute(sql), ours.execute(sql)
        cols_theirs, cols_ours = [d[0] for d in c1.description], [d[0] for d in c2.description]
        if sql.startswith("SELECT *"):  # ours add columns (OASIS's newer post.image_path, step, ...)
            assert [c for c in cols_ours if c in cols_theirs] == cols_theirs, name
        else:
            assert cols_ours == cols_theirs, name
        assert c2.fetchall(), name
    # vis_neo4j_twitter: one node per user, one edge per follow row
    assert len(ours.execute(OASIS_QUERIES["vis_neo4j_twitter users"]).fetchall()) == pf.n_users
    assert len(ours.execute(OASIS_QUERIES["vis_neo4j_twitter follows"]).fetchall()) == len(pf.rel["follow"])
    # analysis_couterfact: info JSON -> comment -> its post's content
    found = 0
    for _, _, info in ours.execute(OASIS_QUERIES["analysis_couterfact comments"]):
        info = json.loads(info)
        if info.get("comment_id") is not None:
            post_id, content = ours.execute(
                "SELECT post_id, content FROM comment WHERE comment_id = ?", (info["comment_id"],)
            ).fetchone()
            assert content == pf.c_content[info["comment_id"]]
            assert (
                ours.execute("SELECT content FROM post WHERE post_id = ?", (post_id,)).fetchone()[0]
                == pf.p_content[post_id]
            )
            found += 1
    assert found == pf.n_comments > 0
    # analysis_score: a comment's score
    for cid in range(pf.n_comments):
        score = ours.execute(
            "SELECT (num_likes - num_dislikes) AS score FROM comment WHERE comment_id = ?", (cid,)
        ).fetchone()[0]
        assert score == pf.c_likes.a[cid] - pf.c_dislikes.a[cid]
    # twitter_misinforeport: info JSON with the reported post
    reports = [json.loads(i) for _, i, _ in ours.execute(OASIS_QUERIES["twitter_misinforeport"])]
    assert reports and all("post_id" in r for r in reports)
    # show_db.print_db_contents: every table listed, described and read
    for (table,) in ours.execute("SELECT name FROM sqlite_master WHERE type='table';").fetchall():
        assert ours.execute(f"PRAGMA table_info({table})").fetchall()
        ours.execute(f"SELECT * FROM {table}").fetchall()
    # graph.py: the whole post table, read by column name
    cur = ours.execute("SELECT * FROM post ORDER BY post_id")
    cols = [d[0] for d in cur.description]
    rows = [dict(zip(cols, r)) for r in cur.fetchall()]
    assert len(rows) == pf.n_posts and [r["num_shares"] for r in rows] == pf.p_shares.a.tolist()
    assert [r["original_post_id"] for r in rows] == [None if x < 0 else x for x in pf.p_root.a.tolist()]
    theirs.close()
    ours.close()


def test_rows_naming_missing_targets_or_repeating_a_pair_are_dropped(oasis_db, tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(oasis_db.read_bytes())
    conn = sqlite3.connect(bad)
    pair = conn.execute('SELECT user_id, post_id FROM "like" ORDER BY like_id LIMIT 1').fetchone()
    first_like = conn.execute('SELECT MIN(like_id) FROM "like"').fetchone()[0]
    # a like of a missing post by that same user before the real one, then a repeat of the pair
    conn.execute(
        "INSERT INTO \"like\" (like_id, user_id, post_id, created_at) VALUES (?, ?, 999, '1')",
        (first_like - 1 if first_like > 1 else 0, pair[0]),
    )
    conn.execute("INSERT INTO \"like\" (user_id, post_id, created_at) VALUES (?, ?, '6')", pair)
    conn.commit()
    conn.close()
    res = load_oasis(bad)
    assert res.dropped == {"like": 2}
    assert res.platform.rel["like"].contains([pair[0]], [pair[1] - 1])[0]
    assert res.mismatches == {}  # num_likes counted the real like once, like the rows that stay
