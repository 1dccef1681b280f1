"""Diagnostic (#30): does PPO learn to act on a campaign when it is *told* the campaign?

PPO does not beat the tuned constant ranking on Recommender-v3 medium / hard, while a
logistic-regression campaign detector on the same observation does (README, Benchmarks),
and a one-unit actor learned no campaign gate. This separates the two possible causes:
PPO is trained exactly as `oasis-gym benchmark` trains it, from the same tuned baselines
(a benchmark's results.json), but with the hidden campaign flag appended to its
observation (privileged: a diagnostic, never a baseline or a result). If PPO told the
campaign still learns no gate, the obstacle is the optimization (credit for a change that
pays over many steps, in noisy returns), not reading the campaign from the observation.
With `--untold` PPO is trained on the task's own observation (a PPO variant scored against a
benchmark's tuned baselines without tuning them again), and its gate is the mean of its
global row during campaigns minus outside them.

Reported per PPO seed, on held-out seeds and a held-out population (never tuned or trained
on): PPO-told minus each baseline (mean, 95% CI, wins), and the gate it learned: the mean
absolute change of its env action when the flag is flipped, on the observations of its
evaluation episodes, beside the tuned `campaign_told` change |d| (what acting on the flag is
worth, found by CEM), and the cosine of its mean with d; and its drift: how far its action
without a campaign is from the tuned constant's.

    python bench/research/recommender_told_ppo.py --results bench-recommender-v3-medium/results.json \\
        --seeds 2 --anchor tuned_row --eval-seeds 9100-9119 --eval-population 2

Rule-based users only (the batched engine). Prints progress, then one JSON line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnvWrapper

from oasis_gym.train import v1, v1_baselines
from oasis_gym.train.campaign_detector import NF


class ToldCampaign(VecEnvWrapper):
    """The SB3 env of `v1.train_on_task` with the task's hidden campaign flag (0/1) appended to
    each observation. After an autoreset, a finished episode's terminal observation gets the
    new episode's flag (SB3 bootstraps truncated episodes from it: a small bias, at episode
    ends only)."""

    def __init__(self, venv):
        box = venv.observation_space
        low, high = np.append(box.low, 0.0).astype(np.float32), np.append(box.high, 1.0).astype(np.float32)
        super().__init__(venv, observation_space=spaces.Box(low, high, dtype=np.float32))

    def _flag(self) -> np.ndarray:
        return self.venv.venv.task.state.campaign.astype(np.float32)

    def reset(self):
        return told(self.venv.reset(), self._flag())

    def step_wait(self):
        obs, reward, done, infos = self.venv.step_wait()
        flag = self._flag()
        for i, info in enumerate(infos):
            if "terminal_observation" in info:
                info["terminal_observation"] = told(info["terminal_observation"][None], flag[i : i + 1])[0]
        return told(obs, flag), reward, done, infos


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return round(float(a @ b) / norm, 3) if norm > 0 else 0.0


def untold_policy(model, vec, anchor, gates: list, drift: list):
    """PPO on the task's own observation as `act_for(task)`; records, per step, its global
    row during campaigns (gates: (flag, row)) and its distance from the tuned constant's."""

    def act_for(task):
        def act(obs, t):
            flag = task.state.campaign.astype(bool)
            out = anchor.env_action(model.predict(vec.normalize_obs(obs), deterministic=True)[0], obs)
            tuned = anchor.env_action(np.zeros((len(flag), *model.action_space.shape), np.float32), obs)
            gates.append((flag, out[:, :NF]))
            drift.append(np.abs(out - tuned)[~flag, :NF])
            return out

        return act

    return act_for


def _gate(gates: list, untold: bool) -> np.ndarray:
    """Per step and env, the change of the global row with the campaign: on - off when told;
    untold, the mean row during campaigns minus outside them (one row)."""
    if not untold:
        return np.concatenate(gates)
    flag = np.concatenate([f for f, _ in gates])
    rows = np.concatenate([r for _, r in gates])
    return (rows[flag].mean(axis=0) - rows[~flag].mean(axis=0))[None] if flag.any() and (~flag).any() else rows[:0]


def told(obs: np.ndarray, flag: np.ndarray) -> np.ndarray:
    return np.concatenate([obs, np.asarray(flag, np.float32)[:, None]], axis=1).astype(np.float32)


def told_policy(model, vec, anchor, gates: list, drift: list):
    """PPO-told as `act_for(task)`; records, per step, its env action's change (on - off) in
    the global row when the flag flips, and how far its action without a campaign (off) is
    from the tuned anchor's."""

    def act_for(task):
        def act(obs, t):
            flag = task.state.campaign.astype(np.float32)
            on, off = (
                anchor.env_action(model.predict(vec.normalize_obs(told(obs, f)), deterministic=True)[0], obs)
                for f in (np.ones_like(flag), np.zeros_like(flag))
            )
            gates.append((on - off)[:, :NF])  # the global row (what campaign_told changes)
            tuned = anchor.env_action(np.zeros((len(flag), *model.action_space.shape), np.float32), obs)
            drift.append(np.abs(off - tuned)[:, :NF])
            return np.where(flag[:, None] > 0, on, off)

        return act

    return act_for


def _settings(a: argparse.Namespace) -> tuple[dict, v1.Args]:
    """The benchmark's results and the PPO settings of this diagnostic (ValueError if out of range)."""
    results = json.loads(Path(a.results).read_text())
    settings = {k: tuple(v) if isinstance(v, list) else v for k, v in results["settings"].items()}
    if settings.get("task") != "recommender" or a.seeds < 1:
        raise ValueError("--results must be a recommender benchmark's results.json, and --seeds at least 1")
    lo, hi = map(int, a.eval_seeds.split("-"))
    base = dataclasses.replace(
        v1.Args(**settings), anchor=a.anchor, timesteps=a.timesteps or settings["timesteps"],
        eval_seeds=tuple(range(lo, hi + 1)), eval_population=a.eval_population, quiet=True,
    )  # fmt: skip
    for item in a.set:
        field, value = item.split("=", 1)
        now = getattr(base, field)
        value = tuple(int(x) for x in value.split(",")) if isinstance(now, tuple) else type(now)(float(value))
        base = dataclasses.replace(base, **{field: value})
    base.check(a.seeds)
    return results, base


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", required=True, help="an `oasis-gym benchmark recommender` results.json")
    ap.add_argument("--untold", action="store_true", help="PPO on the task's own observation (no flag)")
    ap.add_argument("--seeds", type=int, default=2, help="PPO seeds [2]")
    ap.add_argument("--timesteps", type=int, default=0, help="PPO timesteps per seed [the benchmark's]")
    ap.add_argument(
        "--anchor", choices=["tuned", "tuned_row", "tuned_detector"], default="tuned_row", help="[tuned_row]"
    )
    ap.add_argument("--eval-seeds", default="9100-9119", help="held-out seeds A-B [9100-9119]")
    ap.add_argument("--eval-population", type=int, default=2, help="held-out population [2]")
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=NUMBER",
                    help="other PPO settings of v1.Args, e.g. n_steps=512 batch_size=2048 policy_layers=1 "
                         "(a list: comma-separated)")  # fmt: skip
    a = ap.parse_args(argv)
    try:  # every setting checked before any compute: one line, exit code 2
        results, base = _settings(a)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        print(f"recommender_told_ppo: {type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(2)
    tuned = results["tuned"]
    d_told = np.asarray(tuned["campaign_told"]["action"]) if "campaign_told" in tuned else None
    d = float(np.abs(d_told).mean()) if d_told is not None else None
    runs = []
    with tempfile.TemporaryDirectory(prefix="told_ppo_") as tmp:
        for seed in range(a.seeds):
            args = dataclasses.replace(base, seed=base.seed + seed, out=str(Path(tmp) / f"seed_{seed}"))
            anchor = v1_baselines.make_anchor(args, tuned)
            start = time.perf_counter()
            what = "on the task's own observation" if a.untold else "told the campaign"
            print(f"seed {seed}: training PPO {what} ({args.timesteps} timesteps) ...", file=sys.stderr)
            model, vec, info = v1.train_on_task(args, anchor, wrap=None if a.untold else ToldCampaign)
            gates: list = []
            drift: list = []
            policy = (untold_policy if a.untold else told_policy)(model, vec, anchor, gates, drift)
            acts = {"ppo": policy} | v1_baselines.baselines(args, tuned)
            print(f"seed {seed}: evaluating ...", file=sys.stderr)
            out = v1.evaluate(args, acts)
            vs = {s: {c: {k: round(v, 3) for k, v in r.items()} for c, r in out[s]["ppo_vs"].items()} for s in out}
            gate, off = _gate(gates, a.untold), np.concatenate(drift)
            measured = d_told is not None and len(gate) and off.size
            direction = _cosine(gate.mean(axis=0), d_told) if measured else None
            runs.append({"seed": args.seed, "train_seconds": round(info["train_seconds"]), "ppo_vs": vs,
                         "gate_mean_abs": round(float(np.abs(gate).mean()), 4) if measured else None,
                         "gate_cosine_with_told": direction,
                         "drift_mean_abs": round(float(off.mean()), 4) if measured else None,
                         "seconds": round(time.perf_counter() - start)})  # fmt: skip
            for s, r in vs.items():
                line = ", ".join(f"{c} {x['mean']:+.2f} [{x['lo']:+.2f}, {x['hi']:+.2f}]" for c, x in r.items())
                print(f"seed {seed}, {s}: {'PPO' if a.untold else 'PPO-told'} minus {line}", file=sys.stderr)
            change = "a campaign moves its mean global row" if a.untold else "flipping the flag changes its global row"
            print(f"seed {seed}: {change} by {np.abs(gate).mean():.4f} on average,"
                  f" in a direction of cosine {direction:+.2f} with campaign_told's tuned change (mean |d| {d:.4f});"
                  f" without a campaign its global row is {off.mean():.4f} from the tuned constant's"
                  if measured else "", file=sys.stderr)  # fmt: skip
    print(json.dumps({"bench": "recommender_told_ppo", "task": base.task_id, "difficulty": base.difficulty,
                      "anchor": a.anchor, "untold": a.untold, "set": a.set, "timesteps": base.timesteps,
                      "campaign_told_mean_abs_d": d,
                      "users": "rule-based", "runs": runs}))  # fmt: skip


if __name__ == "__main__":
    main()
