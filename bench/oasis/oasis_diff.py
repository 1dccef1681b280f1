"""Differential check against the real OASIS: the same seeded script, every counter compared.

A seeded script of mixed actions (posts, likes / unlikes, dislikes / undos, reposts incl.
reposts of reposts and of quotes, quotes incl. quotes of quotes, comments, comment votes,
follows / unfollows, mutes, reports, do_nothing) is applied step by step to our `Platform`
and, as `ManualAction`s through OASIS's own env (`oasis.make`, camel-oasis 0.2.5, random
recommender: no model download, no network), to OASIS. Then every post counter (author,
original_post_id, num_likes, num_dislikes, num_shares, num_reports, comments per post), every
comment counter (post, author, num_likes, num_dislikes), every user counter (num_followers,
num_followings) and every relation table (as sets of pairs) is compared.

The script keeps one action per user per step and targets that exist when the step starts
(OASIS applies a step's actions one by one, ours in phases: with these two rules both orders
give the same result). Actions that would hit a deliberate deviation (README, "Deviations
from OASIS") are not generated and are counted in `skipped_deviations`: self-follows and
mutes of oneself, a repost of a post the user has quoted (OASIS's duplicate check matches the
quote), a report aimed at a repost (OASIS counts it on the repost, we on the root).
`nested_mismatches` repeats the comparison with `nested_quotes=True` (our former behaviour,
where a quote of a quote points at the quote).

camel-oasis is never a dependency of oasis-gym: install it in a separate venv, e.g.

    python3 -m venv /tmp/oasis_venv && /tmp/oasis_venv/bin/pip install "camel-oasis==0.2.5" \
        "pydantic<2.12" "mcp==1.16.0"
    python bench/oasis/oasis_diff.py --oasis-python /tmp/oasis_venv/bin/python --users 80 --steps 50

Prints one JSON line; `mismatches` is the number of differing counters (target 0).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

KINDS = [
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
WEIGHTS = [10, 8, 8, 12, 4, 6, 3, 8, 6, 2, 4, 2, 8, 3, 2, 3, 4]
CREATE_ORDER = {"create_post": 0, "repost": 1, "quote_post": 2, "create_comment": 3}


# --------------------------------------------------------------------------- OASIS side (camel-oasis venv)


def run_oasis(script_path: str, db_path: str) -> None:
    """Replay the script through OASIS's env. Runs under the camel-oasis interpreter."""
    import asyncio
    import logging

    os.environ.setdefault("OPENAI_API_KEY", "unused")  # camel builds a default model client; never called
    logging.disable(logging.CRITICAL)
    import oasis
    from camel.models import ModelFactory
    from camel.types import ModelPlatformType, ModelType
    from oasis import ActionType, AgentGraph, ManualAction, SocialAgent, UserInfo
    from oasis.social_platform.channel import Channel

    script = json.loads(Path(script_path).read_text())
    # camel's stub model: no API, no tokenizer download (ManualActions never call a model)
    stub = ModelFactory.create(model_platform=ModelPlatformType.OPENAI, model_type=ModelType.STUB)

    async def main() -> None:
        graph = AgentGraph()
        for u in range(script["users"]):
            graph.add_agent(
                SocialAgent(
                    agent_id=u,
                    user_info=UserInfo(user_name=f"user{u}", name=f"User {u}", description=f"bio {u}", profile=None),
                    model=stub,
                )
            )
        platform = oasis.Platform(
            db_path, channel=Channel(), recsys_type="random", refresh_rec_post_count=2, max_rec_post_len=2
        )
        env = oasis.make(agent_graph=graph, platform=platform, database_path=db_path)
        await env.reset()
        for step in script["steps"]:
            actions = {
                env.agent_graph.get_agent(u): ManualAction(action_type=ActionType(kind), action_args=args)
                for u, kind, args in step
            }
            await env.step(actions)
        await env.close()

    asyncio.run(main())


# --------------------------------------------------------------------------- our side


def make_script(users: int, steps: int, activity: float, seed: int):
    """Generate the script while applying it to our platform (targets come from the state at
    the start of each step). Returns (script, our platform, skipped deviation counts)."""
    import numpy as np

    from oasis_gym.actions import ACTION_BY_NAME
    from oasis_gym.platform import QUOTE, REPOST, ActionBatch, Platform, PlatformConfig
    from oasis_gym.population import synthetic

    rng = np.random.default_rng(seed)
    pf = Platform(PlatformConfig())
    pop = synthetic(users, seed=seed)
    pop.follow_src = pop.follow_dst = np.empty(0, dtype=np.int64)
    pop.previous_posts = []
    pf.add_users(pop)
    skipped: dict[str, int] = {}
    script = []
    p = np.asarray(WEIGHTS, dtype=float) / sum(WEIGHTS)
    for step in range(steps):
        n_posts, n_comments = pf.n_posts, pf.n_comments
        rows, oasis_rows = [], []
        for u in np.flatnonzero(rng.random(users) < activity).tolist():
            kind = KINDS[int(rng.choice(len(KINDS), p=p))]
            post = int(rng.integers(n_posts)) if n_posts else None
            comment = int(rng.integers(n_comments)) if n_comments else None
            other = int(rng.integers(users))
            text = f"text {step}.{u}"
            if kind in ("follow", "unfollow", "mute") and other == u:
                skipped["self_follow_or_mute"] = skipped.get("self_follow_or_mute", 0) + 1
                continue
            if (
                kind
                in (
                    "repost",
                    "quote_post",
                    "like_post",
                    "unlike_post",
                    "dislike_post",
                    "undo_dislike_post",
                    "create_comment",
                    "report_post",
                )
                and post is None
            ):
                continue
            if kind.endswith("comment") and kind != "create_comment" and comment is None:
                continue
            if kind == "repost":
                root = int(pf.p_root.a[post]) if pf.p_kind.a[post] == REPOST else post
                mine = (pf.p_author.a == u) & (pf.p_kind.a == QUOTE) & np.isin(pf.p_root.a, [post, root])
                if mine.any():
                    skipped["repost_after_own_quote"] = skipped.get("repost_after_own_quote", 0) + 1
                    continue
            if kind == "report_post" and pf.p_kind.a[post] == REPOST:
                skipped["report_of_a_repost"] = skipped.get("report_of_a_repost", 0) + 1
                continue
            target, args = -1, {}
            if kind in ("repost", "like_post", "unlike_post", "dislike_post", "undo_dislike_post"):
                target, args = post, {"post_id": post + 1}
            elif kind == "quote_post":
                target, args = post, {"post_id": post + 1, "quote_content": text}
            elif kind == "create_comment":
                target, args = post, {"post_id": post + 1, "content": text}
            elif kind == "report_post":
                target, args = post, {"post_id": post + 1, "report_reason": text}
            elif kind.endswith("comment"):
                target, args = comment, {"comment_id": comment + 1}
            elif kind in ("follow", "unfollow"):
                target, args = other, {"followee_id": other}
            elif kind == "mute":
                target, args = other, {"mutee_id": other}
            elif kind == "create_post":
                args = {"content": text}
            rows.append(
                (
                    u,
                    ACTION_BY_NAME[kind],
                    target,
                    text if kind in ("create_post", "quote_post", "create_comment", "report_post") else None,
                )
            )
            oasis_rows.append((u, kind, args))
        # OASIS numbers a step's new posts and comments in the order it runs the actions (the
        # order given), ours by phase (create_post, repost, quote_post, create_comment): give
        # OASIS our order
        order = sorted(range(len(rows)), key=lambda k: CREATE_ORDER.get(oasis_rows[k][1], len(CREATE_ORDER)))
        rows, oasis_rows = [rows[k] for k in order], [oasis_rows[k] for k in order]
        if rows:
            pf.apply(ActionBatch.of(rows))
        pf.advance(3)
        script.append({"rows": rows, "oasis": oasis_rows})
    return script, pf, skipped


def apply_script(script, users: int, nested: bool):
    import numpy as np

    from oasis_gym.platform import ActionBatch, Platform, PlatformConfig
    from oasis_gym.population import synthetic

    pf = Platform(PlatformConfig(nested_quotes=nested))
    pop = synthetic(users, seed=0)
    pop.follow_src = pop.follow_dst = np.empty(0, dtype=np.int64)
    pop.previous_posts = []
    pf.add_users(pop)
    accepted = 0
    for step in script:
        if step["rows"]:
            res, _ = pf.apply(ActionBatch.of(step["rows"]))
            accepted += int((res == 0).sum())
        pf.advance(3)
    return pf, accepted


def compare(pf, db_path: str) -> dict[str, int]:
    """Number of differing values per counter (OASIS ids = ours + 1 for posts and comments)."""
    from oasis_gym.platform.store import unpack_keys

    conn = sqlite3.connect(db_path)
    diff: dict[str, int] = {}

    def add(name: str, ours: list, theirs: list) -> None:
        n = max(len(ours), len(theirs))
        ours, theirs = ours + [None] * (n - len(ours)), theirs + [None] * (n - len(theirs))
        bad = sum(a != b for a, b in zip(ours, theirs))
        if bad:
            diff[name] = diff.get(name, 0) + bad

    posts = conn.execute(
        "SELECT user_id, original_post_id, num_likes, num_dislikes, num_shares, num_reports,"
        " (SELECT COUNT(*) FROM comment c WHERE c.post_id = p.post_id) FROM post p"
        " ORDER BY post_id"
    ).fetchall()
    cols = list(zip(*posts)) if posts else [[]] * 7
    add("post.user_id", pf.p_author.a.tolist(), list(cols[0]))
    add("post.original_post_id", [r + 1 if r >= 0 else None for r in pf.p_root.a.tolist()], list(cols[1]))
    for k, (name, col) in enumerate(
        (
            ("num_likes", pf.p_likes),
            ("num_dislikes", pf.p_dislikes),
            ("num_shares", pf.p_shares),
            ("num_reports", pf.p_reports),
            ("num_comments", pf.p_comments),
        ),
        start=2,
    ):
        add(f"post.{name}", col.a.tolist(), list(cols[k]))
    comments = conn.execute(
        "SELECT post_id, user_id, num_likes, num_dislikes FROM comment ORDER BY comment_id"
    ).fetchall()
    cols = list(zip(*comments)) if comments else [[]] * 4
    add("comment.post_id", (pf.c_post.a + 1).tolist(), list(cols[0]))
    add("comment.user_id", pf.c_author.a.tolist(), list(cols[1]))
    add("comment.num_likes", pf.c_likes.a.tolist(), list(cols[2]))
    add("comment.num_dislikes", pf.c_dislikes.a.tolist(), list(cols[3]))
    users = conn.execute("SELECT num_followers, num_followings FROM user ORDER BY user_id").fetchall()
    add("user.num_followers", pf.u_followers.a.tolist(), [r[0] for r in users])
    add("user.num_followings", pf.u_followings.a.tolist(), [r[1] for r in users])
    for name, table, a, b, off in (
        ("follow", "follow", "follower_id", "followee_id", 0),
        ("mute", "mute", "muter_id", "mutee_id", 0),
        ("like", '"like"', "user_id", "post_id", 1),
        ("dislike", "dislike", "user_id", "post_id", 1),
        ("comment_like", "comment_like", "user_id", "comment_id", 1),
        ("comment_dislike", "comment_dislike", "user_id", "comment_id", 1),
        ("report", "report", "user_id", "post_id", 1),
    ):
        x, y = unpack_keys(pf.rel[name].keys())
        ours = set(zip(x.tolist(), (y + off).tolist()))
        theirs = set(conn.execute(f"SELECT {a}, {b} FROM {table}").fetchall())
        if ours != theirs:
            diff[f"{name} rows"] = len(ours ^ theirs)
    conn.close()
    return diff


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--oasis-python", default="/tmp/oasis_venv/bin/python", help="interpreter with camel-oasis 0.2.5")
    ap.add_argument("--users", type=int, default=80)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--activity", type=float, default=0.7, help="share of users acting each step")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", default=None, help="folder to keep the script and the OASIS database in")
    ap.add_argument("--oasis-side", nargs=2, metavar=("SCRIPT", "DB"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.oasis_side:
        run_oasis(*args.oasis_side)
        return
    import time

    work = Path(args.keep or tempfile.mkdtemp(prefix="oasis_diff_"))
    work.mkdir(parents=True, exist_ok=True)
    script, _, skipped = make_script(args.users, args.steps, args.activity, args.seed)
    (work / "script.json").write_text(json.dumps({"users": args.users, "steps": [s["oasis"] for s in script]}))
    db = work / "oasis.db"
    if db.exists():
        db.unlink()
    t0 = time.perf_counter()
    proc = subprocess.run(
        [args.oasis_python, os.path.abspath(__file__), "--oasis-side", str(work / "script.json"), str(db)],
        cwd=work,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        sys.exit(f"OASIS run failed:\n{proc.stderr[-3000:]}")
    oasis_s = time.perf_counter() - t0
    ours, accepted = apply_script(script, args.users, nested=False)
    diff = compare(ours, str(db))
    nested, _ = apply_script(script, args.users, nested=True)
    nested_diff = compare(nested, str(db))
    conn = sqlite3.connect(db)
    oasis_accepted = conn.execute("SELECT COUNT(*) FROM trace WHERE action NOT IN ('sign_up', 'refresh')").fetchone()[0]
    conn.close()
    print(
        json.dumps(
            {
                "bench": "oasis_diff",
                "users": args.users,
                "steps": args.steps,
                "seed": args.seed,
                "actions": sum(len(s["rows"]) for s in script),
                "accepted_ours": accepted,
                "traced_oasis": oasis_accepted,
                "posts": ours.n_posts,
                "comments": ours.n_comments,
                "mismatches": sum(diff.values()),
                "by_counter": diff,
                "nested_mismatches": sum(nested_diff.values()),
                "nested_by_counter": nested_diff,
                "skipped_deviations": skipped,
                "oasis_seconds": round(oasis_s, 1),
                "load": os.getloadavg()[0],
            }
        )
    )


if __name__ == "__main__":
    main()
