"""Same seed, same run, whatever the BLAS thread settings of the process (oasis_gym/blas.py).

OpenBLAS sums a product in another order on another number of threads: before the products
went through `oasis_gym.blas.matmul`, a run with OPENBLAS_NUM_THREADS=1 (as training workers
and Ray tasks set it) and one with 2 differed in every table. Real processes, real journals.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest
from test_guarantees_step import CLI_ARGS, assert_same_tables, journal_tables, keyed_tables, make_env, run_steps, start
from threadpoolctl import threadpool_info, threadpool_limits

from oasis_gym import blas
from oasis_gym.blas import matmul
from oasis_gym.envs import reddit_v0, twitter_v0


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

    a = np.random.default_rng(0).normal(size=(300, 257)).astype(np.float32)
    b = np.random.default_rng(1).normal(size=(257, 700)).astype(np.float32)
    assert np.allclose(matmul(a, b), a @ b, rtol=1e-5, atol=1e-4)


def test_matmul_runs_on_one_blas_thread_and_puts_the_count_back(monkeypatch):

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


def test_matmul_stays_on_one_blas_thread_when_threads_multiply_at_once(monkeypatch):
    """Products on Python threads other than the one that set the count (the main thread
    here, through `threadpool_limits`: threadpoolctl then ignored the others' settings), four
    of them at once: each runs on one BLAS thread, and the first to finish does not put the
    count back under another's product. (A user stepping envs in a thread pool, say, to
    overlap LLM calls.) Both failed before."""

    libs = [lib for lib, _ in blas.load()]
    product = np.matmul
    seen, start = [], threading.Barrier(4)

    def spy(a, b):
        seen.append([lib.get_num_threads() for lib in libs])
        out = product(a, b)
        seen.append([lib.get_num_threads() for lib in libs])
        return out

    def work():
        start.wait()
        for _ in range(300):
            blas.matmul(a, a.T)

    a = np.ones((64, 64), dtype=np.float32)
    with threadpool_limits(limits=2, user_api="blas"):
        monkeypatch.setattr(blas.np, "matmul", spy)
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        monkeypatch.undo()
        after = [lib.get_num_threads() for lib in libs]
    assert len(seen) == 2 * 4 * 300
    assert all(n == [1] * len(libs) for n in seen), sorted({tuple(n) for n in seen})
    assert after == [2] * len(libs)


def test_a_product_on_another_python_thread_has_the_bits_of_one_blas_thread():
    """The bits, not only the setting: a product whose sums OpenBLAS orders differently on 2
    threads (a (257, 3000) x (3000, 257) Gram matrix, the agent-controlled recommender's
    shape: it differs on the 2 cores of the CI machine's kind), made on a Python thread other
    than the one that set the count, equals the one-thread product. It failed before."""

    rng = np.random.default_rng(0)
    a = rng.normal(size=(257, 3000)).astype(np.float32)
    b = rng.normal(size=(3000, 257)).astype(np.float32)
    with threadpool_limits(limits=1, user_api="blas"):
        one = np.matmul(a, b)
    out = []
    with threadpool_limits(limits=2, user_api="blas"):
        worker = threading.Thread(target=lambda: out.append(matmul(a, b)))
        worker.start()
        worker.join()
    assert out and out[0].tobytes() == one.tobytes()


def test_simulations_stepped_at_once_on_python_threads_each_give_their_run_alone(tmp_path):
    """Four envs (Twitter and Reddit, with the trainable recommender and moderator, whose
    rankings multiply matrices) stepped at once on four Python threads, the process at 2 BLAS
    threads set by the main thread: each gives the observations, rewards and journal it gives
    run alone. No state is shared between simulations."""

    configs = [(module, users) for module in (twitter_v0, reddit_v0) for users in (60, 90)]

    def run(i: int) -> tuple:
        module, users = configs[i]
        db = tmp_path / f"run{i}" / "run.db"
        db.parent.mkdir(exist_ok=True)
        env = make_env(db, module, users=users, max_cycles=8)
        trail = run_steps(env, start(env, seed=i), 6)
        env.close()
        return trail, journal_tables(db)

    with threadpool_limits(limits=2, user_api="blas"):
        alone = [run(i) for i in range(len(configs))]
        for i in range(len(configs)):
            shutil.rmtree(tmp_path / f"run{i}")
        at_once = [None] * len(configs)
        threads = [threading.Thread(target=lambda i=i: at_once.__setitem__(i, run(i))) for i in range(len(configs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for (trail, tables), got in zip(alone, at_once):
        assert got is not None
        assert got[0] == trail
        assert_same_tables(tables, got[1])


def test_a_child_forked_while_a_thread_multiplies_sets_one_blas_thread_itself(monkeypatch):
    """Fork while another thread of the parent is inside `matmul`: the child starts with no
    product under way, so when it has set 2 BLAS threads for work of its own, its products
    still run on one (the parent's count of products under way, copied, made it leave the
    setting alone). It failed before."""

    inside, release = threading.Event(), threading.Event()
    product = np.matmul
    seen = []

    def spy(a, b):
        if threading.current_thread() is not threading.main_thread():  # the parent's worker: waits inside
            inside.set()
            release.wait(30)
        seen.append([lib.get_num_threads() for lib, _ in blas.load()])
        return product(a, b)

    a = np.ones((4, 4), dtype=np.float32)
    monkeypatch.setattr(blas.np, "matmul", spy)
    worker = threading.Thread(target=lambda: blas.matmul(a, a))
    worker.start()
    try:
        assert inside.wait(30)
        pid = os.fork()
        if pid == 0:  # the child: exit code 0 if its product ran on one BLAS thread
            code = 1
            try:
                for _, set_threads in blas.load():
                    set_threads(2)
                seen.clear()
                blas.matmul(a, a)
                code = 0 if seen and all(n == [1] * len(n) for n in seen) else 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        worker.join()
    assert os.waitstatus_to_exitcode(status) == 0
