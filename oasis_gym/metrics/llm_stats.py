"""Rates of the LLM users' summed call statistics, for TensorBoard and the run summary."""

from __future__ import annotations

from collections.abc import Mapping


def llm_rates(totals: Mapping[str, float]) -> dict[str, float]:
    """Rates of summed LLM-policy stats (the keys of ``LLMPolicyCore.decide``'s stats):
    ``completion_tokens_per_s`` and ``decisions_per_s`` over the decision time
    (``latency_s``: prompts, generation and parsing), and ``prefix_cache_hit_rate``, the share
    of prompt tokens the backend served from its prefix cache (only when it reports them)."""
    out: dict[str, float] = {}
    if totals.get("latency_s"):
        out["completion_tokens_per_s"] = totals.get("completion_tokens", 0.0) / totals["latency_s"]
        out["decisions_per_s"] = totals.get("agents", 0.0) / totals["latency_s"]
    if "backend_cached_prompt_tokens" in totals and totals.get("prompt_tokens"):
        out["prefix_cache_hit_rate"] = totals["backend_cached_prompt_tokens"] / totals["prompt_tokens"]
    return out
