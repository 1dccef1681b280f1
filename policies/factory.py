"""User policies built from settings: the one home of the command line's ``--policy`` and
``--llm-*`` flags and of a scenario's ``[policy.llm]`` table.

The LLM policy's modules import no optional package at module level (its backends import
torch, transformers, vLLM or httpx inside their functions); a missing extra or a backend
that cannot start is a `ConfigError` saying how to run without an LLM.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from oasis_gym.errors import ConfigError

from .abm import ABMPolicy
from .base import RandomPolicy
from .hybrid import HybridPolicy
from .llm.defaults import LazyBackend, check_available
from .llm_policy import LLMPolicy, backend_label, make_backend

USER_POLICIES = ("hybrid", "abm", "random", "llm")


def llm_backend(
    kind: str = "auto",
    *,
    model: str | None = None,
    endpoints: list[str] | None = None,
    without_llm: str = "--policy abm",
    announce: bool = False,
    **options,
):
    """A generation backend (`llm_policy.make_backend`: "auto", "vllm", "transformers" or
    "openai"); `options` go to the backend (timeouts, device, ...). `without_llm` is the
    setting the error messages suggest; `announce` prints the backend and model to stderr."""
    try:
        backend = make_backend(kind, model=model, endpoints=endpoints, **options)
    except (ImportError, RuntimeError, FileNotFoundError) as err:
        raise _unavailable(err, without_llm) from err
    if announce:
        print(f"LLM users: {backend_label(backend)}", file=sys.stderr, flush=True)
    return backend


def _unavailable(err: Exception, without_llm: str) -> ConfigError:
    return ConfigError(f"no LLM backend available: {err}. Run without an LLM: {without_llm}")


def on_first_use(
    kind: str,
    start: Callable[[], Any],
    *,
    prepare: Callable[[], Any] | None = None,
    model: str | None = None,
    without_llm: str = "--policy abm",
):
    """The backend `start()` makes (`llm_backend`), made at the first LLM decision after
    `prepare()` (`LazyBackend`): a run whose LLM users never act starts no engine. What it needs
    is checked now (a missing package is a `ConfigError`, before the run); an OpenAI-compatible
    endpoint, which has no engine to start, is made now."""
    if kind == "openai":
        return start()
    try:
        check_available(kind, model)
    except (ImportError, FileNotFoundError) as err:
        raise _unavailable(err, without_llm) from err
    return LazyBackend(start, prepare)


def llm_policy(backend, **options):
    """`LLMPolicy` over `backend` (a backend object, or a kind for `llm_backend`); `options`
    go to the policy (temperature, step_deadline_s, ...)."""
    if isinstance(backend, str):
        backend = llm_backend(backend)
    return LLMPolicy(backend, **options)


def user_policy(kind: str, *, llm: Callable[[], Any] | None = None, abm=None, core_ids=None):
    """The users' policy of a kind in `USER_POLICIES`: "abm" (`abm`, default `ABMPolicy()`),
    "random", "llm" (`llm()`, default `llm_policy("auto")`) or "hybrid": the LLM drives the
    users `core_ids`, the ABM everyone else."""
    if kind not in USER_POLICIES:
        raise ConfigError(f"unknown policy {kind!r}: choose from {', '.join(USER_POLICIES)}")
    if kind == "random":
        return RandomPolicy()
    if kind == "abm":
        return abm if abm is not None else ABMPolicy()
    model = llm() if llm is not None else llm_policy("auto")
    if kind == "llm":
        return model
    if core_ids is None:
        raise ConfigError("a hybrid policy needs the ids of its LLM users (core_ids)")
    rest = abm if abm is not None else ABMPolicy()
    return HybridPolicy([(model, np.asarray(core_ids, dtype=np.int64))], default=rest)
