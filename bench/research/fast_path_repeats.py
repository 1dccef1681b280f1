"""How often the fast path's users engage with a post they already engaged with (issue 51).

    python bench/research/fast_path_repeats.py                          # every tier, 4 episodes x 100 steps
    python bench/research/fast_path_repeats.py --tiers hard --episodes 2 --steps 50
    python bench/research/fast_path_repeats.py --version 4                # Recommender-v4: OASIS's rules

On the platform a user likes, reposts or reports a post at most once (OASIS's rule: a second
like is refused, "Like record already exists."). The fast path (`oasis_gym.batched`, the
Recommender-v1..v3 and Moderator-v1 tasks) has no such rule. This bench plays Recommender-v1
episodes (`--version N`: vN's; 1 000 users, the default ranking, seeds 9000+) of each tier and
counts, over every response the users made in an episode, the share that repeats a (user,
post) pair already engaged the same way earlier in that episode: likes (engagements that are
not reposts), reposts, reports. Those are the responses a platform-backed form of these tasks would refuse,
which is why issue 51's plan gives the OASIS rules to new task ids rather than to v1-v3.
`--version 4` plays Recommender-v4 (`Dynamics.oasis_rules`): it must show 0 repeats.
A progress line per tier on stderr, one JSON line per tier on stdout (with the load).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from oasis_gym.batched import engine, users
from oasis_gym.batched.tasks import RecommenderTask
from oasis_gym.model.ranking import DEFAULT_WEIGHTS
from oasis_gym.model.tiers import DIFFICULTIES, TIERS_BY_VERSION


def repeats(tier: str, n_users: int, episodes: int, steps: int, version: int = 1) -> dict:
    """The repeated share of likes, reposts and reports over `episodes` episodes of `tier`."""
    events: dict[str, list[np.ndarray]] = {"likes": [], "reposts": [], "reports": []}
    respond = users.respond_to_feeds

    def recording(state, ka, ua, ids, sx, valid):
        engaged, shared, reported = respond(state, ka, ua, ids, sx, valid)
        for name, m in (("likes", engaged & ~shared), ("reposts", shared), ("reports", reported)):
            i, j = np.nonzero(m)
            events[name].append(np.stack([ka[i], ua[i], ids[i, j]], 1))  # (episode row, user, post)
        return engaged, shared, reported

    engine.users.respond_to_feeds = recording
    try:
        task = RecommenderTask(episodes, n_users, tier, 0, steps, version=version)
        task.reset(np.arange(episodes), 9000 + np.arange(episodes))
        action = np.tile(np.r_[DEFAULT_WEIGHTS, np.zeros(task.action_size - len(DEFAULT_WEIGHTS))],
                         (episodes, 1)).astype(np.float32)  # fmt: skip
        for _ in range(steps):
            task.step(action)
    finally:
        engine.users.respond_to_feeds = respond
    out = {}
    for name, parts in events.items():
        x = np.concatenate(parts) if parts else np.zeros((0, 3), np.int64)
        distinct = len(np.unique(x, axis=0))
        out[name] = {"events": int(len(x)), "repeated_share": round(1 - distinct / max(len(x), 1), 4)}
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tiers", default=",".join(DIFFICULTIES), help="comma-separated tiers (easy, medium, hard)")
    p.add_argument("--users", type=int, default=1000, help="users per episode (10..100000)")
    p.add_argument("--episodes", type=int, default=4, help="episodes per tier (1..64)")
    p.add_argument("--steps", type=int, default=100, help="steps per episode (1..1000)")
    p.add_argument("--version", type=int, default=1, choices=sorted(TIERS_BY_VERSION), help="Recommender-vN's tiers")
    a = p.parse_args(argv)
    tiers = a.tiers.split(",")
    bad = [t for t in tiers if t not in DIFFICULTIES]
    if bad or not 10 <= a.users <= 100_000 or not 1 <= a.episodes <= 64 or not 1 <= a.steps <= 1000:
        print(f"fast_path_repeats: error: tiers from {DIFFICULTIES}, --users 10..100000, --episodes 1..64, "
              f"--steps 1..1000 (got {a.tiers!r}, {a.users}, {a.episodes}, {a.steps})", file=sys.stderr)  # fmt: skip
        return 2
    for tier in tiers:
        print(f"fast_path_repeats: {tier}: {a.episodes} episodes x {a.steps} steps ...", file=sys.stderr, flush=True)
        result = repeats(tier, a.users, a.episodes, a.steps, a.version)
        print(json.dumps({"bench": "fast_path_repeats", "version": a.version, "tier": tier, "users": a.users,
                          "episodes": a.episodes,
                          "steps": a.steps, **result, "load": os.getloadavg()[0]}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
