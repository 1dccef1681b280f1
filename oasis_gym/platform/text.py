"""Text columns and text validation.

Text is data: it is stored and read back byte-exact, never interpreted. The only texts
rejected are those SQLite and UTF-8 cannot hold faithfully (NUL, unpaired surrogates) and
those over the configured length.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..actions import Result


class TextColumn(Sequence):
    """A column of strings: a (possibly lazy) base sequence plus appended values.

    Synthetic populations of a million users pass a lazy sequence as the base, so no
    million strings are built until someone reads them.
    """

    def __init__(self, base: Sequence[str] | None = None):
        self._base = base if base is not None else []
        self._nbase = len(self._base)
        self._extra: list[str] = []

    def __len__(self) -> int:
        return self._nbase + len(self._extra)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if i < self._nbase:
            return self._base[i]
        return self._extra[i - self._nbase]

    def take(self, ids: list[int]):
        """Iterate the values at `ids`; a run of consecutive base ids streams from the base
        sequence's own iterator (cheap for lazy synthetic columns)."""
        if ids and ids[-1] - ids[0] == len(ids) - 1 and ids[-1] < self._nbase and hasattr(self._base, "_with_ids"):
            return iter(self._base[ids[0] : ids[-1] + 1])
        return (self[i] for i in ids)

    def text_keys(self, ids: np.ndarray) -> np.ndarray | None:
        """Keys of the texts at `ids` such that equal keys mean equal texts (a lazy base
        sequence's own, e.g. a synthetic bio's interest mask), or None."""
        ids = np.asarray(ids, dtype=np.int64)
        if not hasattr(self._base, "text_keys") or (len(ids) and int(ids.max()) >= self._nbase):
            return None
        return self._base.text_keys(ids)

    def texts(self, ids: np.ndarray) -> list[str]:
        """The texts at `ids` as a list (a lazy base renders each distinct text once)."""
        ids = np.asarray(ids, dtype=np.int64)
        if hasattr(self._base, "render_many") and (not len(ids) or int(ids.max()) < self._nbase):
            return self._base.render_many(ids)
        return [self[i] for i in ids.tolist()]

    def append(self, value: str) -> None:
        """Add one row."""
        self._extra.append(value)

    def extend(self, values) -> None:
        """Add rows."""
        self._extra.extend(values)


# module constants: member lookups on an Enum class are slow on Python 3.11, and this runs per text
_OK, _INVALID, _EMPTY, _TOO_LONG = Result.OK, Result.TEXT_INVALID, Result.TEXT_EMPTY, Result.TEXT_TOO_LONG


def check_text(text: object, max_length: int, allow_empty: bool = False) -> Result:
    """Why `text` cannot be stored, or Result.OK."""
    if not isinstance(text, str):
        return _INVALID if text is not None else (_OK if allow_empty else _EMPTY)
    if not text.strip():
        return _OK if allow_empty else _EMPTY
    if len(text) > max_length:
        return _TOO_LONG
    return _OK if is_storable(text) else _INVALID


def is_storable(text: str) -> bool:
    """Whether SQLite can hold `text` as TEXT and give it back byte-exact: no NUL, and no
    unpaired surrogates (which have no UTF-8 form)."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
