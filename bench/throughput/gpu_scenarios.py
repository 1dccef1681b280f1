"""The paper scenarios with LLM users at paper size on a GPU (transformers backend); one JSON
line per scenario run. Prepared for a GPU machine; CPU only for a smoke test (--tiny).

    python bench/throughput/gpu_scenarios.py                          # all four, SmolLM2-135M (shipped weights)
    python bench/throughput/gpu_scenarios.py --random-weights         # a random SmolLM2-shaped model: TIMING ONLY
    python bench/throughput/gpu_scenarios.py spread herd --model /path/to/model
    python bench/throughput/gpu_scenarios.py --tiny --device cpu      # smoke test: tiny random model, 2 steps

Paper sizes (OASIS arXiv:2411.11581): information spread 111 users, all LLM (policy "llm");
group polarization 2 x 196 users, all LLM; herd effect 36 users, all LLM; misinformation
GPU_MISINFO_USERS users (default 100000; the paper: 1M) with the 196 core users LLM and the
rest ABM (policy "hybrid"). Environment: GPU_SCENARIO_STEPS caps the steps (default: each
scenario's), GPU_MISINFO_USERS.

Every line says which weights were used: with --random-weights (or --tiny) the model's
decisions are noise, so its figures are for timing only and say nothing about LLM users.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from oasis_gym.scenarios import load_scenario
from oasis_gym.scenarios.effects import effects

SIZES = {
    "spread": ("twitter_information_spread", {"policy.kind": "llm"}),
    "polarization": ("group_polarization", {"policy.kind": "llm"}),
    "herd": ("reddit_herd_effect", {"policy.kind": "llm", "users": 36}),
    "misinfo": ("misinformation_1m", {"policy.kind": "hybrid", "policy.core_users": 196}),
}


def random_model(out: Path, tiny: bool) -> Path:
    """A random-weight Llama with the tests' tokenizer: SmolLM2-135M's shape, or a 2-layer toy."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    import torch
    from llm_fixtures import build_tiny_model
    from transformers import LlamaConfig, LlamaForCausalLM

    build_tiny_model(out)
    if tiny:
        return out
    cfg = LlamaConfig.from_pretrained(out)
    cfg.update(
        {
            "hidden_size": 576,
            "intermediate_size": 1536,
            "num_hidden_layers": 30,
            "num_attention_heads": 9,
            "num_key_value_heads": 3,
            "head_dim": 64,
        }
    )
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(out)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("which", nargs="*", help=f"some of {', '.join(SIZES)} (default: all four)")
    ap.add_argument("--model", default=None, help="model directory (default: SmolLM2-135M-Instruct, shipped)")
    ap.add_argument("--random-weights", action="store_true", help="random SmolLM2-shaped model: timing only")
    ap.add_argument("--tiny", action="store_true", help="smoke test: 2-layer random model, 2 steps, small sizes")
    ap.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    ap.add_argument("--dtype", default=None, help="e.g. bfloat16")
    args = ap.parse_args(argv)
    unknown = sorted(set(args.which) - set(SIZES))
    if unknown:
        ap.error(f"unknown scenario {', '.join(unknown)}: choose from {', '.join(SIZES)}")
    if args.tiny:  # tiny matmuls: more threads only oversubscribe a CPU
        import torch

        torch.set_num_threads(1)
    tmp = tempfile.mkdtemp(prefix="gpu_scenarios_")
    weights = "shipped SmolLM2-135M-Instruct (real weights, a 135M model)"
    model = args.model
    if args.model:
        weights = f"{args.model} (as given)"
    elif args.random_weights or args.tiny:
        model = str(random_model(Path(tmp) / "model", args.tiny))
        weights = "RANDOM weights: timing only, the figures say nothing about LLM users"
    steps_cap = int(os.environ.get("GPU_SCENARIO_STEPS", 2 if args.tiny else 0)) or None
    for key in args.which or list(SIZES):
        name, sets = SIZES[key]
        sets = dict(sets)
        if key == "misinfo":
            sets["users"] = 2000 if args.tiny else int(os.environ.get("GPU_MISINFO_USERS", 100_000))
        if args.tiny:
            sets.update({"policy.kind": "hybrid", "policy.core_users": 2})
        backend_opts = {k: v for k, v in (("device", args.device), ("dtype", args.dtype)) if v}
        sc = load_scenario(
            name,
            {
                **sets,
                "metrics.enabled": False,
                "policy.llm.backend": "transformers",
                "policy.llm.model": model or "",
                "policy.llm.backend_options": backend_opts,
            },
        )
        steps = min(sc.steps, steps_cap) if steps_cap else sc.steps
        t = time.perf_counter()
        f = sc.run(steps=steps, db_path=os.path.join(tmp, f"{name}.db"))
        print(
            json.dumps(
                {
                    "bench": "gpu_scenario",
                    "scenario": name,
                    "weights": weights,
                    "policy": sc.config["policy"]["kind"],
                    "users": f["run"]["users"],
                    "steps": f["run"]["steps"],
                    "wall_s": round(time.perf_counter() - t, 1),
                    "run_s": f["run"]["run_s"],
                    "s_per_step": round(f["run"]["run_s"] / max(f["run"]["steps"], 1), 2),
                    "actions": f["run"]["actions"],
                    "effects": {k: (None if v != v else round(v, 4)) for k, v in effects(sc.kind, f).items()},
                },
                default=str,
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
