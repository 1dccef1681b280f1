"""The columnar :class:`Population`, its lazily rendered string columns and :class:`ProfileError`."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np

from .bulk_text import id_texts, personas
from .topics import HOURS, _topics_text


class ProfileError(ValueError):
    """A malformed profile file: names the file, the row (or JSON index) and the field."""

    def __init__(self, path: str | Path, row: int | str | None, field: str | None, message: str) -> None:
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
        base = (
            self._ids
            if isinstance(self._ids, np.ndarray)
            else np.arange(self._ids.start, self._ids.stop, self._ids.step, dtype=np.int64)
        )
        ids = base[np.asarray(idx, dtype=np.int64)]
        return self._with_ids(ids)

    def __iter__(self) -> Iterator[str]:
        for i in self._ids:
            yield self._render(int(i))

    def _base_ids(self, positions) -> np.ndarray:
        """The rendered ids at `positions` (this sequence may be a slice or subset)."""
        ids = self._ids
        if isinstance(ids, range):
            return ids.start + ids.step * np.asarray(positions, dtype=np.int64)
        return ids[np.asarray(positions, dtype=np.int64)]

    def text_keys(self, positions) -> np.ndarray | None:
        """A key per text at `positions` such that equal keys mean equal texts, or None when
        the texts are not grouped (each may differ)."""
        return None

    def render_many(self, positions) -> list[str]:
        """The texts at `positions` (a list), rendered once per distinct key where there are keys."""
        keys = self.text_keys(positions)
        if keys is None:
            return [self._render(i) for i in self._base_ids(positions).tolist()]
        uniq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        ids = self._base_ids(positions)[first].tolist()
        texts = np.empty(len(ids), dtype=object)
        texts[:] = [self._render(i) for i in ids]
        return texts[inv.reshape(-1)].tolist()

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

    def render_many(self, positions) -> list[str]:
        """The texts at `positions` (a list), formatted in one pass."""
        return id_texts(self.template, self._base_ids(positions))


class ProfileStrings(_LazySeq):
    """Bio or persona text of synthetic users, rendered from their interests and opinion.

    Gives an LLM policy something concrete to role-play without storing 1M strings.
    ``kind`` is "bio" (short) or "persona" (the system-prompt description).
    """

    def __init__(
        self,
        kind: str,
        interests: np.ndarray,
        opinion: np.ndarray,
        is_core: np.ndarray,
        ids: range | np.ndarray | None = None,
    ) -> None:
        if kind not in ("bio", "persona"):
            raise ValueError(f"kind must be 'bio' or 'persona', got {kind!r}")
        super().__init__(range(len(interests)) if ids is None else ids)
        self.kind = kind
        self.interests = interests
        self.opinion = opinion
        self.is_core = is_core

    def render_many(self, positions) -> list[str]:
        """The texts at `positions` (a list): bios once per distinct interest mask, personas
        from pieces computed for all of them (`bulk_text.personas`)."""
        if self.kind == "persona":
            return personas(self._base_ids(positions), self.interests, self.opinion, self.is_core)
        return super().render_many(positions)

    def text_keys(self, positions) -> np.ndarray | None:
        """A bio is its user's interests in words: the interest mask keys it (a persona names
        its user: no keys)."""
        if self.kind != "bio":
            return None
        return np.asarray(self.interests, dtype=np.uint64)[self._base_ids(positions)]

    def _render(self, i: int) -> str:
        topics = _topics_text(int(self.interests[i]))
        if self.kind == "bio":
            return f"Into {topics}."
        role = "an influential account with many followers" if self.is_core[i] else "an ordinary user"
        op = float(self.opinion[i])
        lean = (
            "strongly agree"
            if op > 0.6
            else "lean towards agreeing"
            if op > 0.2
            else "strongly disagree"
            if op < -0.6
            else "lean towards disagreeing"
            if op < -0.2
            else "are undecided"
        )
        return (
            f"You are user {i}, {role}. You are interested in {topics}. "
            f"On contested claims you {lean} (opinion score {op:+.2f} on a -1..1 scale)."
        )


# --------------------------------------------------------------------------- population


@dataclass(eq=False)
class Population:
    """Every user a simulation starts with, in columns; agent id = position.

    ``user_name``/``name``/``bio``/``persona`` are lists for loaded files and lazy
    sequences (``IdStrings``/``ProfileStrings``) for synthetic ones; both support len(),
    indexing, iteration and slicing.
    """

    n: int
    user_name: Sequence[str]  # OASIS "username" (Twitter and Reddit)
    name: Sequence[str]  # OASIS "name" (Twitter) / "realname" (Reddit)
    bio: Sequence[str]  # Twitter "description" / Reddit "bio"
    persona: Sequence[str]  # Twitter "user_char" / Reddit "persona"
    activity: np.ndarray  # (n, 24) float32 activation probability per step, by hour
    follow_src: np.ndarray  # (E,) int64 follower ids
    follow_dst: np.ndarray  # (E,) int64 followee ids
    previous_posts: list[tuple[int, str]]  # (author id, text) present before step 0
    opinion: np.ndarray  # (n,) float32 in [-1, 1]; 0 where unknown
    interests: np.ndarray  # (n,) uint64 bitmask over TOPICS
    is_core: np.ndarray  # (n,) bool
    extra: list[dict[str, Any]] | None  # other profile fields per user; None for synthetic
    source: str  # file path or "synthetic(...)"

    def __len__(self) -> int:
        return self.n

    @property
    def num_edges(self) -> int:
        """The number of follow edges."""
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
        if not np.all(np.isfinite(self.activity)) or (n and (self.activity.min() < 0 or self.activity.max() > 1)):
            raise err("activity", "values must be finite and in [0, 1]")
        _check_array(self.source, "opinion", self.opinion, np.float32, (n,))
        if not np.all(np.isfinite(self.opinion)) or (n and (self.opinion.min() < -1 or self.opinion.max() > 1)):
            raise err("opinion", "values must be finite and in [-1, 1]")
        _check_array(self.source, "interests", self.interests, np.uint64, (n,))
        _check_array(self.source, "is_core", self.is_core, np.bool_, (n,))
        self._validate_edges(allow_self_follows)
        for k, post in enumerate(self.previous_posts):
            if (
                not isinstance(post, tuple)
                or len(post) != 2
                or not isinstance(post[1], str)
                or not 0 <= int(post[0]) < n
            ):
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
            n=int(ids.size),
            user_name=pick(self.user_name),
            name=pick(self.name),
            bio=pick(self.bio),
            persona=pick(self.persona),
            activity=self.activity[ids],
            follow_src=s[keep],
            follow_dst=d[keep],
            previous_posts=[(int(new[a]), t) for a, t in self.previous_posts if new[a] >= 0],
            opinion=self.opinion[ids],
            interests=self.interests[ids],
            is_core=self.is_core[ids],
            extra=None if self.extra is None else [self.extra[i] for i in ids],
            source=f"subset({self.source}, n={ids.size})",
        )


def _check_array(source: str, field: str, a: Any, dtype: type, shape: tuple[int, ...]) -> None:
    if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != shape:
        got = f"{a.dtype} {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
        raise ProfileError(source, None, field, f"must be a {np.dtype(dtype).name} array of shape {shape}, got {got}")
