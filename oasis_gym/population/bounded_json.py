"""Bounded reading of JSON / Python-literal values from user files (profile files).

Why: ``json.loads`` raises ``RecursionError`` on deeply nested input (100k ``[``) and
``ValueError`` on integers over 4,300 digits (Python's int-string limit), neither saying
where; a ``\\ud800`` escape decodes to a lone surrogate that loads fine and crashes the
first SQLite write. Here loading never raises those: over-long integers decode to a
:class:`LongInt` marker, :func:`first_fault` finds markers, lone surrogates and excessive
depth in a decoded value (iteratively, so it cannot overflow the stack itself), and
:func:`locate_failure` finds which element (and key) of a top-level JSON list the decoder
could not handle, so the caller can name file, row and field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 64  # no profile field needs more nesting; far below the interpreter's limit
MAX_INT_DIGITS = 4000  # below Python's default int-string limit (4,300)

_WS = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True)
class LongInt:
    """An integer literal too long to convert (only its length is kept)."""

    digits: int


def _parse_int(s: str) -> int | LongInt:
    digits = len(s) - s.startswith("-")
    return int(s) if digits <= MAX_INT_DIGITS else LongInt(digits)


DECODER = json.JSONDecoder(parse_int=_parse_int)


def loads(text: str) -> Any:
    """``json.loads`` whose over-long integers become :class:`LongInt` (may still raise
    ``json.JSONDecodeError`` and ``RecursionError``)."""
    return DECODER.decode(text)


def has_surrogate(s: str) -> bool:
    """True if ``s`` cannot be written as UTF-8 (lone surrogates, undecodable bytes)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def first_fault(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """Why ``value`` (decoded JSON / literal) cannot be used, or None: a lone surrogate or
    undecodable bytes in a string (dict keys included), a :class:`LongInt`, or nesting
    deeper than ``max_depth``. Iterative, so any depth that was decoded is checked safely."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            if has_surrogate(v):
                return "not valid UTF-8 (undecodable bytes or a lone surrogate escape)"
        elif isinstance(v, LongInt):
            return f"holds a {v.digits}-digit number (too large)"
        elif isinstance(v, (list, tuple, dict)):
            if depth >= max_depth:
                return f"nested more than {max_depth} levels deep"
            items = list(v.keys()) + list(v.values()) if isinstance(v, dict) else v
            stack.extend((x, depth + 1) for x in items)
    return None


def locate_failure(text: str) -> tuple[int | None, str | None]:
    """(list index, key) of the top-level list element whose decoding fails, for a text that
    ``loads`` rejected with RecursionError. Elements are decoded one by one (objects member by
    member) with the same decoder; (None, None) if the text is not a list or nothing fails."""
    pos = _WS.match(text, 0).end()
    if not text.startswith("[", pos):
        return None, None
    pos = _WS.match(text, pos + 1).end()
    index = 0
    while pos < len(text) and text[pos] != "]":
        if text[pos] == "{":
            key, pos = _locate_in_object(text, pos)
            if key is not False:
                return index, key
        else:
            try:
                _, pos = DECODER.raw_decode(text, pos)
            except (RecursionError, ValueError):
                return index, None
        pos = _WS.match(text, pos).end()
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()
        index += 1
    return None, None


def _locate_in_object(text: str, pos: int) -> tuple[str | None | bool, int]:
    """Decode one object member by member -> (failing key, or None before any key, or False
    when it decodes; position after the object)."""
    pos = _WS.match(text, pos + 1).end()
    key: str | None = None
    while pos < len(text) and text[pos] != "}":
        try:
            key, pos = DECODER.raw_decode(text, pos)
            pos = _WS.match(text, pos).end()
            if not text.startswith(":", pos):
                return str(key), pos
            _, pos = DECODER.raw_decode(text, _WS.match(text, pos + 1).end())
        except (RecursionError, ValueError):
            return (None if key is None else str(key)), pos
        pos = _WS.match(text, pos).end()
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()
        key = None
    return False, pos + 1
