"""Prompt size of one LLM decision, counted with the default model's tokenizer.

Builds feed views the way production does (a real ``Simulation`` over the OASIS Twitter
profiles in False_Business_0.csv, seeded with the Reddit counterfactual posts of
counterfactual_36.json cut to tweet length, two steps of likes, reposts, comments and user
searches as the action set allows, then ``Simulation.feed_views``), adds three memory lines
in ``core.describe``'s format, renders them with ``PromptBuilder`` and counts system / user /
feed / total tokens with SmolLM2's tokenizer and chat template (the exact text the backends
send), for each action set: OASIS' Twitter default, Twitter plus replies, OASIS' Reddit
default, and every user action (what ``LLMPolicyCore`` lists when not given the env's set).
Also a worst case: ten 280-character posts, each with two 280-character comments and big
counts, 15 visible users with long bios, a long persona. Prints ONE JSON line.

    python bench/research/prompt_tokens.py [--views 8] [--seed 0] [--actions twitter reddit ...] [--feed-tokens N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

try:
    from oasis_gym.policies import llm as L
except ModuleNotFoundError:  # before the editable install
    from policies import llm as L

from oasis_gym.actions import REDDIT_DEFAULT_ACTIONS, TWITTER_DEFAULT_ACTIONS, ActionType  # noqa: E402
from oasis_gym.policies.llm.sample_views import (  # noqa: E402
    ALL_USER_ACTIONS,
    counterfactual_texts,
    memory_lines,
    simulation_views,
)
from oasis_gym.population import data_path, load_twitter_csv  # noqa: E402

# OASIS' Twitter default; the same with replies (comments); OASIS' Reddit default; every user
# action (the catalogue LLMPolicyCore builds when it is not given the env's action set).
ACTION_SETS = {
    "twitter": TWITTER_DEFAULT_ACTIONS,
    "twitter_replies": (*TWITTER_DEFAULT_ACTIONS, ActionType.CREATE_COMMENT, ActionType.LIKE_COMMENT),
    "reddit": REDDIT_DEFAULT_ACTIONS,
    "all": ALL_USER_ACTIONS,
}


def worst_case_view(seed: int = 0, actions=ALL_USER_ACTIONS) -> dict:
    """Ten 280-char posts with two 280-char comments each and 15 visible users (long bios)."""
    rng = np.random.default_rng(seed)
    posts, _ = counterfactual_texts()
    long_posts = sorted(posts, key=len)[-10:]
    users = load_twitter_csv(data_path("197_progressive.csv"))

    def pad(s: str, n: int = 280) -> str:
        while len(s) < n:
            s = s + " " + posts[int(rng.integers(len(posts)))]
        return s[:n]

    feed = []
    for i, t in enumerate(long_posts):
        pid = 1000 + 37 * i
        feed.append(
            {
                "slot": i,
                "post_id": pid,
                "author_id": 100 + i,
                "author_name": users.user_name[100 + i],
                "text": pad(t),
                "quoted_text": None,
                "likes": int(rng.integers(0, 500)),
                "dislikes": int(rng.integers(0, 50)),
                "reposts": int(rng.integers(0, 200)),
                "comments": int(rng.integers(2, 90)),
                "label": None,
                "top_comments": [
                    {
                        "slot": 2 * i + j,
                        "comment_id": 5000 + 11 * i + j,
                        "author_name": users.user_name[120 + 2 * i + j],
                        "text": pad(posts[int(rng.integers(len(posts)))]),
                        "likes": int(rng.integers(0, 40)),
                    }
                    for j in range(2)
                ],
            }
        )
    vis = [
        {"slot": s, "user_id": 100 + s, "user_name": users.user_name[100 + s], "bio": users.bio[100 + s]}
        for s in range(15)
    ]
    view = {
        "agent": "user_3",
        "user_id": 3,
        "user_name": users.user_name[3],
        "name": users.name[3],
        "persona": users.persona[3],
        "step": 12,
        "time": "2024-01-01 08:36",
        "allowed_actions": [a.name.lower() for a in actions],
        "posts": feed,
        "users": vis,
    }
    view["memory"] = memory_lines(view, rng)
    return view


def smollm2_tokenizer():
    """SmolLM2-135M-Instruct's tokenizer (with its chat template), read offline."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(L.ensure_smollm2()))


def count(tok, pb, view: dict) -> dict:
    """System / user / total tokens of one decision as the backends render it."""
    msgs = pb.messages(view)
    total = tok.apply_chat_template(msgs, tokenize=True, add_generation_prompt=True)
    total = total["input_ids"] if hasattr(total, "keys") else total
    return {
        "system": len(tok(msgs[0]["content"], add_special_tokens=False)["input_ids"]),
        "user": len(tok(msgs[1]["content"], add_special_tokens=False)["input_ids"]),
        "feed": len(tok(pb.feed(view), add_special_tokens=False)["input_ids"]),
        "total": len(total),
        "user_chars": len(msgs[1]["content"]),
    }


def summary(rows: list[dict]) -> dict:
    return {
        k: {"mean": round(float(np.mean([r[k] for r in rows])), 1), "max": int(max(r[k] for r in rows))}
        for k in rows[0]
    }


BUILDER_FIELDS = (
    "feed_tokens",
    "chars_per_token",
    "max_post_chars",
    "max_comment_chars",
    "min_post_chars",
    "min_comment_chars",
    "comments_per_post",
    "max_persona_chars",
    "max_bio_chars",
    "max_users",
    "memory_items",
    "max_memory_chars",
)


def measure(tok, pb, actions, args) -> dict:
    views = simulation_views(
        args.views, args.seed, actions=actions, comment_rate=args.comment_rate, search_rate=args.search_rate
    )
    worst = worst_case_view(args.seed, actions)
    if args.show:
        for m in pb.messages(views[0]) + pb.messages(worst)[1:]:
            print(f"--- {m['role']}\n{m['content']}", file=sys.stderr)
    real = [count(tok, pb, v) for v in views]
    comments = [sum(len(p["top_comments"]) for p in v["posts"]) for v in views]
    return {
        "realistic_10_posts": {
            "views": len(real),
            "comments_per_view": comments,
            "users_per_view": [len(v["users"]) for v in views],
            **summary(real),
        },
        "worst_10x280_2x280_comments": count(tok, pb, worst),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--views", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--comment-rate", type=float, default=0.1, help="per user and step, two steps")
    ap.add_argument("--search-rate", type=float, default=0.3, help="users searching for users in step 2")
    ap.add_argument(
        "--actions",
        choices=sorted(ACTION_SETS),
        nargs="*",
        default=list(ACTION_SETS),
        help="env and prompt action sets to measure (all: LLMPolicyCore's default catalogue)",
    )
    ap.add_argument("--feed-tokens", type=int, default=None, help="PromptBuilder feed_tokens (default: its default)")
    ap.add_argument("--max-post-chars", type=int, default=None)
    ap.add_argument("--show", action="store_true", help="print the first rendered prompts to stderr")
    args = ap.parse_args()

    kw = {
        k: v for k, v in (("feed_tokens", args.feed_tokens), ("max_post_chars", args.max_post_chars)) if v is not None
    }
    tok = smollm2_tokenizer()
    builders = {name: L.PromptBuilder(ACTION_SETS[name], **kw) for name in args.actions}
    pb = next(iter(builders.values()))
    print(
        json.dumps(
            {
                "bench": "prompt_tokens",
                "tokenizer": "SmolLM2-135M-Instruct (chat template applied)",
                "builder": {k: getattr(pb, k) for k in BUILDER_FIELDS if hasattr(pb, k)},
                **{name: measure(tok, b, ACTION_SETS[name], args) for name, b in builders.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
