"""The initial follow graph of a large population, written compactly: one row per follower.

SQLite inserts a row in about a microsecond (measured: 1.1-1.4 us natively, 1.6 us from
Python), so the 300M follow edges of a 10M-user population would take five minutes or more
as rows. A journal whose first commit seeds at least `MIN_ROWS` follows keeps them in
``follow_seed`` instead: per follower, the row id of its first follow and its followees as
a JSON array (fixed-width numbers built with numpy, ~10 bytes an edge). OASIS's ``follow``
becomes a view with the same columns, the seeded follows (through SQLite's built-in
``json_each``; the row id of a follower's j-th followee is its ``first_id + j``) followed by
the run's own (table ``follow_run``); a seeded follow that is undone is listed in
``follow_unfollowed`` (and counted in its follower's ``n_unfollowed``, so the view looks it up
only for those followers). Reading SQL is unchanged: ``SELECT ... FROM follow WHERE
follower_id = ?`` is a primary-key look-up, a full scan expands every array (a few hundred
ns an edge). Journals seeding fewer follows keep the plain ``follow`` table.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from .row_writer import RowWriter, Same
from .store import strictly_increasing, unpack_keys

MIN_ROWS = 1_000_000  # seeded follows from which a journal stores them compactly
_EDGES_PER_BATCH = 1 << 18  # followees turned into JSON text at a time (SQLite writes while the next are made)

COMPACT_SCHEMA = """
DROP TABLE follow;
CREATE TABLE follow_run (follow_id INTEGER PRIMARY KEY, follower_id INTEGER, followee_id INTEGER,
    created_at DATETIME);
CREATE TABLE follow_seed (follower_id INTEGER PRIMARY KEY, first_id INTEGER, followees TEXT,
    created_at DATETIME, n_unfollowed INTEGER DEFAULT 0);
CREATE TABLE follow_unfollowed (follow_id INTEGER PRIMARY KEY);
CREATE VIEW follow AS
    SELECT s.first_id + j.key AS follow_id, s.follower_id AS follower_id, j.value AS followee_id,
           s.created_at AS created_at
    FROM follow_seed s, json_each(s.followees) j
    WHERE s.n_unfollowed = 0
       OR NOT EXISTS (SELECT 1 FROM follow_unfollowed u WHERE u.follow_id = s.first_id + j.key)
    UNION ALL
    SELECT follow_id, follower_id, followee_id, created_at FROM follow_run;
"""


class FollowSeed:
    """How a journal stores follows: plainly (table ``follow``) or compactly (see the module
    docstring). `table` is where the run's follow rows go."""

    def __init__(self, conn: sqlite3.Connection):
        self.compact = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'follow_seed'").fetchone() is not None
        self._conn = conn
        self._rows: tuple | None = None  # (followers, their first row ids, end of the seeded ids)
        self._pending: tuple | None = None  # the same, of a seed written by a commit in progress

    @property
    def table(self) -> str:
        """The table the run's follow rows are written to."""
        return "follow_run" if self.compact or self._pending is not None else "follow"

    def write_seed(self, sql: RowWriter, chunks: list, now: str) -> list:
        """Write the first chunk of a new journal's follow inserts compactly if it is a seed
        (at least `MIN_ROWS` pairs, sorted, row ids consecutive); return the chunks left to
        write as rows."""
        if self.compact or not chunks:
            return chunks
        keys, ids = chunks[0]
        if len(keys) < MIN_ROWS or int(ids[-1]) - int(ids[0]) != len(ids) - 1 or not strictly_increasing(keys):
            return chunks
        for statement in COMPACT_SCHEMA.split(";"):
            if statement.strip():
                sql.emit(statement, [])
        followers, starts = _followers(keys)
        first = starts + int(ids[0])
        sql.rows(
            "INSERT INTO follow_seed(follower_id, first_id, followees, created_at) VALUES ",
            [followers, first, _json_arrays(keys, starts), Same(now)],
        )
        self._pending = (followers, first, int(ids[-1]) + 1)
        return chunks[1:]

    def delete(self, sql: RowWriter, ids: np.ndarray) -> None:
        """Delete follow rows by row id (seeded ones are listed as undone)."""
        if not (self.compact or self._pending is not None):
            sql.rows("DELETE FROM follow WHERE follow_id IN (VALUES ", [ids], ")")
            return
        followers, first, end = self._seed_rows()
        seeded = ids[(ids >= first[0]) & (ids < end)] if len(first) else ids[:0]
        sql.rows("DELETE FROM follow_run WHERE follow_id IN (VALUES ", [ids], ")")
        if len(seeded):
            sql.rows("INSERT INTO follow_unfollowed(follow_id) VALUES ", [seeded])
            who, count = np.unique(followers[np.searchsorted(first, seeded, side="right") - 1], return_counts=True)
            sql.rows(
                "UPDATE follow_seed SET n_unfollowed = n_unfollowed + c.column2 FROM (VALUES ",
                [who, count],
                ") AS c WHERE follow_seed.follower_id = c.column1",
            )

    def committed(self) -> None:
        """The commit that wrote a seed went through."""
        if self._pending is not None:
            self.compact, self._rows, self._pending = True, self._pending, None

    def aborted(self) -> None:
        """The commit that wrote a seed was rolled back."""
        self._pending = None

    def _seed_rows(self) -> tuple[np.ndarray, np.ndarray, int]:
        if self._pending is not None:
            return self._pending
        if self._rows is None:  # a continued journal: read once, when a seeded follow is first undone
            rows = self._conn.execute(
                "SELECT follower_id, first_id, first_id + json_array_length(followees) FROM follow_seed"
                " ORDER BY follower_id"
            ).fetchall()
            cols = np.array(rows, dtype=np.int64).reshape(-1, 3)
            self._rows = (cols[:, 0], cols[:, 1], int(cols[-1, 2]) if len(cols) else 0)
        return self._rows


def _followers(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each follower of sorted pair keys, the position of its first pair)."""
    bounds = [np.empty(0, np.int64)]
    prev = None
    for at in range(0, len(keys), _EDGES_PER_BATCH):
        a = keys[at : at + _EDGES_PER_BATCH] >> 32
        new = np.flatnonzero(np.diff(a, prepend=-1 if prev is None else prev)) + at
        bounds.append(new)
        prev = a[-1]
    starts = np.concatenate(bounds)
    return keys[starts] >> 32, starts


def _json_arrays(keys: np.ndarray, starts: np.ndarray):
    """Per follower (pairs [starts[i], starts[i + 1]) of `keys`), the JSON array of its
    followees, e.g. ``[  12,3405 ]``: numbers right-aligned in fixed-width fields (blanks
    are JSON whitespace), built by numpy for a batch of followers at a time."""
    ends = np.append(starts[1:], len(keys))
    width = len(str(int((keys & np.int64(0xFFFFFFFF)).max()))) if len(keys) else 1
    field = width + 2  # separator, digits, closing bracket or blank
    lo = 0
    while lo < len(starts):
        hi = int(np.searchsorted(starts, starts[lo] + _EDGES_PER_BATCH, side="left"))
        hi = max(hi, lo + 1)
        e0, e1 = int(starts[lo]), int(ends[hi - 1])
        _, followee = unpack_keys(keys[e0:e1])
        text = _fixed_width(followee, width)
        first = (starts[lo:hi] - e0) * field  # where each follower's array starts in the text
        text[first] = ord("[")
        text[(ends[lo:hi] - e0) * field - 1] = ord("]")
        buf = text.tobytes().decode("ascii")
        stops = (ends[lo:hi] - e0) * field
        yield from (buf[a:b] for a, b in zip(first.tolist(), stops.tolist()))
        lo = hi


def _fixed_width(values: np.ndarray, width: int) -> np.ndarray:
    """The bytes of ``,<values right-aligned in width digits> `` for each value, one flat
    uint8 array (the separator and the trailing blank are overwritten for array ends)."""
    field = width + 2
    out = np.empty((len(values), field), dtype=np.uint8)
    out[:, 0] = ord(",")
    out[:, -1] = ord(" ")
    x = values.astype(np.uint32 if len(values) and int(values.max()) < 2**32 else np.uint64)
    q, digit = np.empty_like(x), np.empty_like(x)
    for k in range(width):  # digits from the right, in place (half the time of % and //)
        np.floor_divide(x, 10, out=q)
        np.multiply(q, 10, out=digit)
        np.subtract(x, digit, out=digit)
        digit += ord("0")
        if k:  # a leading zero (nothing left of the number) becomes a blank
            np.copyto(digit, ord(" "), where=x == 0)
        out[:, width - k] = digit
        x, q = q, x
    return out.reshape(-1)
