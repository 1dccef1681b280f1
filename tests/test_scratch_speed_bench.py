"""bench/throughput/scratch_speed.py (issue 57): each from-scratch agent's training rate, built as
`oasis-gym scratch` builds it, and the hours the protocol's table takes at those rates; bad flags exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")

BENCH = Path(__file__).resolve().parents[1] / "bench" / "throughput" / "scratch_speed.py"


def test_each_agent_gets_a_rate_and_the_table_its_hours():
    argv = [sys.executable, str(BENCH), "--cells", "moderator-v2:easy", "--agents", "framestack_ppo", "slot_ppo",
            "sac", "--users", "40", "--n-envs", "4", "--warmup", "256", "--timesteps", "256", "--seeds", "3",
            "--budget", "1000"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)  # catches a hang only
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.strip().splitlines()]
    assert [r.get("agent") for r in rows] == ["framestack_ppo", "slot_ppo", None]  # sac: not a moderator agent
    for r in rows[:2]:
        assert (r["cell"], r["users"], r["n_envs"]) == ("moderator-v2:easy", 40, 4)
        assert r["timesteps"] == 2048 and r["timesteps_per_s"] > 0  # one whole rollout (scratch's 2048 transitions)
    hours = sum(3 * 1000 / r["timesteps_per_s"] / 3600 for r in rows[:2])
    assert rows[2]["runs"] == 2 and rows[2]["table_hours"] == pytest.approx(hours, abs=0.051)


@pytest.mark.parametrize(
    "bad",
    [
        ["--cells", "moderator"],
        ["--cells", "moderator-v9:hard"],
        ["--cells", "recommender-v4:extreme"],
        ["--agents", "dqn"],
        ["--users", "5"],
        ["--n-envs", "0"],
        ["--env-workers", "-1"],
        ["--warmup", "-1"],
        ["--timesteps", "0"],
        ["--seeds", "0"],
        ["--budget", "0"],
    ],
)
def test_the_scratch_speed_bench_refuses_bad_flags_in_one_line(bad):
    """Each bad flag: one line, exit code 2, before anything is trained."""
    done = subprocess.run([sys.executable, str(BENCH), *bad], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "error:" in done.stderr
