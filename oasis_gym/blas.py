"""Matrix products whose bits do not depend on how many threads the BLAS library runs.

OpenBLAS (numpy's BLAS) splits a product over its threads differently from one thread count
to another, and the sums come out in another order: the same seed then gave another run on
a machine with more cores, in a process where ``OPENBLAS_NUM_THREADS`` was set (a training
worker, a Ray task), or in one that had lowered it. Every product on the simulation's path
goes through `matmul`, which runs it on one BLAS thread and puts the thread count back
after, so a seed gives the same run whatever the thread settings
(tests/test_determinism.py).

The BLAS libraries are found once per process by threadpoolctl (`load`, ~3 ms: it walks the
loaded shared libraries); a simulation's reset calls it, so no step pays for it. Each product
then reads and sets the thread count through the libraries' own functions (`_setter`)
(~1 us each; threadpoolctl's `limit` context, which also lists every library's settings,
cost ~8 us a product). The count is one setting per process: where Python threads multiply
at once, the first one in sets it and the last one out puts it back.
"""

from __future__ import annotations

import os
import threading

import numpy as np
from threadpoolctl import ThreadpoolController

__all__ = ["load", "matmul"]

_libs: list | None = None  # (controller, setter) of each loaded BLAS library (`load`)
# The thread count is one setting per process: Python threads multiplying at once share it
# (numpy lets go of the GIL in a product), so it stays at one until the last of them is done.
_lock = threading.Lock()
_inside = 0  # products under way
_saved: list = []  # the thread counts the first of them found


def _after_fork() -> None:
    """A child forked while a thread of its parent was multiplying has none under way."""
    global _lock, _inside
    _lock, _inside = threading.Lock(), 0


if hasattr(os, "register_at_fork"):  # (POSIX)
    os.register_at_fork(after_in_child=_after_fork)


def load() -> list:
    """The loaded BLAS libraries' (controller, thread-count setter), found once per process."""
    global _libs
    if _libs is None:
        _libs = [(lib, _setter(lib)) for lib in ThreadpoolController().select(user_api="blas").lib_controllers]
    return _libs


def _setter(lib):
    """The library's own thread-count setter. threadpoolctl (3.8) lets only the first Python
    thread that set OpenBLAS's count set it again and ignores the others without a word: a
    simulation stepped on another thread would multiply on the process's count (and on 2
    threads or more, a large product sums in another order). The setter underneath is
    private to threadpoolctl; a version without it gives its public one (before 3.8 it heeds
    every thread), and tests/test_determinism.py fails if that one ignores threads again."""
    return getattr(lib, "_real_set_num_threads", lib.set_num_threads)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` computed on one BLAS thread (bit-identical for any thread setting)."""
    global _inside, _saved
    libs = load()
    with _lock:  # the first product in sets one thread, the last one out puts the count back
        if not _inside:
            _saved = [lib.get_num_threads() for lib, _ in libs]
            for (_, set_threads), n in zip(libs, _saved):
                if n != 1:
                    set_threads(1)
        _inside += 1
    try:
        return np.matmul(a, b)
    finally:
        with _lock:
            _inside -= 1
            if not _inside:
                for (_, set_threads), n in zip(libs, _saved):
                    if n is not None and n != 1:
                        set_threads(n)
