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


def test_matmul_runs_on_one_blas_thread_and_puts_the_count_back(monkeypatch):
    import numpy as np
    from threadpoolctl import threadpool_info, threadpool_limits

    from oasis_gym import blas

    def blas_threads() -> list:
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    seen = []
    product = np.matmul

    def spy(a, b):
        seen.append(blas_threads())
        return product(a, b)

    a = np.ones((4, 3), dtype=np.float32)
    with threadpool_limits(limits=2, user_api="blas"):
        monkeypatch.setattr(blas.np, "matmul", spy)
        assert np.array_equal(blas.matmul(a, a.T), product(a, a.T))
        monkeypatch.undo()
        after = blas_threads()
    assert seen and all(n == [1] * len(n) for n in seen)
    assert after == [2] * len(after)


def test_a_reset_finds_the_blas_libraries_so_no_step_pays_for_it():
    code = (
        "from oasis_gym import blas\n"
        "from oasis_gym.envs import twitter_v0\n"
        "assert blas._libs is None\n"
        "twitter_v0.parallel_env(users=5, max_cycles=2, journal=False).reset(seed=0)\n"
        "assert blas._libs is not None\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
