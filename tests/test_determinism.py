"""Same seed, same run, whatever the BLAS thread settings of the process (oasis_gym/blas.py).

OpenBLAS sums a product in another order on another number of threads: before the products
went through `oasis_gym.blas.matmul`, a run with OPENBLAS_NUM_THREADS=1 (as training workers
and Ray tasks set it) and one with 2 differed in every table. Real processes, real journals.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from test_guarantees_step import CLI_ARGS, assert_same_tables, keyed_tables

from oasis_gym.blas import matmul


def _run(folder, threads: int, *extra: str) -> dict:
    folder.mkdir()
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    cmd = [sys.executable, "-m", "oasis_gym.cli", *CLI_ARGS, "--steps", "6", *extra]
    done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return keyed_tables(folder / "run.db")


@pytest.mark.parametrize("platform", ["twitter", "reddit"])
def test_a_run_is_the_same_on_one_blas_thread_and_on_four(tmp_path, platform):
    one = _run(tmp_path / "one", 1, "--platform", platform)
    four = _run(tmp_path / "four", 4, "--platform", platform)
    assert_same_tables(one, four)


def test_matmul_is_the_product():
    import numpy as np

    a = np.random.default_rng(0).normal(size=(300, 257)).astype(np.float32)
    b = np.random.default_rng(1).normal(size=(257, 700)).astype(np.float32)
    assert np.allclose(matmul(a, b), a @ b, rtol=1e-5, atol=1e-4)
