"""Cell-level parsing shared by the profile loaders: CSV reading, literal lists, ids, opinions.

Every helper raises :class:`ProfileError` naming the file, the 1-based data row and the field.
"""

from __future__ import annotations

import ast
import csv
import io
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import bounded_json
from .model import ProfileError
from .topics import HOURS, topic_mask

_INT = r"[+-]?\d{1,18}"
_NUM = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_INT_LIST = re.compile(rf"\s*\[\s*(?:{_INT}\s*(?:,\s*{_INT}\s*)*,?\s*)?\]\s*")
_NUM_LIST = re.compile(rf"\s*\[\s*(?:{_NUM}\s*(?:,\s*{_NUM}\s*)*,?\s*)?\]\s*")
_INDEX_COLUMN = re.compile(r"^(Unnamed: \d+(\.\d+)?)?$")

# Columns that become Population fields (or are redundant with them) rather than extra.
_TWITTER_HANDLED = frozenset(
    {
        "username",
        "name",
        "description",
        "user_char",
        "following_agentid_list",
        "previous_tweets",
        "activity_level_frequency",
        "activity_level",
        "is_super_user",
        "interested_topics",
        "opinion",
        "following_list",
        "follower_agentid_list",
        "tweets_id",
        "followers_count",
        "follower_count",
        "following_count",
        "user_id",
    }
)


def _read_text(path: Path) -> str:
    """Decode UTF-8 (BOM tolerated); undecodable bytes become surrogates to be located."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ProfileError(path, None, None, f"cannot read file: {e}") from e
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    return raw.decode("utf-8", errors="surrogateescape")


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _bad_bytes(s: str) -> str:
    return repr(s.encode("utf-8", errors="surrogateescape")[:60])


def _read_csv(path: Path, required: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a UTF-8 CSV; checks encoding, field counts, required columns."""
    text = _read_text(path)
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))  # long id lists
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise ProfileError(path, None, None, f"not a valid CSV file: {e}") from e
    if not rows or not any(rows[0]):
        raise ProfileError(path, "header", None, "file is empty (no header row)")
    header, body = rows[0], rows[1:]
    while body and not any(body[-1]):  # tolerate trailing blank lines
        body.pop()
    bad_encoding = _has_surrogate(text)
    for c, col in enumerate(header):
        if bad_encoding and _has_surrogate(col):
            raise ProfileError(path, "header", f"column {c + 1}", f"not valid UTF-8: {_bad_bytes(col)}")
    missing = [c for c in required if c not in header]
    if missing:
        raise ProfileError(path, "header", missing[0], f"missing required column(s) {missing}; found {header}")
    for r, row in enumerate(body, start=1):
        if len(row) != len(header):
            raise ProfileError(path, r, None, f"has {len(row)} fields, header has {len(header)}")
        if bad_encoding:
            for col, cell in zip(header, row):
                if _has_surrogate(cell):
                    raise ProfileError(path, r, col, f"not valid UTF-8: {_bad_bytes(cell)}")
    return header, body


def _literal(path: Path, row: int, field: str, cell: str) -> Any:
    try:
        value = ast.literal_eval(cell.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
        raise ProfileError(path, row, field, f"cannot parse {cell[:80]!r} as a Python literal ({e})") from e
    fault = bounded_json.first_fault(value)  # e.g. a '\ud800' escape: loads, then breaks SQLite
    if fault:
        raise ProfileError(path, row, field, fault)
    return value


def _parse_number_lists(
    path: Path, field: str, cells: Sequence[str], *, integer: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Parse a column of "[1, 2, 3]" cells in one batch; returns (counts, flat values).

    Cells are validated with a regex and their interiors joined and converted by one
    ``np.fromstring`` call (1M rows in well under a second). Cells the regex rejects go
    through ``ast.literal_eval`` so any Python list/tuple literal (or a bare number, read
    as a one-element list) is accepted; anything else is a ProfileError naming the row.
    Empty cells (pandas' NaN) are empty lists.
    """
    pattern = _INT_LIST if integer else _NUM_LIST
    interiors: list[str] = []
    for r, cell in enumerate(cells, start=1):
        if not cell.strip():
            interiors.append("")
        elif pattern.fullmatch(cell):
            inner = cell[cell.index("[") + 1 : cell.rindex("]")].strip()
            interiors.append(inner[:-1] if inner.endswith(",") else inner)
        else:
            interiors.append(_fallback_numbers(path, r, field, cell, integer))
    counts = np.array([s.count(",") + 1 if s else 0 for s in interiors], dtype=np.int64)
    joined = ",".join(s for s in interiors if s)
    dtype = np.int64 if integer else np.float64
    values = np.fromstring(joined, dtype=dtype, sep=",") if joined else np.zeros(0, dtype=dtype)
    if values.size != counts.sum():  # cannot happen after validation; guard anyway
        raise ProfileError(path, None, field, "internal parse mismatch")
    return counts, values


def _fallback_numbers(path: Path, row: int, field: str, cell: str, integer: bool) -> str:
    value = _literal(path, row, field, cell)
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    kinds = (int,) if integer else (int, float)
    for x in items:
        if isinstance(x, bool) or not isinstance(x, kinds) or (isinstance(x, float) and not math.isfinite(x)):
            what = "integers" if integer else "finite numbers"
            raise ProfileError(path, row, field, f"must be a list of {what}, got {cell[:80]!r}")
        if integer and abs(x) >= 10**18:
            raise ProfileError(path, row, field, f"id {x} is out of range")
    return ",".join(repr(x) for x in items)


def _parse_follow_edges(path: Path, cells: Sequence[str], n: int, drop_self: bool) -> tuple[np.ndarray, np.ndarray]:
    counts, dst = _parse_number_lists(path, "following_agentid_list", cells, integer=True)
    src = np.repeat(np.arange(n, dtype=np.int64), counts)
    bad = np.flatnonzero((dst < 0) | (dst >= n))
    if bad.size:
        k = int(bad[0])
        raise ProfileError(
            path, int(src[k]) + 1, "following_agentid_list", f"agent id {int(dst[k])} is out of range [0, {n})"
        )
    keep = np.ones(src.size, dtype=bool)
    if drop_self:
        keep &= src != dst
    key = src * np.int64(max(n, 1)) + dst
    order = np.argsort(key, kind="stable")
    dup = np.zeros(src.size, dtype=bool)
    dup[order[1:]] = key[order[1:]] == key[order[:-1]]
    keep &= ~dup
    return src[keep], dst[keep]


def _parse_previous_tweets(path: Path, cells: Sequence[str]) -> list[tuple[int, str]]:
    """(author, text) pairs; a cell is a list of tweets, or a list holding a list's repr."""
    posts: list[tuple[int, str]] = []
    for i, cell in enumerate(cells):
        s = cell.strip()
        if not s or s == "[]":
            continue
        value = _literal(path, i + 1, "previous_tweets", s)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise ProfileError(path, i + 1, "previous_tweets", f"must be a list of strings, got {type(value).__name__}")
        for item in value:
            for text in _flatten_tweet(path, i + 1, item):
                if _has_surrogate(text):
                    raise ProfileError(path, i + 1, "previous_tweets", "not valid UTF-8 (a lone surrogate escape)")
                posts.append((i, text))
    return posts


def _flatten_tweet(path: Path, row: int, item: Any) -> list[str]:
    if not isinstance(item, str):
        raise ProfileError(path, row, "previous_tweets", f"tweets must be strings, got {type(item).__name__}")
    s = item.strip()
    if s.startswith("[") and s.endswith("]"):
        try:
            inner = ast.literal_eval(s)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return [item]
        if isinstance(inner, (list, tuple)) and all(isinstance(x, str) for x in inner):
            return list(inner)
    return [item]


def _parse_activity(path: Path, cells: Sequence[str]) -> np.ndarray:
    """(n, 24) raw activity_level_frequency counts, validated."""
    counts, values = _parse_number_lists(path, "activity_level_frequency", cells, integer=False)
    wrong = np.flatnonzero(counts != HOURS)
    if wrong.size:
        r = int(wrong[0])
        raise ProfileError(path, r + 1, "activity_level_frequency", f"has {int(counts[r])} values, expected {HOURS}")
    freq = values.reshape(len(cells), HOURS)
    bad = np.flatnonzero(~np.isfinite(freq).all(axis=1))
    if bad.size:
        r = int(bad[0])
        raise ProfileError(path, r + 1, "activity_level_frequency", "values must be finite numbers")
    neg = np.flatnonzero((freq < 0).any(axis=1))
    if neg.size:
        r = int(neg[0])
        raise ProfileError(path, r + 1, "activity_level_frequency", f"has a negative value {float(freq[r].min())}")
    return freq


def _check_unique_ids(path: Path, ids: Sequence[str]) -> None:
    seen: dict[str, int] = {}
    for r, uid in enumerate(ids, start=1):
        key = uid.strip()
        if key in seen:
            raise ProfileError(path, r, "user_id", f"duplicate user_id {key!r} (first at row {seen[key]})")
        seen[key] = r


def _int_or_none(path: Path, row: int, field: str, cell: str) -> int | None:
    s = cell.strip()
    if not s:
        return None
    try:
        return int(s)
    except ValueError:
        pass
    try:
        x = float(s)
    except ValueError:
        x = math.nan
    if not x.is_integer():
        raise ProfileError(path, row, field, f"not an integer: {s[:40]!r}")
    return int(x)


def _opinions(path: Path, values: Sequence[Any], where: str) -> np.ndarray:
    out = np.zeros(len(values), dtype=np.float32)
    for i, v in enumerate(values):
        row: int | str = i + 1 if where == "row" else f"index {i}"
        if v is None or (isinstance(v, str) and not v.strip()):
            continue
        try:
            x = float(v)
        except (TypeError, ValueError, OverflowError) as e:
            raise ProfileError(path, row, "opinion", f"not a number in [-1, 1]: {str(v)[:40]!r}") from e
        if not -1 <= x <= 1:
            raise ProfileError(path, row, "opinion", f"{x} is outside [-1, 1]")
        out[i] = x
    return out


def _parse_flags(path: Path, cells: Sequence[str], field: str) -> np.ndarray:
    out = np.zeros(len(cells), dtype=bool)
    for r, c in enumerate(cells, start=1):
        s = c.strip().lower()
        if s in ("1", "1.0", "true", "yes"):
            out[r - 1] = True
        elif s not in ("", "0", "0.0", "false", "no"):
            raise ProfileError(path, r, field, f"not a boolean: {c[:40]!r}")
    return out


def _parse_topic_column(path: Path, cells: Sequence[str]) -> tuple[list[list[str]], np.ndarray]:
    raw: list[list[str]] = []
    for r, c in enumerate(cells, start=1):
        if not c.strip():
            raw.append([])
            continue
        value = _literal(path, r, "interested_topics", c)
        raw.append(_topic_list(path, r, value))
    return raw, np.array([topic_mask(t) for t in raw], dtype=np.uint64)


def _topic_list(path: Path, row: int | str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
        raise ProfileError(path, row, "interested_topics", "must be a list of strings")
    return list(value)
