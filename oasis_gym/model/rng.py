"""Counter-based random numbers: every draw is a pure function of (key, counters).

The fast path (`oasis_gym.batched`) steps K simulations at once. With one `numpy.random.Generator` per
simulation the draws would need a Python loop over the simulations, and with one shared
generator a simulation's draws would depend on how many others run beside it. Here a
draw is `hash(episode key, step, stream, index)` (SplitMix64's finaliser, applied in
turn to each part), so simulation i with seed s draws exactly the same numbers alone or as
one of K, in any order, and a whole (K, N) block is drawn in a few array operations.
"""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S40 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(40)
_TO_UNIT = np.float32(2.0**-24)
_S16, _LOW24 = np.uint64(16), np.uint64(0xFFFFFF)


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function (a bijection of uint64, good avalanche), in place on `z`
    (a fresh array: every caller passes a temporary), with one scratch array for the shifts."""
    t = np.right_shift(z, _S30, out=np.empty_like(z))
    z ^= t
    z *= _M1
    np.right_shift(z, _S27, out=t)
    z ^= t
    z *= _M2
    np.right_shift(z, _S31, out=t)
    z ^= t
    return z


def hash64(*parts, start=None) -> np.ndarray:
    """One uint64 per broadcast element of the parts (ints or integer arrays). `start`: the
    hashes of parts before these (``hash64(a, b, c) == hash64(c, start=hash64(a, b))``), so
    the parts shared by many draws (episode key, step, stream: one per simulation) are hashed
    once and gathered."""
    with np.errstate(over="ignore"):
        h = np.uint64(0) if start is None else np.asarray(start, dtype=np.uint64)
        for part in parts:
            h = _mix(np.asarray(h ^ (np.asarray(part).astype(np.uint64, copy=False) + _GOLDEN), dtype=np.uint64))
        return np.asarray(h, dtype=np.uint64)


def episode_key(seed) -> np.ndarray:
    """The key of an episode seed (or an array of them)."""
    return hash64(np.asarray(seed, dtype=np.int64).astype(np.uint64), 0x0A515)


def uniform(*parts, start=None) -> np.ndarray:
    """float32 in [0, 1) (24 random bits), one per broadcast element of the parts (`start`: as
    in `hash64`)."""
    return (hash64(*parts, start=start) >> _S40).astype(np.float32) * _TO_UNIT


def two_uniforms(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two independent float32 uniforms in [0, 1) from the high and the middle 24 bits of hashes."""
    return (h >> _S40).astype(np.float32) * _TO_UNIT, ((h >> _S16) & _LOW24).astype(np.float32) * _TO_UNIT


def normal(*parts) -> np.ndarray:
    """float32 standard normal draws (Box-Muller on two 24-bit uniforms of one hash)."""
    h = hash64(*parts)
    u1 = (h >> _S40).astype(np.float32) * _TO_UNIT
    u2 = ((h >> _S16) & _LOW24).astype(np.float32) * _TO_UNIT
    return np.sqrt(np.float32(-2.0) * np.log1p(-u1)) * np.cos(np.float32(2.0 * np.pi) * u2)
