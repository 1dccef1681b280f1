"""Matrix products whose bits do not depend on how many threads the BLAS library runs.

OpenBLAS (numpy's BLAS) splits a product over its threads differently from one thread count
to another, and the sums come out in another order: the same seed then gave another run on
a machine with more cores, in a process where ``OPENBLAS_NUM_THREADS`` was set (a training
worker, a Ray task), or in one that had lowered it. Every product on the simulation's path
goes through `matmul`, which runs it on one BLAS thread (threadpoolctl, about 20 us a call),
so a seed gives the same run whatever the thread settings (tests/test_determinism.py).
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import ThreadpoolController

__all__ = ["matmul"]

_controller: list[ThreadpoolController] = []  # made on first use: it lists the loaded libraries


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` computed on one BLAS thread (bit-identical for any thread setting)."""
    if not _controller:
        _controller.append(ThreadpoolController())
    with _controller[0].limit(limits=1, user_api="blas"):
        return np.matmul(a, b)
