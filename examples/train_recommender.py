"""Train the recommender with PPO (stable-baselines3) for a tiny budget, then compare it with
fixed rankings on held-out episodes.

What it shows:

1. `gymnasium.make(gymnasium.registry["oasis_gym/Recommender-v0"], journal=False)`: the single-agent env in
   which the agent is the platform's recommender (its action: ranking weights over the
   candidates' features; its reward: engagement against misinformation exposure,
   polarization increase and feed diversity). `journal=False` is the training mode: the
   same episodes, nothing written to SQLite;
2. plain SB3 PPO on it;
3. the evaluation protocol of `oasis-gym train` (`oasis_gym.train.evaluate` / `.report`):
   every candidate scored by the same reward on the same episodes, on seeds no training
   episode uses, on the training population and on another population; mean ± std over
   seeds and PPO's paired wins against each baseline.

A budget this small does not learn much: the point is the pipeline. The full script with
observation normalization, checkpoints, TensorBoard and every baseline is
`oasis-gym train recommender` (docs/training.md).

With the defaults (200 users, 20-step episodes, 1000 timesteps): 83 s on 2 cores shared with
other jobs (load average 11.6-13, 2026-12-06).

    python examples/train_recommender.py                    # output in a fresh temp folder
    python examples/train_recommender.py --timesteps 20000 --out rec_run
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import gymnasium
from stable_baselines3 import PPO
from stable_baselines3.common.logger import configure

import oasis_gym  # noqa: F401 - registers the oasis_gym/... env ids
from oasis_gym.train.common import EnvConfig, write_json
from oasis_gym.train.evaluate import evaluate_recommender, summarize
from oasis_gym.train.report import check_disjoint, default_eval_sets, paired, table

BASELINES = ("default_weights", "chronological")  # fixed ranking weights; newest posts first
COLUMNS = (
    ("return", "return", True),
    ("engagement_rate", "engagement rate", True),
    ("misinfo_share", "misinfo", False),
)


def main(argv: list[str] | None = None) -> int:
    """Train, evaluate, print the tables and a summary."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--timesteps", type=int, default=1000, help="PPO timesteps (default 1000)")
    p.add_argument("--n-steps", type=int, default=100, help="PPO rollout length (default 100)")
    p.add_argument("--users", type=int, default=200, help="synthetic users (default 200)")
    p.add_argument("--max-cycles", type=int, default=20, help="episode length in steps (default 20)")
    p.add_argument(
        "--eval-seeds", type=int, nargs="+", default=[1000, 1001, 1002], help="held-out episode seeds (< 2**20)"
    )
    p.add_argument("--seed", type=int, default=0, help="training seed")
    p.add_argument("--out", type=Path, default=None, help="output folder (default: a fresh temp folder)")
    args = p.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="oasis_gym_train_"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"output folder: {out}")

    # 1. the env, in the training mode (journal=False). Made from its registered spec: given the
    # id, Gymnasium warns that v0 is "out of date" since Recommender-v4 exists, but v0 is no older
    # v4: it is the recommender on the SQLite platform, v1-v4 the batched benchmark tasks
    env = gymnasium.make(
        gymnasium.registry["oasis_gym/Recommender-v0"],
        users=args.users,
        max_cycles=args.max_cycles,
        max_episode_steps=args.max_cycles,  # the registered TimeLimit is 50 steps
        journal=False,
    )
    # 2. PPO
    n_steps = max(2, min(args.n_steps, args.timesteps))
    model = PPO("MlpPolicy", env, n_steps=n_steps, batch_size=n_steps, seed=args.seed, device="cpu", verbose=0)
    model.set_logger(configure(str(out / "ppo_log"), ["csv"]))  # SB3's training curves: ppo_log/progress.csv
    start = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    train_s = time.perf_counter() - start
    model.save(out / "recommender_ppo.zip")
    env.close()

    # 3. held-out evaluation: seeds below 2**20 (unseeded training resets draw seeds above), on
    #    the training population (0) and on another one (1); every candidate on the same episodes
    sets = default_eval_sets(args.eval_seeds, population_seed=0, other_population=1)
    check_disjoint(sets, train_seed=args.seed, n_envs=1)  # refuses seeds a training episode used
    config = EnvConfig(kind="recommender", users=args.users, max_cycles=args.max_cycles, env_kwargs={"journal": False})
    result, tables = {}, []
    for s in sets:
        cfg = replace(config, population_seed=s.population_seed)
        runs = {"ppo": evaluate_recommender(model, s.seeds, cfg)}
        runs.update({b: evaluate_recommender(b, s.seeds, cfg) for b in BASELINES})
        tables.append(table(f"{s.name} (population {s.population_seed}, seeds {list(s.seeds)})", runs, "ppo", COLUMNS))
        result[s.name] = {
            "mean_return": {name: summarize(r)["mean"] for name, r in runs.items()},
            "ppo_vs": {b: paired(runs["ppo"], runs[b]) for b in BASELINES},
        }
    write_json(out / "eval.json", result)
    print("\n\n".join(tables))

    first = result[sets[0].name]
    wins = ", ".join(f"{v['wins']}/{v['n']} vs {b}" for b, v in first["ppo_vs"].items())
    means = ", ".join(f"{k} {v:.3f}" for k, v in first["mean_return"].items())
    print(
        f"\nSummary: trained PPO as recommender_0 for {model.num_timesteps} timesteps ({train_s:.1f} s, "
        f"{args.users} users, {args.max_cycles}-step episodes, journal=False), then evaluated it on held-out "
        f"seeds {args.eval_seeds}: mean return {means}; PPO wins {wins}."
    )
    print(
        f"Outputs: {out / 'recommender_ppo.zip'} (the model), {out / 'eval.json'} (the tables' numbers), "
        f"{out / 'ppo_log' / 'progress.csv'} (PPO's training curves)."
    )
    print(
        "Try next: a larger --timesteps (tens of thousands), or the full protocol with every baseline: "
        "oasis-gym train recommender --timesteps 60000 --out runs/rec (docs/training.md)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
