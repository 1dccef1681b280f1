"""Step atomicity for the Platform: a checkpoint and its exact rollback.

A step either happens completely or not at all. `Platform.checkpoint()` captures what a
step can change, cheaply: the length of every column (a step only appends rows, so undoing
an append is restoring a length), the relation sets (their arrays are never written in
place, so keeping the references keeps the sets), the id counters, the clock and the
pending journal log. Rows written in place (counters, flags, linked-list heads, opinions,
moderation status) are recorded by the platform just before each write (`_saving`), so the
cost is O(columns) per step plus O(rows written), never O(users) or O(posts).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

from .records import StepLog
from .store import GrowArray
from .text import TextColumn


class Platform(Protocol):
    """What a checkpoint reads and restores of a `platform.Platform` (its columns: every
    `GrowArray`, `TextColumn` and row list among its attributes), named here so this module
    does not import the platform that imports it."""

    step: int
    minute: int
    rel: dict
    next_row_id: dict
    pending: StepLog


@dataclass
class Checkpoint:
    """What `restore` needs to put a Platform back as it was at `capture`."""

    step: int
    minute: int
    lengths: dict  # attribute name -> rows (GrowArray, list)
    texts: dict  # attribute name -> (base, nbase, extra rows) of a TextColumn
    rel: dict  # relation name -> (PairSet, its arrays)
    next_row_id: dict
    pending: StepLog


def _copy_log(log: StepLog) -> StepLog:
    """A copy of the log's containers (the arrays in them are never written in place)."""
    out = {}
    for f in dataclasses.fields(log):
        value = getattr(log, f.name)
        out[f.name] = {k: list(v) for k, v in value.items()} if isinstance(value, dict) else list(value)
    return type(log)(**out)


def capture(pf: Platform) -> Checkpoint:
    """The platform's state now, cheaply (lengths and references, no copies of columns)."""
    lengths, texts = {}, {}
    for name, value in vars(pf).items():
        if isinstance(value, GrowArray):
            lengths[name] = value.n
        elif isinstance(value, TextColumn):
            texts[name] = (value._base, value._nbase, len(value._extra))
        elif isinstance(value, list) and name.startswith(("p_", "c_", "u_")):
            lengths[name] = len(value)
    return Checkpoint(
        pf.step,
        pf.minute,
        lengths,
        texts,
        {k: (s, s.state()) for k, s in pf.rel.items()},
        dict(pf.next_row_id),
        _copy_log(pf.pending),
    )


def restore(pf: Platform, cp: Checkpoint, undo: list) -> None:
    """Put the platform back as it was at `capture(pf)`; `undo`: the (column, rows, old values)
    of the in-place writes since then."""
    # in-place writes first, newest first (rows created in the step still exist here)
    for col, rows, old in reversed(undo):
        col.a[rows] = old
    for name, n in cp.lengths.items():
        value = getattr(pf, name)
        if isinstance(value, GrowArray):
            value.n = n
        else:
            del value[n:]
    for name, (base, nbase, extra) in cp.texts.items():
        col = getattr(pf, name)
        col._base, col._nbase = base, nbase
        del col._extra[extra:]
    pf.rel.clear()
    for name, (pairs, state) in cp.rel.items():
        pairs.set_state(state)
        pf.rel[name] = pairs
    pf.next_row_id = dict(cp.next_row_id)
    pf.step, pf.minute = cp.step, cp.minute
    pf.pending = _copy_log(cp.pending)


__all__ = ["Checkpoint", "capture", "restore"]
