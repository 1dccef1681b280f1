"""Recommender throughput: 1M users, 200k posts, 10k active users per step, every recsys.

The platform is built with the synthetic population generator; posts (30% by the ~200
core users, 70% by random users) are seeded with `create_posts` over 200 steps of 3 minutes
(texts: a topic name plus random words), then
vote and report counters are drawn directly into the columns (a bench shortcut: applying
millions of like actions would only time the platform), a few thousand reposts and mutes
go through `Platform.apply`. Each recsys is reset (the initial embedding of all posts is
timed once, for the twitter recsys), then serves `BENCH_STEPS` steps: 1000 new posts,
`update`, `recommend` for 10k random users, `similarity` of those feeds.

Prints one JSON line: feeds/s per recsys (10k feeds / mean recommend wall seconds), feeds
per CPU second of this process (stable on a shared machine; run with
OPENBLAS_NUM_THREADS=1 so BLAS spin-waits do not count), the mean update and similarity
times, the initial embedding time and the 1-minute load average.
Env: BENCH_USERS (1_000_000), BENCH_POSTS (200_000), BENCH_ACTIVE (10_000), BENCH_K (20),
BENCH_STEPS (3).
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from oasis_gym.actions import ActionType as A
from oasis_gym.platform import ActionBatch, Platform
from oasis_gym.population import TOPICS, synthetic
from oasis_gym.recsys import RECOMMENDERS, make_recommender

N_USERS = int(os.environ.get("BENCH_USERS", 1_000_000))
N_POSTS = int(os.environ.get("BENCH_POSTS", 200_000))
N_ACTIVE = int(os.environ.get("BENCH_ACTIVE", 10_000))
K = int(os.environ.get("BENCH_K", 20))
STEPS = int(os.environ.get("BENCH_STEPS", 3))
SEED_STEPS = 200


def post_texts(rng: np.random.Generator, n: int, vocab: np.ndarray) -> list[str]:
    topics = np.array(TOPICS)[rng.integers(0, len(TOPICS) - 1, n)]
    lens = rng.integers(8, 30, n)
    words = vocab[rng.integers(0, len(vocab), int(lens.sum()))]
    chunks = np.split(words, np.cumsum(lens)[:-1])
    return [f"{t} {' '.join(w)}" for t, w in zip(topics.tolist(), chunks)]


def build(rng: np.random.Generator) -> tuple[Platform, np.ndarray, float]:
    t0 = time.perf_counter()
    pf = Platform()
    pf.add_users(synthetic(N_USERS, seed=0))
    vocab = np.array([f"w{i}" for i in range(20_000)] + [w.lower() for t in TOPICS for w in t.split()])
    per_step = N_POSTS // SEED_STEPS
    # 30% of posts by the core users (the influencers), the rest by random users
    n_core = int(np.count_nonzero(pf.u_is_core.a))
    posters = np.where(
        rng.random(N_POSTS) < 0.3, rng.integers(0, max(n_core, 1), N_POSTS), rng.integers(0, N_USERS, N_POSTS)
    )
    for s in range(SEED_STEPS):
        pf.create_posts(posters[s * per_step : (s + 1) * per_step], post_texts(rng, per_step, vocab))
        if s % 20 == 19:  # reposts and mutes through the platform's own action path
            n = 500
            pf.apply(ActionBatch(rng.integers(0, N_USERS, n), np.full(n, A.REPOST), rng.integers(0, pf.n_posts, n)))
            pf.apply(ActionBatch(rng.integers(0, N_USERS, n), np.full(n, A.MUTE), rng.integers(0, N_USERS, n)))
        pf.advance(3)
    n = pf.n_posts
    pf.p_likes.a[:] = rng.zipf(1.8, n).clip(max=100_000) - 1
    pf.p_dislikes.a[:] = rng.zipf(2.5, n).clip(max=100_000) - 1
    pf.p_reports.a[:] = (rng.random(n) < 0.01) * rng.integers(1, 5, n)
    return pf, vocab, time.perf_counter() - t0


def main() -> None:
    rng = np.random.default_rng(0)
    pf, vocab, build_s = build(rng)
    result = {
        "bench": "recsys",
        "users": N_USERS,
        "posts": pf.n_posts,
        "active": N_ACTIVE,
        "k": K,
        "build_s": round(build_s, 1),
    }
    feeds_per_s, feeds_per_cpu_s, update_ms, sim_ms = {}, {}, {}, {}
    new_posts = [post_texts(rng, 1000, vocab) for _ in range(STEPS)]
    for name in RECOMMENDERS:
        rec = make_recommender(name)
        t0 = time.perf_counter()
        rec.reset(pf, np.random.default_rng(1))
        if name == "twitter":
            result["embed_initial_s"] = round(time.perf_counter() - t0, 2)
        t_rec = t_upd = t_sim = c_rec = 0.0
        for step in range(STEPS):
            pf.create_posts(rng.integers(0, N_USERS, 1000), new_posts[step])
            users = np.sort(rng.choice(N_USERS, N_ACTIVE, replace=False))
            t0 = time.perf_counter()
            rec.update(pf)
            t1, c1 = time.perf_counter(), time.process_time()
            feed = rec.recommend(pf, users, K, np.random.default_rng(step))
            t2, c2 = time.perf_counter(), time.process_time()
            rec.similarity(pf, users, feed)
            t3 = time.perf_counter()
            t_upd, t_rec, t_sim, c_rec = t_upd + t1 - t0, t_rec + t2 - t1, t_sim + t3 - t2, c_rec + c2 - c1
            pf.advance(3)
        feeds_per_s[name] = round(N_ACTIVE * STEPS / t_rec)
        feeds_per_cpu_s[name] = round(N_ACTIVE * STEPS / c_rec)
        update_ms[name] = round(1000 * t_upd / STEPS, 1)
        sim_ms[name] = round(1000 * t_sim / STEPS, 1)
        del rec
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    result.update(
        {
            "feeds_per_s": feeds_per_s,
            "feeds_per_cpu_s": feeds_per_cpu_s,
            "update_ms_per_1k_posts": update_ms,
            "similarity_ms": sim_ms,
            "cpus": os.cpu_count(),
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
            "load_avg_1min": load,
            "python": sys.version.split()[0],
        }
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
