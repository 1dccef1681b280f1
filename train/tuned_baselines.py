"""Baselines of the v1 tasks tuned as hard as the learner, and the batched episode runner.

`run_episodes` plays whole episodes of many (seed, policy) pairs at once on one task of K =
pairs episodes (the batched engine), so a black-box search evaluates its whole population
of candidates in one run. Baselines:

- recommender: `tune_constant` -- the best *constant* action (a fixed W), found by the
  cross-entropy method on the tuning seeds of the training population (per-user W: started
  at the best global ranking, so it is at least as good on those seeds). A constant W is
  already a per-user ranking (w(u) = z(u) @ W reads each user's history summaries); what it
  cannot do is change with the platform's state. `default` is the platform's ranking.
- recommender, `ranking="per_user"`: also the best *global* constant (one w for everyone,
  `global_as_per_user`): what per-user weights must beat.
- moderator: `tune_constant_codes` -- the best constant action (a code per queue slot) by
  the cross-entropy method; `tune_rules` -- the best report-threshold rule and the best
  fact-check-first rule (`queue_rule`: the one rule, `envs.platform_rules.threshold_rule`,
  over the review queue) over a grid of thresholds (every cell on the tuning seeds); its
  supervised baseline, a label classifier, is `train/label_classifier.py`. `truth` is a
  privileged reference (it reads the hidden labels: remove and suspend every queued
  misinformation post); it is not called an oracle because it is not proven an upper bound.

The compute each search used is returned with its result (`env_steps`), to be stated beside
PPO's timesteps.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from oasis_gym.batched.tasks import ModeratorTask, RecommenderTask
from oasis_gym.envs.platform_rules import threshold_rule
from oasis_gym.model import moderation
from oasis_gym.model.ranking import DEFAULT_WEIGHTS, global_weights, user_feature_names
from oasis_gym.model.tiers import tier

EPISODE_KEYS = ("return", "engagements", "misinfo_impressions", "churned", "satisfaction")


def make_task(kind: str, k: int, env: dict):
    """The task of `kind` ("recommender" / "moderator") with K episodes and the env kwargs."""
    cls = {"recommender": RecommenderTask, "moderator": ModeratorTask}[kind]
    return cls(k, **env)


def run_episodes(kind: str, env: dict, seeds, act: Callable | None = None, act_for: Callable | None = None) -> dict:
    """Play one episode per seed, all at once; `act(obs (K, obs), t) -> actions (K, ...)`
    (or `act_for(task)` makes it, for a rule that reads the task). Returns per-episode
    arrays (K,): return and the episode totals / final values."""
    seeds = np.asarray(seeds, np.int64)
    task = make_task(kind, len(seeds), env)
    act = act if act_for is None else act_for(task)
    rows = np.arange(len(seeds))
    task.reset(rows, seeds)
    obs = task.reset_obs(rows)
    totals = {key: np.zeros(len(seeds)) for key in EPISODE_KEYS}
    for t in range(task.max_steps):
        obs, reward, info = task.step(act(obs, t))
        totals["return"] += reward
        totals["engagements"] += info["engagements"]
        totals["misinfo_impressions"] += info["misinfo_impressions"]
    totals["churned"] = info["churned"].astype(np.float64)
    totals["satisfaction"] = info["satisfaction"].astype(np.float64)
    return totals


def per_episode(totals: dict) -> list[dict]:
    """The totals as one dict per episode (what `train.report.paired` reads)."""
    n = len(totals["return"])
    return [{key: float(totals[key][i]) for key in totals} for i in range(n)]


# --------------------------------------------------------------------------- recommender


def user_rows(env: dict) -> int:
    """Rows of the per-user ranking W (the user features) of a recommender task's env kwargs."""
    return len(user_feature_names(tier(env.get("difficulty", "medium"), env.get("version", 1))))


def default_action(ranking: str = "per_user", rows: int = 6) -> np.ndarray:
    """The action of the platform's default ranking (DEFAULT_WEIGHTS for everyone; `rows`:
    of the per-user W, `user_rows(env)`)."""
    if ranking == "global":
        return DEFAULT_WEIGHTS.copy()
    return global_as_per_user(DEFAULT_WEIGHTS, rows)


def _score_constants(kind: str, env: dict, seeds: np.ndarray, cands: np.ndarray,
                     policy: Callable | None = None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Mean return of each constant action in `cands` over `seeds` (all in one batched run),
    and the candidates' order, best first. `policy(task, params (K, A))`: the act of
    episodes with those parameters (None: the parameters are the action)."""
    acts = np.repeat(cands, len(seeds), axis=0)
    if policy is None:
        totals = run_episodes(kind, env, np.tile(seeds, len(cands)), lambda obs, t, a=acts: a)
    else:
        totals = run_episodes(kind, env, np.tile(seeds, len(cands)), act_for=lambda task, a=acts: policy(task, a))
    score = totals["return"].reshape(len(cands), len(seeds)).mean(1)
    return score, np.argsort(-score)


def tune_constant(env: dict, seeds, iterations: int = 12, population: int = 24, elite: int = 6, seed: int = 0,
                  ranking: str = "per_user", progress: Callable[[str], None] | None = None,
                  start: np.ndarray | None = None, start_sd: float | np.ndarray = 0.5,
                  policy: Callable | None = None, label: str = "the constant ranking") -> dict:  # fmt: skip
    """The cross-entropy method over constant actions in [-1, 1]^A: each iteration samples
    `population` actions from a diagonal Gaussian (started at `start`, default the default
    ranking, with sd `start_sd`: one for all or one per dimension), scores each by its mean
    return over `seeds` (all candidates x seeds in one batched run; the incumbent is always
    among them), refits to the `elite` best. Returns the best action seen, its score and the
    compute. `policy(task, params)` searches the parameters of a policy instead (see
    `_score_constants`; `start` is then required). `progress` gets one line when it ends, naming
    `label` (what is tuned)."""
    rng = np.random.default_rng([seed, 0xCE])
    seeds = np.asarray(seeds, np.int64)
    mean = (default_action(ranking, user_rows(env)) if start is None else np.asarray(start)).astype(np.float64)
    sd = np.full_like(mean, start_sd)
    best, best_score, steps = mean.copy(), -np.inf, 0
    env = {**env, "ranking": ranking}
    for it in range(iterations):
        cands = np.clip(rng.normal(mean, sd, (population, len(mean))), -1, 1)
        cands[0] = best  # keep the incumbent (re-scored on the same seeds)
        score, order = _score_constants("recommender", env, seeds, cands.astype(np.float32), policy)
        steps += population * len(seeds) * make_steps(env)
        if score[order[0]] > best_score or it == 0:
            best, best_score = cands[order[0]].copy(), float(score[order[0]])
        top = cands[order[:elite]]
        mean, sd = top.mean(0), np.maximum(top.std(0), 0.05)
    if progress:
        progress(_tuned_line(label, iterations, population, seeds, best_score))
    return {"action": best.astype(np.float32), "score": best_score, "env_steps": steps, "method": "cem",
            "iterations": iterations, "population": population, "tune_seeds": seeds.tolist()}  # fmt: skip


def global_as_per_user(w: np.ndarray, rows: int = 6) -> np.ndarray:
    """A global ranking w (9,) as the per-user action W (rows x 9): w in the bias row, zeros below."""
    return global_weights(w, rows).ravel()


def tune_constant_codes(env: dict, seeds, iterations: int = 12, population: int = 24, elite: int = 6, seed: int = 0,
                        progress: Callable[[str], None] | None = None) -> dict:  # fmt: skip
    """The moderator's best *constant* action (one code per queue slot, whatever the queue
    holds) by the cross-entropy method over per-slot categorical distributions (started at
    "none" with probability 0.7), each candidate on every tuning seed, refit to the elite
    with smoothing 0.7. Returns the best action seen, its score and the compute."""
    rng = np.random.default_rng([seed, 0xC0DE])
    seeds = np.asarray(seeds, np.int64)
    n_codes = len(moderation.ACTIONS)
    probs = np.full((moderation.QUEUE, n_codes), 0.3 / (n_codes - 1))
    probs[:, moderation.NONE] = 0.7
    best, best_score, steps = np.zeros(moderation.QUEUE, np.int64), -np.inf, 0
    for it in range(iterations):
        u = rng.random((population, moderation.QUEUE, 1))
        cands = (u > np.cumsum(probs, axis=1)[None]).sum(2).clip(0, n_codes - 1)
        cands[0] = best
        score, order = _score_constants("moderator", env, seeds, cands)
        steps += population * len(seeds) * make_steps(env)
        if score[order[0]] > best_score or it == 0:
            best, best_score = cands[order[0]].copy(), float(score[order[0]])
        freq = np.stack([(cands[order[:elite]] == c).mean(0) for c in range(n_codes)], 1)
        probs = 0.7 * freq + 0.3 * probs
    if progress:
        progress(_tuned_line("the constant moderation", iterations, population, seeds, best_score))
    return {"action": best, "score": best_score, "env_steps": steps, "method": "cem (categorical)",
            "iterations": iterations, "population": population, "tune_seeds": seeds.tolist()}  # fmt: skip


def _tuned_line(label: str, iterations: int, population: int, seeds, score: float) -> str:
    """The one progress line of a cross-entropy search, when it ends."""
    n = len(seeds)
    return (f"tuned {label} (cross-entropy method: {iterations} x {population} candidates on {n} tuning "
            f"seed{'s' if n != 1 else ''}): best mean return {score:.3f}")  # fmt: skip


def make_steps(env: dict) -> int:
    """Steps of one episode with these env kwargs."""
    return int(env.get("max_steps", 100))


# --------------------------------------------------------------------------- moderator

F = {name: i for i, name in enumerate(moderation.QUEUE_FEATURES)}
NF = len(moderation.QUEUE_FEATURES)


def _slots(obs: np.ndarray) -> np.ndarray:
    return obs[:, : moderation.QUEUE * NF].reshape(len(obs), moderation.QUEUE, NF)


def verdict_sign(env: dict) -> int:
    """How the moderator task of these env kwargs shows verdicts (`moderation.shown_verdict_sign`)."""
    return moderation.shown_verdict_sign(tier(env.get("difficulty", "medium"), env.get("version", 1), "moderator"))


def queue_rule(remove_at: np.ndarray, suspend_at: np.ndarray, check_at: np.ndarray | None = None,
               shown_sign: int = -1) -> Callable:  # fmt: skip
    """The report-threshold rule (`envs.platform_rules.threshold_rule`) over a moderator task's
    review queue, batched with per-episode thresholds (K,): fact-check posts with >= check_at
    reports (None: no checks), remove posts with >= remove_at reports or found misinformation,
    and also suspend the author of a post with >= suspend_at reports or found misinformation
    whose author was moderated before. `shown_sign`: how the task shows verdicts
    (`verdict_sign`: -1 Moderator-v1, +1 Moderator-v2)."""

    def act(obs: np.ndarray, t: int) -> np.ndarray:
        x = _slots(obs)
        reports = np.expm1(x[..., F["log_reports"]])
        verdict = shown_sign * x[..., F["fact_check"]]  # the model's sign: > 0 found misinformation
        remove, suspend, check = threshold_rule(
            reports, x[..., F["filled"]] > 0, remove_at, suspend_at, check_at,
            found=verdict > 0, cleared=verdict < 0, repeat=x[..., F["author_moderated"]] >= 1,
        )  # fmt: skip
        codes = np.zeros(reports.shape, np.int64)
        codes[remove] = moderation.REMOVE
        codes[suspend] = moderation.REMOVE_AND_SUSPEND
        codes[check] = moderation.FACT_CHECK
        return codes

    return act


def tune_rules(env: dict, seeds, progress: Callable[[str], None] | None = None) -> dict:
    """Grid search of `queue_rule` (remove_at x suspend_at, without and with fact-checks
    at check_at), each cell on every tuning seed, all cells in one batched run per family."""
    seeds = np.asarray(seeds, np.int64)
    out, steps, sign = {}, 0, verdict_sign(env)
    grids = {
        "report_threshold": [(r, s, None) for r in (1, 2, 3, 4, 6, 9) for s in (1, 2, 3, 5, 8, 99) if s >= r],
        "fact_check_first": [(r, s, c) for r in (3, 6, 99) for s in (3, 99) for c in (0, 1, 2, 4) if s >= r],
    }
    for family, grid in grids.items():
        cells = np.asarray([[r, s, -1 if c is None else c] for r, s, c in grid], np.float64)
        rep = np.repeat(cells, len(seeds), axis=0)
        rule = queue_rule(rep[:, 0], rep[:, 1], None if family == "report_threshold" else rep[:, 2], sign)
        totals = run_episodes("moderator", env, np.tile(seeds, len(grid)), rule)
        steps += len(rep) * make_steps(env)
        score = totals["return"].reshape(len(grid), len(seeds)).mean(1)
        i = int(np.argmax(score))
        r, s, c = grid[i]
        out[family] = {"remove_at": r, "suspend_at": s, "check_at": c, "score": float(score[i]), "cells": len(grid),
                       "verdict_sign": sign}  # fmt: skip
        if progress:
            checks = "no fact-checks" if c is None else f"check at {c}"
            progress(f"tuned {family}: remove at {r}, suspend at {s}, {checks}: mean return {score[i]:.3f}")
    out["env_steps"] = steps
    out["tune_seeds"] = seeds.tolist()
    return out


def rule_from(tuned: dict, k: int) -> Callable:
    """The tuned rule of one family as a batched rule over K episodes."""
    full = lambda v: np.full(k, v, np.float64)  # noqa: E731
    check = None if tuned["check_at"] is None else full(tuned["check_at"])
    return queue_rule(full(tuned["remove_at"]), full(tuned["suspend_at"]), check, tuned.get("verdict_sign", -1))


def truth_rule(task: ModeratorTask) -> Callable:
    """Privileged reference (reads the hidden labels): remove every queued misinformation
    post, and suspend its author only where the author is a misinformation account (an
    ordinary user who shared one is not suspended: that would be a false positive)."""

    def act(obs: np.ndarray, t: int) -> np.ndarray:
        st, ids = task.state, task.queue_ids
        rows, slots = np.arange(st.k)[:, None], st.slot(ids)
        truth = st.misinfo[rows, slots] & (ids >= 0)
        source = st.misinfo_account[rows, st.author[rows, slots]]
        return np.where(truth, np.where(source, moderation.REMOVE_AND_SUSPEND, moderation.REMOVE), moderation.NONE)

    return act
