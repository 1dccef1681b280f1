"""`sim.heap.warm_heap`: after an env's reset, glibc serves a step-sized temporary (16 MB) from
the heap instead of mapping it afresh (read back through glibc's own `mallinfo2`), and a new
temporary's pages are already faulted in (the kernel's count of minor faults); each in a fresh
process (this one has long since moved its threshold and touched its heap)."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

PROBE = """
import ctypes, resource, sys
import numpy as np

class MallInfo2(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2

def mapped_while_held(nbytes):
    before = libc.mallinfo2().hblks
    block = np.ones(nbytes, dtype=np.uint8)
    mapped = libc.mallinfo2().hblks > before
    del block
    return mapped

if sys.argv[1] == "reset":
    from oasis_gym.envs import twitter_v0
    env = twitter_v0.parallel_env(users=5, max_cycles=2, journal=False)  # 8 MB faulted in
    env.reset(seed=0)
def faults_to_fill(nbytes):  # under numpy's 4 MB huge-page advice: one fault per 4 KB page
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = np.ones(nbytes, dtype=np.uint8)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    del block
    return faults

faults = faults_to_fill(3 << 20)
print(mapped_while_held(16 << 20), mapped_while_held(40 << 20), faults)
"""


def _glibc_has_mallinfo2() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return hasattr(ctypes.CDLL("libc.so.6"), "mallinfo2")
    except OSError:
        return False


@pytest.mark.skipif(not _glibc_has_mallinfo2(), reason="glibc >= 2.33 (mallinfo2) only")
def test_after_reset_a_16_mb_temporary_comes_from_the_heap_not_a_fresh_mapping():
    def probe(mode: str) -> str:
        done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    bare, reset = probe("bare"), probe("reset")
    assert bare[:2] == ["True", "True"]  # glibc's start: 16 MB is mapped (the control)
    # after reset: on the heap; blocks above the 24 MB warm-up are still mapped
    assert reset[:2] == ["False", "True"]
    # 3 MB (768 pages): faulted page by page at glibc's start; after reset, pages the warm-up touched
    assert int(bare[2]) >= 700
    assert int(reset[2]) < 50


def test_the_prefault_grows_with_the_population_once_and_is_capped(monkeypatch):
    from oasis_gym.sim import heap

    asked = []
    monkeypatch.setattr(heap, "_prefault", asked.append)
    monkeypatch.setattr(heap, "_prefaulted", 0)
    for users in (10, 5, 400, 1000, 1000, 200_000, 0):
        heap.warm_heap(users)
    per = heap.PREFAULT_BYTES_PER_USER
    expected = [heap.PREFAULT_MIN_BYTES, 400 * per, 1000 * per, heap.PREFAULT_MAX_BYTES]
    assert asked == (expected if sys.platform.startswith("linux") else [])
