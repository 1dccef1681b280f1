"""Columnar storage primitives: geometrically growing arrays and a vectorized pair set.

Both hold only numpy arrays, so a million users or ten million likes cost a few bytes each
instead of a Python object each.
"""

from __future__ import annotations

import mmap

import numpy as np

_PAIR_SHIFT = np.int64(32)
_LOW_MASK = np.int64((1 << 32) - 1)


class GrowArray:
    """A 1-D or 2-D numpy array with amortized O(1) append along axis 0.

    Storage beyond the live rows is left uninitialised (np.empty): every row is written
    when it is appended, so only the pages rows reach are ever touched (a growth copies the
    live rows and touches nothing else; filling the whole doubled buffer made steps of a
    long run stall for hundreds of ms on a machine with slow first-touch page faults)."""

    def __init__(self, dtype, width: int | None = None, fill=0, capacity: int = 1024):
        self.dtype = np.dtype(dtype)
        self.width = width
        self.fill = fill
        self._buf = np.empty((capacity,) if width is None else (capacity, width), dtype=self.dtype)
        self.n = 0

    def _reserve(self, n: int) -> None:
        if n <= len(self._buf):
            return
        cap = max(n, 2 * len(self._buf))
        buf = np.empty((cap,) if self.width is None else (cap, self.width), dtype=self.dtype)
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

    def truncate(self, n: int) -> None:
        """Drop the rows from `n` on (a rolled-back step's rows)."""
        self.n = min(self.n, n)


STAGE_MIN_BYTES = 4 << 20  # (numpy asks for huge pages from 4 MB: `small_page_empty`)


class StagedGrowArray(GrowArray):
    """A `GrowArray` whose doublings cost no step a stall, for rows that are final once the
    call that appended them has returned (nothing writes them afterwards: post embeddings).

    A doubling copies every live row into a new buffer whose pages are touched for the first
    time: at 100 users, the post embeddings' growth from 16,384 to 32,768 rows (16 MB) made
    one step every ~340 take 36-88 ms instead of 4. Here the next buffer is made once the
    rows pass half the capacity, and each later append first copies twice as many of the
    older rows into it as it appends, so the rows are in the next buffer (but for the last
    few appended) when the current one is full, and the switch copies only those. Reads and
    writes of `a` go to the current buffer, which holds every row until the switch. The next
    buffer takes memory 4 KB at a time (`small_page_empty`); under `STAGE_MIN_BYTES` it is a
    plain doubling (a copy of 2 MB at most, about 1 ms, on heap memory already used)."""

    def __init__(self, dtype, width: int | None = None, fill=0, capacity: int = 1024):
        super().__init__(dtype, width, fill, capacity)
        self._next: np.ndarray | None = None
        self._copied = 0  # rows [0, _copied) of the current buffer are in `_next`

    def _reserve(self, n: int) -> None:
        cap = len(self._buf)
        if n > cap and self._next is not None and n <= len(self._next):
            self._next[self._copied : self.n] = self._buf[self._copied : self.n]
            self._buf, self._next = self._next, None
            return
        if n > cap:  # an append larger than the staged buffer: one plain doubling
            self._next = None
            super()._reserve(n)
            return
        if 2 * n > cap and self._buf.nbytes >= STAGE_MIN_BYTES // 2:
            if self._next is None:
                self._next = small_page_empty((2 * cap,) + self._buf.shape[1:], self.dtype)
                self._copied = 0
            hi = min(self.n, self._copied + 2 * (n - self.n))  # rows of earlier calls only: final
            self._next[self._copied : hi] = self._buf[self._copied : hi]
            self._copied = hi

    def truncate(self, n: int) -> None:
        """Drop the rows from `n` on; those written anew later are staged anew."""
        super().truncate(n)
        self._copied = min(self._copied, self.n)  # rows from `n` on will be written anew


def small_page_empty(shape: tuple, dtype) -> np.ndarray:
    """An uninitialised array on an anonymous mapping of its own that asks for no huge pages.

    numpy asks the kernel for 2 MB pages on arrays of 4 MB and more (`madvise`), and a first
    touch of such a page stops the writer while the kernel finds and clears 2 MB: 5 ms each
    on the CI-class box (its kernel compacts memory on that fault), where 4 KB pages cost
    0.07 ms a MB. The mapping is freed with the last array that uses it."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    block = mmap.mmap(-1, max(count * dtype.itemsize, 1))
    if hasattr(mmap, "MADV_NOHUGEPAGE"):  # (Linux; "always" huge pages would ignore the lack of a request)
        block.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(block, dtype=dtype, count=count).reshape(shape)


def pair_keys(a, b, offset: int = 0, out: np.ndarray | None = None) -> np.ndarray:
    """Pack (a + offset, b + offset) id pairs, each < 2**31, into sortable int64 keys ordered
    by a then b; into `out` if given (then with no temporary of its size)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if out is None and not offset:
        return (a << _PAIR_SHIFT) | b
    out = np.empty(len(a), dtype=np.int64) if out is None else out
    np.left_shift(a, _PAIR_SHIFT, out=out)
    out += b  # (b < 2**32: the same as |)
    if offset:
        out += offset * ((1 << int(_PAIR_SHIFT)) + 1)  # (a + offset) << shift, plus b + offset
    return out


def unpack_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) id columns of keys made by `pair_keys`."""
    keys = np.asarray(keys, dtype=np.int64)
    return keys >> _PAIR_SHIFT, keys & _LOW_MASK


def sorted_unique(keys: np.ndarray) -> np.ndarray:
    """np.unique for int64 keys by sorting (faster than the hash path on tens of millions)."""
    keys = np.sort(keys, kind="stable")
    if len(keys) > 1:
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    return keys


def strictly_increasing(keys: np.ndarray, chunk: int = 1 << 22) -> bool:
    """True if every key is greater than the one before (sorted and unique); chunk by chunk,
    so the check costs no array the size of `keys`."""
    for at in range(0, len(keys) - 1, chunk):
        part = keys[at : at + chunk + 1]
        if not np.all(part[1:] > part[:-1]):
            return False
    return True


_SORT_NEEDLES = 4096  # looked-up keys from which they are sorted first
_BIG_BASE = 1 << 18  # ... in a sorted array this long (larger than the CPU caches)


def _isin_sorted(sorted_arr: np.ndarray, keys: np.ndarray) -> np.ndarray:
    if len(sorted_arr) == 0:
        return np.zeros(np.shape(keys), dtype=bool)
    keys = np.asarray(keys)
    if keys.size >= _SORT_NEEDLES and len(sorted_arr) >= _BIG_BASE:
        # sorted keys walk the array in order (cache lines and pages reused): ~6x faster than
        # as many random binary searches into tens of millions of keys (measured)
        flat = keys.reshape(-1)
        order = np.argsort(flat)
        found = np.empty(flat.shape, dtype=bool)
        found[order] = _lookup(sorted_arr, flat[order])
        return found.reshape(keys.shape)
    return _lookup(sorted_arr, keys)


def _lookup(sorted_arr: np.ndarray, keys: np.ndarray) -> np.ndarray:
    pos = np.searchsorted(sorted_arr, keys)
    pos[pos == len(sorted_arr)] = 0
    return sorted_arr[pos] == keys


class PairSet:
    """A set of (a, b) id pairs with vectorized add / remove / contains, and optionally an
    int64 value per pair (a journaled relation keeps each pair's row id: follow_id, like_id,
    ..., so the journal deletes rows by id).

    Stored LSM-style: a large sorted base array plus small sorted `added` and `removed`
    arrays that are merged into the base once they grow past a fraction of it. Sorted by
    (a, b), so all b of one a form one contiguous range: the follow set doubles as an
    adjacency list (followees of a user) with no extra structure.
    """

    def __init__(self, keys: np.ndarray | None = None, values: np.ndarray | None = None):
        keys = np.asarray(keys if keys is not None else [], dtype=np.int64)
        self.has_values = values is not None
        if self.has_values and strictly_increasing(keys):  # e.g. a bulk build from sorted keys:
            # taken as they are (no argsort, no copies: 24 bytes a pair less at the build); the
            # set never writes them in place, and neither may the caller afterwards
            self._base = np.ascontiguousarray(keys)
            self._base_values = np.ascontiguousarray(values, dtype=np.int64)
        elif self.has_values:  # keys must be unique here
            order = np.argsort(keys, kind="stable")
            self._base, self._base_values = keys[order], np.asarray(values, dtype=np.int64)[order]
        else:
            self._base, self._base_values = sorted_unique(keys), _EMPTY
        self._added, self._added_values = _EMPTY, _EMPTY
        self._removed = _EMPTY
        self._memo: tuple | None = None  # (state, a, partners(a), their lookup or None: `contains_among`)

    def __len__(self) -> int:
        return len(self._base) + len(self._added) - len(self._removed)

    def contains_keys(self, keys: np.ndarray) -> np.ndarray:
        """True where a key is in the set."""
        keys = np.asarray(keys, dtype=np.int64)
        in_base = _isin_sorted(self._base, keys) & ~_isin_sorted(self._removed, keys)
        return in_base | _isin_sorted(self._added, keys)

    def contains(self, a, b) -> np.ndarray:
        """True where the pair (a, b) is in the set."""
        return self.contains_keys(pair_keys(a, b))

    def add_keys(self, keys: np.ndarray, values: np.ndarray | None = None) -> None:
        """Add keys known to be absent (callers check `contains_keys` first), with their values
        if the set has values."""
        keys = np.asarray(keys, dtype=np.int64)
        if not len(keys):
            return
        values = np.asarray(values, dtype=np.int64) if self.has_values else None
        # A key removed from the base earlier in this cycle goes to `added` too (it stays in
        # `removed`, which only masks the base entry): no array is ever written in place, so
        # a snapshot of the five array references is a snapshot of the set (step rollback).
        if values is not None:
            merged = np.concatenate([self._added, keys])
            order = np.argsort(merged, kind="stable")
            self._added, self._added_values = merged[order], np.concatenate([self._added_values, values])[order]
        else:
            self._added = np.union1d(self._added, keys)
        self._maybe_compact()

    def remove_keys(self, keys: np.ndarray) -> None:
        """Remove keys known to be present."""
        keys = np.asarray(keys, dtype=np.int64)
        if not len(keys):
            return
        fresh = _isin_sorted(self._added, keys)
        if fresh.any():
            keep = ~_isin_sorted(np.sort(keys[fresh]), self._added)
            self._added = self._added[keep]
            if self.has_values:
                self._added_values = self._added_values[keep]
            keys = keys[~fresh]
        self._removed = np.union1d(self._removed, keys)
        self._maybe_compact()

    def values_of(self, keys: np.ndarray) -> np.ndarray:
        """The values of keys known to be present."""
        keys = np.asarray(keys, dtype=np.int64)
        out = np.empty(len(keys), dtype=np.int64)
        fresh = _isin_sorted(self._added, keys)
        out[fresh] = self._added_values[np.searchsorted(self._added, keys[fresh])]
        out[~fresh] = self._base_values[np.searchsorted(self._base, keys[~fresh])]
        return out

    def state(self) -> tuple:
        """The set's arrays (never written in place: holding them keeps this state)."""
        return self._base, self._base_values, self._added, self._added_values, self._removed

    def set_state(self, state: tuple) -> None:
        """Go back to a `state()`."""
        self._base, self._base_values, self._added, self._added_values, self._removed = state

    def _maybe_compact(self) -> None:
        if len(self._added) + len(self._removed) > max(4096, len(self._base) >> 4):
            self.compact()

    def compact(self) -> None:
        """Merge the pending additions and removals into the sorted base arrays."""
        base, values = self._base, self._base_values
        if len(self._removed):
            keep = ~_isin_sorted(self._removed, base)
            base = base[keep]
            if self.has_values:
                values = values[keep]
        if len(self._added):
            at = np.searchsorted(base, self._added)
            base = np.insert(base, at, self._added)
            if self.has_values:
                values = np.insert(values, at, self._added_values)
        self._base, self._base_values = base, values
        self._added, self._added_values, self._removed = _EMPTY, _EMPTY, _EMPTY

    def keys(self) -> np.ndarray:
        """Every key, sorted."""
        self.compact()
        return self._base

    def values(self) -> np.ndarray:
        """The values, aligned with `keys()`."""
        self.compact()
        return self._base_values

    def partners(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All pairs whose first id is in `a`: (index into `a`, second id), grouped by `a`
        order. Reads the base and the pending arrays as they are (no merge). The last answer
        is kept (read-only arrays): a step's feeds and observations ask for the same users."""
        a = np.asarray(a, dtype=np.int64)
        memo = self._memo
        if memo is not None and all(x is y for x, y in zip(memo[0], self.state())) and np.array_equal(memo[1], a):
            return memo[2]
        owner, second = self._partners(a)
        owner.flags.writeable = second.flags.writeable = False
        self._memo = (self.state(), a.copy(), (owner, second), None)
        return self._memo[2]  # (the same tuple a repeated question gets)

    def contains_among(self, a: np.ndarray, owner: np.ndarray, b: np.ndarray) -> np.ndarray:
        """`contains(a[owner], b)` looked up among the pairs of `a` (`partners(a)`): for many
        questions about a few first ids (a step's served users), faster than searching the
        whole set. The partners are looked up in a bit table (`_PairTable`) where it is small,
        else in their sorted keys; either is kept with them."""
        a = np.asarray(a, dtype=np.int64)
        row, second = self.partners(a)
        memo = self._memo
        if memo[3] is None:
            lo, width = _PairTable.span(second)
            if len(a) * width <= _TABLE_CELLS:
                lookup = _PairTable(len(a), row, second, lo, width)
            else:
                lookup = np.sort(pair_keys(row, second), kind="stable")
            self._memo = memo = (*memo[:3], lookup)
        owner, b = np.broadcast_arrays(np.asarray(owner, dtype=np.int64), np.asarray(b, dtype=np.int64))
        shape, owner, b, lookup = owner.shape, owner.ravel(), b.ravel(), memo[3]
        if isinstance(lookup, _PairTable):
            return lookup.contains(owner, b).reshape(shape)
        return _isin_sorted(lookup, pair_keys(owner, b)).reshape(shape)

    def _partners(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


_EMPTY = np.empty(0, dtype=np.int64)  # never written to: no PairSet writes an array in place

_TABLE_CELLS = 1 << 22  # owners x the span of their partners' ids up to which `contains_among` uses a table


class _PairTable:
    """The pairs (owner, second id) of a few owners as a table of bits over the span of the
    second ids: a question is one index into it, where a binary search over the sorted pairs
    costs ~30 ns (a step's 1000 users and their follows: 44 against 313 us for 10,000
    questions; building it, 85 against 24 us)."""

    def __init__(self, n_owners: int, row: np.ndarray, second: np.ndarray, lo: int, width: int):
        self.lo, self.width = lo, width  # (`span(second)`)
        self.bits = np.zeros(n_owners * width, dtype=bool)
        self.bits[row * width + (second - lo)] = True

    @staticmethod
    def span(second: np.ndarray) -> tuple[int, int]:
        """(lowest id, ids from it to the highest) of `second`; (0, 0) when empty."""
        lo = int(second.min()) if len(second) else 0
        return lo, int(second.max()) - lo + 1 if len(second) else 0

    def contains(self, owner: np.ndarray, b: np.ndarray) -> np.ndarray:
        """True where (owner[i], b[i]) is a pair (owner: an index of the owners)."""
        at = b - self.lo
        inside = (at >= 0) & (at < self.width)
        found = np.zeros(len(b), dtype=bool)
        found[inside] = self.bits[owner[inside] * self.width + at[inside]]
        return found


def _partners_in(keys: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    start = np.searchsorted(keys, a << _PAIR_SHIFT)
    stop = np.searchsorted(keys, (a + 1) << _PAIR_SHIFT)
    counts = stop - start
    owner = np.repeat(np.arange(len(a), dtype=np.int64), counts)
    offsets = np.arange(counts.sum(), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, keys[np.repeat(start, counts) + offsets] & _LOW_MASK
