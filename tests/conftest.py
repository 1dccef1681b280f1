"""Shared fixtures: small populations, paths to the real OASIS data, a finished run's journal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from oasis_gym.population import Population

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "oasis"


def make_population(n: int, edges=(), previous_posts=(), opinion=None, activity: float = 1.0) -> Population:
    """A tiny hand-made population: users u0..u<n-1>, given follow edges and posts."""
    e = np.array(edges, dtype=np.int64).reshape(-1, 2)
    return Population(
        n=n,
        user_name=[f"u{i}" for i in range(n)],
        name=[f"Name {i}" for i in range(n)],
        bio=[f"bio of user {i}" for i in range(n)],
        persona=[""] * n,
        activity=np.full((n, 24), activity, dtype=np.float32),
        follow_src=e[:, 0].copy(),
        follow_dst=e[:, 1].copy(),
        previous_posts=list(previous_posts),
        opinion=np.asarray(opinion if opinion is not None else np.zeros(n), dtype=np.float32),
        interests=np.zeros(n, dtype=np.uint64),
        is_core=np.zeros(n, dtype=bool),
        extra=None,
        source="test",
    )


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():  # the packaged copies are the same files
        from oasis_gym.population import data_path

        return data_path("False_Business_0.csv").parent
    return SHARED_DATA


@pytest.fixture(scope="module")
def journal(tmp_path_factory) -> Path:
    """A finished 2-step run's journal (`oasis-gym run`, 20 ABM users), copied by each test."""
    folder = tmp_path_factory.mktemp("journal")
    argv = ["run", "--users", "20", "--policy", "abm", "--activation", "0.5", "--quiet", "--no-tensorboard"]
    cmd = [sys.executable, "-m", "oasis_gym.cli", *argv, "--steps", "2", "--db", "run.db"]
    res = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return folder / "run.db"
