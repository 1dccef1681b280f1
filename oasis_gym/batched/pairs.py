"""Exact sets of (user, post) pairs of K simulations: what OASIS's rules make the fast path remember.

Under `Dynamics.oasis_rules` (Recommender-v4, Moderator-v2) a user likes or reposts a post at
most once per episode and reports it at most once, and each campaign bot likes a post once.
`PairSet` keeps which (user, post) pairs of each simulation did a thing, for the posts in the
ring (`state.POST_SLOTS` per simulation): one bit per (simulation, ring slot, user), the bits of
a slot packed in uint64 words, (K * P, ceil(N / 64)). It is exact: a post is only ever served,
liked or reported while it sits in its slot (`State.live`), and its slot's bits are cleared when
a new post takes the slot (`clear`, called where posts are written) or a new episode starts
(`reset`), so a bit always belongs to the post in its slot. Why it is fast: a membership test
of M pairs is one gather of M words and a shift (no search, no per-pair Python, whatever the
number of pairs held); adding m pairs is a sort of their words and one `np.bitwise_or.reduceat`;
clearing a new post's slot is one row write. Memory: K x P x N / 8 bytes (2 MiB for K = 32 simulations of 1 000 users).
"""

from __future__ import annotations

import numpy as np

_ONE = np.uint64(1)
_LOW6 = np.int64(63)


class PairSet:
    """The (user, post) pairs that did one thing, for the posts in the rings of K simulations of
    `users` users, `slots` ring slots each (a power of two: a post's slot is its id's low bits)."""

    def __init__(self, k: int, slots: int, users: int):
        self.k, self.p, self.words = int(k), int(slots), (int(users) + 63) // 64
        self.bits = np.zeros((self.k * self.p, self.words), np.uint64)

    def __len__(self) -> int:
        """The number of pairs held (all simulations)."""
        return int(np.bitwise_count(self.bits).sum())

    def _at(self, k, user, post) -> tuple[np.ndarray, np.ndarray]:
        """Flat word indexes and bit numbers of pairs (broadcast arrays)."""
        row = np.asarray(k, np.int64) * self.p + (np.asarray(post, np.int64) & (self.p - 1))
        user = np.asarray(user, np.int64)
        return row * self.words + (user >> 6), (user & _LOW6).astype(np.uint64)

    def contains(self, k, user, post) -> np.ndarray:
        """Whether each pair (broadcast arrays: simulation `k`, `user`, the id of a `post` in
        its ring, or its slot) is held."""
        at, bit = self._at(k, user, post)
        return ((self.bits.reshape(-1)[at] >> bit) & _ONE).astype(bool)

    def add(self, k, user, post) -> None:
        """Hold the pairs (1-D arrays of equal length; posts in their rings, by id or slot)."""
        at, bit = self._at(k, user, post)
        if len(at) == 0:
            return
        order = np.argsort(at, kind="stable")  # the bits of one word OR-ed together first
        at, mask = at[order], (_ONE << bit)[order]
        first = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
        flat = self.bits.reshape(-1)
        flat[at[first]] |= np.bitwise_or.reduceat(mask, first)

    def clear(self, flat_slots: np.ndarray) -> None:
        """Forget the pairs of ring slots `k * slots + slot` (a new post takes them)."""
        self.bits[flat_slots] = 0

    def reset(self, rows: np.ndarray) -> None:
        """Forget every pair of simulations `rows` (new episodes there)."""
        self.bits.reshape(self.k, self.p, self.words)[rows] = 0
