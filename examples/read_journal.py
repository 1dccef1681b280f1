"""Read a run's journal: plain SQLite with OASIS's tables (user, post, like, follow, trace, ...).

What it shows: the journal is an ordinary SQLite file, so `sqlite3` (and pandas, if it is
installed: it is optional) answer questions about a run with SQL written for OASIS
databases: which tables there are, the most-liked posts and their authors, the actions per
step from `trace`, the most-followed users, the run's metrics. The connection only reads
(`PRAGMA query_only`), and closing it leaves nothing beside the file.

Without `--db` it first makes a small run into the output folder with the command line
(`python -m oasis_gym.cli run ...`, the same as `oasis-gym run`). 7.5 s on 2 cores shared with
other jobs (load average 14-15, 2026-12-06).

    python examples/read_journal.py                 # makes a run in a fresh temp folder, then reads it
    python examples/read_journal.py --db run.db     # reads an existing journal
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

try:  # optional: nicer tables
    import pandas as pd
except ImportError:
    pd = None


def make_run(out: Path, users: int, steps: int) -> Path:
    """A small ABM run journaled to `out/run.db` (TensorBoard logs in `out/tb`)."""
    db = out / "run.db"
    cmd = [sys.executable, "-m", "oasis_gym.cli", "run", "--policy", "abm", "--users", str(users)]
    cmd += ["--steps", str(steps), "--activation", "0.3", "--db", str(db), "--logdir", str(out / "tb")]
    cmd += ["--overwrite", "--quiet"]
    print("$ oasis-gym " + " ".join(cmd[3:]))
    subprocess.run(cmd, check=True, cwd=out)
    return db


def show(conn: sqlite3.Connection, title: str, sql: str) -> None:
    """Run a query and print its rows under a title (with pandas when it is installed)."""
    print(f"\n{title}")
    if pd is not None:
        print(pd.read_sql_query(sql, conn).to_string(index=False))
        return
    cur = conn.execute(sql)
    print("  " + " | ".join(d[0] for d in cur.description))
    for row in cur.fetchall():
        print("  " + " | ".join(str(v) for v in row))


def main(argv: list[str] | None = None) -> int:
    """Make a run unless given a journal; print what its tables say."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--db", type=Path, default=None, help="a journal to read (default: make a small run first)")
    p.add_argument("--users", type=int, default=300, help="users of the run it makes (default 300)")
    p.add_argument("--steps", type=int, default=10, help="steps of the run it makes (default 10)")
    p.add_argument("--out", type=Path, default=None, help="output folder of that run (default: a fresh temp folder)")
    args = p.parse_args(argv)
    if args.db is None:
        out = args.out or Path(tempfile.mkdtemp(prefix="oasis_gym_journal_"))
        out.mkdir(parents=True, exist_ok=True)
        print(f"output folder: {out}")
        db = make_run(out, args.users, args.steps)
    else:
        db = args.db
        if not db.is_file():
            p.error(f"no journal at {db}")

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA query_only = 1")  # read, never write
    try:
        tables = [
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name")
        ]
        counts = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
        print("\nrows per table: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
        show(
            conn,
            "most-liked posts (post joined with user):",
            "SELECT p.post_id, u.user_name, p.num_likes, p.num_shares, substr(p.content, 1, 50) AS content"
            " FROM post p JOIN user u ON u.user_id = p.user_id ORDER BY p.num_likes DESC, p.post_id LIMIT 5",
        )
        steps = conn.execute("SELECT COUNT(DISTINCT step) FROM trace").fetchone()[0]
        show(
            conn,
            "actions per step (trace):",
            "SELECT step, action, COUNT(*) AS n FROM trace GROUP BY step, action ORDER BY step, n DESC LIMIT 12",
        )
        show(
            conn,
            "most-followed users (user, a view over user_account and user_state):",
            "SELECT user_id, user_name, num_followers, num_followings FROM user ORDER BY num_followers DESC LIMIT 5",
        )
        row = conn.execute("SELECT user_id, action, info, result FROM trace WHERE action = 'create_post' LIMIT 1")
        example = row.fetchone()
        if example is not None:
            print(f"\na trace row: user {example[0]} {example[1]} -> {example[3]}, info {json.loads(example[2])}")
        if "metrics" in tables and counts["metrics"]:
            show(
                conn,
                "metrics of the last step (metrics, written by the run's MetricsRecorder):",
                "SELECT tag, round(value, 4) AS value FROM metrics WHERE step = (SELECT MAX(step) FROM metrics)"
                " AND tag IN ('engagement/rate', 'opinion/mean', 'opinion/std', 'cascade/scale',"
                " 'network/follower_gini', 'exposure/impressions') ORDER BY tag",
            )
    finally:
        conn.close()

    print(
        f"\nSummary: read {db} with sqlite3{' and pandas' if pd is not None else ' (pandas not installed: optional)'}:"
        f" {len(tables)} tables and views, {counts.get('post', 0)} posts, {counts.get('trace', 0)} trace rows"
        f" over {steps} steps."
    )
    print(f"Journal: {db}")
    print(
        "Try next: your own SQL (sqlite3 the file, or pd.read_sql_query), `oasis-gym report` for plots and "
        "summary.txt, or the same queries on a database written by OASIS (docs/from_oasis.md)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
