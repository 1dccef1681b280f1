"""LLM users on a GPU (e.g. an NVIDIA H200 whose image has torch and transformers but no vLLM
and no network): a model of a REAL architecture with random weights, built on the machine,
through the transformers backend; 1k agents x 3 steps of synthetic feed views.

Prints ONE JSON line: decisions/s, prompt tokens per decision, invalid rate, and the same
prompts sent raw to `generate` (no schema, no parsing: our overhead is the difference).

    python bench/throughput/llm_gpu.py [--arch qwen2.5-1.5b|llama-3-8b|tiny] [--agents 1000] [--steps 3]

Random weights make the text meaningless but the timing real: the constrained decoder must
still turn every reply into a valid action. The tokenizer is a byte-level BPE trained here
on rendered prompts (no download), so token counts are close to, not equal to, the real
model's tokenizer. Needs xgrammar, tokenizers and this repo's package on the machine (a
device image without them takes their wheels, carried with the working tree).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
sys.path.insert(0, str(ROOT / "tests"))

ARCHS = {  # published configs of the real models (dims only; weights are random)
    "qwen2.5-1.5b": dict(
        kind="qwen2",
        vocab_size=151936,
        hidden_size=1536,
        intermediate_size=8960,
        num_hidden_layers=28,
        num_attention_heads=12,
        num_key_value_heads=2,
        rope_theta=1_000_000.0,
    ),
    "llama-3-8b": dict(
        kind="llama",
        vocab_size=128256,
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        rope_theta=500_000.0,
    ),
    "tiny": dict(
        kind="llama",
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        rope_theta=10_000.0,
    ),
}


def build_model(arch: str, out: Path, device: str) -> Path:
    import torch
    from llm_fixtures import build_tiny_model
    from transformers import (
        AutoTokenizer,
        GenerationConfig,
        LlamaConfig,
        LlamaForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    build_tiny_model(out)  # trains the tokenizer (and a throwaway tiny model) in `out`
    if arch == "tiny":
        return out
    spec = dict(ARCHS[arch])
    kind = spec.pop("kind")
    tok = AutoTokenizer.from_pretrained(out)
    eos, pad = tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")
    cls, cfg_cls = (Qwen2ForCausalLM, Qwen2Config) if kind == "qwen2" else (LlamaForCausalLM, LlamaConfig)
    # the real vocabulary size (the LM head is a real share of the compute); our tokenizer
    # uses the first ids, the rest are padding rows the grammar masks out
    cfg = cfg_cls(
        max_position_embeddings=8192,
        eos_token_id=eos,
        pad_token_id=pad,
        bos_token_id=None,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
        **spec,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = cls(cfg).to(torch.bfloat16)
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad)
    model.save_pretrained(out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", choices=sorted(ARCHS), default="qwen2.5-1.5b")
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--device", default=None)
    args = ap.parse_args()

    import torch

    from oasis_gym.actions import TWITTER_DEFAULT_ACTIONS
    from oasis_gym.policies import llm as L
    from oasis_gym.policies.llm.backends.transformers_backend import TransformersBackend
    from oasis_gym.policies.llm.sample_views import synthetic_views

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    t0 = time.perf_counter()
    model_dir = build_model(args.arch, Path(tempfile.mkdtemp(prefix="llm_gpu_")), device)
    backend = TransformersBackend(
        model_dir, device=device, dtype="bfloat16" if device == "cuda" else None, max_batch_size=args.batch
    )
    core = L.LLMPolicyCore(backend, action_set=TWITTER_DEFAULT_ACTIONS, temperature=0.7, seed=0)
    setup_s = time.perf_counter() - t0

    totals = {"decisions": 0, "prompt_tokens": 0, "completion_tokens": 0, "invalid": 0, "fallback": 0, "seconds": 0.0}
    prompts_last = None
    for step in range(args.steps):
        views = synthetic_views(args.agents, seed=step, step=step, allowed=list(TWITTER_DEFAULT_ACTIONS))
        t = time.perf_counter()
        _, stats = core.decide(views)
        totals["seconds"] += time.perf_counter() - t
        totals["decisions"] += stats["agents"]
        for k in ("prompt_tokens", "completion_tokens", "invalid", "fallback"):
            totals[k] += stats.get(k, 0)
        prompts_last = core.messages(views)

    # the same prompts, raw: chat template -> generate, no schema, no parsing
    tok = backend.tokenizer if hasattr(backend, "tokenizer") else None
    raw_s = None
    if tok is not None:
        model = backend.model
        new_tokens = max(1, totals["completion_tokens"] // max(totals["decisions"], 1))
        texts = [tok.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in prompts_last]
        t = time.perf_counter()
        for i in range(0, len(texts), args.batch):
            enc = tok(texts[i : i + args.batch], return_tensors="pt", padding=True).to(model.device)
            with torch.no_grad():
                model.generate(**enc, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
        raw_s = time.perf_counter() - t
    d = max(totals["decisions"], 1)
    print(
        json.dumps(
            {
                "bench": "llm_gpu",
                "arch": args.arch,
                "device": device,
                "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
                "agents": args.agents,
                "steps": args.steps,
                "setup_s": round(setup_s, 1),
                "decisions_per_s": round(totals["decisions"] / totals["seconds"], 2),
                "prompt_tokens_per_decision": round(totals["prompt_tokens"] / d, 1),
                "completion_tokens_per_decision": round(totals["completion_tokens"] / d, 1),
                "invalid_rate": round((totals["invalid"] + totals["fallback"]) / d, 4),
                "raw_generate_last_step_s": None if raw_s is None else round(raw_s, 2),
                "ours_last_step_s_estimate": round(totals["seconds"] / args.steps, 2),
                "pid": os.getpid(),
            }
        )
    )


if __name__ == "__main__":
    main()
