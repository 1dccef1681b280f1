"""bench/research/transfer.py (issue 52's transfer table) run as a command at a tiny size: the
baselines tuned by the bench, the tiny random Llama of tests/llm_fixtures.py as the LLM users of
column c; and its bad input, one line and exit code 2 before any episode."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["llm_fixtures"]

BENCH = Path(__file__).resolve().parents[1] / "bench" / "research" / "transfer.py"
TINY = ["--tasks", "moderator", "--tiers", "hard", "--users", "64", "--steps", "3", "--seeds", "9000", "9001",
        "--tune-seeds", "5000", "--cem-iterations", "1", "--cem-population", "2", "--llm-share", "0.02"]  # fmt: skip
COLUMNS = ("a_fast", "b_platform_task_users", "c_platform_llm_users")


def _bench(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=timeout)


def test_the_table_has_every_column_and_the_platform_with_task_users_is_the_fast_path(tiny_model_dir):
    done = _bench(*TINY, "--llm-backend", "transformers", "--llm-model", str(tiny_model_dir))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    rows, summary = lines[:-1], lines[-1]
    policies = {r["policy"] for r in rows}
    assert {"no_moderation", "tuned_classifier"} <= policies and not any("privileged" in p for p in policies)
    assert len(rows) == 3 * len(policies) and {r["column"] for r in rows} == set(COLUMNS)
    by = {(r["policy"], r["column"]): r for r in rows}
    for name in policies:
        a, b, c = (by[name, column] for column in COLUMNS)
        assert b["b_equals_a"] is True and b["returns"] == a["returns"], name
        assert c["llm_users"] == 1 and len(c["returns"]) == 2 and all(map(math.isfinite, c["returns"]))
        assert all(math.isfinite(c["c_minus_a"][k]) for k in ("mean", "lo", "hi")), c
        assert a["seeds"] == b["seeds"] == c["seeds"] == [9000, 9001] and "load_avg_1m" in a
    table = summary["summary"]["moderator-v2 hard"]
    assert summary["b_equals_a"] is True and table["baselines"].startswith("tuned here (CEM 1 x 2 on seeds [5000]")
    assert (
        set(table["policies"]) == policies
        and -1 <= table["kendall_tau_a_c"] <= 1
        or math.isnan(table["kendall_tau_a_c"])
    )
    assert sorted(table["ranking_a"]) == sorted(table["ranking_c"]) == sorted(policies)
    assert table["ranking_holds"] == (table["ranking_a"] == table["ranking_c"])


def test_no_llm_plays_columns_a_and_b_only_and_loads_no_model():
    done = _bench(*TINY, "--no-llm", "--llm-backend", "transformers", "--llm-model", "/nonexistent/model")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    rows, summary = lines[:-1], lines[-1]
    assert {r["column"] for r in rows} == set(COLUMNS[:2]) and all(r["b_equals_a"] for r in rows[1::2])
    table = summary["summary"]["moderator-v2 hard"]
    assert summary["b_equals_a"] is True and "kendall_tau_a_c" not in table
    assert sorted(table["ranking_a"]) == sorted(table["policies"])


def test_a_train_runs_ppo_and_baselines_are_its_own(tiny_model_dir, tmp_path):
    run = tmp_path / "run"
    train = [sys.executable, "-m", "oasis_gym.cli", "train", "moderator", "--version", "2", "--difficulty", "hard",
             "--users", "64", "--max-steps", "3", "--timesteps", "40", "--n-envs", "2", "--n-steps", "10",
             "--batch-size", "20", "--cem-iterations", "1", "--cem-population", "2", "--eval-seeds", "9000", "9001",
             "--tune-seeds", "5000", "--out", str(run), "--quiet"]  # fmt: skip
    done = subprocess.run(train, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    args = ["--users", "64", "--steps", "3", "--seeds", "9000", "9001", "--llm-share", "0.02"]
    done = _bench(str(run), *args, "--llm-backend", "transformers", "--llm-model", str(tiny_model_dir))
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.splitlines()[-1])
    table = summary["summary"]["moderator-v2 hard"]
    assert "ppo" in table["policies"] and "no_moderation" in table["policies"]
    assert table["baselines"] == f"the run's ({run})" and summary["b_equals_a"] is True
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before  # the run is only read
    done = _bench(str(run), "--seeds", "5000", "5001", timeout=300)  # the run's tuning seeds are not held out
    assert done.returncode == 2 and "disjoint" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seeds", "9000"], "at least 2 distinct seeds"),
        (["--tasks", "recommender,curator"], "--tasks must be among"),
        (["--tiers", "extreme"], "--tiers must be among"),
        (["--llm-share", "1.5"], "--llm-share"),
        (["--llm-share", "0"], "--llm-share"),
        (["--users", "3"], "--users"),
        (["--population", "0"], "--population"),
        (["--seeds", "5000", "5001"], "disjoint"),
        (["--llm-endpoint", "http://localhost:1/v1"], "--llm-endpoint needs --llm-backend openai"),
        (["--llm-backend", "openai"], "endpoint"),
        (["/nonexistent/run"], "no run of oasis-gym train or benchmark here"),
        (["/nonexistent/run", "--tasks", "moderator"], "--tasks and --tiers are for a run without RUN"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2_before_any_episode(args, message):
    done = _bench(*args, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert message in done.stderr, done.stderr
