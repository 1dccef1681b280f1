"""OASIS-format databases built by the tests themselves (no camel-oasis needed).

`OASIS_SCHEMA` transcribes the CREATE TABLE statements of camel-oasis 0.2.5
(oasis/social_platform/schema/*.sql) for the tables a simulation writes. `OasisWriter`
applies actions with OASIS's rules, as its Platform methods do them (reposts and quotes of a
repost or quote resolve to the root, duplicate checks, counters updated in place, a trace
row for each accepted action with `created_at` = the time step as text, like OASIS's
Twitter clock), so a fixture reads like a database OASIS wrote.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np

OASIS_SCHEMA = """
CREATE TABLE user (user_id INTEGER PRIMARY KEY AUTOINCREMENT, agent_id INTEGER, user_name TEXT, name TEXT,
    bio TEXT, created_at DATETIME, num_followings INTEGER DEFAULT 0, num_followers INTEGER DEFAULT 0);
CREATE TABLE post (post_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER, original_post_id INTEGER,
    content TEXT DEFAULT '', quote_content TEXT, created_at DATETIME, num_likes INTEGER DEFAULT 0,
    num_dislikes INTEGER DEFAULT 0, num_shares INTEGER DEFAULT 0, num_reports INTEGER DEFAULT 0,
    FOREIGN KEY(user_id) REFERENCES user(user_id), FOREIGN KEY(original_post_id) REFERENCES post(post_id));
CREATE TABLE follow (follow_id INTEGER PRIMARY KEY AUTOINCREMENT, follower_id INTEGER, followee_id INTEGER,
    created_at DATETIME);
CREATE TABLE mute (mute_id INTEGER PRIMARY KEY AUTOINCREMENT, muter_id INTEGER, mutee_id INTEGER, created_at DATETIME);
CREATE TABLE like (like_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER, post_id INTEGER, created_at DATETIME);
CREATE TABLE dislike (dislike_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER, post_id INTEGER,
    created_at DATETIME);
CREATE TABLE report (report_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER, post_id INTEGER,
    report_reason TEXT, created_at DATETIME);
CREATE TABLE trace (user_id INTEGER, created_at DATETIME, action TEXT, info TEXT,
    PRIMARY KEY(user_id, created_at, action, info));
CREATE TABLE rec (user_id INTEGER, post_id INTEGER, PRIMARY KEY(user_id, post_id));
CREATE TABLE comment (comment_id INTEGER PRIMARY KEY AUTOINCREMENT, post_id INTEGER, user_id INTEGER, content TEXT,
    created_at DATETIME DEFAULT CURRENT_TIMESTAMP, num_likes INTEGER DEFAULT 0, num_dislikes INTEGER DEFAULT 0);
CREATE TABLE comment_like (comment_like_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER, comment_id INTEGER,
    created_at DATETIME);
CREATE TABLE comment_dislike (comment_dislike_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER,
    comment_id INTEGER, created_at DATETIME);
CREATE TABLE product (product_id INTEGER PRIMARY KEY, product_name TEXT, sales INTEGER DEFAULT 0);
"""

# (action, relation table, target column, row id column, counter table, counter column, key of the counter row)
_RATE = {
    "like_post": ("like", "post_id", "like_id", "post", "num_likes", "post_id"),
    "dislike_post": ("dislike", "post_id", "dislike_id", "post", "num_dislikes", "post_id"),
    "like_comment": ("comment_like", "comment_id", "comment_like_id", "comment", "num_likes", "comment_id"),
    "dislike_comment": ("comment_dislike", "comment_id", "comment_dislike_id", "comment", "num_dislikes", "comment_id"),
}
_UNDO = {
    "unlike_post": "like_post",
    "undo_dislike_post": "dislike_post",
    "unlike_comment": "like_comment",
    "undo_dislike_comment": "dislike_comment",
}


class OasisWriter:
    """Writes an OASIS-schema database action by action, with OASIS's rules."""

    def __init__(self, path: str | Path):
        self.conn = sqlite3.connect(path)
        self.conn.executescript(OASIS_SCHEMA)
        self.step = 0

    def q(self, sql: str, *args):
        return self.conn.execute(sql, args)

    def one(self, sql: str, *args):
        return self.conn.execute(sql, args).fetchone()

    def trace(self, user: int, action: str, info: dict) -> None:
        # (OASIS: a row equal to an earlier one breaks the primary key and the action reports failure)
        self.q("INSERT OR IGNORE INTO trace VALUES (?, ?, ?, ?)", user, str(self.step), action, json.dumps(info))

    def sign_up(self, agent_id: int, user_name: str, name: str, bio: str) -> None:
        self.q(
            "INSERT INTO user VALUES (?, ?, ?, ?, ?, ?, 0, 0)", agent_id, agent_id, user_name, name, bio, str(self.step)
        )
        self.trace(agent_id, "sign_up", {"name": name, "user_name": user_name, "bio": bio})

    def _post_type(self, post_id: int):
        row = self.one("SELECT original_post_id, quote_content FROM post WHERE post_id = ?", post_id)
        if row is None:
            return None, None
        return ("common" if row[0] is None else "repost" if row[1] is None else "quote"), row[0]

    def create_post(self, user: int, content: str) -> int:
        pid = self.q(
            "INSERT INTO post (user_id, content, created_at, num_likes, num_dislikes, num_shares)"
            " VALUES (?, ?, ?, 0, 0, 0)",
            user,
            content,
            str(self.step),
        ).lastrowid
        self.trace(user, "create_post", {"content": content, "post_id": pid})
        return pid

    def repost(self, user: int, post_id: int) -> bool:
        if self.one("SELECT 1 FROM post WHERE original_post_id = ? AND user_id = ?", post_id, user):
            return False
        kind, root = self._post_type(post_id)
        if kind is None:
            return False
        if kind == "repost":
            if self.one("SELECT 1 FROM post WHERE original_post_id = ? AND user_id = ?", root, user):
                return False
            post_id = root
        new = self.q(
            "INSERT INTO post (user_id, original_post_id, created_at) VALUES (?, ?, ?)", user, post_id, str(self.step)
        ).lastrowid
        self.q("UPDATE post SET num_shares = num_shares + 1 WHERE post_id = ?", post_id)
        self.trace(user, "repost", {"reposted_id": post_id, "new_post_id": new})
        return True

    def quote_post(self, user: int, post_id: int, quote: str) -> bool:
        kind, root = self._post_type(post_id)
        if kind is None:
            return False
        if kind != "common":
            post_id = root
        content = self.one("SELECT content FROM post WHERE post_id = ?", post_id)[0]
        new = self.q(
            "INSERT INTO post (user_id, original_post_id, content, quote_content, created_at) VALUES (?, ?, ?, ?, ?)",
            user,
            post_id,
            content,
            quote,
            str(self.step),
        ).lastrowid
        self.q("UPDATE post SET num_shares = num_shares + 1 WHERE post_id = ?", post_id)
        self.trace(user, "quote_post", {"quoted_id": post_id, "new_post_id": new})
        return True

    def create_comment(self, user: int, post_id: int, content: str) -> bool:
        kind, root = self._post_type(post_id)
        if kind is None:
            return False
        post_id = root if kind == "repost" else post_id
        cid = self.q(
            "INSERT INTO comment (post_id, user_id, content, created_at) VALUES (?, ?, ?, ?)",
            post_id,
            user,
            content,
            str(self.step),
        ).lastrowid
        self.trace(user, "create_comment", {"content": content, "comment_id": cid})
        return True

    def rate(self, action: str, user: int, target: int) -> bool:
        """like / dislike a post or comment, or undo it (unlike_post, undo_dislike_comment, ...)."""
        undo = action in _UNDO
        table, col, id_col, counter_table, counter, key = _RATE[_UNDO.get(action, action)]
        if counter_table == "post":
            kind, root = self._post_type(target)
            if kind is None:
                return False
            target = root if kind == "repost" else target
        row = self.one(f"SELECT {id_col} FROM {table} WHERE {col} = ? AND user_id = ?", target, user)
        if (row is not None) != undo:
            return False
        if undo:
            self.q(f"DELETE FROM {table} WHERE {id_col} = ?", row[0])
        else:
            self.q(f"INSERT INTO {table} ({col}, user_id, created_at) VALUES (?, ?, ?)", target, user, str(self.step))
        self.q(f"UPDATE {counter_table} SET {counter} = {counter} {'-' if undo else '+'} 1 WHERE {key} = ?", target)
        self.trace(user, action, {col: target})
        return True

    def follow(self, user: int, followee: int, undo: bool = False) -> bool:
        row = self.one("SELECT follow_id FROM follow WHERE follower_id = ? AND followee_id = ?", user, followee)
        if (row is not None) != undo:
            return False
        if undo:
            self.q("DELETE FROM follow WHERE follow_id = ?", row[0])
        else:
            self.q(
                "INSERT INTO follow (follower_id, followee_id, created_at) VALUES (?, ?, ?)",
                user,
                followee,
                str(self.step),
            )
        sign = "-" if undo else "+"
        self.q(f"UPDATE user SET num_followings = num_followings {sign} 1 WHERE user_id = ?", user)
        self.q(f"UPDATE user SET num_followers = num_followers {sign} 1 WHERE user_id = ?", followee)
        self.trace(user, "unfollow" if undo else "follow", {"followee_id": followee})
        return True

    def mute(self, user: int, mutee: int) -> bool:
        if self.one("SELECT 1 FROM mute WHERE muter_id = ? AND mutee_id = ?", user, mutee):
            return False
        self.q("INSERT INTO mute (muter_id, mutee_id, created_at) VALUES (?, ?, ?)", user, mutee, str(self.step))
        self.trace(user, "mute", {"mutee_id": mutee})
        return True

    def report_post(self, user: int, post_id: int, reason: str) -> bool:
        if self.one("SELECT 1 FROM report WHERE user_id = ? AND post_id = ?", user, post_id):
            return False
        if self._post_type(post_id)[0] is None:
            return False
        self.q("UPDATE post SET num_reports = num_reports + 1 WHERE post_id = ?", post_id)
        self.q(
            "INSERT INTO report (post_id, user_id, report_reason, created_at) VALUES (?, ?, ?, ?)",
            post_id,
            user,
            reason,
            str(self.step),
        )
        self.trace(user, "report_post", {"post_id": post_id})
        return True

    def close(self) -> None:
        self.conn.commit()
        self.conn.close()


def build_oasis_db(path: str | Path, *, users: int = 12, steps: int = 6, per_step: int = 20, seed: int = 0) -> Path:
    """A small OASIS database from a seeded random script over every action kind (ids as
    OASIS numbers them: users by agent id from 0, posts and comments from 1)."""
    rng = np.random.default_rng(seed)
    w = OasisWriter(path)
    for u in range(users):
        w.sign_up(u, f"user{u}", f"User {u}", f"bio of {u}")
    for u in range(users):  # an initial follow graph
        for v in rng.choice(users, 2, replace=False).tolist():
            if v != u:
                w.follow(u, v)
    for u in range(3):
        w.create_post(u, f"first post by {u}")
    kinds = [
        "create_post",
        "repost",
        "quote_post",
        "like_post",
        "unlike_post",
        "dislike_post",
        "undo_dislike_post",
        "create_comment",
        "like_comment",
        "unlike_comment",
        "dislike_comment",
        "undo_dislike_comment",
        "follow",
        "unfollow",
        "mute",
        "report_post",
        "do_nothing",
    ]
    for step in range(1, steps + 1):
        w.step = step
        for _ in range(per_step):
            u = int(rng.integers(users))
            kind = kinds[int(rng.integers(len(kinds)))]
            n_posts = w.one("SELECT COUNT(*) FROM post")[0]
            n_comments = w.one("SELECT COUNT(*) FROM comment")[0]
            p = int(rng.integers(1, n_posts + 1))
            c = int(rng.integers(1, n_comments + 1)) if n_comments else None
            v = int(rng.integers(users))
            if kind == "create_post":
                w.create_post(u, f"post {step}.{u} about the news")
            elif kind == "repost":
                w.repost(u, p)
            elif kind == "quote_post":
                w.quote_post(u, p, f"quote by {u}")
            elif kind == "create_comment":
                w.create_comment(u, p, f"comment by {u}")
            elif kind.endswith("_post") and kind != "report_post":
                w.rate(kind, u, p)
            elif kind.endswith("_comment") and c is not None:
                w.rate(kind, u, c)
            elif kind in ("follow", "unfollow") and v != u:
                w.follow(u, v, undo=kind == "unfollow")
            elif kind == "mute" and v != u:
                w.mute(u, v)
            elif kind == "report_post":
                w.report_post(u, p, "misleading")
            elif kind == "do_nothing":
                w.trace(u, "do_nothing", {})
    w.close()
    return Path(path)
