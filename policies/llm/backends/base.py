"""The one interface every LLM backend implements.

Why batched: a simulation step has hundreds of LLM agents; each backend gets all of their
conversations in one call and is free to batch (transformers), schedule (vLLM) or fan out
concurrently (OpenAI-compatible endpoints). ``schemas[i]`` is the JSON schema that reply
``i`` must follow, or None for free text (interviews).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Messages = list[dict[str, str]]


@dataclass
class GenerationResult:
    """Replies plus per-request token stats, in request order.

    ``finish_reasons[i]`` is "stop" (ended on a stop token / schema completion), "length"
    (hit ``max_tokens``) or "error" (no reply: the request failed after retries; then
    ``errors[i]`` says why and ``texts[i]`` is "").
    """

    texts: list[str]
    prompt_tokens: list[int]
    completion_tokens: list[int]
    finish_reasons: list[str]
    errors: list[str | None]
    latency_s: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def failed(cls, n: int, error: str, latency_s: float = 0.0) -> GenerationResult:
        """A result in which all ``n`` requests failed with ``error``."""
        return cls([""] * n, [0] * n, [0] * n, ["error"] * n, [error] * n, latency_s)

    def __len__(self) -> int:
        return len(self.texts)


@runtime_checkable
class LLMBackend(Protocol):
    """generate(conversations, schemas, *, max_tokens, temperature, seed, frequency_penalty)
    -> GenerationResult.

    ``frequency_penalty`` (OpenAI's sampling parameter): subtracted from a token's logit once per
    time the token already occurs in this reply; it breaks the degenerate loops small models fall
    into (digit runs, one emoji repeated up to the token limit). A backend whose ``generate`` has
    no such parameter still works: `LLMPolicyCore` then warns once and sends none."""

    name: str

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
        """One reply per conversation, constrained by ``schemas[i]`` (None: free text)."""
        ...


def check_batch(conversations: list[Messages], schemas: list[dict | None]) -> None:
    """Raise ValueError unless there is one schema per conversation."""
    if len(conversations) != len(schemas):
        raise ValueError(f"{len(conversations)} conversations but {len(schemas)} schemas")
