"""Schema, strict parsing, memory and prompt rendering of the LLM layer (no model needed)."""

from __future__ import annotations

import json

import pytest
from llm_fixtures import llm_module

from oasis_gym.actions import ACTION_NAMES, REDDIT_DEFAULT_ACTIONS, TWITTER_DEFAULT_ACTIONS, ActionType

schema_mod = llm_module("schema")
parse_mod = llm_module("parse")
memory_mod = llm_module("memory")
prompt_mod = llm_module("prompt")
synth = llm_module("sample_views")

SchemaConfig = schema_mod.SchemaConfig
build_schema = schema_mod.build_schema
parse_reply = parse_mod.parse_reply


def _view(**over) -> dict:
    """A hand-made feed view whose slots differ from list positions (to catch mix-ups)."""
    v = {
        "agent": "user_3",
        "user_id": 3,
        "user_name": "user3",
        "name": "Ann",
        "persona": "A nurse.",
        "step": 5,
        "time": "2026-01-01 08:15",
        "allowed_actions": ["do_nothing", "create_post", "like_post", "follow", "like_comment", "quote_post"],
        "posts": [
            {
                "slot": 2,
                "post_id": 17,
                "author_id": 5,
                "author_name": "user5",
                "text": "hello",
                "quoted_text": None,
                "likes": 3,
                "dislikes": 0,
                "reposts": 1,
                "comments": 1,
                "label": None,
                "top_comments": [{"slot": 0, "comment_id": 4, "author_name": "user9", "text": "hi", "likes": 1}],
            },
            {
                "slot": 5,
                "post_id": 40,
                "author_id": 6,
                "author_name": "user6",
                "text": "world",
                "quoted_text": "q",
                "likes": 0,
                "dislikes": 0,
                "reposts": 0,
                "comments": 2,
                "label": "misleading",
                "top_comments": [
                    {"slot": 0, "comment_id": 8, "author_name": "user1", "text": "a", "likes": 0},
                    {"slot": 1, "comment_id": 9, "author_name": "user2", "text": "b", "likes": 2},
                ],
            },
        ],
        "users": [{"slot": 1, "user_id": 5, "user_name": "user5", "bio": "bio"}],
        "memory": ["step 3: liked post 12"],
    }
    v.update(over)
    return v


def _p(obj, view=None, **kw):
    text = obj if isinstance(obj, str) else json.dumps(obj)
    return parse_reply(text, view or _view(), **kw)


# ---- parse: valid replies map ids to slots ------------------------------------------------------
def test_valid_replies_map_ids_to_slots():
    r = _p({"action": "like_post", "post_id": 40, "reason": "nice"})
    assert r.ok and r.action == {
        "type": int(ActionType.LIKE_POST),
        "post": 5,
        "comment": 0,
        "user": 0,
        "text": "",
        "stance": None,
        "reason": "nice",
    }
    r = _p({"action": "like_comment", "comment_id": 9, "reason": ""})
    assert r.ok and (r.action["post"], r.action["comment"]) == (5, 1)
    r = _p({"action": "follow", "user_id": 5, "reason": "x"})
    assert r.ok and r.action["user"] == 1 and r.action["type"] == int(ActionType.FOLLOW)
    r = _p({"action": "quote_post", "post_id": 17, "text": "so true", "stance": -0.5, "reason": "r"})
    assert r.ok and r.action["post"] == 2 and r.action["text"] == "so true" and r.action["stance"] == -0.5
    r = _p({"action": "do_nothing"})  # reason is optional
    assert r.ok and r.action["type"] == 0


def test_code_fence_and_whitespace_are_stripped():
    r = _p('  ```json\n{"action":"like_post","post_id":17,"reason":"ok"}\n```  ')
    assert r.ok and r.action["post"] == 2


@pytest.mark.parametrize(
    "reply,code",
    [
        ("", "empty"),
        ("   \n", "empty"),
        (None, "empty"),
        ('{"action":"like_post","post_id":1', "truncated"),
        ('{"action":"create_post","text":"abc', "truncated"),
        ("hello there", "not_json"),
        ('{"action": like}', "not_json"),
        ("[1, 2]", "not_object"),
        ('"like_post"', "not_object"),
        ('{"action":"like_post","post_id":17,"reason":"x","mood":"happy"}', "extra_fields"),
        ('{"action":"fly","reason":"x"}', "unknown_action"),
        ('{"action":"dislike_post","post_id":17}', "action_not_allowed"),
        ('{"action":"like_post","post_id":99}', "unseen_post"),
        ('{"action":"like_post","post_id":"17"}', "bad_post_id"),
        ('{"action":"like_post","post_id":true}', "bad_post_id"),
        ('{"action":"like_post","post_id":17.0}', "bad_post_id"),
        ('{"action":"like_post"}', "missing_post_id"),
        ('{"action":"like_comment","comment_id":5}', "unseen_comment"),
        ('{"action":"follow","user_id":3}', "unseen_user"),
        ('{"action":"create_post","text":"   ","stance":0}', "text_empty"),
        ('{"action":"create_post","text":"a\\u0000b","stance":0}', "text_invalid"),
        ('{"action":"create_post","text":"a\\ud800b","stance":0}', "text_invalid"),
        ('{"action":"create_post","text":"hi","stance":1.5}', "stance_out_of_range"),
        ('{"action":"create_post","text":"hi","stance":"left"}', "bad_stance"),
        ('{"action":"create_post","text":"hi"}', "missing_stance"),
        ('{"action":"create_post","stance":0.1}', "missing_text"),
    ],
)
def test_invalid_replies_become_do_nothing(reply, code):
    r = parse_reply(reply, _view())
    assert not r.ok and r.error == code
    assert r.action["type"] == int(ActionType.DO_NOTHING) and r.action["reason"] == f"invalid: {code}"


def test_ten_thousand_character_text_is_rejected_not_truncated():
    r = _p({"action": "create_post", "text": "x" * 10_000, "stance": 0.0, "reason": "spam"})
    assert not r.ok and r.error == "text_too_long"
    ok = _p({"action": "create_post", "text": "x" * 280, "stance": 0.0, "reason": "max"})
    assert ok.ok and len(ok.action["text"]) == 280


def test_raw_control_characters_inside_strings_are_tolerated():
    r = parse_reply('{"action":"create_post","text":"a\tb\x01c","stance":0,"reason":"r"}', _view())
    assert r.ok and r.action["text"] == "a\tb\x01c"


def test_length_stop_marks_broken_json_truncated_but_accepts_complete_json():
    assert parse_reply('{"action":"like_p', _view(), finished=False).error == "truncated"
    assert parse_reply('{"action":"like_post","post_id":17}', _view(), finished=False).ok


def test_long_reason_is_cut_not_rejected():
    r = _p({"action": "do_nothing", "reason": "y" * 500}, cfg=SchemaConfig(max_reason_chars=20))
    assert r.ok and r.action["reason"] == "y" * 20


def test_parse_stats_count_each_code():
    stats = parse_mod.ParseStats()
    for reply in ("", "nope", '{"action":"do_nothing"}', '{"action":"like_post","post_id":1}'):
        stats.add(parse_reply(reply, _view()))
    d = stats.as_dict()
    assert d["ok"] == 1 and d["invalid"] == 3
    assert d["invalid_empty"] == d["invalid_not_json"] == d["invalid_unseen_post"] == 1


# ---- schema --------------------------------------------------------------------------------------
def test_schema_enumerates_only_visible_ids_and_allowed_actions():
    s = build_schema(_view())
    variants = {v["properties"]["action"]["const"]: v for v in s["anyOf"]}
    assert set(variants) == {"do_nothing", "create_post", "like_post", "follow", "like_comment", "quote_post"}
    assert variants["like_post"]["properties"]["post_id"]["enum"] == [17, 40]
    assert variants["like_comment"]["properties"]["comment_id"]["enum"] == [4, 8, 9]
    assert variants["follow"]["properties"]["user_id"]["enum"] == [5]
    for v in variants.values():
        assert v["additionalProperties"] is False and v["required"] == list(v["properties"])
        assert list(v["properties"])[0] == "action"
    assert variants["create_post"]["required"] == ["action", "text", "stance", "reason"]
    assert variants["create_post"]["properties"]["text"]["maxLength"] == 280


def test_actions_without_targets_are_dropped_and_never_empty():
    v = _view(posts=[], users=[])
    names = [a.name.lower() for a in schema_mod.feasible_actions(v)]
    assert names == ["do_nothing", "create_post"]
    lone = _view(posts=[], users=[], allowed_actions=["like_post"])
    s = build_schema(lone)
    assert s["properties"]["action"] == {"const": "do_nothing"}  # a single variant, no anyOf


def test_flat_schema_is_an_object_with_nullable_fields():
    s = build_schema(_view(), SchemaConfig(style="flat"))
    assert s["type"] == "object" and s["additionalProperties"] is False
    assert set(s["required"]) == {"action", "post_id", "comment_id", "user_id", "text", "stance", "reason"}
    assert s["properties"]["post_id"]["enum"] == [17, 40, None]
    r = parse_reply(
        json.dumps(
            {
                "action": "like_post",
                "post_id": 17,
                "comment_id": None,
                "user_id": None,
                "text": None,
                "stance": None,
                "reason": "r",
            }
        ),
        _view(),
        SchemaConfig(style="flat"),
    )
    assert r.ok and r.action["post"] == 2
    with pytest.raises(ValueError):
        SchemaConfig(style="nested")


def _accepts(schema: dict, reply: str) -> bool:
    """Does the tightened xgrammar grammar of ``schema`` accept ``reply`` completely?"""
    import xgrammar as xgr

    info = xgr.TokenizerInfo([chr(i) for i in range(32, 127)])
    ebnf = schema_mod.xgrammar_ebnf(schema)
    assert ebnf is not None, "xgrammar's EBNF text form changed; tightening fell back"
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(ebnf))
    return m.accept_string(reply) and m.is_completed()


CANDIDATES = [
    '{"action":"like_post","post_id":17,"reason":"ok"}',
    '{"action":"like_post","post_id":99,"reason":"ok"}',
    '{"action":"like_post","post_id":"17","reason":"ok"}',
    '{"action":"like_comment","comment_id":9,"reason":""}',
    '{"action":"like_comment","comment_id":17,"reason":""}',
    '{"action":"follow","user_id":5,"reason":"x"}',
    '{"action":"follow","user_id":6,"reason":"x"}',
    '{"action":"create_post","text":"hello world","stance":0.25,"reason":"x"}',
    '{"action":"create_post","text":" ","stance":0.25,"reason":"x"}',
    '{"action":"create_post","text":"a\x01b","stance":0.25,"reason":"x"}',
    '{"action":"create_post","text":"hi","stance":1.5,"reason":"x"}',
    '{"action":"create_post","text":"' + "x" * 281 + '","stance":0,"reason":"x"}',
    '{"action":"quote_post","post_id":40,"text":"yes","stance":-1,"reason":"x"}',
    '{"action":"dislike_post","post_id":17,"reason":"x"}',
    '{"action":"do_nothing","reason":"tired"}',
    '{"action":"do_nothing","reason":"tired","extra":1}',
]


@pytest.mark.parametrize("reply", CANDIDATES)
def test_every_reply_the_grammar_accepts_parses_valid(reply):
    """The tightened grammar is sound: acceptance implies a valid action."""
    view = _view()
    if _accepts(build_schema(view), reply):
        parsed = parse_reply(reply, view)
        assert parsed.ok, (reply, parsed.error)


def test_grammar_accepts_valid_and_rejects_invalid_replies():
    view, schema = _view(), build_schema(_view())
    accepted = [r for r in CANDIDATES if _accepts(schema, r)]
    assert accepted == [CANDIDATES[i] for i in (0, 3, 5, 7, 12, 14)]
    assert all(parse_reply(r, view).ok for r in accepted)


# ---- memory --------------------------------------------------------------------------------------
def test_memory_is_bounded_and_round_trips_json():
    mem = memory_mod.AgentMemory(max_items=3, max_chars=10)
    for i in range(7):
        mem.add("user_1", f"step {i}: liked a very long thing")
    mem.add("user_2", "x")
    assert mem.get("user_1") == ["step 4: li", "step 5: li", "step 6: li"]
    back = memory_mod.AgentMemory.from_json(mem.to_json())
    assert back.get("user_1") == mem.get("user_1") and back.get("user_2") == ["x"]
    assert back.max_items == 3 and back.max_chars == 10
    back.add("user_1", "new")
    assert back.get("user_1")[-1] == "new" and len(back.get("user_1")) == 3
    assert memory_mod.AgentMemory(max_items=0).get("a") == []


# ---- prompt --------------------------------------------------------------------------------------
def test_system_message_is_identical_across_agents_and_user_part_differs():
    pb = prompt_mod.PromptBuilder(TWITTER_DEFAULT_ACTIONS)
    views = synth.synthetic_views(5, seed=7, step=3)
    msgs = [pb.messages(v) for v in views]
    assert len({m[0]["content"] for m in msgs}) == 1
    assert len({m[1]["content"] for m in msgs}) == 5
    for name in ("create_post", "like_post", "repost", "follow", "quote_post"):
        assert name in msgs[0][0]["content"]
    assert "dislike_comment" not in msgs[0][0]["content"]  # not in the Twitter action set


def test_feed_is_compact_and_complete():
    pb = prompt_mod.PromptBuilder()
    text = pb.user_message(_view())
    lines = text.split("\n")
    # author as u<id> (the handle "user5" only restates it); 1C left out: its one comment is shown
    assert "#17 u5 [3L 1R]: hello" in lines
    assert "#40 u6 (misleading): world" in lines
    assert "  quoting: q" in lines and "  c4 [1L]: hi" in lines and "  c8: a" in lines and "  c9 [2L]: b" in lines
    assert "Users:" not in text  # the only visible user is post 17's author, shown as u5
    assert any(line.startswith("Allowed now: do_nothing, create_post, like_post") for line in lines)
    assert "step 3: liked post 12" in text and "Now: Jan 1 08:15" in text
    listed = prompt_mod.PromptBuilder(comment_authors=True, system_prompt="S").user_message(_view())
    assert "  c4 @user9 [1L]: hi" in listed.split("\n")
    assert "Allowed now: do_nothing, create_post, like_post, follow, like_comment, quote_post" in listed


def test_texts_are_cut_and_comments_limited():
    long = "word " * 200
    v = _view()
    v["posts"][0]["text"] = long
    v["posts"][1]["top_comments"] = v["posts"][1]["top_comments"] * 3
    pb = prompt_mod.PromptBuilder(max_post_chars=50, comments_per_post=2)
    lines = pb.user_message(v).split("\n")
    first = next(line for line in lines if line.startswith("#17"))
    assert len(first.split(": ", 1)[1]) <= 50 and "…" in first
    assert sum(line.startswith("  c") for line in lines) == 1 + 2


def test_oasis_persona_fields_are_rendered():
    reddit = {
        "realname": "James Miller",
        "username": "millerhospitality",
        "bio": "Hospitality & tourism.",
        "persona": "James is a seasoned professional.",
        "age": 40,
        "gender": "male",
        "mbti": "ESTJ",
        "country": "UK",
        "profession": "Hospitality & Tourism",
        "interested_topics": ["Economics", "Business"],
    }
    v = {**_view(name=None, user_name=None), **reddit}
    text = prompt_mod.PromptBuilder(REDDIT_DEFAULT_ACTIONS).profile(v)
    assert text.startswith("You are James Miller (@millerhospitality).")
    for piece in ("seasoned professional", "Bio: Hospitality", "40", "male", "ESTJ", "UK", "Economics, Business"):
        assert piece in text
    twitter = _view(persona=None, user_char="Loves whiskey.", description="Software engineer")
    t = prompt_mod.PromptBuilder().profile(twitter)
    assert "Loves whiskey." in t and "Bio: Software engineer" in t


def test_custom_templates():
    v = _view()
    pb = prompt_mod.PromptBuilder(user_template="{name} (step {step}) {time}\n{memory}\n{feed}", system_prompt="SYS")
    m = pb.messages(v)  # view keys and section names ({time} is the rendered section)
    assert m[0]["content"] == "SYS" and m[1]["content"].startswith("Ann (step 5) Now: Jan 1 08:15\n")
    pb2 = prompt_mod.PromptBuilder(user_template=lambda view, sec: f"{view['agent']}|{sec['allowed']}")
    assert pb2.user_message(v).startswith("user_3|Allowed now:")
    empty = prompt_mod.PromptBuilder().user_message(_view(posts=[], users=[], memory=[]))
    assert "Your feed is empty." in empty and "Users:" not in empty and "\n\n" not in empty


def test_describe_uses_feed_ids():
    core = llm_module("core")
    v = _view()
    a = parse_reply('{"action":"like_comment","comment_id":9}', v).action
    assert core.describe(a, v) == "step 5: like_comment comment 9"
    a = parse_reply('{"action":"quote_post","post_id":40,"text":"so true","stance":1}', v).action
    assert core.describe(a, v) == "step 5: quote_post post 40: so true"
    assert ACTION_NAMES[0] in core.describe(parse_reply("", v).action, v)
