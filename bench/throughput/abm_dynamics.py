"""Benchmark of the ABM engine (policies/abm_dynamics.py): 1M users x K=10 feed slots.

Prints ONE JSON line: seconds per call (best of --repeat) for each opinion model, the two
diffusion models, choose_actions, and template_text / lexicon_stance (per 1M texts,
measured on --n-text texts and scaled).

    python bench/throughput/abm_dynamics.py [--n 1000000] [--k 10] [--repeat 3] [--n-text 100000]
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
try:
    from oasis_gym.policies import abm_dynamics as abm
except ImportError:  # not installed yet: import the source folder directly
    from policies import abm_dynamics as abm
from oasis_gym.actions import NUM_ACTIONS, TWITTER_DEFAULT_ACTIONS


def best_of(fn, repeat: int) -> float:
    """Best wall time of ``repeat`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-text", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    n, k = a.n, a.k
    rng = np.random.default_rng(a.seed)
    x = rng.uniform(-1, 1, n)
    exposed = rng.uniform(-1, 1, (n, k))
    exposed[rng.random((n, k)) < 0.1] = np.nan  # unknown stances are ignored
    mask = rng.random((n, k)) < 0.9
    u = rng.uniform(0.1, 0.5, n)
    exposed_u = rng.uniform(0.1, 0.5, (n, k))
    counts = rng.poisson(0.3, (n, k))
    frac = rng.random((n, k)) * (rng.random((n, k)) < 0.3)
    thr = abm.sample_thresholds(rng, n)
    stance = np.where(rng.random((n, k)) < 0.2, np.nan, rng.uniform(-1, 1, (n, k)))
    likes = rng.poisson(20, (n, k))
    followers = rng.poisson(500, (n, k))
    post_rate = np.full(n, 0.05)
    allowed = np.zeros(NUM_ACTIONS, dtype=bool)
    allowed[list(TWITTER_DEFAULT_ACTIONS)] = True
    liked = rng.random((n, k)) < 0.05
    followed = rng.random((n, k)) < 0.1
    bp = abm.BehaviourParams()
    texts_in = rng.uniform(-1, 1, a.n_text)
    texts = abm.template_text(texts_in, "the new climate law", rng)

    cases = {
        "deffuant_weisbuch": lambda: abm.deffuant_weisbuch(x, exposed, mask, 0.125, 0.2),
        "deffuant_weisbuch_random_order": lambda: abm.deffuant_weisbuch(
            x, exposed, mask, 0.125, 0.2, rng=rng, order="random"
        ),
        "hegselmann_krause": lambda: abm.hegselmann_krause(x, exposed, mask, 0.175, 0.1),
        "relative_agreement": lambda: abm.relative_agreement(x, u, exposed, exposed_u, mask, 0.125),
        "social_judgment": lambda: abm.social_judgment(x, exposed, mask, 0.1, 0.3, 1.0),
        "lorenz2021": lambda: abm.lorenz2021(x, exposed, mask, theta=0.01, rng=rng),
        "independent_cascade": lambda: abm.independent_cascade(rng, counts, 0.05),
        "linear_threshold": lambda: abm.linear_threshold(frac, thr),
        "choose_actions": lambda: abm.choose_actions(
            rng, bp, x, stance, mask, likes, followers, post_rate, allowed, liked, followed
        ),
    }
    out: dict[str, object] = {
        "bench": "abm_dynamics",
        "n_users": n,
        "k": k,
        "repeat": a.repeat,
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "python": platform.python_version(),
    }
    secs = {name: round(best_of(fn, a.repeat), 4) for name, fn in cases.items()}
    scale = 1_000_000 / a.n_text
    secs["template_text_per_1M"] = round(
        best_of(lambda: abm.template_text(texts_in, "the new climate law", rng), a.repeat) * scale, 3
    )
    secs["lexicon_stance_per_1M"] = round(
        best_of(lambda: abm.lexicon_stance(texts, topic="the new climate law"), a.repeat) * scale, 3
    )
    out["seconds_per_call"] = secs
    print(json.dumps(out))


if __name__ == "__main__":
    main()
