"""Clustered vs exact out-of-network retrieval (the Twitter recommender): recall and time.

Builds a platform of N synthetic users and their posts, then ranks the 4000-post pool for
`--served` users twice, exact (``retrieval="exact"``: every user x every pool post) and
clustered (``retrieval="clustered"``: see oasis_gym/recsys/clustered.py), and reports
recall@k of the exact top-k (the share of each user's exact out-of-network feed that the
clustered feed holds, averaged over users with a non-empty exact feed), the share of
users whose feed is identical, the score ratio (the exact scores R x F x (S + eps) of the
clustered feed summed, over those of the exact feed; 1 = as good a feed), and the wall
and CPU seconds of each (CPU seconds are steadier on a shared machine; one BLAS thread).

Two kinds of pools (``--texts``): ``template``, the texts the engine writes for users
that post without text (15 stance templates x 12 topics, what the ABM benches post; many
identical vectors), and ``free``, 8-30 words drawn from a 20k-word vocabulary plus a topic
(every text distinct, most user-post pairs share no word). Posts come from core users (30%)
and random users; their authors' follower counts spread the prior R x F; users' vectors
mix profile, topics and their own latest posts (a third of the served users posted).

Usage: python bench/research/recsys_recall.py [--users N] [--served S] [--posts P] [--texts template,free]
       [--k K] [--clusters C] [--probe P] [--fallback F] [--seed S]
Prints one JSON line per pool kind.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from oasis_gym.actions import ActionType as A
from oasis_gym.platform import ActionBatch, Platform
from oasis_gym.population import TOPICS, synthetic
from oasis_gym.recsys import TwitterRecommender
from oasis_gym.sim.content import TOPIC_WORDS, template_text


def _parse(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=200_000, help="synthetic users [200000]")
    ap.add_argument("--served", type=int, default=20_000, help="users ranked [20000]")
    ap.add_argument("--posts", type=int, default=12_000, help="posts made before ranking [12000]")
    ap.add_argument("--texts", default="template,free", help="pool kinds, comma-separated [template,free]")
    ap.add_argument("--k", type=int, default=10, help="feed slots [10, the env's feed_size]")
    ap.add_argument("--clusters", type=int, default=None, help="n_clusters [the recommender's default]")
    ap.add_argument("--probe", type=int, default=None, help="n_probe [the recommender's default]")
    ap.add_argument("--fallback", type=int, default=None, help="n_fallback [the recommender's default]")
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(argv)


def _texts(kind: str, rng: np.random.Generator, n: int) -> list[str]:
    if kind == "template":
        topics = np.array(TOPIC_WORDS)[rng.integers(0, len(TOPIC_WORDS), n)]
        stance = rng.uniform(-1, 1, n)
        return [template_text(stance[i : i + 1], str(topics[i]), rng)[0] for i in range(n)]
    vocab = np.array([f"w{i}" for i in range(20_000)] + [w.lower() for t in TOPICS for w in t.split()])
    topics = np.array(TOPICS)[rng.integers(0, len(TOPICS) - 1, n)]
    lens = rng.integers(8, 30, n)
    words = np.split(vocab[rng.integers(0, len(vocab), int(lens.sum()))], np.cumsum(lens)[:-1])
    return [f"{t} {' '.join(w)}" for t, w in zip(topics.tolist(), words)]


def _platform(kind: str, args, rng: np.random.Generator) -> tuple[Platform, np.ndarray]:
    pf = Platform()
    pf.add_users(synthetic(args.users, seed=args.seed))
    served = np.sort(rng.choice(args.users, min(args.served, args.users), replace=False))
    n_core = int(pf.u_is_core.a.sum())
    steps = 12
    per = args.posts // steps
    for _ in range(steps):  # a third of the served users post, the rest comes from core and random users
        posters = np.where(
            rng.random(per) < 0.3, rng.integers(0, max(n_core, 1), per), rng.integers(0, args.users, per)
        )
        posters[: min(per, len(served) // (3 * steps))] = rng.choice(served, min(per, len(served) // (3 * steps)))
        pf.create_posts(posters, _texts(kind, rng, per))
        m = 200  # reposts and mutes through the platform's own path
        pf.apply(ActionBatch(rng.integers(0, args.users, m), np.full(m, A.REPOST), rng.integers(0, pf.n_posts, m)))
        pf.apply(ActionBatch(served[rng.integers(0, len(served), m)], np.full(m, A.MUTE), rng.integers(0, n_core, m)))
        pf.advance(3)
    return pf, served


def _recall(exact: np.ndarray, approx: np.ndarray) -> tuple[float, float]:
    """(mean recall@k over rows with a non-empty exact feed, share of identical rows)."""
    has = (exact >= 0).sum(axis=1)
    hit = np.array([len(np.intersect1d(e[e >= 0], a[a >= 0])) for e, a in zip(exact, approx)])
    live = has > 0
    recall = float((hit[live] / has[live]).mean()) if live.any() else 1.0
    return recall, float(np.all(exact == approx, axis=1).mean())


def _score_ratio(rec: TwitterRecommender, pf: Platform, users, exact: np.ndarray, approx: np.ndarray) -> float:
    """Mean over users of (sum of the exact scores R x F x (S + eps) of the clustered feed) /
    (that sum for the exact feed): how much of the best attainable score the feed keeps."""
    vec = rec.index.user_vectors(pf, users)

    def total(feed: np.ndarray) -> np.ndarray:
        live = feed >= 0
        p = np.maximum(feed, 0)
        cos = np.einsum("ud,ukd->uk", vec, rec.index.post_matrix[p])
        return np.where(live, rec.post_prior(pf, p) * (cos + rec.tie_epsilon), 0.0).sum(axis=1)

    ex, ap = total(exact), total(approx)
    live = ex > 0
    return float((ap[live] / ex[live]).mean()) if live.any() else 1.0


def main(argv=None) -> None:
    args = _parse(argv)
    params = {
        k: v
        for k, v in (("n_clusters", args.clusters), ("n_probe", args.probe), ("n_fallback", args.fallback))
        if v is not None
    }
    for kind in args.texts.split(","):
        rng = np.random.default_rng(args.seed)
        pf, served = _platform(kind, args, rng)
        exact = TwitterRecommender(retrieval="exact")
        approx = TwitterRecommender(retrieval="clustered", **params)
        for rec in (exact, approx):  # warm: the users' profile vectors are cached (timed: ranking)
            rec.reset(pf)
            rec.index.user_vectors(pf, served)
            rec.index.truncate(pf.n_posts)  # (forgets the memo of the last users' vectors)
        t, c = time.perf_counter(), time.process_time()
        ex = exact.out_of_network(pf, served, args.k)
        exact_s, exact_cpu = time.perf_counter() - t, time.process_time() - c
        t, c = time.perf_counter(), time.process_time()
        ap = approx.out_of_network(pf, served, args.k)
        clustered_s, clustered_cpu = time.perf_counter() - t, time.process_time() - c
        recall, same = _recall(ex, ap)
        print(
            json.dumps(
                {
                    "bench": "recsys_recall",
                    "texts": kind,
                    "users": args.users,
                    "served": len(served),
                    "pool": int(min(exact.pool_size or pf.n_posts, pf.n_posts)),
                    "k": args.k,
                    "n_clusters": approx.n_clusters,
                    "n_probe": approx.n_probe,
                    "n_fallback": approx.n_fallback,
                    "recall_at_k": round(recall, 4),
                    "identical_feeds": round(same, 4),
                    "score_ratio": round(_score_ratio(exact, pf, served, ex, ap), 4),
                    "exact_s": round(exact_s, 3),
                    "clustered_s": round(clustered_s, 3),
                    "exact_cpu_s": round(exact_cpu, 3),
                    "clustered_cpu_s": round(clustered_cpu, 3),
                    "speedup_cpu": round(exact_cpu / clustered_cpu, 1) if clustered_cpu else None,
                    "loadavg_1m": round(os.getloadavg()[0], 2),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
