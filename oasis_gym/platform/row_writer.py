"""Writing many rows per SQL statement (`RowWriter`): the journal's rows, and any hook's."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from itertools import islice
from typing import NamedTuple

import numpy as np


def nan_to_null(values: np.ndarray) -> list:
    """The values as Python floats, NaN as None (SQL NULL)."""
    return [None if x != x else x for x in values.tolist()]


# Rows per statement, at most (and never more bound values than the connection allows: 32766
# by default since SQLite 3.32, 999 before).
MAX_STATEMENT_ROWS = 4096


@functools.lru_cache(maxsize=1024)
def rows_sql(head: str, width: int, rows: int, tail: str) -> str:
    """`head` + `rows` groups of `width` placeholders + `tail` (cached: a few dozen texts in all)."""
    return head + ",".join(["(" + ",".join("?" * width) + ")"] * rows) + tail


class Same(NamedTuple):
    """A column with one value in every row (created_at, step ...)."""

    value: object


class RowWriter:
    """Writes rows as statements of many rows each, `head` + "(?,..),(?,..)" + `tail`.

    One `execute` binds all of a statement's rows in one C call, where `executemany` pays the
    Python per-row overhead (about half of a row's cost). Statement sizes are a multiple of
    the largest size plus powers of two, so a few dozen SQL texts cover every step and stay
    in the connection's statement cache. Columns become Python values one statement at a
    time, and each statement goes to `emit(sql, params)` (default: `conn.execute`) as soon as
    it is built, so the initial follow graph of a million users (27M edges) streams in
    bounded memory.
    """

    def __init__(self, conn: sqlite3.Connection, emit: Callable[[str, list], object] | None = None):
        self.emit = emit or conn.execute
        self.max_values = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)  # bound values per statement

    def rows(self, head: str, columns: list, tail: str = "") -> None:
        """Write the rows of `columns`: numpy arrays, lists, `Same` values or iterators (taken
        lazily); the first column gives the row count."""
        width = len(columns)
        n = len(columns[0])
        columns = [c if isinstance(c, (np.ndarray, list, Same)) else iter(c) for c in columns]
        most = 1 << min(MAX_STATEMENT_ROWS, self.max_values // width).bit_length() - 1
        start = 0
        while start < n:
            size = most if n - start >= most else 1 << (n - start).bit_length() - 1
            flat = [None] * (width * size)
            for k, col in enumerate(columns):
                flat[k::width] = _take(col, start, size)
            self.emit(rows_sql(head, width, size, tail), flat)
            start += size


def _take(col, start: int, size: int) -> list:
    if isinstance(col, np.ndarray):
        return col[start : start + size].tolist()
    if isinstance(col, list):
        return col[start : start + size]
    if isinstance(col, Same):
        return [col.value] * size
    return list(islice(col, size))
