"""Text fitting for prompts: one-line cuts, token-cost estimates and the "water filling" cap.

Why a cost model: the feed budget is in tokens, but prompts are built without a tokenizer.
English prose costs ~1 token per ``chars_per_token`` characters (4.6 with SmolLM2), but a
digit is a token of its own and an emoji or CJK character 2-3 (byte-level BPE). Counting
every character at the prose rate let a post of digit soup or emoji (what a small model
writes) cost several times its share: measured, a 10-post feed budgeted at 270 tokens took
~450. So a text's cost counts an ASCII digit as 1 token, a non-ASCII character as
``NON_ASCII_TOKENS`` and anything else as ``1 / chars_per_token``. Caps stay in characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import accumulate

_WORD_BACKOFF = 12  # a cut moves back to a word boundary at most this many characters
NON_ASCII_TOKENS = 2.5  # SmolLM2: CJK ~2.2, emoji ~2.8 tokens per character
_ISO_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?$")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def one_line(text) -> str:
    """``text`` as one line with single spaces ("" for None)."""
    return " ".join(str(text or "").split())


def token_weights(s: str, chars_per_token: float = 4.5) -> list[float]:
    """Estimated tokens of each character of ``s`` (see module doc)."""
    prose = 1.0 / chars_per_token
    return [1.0 if "0" <= ch <= "9" else NON_ASCII_TOKENS if ord(ch) > 127 else prose for ch in s]


class TextCost:
    """Estimated tokens of the first ``c`` characters of a text, for any cap ``c``."""

    def __init__(self, text, chars_per_token: float = 4.5, limit: int | None = None) -> None:
        s = one_line(text)[:limit]
        self.prefix = [0.0, *accumulate(token_weights(s, chars_per_token))]

    def __call__(self, cap: int) -> float:
        """Estimated tokens of the text cut to ``cap`` characters."""
        return self.prefix[min(max(cap, 0), len(self.prefix) - 1)]


def cut(text, n: int) -> str:
    """One-line text of at most n characters; a cut ends on a word boundary when one is
    near (a split word costs extra tokens and reads badly) and is marked with "…"."""
    s = one_line(text)
    if len(s) <= n:
        return s
    if n <= 1:
        return "…"[: max(n, 0)]
    head = s[: n - 1]
    space = head.rfind(" ")
    if space >= len(head) - _WORD_BACKOFF and space > 0:
        head = head[:space]
    return head.rstrip(" ,;:.-") + "…"


def squash(name) -> str:
    """Lower-case alphanumerics of a name ("User_13" -> "user13"), to compare handles."""
    return "".join(ch for ch in str(name).lower() if ch.isalnum())


def field(view: dict, keys: Iterable[str]):
    """First non-empty value among ``keys`` in the view or its ``profile`` dict."""
    prof = view.get("profile") if isinstance(view.get("profile"), dict) else {}
    for k in keys:
        for src in (view, prof):
            v = src.get(k)
            if v not in (None, "", [], ()):
                return v
    return None


def fill_cap(costs: Sequence[TextCost], budget: float, lo: int, hi: int) -> int | None:
    """Largest cap c in [lo, hi] whose cut texts fit ``budget`` tokens ("water filling":
    texts shorter than c stay whole, longer ones are all cut to c characters); None if even
    lo overruns."""

    def total(c: int) -> float:
        return sum(cost(c) for cost in costs)

    if total(lo) > budget:
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if total(mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def author(user_id, name) -> str:
    """``u<id>`` (what a follow reply needs) plus the handle unless it only restates the id."""
    if user_id is None:
        return f"@{name or '?'}"
    uid = int(user_id)
    return f"u{uid}" if not name or str(name) in (f"user{uid}", f"user_{uid}") else f"u{uid} @{name}"


def short_time(t) -> str:
    """An ISO date-time without its year and seconds ("Jan 1 08:06"): the digits of
    "2026-01-01 08:06:00" cost a token each. Other values pass through."""
    m = _ISO_TIME.match(str(t))
    if m:
        _, mo, d, hm = m.groups()
        if 1 <= int(mo) <= 12:
            return f"{_MONTHS[int(mo) - 1]} {int(d)} {hm}"
    return str(t)
