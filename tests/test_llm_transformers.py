"""Transformers backend + LLMPolicyCore on a tiny random Llama built locally.

The model is random, so only constrained decoding can make its replies valid: these tests
check that every agent of a batch gets a valid action that targets only its own feed.
"""

from __future__ import annotations

import json

from llm_fixtures import llm_module

from oasis_gym.actions import ALL_ACTIONS, COMMENT_TARGET, POST_TARGET, USER_TARGET, ActionType

pytest_plugins = ["llm_fixtures"]

L = llm_module()
synth = llm_module("sample_views")

# Short strings keep the random model's generations (which run to the length bound) quick.
CFG = L.SchemaConfig(max_text_chars=24, max_query_chars=12, max_reason_chars=12)
MAX_TOKENS = 96


def _views(n=8, seed=11, **kw):
    kw.setdefault("n_posts", 4)
    kw.setdefault("n_users", 3)
    return synth.synthetic_views(n, seed=seed, allowed=[a for a in ALL_ACTIONS if a != ActionType.SIGN_UP], **kw)


def _core(backend, seed=5, **kw):
    return L.LLMPolicyCore(backend, schema_config=CFG, max_tokens=MAX_TOKENS, temperature=1.0, seed=seed, **kw)


def _own_targets_only(action: dict, view: dict) -> None:
    """The action's slots point into this agent's own view, at an id it saw."""
    t = ActionType(action["type"])
    posts = {p["slot"]: p for p in view["posts"]}
    if t in POST_TARGET:
        assert action["post"] in posts
    if t in COMMENT_TARGET:
        assert action["post"] in posts
        assert action["comment"] in {c["slot"] for c in posts[action["post"]]["top_comments"]}
    if t in USER_TARGET:
        assert action["user"] in {u["slot"] for u in view["users"]}


def test_constrained_batch_of_eight_is_fully_valid(tiny_backend):
    views = _views()
    # different feeds: no two agents see the same post ids
    assert len({tuple(p["post_id"] for p in v["posts"]) for v in views}) == len(views)
    core = _core(tiny_backend)
    actions, stats = core.decide(views)
    assert stats["agents"] == 8 and stats["valid"] == 8
    assert stats["invalid"] == 0 and stats["fallback"] == 0 and stats["length_stops"] == 0
    assert stats["prompt_tokens"] > 0 and stats["completion_tokens"] > 0
    for a, v in zip(actions, views):
        assert a["type"] in (int(x) for x in L.feasible_actions(v))
        _own_targets_only(a, v)
        assert set(a) == {"type", "post", "comment", "user", "text", "stance", "reason"}
        if a["stance"] is not None:
            assert -1.0 <= a["stance"] <= 1.0
    print("\ntiny model, 8 agents:", json.dumps({k: stats[k] for k in ("prompt_tokens", "completion_tokens")}))


def test_replies_name_only_ids_from_the_agents_own_feed(tiny_backend):
    views = _views(6, seed=12)
    msgs = [L.PromptBuilder(schema_config=CFG).messages(v) for v in views]
    schemas = [L.build_schema(v, CFG) for v in views]
    res = tiny_backend.generate(msgs, schemas, max_tokens=MAX_TOKENS, temperature=1.0, seed=3)
    assert res.errors == [None] * 6 and res.finish_reasons == ["stop"] * 6
    for text, v in zip(res.texts, views):
        obj = json.loads(text)
        ids = L.visible_ids(v)
        for key, pool in (("post_id", ids.posts), ("comment_id", ids.comments), ("user_id", ids.users)):
            if key in obj:
                assert obj[key] in pool
        assert L.parse_reply(text, v, CFG).ok


def test_same_seed_same_actions_and_new_seed_differs(tiny_backend):
    views = _views(4, seed=13)
    a1, _ = _core(tiny_backend, seed=21).decide(views)
    a2, _ = _core(tiny_backend, seed=21).decide(views)
    assert a1 == a2
    a3, _ = _core(tiny_backend, seed=22).decide(views)
    assert a3 != a1


def test_frequency_penalty_counts_reply_tokens_only():
    import torch

    tb = llm_module("backends.transformers_backend")
    ids = torch.tensor([[5, 5, 1, 1, 1], [2, 5, 3, 3, 0]])  # prompt width 2, then the reply
    scores = torch.zeros(2, 6)
    out = tb._FrequencyPenalty(0.5, prompt_width=2)(ids, scores)
    assert out.tolist() == [[0, -1.5, 0, 0, 0, 0], [-0.5, 0, 0, -1.0, 0, 0]]
    assert tb._FrequencyPenalty(0.5, prompt_width=5)(ids, scores).tolist() == scores.tolist()


def test_frequency_penalty_breaks_a_greedy_loop(tiny_backend):
    """The tiny random model's greedy free text repeats tokens; a penalty lowers the count of
    the most repeated one (and stays off when 0: same text as a call without it)."""
    msgs = [[{"role": "user", "content": "Say something."}]]
    tok = tiny_backend.tokenizer

    def top_repeat(**kw):
        text = tiny_backend.generate(msgs, [None], max_tokens=48, temperature=0.0, **kw).texts[0]
        ids = tok(text, add_special_tokens=False)["input_ids"]
        return text, max(ids.count(t) for t in set(ids))

    plain, plain_top = top_repeat()
    assert top_repeat(frequency_penalty=0.0)[0] == plain
    _, penalized_top = top_repeat(frequency_penalty=2.0)
    assert plain_top >= 4 and penalized_top < plain_top


def test_prefix_sharing_gives_the_same_greedy_output(tiny_model_dir):
    tb = llm_module("backends.transformers_backend")
    views = _views(3, seed=14)
    msgs = [L.PromptBuilder(schema_config=CFG).messages(v) for v in views]
    schemas = [L.build_schema(v, CFG) for v in views]
    outs = []
    for share in (False, True):
        be = tb.TransformersBackend(tiny_model_dir, device="cpu", share_prefix=share, min_shared_prefix=8)
        outs.append(be.generate(msgs, schemas, max_tokens=MAX_TOKENS, temperature=0.0).texts)
    assert outs[0] == outs[1]


def test_prompt_prefix_is_token_identical_across_agents(tiny_backend):
    """The shared system part tokenizes identically for every agent (prefix caching)."""
    views = _views(8, seed=15, n_posts=10)
    pb = L.PromptBuilder(schema_config=CFG)
    rendered = [tiny_backend.render(pb.messages(v)) for v in views]
    ids = [tiny_backend.tokenizer(r, add_special_tokens=False)["input_ids"] for r in rendered]
    system_ids = tiny_backend.tokenizer(
        tiny_backend.render([{"role": "system", "content": pb.system_prompt}, {"role": "user", "content": ""}]),
        add_special_tokens=False,
    )["input_ids"]
    common = 0
    while all(len(x) > common and x[common] == ids[0][common] for x in ids):
        common += 1
    # the whole system turn (up to the user's content) is shared, token for token
    user_start = len(
        tiny_backend.tokenizer(rendered[0][: rendered[0].index(pb.user_message(views[0]))], add_special_tokens=False)[
            "input_ids"
        ]
    )
    assert common >= user_start - 1 and user_start > 50
    assert all(x[: user_start - 1] == system_ids[: user_start - 1] for x in ids)
    print(f"\ntiny tokenizer: shared prefix {common} tokens, prompts {[len(x) for x in ids]} tokens (10 posts)")


def test_unconstrained_garbage_is_counted_not_crashing(tiny_backend):
    """Free text from the random model: every reply is invalid -> do_nothing, counted."""
    views = _views(4, seed=16)
    msgs = [L.PromptBuilder(schema_config=CFG).messages(v) for v in views]
    res = tiny_backend.generate(msgs, [None] * 4, max_tokens=16, temperature=1.0, seed=1)
    parsed = [L.parse_reply(t, v, CFG, finished=f != "length") for t, v, f in zip(res.texts, views, res.finish_reasons)]
    stats = L.ParseStats()
    for p in parsed:
        stats.add(p)
    assert stats.invalid == 4 and stats.ok == 0
    assert all(p.action["type"] == 0 and p.action["reason"].startswith("invalid: ") for p in parsed)


def test_interview_and_memory_round_trip(tiny_backend):
    views = _views(2, seed=17)
    core = _core(tiny_backend, memory_source="core")
    core.decide(views)
    core.decide([dict(v, step=v["step"] + 1) for v in views])
    mem = core.memory.get(views[0]["agent"])
    assert len(mem) == 2 and mem[0].startswith("step 0: ") and mem[1].startswith("step 1: ")
    answer = core.interview(views[0], "What do you think about the fare increase?")
    assert isinstance(answer, str)
    state = json.loads(json.dumps(core.state_dict()))
    twin = _core(tiny_backend, memory_source="core")
    twin.load_state_dict(state)
    assert twin.memory.get(views[0]["agent"]) == mem
    assert twin.decide(views)[0] == core.decide(views)[0]  # same rng state -> same decisions


def test_a_reset_starts_an_episode_that_depends_on_its_seed_only(tiny_backend):
    """`LLMPolicyCore.reset`: memory emptied, requests reseeded: an episode after another equals
    the same-seed episode of a fresh core (an env checker's same-seed reset relies on it)."""
    views = _views(2, seed=18)
    fresh = _core(tiny_backend, memory_source="core")
    fresh.reset(5)
    expected = fresh.decide(views)[0]
    used = _core(tiny_backend, memory_source="core")
    used.decide(views)
    used.decide([dict(v, step=v["step"] + 1) for v in views])
    used.reset(5)
    assert all(used.memory.get(v["agent"]) == [] for v in views)
    assert used.decide(views)[0] == expected
