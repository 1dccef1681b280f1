"""Feed top-k: `dense_topk` (the bound path where it applies) against `partition_topk` (the
partition of the best groups' columns, its fallback and the method before it), on random
float32 score matrices, checked equal. Prints one JSON line: ms per call of each (best of
`--repeat`), their ratio, per shape, and the 1-minute load average.

    python bench/throughput/topk.py --shapes 1000x400,1000x1000,1000x4000,10000x4000 --k 10
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from oasis_gym.recsys.topk import dense_topk, partition_topk


def _best_ms(fn, scores: np.ndarray, k: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn(scores, k)
        best = min(best, time.perf_counter() - t)
    return round(1000 * best, 3)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="1000x400,1000x1000,1000x4000,10000x4000", help="ROWSxCOLUMNS, comma-separated")
    ap.add_argument("--k", type=int, default=10, help="feed slots [10]")
    ap.add_argument("--repeat", type=int, default=20, help="calls timed per shape [20]")
    a = ap.parse_args(argv)
    try:  # checked before any compute: one line, exit code 2
        shapes = [tuple(int(x) for x in s.split("x")) for s in a.shapes.split(",")]
        if not shapes or any(len(s) != 2 or not 1 <= s[0] <= 100_000 or not 1 <= s[1] <= 100_000 for s in shapes):
            raise ValueError(f"--shapes must be ROWSxCOLUMNS in [1, 100000], got {a.shapes!r}")
        if not 1 <= a.k <= 1000 or not 1 <= a.repeat <= 1000:
            raise ValueError("--k and --repeat must be in [1, 1000]")
    except ValueError as err:
        print(f"topk: {err}", file=sys.stderr)
        sys.exit(2)
    rng = np.random.default_rng(0)
    rows = []
    for n, p in shapes:
        scores = rng.random((n, p), dtype=np.float32)
        k = min(a.k, p)
        fast, ref = dense_topk(scores, k), partition_topk(scores, k)
        if not all(np.array_equal(x, y) for x, y in zip(fast, ref)):
            sys.exit(f"topk: the two paths differ at {n}x{p}")
        ms_fast = _best_ms(dense_topk, scores, k, a.repeat)
        ms_ref = _best_ms(partition_topk, scores, k, a.repeat)
        rows.append({"shape": f"{n}x{p}", "k": k, "dense_topk_ms": ms_fast, "partition_ms": ms_ref,
                     "speedup": round(ms_ref / ms_fast, 2)})  # fmt: skip
    print(json.dumps({"bench": "topk", "rows": rows, "loadavg_1m": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
