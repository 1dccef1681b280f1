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

    python bench/prompt_tokens.py [--views 8] [--seed 0] [--actions twitter reddit ...] [--feed-tokens N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

try:
    from oasis_gym.policies import llm as L
except ModuleNotFoundError:  # before the editable install
    from policies import llm as L

from oasis_gym.actions import REDDIT_DEFAULT_ACTIONS, TWITTER_DEFAULT_ACTIONS, ActionType
from oasis_gym.population import data_path, load_twitter_csv
from oasis_gym.simulation import ActionArrays, Simulation, SimulationConfig

SHARED = Path(ROOT).parent / "shared" / "data" / "oasis"
ALL_USER_ACTIONS = tuple(a for a in ActionType if a != ActionType.SIGN_UP)
# OASIS' Twitter default; the same with replies (comments); OASIS' Reddit default; every user
# action (the catalogue LLMPolicyCore builds when it is not given the env's action set).
ACTION_SETS = {
    "twitter": TWITTER_DEFAULT_ACTIONS,
    "twitter_replies": (*TWITTER_DEFAULT_ACTIONS, ActionType.CREATE_COMMENT, ActionType.LIKE_COMMENT),
    "reddit": REDDIT_DEFAULT_ACTIONS,
    "all": ALL_USER_ACTIONS,
}


def _data(name: str) -> Path:
    p = SHARED / name
    return p if p.is_file() else data_path(name)


def _tweet(text: str, n: int = 280) -> str:
    """Cut at a word boundary to at most n characters (a tweet)."""
    s = " ".join(text.split())
    return s if len(s) <= n else s[:n].rsplit(" ", 1)[0]


def counterfactual_texts() -> tuple[list[str], list[str]]:
    """(posts, comments) from OASIS' Reddit counterfactual set: selftexts and reply bodies."""
    rows = json.loads(_data("counterfactual_36.json").read_text())
    posts = [_tweet(r["RS"]["selftext"]) for r in rows]
    comments = [_tweet(v["body"]) for r in rows for k, v in r.items() if k.startswith("RC")]
    return posts, comments


def simulation_views(n_views: int = 8, seed: int = 0, n_seed_posts: int = 60, actions=ALL_USER_ACTIONS,
                     comment_rate: float = 0.1, search_rate: float = 0.3) -> list[dict]:
    """Feed views of a real Twitter-like run: 10 posts, comments, counts, visible users.

    Two steps of random likes, reposts and comments (each user comments with probability
    ``comment_rate`` per step) give the posts counts and top comments; in the second step
    some users search for users ("media"), so their next view lists search results too.
    Only what ``actions`` (the env's action set) allows happens: OASIS' Twitter default has
    no comments and no search. Viewers: users with a full feed (searchers first), longest
    personas first (the heavy end of ordinary users)."""
    rng = np.random.default_rng(seed)
    pop = load_twitter_csv(_data("False_Business_0.csv"))
    posts, comments = counterfactual_texts()
    picked = rng.choice(len(posts), n_seed_posts, replace=False)

    def setup(sim: Simulation) -> None:
        sim.platform.create_posts(rng.integers(0, pop.n, n_seed_posts), [posts[i] for i in picked])

    codes = tuple(int(a) for a in actions)
    sim = Simulation(pop, SimulationConfig(platform="twitter", available_actions=codes, activation=1.0,
                                           db_path=":memory:"), setup=setup)
    obs = sim.reset(seed=seed)
    searched: set[int] = set()
    for step in range(2):
        n = len(obs.users)
        kind = rng.choice([ActionType.CREATE_COMMENT, ActionType.LIKE_POST, ActionType.REPOST, ActionType.DO_NOTHING],
                          n, p=[comment_rate, 0.35, 0.1, 0.55 - comment_rate]).astype(np.int64)
        text = [comments[int(i)] for i in rng.integers(0, len(comments), n)]
        if step == 1 and int(ActionType.SEARCH_USER) in codes:
            search = rng.random(n) < search_rate
            kind[search] = ActionType.SEARCH_USER
            for i in np.flatnonzero(search):
                text[i] = "media"
            searched = set(obs.users[search].tolist())
        sim.step(ActionArrays(obs.users, kind, post=rng.integers(0, sim.K, n), text=text))
        obs = sim.obs
    full = [u for r, u in enumerate(obs.users.tolist()) if (obs.post_ids[r] >= 0).all()]
    persona_len = {u: len(sim.platform.u_persona[u] or sim.platform.u_bio[u]) for u in full}
    viewers = sorted(full, key=lambda u: (u not in searched, -persona_len[u], u))[:n_views]
    views = sim.feed_views(np.array(sorted(viewers), dtype=np.int64))
    for v in views:
        v["memory"] = memory_lines(v, rng)
    sim.close()
    return views


def memory_lines(view: dict, rng: np.random.Generator) -> list[str]:
    """Three entries shaped like ``core.describe`` writes them."""
    p = view["posts"]
    step = int(view.get("step", 2))
    return [f"step {max(0, step - 2)}: like_post post {p[int(rng.integers(len(p)))]['post_id']}",
            f"step {max(0, step - 1)}: create_comment post {p[0]['post_id']}: " + _tweet(p[0]["text"], 60),
            f"step {step}: repost post {p[-1]['post_id']}"]


def worst_case_view(seed: int = 0, actions=ALL_USER_ACTIONS) -> dict:
    """Ten 280-char posts with two 280-char comments each and 15 visible users (long bios)."""
    rng = np.random.default_rng(seed)
    posts, _ = counterfactual_texts()
    long_posts = sorted(posts, key=len)[-10:]
    users = load_twitter_csv(_data("197_progressive.csv"))

    def pad(s: str, n: int = 280) -> str:
        while len(s) < n:
            s = s + " " + posts[int(rng.integers(len(posts)))]
        return s[:n]

    feed = []
    for i, t in enumerate(long_posts):
        pid = 1000 + 37 * i
        feed.append({"slot": i, "post_id": pid, "author_id": 100 + i, "author_name": users.user_name[100 + i],
                     "text": pad(t), "quoted_text": None, "likes": int(rng.integers(0, 500)),
                     "dislikes": int(rng.integers(0, 50)), "reposts": int(rng.integers(0, 200)),
                     "comments": int(rng.integers(2, 90)), "label": None,
                     "top_comments": [{"slot": 2 * i + j, "comment_id": 5000 + 11 * i + j,
                                       "author_name": users.user_name[120 + 2 * i + j],
                                       "text": pad(posts[int(rng.integers(len(posts)))]),
                                       "likes": int(rng.integers(0, 40))} for j in range(2)]})
    vis = [{"slot": s, "user_id": 100 + s, "user_name": users.user_name[100 + s], "bio": users.bio[100 + s]}
           for s in range(15)]
    view = {"agent": "user_3", "user_id": 3, "user_name": users.user_name[3], "name": users.name[3],
            "persona": users.persona[3], "step": 12, "time": "2024-01-01 08:36",
            "allowed_actions": [a.name.lower() for a in actions],
            "posts": feed, "users": vis}
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
    return {"system": len(tok(msgs[0]["content"], add_special_tokens=False)["input_ids"]),
            "user": len(tok(msgs[1]["content"], add_special_tokens=False)["input_ids"]),
            "feed": len(tok(pb.feed(view), add_special_tokens=False)["input_ids"]),
            "total": len(total), "user_chars": len(msgs[1]["content"])}


def summary(rows: list[dict]) -> dict:
    return {k: {"mean": round(float(np.mean([r[k] for r in rows])), 1), "max": int(max(r[k] for r in rows))}
            for k in rows[0]}


BUILDER_FIELDS = ("feed_tokens", "chars_per_token", "max_post_chars", "max_comment_chars", "min_post_chars",
                  "min_comment_chars", "comments_per_post", "max_persona_chars", "max_bio_chars", "max_users",
                  "memory_items", "max_memory_chars")


def measure(tok, pb, actions, args) -> dict:
    views = simulation_views(args.views, args.seed, actions=actions, comment_rate=args.comment_rate,
                             search_rate=args.search_rate)
    worst = worst_case_view(args.seed, actions)
    if args.show:
        for m in pb.messages(views[0]) + pb.messages(worst)[1:]:
            print(f"--- {m['role']}\n{m['content']}", file=sys.stderr)
    real = [count(tok, pb, v) for v in views]
    comments = [sum(len(p["top_comments"]) for p in v["posts"]) for v in views]
    return {"realistic_10_posts": {"views": len(real), "comments_per_view": comments,
                                   "users_per_view": [len(v["users"]) for v in views], **summary(real)},
            "worst_10x280_2x280_comments": count(tok, pb, worst)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--views", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--comment-rate", type=float, default=0.1, help="per user and step, two steps")
    ap.add_argument("--search-rate", type=float, default=0.3, help="users searching for users in step 2")
    ap.add_argument("--actions", choices=sorted(ACTION_SETS), nargs="*", default=list(ACTION_SETS),
                    help="env and prompt action sets to measure (all: LLMPolicyCore's default catalogue)")
    ap.add_argument("--feed-tokens", type=int, default=None, help="PromptBuilder feed_tokens (default: its default)")
    ap.add_argument("--max-post-chars", type=int, default=None)
    ap.add_argument("--show", action="store_true", help="print the first rendered prompts to stderr")
    args = ap.parse_args()

    kw = {k: v for k, v in (("feed_tokens", args.feed_tokens), ("max_post_chars", args.max_post_chars))
          if v is not None}
    tok = smollm2_tokenizer()
    builders = {name: L.PromptBuilder(ACTION_SETS[name], **kw) for name in args.actions}
    pb = next(iter(builders.values()))
    print(json.dumps({
        "bench": "prompt_tokens", "tokenizer": "SmolLM2-135M-Instruct (chat template applied)",
        "builder": {k: getattr(pb, k) for k in BUILDER_FIELDS if hasattr(pb, k)},
        **{name: measure(tok, b, ACTION_SETS[name], args) for name, b in builders.items()},
    }))


if __name__ == "__main__":
    main()
