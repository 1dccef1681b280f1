"""The journal's schema: OASIS's tables (same names and columns, `user` a view) and ours
beside them, the query indexes built at close, the relation tables, and the connection
settings every writer uses."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SCHEMA = """
-- OASIS's `user` is a view (below) over two tables: the account columns, written once, and the
-- counters and flags, which each step updates for thousands of users. Kept narrow, those
-- updates dirty a few hundred pages instead of about one page per user: they were 40% of a
-- step's write volume.
CREATE TABLE IF NOT EXISTS user_account (
    user_id INTEGER PRIMARY KEY, agent_id INTEGER, user_name TEXT, name TEXT, bio TEXT, created_at DATETIME);
CREATE TABLE IF NOT EXISTS user_state (
    user_id INTEGER PRIMARY KEY, num_followings INTEGER DEFAULT 0, num_followers INTEGER DEFAULT 0,
    signed_up INTEGER DEFAULT 1, suspended INTEGER DEFAULT 0);
CREATE VIEW IF NOT EXISTS user AS
    SELECT a.user_id, a.agent_id, a.user_name, a.name, a.bio, a.created_at, s.num_followings, s.num_followers,
           s.signed_up, s.suspended
    FROM user_account a JOIN user_state s ON s.user_id = a.user_id;
-- written once per user, like user_account
CREATE TABLE IF NOT EXISTS user_profile (
    user_id INTEGER PRIMARY KEY, persona TEXT, is_core INTEGER DEFAULT 0, interests INTEGER,
    activity BLOB, opinion REAL);
CREATE TABLE IF NOT EXISTS post (
    post_id INTEGER PRIMARY KEY, user_id INTEGER, original_post_id INTEGER, content TEXT DEFAULT '',
    image_path TEXT, quote_content TEXT, created_at DATETIME, num_likes INTEGER DEFAULT 0,
    num_dislikes INTEGER DEFAULT 0, num_shares INTEGER DEFAULT 0, num_reports INTEGER DEFAULT 0,
    num_comments INTEGER DEFAULT 0, kind INTEGER DEFAULT 0, step INTEGER, minute INTEGER,
    stance REAL, label INTEGER DEFAULT -1, status INTEGER DEFAULT 0);
CREATE TABLE IF NOT EXISTS comment (
    comment_id INTEGER PRIMARY KEY, post_id INTEGER, user_id INTEGER, content TEXT,
    created_at DATETIME, num_likes INTEGER DEFAULT 0, num_dislikes INTEGER DEFAULT 0,
    step INTEGER, minute INTEGER, stance REAL);
-- follow_id is the platform's edge id: new follows append, an unfollow deletes by row id, and
-- the pair indexes are built at close (kept up during the run, random-pair inserts were a
-- third of a step's write volume)
CREATE TABLE IF NOT EXISTS follow (follow_id INTEGER PRIMARY KEY, follower_id INTEGER, followee_id INTEGER,
    created_at DATETIME);
CREATE TABLE IF NOT EXISTS mute (mute_id INTEGER PRIMARY KEY, muter_id INTEGER, mutee_id INTEGER, created_at DATETIME);
CREATE TABLE IF NOT EXISTS "like" (like_id INTEGER PRIMARY KEY, user_id INTEGER, post_id INTEGER, created_at DATETIME);
CREATE TABLE IF NOT EXISTS dislike (dislike_id INTEGER PRIMARY KEY, user_id INTEGER, post_id INTEGER,
    created_at DATETIME);
CREATE TABLE IF NOT EXISTS comment_like (comment_like_id INTEGER PRIMARY KEY, user_id INTEGER, comment_id INTEGER,
    created_at DATETIME);
CREATE TABLE IF NOT EXISTS comment_dislike (comment_dislike_id INTEGER PRIMARY KEY, user_id INTEGER,
    comment_id INTEGER, created_at DATETIME);
CREATE TABLE IF NOT EXISTS report (report_id INTEGER PRIMARY KEY, user_id INTEGER, post_id INTEGER,
    report_reason TEXT, created_at DATETIME);
CREATE TABLE IF NOT EXISTS trace (user_id INTEGER, created_at DATETIME, action TEXT, info TEXT, step INTEGER,
    result TEXT);
CREATE TABLE IF NOT EXISTS rec (user_id INTEGER, post_id INTEGER, step INTEGER);
CREATE TABLE IF NOT EXISTS opinion (step INTEGER, user_id INTEGER, opinion REAL);
CREATE TABLE IF NOT EXISTS moderation (step INTEGER, target TEXT, target_id INTEGER, action TEXT, created_at DATETIME);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS interview (step INTEGER, user_id INTEGER, question TEXT, answer TEXT, created_at DATETIME);
"""

# What analysis queries need, built by Journal.build_query_indexes at close(). None is kept up
# during the run: row by row, random keys dirty a page each, and the pair indexes alone were
# a third of a step's write volume.
QUERY_INDEXES = """
CREATE INDEX IF NOT EXISTS idx_follow_pair ON follow(follower_id, followee_id);
CREATE INDEX IF NOT EXISTS idx_mute_pair ON mute(muter_id, mutee_id);
CREATE INDEX IF NOT EXISTS idx_like_pair ON "like"(post_id, user_id);
CREATE INDEX IF NOT EXISTS idx_dislike_pair ON dislike(post_id, user_id);
CREATE INDEX IF NOT EXISTS idx_comment_like_pair ON comment_like(comment_id, user_id);
CREATE INDEX IF NOT EXISTS idx_comment_dislike_pair ON comment_dislike(comment_id, user_id);
CREATE INDEX IF NOT EXISTS idx_report_pair ON report(post_id, user_id);
CREATE INDEX IF NOT EXISTS idx_post_user ON post(user_id);
CREATE INDEX IF NOT EXISTS idx_post_original ON post(original_post_id);
CREATE INDEX IF NOT EXISTS idx_comment_post ON comment(post_id);
CREATE INDEX IF NOT EXISTS idx_trace_step ON trace(step);
CREATE INDEX IF NOT EXISTS idx_rec_user ON rec(user_id);
CREATE INDEX IF NOT EXISTS idx_opinion_user ON opinion(user_id, step);
"""

# (table, row id column, first column, second column) of each journaled relation
RELATION_TABLES = {
    "follow": ("follow", "follow_id", "follower_id", "followee_id"),
    "mute": ("mute", "mute_id", "muter_id", "mutee_id"),
    "like": ('"like"', "like_id", "user_id", "post_id"),
    "dislike": ("dislike", "dislike_id", "user_id", "post_id"),
    "comment_like": ("comment_like", "comment_like_id", "user_id", "comment_id"),
    "comment_dislike": ("comment_dislike", "comment_dislike_id", "user_id", "comment_id"),
    "report": ("report", "report_id", "user_id", "post_id"),
}


def query_indexes(compact_follow: bool = False) -> str:
    """The query indexes' script; with the follow graph stored compactly (`follow_seed`), the
    follow pair index is the run's table's (the seed is keyed by follower already)."""
    if not compact_follow:
        return QUERY_INDEXES
    return QUERY_INDEXES.replace("idx_follow_pair ON follow(", "idx_follow_pair ON follow_run(")


def _index_names(script: str) -> list[str]:
    return [line.split()[5] for line in script.strip().splitlines()]  # CREATE INDEX IF NOT EXISTS <name>


QUERY_INDEX_NAMES = _index_names(QUERY_INDEXES)


AUTOCHECKPOINT_PAGES = 16384  # WAL pages (64 MiB) from which the journal copies it into the database


def connect(path: str | Path) -> sqlite3.Connection:
    """A connection to the journal at `path` with the writer's settings (WAL, synchronous=NORMAL,
    a large page cache and statement cache)."""
    # the multi-row statements come in about 150 sizes (see RowWriter): keep them all prepared
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, cached_statements=1024)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=OFF")
    # index pages of large tables must stay cached, or every step pays random I/O
    conn.execute("PRAGMA cache_size=-262144")  # KiB: 256 MiB
    conn.execute("PRAGMA temp_store=MEMORY")
    # SQLite's automatic checkpoint ran inside the COMMIT that crossed its mark: the journal
    # copies the WAL itself (`Journal._checkpoint_if_due`), mostly on a thread of its own
    conn.execute("PRAGMA wal_autocheckpoint=0")
    return conn
