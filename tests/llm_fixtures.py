"""Fixtures for the LLM-layer tests: a tiny random Llama built locally (no downloads).

Imported by tests/test_llm_*.py with ``from llm_fixtures import ...`` (pytest's rootdir
conftest-less "prepend" import mode puts tests/ on sys.path). The model is random, so its
free-text output is garbage — exactly what the unconstrained paths must survive — while
constrained decoding must still turn it into valid actions.

PYTEST_DONT_REWRITE (this module is imported by the tests before pytest loads it as a plugin
via ``pytest_plugins``; the marker keeps pytest from warning about assertion rewriting).
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path

import pytest

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_CORPUS = [
    "You are a user of a social media platform. Reply with one JSON object.",
    '{"action":"like_post","post_id":17,"reason":"funny"}',
    '{"action":"create_post","text":"hello world","stance":0.5,"reason":"share news"}',
    '{"action":"follow","user_id":205,"reason":"interesting"}',
    "post 17 @user5: The new policy on city transport is finally out (3 likes, 1 repost)",
    "  comment 4 @user9: I disagree with this, the fare increase is too much.",
    "do_nothing refresh trend search_posts search_user create_post repost quote_post follow",
    "unfollow mute unmute like_post unlike_post dislike_post undo_dislike_post create_comment",
    "like_comment unlike_comment dislike_comment undo_dislike_comment report_post stance reason",
    "0123456789 -1 0.25 0.5 1 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ .,;:!?'\"()[]{}",
    "Scientists published a study on sleep, coffee and memory that got shared widely online.",
]


def llm_module(name: str = ""):
    """Import oasis_gym.policies.llm[.name] (before the editable install, policies.llm); the
    feed-view fixtures shared with the benchmarks are ``llm_module("sample_views")``."""
    suffix = f".{name}" if name else ""
    try:
        return importlib.import_module(f"oasis_gym.policies.llm{suffix}")
    except ModuleNotFoundError:
        return importlib.import_module(f"policies.llm{suffix}")


def _prompt_corpus() -> list[str]:
    """Rendered prompts of a few synthetic agents, so the BPE merges fit our prompt format."""
    synth, prompt = llm_module("sample_views"), llm_module("prompt")
    pb = prompt.PromptBuilder()
    texts = []
    for v in synth.synthetic_views(6, seed=123, step=2):
        texts.extend(m["content"] for m in pb.messages(v))
    return texts


def build_tiny_model(out: Path, seed: int = 0) -> Path:
    """Byte-level BPE tokenizer (trained here) + random 2-layer Llama, saved to ``out``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2048,
        special_tokens=special,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_CORPUS * 4 + _prompt_corpus(), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHATML
    fast.save_pretrained(out)

    eos, pad = fast.convert_tokens_to_ids("<|im_end|>"), fast.convert_tokens_to_ids("<|endoftext|>")
    cfg = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,
        max_position_embeddings=4096,
        bos_token_id=None,
        eos_token_id=eos,
        pad_token_id=pad,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad)
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny_llama"))


@pytest.fixture(scope="session")
def tiny_backend(tiny_model_dir):
    tb = llm_module("backends.transformers_backend")
    return tb.TransformersBackend(tiny_model_dir, device="cpu", compile_threads=2)


HANG_S = 300.0  # a bound that only catches a hang: generous on a loaded 2-core machine


def guarded(fn, limit: float = HANG_S):
    """Run `fn` in a thread and return what it returns; fail (instead of hanging the suite) if
    it has not returned within `limit` seconds."""
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("out", fn()), daemon=True)
    t.start()
    t.join(limit)
    assert not t.is_alive(), f"did not return within {limit} s"
    return box["out"]
