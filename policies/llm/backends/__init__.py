"""LLM backends behind one batched interface (see base.py). Heavy imports stay lazy."""

from .base import GenerationResult, LLMBackend

__all__ = ["GenerationResult", "LLMBackend", "OpenAIBackend", "TransformersBackend", "VLLMBackend"]


def __getattr__(name: str):
    if name == "OpenAIBackend":
        from .openai_backend import OpenAIBackend

        return OpenAIBackend
    if name == "TransformersBackend":
        from .transformers_backend import TransformersBackend

        return TransformersBackend
    if name == "VLLMBackend":
        from .vllm_backend import VLLMBackend

        return VLLMBackend
    raise AttributeError(name)
