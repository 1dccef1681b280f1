"""RLlib throughput of the platform agents with 1 and 2 env runners (issue 26).

    .venv-rllib/bin/python bench/throughput/rllib_runners.py --runners 1,2 --iterations 3  # v0: both agents' env
    .venv-rllib/bin/python bench/throughput/rllib_runners.py --v1 recommender --envs-per-runner 16  # v1: vector env

Needs ray[rllib] (its own venv, see .ci/run). One JSON line per runner count: seconds to
build the algorithm (runner start-up), env steps sampled per second over the timed
`--iterations` (after one warm-up iteration), and the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import ray

from oasis_gym.train.rllib import build_config, start_ray


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runners", default="1,2")
    p.add_argument("--envs-per-runner", type=int, default=1)
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--batch", type=int, default=400)
    p.add_argument("--with-moderator", action="store_true")
    p.add_argument("--v1", choices=["recommender", "moderator"], help="the v1 task on its native vector env")
    p.add_argument("--difficulty", default="medium")
    args = p.parse_args()
    for n in (int(x) for x in args.runners.split(",")):
        start_ray(None, n)  # a local Ray of its own: a CPU per runner and one for the learner
        start = time.perf_counter()
        sizes = {"train_batch_size": args.batch, "minibatch_size": min(100, args.batch), "num_epochs": 1,
                 "num_env_runners": n, "num_envs_per_env_runner": args.envs_per_runner}  # fmt: skip
        if args.v1:
            config = build_config("vector", {"task": args.v1, "difficulty": args.difficulty}, **sizes)
        else:
            config = build_config("platform", {"learn_moderator": args.with_moderator}, seed=0, **sizes)
        algo = config.build_algo()
        built = time.perf_counter() - start
        s0 = algo.train()["env_runners"]["num_env_steps_sampled_lifetime"]  # warm-up
        t0, s1 = time.perf_counter(), s0
        for _ in range(args.iterations):
            s1 = algo.train()["env_runners"]["num_env_steps_sampled_lifetime"]
        rate = (s1 - s0) / (time.perf_counter() - t0)
        algo.stop()
        ray.shutdown()
        row = {
            "bench": "rllib_runners",
            "env_runners": n,
            "envs_per_runner": args.envs_per_runner,
            "task": f"{args.v1}-v1 ({args.difficulty})" if args.v1 else "v0 platform agents",
            "learn_moderator": args.with_moderator,
            "build_s": round(built, 1),
            "env_steps_per_s": round(rate, 1),
            "load_avg_1m": round(os.getloadavg()[0], 2),
        }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
