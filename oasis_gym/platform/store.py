"""Columnar storage primitives: geometrically growing arrays and a vectorized pair set.

Both hold only numpy arrays, so a million users or ten million likes cost a few bytes each
instead of a Python object each.
"""

from __future__ import annotations

import numpy as np

_PAIR_SHIFT = np.int64(32)
_LOW_MASK = np.int64((1 << 32) - 1)


class GrowArray:
    """A 1-D or 2-D numpy array with amortized O(1) append along axis 0."""

    def __init__(self, dtype, width: int | None = None, fill=0, capacity: int = 1024):
        self.dtype = np.dtype(dtype)
        self.width = width
        self.fill = fill
        shape = (capacity,) if width is None else (capacity, width)
        self._buf = np.full(shape, fill, dtype=self.dtype)
        self.n = 0

    def _reserve(self, n: int) -> None:
        if n <= len(self._buf):
            return
        cap = max(n, 2 * len(self._buf))
        shape = (cap,) if self.width is None else (cap, self.width)
        buf = np.full(shape, self.fill, dtype=self.dtype)
        buf[: self.n] = self._buf[: self.n]
        self._buf = buf

    def extend(self, values) -> np.ndarray:
        """Append rows; return their indices."""
        values = np.asarray(values, dtype=self.dtype)
        k = len(values)
        self._reserve(self.n + k)
        self._buf[self.n : self.n + k] = values
        idx = np.arange(self.n, self.n + k, dtype=np.int64)
        self.n += k
        return idx

    def append_fill(self, k: int) -> None:
        """Append k rows holding the fill value."""
        self._reserve(self.n + k)
        self._buf[self.n : self.n + k] = self.fill
        self.n += k

    @property
    def a(self) -> np.ndarray:
        """A view of the live rows (writes go through to storage)."""
        return self._buf[: self.n]

    def __len__(self) -> int:
        return self.n


def pair_keys(a, b) -> np.ndarray:
    """Pack (a, b) id pairs, each < 2**31, into sortable int64 keys ordered by a then b."""
    return (np.asarray(a, dtype=np.int64) << _PAIR_SHIFT) | np.asarray(b, dtype=np.int64)


def unpack_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys = np.asarray(keys, dtype=np.int64)
    return keys >> _PAIR_SHIFT, keys & _LOW_MASK


def sorted_unique(keys: np.ndarray) -> np.ndarray:
    """np.unique for int64 keys by sorting (faster than the hash path on tens of millions)."""
    keys = np.sort(keys, kind="stable")
    if len(keys) > 1:
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    return keys


def _isin_sorted(sorted_arr: np.ndarray, keys: np.ndarray) -> np.ndarray:
    if len(sorted_arr) == 0:
        return np.zeros(np.shape(keys), dtype=bool)
    pos = np.searchsorted(sorted_arr, keys)
    pos[pos == len(sorted_arr)] = 0
    return sorted_arr[pos] == keys


class PairSet:
    """A set of (a, b) id pairs with vectorized add / remove / contains.

    Stored LSM-style: a large sorted base array plus small sorted `added` and `removed`
    arrays that are merged into the base once they grow past a fraction of it. Sorted by
    (a, b), so all b of one a form one contiguous range: the follow set doubles as an
    adjacency list (followees of a user) with no extra structure.
    """

    def __init__(self, keys: np.ndarray | None = None):
        self._base = sorted_unique(np.asarray(keys if keys is not None else [], dtype=np.int64))
        self._added = np.empty(0, dtype=np.int64)
        self._removed = np.empty(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._base) + len(self._added) - len(self._removed)

    def contains_keys(self, keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys, dtype=np.int64)
        in_base = _isin_sorted(self._base, keys) & ~_isin_sorted(self._removed, keys)
        return in_base | _isin_sorted(self._added, keys)

    def contains(self, a, b) -> np.ndarray:
        return self.contains_keys(pair_keys(a, b))

    def add_keys(self, keys: np.ndarray) -> None:
        """Add keys known to be absent (callers check `contains_keys` first)."""
        keys = np.asarray(keys, dtype=np.int64)
        if not len(keys):
            return
        revived = _isin_sorted(self._removed, keys)
        if revived.any():
            self._removed = np.setdiff1d(self._removed, keys[revived], assume_unique=True)
            keys = keys[~revived]
        self._added = np.union1d(self._added, keys)
        self._maybe_compact()

    def remove_keys(self, keys: np.ndarray) -> None:
        """Remove keys known to be present."""
        keys = np.asarray(keys, dtype=np.int64)
        if not len(keys):
            return
        fresh = _isin_sorted(self._added, keys)
        if fresh.any():
            self._added = np.setdiff1d(self._added, keys[fresh], assume_unique=True)
            keys = keys[~fresh]
        self._removed = np.union1d(self._removed, keys)
        self._maybe_compact()

    def _maybe_compact(self) -> None:
        if len(self._added) + len(self._removed) > max(4096, len(self._base) >> 4):
            self.compact()

    def compact(self) -> None:
        base = self._base
        if len(self._removed):
            base = base[~_isin_sorted(self._removed, base)]
        if len(self._added):
            base = np.insert(base, np.searchsorted(base, self._added), self._added)
        self._base = base
        self._added = np.empty(0, dtype=np.int64)
        self._removed = np.empty(0, dtype=np.int64)

    def keys(self) -> np.ndarray:
        self.compact()
        return self._base

    def partners(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All pairs whose first id is in `a`: (index into `a`, second id), grouped by `a`
        order. Reads the base and the pending arrays as they are (no merge)."""
        a = np.asarray(a, dtype=np.int64)
        owner, second = _partners_in(self._base, a)
        if len(self._removed) and len(owner):
            keep = ~_isin_sorted(self._removed, pair_keys(a[owner], second))
            owner, second = owner[keep], second[keep]
        if len(self._added):
            o2, s2 = _partners_in(self._added, a)
            if len(o2):
                owner, second = np.concatenate([owner, o2]), np.concatenate([second, s2])
                order = np.argsort(owner, kind="stable")
                owner, second = owner[order], second[order]
        return owner, second


def _partners_in(keys: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    start = np.searchsorted(keys, a << _PAIR_SHIFT)
    stop = np.searchsorted(keys, (a + 1) << _PAIR_SHIFT)
    counts = stop - start
    owner = np.repeat(np.arange(len(a), dtype=np.int64), counts)
    offsets = np.arange(counts.sum(), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, keys[np.repeat(start, counts) + offsets] & _LOW_MASK
