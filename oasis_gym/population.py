"""User populations: OASIS profile files (Twitter CSV, Reddit JSON) and synthetic ones.

A :class:`Population` is the columnar description of every user a simulation starts with:
profile text, a 24-value hourly activation probability, the initial follow graph, posts
that exist before step 0, an opinion score, an interest bitmask and a core-user flag.
Agent ids are row positions (0-based), exactly as in OASIS, where the row index of the
profile CSV is the agent id that ``following_agentid_list`` refers to.

Loaders raise :class:`ProfileError` naming the file, the 1-based data row (CSV) or the
0-based JSON index, and the field, so a broken profile file is fixed in one look.
"""

from __future__ import annotations

import ast
import csv
import functools
import importlib.resources
import io
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np

from . import bounded_json

__all__ = [
    "TOPICS",
    "TOPIC_INDEX",
    "OTHER_TOPIC",
    "HOURS",
    "DEFAULT_TWITTER_ACTIVITY",
    "DEFAULT_REDDIT_ACTIVITY",
    "ProfileError",
    "Population",
    "IdStrings",
    "ProfileStrings",
    "topic_mask",
    "topic_names",
    "oasis_activity_probability",
    "oasis_daily_rhythm",
    "load_twitter_csv",
    "load_reddit_json",
    "load_profiles",
    "synthetic",
    "data_path",
]

HOURS = 24

# Interest topics. The first ten are the topic_category values of OASIS' all_topics.csv
# (Twitter15/16 cascades), the next five the interested_topics of OASIS' Reddit user
# generator, then common platform topics. "Other" is the catch-all bit for any name not in
# this list (the raw names stay in Population.extra). Fixed order: bit i is TOPICS[i].
TOPICS: tuple[str, ...] = (
    "Politics", "Entertainment", "Terrorism & War", "Science & Technology", "Business",
    "Urban Legends", "Health", "Natural Disasters", "Education",
    "Economics", "Information Technology", "Culture & Society", "General News", "Fun",
    "Technology", "Science", "Sports", "Finance", "Environment", "Climate", "Religion",
    "Crime", "Law", "Music", "Movies", "Gaming", "Art", "Books", "Food", "Travel",
    "Fashion", "Lifestyle", "Parenting", "Pets", "Celebrities", "Memes", "History",
    "Philosophy", "Psychology", "Relationships", "Cryptocurrency", "Space", "Fitness",
    "Career", "Marketing", "Media", "Other",
)
assert len(TOPICS) <= 64 and len(set(TOPICS)) == len(TOPICS)
OTHER_TOPIC = "Other"
TOPIC_INDEX: dict[str, int] = {t: i for i, t in enumerate(TOPICS)}
_TOPIC_LOOKUP: dict[str, int] = {t.lower(): i for i, t in enumerate(TOPICS)}
_TOPIC_LOOKUP.update({
    "others": TOPIC_INDEX["Other"],
    "it": TOPIC_INDEX["Information Technology"],
    "it (information technology)": TOPIC_INDEX["Information Technology"],
    "science and technology": TOPIC_INDEX["Science & Technology"],
    "culture and society": TOPIC_INDEX["Culture & Society"],
    "terrorism and war": TOPIC_INDEX["Terrorism & War"],
    "news": TOPIC_INDEX["General News"],
    "tech": TOPIC_INDEX["Technology"],
})

# Activation probability per 3-minute step when a file carries no activity information.
# Twitter: current OASIS activates every agent it is handed at each env.step (its examples
# pass LLMAction() for all agents), i.e. probability 1. Reddit: OASIS' Reddit scripts
# activate each agent with ``activate_prob`` whose default is 0.1.
DEFAULT_TWITTER_ACTIVITY = 1.0
DEFAULT_REDDIT_ACTIVITY = 0.1


class ProfileError(ValueError):
    """A malformed profile file: names the file, the row (or JSON index) and the field."""

    def __init__(self, path: str | Path, row: int | str | None, field: str | None,
                 message: str) -> None:
        self.path = str(path)
        self.row = row
        self.field = field
        where = [self.path]
        if row is not None:
            where.append(row if isinstance(row, str) else f"row {row}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(": ".join(where) + ": " + message)


# --------------------------------------------------------------------------- lazy strings


class _LazySeq(Sequence[str]):
    """Read-only string sequence rendered on access (cheap for 1M synthetic users).

    A list of 1M short strings costs ~1.1 s and ~67 MB to build here (measured); three
    such columns would dominate synthetic generation, so synthetic populations render
    each string when it is read. Slicing returns another lazy sequence; ``==`` compares
    element-wise with any sequence, so ``pop.user_name[:2] == ["user0", "user1"]``.
    """

    def __init__(self, ids: range | np.ndarray) -> None:
        self._ids = ids

    def _render(self, i: int) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _with_ids(self, ids: range | np.ndarray) -> _LazySeq:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._ids = ids
        return clone

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, k: int) -> str: ...
    @overload
    def __getitem__(self, k: slice) -> _LazySeq: ...

    def __getitem__(self, k: int | slice | np.integer) -> str | _LazySeq:
        if isinstance(k, slice):
            return self._with_ids(self._ids[k])
        return self._render(int(self._ids[int(k)]))

    def take(self, idx: np.ndarray) -> _LazySeq:
        """Lazy sub-sequence at the given positions (used by Population.subset)."""
        base = self._ids if isinstance(self._ids, np.ndarray) else np.arange(
            self._ids.start, self._ids.stop, self._ids.step, dtype=np.int64)
        ids = base[np.asarray(idx, dtype=np.int64)]
        return self._with_ids(ids)

    def __iter__(self) -> Iterator[str]:
        for i in self._ids:
            yield self._render(int(i))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        head = ", ".join(repr(s) for s in self[:3])
        more = ", ..." if len(self) > 3 else ""
        return f"{type(self).__name__}([{head}{more}], len={len(self)})"


class IdStrings(_LazySeq):
    """``template.format(i=user_id)`` for each user id, e.g. ``IdStrings("user{i}", n)``."""

    def __init__(self, template: str, n_or_ids: int | range | np.ndarray) -> None:
        super().__init__(range(n_or_ids) if isinstance(n_or_ids, int) else n_or_ids)
        self.template = template

    def _render(self, i: int) -> str:
        return self.template.format(i=i)


class ProfileStrings(_LazySeq):
    """Bio or persona text of synthetic users, rendered from their interests and opinion.

    Gives an LLM policy something concrete to role-play without storing 1M strings.
    ``kind`` is "bio" (short) or "persona" (the system-prompt description).
    """

    def __init__(self, kind: str, interests: np.ndarray, opinion: np.ndarray,
                 is_core: np.ndarray, ids: range | np.ndarray | None = None) -> None:
        if kind not in ("bio", "persona"):
            raise ValueError(f"kind must be 'bio' or 'persona', got {kind!r}")
        super().__init__(range(len(interests)) if ids is None else ids)
        self.kind = kind
        self.interests = interests
        self.opinion = opinion
        self.is_core = is_core

    def _render(self, i: int) -> str:
        topics = _topics_text(int(self.interests[i]))
        if self.kind == "bio":
            return f"Into {topics}."
        role = ("an influential account with many followers" if self.is_core[i]
                else "an ordinary user")
        op = float(self.opinion[i])
        lean = ("strongly agree" if op > 0.6 else "lean towards agreeing" if op > 0.2
                else "strongly disagree" if op < -0.6 else "lean towards disagreeing"
                if op < -0.2 else "are undecided")
        return (f"You are user {i}, {role}. You are interested in {topics}. "
                f"On contested claims you {lean} (opinion score {op:+.2f} on a -1..1 scale).")


# --------------------------------------------------------------------------- population


@dataclass(eq=False)
class Population:
    """Every user a simulation starts with, in columns; agent id = position.

    ``user_name``/``name``/``bio``/``persona`` are lists for loaded files and lazy
    sequences (``IdStrings``/``ProfileStrings``) for synthetic ones; both support len(),
    indexing, iteration and slicing.
    """

    n: int
    user_name: Sequence[str]      # OASIS "username" (Twitter and Reddit)
    name: Sequence[str]           # OASIS "name" (Twitter) / "realname" (Reddit)
    bio: Sequence[str]            # Twitter "description" / Reddit "bio"
    persona: Sequence[str]        # Twitter "user_char" / Reddit "persona"
    activity: np.ndarray          # (n, 24) float32 activation probability per step, by hour
    follow_src: np.ndarray        # (E,) int64 follower ids
    follow_dst: np.ndarray        # (E,) int64 followee ids
    previous_posts: list[tuple[int, str]]  # (author id, text) present before step 0
    opinion: np.ndarray           # (n,) float32 in [-1, 1]; 0 where unknown
    interests: np.ndarray         # (n,) uint64 bitmask over TOPICS
    is_core: np.ndarray           # (n,) bool
    extra: list[dict[str, Any]] | None  # other profile fields per user; None for synthetic
    source: str                   # file path or "synthetic(...)"

    def __len__(self) -> int:
        return self.n

    @property
    def num_edges(self) -> int:
        return int(self.follow_src.shape[0])

    def in_degree(self) -> np.ndarray:
        """Followers per user, (n,) int64."""
        return np.bincount(self.follow_dst, minlength=self.n).astype(np.int64)

    def out_degree(self) -> np.ndarray:
        """Followees per user, (n,) int64."""
        return np.bincount(self.follow_src, minlength=self.n).astype(np.int64)

    def validate(self, *, allow_self_follows: bool = False) -> None:
        """Check shapes, dtypes, ranges and edge ids; raise ProfileError on the first fault.

        Edges must be in range, unique and (unless ``allow_self_follows``) not self-loops.
        """
        n = self.n
        err = functools.partial(ProfileError, self.source, None)
        if not isinstance(n, (int, np.integer)) or n < 0:
            raise err("n", f"must be a non-negative int, got {n!r}")
        for field in ("user_name", "name", "bio", "persona"):
            if len(getattr(self, field)) != n:
                raise err(field, f"has {len(getattr(self, field))} entries, expected {n}")
        if self.extra is not None and len(self.extra) != n:
            raise err("extra", f"has {len(self.extra)} entries, expected {n}")
        _check_array(self.source, "activity", self.activity, np.float32, (n, HOURS))
        if not np.all(np.isfinite(self.activity)) or (
                n and (self.activity.min() < 0 or self.activity.max() > 1)):
            raise err("activity", "values must be finite and in [0, 1]")
        _check_array(self.source, "opinion", self.opinion, np.float32, (n,))
        if not np.all(np.isfinite(self.opinion)) or (
                n and (self.opinion.min() < -1 or self.opinion.max() > 1)):
            raise err("opinion", "values must be finite and in [-1, 1]")
        _check_array(self.source, "interests", self.interests, np.uint64, (n,))
        _check_array(self.source, "is_core", self.is_core, np.bool_, (n,))
        self._validate_edges(allow_self_follows)
        for k, post in enumerate(self.previous_posts):
            if (not isinstance(post, tuple) or len(post) != 2 or not isinstance(post[1], str)
                    or not 0 <= int(post[0]) < n):
                raise err("previous_posts", f"entry {k} must be (author id in [0, n), text)")

    def _validate_edges(self, allow_self_follows: bool) -> None:
        n, src, dst = self.n, self.follow_src, self.follow_dst
        err = functools.partial(ProfileError, self.source, None)
        e = src.shape[0] if isinstance(src, np.ndarray) and src.ndim == 1 else -1
        _check_array(self.source, "follow_src", src, np.int64, (e,))
        _check_array(self.source, "follow_dst", dst, np.int64, (e,))
        if src.size == 0:
            return
        for field, ids in (("follow_src", src), ("follow_dst", dst)):
            if ids.min() < 0 or ids.max() >= n:
                bad = int(np.flatnonzero((ids < 0) | (ids >= n))[0])
                raise err(field, f"edge {bad}: id {int(ids[bad])} outside [0, {n})")
        if not allow_self_follows and np.any(src == dst):
            bad = int(np.flatnonzero(src == dst)[0])
            raise err("follow_dst", f"edge {bad}: user {int(src[bad])} follows itself")
        key = src * np.int64(n) + dst
        if key.size > 1 and not np.all(key[1:] > key[:-1]):  # sorted input skips the sort
            key = np.sort(key, kind="stable")  # far faster on partly sorted keys
            dup = np.flatnonzero(key[1:] == key[:-1])
            if dup.size:
                k = int(key[dup[0]])
                raise err("follow_dst", f"duplicate edge {k // n} -> {k % n}")

    def subset(self, ids: Sequence[int] | np.ndarray) -> Population:
        """The users ``ids`` (renumbered 0..len-1 in the given order) and the edges among them."""
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.n):
            raise IndexError("subset ids out of range")
        new = np.full(self.n, -1, dtype=np.int64)
        new[ids] = np.arange(ids.size, dtype=np.int64)
        if np.count_nonzero(new >= 0) != ids.size:
            raise ValueError("subset ids must be unique")
        s, d = new[self.follow_src], new[self.follow_dst]
        keep = (s >= 0) & (d >= 0)

        def pick(seq: Sequence[str]) -> Sequence[str]:
            return seq.take(ids) if isinstance(seq, _LazySeq) else [seq[i] for i in ids]

        return Population(
            n=int(ids.size), user_name=pick(self.user_name), name=pick(self.name),
            bio=pick(self.bio), persona=pick(self.persona),
            activity=self.activity[ids], follow_src=s[keep], follow_dst=d[keep],
            previous_posts=[(int(new[a]), t) for a, t in self.previous_posts if new[a] >= 0],
            opinion=self.opinion[ids], interests=self.interests[ids],
            is_core=self.is_core[ids],
            extra=None if self.extra is None else [self.extra[i] for i in ids],
            source=f"subset({self.source}, n={ids.size})")


def _check_array(source: str, field: str, a: Any, dtype: type, shape: tuple[int, ...]) -> None:
    if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != shape:
        got = (f"{a.dtype} {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__)
        raise ProfileError(source, None, field,
                           f"must be a {np.dtype(dtype).name} array of shape {shape}, got {got}")


# --------------------------------------------------------------------------- topics


def topic_mask(names: Sequence[str]) -> int:
    """Bitmask of topic names (case-insensitive, common aliases); unknown names set Other."""
    mask = 0
    for name in names:
        mask |= 1 << _TOPIC_LOOKUP.get(str(name).strip().lower(), TOPIC_INDEX[OTHER_TOPIC])
    return mask


@functools.lru_cache(maxsize=1 << 16)
def _topics_text(mask: int) -> str:
    """Comma-joined topic names of a mask (cached: a million users share few masks)."""
    return ", ".join(topic_names(mask)) or "nothing in particular"


def topic_names(mask: int) -> list[str]:
    """The TOPICS whose bits are set in ``mask``, in TOPICS order."""
    mask = int(mask)
    return [t for i, t in enumerate(TOPICS) if mask >> i & 1]


# --------------------------------------------------------------------------- activity


def oasis_activity_probability(freq: np.ndarray) -> np.ndarray:
    """OASIS' conversion of ``activity_level_frequency`` counts to activation probabilities.

    Formula (camel-ai/oasis ``oasis/social_agent/agents_generator.py``, ``generate_agents``
    before the env API rewrite; the Twitter scripts then activate an agent in a 3-minute
    step when ``random() < active_threshold[int(hour % 24)]``)::

        p = freq / max(freq over ALL users and hours of the file)
        p[p < 0.6] += 0.1          # "make sure probability is not too small"
        p = round(p, 2)

    The normalisation is over the whole population, not per user, so relative activity
    between users survives. One deviation: OASIS divides by zero when every count is 0;
    here that case gives p = 0 + 0.1 everywhere (what the formula yields for any zero
    count). Input (n, 24) non-negative; output (n, 24) float32 in [0.1, 1].
    """
    freq = np.asarray(freq, dtype=np.float64)
    top = float(freq.max()) if freq.size else 0.0
    p = freq / top if top > 0 else np.zeros_like(freq)
    p[p < 0.6] += 0.1
    return np.round(p, 2).astype(np.float32)


# --------------------------------------------------------------------------- CSV parsing

_INT = r"[+-]?\d{1,18}"
_NUM = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_INT_LIST = re.compile(rf"\s*\[\s*(?:{_INT}\s*(?:,\s*{_INT}\s*)*,?\s*)?\]\s*")
_NUM_LIST = re.compile(rf"\s*\[\s*(?:{_NUM}\s*(?:,\s*{_NUM}\s*)*,?\s*)?\]\s*")
_INDEX_COLUMN = re.compile(r"^(Unnamed: \d+(\.\d+)?)?$")

# Columns that become Population fields (or are redundant with them) rather than extra.
_TWITTER_HANDLED = frozenset({
    "username", "name", "description", "user_char", "following_agentid_list",
    "previous_tweets", "activity_level_frequency", "activity_level", "is_super_user",
    "interested_topics", "opinion", "following_list", "follower_agentid_list", "tweets_id",
    "followers_count", "follower_count", "following_count", "user_id",
})


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
            raise ProfileError(path, "header", f"column {c + 1}",
                               f"not valid UTF-8: {_bad_bytes(col)}")
    missing = [c for c in required if c not in header]
    if missing:
        raise ProfileError(path, "header", missing[0],
                           f"missing required column(s) {missing}; found {header}")
    for r, row in enumerate(body, start=1):
        if len(row) != len(header):
            raise ProfileError(path, r, None,
                               f"has {len(row)} fields, header has {len(header)}")
        if bad_encoding:
            for col, cell in zip(header, row):
                if _has_surrogate(cell):
                    raise ProfileError(path, r, col, f"not valid UTF-8: {_bad_bytes(cell)}")
    return header, body


def _literal(path: Path, row: int, field: str, cell: str) -> Any:
    try:
        value = ast.literal_eval(cell.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
        raise ProfileError(path, row, field,
                           f"cannot parse {cell[:80]!r} as a Python literal ({e})") from e
    fault = bounded_json.first_fault(value)  # e.g. a '\ud800' escape: loads, then breaks SQLite
    if fault:
        raise ProfileError(path, row, field, fault)
    return value


def _parse_number_lists(path: Path, field: str, cells: Sequence[str], *,
                        integer: bool) -> tuple[np.ndarray, np.ndarray]:
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
            inner = cell[cell.index("[") + 1:cell.rindex("]")].strip()
            interiors.append(inner[:-1] if inner.endswith(",") else inner)
        else:
            interiors.append(_fallback_numbers(path, r, field, cell, integer))
    counts = np.array([s.count(",") + 1 if s else 0 for s in interiors], dtype=np.int64)
    joined = ",".join(s for s in interiors if s)
    dtype = np.int64 if integer else np.float64
    values = (np.fromstring(joined, dtype=dtype, sep=",") if joined
              else np.zeros(0, dtype=dtype))
    if values.size != counts.sum():  # cannot happen after validation; guard anyway
        raise ProfileError(path, None, field, "internal parse mismatch")
    return counts, values


def _fallback_numbers(path: Path, row: int, field: str, cell: str, integer: bool) -> str:
    value = _literal(path, row, field, cell)
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    kinds = (int,) if integer else (int, float)
    for x in items:
        if isinstance(x, bool) or not isinstance(x, kinds) or (
                isinstance(x, float) and not math.isfinite(x)):
            what = "integers" if integer else "finite numbers"
            raise ProfileError(path, row, field, f"must be a list of {what}, got {cell[:80]!r}")
        if integer and abs(x) >= 10**18:
            raise ProfileError(path, row, field, f"id {x} is out of range")
    return ",".join(repr(x) for x in items)


def _parse_follow_edges(path: Path, cells: Sequence[str], n: int,
                        drop_self: bool) -> tuple[np.ndarray, np.ndarray]:
    counts, dst = _parse_number_lists(path, "following_agentid_list", cells, integer=True)
    src = np.repeat(np.arange(n, dtype=np.int64), counts)
    bad = np.flatnonzero((dst < 0) | (dst >= n))
    if bad.size:
        k = int(bad[0])
        raise ProfileError(path, int(src[k]) + 1, "following_agentid_list",
                           f"agent id {int(dst[k])} is out of range [0, {n})")
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
            raise ProfileError(path, i + 1, "previous_tweets",
                               f"must be a list of strings, got {type(value).__name__}")
        for item in value:
            for text in _flatten_tweet(path, i + 1, item):
                if _has_surrogate(text):
                    raise ProfileError(path, i + 1, "previous_tweets",
                                       "not valid UTF-8 (a lone surrogate escape)")
                posts.append((i, text))
    return posts


def _flatten_tweet(path: Path, row: int, item: Any) -> list[str]:
    if not isinstance(item, str):
        raise ProfileError(path, row, "previous_tweets",
                           f"tweets must be strings, got {type(item).__name__}")
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
    counts, values = _parse_number_lists(path, "activity_level_frequency", cells,
                                         integer=False)
    wrong = np.flatnonzero(counts != HOURS)
    if wrong.size:
        r = int(wrong[0])
        raise ProfileError(path, r + 1, "activity_level_frequency",
                           f"has {int(counts[r])} values, expected {HOURS}")
    freq = values.reshape(len(cells), HOURS)
    bad = np.flatnonzero(~np.isfinite(freq).all(axis=1))
    if bad.size:
        r = int(bad[0])
        raise ProfileError(path, r + 1, "activity_level_frequency",
                           "values must be finite numbers")
    neg = np.flatnonzero((freq < 0).any(axis=1))
    if neg.size:
        r = int(neg[0])
        raise ProfileError(path, r + 1, "activity_level_frequency",
                           f"has a negative value {float(freq[r].min())}")
    return freq


def _check_unique_ids(path: Path, ids: Sequence[str]) -> None:
    seen: dict[str, int] = {}
    for r, uid in enumerate(ids, start=1):
        key = uid.strip()
        if key in seen:
            raise ProfileError(path, r, "user_id",
                               f"duplicate user_id {key!r} (first at row {seen[key]})")
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


# --------------------------------------------------------------------------- Twitter CSV


def load_twitter_csv(path: str | Path, *, activity_path: str | Path | None = None,
                     default_activity: float = DEFAULT_TWITTER_ACTIVITY,
                     drop_self_follows: bool = True) -> Population:
    """Load an OASIS Twitter profile CSV (agent id = 0-based data row).

    Required columns: ``username``, ``following_agentid_list``. Used when present:
    ``name`` (default: username), ``description``, ``user_char`` (default: description),
    ``previous_tweets``, ``activity_level_frequency``, ``is_super_user`` (-> is_core),
    ``user_id`` (must be unique), ``interested_topics``, ``opinion``; ``followers_count``
    (or ``follower_count``), ``following_count``, ``created_at`` and other columns go to
    ``extra``. ``follower_agentid_list`` is ignored: it disagrees with the following lists
    in OASIS' own files, and edges come from following_agentid_list as OASIS does.

    Activity: the file's ``activity_level_frequency`` (or, when ``activity_path`` is given,
    that file's column, matched by ``user_id`` when both files have one, else by row) is
    converted with :func:`oasis_activity_probability` (OASIS' formula). Without activity
    information every hour gets ``default_activity`` (1.0: OASIS activates every agent
    each step).

    Edges: OASIS inserts every listed id, self-follows included; here self-follows
    (present in 197_*.csv) are dropped unless ``drop_self_follows=False``, and repeated
    ids within a row are dropped (the follow relation is a set). A cell holding a bare
    integer is read as a one-element list (OASIS silently skips such cells).
    """
    path = Path(path)
    header, rows = _read_csv(path, ("username", "following_agentid_list"))
    col = {c: i for i, c in enumerate(header)}
    n = len(rows)
    if n == 0:  # a simulation without users has nothing to run
        raise ProfileError(path, 1, None, "no user rows (the file holds only a header)")

    def column(name: str, default: str = "") -> list[str]:
        j = col.get(name)
        return [default] * n if j is None else [r[j] for r in rows]

    user_name = column("username")
    for r, u in enumerate(user_name, start=1):
        if not u.strip():
            raise ProfileError(path, r, "username", "missing username")
    if "user_id" in col:
        _check_unique_ids(path, column("user_id"))
    names = [nm if nm.strip() else u for nm, u in zip(column("name"), user_name)]
    bio = column("description")
    persona = [p if p.strip() else b for p, b in zip(column("user_char"), bio)]
    src, dst = _parse_follow_edges(path, column("following_agentid_list"), n,
                                   drop_self_follows)
    posts = _parse_previous_tweets(path, column("previous_tweets"))
    activity = _twitter_activity(path, header, rows, activity_path, default_activity)
    is_core = _parse_flags(path, column("is_super_user", "0"), "is_super_user")
    raw_topics, interests = _parse_topic_column(path, column("interested_topics"))
    opinion = _opinions(path, column("opinion"), "row")
    extra = _twitter_extra(path, header, rows, raw_topics if "interested_topics" in col else None)
    pop = Population(n=n, user_name=user_name, name=names, bio=bio, persona=persona,
                     activity=activity, follow_src=src, follow_dst=dst, previous_posts=posts,
                     opinion=opinion, interests=interests, is_core=is_core, extra=extra,
                     source=str(path))
    pop.validate(allow_self_follows=not drop_self_follows)
    return pop


def _twitter_activity(path: Path, header: list[str], rows: list[list[str]],
                      activity_path: str | Path | None, default: float) -> np.ndarray:
    n = len(rows)
    if not 0 <= default <= 1:
        raise ValueError(f"default_activity must be in [0, 1], got {default}")
    if activity_path is None:
        if "activity_level_frequency" not in header:
            return np.full((n, HOURS), default, dtype=np.float32)
        j = header.index("activity_level_frequency")
        return oasis_activity_probability(_parse_activity(path, [r[j] for r in rows]))
    apath = Path(activity_path)
    aheader, arows = _read_csv(apath, ("activity_level_frequency",))
    freq = _parse_activity(apath, [r[aheader.index("activity_level_frequency")]
                                   for r in arows])
    if "user_id" in header and "user_id" in aheader:
        _check_unique_ids(apath, [r[aheader.index("user_id")] for r in arows])
        where = {r[aheader.index("user_id")].strip(): k for k, r in enumerate(arows)}
        j = header.index("user_id")
        take = []
        for r, row in enumerate(rows, start=1):
            k = where.get(row[j].strip())
            if k is None:
                raise ProfileError(path, r, "user_id",
                                   f"user_id {row[j]!r} has no row in {apath}")
            take.append(k)
        freq = freq[np.array(take, dtype=np.int64)]
    elif len(arows) != n:
        raise ProfileError(apath, None, "activity_level_frequency",
                           f"has {len(arows)} rows but {path} has {n} users (no user_id "
                           f"column in both files to match them by)")
    return oasis_activity_probability(freq)


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


def _twitter_extra(path: Path, header: list[str], rows: list[list[str]],
                   topics: list[list[str]] | None) -> list[dict[str, Any]]:
    col = {c: i for i, c in enumerate(header)}
    passthrough = [c for c in header
                   if c not in _TWITTER_HANDLED and not _INDEX_COLUMN.match(c)]
    fol = "followers_count" if "followers_count" in col else (
        "follower_count" if "follower_count" in col else None)
    extra: list[dict[str, Any]] = []
    for r, row in enumerate(rows, start=1):
        d: dict[str, Any] = {}
        if "user_id" in col:
            uid = row[col["user_id"]].strip()
            d["user_id"] = int(uid) if uid.isascii() and uid.isdigit() and int(uid[:20]) < 2**63 else uid
        if fol is not None:
            d["followers_count"] = _int_or_none(path, r, fol, row[col[fol]])
        if "following_count" in col:
            d["following_count"] = _int_or_none(path, r, "following_count",
                                                row[col["following_count"]])
        for c in passthrough:
            d[c] = row[col[c]]
        if topics is not None:
            d["interested_topics"] = topics[r - 1]
        extra.append(d)
    return extra


# --------------------------------------------------------------------------- Reddit JSON

_REDDIT_TEXT = {"realname": "name", "bio": "bio", "persona": "persona"}


def load_reddit_json(path: str | Path, *,
                     default_activity: float = DEFAULT_REDDIT_ACTIVITY) -> Population:
    """Load an OASIS Reddit profile JSON: a list of user objects (agent id = list index).

    Required key: ``username``. Text keys ``realname``/``bio``/``persona`` (default "";
    name defaults to username). ``interested_topics`` maps onto the TOPICS bitmask
    (unknown names set the Other bit; the raw list is kept in extra). ``opinion`` (number
    in [-1, 1]) is used when present. All other keys (age, gender, mbti, country,
    profession, ...) go to extra. There is no follow graph or activity in this format:
    every hour gets ``default_activity`` (0.1, OASIS' Reddit ``activate_prob``).
    """
    path = Path(path)
    if not 0 <= default_activity <= 1:
        raise ValueError(f"default_activity must be in [0, 1], got {default_activity}")
    text = _read_text(path)
    try:
        data = bounded_json.loads(text)  # over-long ints become markers, found per user below
    except json.JSONDecodeError as e:
        raise ProfileError(path, f"line {e.lineno} column {e.colno}", None,
                           f"invalid JSON: {e.msg}") from e
    except RecursionError:
        i, key = bounded_json.locate_failure(text)
        raise ProfileError(path, None if i is None else f"index {i}", key,
                           "nested too deeply to read") from None
    if not isinstance(data, list):
        raise ProfileError(path, None, None,
                           f"top level must be a list of user objects, got {type(data).__name__}")
    if not data:
        raise ProfileError(path, "index 0", None, "the list holds no users")
    fields: dict[str, list[str]] = {"user_name": [], "name": [], "bio": [], "persona": []}
    extra: list[dict[str, Any]] = []
    masks: list[int] = []
    opinions: list[Any] = []
    for i, obj in enumerate(data):
        user, mask, op, rest = _reddit_user(path, i, obj)
        for k, v in user.items():
            fields[k].append(v)
        masks.append(mask)
        opinions.append(op)
        extra.append(rest)
    n = len(data)
    pop = Population(
        n=n, user_name=fields["user_name"], name=fields["name"], bio=fields["bio"],
        persona=fields["persona"],
        activity=np.full((n, HOURS), default_activity, dtype=np.float32),
        follow_src=np.zeros(0, dtype=np.int64), follow_dst=np.zeros(0, dtype=np.int64),
        previous_posts=[], opinion=_opinions(path, opinions, "index"),
        interests=np.array(masks, dtype=np.uint64), is_core=np.zeros(n, dtype=bool),
        extra=extra, source=str(path))
    pop.validate()
    return pop


def _reddit_user(path: Path, i: int,
                 obj: Any) -> tuple[dict[str, str], int, Any, dict[str, Any]]:
    where = f"index {i}"
    if not isinstance(obj, dict):
        raise ProfileError(path, where, None,
                           f"must be a JSON object, got {type(obj).__name__}")
    _check_json_strings(path, where, obj)
    username = obj.get("username")
    if not isinstance(username, str) or not username.strip():
        raise ProfileError(path, where, "username", "missing username")
    user = {"user_name": username}
    for key, field in _REDDIT_TEXT.items():
        v = obj.get(key)
        if v is not None and not isinstance(v, str):
            raise ProfileError(path, where, key, f"must be a string, got {type(v).__name__}")
        user[field] = v or ""
    user["name"] = user["name"] or username
    topics = _topic_list(path, where, obj.get("interested_topics"))
    rest = {k: v for k, v in obj.items()
            if k not in _REDDIT_TEXT and k not in ("username", "opinion")}
    rest["interested_topics"] = topics
    return user, topic_mask(topics), obj.get("opinion"), rest


def _check_json_strings(path: Path, where: str, obj: dict[str, Any]) -> None:
    """Report undecodable bytes / lone surrogates, over-long numbers and deep nesting with
    the JSON index and key."""
    for key, value in obj.items():
        fault = bounded_json.first_fault(key) or bounded_json.first_fault(value)
        if fault:  # also over-long numbers and absurd nesting (iterative: no RecursionError)
            raise ProfileError(path, where, key, fault)


def load_profiles(path: str | Path, **kwargs: Any) -> Population:
    """Load a profile file by extension: ``.csv`` (Twitter) or ``.json`` (Reddit)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return load_twitter_csv(path, **kwargs)
    if suffix == ".json":
        return load_reddit_json(path, **kwargs)
    raise ProfileError(path, None, None, f"unknown profile format {suffix!r}: "
                       "expected .csv (Twitter) or .json (Reddit)")


# --------------------------------------------------------------------------- data files


def data_path(name: str) -> Path:
    """Path of a data file shipped in ``oasis_gym/data`` (OASIS sample data, Apache-2.0)."""
    if Path(name).name != name or name.startswith("."):
        raise ValueError(f"data file name must be a plain file name, got {name!r}")
    p = Path(str(importlib.resources.files("oasis_gym.data").joinpath(name)))
    if not p.is_file():
        raise FileNotFoundError(f"no packaged data file {name!r} (looked at {p})")
    return p


@functools.lru_cache(maxsize=1)
def _rhythm_cached() -> tuple[float, ...]:
    path = data_path("user_all_id_time.csv")
    header, rows = _read_csv(path, ("activity_level_frequency",))
    j = header.index("activity_level_frequency")
    total = _parse_activity(path, [r[j] for r in rows]).sum(axis=0)
    return tuple((total / total.max()).tolist())


def oasis_daily_rhythm() -> np.ndarray:
    """(24,) hourly activity profile, max 1: summed activity counts of OASIS' 111 real users.

    Taken from the shipped ``user_all_id_time.csv`` (the hour-of-day posting counts that
    OASIS feeds its time engine), so synthetic users follow a real daily rhythm.
    """
    return np.array(_rhythm_cached(), dtype=np.float64)


# --------------------------------------------------------------------------- synthetic


def synthetic(
    n: int,
    *,
    seed: int | np.random.Generator = 0,
    core_fraction: float = 0.0002,
    n_core: int | None = None,
    topics_per_user: float = 3.0,
    max_topics_per_user: int = 8,
    topic_zipf: float = 1.0,
    core_follow_prob: float = 0.2,
    mean_followees: float = 10.0,
    followee_sigma: float = 1.0,
    in_degree_exponent: float = 2.3,
    homophily: float = 0.5,
    activity_median: float = 0.02,
    activity_sigma: float = 1.2,
    max_hour_shift: int = 2,
    polarized_fraction: float = 0.5,
    opinion_noise: float = 0.2,
) -> Population:
    """An OASIS-style synthetic population, fully vectorized (1M users in seconds).

    Structure (OASIS paper, large-scale user generation): a few *core* users (ids
    ``0..n_core-1``) and many ordinary users. Each ordinary user follows each core user
    that shares at least one interest with it, independently with ``core_follow_prob``.
    The rest of the follow graph is scale-free: out-degrees are heavy-tailed and followees
    are ordinary users drawn in proportion to a Pareto "attractiveness" (static
    scale-free model), so ordinary in-degrees follow a power law with exponent
    ``in_degree_exponent``. No self-follows, no duplicate edges. Edge order: scale-free
    edges sorted by (follower, followee), then the core follows grouped by core user
    (a global sort would cost ~2 s at 1M users; consumers that need CSR sort anyway).

    Parameters (defaults in brackets):
      n: number of users.
      seed [0]: int seed or numpy Generator; same seed, same arrays.
      core_fraction [0.0002]: share of core users when ``n_core`` is None (~200 per 1M
        users); at least one core user when n > 0.
      n_core [None]: explicit number of core users (overrides core_fraction).
      topics_per_user [3.0]: mean number of topic draws per user (1 + Poisson(mean-1));
        repeated draws collapse, so users hold up to that many distinct topics.
      max_topics_per_user [8]: cap on draws per user.
      topic_zipf [1.0]: topic popularity ~ 1/rank**topic_zipf over TOPICS minus "Other".
      core_follow_prob [0.2]: P(ordinary user follows a core user sharing an interest).
      mean_followees [10.0]: mean number of scale-free (non-core) followees per user,
        before self/duplicate removal.
      followee_sigma [1.0]: lognormal sigma of the per-user out-degree rate (heavy tail).
      in_degree_exponent [2.3]: power-law exponent gamma of the in-degree distribution
        (Twitter's follower distribution is ~2.2-2.3); must be > 2.
      homophily [0.5]: share of scale-free follows drawn among users whose first topic
        equals the follower's first topic (interest homophily / echo chambers).
      activity_median [0.02]: median per-step activation level of a user.
      activity_sigma [1.2]: lognormal sigma of that level (heavy-tailed activity).
      max_hour_shift [2]: each user's daily rhythm is shifted by a uniform integer number
        of hours in [-max_hour_shift, max_hour_shift] (time-zone / habit spread).
      polarized_fraction [0.5]: share of users with a polarized opinion
        (sign * Beta(5, 2)); the rest are centrist, Normal(0, opinion_noise).
      opinion_noise [0.2]: std of centrist opinions.

    Activity = clip(rhythm(hour - shift) * level, 0, 1), where rhythm is
    :func:`oasis_daily_rhythm` (real OASIS users' hourly counts, max 1).
    """
    _check_synthetic_args(n, core_fraction, n_core, topics_per_user, max_topics_per_user,
                          core_follow_prob, mean_followees, in_degree_exponent, homophily,
                          activity_median, polarized_fraction)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if n_core is None:
        n_core = max(1, int(round(core_fraction * n))) if n > 0 else 0
    n_core = min(int(n_core), n)
    interests, primary = _synthetic_interests(rng, n, topics_per_user, max_topics_per_user,
                                              topic_zipf)
    core_chunks = _core_follows(rng, interests, n_core, core_follow_prob)
    sf_key = _scale_free_follows(rng, n, n_core, primary, mean_followees, followee_sigma,
                                 in_degree_exponent, homophily)
    src, dst = _assemble_edges(n, sf_key, core_chunks)
    del core_chunks, sf_key
    activity = _synthetic_activity(rng, n, activity_median, activity_sigma, max_hour_shift)
    opinion = _synthetic_opinions(rng, n, polarized_fraction, opinion_noise)
    is_core = np.zeros(n, dtype=bool)
    is_core[:n_core] = True
    seed_repr = seed if isinstance(seed, int) else "Generator"
    return Population(
        n=n, user_name=IdStrings("user{i}", n), name=IdStrings("User {i}", n),
        bio=ProfileStrings("bio", interests, opinion, is_core),
        persona=ProfileStrings("persona", interests, opinion, is_core),
        activity=activity, follow_src=src, follow_dst=dst, previous_posts=[],
        opinion=opinion, interests=interests, is_core=is_core, extra=None,
        source=f"synthetic(n={n}, seed={seed_repr}, n_core={n_core})")


def _check_synthetic_args(n: int, core_fraction: float, n_core: int | None,
                          topics_per_user: float, max_topics: int, p_core: float,
                          mean_followees: float, gamma: float, homophily: float,
                          activity_median: float, polarized: float) -> None:
    checks = [
        (isinstance(n, (int, np.integer)) and n >= 0, f"n must be an int >= 0, got {n!r}"),
        (0 <= core_fraction <= 1, "core_fraction must be in [0, 1]"),
        (n_core is None or n_core >= 0, "n_core must be >= 0"),
        (topics_per_user >= 1, "topics_per_user must be >= 1"),
        (1 <= max_topics <= 64, "max_topics_per_user must be in [1, 64]"),
        (0 <= p_core <= 1, "core_follow_prob must be in [0, 1]"),
        (mean_followees >= 0, "mean_followees must be >= 0"),
        (gamma > 2, "in_degree_exponent must be > 2 (finite mean in-degree)"),
        (0 <= homophily <= 1, "homophily must be in [0, 1]"),
        (0 <= activity_median <= 1, "activity_median must be in [0, 1]"),
        (0 <= polarized <= 1, "polarized_fraction must be in [0, 1]"),
    ]
    for ok, msg in checks:
        if not ok:
            raise ValueError(msg)


def _synthetic_interests(rng: np.random.Generator, n: int, mean_topics: float,
                         max_topics: int, zipf: float) -> tuple[np.ndarray, np.ndarray]:
    """(interests bitmask, first-drawn topic) per user; topic popularity is Zipf-like."""
    if n == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    n_topics = len(TOPICS) - 1  # "Other" is for unmapped names, not drawn
    pop = 1.0 / np.arange(1, n_topics + 1) ** zipf
    k = np.minimum(1 + rng.poisson(mean_topics - 1, size=n), max_topics)
    starts = np.concatenate(([0], np.cumsum(k)[:-1]))
    draws = rng.choice(n_topics, size=int(k.sum()), p=pop / pop.sum())
    bits = np.left_shift(np.uint64(1), draws.astype(np.uint64))
    return np.bitwise_or.reduceat(bits, starts), draws[starts].astype(np.int64)


def _core_follows(rng: np.random.Generator, interests: np.ndarray, n_core: int,
                  p: float) -> list[tuple[int, np.ndarray]]:
    """Ordinary users follow each interest-sharing core user with probability p.

    Returns (core id, follower ids) chunks. Cost is proportional to the edges made, not
    n * n_core: for core user c and each of its topics t, Bernoulli(p) positions in the
    list of ordinary users holding t are drawn by geometric skips, and a candidate is
    kept only at its lowest topic shared with c, so every sharing user is tried once.
    Follower ids are int32 to halve the memory of the largest edge block.
    """
    n = interests.shape[0]
    chunks: list[tuple[int, np.ndarray]] = []
    if n_core == 0 or p == 0 or n == n_core:
        return chunks
    ordinary = interests[n_core:]
    by_topic: dict[int, np.ndarray] = {}
    for c in range(n_core):
        mc = int(interests[c])
        for t in (i for i in range(64) if mc >> i & 1):
            if t not in by_topic:
                by_topic[t] = (np.flatnonzero(ordinary & np.uint64(1 << t))
                               + n_core).astype(np.int32)
            cand = by_topic[t][_bernoulli_positions(rng, by_topic[t].size, p)]
            lower = np.uint64(mc & ((1 << t) - 1))
            if lower:
                cand = cand[(interests[cand] & lower) == 0]
            chunks.append((c, cand))
    return chunks


def _bernoulli_positions(rng: np.random.Generator, size: int, p: float) -> np.ndarray:
    """Sorted positions in [0, size) each included independently with probability p."""
    if size == 0 or p <= 0:
        return np.zeros(0, dtype=np.int64)
    if p >= 1:
        return np.arange(size, dtype=np.int64)
    chunks, last = [], -1
    while True:
        m = int(size * p + 5 * math.sqrt(size * p) + 16)
        pos = last + np.cumsum(rng.geometric(p, size=m))
        chunks.append(pos[pos < size])
        if pos[-1] >= size:
            return np.concatenate(chunks)
        last = int(pos[-1])


def _scale_free_follows(rng: np.random.Generator, n: int, n_core: int, primary: np.ndarray,
                        mean_out: float, sigma: float, gamma: float,
                        homophily: float) -> np.ndarray:
    """Packed keys src*n + dst of the scale-free follows, unique, sorted, no self-loops.

    Out-degrees are Poisson(lognormal rate) (heavy-tailed); followees are ordinary users
    drawn in proportion to Pareto weights (static scale-free model). Weighted sampling
    uses an urn (each ordinary user repeated ~weight times with stochastic rounding, ~4n
    entries) ordered by primary topic, so a draw is one random index into a small int32
    array and a homophilous draw one index into the follower's topic segment. Core users
    get their followers from the interest rule only, so the two edge sets never overlap.
    """
    if n - n_core < 1 or mean_out == 0:
        return np.zeros(0, np.int64)
    rate = mean_out * rng.lognormal(-sigma * sigma / 2, sigma, size=n)
    out_deg = np.minimum(rng.poisson(rate), n - 1)
    weight = rng.pareto(gamma - 1, size=n) + 1.0  # P(w > x) ~ x^-(gamma-1)
    weight[:n_core] = 0.0
    scaled = weight * (4.0 * n / weight.sum())
    copies = np.floor(scaled).astype(np.int64)
    copies += rng.random(n) < (scaled - copies)
    order = np.argsort(primary, kind="stable")
    urn = np.repeat(order.astype(np.int32), copies[order])
    if urn.size == 0:
        return np.zeros(0, np.int64)
    seg_len = np.bincount(primary, weights=copies, minlength=64).astype(np.int64)
    seg_start = np.concatenate(([0], np.cumsum(seg_len)[:-1]))
    src = np.repeat(np.arange(n, dtype=np.int32), out_deg)
    g = primary[src]
    local = (rng.random(src.size) < homophily) & (seg_len[g] > 0)
    lo = np.where(local, seg_start[g], 0)
    hi = np.where(local, seg_start[g] + seg_len[g], urn.size)
    del g, local
    key = urn[rng.integers(lo, hi)].astype(np.int64)
    del lo, hi
    keep = key != src
    key += src.astype(np.int64) * np.int64(n)
    key = key[keep]
    del src, keep
    key.sort(kind="stable")  # ~4x faster than the default on these nearly-sorted keys
    if key.size:
        fresh = np.empty(key.size, dtype=bool)
        fresh[0] = True
        np.not_equal(key[1:], key[:-1], out=fresh[1:])
        key = key[fresh]
    return key


def _assemble_edges(n: int, sf_key: np.ndarray,
                    core_chunks: list[tuple[int, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """int64 (src, dst): scale-free edges sorted by (src, dst), then core follows by core."""
    total = sf_key.size + sum(ch.size for _, ch in core_chunks)
    src = np.empty(total, dtype=np.int64)
    dst = np.empty(total, dtype=np.int64)
    m = sf_key.size
    bounds = np.searchsorted(sf_key, np.arange(n + 1, dtype=np.int64) * n)
    src[:m] = np.repeat(np.arange(n, dtype=np.int64), np.diff(bounds))
    np.subtract(sf_key, src[:m] * np.int64(n), out=dst[:m])
    at = m
    for c, chunk in core_chunks:
        src[at:at + chunk.size] = chunk
        dst[at:at + chunk.size] = c
        at += chunk.size
    return src, dst


def _synthetic_activity(rng: np.random.Generator, n: int, median: float, sigma: float,
                        max_shift: int) -> np.ndarray:
    """(n, 24) float32: shifted real daily rhythm times a lognormal per-user level."""
    rhythm = oasis_daily_rhythm()
    shifts = np.arange(-max_shift, max_shift + 1)
    table = np.stack([np.roll(rhythm, s) for s in shifts]).astype(np.float32)
    act = table[rng.integers(0, shifts.size, size=n)]
    level = (median * rng.lognormal(0.0, sigma, size=n)).astype(np.float32)
    act *= level[:, None]
    np.clip(act, 0.0, 1.0, out=act)
    return act


def _synthetic_opinions(rng: np.random.Generator, n: int, polarized: float,
                        noise: float) -> np.ndarray:
    """Bimodal mixture: polarized users at sign*Beta(5,2), centrists at Normal(0, noise)."""
    is_pol = rng.random(n) < polarized
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    op = np.where(is_pol, sign * rng.beta(5.0, 2.0, size=n), rng.normal(0.0, noise, size=n))
    return np.clip(op, -1.0, 1.0).astype(np.float32)
