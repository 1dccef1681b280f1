"""The protocol's evaluation, one home for the benchmark and for any agent: the held-out sets,
the episodes a policy plays on them (`play`), the candidates' scores as (runs, episodes), and
`evaluate(policy, task, difficulty)`: a researcher's own agent scored on the same held-out seeds
and population as `oasis-gym benchmark` scores PPO, with the same statistics (`train/rl_stats.py`);
public as `oasis_gym.train.benchmark.evaluate`.

    from oasis_gym.train.benchmark import evaluate

    result = evaluate(my_policy, "moderator", "hard")  # my_policy(obs (K, 227)) -> codes (K, 16)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from oasis_gym.checks import action_array
from oasis_gym.model import moderation
from oasis_gym.model.tiers import DIFFICULTIES

from . import rl_stats, v1
from . import tuned_baselines as tb
from .task_policy import load_task_policy


def returns(runs: list[dict]) -> np.ndarray:
    """The episodes' returns as an array."""
    return np.array([r["return"] for r in runs], np.float64)


def candidate_scores(res: dict) -> dict[str, np.ndarray]:
    """An evaluation set's returns per candidate as (runs, episodes): PPO's runs are its training
    seeds (if the set has them), a baseline is one run."""
    ppo = {"PPO": np.stack([returns(r) for r in res["ppo_runs"]])} if res.get("ppo_runs") else {}
    return ppo | {name: returns(runs)[None] for name, runs in res["baselines"].items()}


def held_out(args: v1.Args) -> dict[str, int]:
    """The protocol's evaluation sets: name -> population seed (the training one, a held-out one)."""
    return {"held-out seeds": args.population_seed, "held-out population": args.eval_population}


def play(args: v1.Args, population: int, act_for) -> list[dict]:
    """One episode per evaluation seed of `args` on `population` played by `act_for(task) -> act(obs,
    t)`, all at once (`tuned_baselines.run_episodes`): the episodes' totals, one dict each."""
    return tb.per_episode(tb.run_episodes(args.task, args.env(population), args.eval_seeds, act_for=act_for))


# the settings of the protocol an evaluation takes (`v1.Args` fields; a benchmark's results.json has them)
PROTOCOL = ("version", "users", "max_steps", "ranking", "eval_seeds", "population_seed", "eval_population")


def evaluate(policy, task: str, difficulty: str = "medium", *, against=None, **settings) -> dict:
    """Score any agent as the benchmark scores PPO: `policy` (a callable from observations (K,
    obs) to actions (K, ...), an SB3 model played deterministically on raw observations, or the
    path of an `oasis-gym train` / `benchmark` run, loaded by `load_task_policy`) on the protocol's held-out
    seeds of the training population and on the held-out population, one episode per seed.
    `settings`: `PROTOCOL`'s (default `v1.Args`'s); `against`: a benchmark's results (its
    results.json path or dict), whose settings and baselines (and PPO) it is compared with; else
    the platform's default (recommender: `default_ranking`, moderator: `no_moderation`). Returns
    per set the policy's episodes (`runs`), mean `return` and `stats` (`rl_stats.report`: IQM, mean,
    P(policy > each)). Bad input: a ValueError with one line."""
    saved = _load_against(against)
    args = _protocol_args(task, difficulty, saved, settings)
    act_for = _policy_act_for(policy, args)
    out = {"task": args.task_id, "difficulty": difficulty, "settings": {k: getattr(args, k) for k in PROTOCOL}}
    out["eval_sets"] = {}
    for name, population in held_out(args).items():
        runs = play(args, population, act_for)
        others = candidate_scores(saved["eval_sets"][name]) if saved else _default_baseline(args, population)
        scores = {"policy": returns(runs)[None]} | others
        out["eval_sets"][name] = {"population_seed": population, "seeds": list(args.eval_seeds), "runs": runs,
                                  "return": float(returns(runs).mean()),
                                  "stats": rl_stats.report(scores, "policy")}  # fmt: skip
    return out


def _default_baseline(args: v1.Args, population: int) -> dict[str, np.ndarray]:
    """The platform's default policy's returns (1, episodes): the recommender's default ranking, no moderation."""
    if args.task == "recommender":
        name, action = "default_ranking", tb.default_action(args.ranking, tb.user_rows(args.env()))
    else:
        name, action = "no_moderation", np.zeros(moderation.QUEUE, np.int64)
    return {name: returns(play(args, population, lambda task: lambda obs, t: np.tile(action, (task.k, 1))))[None]}


def _load_against(against) -> dict | None:
    """A benchmark's results: None, a dict, or the path of its results.json (ValueError, one line)."""
    if against is None or isinstance(against, dict):
        return against
    try:
        return json.loads(Path(against).read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError) as err:
        raise ValueError(
            f"against must be a benchmark's results.json or its dict: {' '.join(str(err).split())}"
        ) from None


def _protocol_args(task, difficulty, saved: dict | None, settings: dict) -> v1.Args:
    """`v1.Args` of an evaluation, checked (ValueError, one line) before any episode."""
    if task not in v1.TASKS:
        raise ValueError(f"task must be one of {list(v1.TASKS)}, got {task!r}")
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {list(DIFFICULTIES)}, got {difficulty!r}")
    if unknown := sorted(set(settings) - set(PROTOCOL)):
        raise ValueError(f"evaluate takes the protocol's settings {list(PROTOCOL)}, not {unknown}")
    settings = {k: tuple(v) if isinstance(v, (list, range)) else v for k, v in settings.items()}
    if saved is not None:
        s = saved.get("settings", {})
        if (s.get("task"), s.get("difficulty")) != (task, difficulty):
            raise ValueError(
                f"against is a benchmark of {s.get('task')} ({s.get('difficulty')}), not {task} ({difficulty})"
            )
        base = {k: tuple(s[k]) if isinstance(s[k], list) else s[k] for k in PROTOCOL}
        if clash := sorted(k for k, v in settings.items() if v != base[k]):
            raise ValueError(f"{clash} differ from the benchmark's (against): leave them out")
        settings = base
    args = v1.Args(task=task, difficulty=difficulty, **settings)
    args.check()
    return args


def _policy_act_for(policy, args: v1.Args):
    """`policy` as `act_for(task)`, each batch of actions checked (shape, finite, codes in range).
    A path is a run of `oasis-gym train` / `benchmark` (its folder or model.zip), loaded with its
    observation statistics and anchor (`load_task_policy`): `PPO.load` of its model.zip alone
    would play raw observations, another policy than the one trained. A policy with memory (a
    recurrent one) has a `reset()` method: it is called before each batch of episodes."""
    if isinstance(policy, (str, Path)):
        policy = load_task_policy(policy)
    predict = getattr(policy, "predict", None)
    if predict is None and not callable(policy):
        raise ValueError(f"policy must be a callable (observations -> actions) or an SB3 model, got {policy!r}")

    def act_for(task):  # (once per batch of episodes, all at their first step: a policy's `reset` runs here)
        if callable(getattr(policy, "reset", None)):
            policy.reset()
        rec = args.task == "recommender"
        shape = (task.k, task.action_size if rec else task.queue_size)
        low, high = (-1.0, 1.0) if rec else (0, task.n_codes - 1)
        name = f"{args.task_id} policy's action"
        return lambda obs, t: action_array(
            predict(obs, deterministic=True)[0] if predict else policy(obs), name, shape, low, high, not rec, True
        )

    return act_for
