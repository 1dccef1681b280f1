"""The task's own state in the journal: what a platform-backed task episode keeps beside the platform.

The platform holds its rows (users, posts, likes, reposts, reports, follows, moderation,
opinions); the model's arrays that the platform does not hold (satisfaction, churn, post quality,
arousal, topic, label, impressions, the (user, post) pairs of OASIS's rules, the campaign ...),
the world's maps (model user -> account, ring slot -> post id, who the task users are) and the
step's counts (the task's observation is made of them) are one `np.savez`
blob in the table `task_state`, written by `save` inside each step's transaction (so a step is
all there or not at all) and read by `load` on resume (`SimWorld.resume`).
"""

from __future__ import annotations

import io
import sqlite3

import numpy as np

from ..platform.journal_file import connect_read, require_journal

TABLE_SQL = "CREATE TABLE IF NOT EXISTS task_state (key TEXT PRIMARY KEY, value BLOB)"
PAIR_SETS = ("engaged_pairs", "reported_pairs", "bot_pairs")


def state_arrays(state) -> dict[str, np.ndarray]:
    """Every array of an engine's `State` (copies) as `state.<name>`, its `PairSet`s' bits as `pairs.<name>`."""
    out = {f"state.{name}": value.copy() for name, value in vars(state).items() if isinstance(value, np.ndarray)}
    for name in PAIR_SETS:
        pairs = getattr(state, name, None)
        if pairs is not None:
            out[f"pairs.{name}"] = pairs.bits.copy()
    return out


def restore_state(state, arrays: dict[str, np.ndarray]) -> None:
    """Write `state_arrays`' output back into a `State` of the same task."""
    for name, value in arrays.items():
        if name.startswith("pairs."):
            getattr(state, name[len("pairs.") :]).bits[...] = value
        elif name.startswith("state."):
            setattr(state, name[len("state.") :], value.copy())


def save(conn: sqlite3.Connection, arrays: dict[str, np.ndarray]) -> None:
    """Write the arrays as the journal's task state, inside the caller's transaction."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    conn.execute(TABLE_SQL)
    conn.execute("INSERT OR REPLACE INTO task_state(key, value) VALUES ('arrays', ?)", (buffer.getvalue(),))


def load(conn: sqlite3.Connection) -> dict[str, np.ndarray] | None:
    """The arrays `save` wrote last, or None when the journal holds no task state."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'task_state'").fetchone() is None:
        return None
    row = conn.execute("SELECT value FROM task_state WHERE key = 'arrays'").fetchone()
    if row is None:
        return None
    with np.load(io.BytesIO(row[0]), allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def read(path: str) -> dict[str, np.ndarray]:
    """The task state of the journal at `path`, read without changing it: a missing path is
    refused (`JournalError`, nothing created), a journal without a task episode too (ValueError)."""
    require_journal(path)
    conn = connect_read(path)
    try:
        arrays = load(conn)
    finally:
        conn.close()
    if arrays is None:
        raise ValueError(f"{path} holds no task episode to resume")
    return arrays
