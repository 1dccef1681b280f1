"""Platform apply throughput: 100k users, 1M mixed actions in steps of 10k, journal on.

Prints one JSON line:
- actions_per_s: actions over the time the caller spends in the platform, i.e. in `apply` and
  `commit_step` (building the step's rows, and waiting for the writer thread to finish the
  step before), plus the final flush;
- wall_actions_per_s: actions over the whole loop, generating the batches included. The
  journal's writer thread also runs while the next batch is generated (batch_gen_s), as it
  runs while a simulation's agents decide;
- the share accepted, DB size, and the one-off close (query indexes, WAL checkpoint) apart.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import numpy as np

from oasis_gym.actions import ActionType as A
from oasis_gym.platform import ActionBatch, Journal, Platform
from oasis_gym.population import synthetic

N_USERS = int(os.environ.get("BENCH_USERS", 100_000))
N_ACTIONS = int(os.environ.get("BENCH_ACTIONS", 1_000_000))
STEP = 10_000
MIX = {
    A.LIKE_POST: 0.35,
    A.CREATE_POST: 0.12,
    A.REPOST: 0.1,
    A.FOLLOW: 0.12,
    A.CREATE_COMMENT: 0.08,
    A.LIKE_COMMENT: 0.08,
    A.DISLIKE_POST: 0.05,
    A.UNLIKE_POST: 0.03,
    A.QUOTE_POST: 0.02,
    A.UNFOLLOW: 0.02,
    A.MUTE: 0.01,
    A.DO_NOTHING: 0.02,
}


def make_batch(rng: np.random.Generator, pf: Platform) -> ActionBatch:
    codes = np.array(list(MIX), dtype=np.int64)
    p = np.array(list(MIX.values()))
    act = rng.choice(codes, size=STEP, p=p / p.sum())
    user = rng.integers(0, pf.n_users, STEP)
    target = np.full(STEP, -1, dtype=np.int64)
    post_t = np.isin(act, [A.LIKE_POST, A.REPOST, A.CREATE_COMMENT, A.DISLIKE_POST, A.QUOTE_POST])
    # recent posts are the popular targets, as on a real platform
    target[post_t] = pf.n_posts - 1 - np.minimum(rng.zipf(1.3, post_t.sum()), pf.n_posts) + 1
    unlike = act == A.UNLIKE_POST
    keys = pf.rel["like"].keys()
    if unlike.any() and len(keys):  # unlike something that user liked: pick real like pairs
        pick = keys[rng.integers(0, len(keys), unlike.sum())]
        user[unlike], target[unlike] = pick >> 32, pick & 0xFFFFFFFF
    user_t = np.isin(act, [A.FOLLOW, A.UNFOLLOW, A.MUTE])
    target[user_t] = rng.integers(0, pf.n_users, user_t.sum())
    com = act == A.LIKE_COMMENT
    if pf.n_comments:
        target[com] = rng.integers(0, pf.n_comments, com.sum())
    else:
        act[com] = A.DO_NOTHING
    text = [None] * STEP
    for i in np.flatnonzero(np.isin(act, [A.CREATE_POST, A.CREATE_COMMENT, A.QUOTE_POST])):
        text[i] = f"post {i} about topic {i % 17}"
    return ActionBatch(user, act, target, text)


def main() -> None:
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp()
    db = os.path.join(tmp, "bench.db")
    pf, journal = Platform(), Journal(db)
    pf.add_users(synthetic(N_USERS, seed=0))
    pf.create_posts(rng.integers(0, N_USERS, 1000), [f"seed {i}" for i in range(1000)])
    journal.commit_step(pf)
    done = ok = 0
    t_apply = t_commit = t_batch = 0.0
    t_start = time.perf_counter()
    while done < N_ACTIONS:
        t0 = time.perf_counter()
        batch = make_batch(rng, pf)
        t_batch += time.perf_counter() - t0
        t0 = time.perf_counter()
        res, _ = pf.apply(batch)
        t1 = time.perf_counter()
        journal.commit_step(pf, advance_minutes=3)
        t2 = time.perf_counter()
        t_apply += t1 - t0
        t_commit += t2 - t1
        done += len(batch)
        ok += int((res == 0).sum())
    t0 = time.perf_counter()
    journal.flush()  # the last step's write, still on the journal's writer thread
    t_commit += time.perf_counter() - t0
    total = t_apply + t_commit
    wall = time.perf_counter() - t_start
    t0 = time.perf_counter()
    journal.close()  # builds the query indexes and checkpoints the WAL: once per run, reported apart
    t_close = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "bench": "platform_apply",
                "users": N_USERS,
                "actions": done,
                "actions_per_s": round(done / total),
                "apply_s": round(t_apply, 2),
                "journal_s": round(t_commit, 2),
                "batch_gen_s": round(t_batch, 2),
                "wall_actions_per_s": round(done / wall),
                "close_s": round(t_close, 2),
                "accepted_share": round(ok / done, 3),
                "db_mb": round(os.path.getsize(db) / 2**20, 1),
                "python": sys.version.split()[0],
            }
        )
    )


if __name__ == "__main__":
    main()
