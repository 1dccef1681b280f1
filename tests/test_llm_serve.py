"""A real OpenAI-compatible server: ``transformers serve`` hosting the tiny random Llama.

``transformers serve`` (5.x) ignores ``response_format`` (it logs "Ignoring unsupported
fields"), so the random model answers free text: this exercises the client's unconstrained
path end to end — garbage in, do_nothing + counters out, nothing crashes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest
from llm_fixtures import llm_module

pytest_plugins = ["llm_fixtures"]

L = llm_module()
OpenAIBackend = llm_module("backends.openai_backend").OpenAIBackend
synth = llm_module("sample_views")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tiny_model_dir, tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    cmd = [
        sys.executable,
        "-m",
        "transformers.cli.transformers",
        "serve",
        str(tiny_model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
        "--log-level",
        "warning",
    ]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600  # only catches a hang (a loaded 2-core machine: minutes)
        while True:
            if proc.poll() is not None:
                break
            try:
                if httpx.get(url + "/health", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("transformers serve did not come up:\n" + log.read_text()[-3000:])
            time.sleep(0.5)
        if proc.poll() is not None:
            pytest.fail("transformers serve exited:\n" + log.read_text()[-3000:])
        yield url + "/v1", str(tiny_model_dir)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_unconstrained_server_garbage_becomes_counted_do_nothing(served):
    url, model = served
    be = OpenAIBackend(url, model=model, structured="response_format", request_timeout=300.0, max_retries=1)
    core = L.LLMPolicyCore(be, max_tokens=16, temperature=1.0, seed=4)
    views = synth.synthetic_views(3, seed=9, n_posts=3, n_users=2)
    actions, stats = core.decide(views)
    assert stats["agents"] == 3 and stats["fallback"] == 0  # the server answered ...
    assert stats["invalid"] == 3 and stats["valid"] == 0  # ... with free text, not actions
    assert stats["prompt_tokens"] > 0 and stats["completion_tokens"] > 0
    assert all(a["type"] == 0 and a["reason"].startswith("invalid: ") for a in actions)
    assert sum(v for k, v in stats.items() if k.startswith("invalid_")) == 3


def test_interview_over_http_returns_text(served):
    url, model = served
    core = L.LLMPolicyCore(OpenAIBackend(url, model=model, request_timeout=300.0), interview_max_tokens=8)
    view = synth.synthetic_views(1, seed=2, n_posts=2)[0]
    answer = core.interview(view, "Do you trust the news you read here?")
    assert isinstance(answer, str)
