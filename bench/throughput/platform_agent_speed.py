"""Platform-agent env throughput: single envs against native vector envs, both agents, PPO too.

    python bench/throughput/platform_agent_speed.py                    # K = 8, 16, 32; PPO too
    python bench/throughput/platform_agent_speed.py --k 8 --no-ppo --steps 100

One JSON line per configuration:

* `single`, version 0: `gymnasium.make("oasis_gym/<Agent>-v0")` as registered (journal in
  memory), random actions (seeded), env steps/s: the reference the 10x goal is measured
  against (issue 26);
* `single`, version 1: `gymnasium.make("oasis_gym/<Agent>-v1")` (difficulty medium);
* `vector`, version 1: `gymnasium.make_vec("oasis_gym/<Agent>-v1", num_envs=K)`, the native
  vector env (one batched numpy step for all K), aggregate env steps/s (K x steps / wall
  time), its ratio to the single v0 and to the single v1 env;
* `ppo`, version 1: SB3 PPO timesteps/s as `oasis-gym train recommender-v1` runs it
  (`LockstepSB3VecEnv` over the vector env with `--ppo-envs` envs, VecMonitor +
  VecNormalize, 5 epochs of minibatches of 512), and the minutes a million timesteps take.

Each row records the machine's load average at its start: figures from a loaded machine
are not comparable with an idle one's.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import gymnasium as gym
import numpy as np

import oasis_gym  # noqa: F401 - registers the ids

AGENTS = {"recommender": "Recommender", "moderator": "Moderator"}


def _row(kind: str, agent: str, **values) -> None:
    values = {"bench": "platform_agent_speed", "kind": kind, "agent": agent, **values}
    print(json.dumps({**values, "load_avg_1m": round(os.getloadavg()[0], 2)}), flush=True)


def single(env_id: str, steps: int, seed: int = 0, **kwargs) -> float:
    """Env steps/s of one env over `steps` steps (resets included, as training sees them)."""
    env = gym.make(env_id, **kwargs)
    env.action_space.seed(seed)
    env.reset(seed=seed)
    start, done = time.perf_counter(), 0
    while done < steps:
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        done += 1
        if term or trunc:
            env.reset()
    rate = done / (time.perf_counter() - start)
    env.close()
    return rate


def vector(env_id: str, k: int, steps: int, seed: int = 0) -> float:
    """Aggregate env steps/s of `gymnasium.make_vec(env_id, num_envs=k)` (autoreset inside)."""
    envs = gym.make_vec(env_id, num_envs=k)
    envs.action_space.seed(seed)
    envs.reset(seed=seed)
    actions = [envs.action_space.sample() for _ in range(steps)]
    start = time.perf_counter()
    for a in actions:
        envs.step(a)
    rate = k * steps / (time.perf_counter() - start)
    envs.close()
    return rate


def ppo(agent: str, timesteps: int, n_envs: int) -> float:
    """SB3 PPO timesteps/s on the native vector env (model construction excluded)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    from oasis_gym.envs.moderator_v1 import ModeratorVectorEnv
    from oasis_gym.envs.recommender_v1 import RecommenderVectorEnv
    from oasis_gym.train.common import limit_threads
    from oasis_gym.train.sb3_vec_env import LockstepSB3VecEnv

    limit_threads(1)
    cls = RecommenderVectorEnv if agent == "recommender" else ModeratorVectorEnv
    vec = VecNormalize(VecMonitor(LockstepSB3VecEnv(cls(n_envs, autoreset_mode="SameStep"))), gamma=0.99)
    model = PPO("MlpPolicy", vec, n_steps=64, batch_size=512, n_epochs=5, seed=0, verbose=0, device="cpu")
    start = time.perf_counter()
    model.learn(total_timesteps=timesteps)
    rate = model.num_timesteps / (time.perf_counter() - start)
    vec.close()
    return rate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--agents", default="recommender,moderator")
    p.add_argument("--k", default="8,16,32", help="vector sizes, comma-separated")
    p.add_argument("--steps", type=int, default=200, help="env steps of each single env")
    p.add_argument("--vector-steps", type=int, default=100, help="steps of each vector env (x K env steps)")
    p.add_argument("--ppo-timesteps", type=int, default=32768)
    p.add_argument("--ppo-envs", type=int, default=32)
    p.add_argument("--no-ppo", action="store_true")
    args = p.parse_args()
    for agent in args.agents.split(","):
        name = AGENTS[agent]
        v0 = single(f"oasis_gym/{name}-v0", args.steps)
        _row("single", agent, version=0, env_steps_per_s=round(v0, 1), steps=args.steps)
        v1 = single(f"oasis_gym/{name}-v1", args.steps)
        _row("single", agent, version=1, env_steps_per_s=round(v1, 1), steps=args.steps)
        for k in (int(x) for x in args.k.split(",")):
            rate = vector(f"oasis_gym/{name}-v1", k, args.vector_steps)
            _row("vector", agent, version=1, num_envs=k, mode="native", env_steps_per_s=round(rate, 1),
                 ratio_to_single_v0=round(rate / v0, 2), ratio_to_single_v1=round(rate / v1, 2),
                 steps=args.vector_steps)  # fmt: skip
        if not args.no_ppo:
            rate = ppo(agent, args.ppo_timesteps, args.ppo_envs)
            _row("ppo", agent, version=1, timesteps_per_s=round(rate, 1), n_envs=args.ppo_envs,
                 timesteps=args.ppo_timesteps, minutes_per_million=round(1e6 / rate / 60, 1))  # fmt: skip


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
