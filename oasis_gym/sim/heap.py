"""The C heap at the start of a run: a step's large temporaries reused, not mapped anew.

glibc's malloc serves a block larger than its mmap threshold (128 KB at start) with a fresh
`mmap`, and gives it back to the system when it is freed: every use of such a block faults
its pages in again. It raises the threshold by itself (to the size of the largest mapped
block freed so far, up to 32 MB, and the heap's trim threshold to twice that), so a long
run soon keeps its temporaries on the heap. A run's first steps are the slow ones: a
1000-user step's temporaries (random keys, gathered embeddings, observation arrays, 1-6 MB
each) grow with the post table, each a little larger than the last one freed, so each is
mapped and faulted afresh. Measured on the 2-core CI-class box, load 0.2-0.7, the first
episode of a process at 1000 users (bench/oasis/oasis_throughput.py's steps): faster in all 8
pairs of processes, medians 19.4 against 22.5 ms a step; at 100 users (blocks under 128 KB)
no change.

`warm_heap` does once per process what glibc would do after such a step: it frees one
24 MB block, so the threshold is 24 MB from the first step. It sets nothing: glibc's own
dynamic rule moves the threshold, and a program that sets its own (`mallopt`, the
`MALLOC_MMAP_THRESHOLD_` variable) or another allocator keeps it.

Then it touches heap in proportion to the population (`PREFAULT_BYTES_PER_USER`, between
`PREFAULT_MIN_BYTES` and `PREFAULT_MAX_BYTES`) and frees it (`malloc`, `memset`, `free`):
the heap's top then holds pages already faulted in, which the run's temporaries and growing
tables reuse. On this VM a page's first touch costs ~2.5 us; a first episode at 1000 users
touched ~660 new pages a step (1.6 ms of an 18 ms step: the random recommender's key
matrix, a little larger each step, and the post tables' doublings), a later one 100-200. Measured on the 2-core
CI-class box, load 0.2-0.7, first episodes at 1000 users (bench/oasis/oasis_throughput.py's
steps): faster in 23 of 28 pairs of processes (medians 19.0 against 17.4 ms a step; the
five others fell in the machine's slow spells); at 100 users, 9 of 12 (3.65 against 3.53
ms). The pages are paid for at reset (~18 ms for 32 MB), and a later, larger population
tops them up.

The cost of both: up to twice the threshold (48 MB) of freed memory may stay with the
process instead of going back to the system (the prefault: 32 KB a user, 8-32 MB).
Results are unchanged (they move no value, only where temporaries live).
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

WARM_BLOCK_BYTES = 24 << 20  # glibc caps its dynamic mmap threshold at 32 MB (64-bit)
PREFAULT_BYTES_PER_USER = 32 << 10  # 1000 users: 32 MB
PREFAULT_MIN_BYTES = 8 << 20  # 100 users: ~30 -> ~3 new pages a step in a first episode
PREFAULT_MAX_BYTES = 32 << 20  # under glibc's trim threshold (48 MB) once freed
PREFAULT_BLOCK_BYTES = 16 << 20  # under the raised mmap threshold: from the heap

_warmed = False
_prefaulted = 0  # bytes


def warm_heap(n_users: int) -> None:
    """Raise glibc's mmap threshold (once per process) and fault in heap for `n_users`
    users (what earlier calls have not). Linux only."""
    global _warmed, _prefaulted
    if not sys.platform.startswith("linux"):
        return
    if not _warmed:
        _warmed = True
        block = np.empty(WARM_BLOCK_BYTES, dtype=np.uint8)  # mapped (never touched: no page is faulted)
        del block  # unmapped; glibc's threshold rises to its size
    want = min(max(int(n_users) * PREFAULT_BYTES_PER_USER, PREFAULT_MIN_BYTES), PREFAULT_MAX_BYTES)
    if want > _prefaulted:
        _prefaulted = want
        _prefault(want)


def _prefault(nbytes: int) -> None:
    """Touch `nbytes` of heap, then free it into the heap's top (libc directly: numpy would
    ask for huge pages, ~5 ms each to fault on this VM). Pages touched before cost little."""
    try:
        libc = ctypes.CDLL(None)
        malloc, free = libc.malloc, libc.free
    except (OSError, AttributeError):
        return
    malloc.restype, malloc.argtypes, free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
    sizes = [PREFAULT_BLOCK_BYTES] * (nbytes // PREFAULT_BLOCK_BYTES) + [nbytes % PREFAULT_BLOCK_BYTES]
    blocks = [(malloc(size), size) for size in sizes if size]
    for ptr, size in blocks:
        if ptr:
            ctypes.memset(ptr, 0, size)
    for ptr, _ in reversed(blocks):  # (the last is nearest the top: each free joins it)
        free(ptr)
