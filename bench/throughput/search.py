"""Benchmark of search_posts / search_users with the in-memory text index.

Prints ONE JSON line. Two corpora of --posts posts by --users users:

* ``zipf``: 12 words per post drawn from a Zipf(1.1) vocabulary of 50k random 4-10 letter
  words (natural-text-like; search matches substrings, so "abc" also finds "xabcy");
  queries are 1-2 content words: uniform over the vocabulary minus its 100 most frequent
  words (those are in most posts: a query of them is the templates case below).
* ``templates``: the simulator's own template posts (policies.abm_dynamics.template_text on
  its 12 topic words), queried with those topic words, as numeric policies do: each query
  matches ~1/12 of all posts, the worst case.

For each: the one-off index build (the first query), --searches searches by random viewers
(index warm; wall and process CPU seconds: the CPU figure is the one to read on a shared
machine), and the brute-force scan the index replaced, timed on a few searches and
scaled to --searches. Plus --searches user searches over the users' bios.

    python bench/throughput/search.py [--posts 1000000] [--users 10000] [--searches 1000] [--brute 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository
from oasis_gym.platform import Platform  # noqa: E402
from oasis_gym.platform.platform import REPOST  # noqa: E402
from oasis_gym.population import synthetic  # noqa: E402
from oasis_gym.sim.content import TOPIC_WORDS as TOPICS  # noqa: E402

try:
    from oasis_gym.policies.abm_dynamics import template_text
except ImportError:  # not installed yet: import the source folder directly
    from policies.abm_dynamics import template_text


def brute_search_posts(pf: Platform, viewer: int, query: str, k: int = 10) -> np.ndarray:
    """The scan the index replaced (one Python test per post)."""
    words = [w for w in str(query).lower().split() if w]
    lo = max(0, pf.n_posts - pf.config.search_scan_limit)
    hits = [
        p
        for p in range(lo, pf.n_posts)
        if pf.p_kind.a[p] != REPOST and all(w in pf._post_text(p).lower() for w in words)
    ]
    cand = np.asarray(hits, dtype=np.int64)
    cand = cand[pf.visible_posts_mask(viewer, cand)]
    score = pf.p_likes.a[cand] + pf.p_shares.a[cand] + pf.p_comments.a[cand] - pf.p_dislikes.a[cand]
    return cand[np.lexsort((-cand, -score))[:k]]


def zipf_words(rng: np.random.Generator, vocab: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    return vocab[rng.choice(len(vocab), size=n, p=weights)]


def build(kind: str, n_posts: int, n_users: int, rng: np.random.Generator) -> tuple[Platform, list[str]]:
    pf = Platform()
    pf.add_users(synthetic(n_users, seed=1))
    if kind == "zipf":
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        lens = rng.integers(4, 11, 60_000)
        vocab = np.array(list(dict.fromkeys("".join(rng.choice(letters, n)) for n in lens))[:50_000], dtype=object)
        weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.1
        weights /= weights.sum()
        words = zipf_words(rng, vocab, weights, n_posts * 12).reshape(n_posts, 12)
        texts = [" ".join(row) for row in words.tolist()]
        queries = [
            " ".join(vocab[rng.integers(100, len(vocab), int(rng.integers(1, 3)))].tolist()) for _ in range(4096)
        ]
    else:
        stance = rng.uniform(-1, 1, n_posts)
        topic = rng.integers(0, len(TOPICS), n_posts)
        texts = [""] * n_posts
        for t, name in enumerate(TOPICS):
            idx = np.flatnonzero(topic == t)
            for i, s in zip(idx.tolist(), template_text(stance[idx], name, rng)):
                texts[i] = s
        queries = [TOPICS[int(i)] for i in rng.integers(0, len(TOPICS), 4096)]
    authors = rng.integers(0, n_users, n_posts)
    for lo in range(0, n_posts, 100_000):  # in batches, as steps create them
        pf.create_posts(authors[lo : lo + 100_000], texts[lo : lo + 100_000])
    pf.p_likes.a[:] = rng.poisson(2.0, n_posts)
    return pf, queries


def run(kind: str, args, rng: np.random.Generator) -> dict:
    t0 = time.perf_counter()
    pf, queries = build(kind, args.posts, args.users, rng)
    t_make = time.perf_counter() - t0
    viewers = rng.integers(0, args.users, args.searches)
    t0, c0 = time.perf_counter(), time.process_time()
    pf.search_posts(0, queries[0])  # builds the index over every post
    t_build, c_build = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    hits = 0
    sizes = []
    for i in range(args.searches):
        hits += len(pf.search_posts(int(viewers[i]), queries[i % len(queries)]))
    t_search, c_search = time.perf_counter() - t0, time.process_time() - c0
    idx = pf.__dict__["_post_search_index"]
    for q in queries[:200]:
        sizes.append(len(idx.match(q.lower().split())))
    t0 = time.perf_counter()
    for i in range(args.brute):
        ref = brute_search_posts(pf, int(viewers[i]), queries[i % len(queries)])
        assert ref.tolist() == pf.search_posts(int(viewers[i]), queries[i % len(queries)]).tolist()
    t_brute = (time.perf_counter() - t0) / max(1, args.brute)
    return {
        "make_posts_s": round(t_make, 2),
        "index_build_s": round(t_build, 2),
        "index_build_cpu_s": round(c_build, 2),
        "searches_s": round(t_search, 3),
        "searches_cpu_s": round(c_search, 3),
        "per_search_ms": round(1e3 * t_search / args.searches, 3),
        "mean_matches": round(float(np.mean(sizes)), 1),
        "results_returned": hits,
        "brute_per_search_s": round(t_brute, 3),
        "brute_searches_s_scaled": round(t_brute * args.searches, 1),
    }


def run_users(args, rng: np.random.Generator) -> dict:
    pf = Platform()
    pf.add_users(synthetic(args.users * 10, seed=2))
    queries = [TOPICS[int(i)] for i in rng.integers(0, len(TOPICS), args.searches)]
    t0 = time.perf_counter()
    pf.search_users(0, "economy")
    t_build = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    for q in queries:
        pf.search_users(int(rng.integers(0, pf.n_users)), q)
    t_search, c_search = time.perf_counter() - t0, time.process_time() - c0
    return {
        "users": pf.n_users,
        "index_build_s": round(t_build, 2),
        "searches_s": round(t_search, 3),
        "searches_cpu_s": round(c_search, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--posts", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=10_000)
    ap.add_argument("--searches", type=int, default=1000)
    ap.add_argument("--brute", type=int, default=3, help="brute-force searches timed (then scaled)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    out = {
        "bench": "search",
        "posts": args.posts,
        "searches": args.searches,
        "zipf": run("zipf", args, rng),
        "templates": run("templates", args, rng),
        "search_users": run_users(args, rng),
        "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
