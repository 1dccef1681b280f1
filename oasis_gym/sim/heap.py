"""The C heap at the start of a run: a step's large temporaries reused, not mapped anew.

glibc's malloc serves a block larger than its mmap threshold (128 KB at start) with a fresh
`mmap`, and gives it back to the system when it is freed: every use of such a block faults
its pages in again. It raises the threshold by itself (to the size of the largest mapped
block freed so far, up to 32 MB, and the heap's trim threshold to twice that), so a long
run soon keeps its temporaries on the heap. A run's first steps are the slow ones: a
1000-user step's temporaries (random keys, gathered embeddings, observation arrays, 1-6 MB
each) grow with the post table, each a little larger than the last one freed, so each is
mapped and faulted afresh. Measured on the 2-core CI-class box, load 0.2-0.7, the first
episode of a process at 1000 users (bench/oasis_throughput.py's steps): faster in all 8
pairs of processes, medians 19.4 against 22.5 ms a step; at 100 users (blocks under 128 KB)
no change.

`warm_heap` does once per process what glibc would do after such a step: it frees one
24 MB block, so the threshold is 24 MB from the first step. It sets nothing: glibc's own
dynamic rule moves the threshold, and a program that sets its own (`mallopt`, the
`MALLOC_MMAP_THRESHOLD_` variable) or another allocator keeps it.

Then it touches `PREFAULT_BYTES` of heap and frees them (`malloc`, `memset`, `free`): the
heap's top then holds pages already faulted in, which the run's temporaries and growing
tables reuse. On this VM a page's first touch costs ~2.5 us; a first episode at 1000 users
touched ~660 new pages a step (1.6 ms of an 18 ms step: the random recommender's key
matrix, a little larger each step, and the post tables' doublings), a later one 100-200.
Measured on the 2-core CI-class box, load 0.2-0.7, first episodes at 1000 users
(bench/oasis_throughput.py's steps): faster in 8 of 8 pairs of processes, by 0.3-2.2 ms
a step (median 1.25). The pages are paid for once, at the first reset (~18 ms).

The cost of both: up to twice the threshold (48 MB) of freed memory may stay with the
process instead of going back to the system. Results are unchanged (they move no value,
only where temporaries live).
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

WARM_BLOCK_BYTES = 24 << 20  # glibc caps its dynamic mmap threshold at 32 MB (64-bit)
PREFAULT_BYTES = 32 << 20  # in blocks under the threshold; under glibc's trim threshold (48 MB) once freed
PREFAULT_BLOCK_BYTES = 16 << 20

_warmed = False


def warm_heap() -> None:
    """Raise glibc's mmap threshold and fault in `PREFAULT_BYTES` of heap, once per process
    (Linux with glibc only)."""
    global _warmed
    if _warmed or not sys.platform.startswith("linux"):
        return
    _warmed = True
    block = np.empty(WARM_BLOCK_BYTES, dtype=np.uint8)  # mapped (never touched: no page is faulted)
    del block  # unmapped; glibc's threshold rises to its size
    _prefault(PREFAULT_BYTES)


def _prefault(nbytes: int) -> None:
    """Touch `nbytes` of fresh heap, then free it into the heap's top (libc directly: numpy
    would ask for huge pages, ~5 ms each to fault on this VM)."""
    try:
        libc = ctypes.CDLL(None)
        malloc, free = libc.malloc, libc.free
    except (OSError, AttributeError):
        return
    malloc.restype, malloc.argtypes, free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
    blocks = [malloc(PREFAULT_BLOCK_BYTES) for _ in range(nbytes // PREFAULT_BLOCK_BYTES)]
    for ptr in blocks:
        if ptr:
            ctypes.memset(ptr, 0, PREFAULT_BLOCK_BYTES)
    for ptr in reversed(blocks):  # (the last is nearest the top: each free joins it)
        free(ptr)
