"""The fast path's episode beside a platform-backed one: what the task world's tests compare with.

Imported by tests/test_task_ranking.py and tests/test_task_users.py with
``from fast_path_run import fast_responses`` (pytest puts tests/ on sys.path).
"""

from __future__ import annotations

from oasis_gym.batched import users


def fast_responses(cls, difficulty: str, n_users: int, actions: list, seed: int, monkeypatch, record) -> None:
    """Play the fast path's episode of env class `cls` (`actions` from `seed`), calling
    `record(ua, served, ok, engaged, shared, reported)` at each of its users' responses (the
    visitors, their feeds' post ids, whether a slot holds a post, the users' decisions)."""
    respond = users.respond_to_feeds

    def spy(st, ka, ua, served, rows, ok):
        flags = respond(st, ka, ua, served, rows, ok)
        record(ua.copy(), served.copy(), ok.copy(), *flags)
        return flags

    env = cls(difficulty=difficulty, users=n_users, max_steps=len(actions))
    with monkeypatch.context() as m:
        m.setattr(users, "respond_to_feeds", spy)
        env.reset(seed=seed)
        for action in actions:
            env.step(action)
