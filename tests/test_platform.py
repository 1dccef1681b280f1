"""Platform core: every action's effect and rejections, journal/state agreement, from_db,
hostile text. Real SQLite files throughout."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from conftest import make_population
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oasis_gym.actions import ACTION_NAMES, COMMENT_TARGET, POST_TARGET, TEXT_ACTIONS, USER_TARGET
from oasis_gym.actions import ActionType as A
from oasis_gym.actions import Result as R
from oasis_gym.platform import REMOVED, ActionBatch, Journal, JournalError, Platform, PlatformConfig
from oasis_gym.platform.journal_schema import RELATION_TABLES
from oasis_gym.platform.platform import JOURNALED_RELATIONS, action_name, action_names


def fresh(tmp_path, n=5, edges=(), posts=((0, "root post"),), pipelined=True, **config):
    pf = Platform(PlatformConfig(**config))
    pf.add_users(make_population(n, edges, posts))
    journal = Journal(tmp_path / "run.db", pipelined=pipelined)
    journal.commit_step(pf)
    return pf, journal


def run(pf, journal, *rows):
    res, new = pf.apply(ActionBatch.of(list(rows)))
    journal.commit_step(pf, advance_minutes=3)
    return [R(r) for r in res], new


def db(journal):
    """A second connection to the journal, once its writer thread has committed every step."""
    journal.flush()
    return sqlite3.connect(journal.path)


def restored(journal):
    journal.flush()
    return Platform.from_db(journal.path)


# --------------------------------------------------------------------------- effects
def test_create_post_repost_quote_comment(tmp_path):
    pf, j = fresh(tmp_path)
    res, new = run(
        pf,
        j,
        (1, A.CREATE_POST, None, "hello"),
        (2, A.REPOST, 0),
        (3, A.QUOTE_POST, 0, "my take"),
        (4, A.CREATE_COMMENT, 0, "nice"),
    )
    assert res == [R.OK] * 4
    post, repost, quote = new[:3]
    assert pf.p_content[post] == "hello" and pf.p_author.a[post] == 1
    assert pf.p_root.a[repost] == 0 and pf.p_kind.a[repost] == 1 and pf.p_content[repost] == "root post"
    assert pf.p_root.a[quote] == 0 and pf.p_quote[quote] == "my take" and pf.p_content[quote] == "root post"
    assert pf.p_shares.a[0] == 2 and pf.p_comments.a[0] == 1
    assert pf.c_content[new[3]] == "nice" and pf.c_post.a[new[3]] == 0
    row = (
        db(j)
        .execute("SELECT original_post_id, quote_content, num_shares FROM post WHERE post_id=?", (int(quote),))
        .fetchone()
    )
    assert row == (0, "my take", 0)
    assert db(j).execute("SELECT num_shares, num_comments FROM post WHERE post_id=0").fetchone() == (2, 1)


def test_actions_on_a_repost_resolve_to_the_root(tmp_path):
    pf, j = fresh(tmp_path)
    (_,), (repost,) = run(pf, j, (1, A.REPOST, 0))
    res, new = run(
        pf,
        j,
        (2, A.LIKE_POST, repost),
        (3, A.REPOST, repost),
        (2, A.CREATE_COMMENT, repost, "c"),
        (4, A.DISLIKE_POST, repost),
        (4, A.REPORT_POST, repost, "spam"),
    )
    assert res == [R.OK] * 5
    assert pf.p_likes.a[0] == 1 and pf.p_likes.a[repost] == 0
    assert pf.p_root.a[new[1]] == 0 and pf.p_shares.a[0] == 2
    assert pf.c_post.a[new[2]] == 0 and pf.p_dislikes.a[0] == 1 and pf.p_reports.a[0] == 1
    assert db(j).execute('SELECT post_id FROM "like"').fetchall() == [(0,)]


def test_quote_is_rated_as_its_own_post(tmp_path):
    pf, j = fresh(tmp_path)
    _, (quote,) = run(pf, j, (1, A.QUOTE_POST, 0, "q"))
    assert run(pf, j, (2, A.LIKE_POST, quote))[0] == [R.OK]
    assert pf.p_likes.a[quote] == 1 and pf.p_likes.a[0] == 0


@pytest.mark.parametrize(
    "do,undo,counter", [(A.LIKE_POST, A.UNLIKE_POST, "p_likes"), (A.DISLIKE_POST, A.UNDO_DISLIKE_POST, "p_dislikes")]
)
def test_rate_post_and_undo(tmp_path, do, undo, counter):
    pf, j = fresh(tmp_path)
    assert run(pf, j, (1, do, 0), (2, do, 0))[0] == [R.OK, R.OK]
    assert getattr(pf, counter).a[0] == 2
    assert run(pf, j, (1, do, 0))[0] == [R.ALREADY_DONE]
    assert run(pf, j, (1, undo, 0), (3, undo, 0))[0] == [R.OK, R.NOT_DONE]
    assert getattr(pf, counter).a[0] == 1
    table = RELATION_TABLES["like" if do == A.LIKE_POST else "dislike"][0]
    assert db(j).execute(f"SELECT user_id FROM {table}").fetchall() == [(2,)]


@pytest.mark.parametrize(
    "do,undo,counter",
    [(A.LIKE_COMMENT, A.UNLIKE_COMMENT, "c_likes"), (A.DISLIKE_COMMENT, A.UNDO_DISLIKE_COMMENT, "c_dislikes")],
)
def test_rate_comment_and_undo(tmp_path, do, undo, counter):
    pf, j = fresh(tmp_path)
    _, (c,) = run(pf, j, (1, A.CREATE_COMMENT, 0, "c"))
    assert run(pf, j, (2, do, c), (2, do, c))[0] == [R.OK, R.ALREADY_DONE]
    assert getattr(pf, counter).a[c] == 1
    assert run(pf, j, (2, undo, c), (2, undo, c))[0] == [R.OK, R.NOT_DONE]
    assert getattr(pf, counter).a[c] == 0
    assert run(pf, j, (2, do, 99))[0] == [R.UNKNOWN_COMMENT]


def test_follow_unfollow_counters(tmp_path):
    pf, j = fresh(tmp_path, edges=[(1, 0)])
    assert pf.u_followers.a[0] == 1 and pf.u_followings.a[1] == 1
    res, _ = run(pf, j, (2, A.FOLLOW, 0), (1, A.FOLLOW, 0), (3, A.FOLLOW, 3), (3, A.FOLLOW, 77), (3, A.FOLLOW, -1))
    assert res == [R.OK, R.ALREADY_DONE, R.SELF_TARGET, R.UNKNOWN_TARGET_USER, R.UNKNOWN_TARGET_USER]
    assert pf.u_followers.a[0] == 2
    assert run(pf, j, (1, A.UNFOLLOW, 0), (1, A.UNFOLLOW, 0), (4, A.UNFOLLOW, 0))[0] == [R.OK, R.NOT_DONE, R.NOT_DONE]
    assert pf.u_followers.a[0] == 1 and pf.u_followings.a[1] == 0
    assert db(j).execute("SELECT num_followers FROM user WHERE user_id=0").fetchone() == (1,)


def test_mute_hides_posts_and_comments(tmp_path):
    pf, j = fresh(tmp_path, posts=((0, "alpha news"), (1, "alpha rumour")))
    run(pf, j, (2, A.CREATE_COMMENT, 0, "alpha comment by 2"))
    assert run(pf, j, (3, A.MUTE, 1), (3, A.MUTE, 1), (3, A.MUTE, 3), (3, A.MUTE, 50))[0] == [
        R.OK,
        R.ALREADY_DONE,
        R.SELF_TARGET,
        R.UNKNOWN_TARGET_USER,
    ]
    assert pf.visible_posts_mask(3, np.array([0, 1])).tolist() == [True, False]
    assert 1 not in pf.search_posts(3, "alpha").tolist() and 1 in pf.search_posts(4, "alpha").tolist()
    assert 1 not in pf.search_users(3, "u1").tolist()
    assert pf.muted_mask(3, 1) and not pf.muted_mask(4, 1)
    assert run(pf, j, (3, A.UNMUTE, 1), (3, A.UNMUTE, 1))[0] == [R.OK, R.NOT_DONE]
    assert pf.visible_posts_mask(3, np.array([1])).tolist() == [True]


def test_report_once_per_user_with_reason(tmp_path):
    pf, j = fresh(tmp_path)
    assert run(pf, j, (1, A.REPORT_POST, 0, "misleading"), (1, A.REPORT_POST, 0, "again"))[0] == [R.OK, R.ALREADY_DONE]
    assert pf.p_reports.a[0] == 1
    assert db(j).execute("SELECT user_id, post_id, report_reason FROM report").fetchall() == [(1, 0, "misleading")]


def test_repost_twice_rejected(tmp_path):
    pf, j = fresh(tmp_path)
    assert run(pf, j, (1, A.REPOST, 0), (1, A.REPOST, 0))[0] == [R.OK, R.ALREADY_DONE]
    assert run(pf, j, (1, A.REPOST, 0))[0] == [R.ALREADY_DONE]
    assert pf.p_shares.a[0] == 1


def test_self_rating_option(tmp_path):
    pf, j = fresh(tmp_path, allow_self_rating=False)
    assert run(pf, j, (0, A.LIKE_POST, 0), (1, A.LIKE_POST, 0))[0] == [R.SELF_TARGET, R.OK]
    (tmp_path / "b").mkdir()
    pf, j = fresh(tmp_path / "b", allow_self_rating=True)
    assert run(pf, j, (0, A.LIKE_POST, 0))[0] == [R.OK]


def test_rejections(tmp_path):
    pf, j = fresh(tmp_path, available_actions=tuple(int(a) for a in A if a != A.MUTE), max_text_length=10)
    res, _ = run(
        pf,
        j,
        (99, A.LIKE_POST, 0),
        (1, 77, 0),
        (1, A.LIKE_POST, 5),
        (1, A.MUTE, 2),
        (1, A.CREATE_POST, None, ""),
        (1, A.CREATE_POST, None, "x" * 11),
        (1, A.CREATE_POST, None, "a\x00b"),
        (1, A.CREATE_POST, None, "bad \ud800"),
        (1, A.SIGN_UP, None),
        (1, A.CREATE_POST, None, None),
    )
    assert res == [
        R.UNKNOWN_USER,
        R.INVALID_ACTION,
        R.UNKNOWN_POST,
        R.ACTION_UNAVAILABLE,
        R.TEXT_EMPTY,
        R.TEXT_TOO_LONG,
        R.TEXT_INVALID,
        R.TEXT_INVALID,
        R.ALREADY_SIGNED_UP,
        R.TEXT_EMPTY,
    ]
    traced = db(j).execute("SELECT result FROM trace WHERE step=0").fetchall()
    assert [r for (r,) in traced] == [r.name.lower() for r in res]
    assert pf.n_posts == 1  # nothing was created


def test_removed_posts_and_suspended_users(tmp_path):
    pf, j = fresh(tmp_path, posts=((0, "a"), (1, "b")))
    pf.moderate(np.array([1]), REMOVED)
    pf.suspend(np.array([4]))
    j.commit_step(pf)
    assert run(pf, j, (2, A.LIKE_POST, 1), (4, A.LIKE_POST, 0), (2, A.LIKE_POST, 0))[0] == [
        R.POST_REMOVED,
        R.USER_SUSPENDED,
        R.OK,
    ]
    assert not pf.visible_posts_mask(2, np.array([1]))[0]
    assert db(j).execute("SELECT status FROM post WHERE post_id=1").fetchone() == (REMOVED,)
    assert db(j).execute("SELECT target, target_id, action FROM moderation").fetchall() == [
        ("post", 1, "remove"),
        ("user", 4, "suspend"),
    ]


def test_sign_up_of_a_new_user(tmp_path):
    pf = Platform()
    pf.add_users(make_population(3), signed_up=False)
    j = Journal(tmp_path / "run.db")
    j.commit_step(pf)
    assert run(pf, j, (0, A.LIKE_POST, 0), (0, A.SIGN_UP, None), (0, A.SIGN_UP, None))[0] == [
        R.UNKNOWN_USER,
        R.OK,
        R.ALREADY_SIGNED_UP,
    ]
    assert pf.u_signed_up.a.tolist() == [True, False, False]
    assert db(j).execute("SELECT signed_up FROM user ORDER BY user_id").fetchall() == [(1,), (0,), (0,)]


def test_step_order_is_documented_phases(tmp_path):
    """Adds run before removals: like + unlike by the same user in one step -> both ok, net 0.
    A post created in this step cannot be targeted in the same step."""
    pf, j = fresh(tmp_path)
    res, _ = run(
        pf, j, (1, A.UNLIKE_POST, 0), (1, A.LIKE_POST, 0), (2, A.CREATE_POST, None, "new"), (3, A.LIKE_POST, 1)
    )
    assert res == [R.OK, R.OK, R.OK, R.UNKNOWN_POST]
    assert pf.p_likes.a[0] == 0


def test_search_and_trend_are_ranked_and_limited(tmp_path):
    posts = [(i % 5, f"topic climate post {i}") for i in range(30)] + [(0, "'; DROP TABLE post; --")]
    pf, j = fresh(tmp_path, n=6, posts=posts, search_limit=4)
    run(pf, j, *[(u, A.LIKE_POST, 7) for u in range(1, 6)], *[(u, A.LIKE_POST, 3) for u in range(1, 4)])
    hits = pf.search_posts(5, "CLIMATE post")
    assert len(hits) == 4 and hits[0] == 7 and hits[1] == 3
    assert pf.search_posts(5, "'; DROP TABLE post; --").tolist() == [30]
    assert pf.search_posts(5, "% _ nothing").tolist() == []
    assert pf.trending(5).tolist()[:2] == [7, 3]
    assert db(j).execute("SELECT COUNT(*) FROM post").fetchone()[0] == 31


def test_most_followed_ranks_by_followers_then_lower_id():
    edges = [(0, 3), (1, 3), (2, 3), (0, 5), (1, 5), (2, 1), (4, 1)]  # followers: 3 -> 3, 1 and 5 -> 2
    pf = Platform()
    pf.add_users(make_population(6, edges))
    followers = pf.u_followers.a
    reference = sorted(range(6), key=lambda u: (-followers[u], u))
    assert pf.most_followed().tolist() == reference == [3, 1, 5, 0, 2, 4]
    assert pf.most_followed(2).tolist() == [3, 1]
    assert pf.most_followed(10).tolist() == reference  # k beyond the users: all of them
    assert pf.most_followed(0).tolist() == pf.most_followed(-1).tolist() == []
    assert pf.most_followed(among=[5, 4, 1]).tolist() == [1, 5, 4]
    assert pf.most_followed(1, among=np.array([0, 5])).tolist() == [5]
    assert pf.most_followed(3, among=[]).tolist() == []
    assert pf.most_followed().dtype == pf.most_followed(among=[]).dtype == np.int64
    assert Platform().most_followed().tolist() == Platform().most_followed(3).tolist() == []
    for bad in ([6], [-1]):
        with pytest.raises(ValueError, match="user ids"):
            pf.most_followed(among=bad)


@pytest.mark.parametrize(
    "text",
    [
        'it\'s "quoted"',
        "'; DROP TABLE post; --",
        "emoji 🎉🔥👩🏽‍💻",
        "RTL \u202e\u200fمرحبا\u202c",
        "x" * 100_000,
        "tabs\tand\nnewlines\r\n",
        "\u0007bell and \x1b[31mescape",
        "Ω≈ç√∫ 中文 日本語 한국어",
    ],
)
def test_hostile_text_round_trips_byte_exact(tmp_path, text):
    pf, j = fresh(tmp_path, max_text_length=200_000)
    res, new = run(
        pf, j, (1, A.CREATE_POST, None, text), (2, A.CREATE_COMMENT, 0, text), (3, A.SEARCH_POSTS, None, text)
    )
    assert res == [R.OK, R.OK, R.OK]
    conn = db(j)
    assert conn.execute("SELECT content FROM post WHERE post_id=?", (int(new[0]),)).fetchone()[0] == text
    assert conn.execute("SELECT content FROM comment WHERE comment_id=?", (int(new[1]),)).fetchone()[0] == text
    assert conn.execute("SELECT COUNT(*) FROM post").fetchone()[0] == 2  # tables intact
    back = restored(j)
    assert back.p_content[int(new[0])] == text and back.c_content[int(new[1])] == text


# --------------------------------------------------------------------------- journal = state
RANDOM_MIX = [
    A.CREATE_POST,
    A.REPOST,
    A.QUOTE_POST,
    A.CREATE_COMMENT,
    A.FOLLOW,
    A.UNFOLLOW,
    A.MUTE,
    A.UNMUTE,
    A.LIKE_POST,
    A.UNLIKE_POST,
    A.DISLIKE_POST,
    A.UNDO_DISLIKE_POST,
    A.LIKE_COMMENT,
    A.UNLIKE_COMMENT,
    A.DISLIKE_COMMENT,
    A.UNDO_DISLIKE_COMMENT,
    A.REPORT_POST,
    A.DO_NOTHING,
    A.REFRESH,
    A.SEARCH_POSTS,
]


def random_run(tmp_path, steps=30, n=40, per_step=120, seed=0, pipelined=True, max_values=None):
    rng = np.random.default_rng(seed)
    pf, j = fresh(
        tmp_path,
        pipelined=pipelined,
        n=n,
        edges=[(i, (i + 1) % n) for i in range(n)],
        posts=[(i, f"seed {i}") for i in range(5)],
    )
    if max_values is not None:  # bound values per statement, e.g. 999 as in SQLite before 3.32
        j.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, max_values)
    for _ in range(steps):
        act = rng.choice(np.array(RANDOM_MIX, dtype=np.int64), per_step)
        user = rng.integers(0, n, per_step)
        target = np.where(
            np.isin(act, [A.FOLLOW, A.UNFOLLOW, A.MUTE, A.UNMUTE]),
            rng.integers(0, n + 2, per_step),
            np.where(
                np.isin(act, [A.LIKE_COMMENT, A.UNLIKE_COMMENT, A.DISLIKE_COMMENT, A.UNDO_DISLIKE_COMMENT]),
                rng.integers(0, max(pf.n_comments, 1) + 1, per_step),
                rng.integers(0, pf.n_posts + 1, per_step),
            ),
        )
        text = [
            f"text {k} 'quote' ;" if a in (A.CREATE_POST, A.QUOTE_POST, A.CREATE_COMMENT, A.SEARCH_POSTS) else None
            for k, a in enumerate(act)
        ]
        pf.apply(ActionBatch(user, act, target, text))
        j.commit_step(pf, advance_minutes=3)
    return pf, j


@pytest.mark.parametrize("pipelined", [True, False])
def test_journal_counters_match_relation_tables(tmp_path, pipelined):
    pf, j = random_run(tmp_path, pipelined=pipelined)
    conn = db(j)
    recount = lambda sql: dict(conn.execute(sql).fetchall())  # noqa: E731
    likes = recount('SELECT post_id, COUNT(*) FROM "like" GROUP BY post_id')
    dislikes = recount("SELECT post_id, COUNT(*) FROM dislike GROUP BY post_id")
    reports = recount("SELECT post_id, COUNT(*) FROM report GROUP BY post_id")
    shares = recount(
        "SELECT original_post_id, COUNT(*) FROM post WHERE original_post_id IS NOT NULL GROUP BY original_post_id"
    )
    comments = recount("SELECT post_id, COUNT(*) FROM comment GROUP BY post_id")
    for pid, nl, nd, ns, nr, nc in conn.execute(
        "SELECT post_id, num_likes, num_dislikes, num_shares, num_reports, num_comments FROM post"
    ):
        assert (nl, nd, ns, nr, nc) == (
            likes.get(pid, 0),
            dislikes.get(pid, 0),
            shares.get(pid, 0),
            reports.get(pid, 0),
            comments.get(pid, 0),
        ), pid
        assert (nl, nd, ns, nr, nc) == (
            pf.p_likes.a[pid],
            pf.p_dislikes.a[pid],
            pf.p_shares.a[pid],
            pf.p_reports.a[pid],
            pf.p_comments.a[pid],
        )
    followers = recount("SELECT followee_id, COUNT(*) FROM follow GROUP BY followee_id")
    followings = recount("SELECT follower_id, COUNT(*) FROM follow GROUP BY follower_id")
    for uid, nfr, nfg in conn.execute("SELECT user_id, num_followers, num_followings FROM user"):
        assert (
            (nfr, nfg)
            == (followers.get(uid, 0), followings.get(uid, 0))
            == (pf.u_followers.a[uid], pf.u_followings.a[uid])
        )
    clikes = recount("SELECT comment_id, COUNT(*) FROM comment_like GROUP BY comment_id")
    for cid, nl in conn.execute("SELECT comment_id, num_likes FROM comment"):
        assert nl == clikes.get(cid, 0) == pf.c_likes.a[cid]
    for table, _, col_a, col_b in RELATION_TABLES.values():  # no pair journaled twice
        assert conn.execute(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} GROUP BY {col_a}, {col_b} HAVING COUNT(*) > 1)"
        ).fetchone() == (0,), table
    # every action is traced, rejected ones with their reason
    assert conn.execute("SELECT COUNT(*) FROM trace").fetchone()[0] == 30 * 120
    assert conn.execute("SELECT COUNT(*) FROM trace WHERE result != 'ok'").fetchone()[0] > 0
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# OASIS's columns (camel-ai/oasis social_platform/schema); ours may add more
OASIS_COLUMNS = {
    "user": ["user_id", "agent_id", "user_name", "name", "bio", "created_at", "num_followings", "num_followers"],
    "post": [
        "post_id",
        "user_id",
        "original_post_id",
        "content",
        "image_path",
        "quote_content",
        "created_at",
        "num_likes",
        "num_dislikes",
        "num_shares",
        "num_reports",
    ],
    "comment": ["comment_id", "post_id", "user_id", "content", "created_at", "num_likes", "num_dislikes"],
    "follow": ["follow_id", "follower_id", "followee_id", "created_at"],
    "mute": ["mute_id", "muter_id", "mutee_id", "created_at"],
    "like": ["like_id", "user_id", "post_id", "created_at"],
    "dislike": ["dislike_id", "user_id", "post_id", "created_at"],
    "comment_like": ["comment_like_id", "user_id", "comment_id", "created_at"],
    "comment_dislike": ["comment_dislike_id", "user_id", "comment_id", "created_at"],
    "report": ["report_id", "user_id", "post_id", "report_reason", "created_at"],
    "trace": ["user_id", "created_at", "action", "info"],
    "rec": ["user_id", "post_id"],
}


def test_oasis_sql_runs_on_the_journal(tmp_path):
    """OASIS's tables and columns, in OASIS's order (`user` is a view), and the kind of query
    OASIS analyses run: joins of posts with their authors, follower rankings, trace counts."""
    pf, j = random_run(tmp_path)
    conn = db(j)
    for table, columns in OASIS_COLUMNS.items():
        have = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]
        assert have[: len(columns)] == columns, table
    top = conn.execute(
        "SELECT user_id, num_followers FROM user ORDER BY num_followers DESC, user_id LIMIT 5"
    ).fetchall()
    order = np.lexsort((np.arange(pf.n_users), -pf.u_followers.a))[:5]
    assert top == list(zip(order.tolist(), pf.u_followers.a[order].tolist()))
    rows = conn.execute(
        "SELECT p.post_id, u.user_name, p.num_likes FROM post p JOIN user u ON u.user_id = p.user_id ORDER BY p.post_id"
    ).fetchall()
    assert rows == [(p, pf.u_user_name[int(pf.p_author.a[p])], int(pf.p_likes.a[p])) for p in range(pf.n_posts)]
    likes = conn.execute("SELECT COUNT(*) FROM trace WHERE action = 'like_post' AND result = 'ok'").fetchone()[0]
    assert (
        likes
        == len(pf.rel["like"])
        + conn.execute("SELECT COUNT(*) FROM trace WHERE action = 'unlike_post' AND result = 'ok'").fetchone()[0]
    )


@pytest.mark.parametrize("pipelined, max_values", [(True, None), (False, None), (True, 999)])
def test_from_db_restores_the_exact_state(tmp_path, pipelined, max_values):
    pf, j = random_run(tmp_path, pipelined=pipelined, max_values=max_values, per_step=300 if max_values else 120)
    back = restored(j)
    assert (back.step, back.minute) == (pf.step, pf.minute)
    for name, value in vars(pf).items():
        if hasattr(value, "a"):
            np.testing.assert_array_equal(getattr(back, name).a, value.a, err_msg=name)
    for name in ("p_content", "p_quote", "c_content"):
        assert list(getattr(back, name)) == list(getattr(pf, name)), name
    assert list(back.u_user_name) == list(pf.u_user_name)
    for name, rel in pf.rel.items():
        np.testing.assert_array_equal(back.rel[name].keys(), rel.keys(), err_msg=name)
    for name in JOURNALED_RELATIONS:  # the row ids (follow_id, like_id, ...)
        np.testing.assert_array_equal(back.rel[name].values(), pf.rel[name].values(), err_msg=name)
    assert back.next_row_id == pf.next_row_id
    # and it keeps running identically
    rows = [(1, A.LIKE_POST, 2), (2, A.CREATE_POST, None, "after"), (3, A.FOLLOW, 9), (4, A.REPOST, 3)]
    r1, n1 = pf.apply(ActionBatch.of(rows))
    r2, n2 = back.apply(ActionBatch.of(rows))
    np.testing.assert_array_equal(r1, r2)
    np.testing.assert_array_equal(n1, n2)


# --------------------------------------------------------------------------- property-based
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(
            st.integers(-3, 8),
            st.integers(-2, 25),
            st.integers(-3, 12),
            st.one_of(st.none(), st.text(max_size=60), st.binary(max_size=8).map(lambda b: b.decode("latin-1"))),
        ),
        max_size=40,
    )
)
def test_any_batch_keeps_state_consistent(tmp_path_factory, rows):
    tmp = tmp_path_factory.mktemp("prop")
    pf, j = fresh(tmp, n=6, edges=[(1, 0)], posts=((0, "a"), (1, "b"), (2, "c")))
    res, _ = pf.apply(ActionBatch.of(rows))
    j.commit_step(pf, advance_minutes=3)
    assert len(res) == len(rows)
    conn = db(j)
    assert conn.execute("SELECT COUNT(*) FROM trace WHERE step=0 AND action != ''").fetchone()[0] == len(rows)
    likes = dict(conn.execute('SELECT post_id, COUNT(*) FROM "like" GROUP BY post_id').fetchall())
    assert [likes.get(p, 0) for p in range(pf.n_posts)] == pf.p_likes.a.tolist()
    back = restored(j)
    np.testing.assert_array_equal(back.u_followers.a, pf.u_followers.a)
    assert list(back.p_content) == list(pf.p_content)


@pytest.mark.parametrize("with_values", [False, True])
@pytest.mark.parametrize("compact_every", [0, 3])
def test_pair_set_matches_a_python_dict(compact_every, with_values):
    from oasis_gym.platform.store import PairSet, pair_keys

    rng = np.random.default_rng(compact_every)
    ref: dict[int, int] = {}
    ps = PairSet(values=[]) if with_values else PairSet()
    next_value = 0
    for it in range(150):
        keys = np.unique(pair_keys(rng.integers(0, 40, 25), rng.integers(0, 40, 25)))
        if it % 3 == 0:
            present = keys[ps.contains_keys(keys)]
            if with_values:
                assert ps.values_of(present).tolist() == [ref[k] for k in present.tolist()]
            ps.remove_keys(rng.permutation(present))
            for k in present.tolist():
                del ref[k]
        else:
            new = rng.permutation(keys[~ps.contains_keys(keys)])
            values = np.arange(next_value, next_value + len(new))
            next_value += len(new)
            ps.add_keys(new, values if with_values else None)
            ref.update(zip(new.tolist(), values.tolist()))
        if compact_every and it % compact_every == 0:
            ps.compact()
        q = rng.integers(0, 40, 6)
        owner, second = ps.partners(q)
        assert sorted(zip(q[owner].tolist(), second.tolist())) == sorted(
            (int(u), k & 0xFFFFFFFF) for u in q.tolist() for k in ref if k >> 32 == u
        )
        probe = pair_keys(rng.integers(0, 40, 50), rng.integers(0, 40, 50))
        assert ps.contains_keys(probe).tolist() == [k in ref for k in probe.tolist()]
        assert len(ps) == len(ref)
    assert ps.keys().tolist() == sorted(ref)
    if with_values:
        assert ps.values().tolist() == [ref[k] for k in sorted(ref)]


def test_a_failed_commit_keeps_memory_and_journal_in_agreement(tmp_path):
    pf, j = fresh(tmp_path)
    pf.apply(ActionBatch.of([(1, A.LIKE_POST, 0)]))
    step, minute = pf.step, pf.minute

    def failing_hook(conn):
        raise RuntimeError("hook failed")

    with pytest.raises(RuntimeError):
        j.commit_step(pf, advance_minutes=3, extra=failing_hook)
    assert (pf.step, pf.minute) == (step, minute)  # the clock did not move
    j.commit_step(pf, advance_minutes=3)  # the pending like is written now
    back = restored(j)
    assert back.p_likes.a[0] == 1 and len(back.rel["like"]) == 1 and back.step == step + 1
    with pytest.raises(TypeError):  # meta that is not JSON fails before BEGIN
        j.commit_step(pf, advance_minutes=3, meta={"x": object()})
    assert restored(j).step == step + 1


@pytest.mark.parametrize("pipelined", [True, False])
def test_a_full_disk_loses_nothing_that_was_committed(tmp_path, pipelined):
    """SQLite's real disk-full path (max_page_count caps the file). Committing in place, the
    failing step raises JournalError (one line), stays pending and goes in once there is
    room. Pipelined, the writer thread's failure raises JournalError on the next use of the
    journal, and on every use after; the file holds exactly the steps before it, so a run resumes from there."""
    pf, j = fresh(tmp_path, pipelined=pipelined, max_text_length=200_000)
    run(pf, j, (1, A.LIKE_POST, 0))
    pages = j.conn.execute("PRAGMA page_count").fetchone()[0]
    j.conn.execute(f"PRAGMA max_page_count={pages + 2}")
    posts = [(u, A.CREATE_POST, None, "x" * 100_000) for u in range(5)]
    if not pipelined:
        with pytest.raises(JournalError, match="a step failed to commit.*full") as err:
            run(pf, j, *posts)
        assert isinstance(err.value.__cause__, sqlite3.OperationalError)
        assert pf.step == 1 and pf.pending.new_posts  # still pending, clock kept
        j.conn.execute("PRAGMA max_page_count=1073741823")
        j.commit_step(pf, advance_minutes=3)
        back = restored(j)
        assert back.step == 2 and back.n_posts == 6 and back.p_content[5] == "x" * 100_000
        return
    run(pf, j, *posts)  # handed to the writer thread, which fails
    with pytest.raises(JournalError, match="full"):
        j.flush()
    with pytest.raises(JournalError):
        j.commit_step(pf, advance_minutes=3)
    with pytest.raises(JournalError):
        j.close()
    back = Platform.from_db(j.path)
    assert (back.step, back.n_posts, back.p_likes.a[0]) == (1, 1, 1)  # the step before the failure
    assert (pf.step, pf.n_posts) == (2, 6)  # memory went on


@pytest.mark.parametrize("pipelined", [True, False])
def test_platform_changes_made_by_a_step_hook_join_the_step(tmp_path, pipelined):
    """A hook (a scenario's post stream, say) runs first in the step's transaction, seeing the
    journal as of the step before; the posts it creates are journaled with the step."""
    pf, j = fresh(tmp_path, pipelined=pipelined)
    pf.apply(ActionBatch.of([(1, A.LIKE_POST, 0)]))
    seen = []

    def hook(conn):
        seen.append(conn.execute('SELECT COUNT(*) FROM "like"').fetchone()[0])
        pf.create_posts(np.array([2]), ["posted by a hook"])

    j.commit_step(pf, advance_minutes=3, extra=hook)
    run(pf, j, (3, A.LIKE_POST, 1))
    assert seen == [0]
    assert db(j).execute("SELECT user_id, content, num_likes FROM post WHERE post_id = 1").fetchone() == (
        2,
        "posted by a hook",
        1,
    )
    assert restored(j).n_posts == pf.n_posts == 2


def test_a_resumed_journal_drops_its_indexes_until_close(tmp_path):
    """A closed journal has its indexes; continued, it appends without them (the speed of the
    run, and two steps written in one commit may unfollow and follow the same pair again)
    and close builds them again."""
    pf, j = fresh(tmp_path, edges=[(1, 2)])
    j.close()
    j = Journal(j.path)
    pf = restored(j)
    assert db(j).execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name LIKE 'idx_%'"
    ).fetchone() == (0,)
    pf.apply(ActionBatch.of([(1, A.UNFOLLOW, 2)]))
    pf.apply(ActionBatch.of([(1, A.FOLLOW, 2)]))  # two applies, one commit
    j.commit_step(pf, advance_minutes=3)
    assert db(j).execute("SELECT follow_id FROM follow WHERE follower_id = 1 AND followee_id = 2").fetchall() == [(1,)]
    j.close()
    assert "idx_follow_pair" in {n for (n,) in db(j).execute("SELECT name FROM sqlite_master WHERE type = 'index'")}


def test_a_journal_of_the_older_schema_is_refused_with_a_clear_error(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE user (user_id INTEGER PRIMARY KEY, agent_id INTEGER, user_name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(JournalError, match="older oasis-gym"):
        Journal(path)


def test_repost_of_a_quote_keeps_the_quote_text(tmp_path):
    pf, j = fresh(tmp_path)
    _, (quote,) = run(pf, j, (1, A.QUOTE_POST, 0, "my comment"))
    _, (repost,) = run(pf, j, (2, A.REPOST, quote))
    assert pf.p_root.a[repost] == quote and pf.p_quote[repost] == "my comment"
    assert db(j).execute("SELECT quote_content FROM post WHERE post_id=?", (int(repost),)).fetchone() == ("my comment",)


def test_apply_on_an_empty_platform_rejects_cleanly():
    res, _ = Platform().apply(ActionBatch.of([(0, A.CREATE_POST, -1, "hi")]))
    assert res.tolist() == [R.UNKNOWN_USER]


def test_sign_up_in_the_step_users_are_added(tmp_path):
    pf = Platform()
    pf.add_users(make_population(3), signed_up=False)
    pf.apply(ActionBatch.of([(1, A.SIGN_UP, None)]))
    j = Journal(tmp_path / "s.db")
    j.commit_step(pf)
    assert db(j).execute("SELECT user_id, signed_up FROM user").fetchall() == [(0, 0), (1, 1), (2, 0)]


def test_one_megabyte_text_is_rejected_by_default_and_stored_when_allowed(tmp_path):
    big = "ü" * (1 << 20)
    pf, j = fresh(tmp_path)
    assert run(pf, j, (1, A.CREATE_POST, None, big), (2, A.CREATE_COMMENT, 0, big))[0] == [R.TEXT_TOO_LONG] * 2
    infos = [i for (i,) in db(j).execute("SELECT info FROM trace WHERE result='text_too_long'")]
    assert len(infos) == 2 and all(len(i) < 1000 and "(1048576 characters)" in i for i in infos)
    (tmp_path / "big").mkdir()
    pf, j = fresh(tmp_path / "big", max_text_length=2 << 20)
    _, (post,) = run(pf, j, (1, A.CREATE_POST, None, big))
    assert db(j).execute("SELECT content FROM post WHERE post_id=?", (int(post),)).fetchone()[0] == big


# --------------------------------------------------------------------------- trace rows
def reference_info(action: int, target: int, new_id: int, text, result: int) -> dict:
    """The info JSON a trace row must hold, spelled out per row (the journal renders it in
    groups): target, created id, text, error, in that order."""
    info = {}
    if 0 <= action < len(A):
        a = A(action)
        key = (
            "post_id"
            if a in POST_TARGET
            else "comment_id"
            if a in COMMENT_TARGET
            else "user_id"
            if a in USER_TARGET
            else None
        )
        if key:
            info[key] = target
        if new_id >= 0:
            info["comment_id" if a == A.CREATE_COMMENT else "post_id" if a == A.CREATE_POST else "new_post_id"] = new_id
        text_key = (
            "query"
            if a in (A.SEARCH_POSTS, A.SEARCH_USER)
            else "reason"
            if a == A.REPORT_POST
            else "content"
            if a in TEXT_ACTIONS
            else None
        )
        if text_key and text is not None:

            def storable(s):  # as UTF-8 TEXT, byte-exact: no NUL, no unpaired surrogate
                return isinstance(s, str) and "\x00" not in s and s.encode("utf-8", "ignore").decode() == s

            if result == R.TEXT_TOO_LONG:
                text = f"{text[:200] if storable(text[:200]) else repr(text[:200])}... ({len(text)} characters)"
            elif not storable(text):
                text = repr(text)[:200]
            info[text_key] = text
    if result:
        info["error"] = R(result).name.lower()
    return info


def test_every_trace_row_holds_its_action_target_created_id_text_and_error(tmp_path):
    rng = np.random.default_rng(3)
    pf, j = fresh(
        tmp_path, n=30, edges=[(i, (i + 1) % 30) for i in range(30)], posts=[(i, f"seed {i}") for i in range(5)]
    )
    texts_pool = [
        "plain",
        "quote ' \" ; DROP TABLE trace; --",
        "é 🙂 \u202e rtl",
        "x" * 300,
        "nul\x00byte",
        "lone \ud800",
        "",
        None,
        7,
    ]
    rows = []
    for _ in range(6):
        n = 150
        act = rng.choice(np.array(RANDOM_MIX + [A.SEARCH_USER, 99, -4], dtype=np.int64), n)
        user = rng.integers(-1, 32, n)
        target = rng.integers(-1, max(pf.n_posts, pf.n_comments, 30) + 2, n)
        text = [texts_pool[k] for k in rng.integers(0, len(texts_pool), n)]
        n_posts = pf.n_posts  # targets are checked against the posts that existed before the step
        res, new = pf.apply(ActionBatch(user, act, target, text, None))
        resolved = target.copy()  # reposts resolve to their root, unless rejected before targets are read
        early = np.isin(res, [R.INVALID_ACTION, R.UNKNOWN_USER, R.USER_SUSPENDED, R.ACTION_UNAVAILABLE])
        on_post = np.isin(act, list(POST_TARGET)) & (target >= 0) & (target < n_posts) & ~early
        kind = pf.p_kind.a[target[on_post]]  # (and a quote of a quote to the quote's root, like OASIS)
        to_root = (kind == 1) | ((kind == 2) & (act[on_post] == A.QUOTE_POST))
        resolved[on_post] = np.where(to_root, pf.p_root.a[target[on_post]], target[on_post])
        rows += list(zip(user.tolist(), act.tolist(), resolved.tolist(), new.tolist(), text, res.tolist()))
        j.commit_step(pf, advance_minutes=3)
    got = db(j).execute("SELECT user_id, action, info, result FROM trace WHERE step >= 0 ORDER BY rowid").fetchall()
    assert len(got) == len(rows) and len({r[5] for r in rows}) > 5  # many kinds of rejection
    for (user, action, info, result), (u, a, t, n, x, r) in zip(got, rows):
        expected = reference_info(a, t, n, x, r)
        assert (user, action, result) == (u, ACTION_NAMES[a] if 0 <= a < len(A) else "invalid", R(r).name.lower())
        assert list(json.loads(info).items()) == list(expected.items())


def test_indexes_are_built_at_close(tmp_path):
    """The run writes no index (rows append; deletes go by row id); close builds them all,
    and the unique pair indexes double as a check that no pair was journaled twice."""
    pf, j = random_run(tmp_path, steps=3)

    def indexes():
        return {
            name for (name,) in db(j).execute("SELECT name FROM sqlite_master WHERE type='index' AND name LIKE 'idx_%'")
        }

    assert indexes() == set()
    j.close()
    assert {"idx_follow_pair", "idx_like_pair", "idx_post_user", "idx_trace_step", "idx_opinion_user"} <= indexes()
    for query, index in (
        ("SELECT * FROM trace WHERE step = 2", "idx_trace_step"),
        ("SELECT * FROM follow WHERE follower_id = 3", "idx_follow_pair"),
        ('SELECT * FROM "like" WHERE post_id = 3 AND user_id = 1', "idx_like_pair"),
    ):
        assert index in " ".join(r[3] for r in db(j).execute("EXPLAIN QUERY PLAN " + query)), query


def test_a_grow_array_holds_exactly_what_was_appended_across_growth_and_truncation():
    """Storage beyond the live rows is uninitialised (np.empty): appends write every row."""
    from oasis_gym.platform.store import GrowArray

    g = GrowArray(np.float32, width=3, fill=-1.0, capacity=2)
    g.extend(np.ones((3, 3)))
    g.append_fill(2)
    assert g.a.shape == (5, 3) and (g.a[:3] == 1).all() and (g.a[3:] == -1).all()
    g.n = 1  # a rolled-back step truncates
    g.append_fill(1)
    g.extend(np.full((4, 3), 7.0))
    np.testing.assert_array_equal(g.a[:, 0], [1, -1, 7, 7, 7, 7])
    ids = GrowArray(np.int64, fill=-1, capacity=1)
    assert ids.extend([5, 6, 7]).tolist() == [0, 1, 2] and ids.a.tolist() == [5, 6, 7]


def test_a_staged_grow_array_equals_plain_appends_and_switches_buffers_with_a_small_copy(monkeypatch):
    """Random appends (some rows written right after their append, as the index's reposts
    are), truncations and appends larger than the staged buffer: the rows are always what
    was appended; at each switch the next buffer already holds all rows but the last call's.
    Buffers are staged from `STAGE_MIN_BYTES` on (0 here; small ones double plainly)."""
    from oasis_gym.platform import store
    from oasis_gym.platform.store import StagedGrowArray

    small = StagedGrowArray(np.float32, width=4, capacity=1024)
    small.extend(np.ones((600, 4), np.float32))
    assert small._next is None  # 16 KB: a plain doubling later
    monkeypatch.setattr(store, "STAGE_MIN_BYTES", 0)
    rng = np.random.default_rng(0)
    switch_copies = []
    real_reserve = StagedGrowArray._reserve

    def reserve(self, n):  # records how many rows each switch copies
        staged, copied, before = self._next, self._copied, self.n
        real_reserve(self, n)
        if staged is not None and self._buf is staged:
            switch_copies.append(before - copied)

    monkeypatch.setattr(StagedGrowArray, "_reserve", reserve)
    for _ in range(60):
        g, ref = StagedGrowArray(np.float32, width=3, capacity=int(rng.integers(1, 20))), []
        for _ in range(int(rng.integers(1, 150))):
            if rng.random() < 0.85:
                k = int(rng.integers(0, 12 if rng.random() < 0.97 else 90))
                rows = rng.random((k, 3), dtype=np.float32)
                assert g.extend(rows).tolist() == list(range(len(ref), len(ref) + k))
                ref.extend(rows)
                if k and rng.random() < 0.5:
                    g.a[-1] = ref[-1] = np.full(3, 7.0, np.float32)
            else:
                n = int(rng.integers(0, len(ref) + 1))
                g.truncate(n)
                ref = ref[:n]
            np.testing.assert_array_equal(g.a, np.array(ref, np.float32).reshape(-1, 3))
    assert len(switch_copies) > 50
    switch_copies.clear()
    steady = StagedGrowArray(np.float32, width=4, capacity=1024)
    for _ in range(2000):  # 74,000 rows: 7 switches, the last from 65,536 rows
        steady.extend(np.ones((37, 4), np.float32))
    assert len(switch_copies) == 7 and max(switch_copies) <= 2 * 37  # a plain doubling copies them all
    block = store.small_page_empty((4, 3), np.float32)
    assert block.shape == (4, 3) and block.flags.writeable


def test_action_names_name_each_code_like_action_name_invalid_ones_included():
    codes = np.array([-5, -1, 0, 3, len(ACTION_NAMES) - 1, len(ACTION_NAMES), 99, 2**40], dtype=np.int64)
    assert action_names(codes) == [action_name(c) for c in codes.tolist()]
    assert action_names(codes)[:2] == ["invalid", "invalid"] and action_names(np.zeros(0, np.int64)) == []


def test_created_texts_are_one_value_for_one_minute_else_one_per_row():
    from oasis_gym.platform.journal_rows import _created
    from oasis_gym.platform.row_writer import Same

    pf = Platform(PlatformConfig())
    assert _created(pf, np.array([7, 7, 7])) == Same(pf.created_at(7))
    mixed = np.array([3, 90, 3, 1440])
    assert _created(pf, mixed) == [pf.created_at(m) for m in mixed.tolist()]
    assert _created(pf, np.zeros(0, np.int64)) == []
