"""bench/throughput/train_speed.py (issue 57): `oasis-gym train`'s PPO path timed and split into
env / adapter / SB3 rollout / gradient updates, and its vector env alone, beside a commit's code;
bad flags exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")

BENCH = Path(__file__).resolve().parents[1] / "bench" / "throughput" / "train_speed.py"


def test_the_train_speed_bench_splits_the_time_beside_a_baseline_and_leaves_nothing_behind(tmp_path):
    """Two measurements (the baseline commit's code and the checkout's), then one line of both
    medians; every part's share in [0, 1], together the training time; the temporary outputs
    and the baseline's exported tree are removed."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    argv = [sys.executable, str(BENCH), "--tasks", "moderator-v1:easy", "--users", "100", "--n-envs", "4",
            "--timesteps", "256", "--env-steps", "5", "--baseline", "HEAD"]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)  # catches a hang only
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.strip().splitlines()]
    assert [r.get("code") for r in rows] == ["HEAD", "checkout", None]
    for r in rows[:2]:
        assert (r["task"], r["tier"], r["users"], r["n_envs"], r["timesteps"]) == ("moderator-v1", "easy", 100, 4, 256)
        assert r["torch_threads"] == 1 and r["timesteps_per_s"] > 0
        assert all(0 <= share <= 1 for share in r["share"].values())
        assert 0.5 < sum(r["share"].values()) <= 1.001  # the rest: SB3's own bookkeeping between rollouts
        assert r["env_share"] + r["learner_share"] == pytest.approx(sum(r["share"].values()), abs=0.003)
        assert r["env_steps"] == 5 and r["env_timesteps_per_s"] == pytest.approx(4 * r["env_steps_per_s"], rel=0.01)
        assert r["env_cpu_ms_per_step"] > 0
    for key in ("median_timesteps_per_s", "median_env_steps_per_s", "median_env_cpu_ms_per_step"):
        assert set(rows[2][key]) == {"HEAD", "checkout"}
    assert rows[2]["ratio"] > 0 and rows[2]["env_ratio"] > 0 and len(rows[2]["load"]) == 2
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("torchinductor_")] == []  # torch's cache


def test_the_train_speed_bench_measures_the_vector_env_alone_with_env_only():
    """--env-only: no training, one line with the vector env's steps/s and CPU per step."""
    argv = [sys.executable, str(BENCH), "--tasks", "recommender-v3:easy", "--users", "100", "--n-envs", "4",
            "--env-only", "--env-steps", "5"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)  # catches a hang only
    assert done.returncode == 0, done.stderr[-2000:]
    (row,) = [json.loads(line) for line in done.stdout.strip().splitlines()]
    assert (row["task"], row["tier"], row["n_envs"], row["env_steps"]) == ("recommender-v3", "easy", 4, 5)
    assert "timesteps_per_s" not in row and row["env_steps_per_s"] > 0 and row["code"] == "checkout"


@pytest.mark.parametrize(
    "bad",
    [
        ["--tasks", "moderator"],
        ["--tasks", "moderator-v9:hard"],
        ["--tasks", "recommender-v3:extreme"],
        ["--users", "5"],
        ["--n-envs", "0"],
        ["--timesteps", "0"],
        ["--repeats", "0"],
        ["--baseline", "no-such-commit"],
        ["--env-steps", "0"],
        ["--env-only", "--profile"],
    ],
)
def test_the_train_speed_bench_refuses_bad_flags_in_one_line(bad, tmp_path):
    """Each bad flag: one line, exit code 2, before anything is trained."""
    done = subprocess.run([sys.executable, str(BENCH), *bad], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "error:" in done.stderr
