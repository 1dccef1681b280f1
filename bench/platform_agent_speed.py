"""Platform-agent env throughput: the single env against K envs stepped together, both agents.

    python bench/platform_agent_speed.py                    # K = 8, 16, 32; PPO too
    python bench/platform_agent_speed.py --k 8 --no-ppo --steps 100

One JSON line per configuration:

* `single`: `gymnasium.make(id)`, one env, random actions (seeded), env steps/s;
* `vector`: `gymnasium.make_vec(id, num_envs=K)`, aggregate env steps/s (K envs x steps /
  wall time) and the ratio to `single`. The platform-agent ids register no native
  `vector_entry_point` yet, so this is Gymnasium's `SyncVectorEnv` (a Python loop over the
  envs): the row is the baseline a native vector env must beat 10x (issue 26);
* `ppo`: SB3 PPO timesteps/s through `oasis_gym.train` settings on `make_vec_env` with
  `--ppo-envs` envs, the rate `oasis-gym train` trains at.

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

IDS = {"recommender": "oasis_gym/Recommender-v0", "moderator": "oasis_gym/Moderator-v0"}


def _row(kind: str, agent: str, **values) -> None:
    print(
        json.dumps(
            {
                "bench": "platform_agent_speed",
                "kind": kind,
                "agent": agent,
                **values,
                "load_avg_1m": round(os.getloadavg()[0], 2),
            }
        ),
        flush=True,
    )


def single(env_id: str, steps: int, seed: int = 0) -> float:
    """Env steps/s of one env over `steps` steps (resets included, as training sees them)."""
    env = gym.make(env_id)
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
    start = time.perf_counter()
    for _ in range(steps):
        envs.step(envs.action_space.sample())
    rate = k * steps / (time.perf_counter() - start)
    envs.close()
    return rate


def ppo(agent: str, timesteps: int, n_envs: int) -> float:
    """SB3 PPO timesteps/s on `n_envs` envs (model construction excluded)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env(IDS[agent], n_envs=n_envs, seed=0)
    model = PPO("MlpPolicy", vec, n_steps=max(8, timesteps // n_envs), batch_size=64, n_epochs=1, seed=0, verbose=0)
    start = time.perf_counter()
    model.learn(total_timesteps=timesteps)
    rate = model.num_timesteps / (time.perf_counter() - start)
    vec.close()
    return rate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--agents", default="recommender,moderator")
    p.add_argument("--k", default="8,16,32", help="vector sizes, comma-separated")
    p.add_argument("--steps", type=int, default=200, help="env steps of the single env")
    p.add_argument("--vector-steps", type=int, default=25, help="steps of each vector env (x K env steps)")
    p.add_argument("--ppo-timesteps", type=int, default=1024)
    p.add_argument("--ppo-envs", type=int, default=4)
    p.add_argument("--no-ppo", action="store_true")
    args = p.parse_args()
    for agent in args.agents.split(","):
        base = single(IDS[agent], args.steps)
        _row("single", agent, env_steps_per_s=round(base, 1), steps=args.steps)
        for k in (int(x) for x in args.k.split(",")):
            rate = vector(IDS[agent], k, args.vector_steps)
            _row(
                "vector",
                agent,
                num_envs=k,
                mode="sync (no native vector env)",
                env_steps_per_s=round(rate, 1),
                ratio_to_single=round(rate / base, 2),
                steps=args.vector_steps,
            )
        if not args.no_ppo:
            rate = ppo(agent, args.ppo_timesteps, args.ppo_envs)
            _row(
                "ppo",
                agent,
                timesteps_per_s=round(rate, 1),
                n_envs=args.ppo_envs,
                timesteps=args.ppo_timesteps,
                hours_per_million=round(1e6 / rate / 3600, 2),
            )


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
