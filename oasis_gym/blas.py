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
then reads and sets the thread count through threadpoolctl's library controllers directly
(~1 us each; threadpoolctl's `limit` context, which also lists every library's settings,
cost ~8 us a product).
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import ThreadpoolController

__all__ = ["load", "matmul"]

_libs: list | None = None  # threadpoolctl's controllers of the loaded BLAS libraries (`load`)


def load() -> list:
    """The loaded BLAS libraries' controllers, found once per process."""
    global _libs
    if _libs is None:
        _libs = ThreadpoolController().select(user_api="blas").lib_controllers
    return _libs


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` computed on one BLAS thread (bit-identical for any thread setting)."""
    libs = load()
    saved = [lib.get_num_threads() for lib in libs]
    for lib, n in zip(libs, saved):
        if n != 1:
            lib.set_num_threads(1)
    try:
        return np.matmul(a, b)
    finally:
        for lib, n in zip(libs, saved):
            if n is not None and n != 1:
                lib.set_num_threads(n)
