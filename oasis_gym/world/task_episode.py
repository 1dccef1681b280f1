"""The platform agent's episode in the journal: one row a step of a task's agent (issue 52).

A platform-backed task episode (`backend="platform", journal=True` of Recommender-v4 /
Moderator-v2) writes, with each step, one row of the journal table `task_episode` (`TABLE_SQL`),
in the step's transaction beside `task_state` (the world's step hook, `SimWorld._after_apply`):
a step's row is there exactly when the step is, a resumed episode goes on writing the steps
after, and only the episode's one writer writes it. The schema, for readers of a run
(`oasis-gym run --recommender PATH` and its report, `read`):

- `step` INTEGER PRIMARY KEY: the task's step, 1 .. max_steps (the reset writes no row);
- `agent` TEXT: `"recommender_0"` or `"moderator_0"`;
- `action` TEXT, JSON: the recommender's ranking weights W as the feeds used them (clipped to
  [-1, 1]; Z rows of F = 9 numbers; `ranking="global"`: the bias row set, the others 0), or the
  moderator's codes, one per queue slot (16 ints, `model.moderation.ACTIONS`);
- `queue_posts` TEXT, JSON: the review queue the moderator's codes act on, as the platform's
  post ids (the journal's `post.post_id`; -1: an empty slot); NULL for the recommender;
- `reward` REAL: the env's reward of the step (its float32 value);
- `components` TEXT, JSON {term: signed weight x term} in the reward's order (`model.rewards`'
  `RecommenderReward` / `ModeratorReward` `.weights()`): summed left to right, then rounded to
  float32, they are the reward;
- `info` TEXT, JSON {name: value}: every info value of the step, the hidden truth's too
  (`batched.tasks.PRIVILEGED_INFO`), so the env's `info` (with or without `privileged_info`,
  `episode_seed` aside) is a part of it;
- `satisfaction`, `churned`, `visitors` REAL: the users' mean satisfaction and the share of
  users churned after the step, the share who visited in it.

The values are the task's own: `outcome` runs the task's `step` on a twin of the task whose
engine answers the step's counts, so the row holds what the env returns (no second formula of a
reward or an observation).
"""

from __future__ import annotations

import copy
import json
import sqlite3
from types import SimpleNamespace

import numpy as np

from ..platform.journal_file import connect_read, require_journal

TABLE_SQL = (
    "CREATE TABLE IF NOT EXISTS task_episode (step INTEGER PRIMARY KEY, agent TEXT NOT NULL, action TEXT NOT NULL, "
    "queue_posts TEXT, reward REAL NOT NULL, components TEXT NOT NULL, info TEXT NOT NULL, satisfaction REAL, "
    "churned REAL, visitors REAL)"
)
COLUMNS = ("step", "agent", "action", "queue_posts", "reward", "components", "info", "satisfaction", "churned",
           "visitors")  # fmt: skip
JSON_COLUMNS = ("action", "queue_posts", "components", "info")


class _Term:
    """A reward weight that keeps the term it multiplies (`model.rewards.linear_reward` computes
    ``weight * term``): the product is the task's own."""

    def __init__(self, weight: float, name: str, seen: dict):
        self.weight, self.name, self.seen = weight, name, seen

    def __mul__(self, term):
        product = self.weight * term
        self.seen[self.name] = product
        return product


class _Recorded:
    """A task's reward parameters whose weights keep the step's signed terms in `seen`."""

    def __init__(self, params, seen: dict):
        self.params, self.seen = params, seen

    def weights(self) -> dict[str, _Term]:
        """The parameters' weights, each keeping its term."""
        return {name: _Term(w, name, self.seen) for name, w in self.params.weights().items()}


def outcome(task, out: dict) -> tuple[np.ndarray, np.ndarray, dict, dict]:
    """The observation, reward, info and reward components (K,) of the step whose counts are
    `out` (`Engine.step`'s), made by `task`'s own `step` on a shallow twin of it (the task is
    left as it was: its step assigns, never writes in place)."""
    seen: dict = {}
    twin = copy.copy(task)
    twin.engine = SimpleNamespace(state=task.engine.state, step=lambda *args, **kwargs: out)
    twin.reward_params = _Recorded(task.reward_params, seen)
    size = getattr(task, "action_size", getattr(task, "queue_size", 1))
    obs, reward, info = twin.step(np.zeros((task.k, size), np.float32))
    return obs, reward, info, seen


def step_row(step: int, agent: str, action, queue_posts, reward, components: dict, info: dict) -> tuple:
    """A row of `task_episode` (`COLUMNS`' order) of episode 0 of a step's (K,) values."""
    info0 = {name: float(np.asarray(value).reshape(-1)[0]) for name, value in info.items()}
    return (
        int(step),
        agent,
        json.dumps(np.asarray(action).tolist()),
        None if queue_posts is None else json.dumps(np.asarray(queue_posts, np.int64).tolist()),
        float(np.asarray(reward).reshape(-1)[0]),
        json.dumps({name: float(np.asarray(v).reshape(-1)[0]) for name, v in components.items()}),
        json.dumps(info0),
        info0.get("satisfaction"),
        info0.get("churned"),
        info0.get("visitors"),
    )


def save(conn: sqlite3.Connection, row: tuple) -> None:
    """Write a step's row inside the caller's transaction (a resumed step's row replaces none:
    the journal holds the steps before it only)."""
    conn.execute(TABLE_SQL)
    conn.execute(f"INSERT INTO task_episode({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})", row)


def read(path: str) -> list[dict]:
    """The rows of the journal at `path`, by step, their JSON columns decoded; [] when it holds
    none. Read without changing it (a missing path is refused: `JournalError`)."""
    require_journal(path)
    conn = connect_read(path)
    try:
        table = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'task_episode'"
        if conn.execute(table).fetchone() is None:
            return []
        rows = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM task_episode ORDER BY step").fetchall()
    finally:
        conn.close()
    out = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
    for row in out:
        for name in JSON_COLUMNS:
            if row[name] is not None:
                row[name] = json.loads(row[name])
    return out
