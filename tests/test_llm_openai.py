"""OpenAI-compatible client against a real local HTTP server that misbehaves on purpose.

The server (http.server on 127.0.0.1, bounded sleeps, stops with the fixture) answers per
URL prefix: ok, garbage body, garbage content, 400, 500, 429, flaky 503, timeout, slow drip.
A closed port stands for an endpoint that is down. Assertions are on counts and outcomes
(attempts, retries, fallbacks), never on wall-clock durations; a thread join with a generous
limit only guards against a hang.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from llm_fixtures import guarded, llm_module

L = llm_module()
OpenAIBackend = llm_module("backends.openai_backend").OpenAIBackend
synth = llm_module("sample_views")

VALID = '{"action":"do_nothing","reason":"ok"}'


class _FaultServer:
    def __init__(self) -> None:
        self.hits: Counter = Counter()
        self.bodies: list[dict] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # keep test output clean
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                mode = self.path.strip("/").split("/")[0]
                with outer.lock:
                    outer.hits[mode] += 1
                    outer.hits[(mode, body.get("seed"))] += 1
                    outer.bodies.append(body)
                    nth = outer.hits[(mode, body.get("seed"))]
                outer.respond(self, mode, nth)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.port}/{mode}/v1"

    @staticmethod
    def _send(h, status: int, payload: bytes, headers: dict | None = None) -> None:
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(payload)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(payload)

    @staticmethod
    def completion(content: str, finish: str = "stop") -> bytes:
        return json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": content}}
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7},
            }
        ).encode()

    def respond(self, h, mode: str, nth: int) -> None:
        if mode == "ok":
            self._send(h, 200, self.completion(VALID))
        elif mode == "garbage":
            self._send(h, 200, b"<html>definitely not json")
        elif mode == "badcontent":
            self._send(h, 200, self.completion("Sure! I would like that post :)"))
        elif mode == "cut":
            self._send(h, 200, self.completion('{"action":"do_no', finish="length"))
        elif mode == "e400":
            self._send(h, 400, b'{"error":"response_format not supported"}')
        elif mode == "e500":
            self._send(h, 500, b'{"error":"boom"}')
        elif mode == "e429":
            self._send(h, 429, b'{"error":"slow down"}', {"retry-after": "0"})
        elif mode == "flaky":  # two 503s per request, then success
            if nth <= 2:
                self._send(h, 503, b'{"error":"warming up"}')
            else:
                self._send(h, 200, self.completion(VALID))
        elif mode == "timeout":
            self.stop.wait(5.0)
            if not self.stop.is_set():
                self._send(h, 200, self.completion(VALID))
        elif mode == "drip":  # headers at once, then one byte every 0.1 s for up to 5 s
            payload = self.completion(VALID)
            h.send_response(200)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(payload)))
            h.end_headers()
            for i in range(min(len(payload), 50)):
                if self.stop.wait(0.1):
                    return
                try:
                    h.wfile.write(payload[i : i + 1])
                    h.wfile.flush()
                except OSError:
                    return

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server():
    s = _FaultServer()
    yield s
    s.close()


def _dead_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens here now: connections are refused
    return f"http://127.0.0.1:{port}/v1"


def _backend(urls, **kw) -> OpenAIBackend:
    kw.setdefault("max_retries", 2)
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("backoff_max", 0.05)
    # generous: on a loaded machine a healthy reply can take over a second, and a timed-out
    # attempt would be retried and counted; tests of the timeout itself set their own
    kw.setdefault("request_timeout", 30.0)
    kw.setdefault("connect_timeout", 0.5)
    return OpenAIBackend(urls, model="tiny", **kw)


def _views(n=4, seed=1):
    return synth.synthetic_views(n, seed=seed, n_posts=3, n_users=2)


def _msgs(views):
    return [L.PromptBuilder().messages(v) for v in views]


def test_ok_endpoint_with_response_format(server):
    views = _views()
    core = L.LLMPolicyCore(_backend(server.url("ok")), seed=3)
    actions, stats = core.decide(views)
    assert stats["valid"] == 4 and stats["fallback"] == 0 and stats["invalid"] == 0
    assert stats["prompt_tokens"] == 4 * 11 and stats["completion_tokens"] == 4 * 7
    body = server.bodies[0]
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == "action"
    assert rf["json_schema"]["strict"] is True and "anyOf" in rf["json_schema"]["schema"]
    assert body["messages"][0]["role"] == "system" and body["model"] == "tiny" and "max_tokens" in body
    assert len({b["seed"] for b in server.bodies}) == 4  # one seed per agent
    assert {b["frequency_penalty"] for b in server.bodies} == {0.5}  # the core's default


def test_frequency_penalty_is_sent_only_when_set(server):
    views = _views(2)
    L.LLMPolicyCore(_backend(server.url("ok")), seed=3, frequency_penalty=1.25).decide(views)
    L.LLMPolicyCore(_backend(server.url("ok")), seed=3, frequency_penalty=0).decide(views)
    assert [b.get("frequency_penalty") for b in server.bodies] == [1.25, 1.25, None, None]


def test_vllm_structured_outputs_field(server):
    be = _backend(server.url("ok"), structured="structured_outputs")
    views = _views(2)
    schemas = [L.build_schema(v) for v in views]
    res = be.generate(_msgs(views), schemas, max_tokens=32, seed=10)
    assert res.errors == [None, None]
    for body, schema in zip(sorted(server.bodies, key=lambda b: b["seed"]), schemas):
        assert body["structured_outputs"] == {"json": schema} and "response_format" not in body
    free = _backend(server.url("ok"), structured="none")
    free.generate(_msgs(views), schemas, max_tokens=32)
    assert all("response_format" not in b and "structured_outputs" not in b for b in server.bodies[2:])


@pytest.mark.parametrize("mode,kind", [("e500", "http_500"), ("e429", "http_429")])
def test_retryable_status_is_retried_a_bounded_number_of_times(server, mode, kind):
    be = _backend(server.url(mode), max_retries=2)
    res = guarded(lambda: be.generate(_msgs(_views(3)), [None] * 3, max_tokens=8, seed=100))
    assert res.errors == [f"retries_exhausted:{kind}"] * 3
    assert server.hits[mode] == 3 * 3  # 1 try + 2 retries each
    assert res.stats["attempts"] == 9 and res.stats["retries"] == 6 and res.stats[f"err_{kind}"] == 9


def test_flaky_endpoint_recovers_after_retries(server):
    be = _backend(server.url("flaky"), max_retries=3)
    core = L.LLMPolicyCore(be)
    actions, stats = core.decide(_views(3))
    assert stats["valid"] == 3 and stats["fallback"] == 0
    assert stats["backend_retries"] == 6 and stats["backend_err_http_503"] == 6


@pytest.mark.parametrize("mode", ["timeout", "drip"])
def test_slow_endpoints_are_cut_by_the_request_timeout(server, mode):
    """Each attempt is bounded by request_timeout even when bytes keep trickling in."""
    be = _backend(server.url(mode), max_retries=1, request_timeout=0.3)
    core = L.LLMPolicyCore(be)
    actions, stats = guarded(lambda: core.decide(_views(2)))
    assert stats["fallback"] == 2 and stats["valid"] == 0
    assert stats["backend_err_timeout"] == 4 and server.hits[mode] == 4
    assert all(a["type"] == 0 and "retries_exhausted:timeout" in a["reason"] for a in actions)


def test_call_deadline_bounds_the_whole_call(server):
    be = _backend(server.url("timeout"), max_retries=5, request_timeout=3.0, call_timeout=0.5)
    res = guarded(lambda: be.generate(_msgs(_views(2)), [None] * 2, max_tokens=8))
    assert res.errors == ["deadline", "deadline"] and res.finish_reasons == ["error", "error"]


def test_non_retryable_and_garbage_responses_fall_back_once(server):
    for mode, kind in (("e400", "http_400"), ("garbage", "bad_response")):
        be = _backend(server.url(mode), max_retries=3)
        core = L.LLMPolicyCore(be)
        actions, stats = core.decide(_views(2))
        assert stats["fallback"] == 2 and stats[f"backend_err_{kind}"] == 2
        assert server.hits[mode] == 2  # not retried
        assert all(a["type"] == 0 and kind in a["reason"] for a in actions)


def test_garbage_content_is_invalid_not_fallback(server):
    core = L.LLMPolicyCore(_backend(server.url("badcontent")))
    actions, stats = core.decide(_views(3))
    assert stats["invalid"] == 3 and stats["invalid_not_json"] == 3 and stats["fallback"] == 0
    core2 = L.LLMPolicyCore(_backend(server.url("cut")))
    _, stats2 = core2.decide(_views(2))
    assert stats2["invalid_truncated"] == 2 and stats2["length_stops"] == 2


def test_endpoint_down_run_continues(server):
    be = _backend(_dead_url(), max_retries=2)
    core = L.LLMPolicyCore(be)
    actions, stats = guarded(lambda: core.decide(_views(3)))
    assert stats["fallback"] == 3 and stats["backend_err_connect"] == 9
    assert all("retries_exhausted:connect" in a["reason"] for a in actions)
    # next step, same core: still returns, still counted
    _, stats2 = guarded(lambda: core.decide(_views(2)))
    assert stats2["fallback"] == 2 and core.totals["fallback"] == 5


def test_dead_endpoint_is_avoided_and_requests_succeed(server):
    dead = _dead_url()
    # generous timeouts: on a loaded machine a healthy reply may take over the 0.5 s default,
    # and a retried request would count twice
    be = _backend([dead, server.url("ok")], max_retries=3, endpoint_cooldown=60.0, request_timeout=30.0)
    core = L.LLMPolicyCore(be)
    actions, stats = core.decide(_views(8))
    assert stats["valid"] == 8 and stats["fallback"] == 0
    per = {e["url"]: e for e in be.endpoint_stats()}
    dead_ep = per[dead + "/chat/completions"]
    assert dead_ep["failures"] == dead_ep["requests"] >= 1
    assert server.hits["ok"] == 8
    # the benched endpoint gets no new traffic while cooling down
    before = dead_ep["requests"]
    core.decide(_views(4))
    assert {e["url"]: e for e in be.endpoint_stats()}[dead + "/chat/completions"]["requests"] == before


def test_requests_are_spread_over_healthy_endpoints(server):
    other = _FaultServer()
    try:
        be = _backend([server.url("ok"), other.url("ok")], max_concurrency=2)  # no retries
        res = be.generate(_msgs(_views(12)), [None] * 12, max_tokens=8)
        assert res.errors == [None] * 12
        assert server.hits["ok"] + other.hits["ok"] == 12
        # least-loaded: the two requests first in flight are on different endpoints, so both
        # serve (how many each gets after that depends on which answers first: timing)
        assert server.hits["ok"] >= 1 and other.hits["ok"] >= 1
    finally:
        other.close()
    # the balancing rule itself, without timing: a busy endpoint is passed over, equal loads rotate
    busy = be._pick(None)
    assert be._pick(None) is not busy
    for ep in be.endpoints:
        while ep.in_flight:
            be._release(ep, None)
    first = be._pick(None)
    be._release(first, None)
    second = be._pick(None)
    be._release(second, None)
    assert first is not second


def test_generate_works_inside_a_running_event_loop(server):
    be = _backend(server.url("ok"))

    async def inside():
        return be.generate(_msgs(_views(2)), [None] * 2, max_tokens=8)

    res = asyncio.run(inside())
    assert res.texts == [VALID, VALID]
