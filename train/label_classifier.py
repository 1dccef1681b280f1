"""The moderator's supervised baseline: a misinformation classifier on the public queue features.

A trust and safety team with labelled history (past fact-checks) trains a classifier before
it tries RL; this is that baseline, tuned as hard as the others and on the same tuning seeds
only (`tune_classifier`):

1. `collect`: play the tuning episodes with no removals, the fact-check budget spent on the
   queue's first slots, and keep every filled slot's features and hidden label;
2. `fit_logistic`: an L2 logistic regression (Newton's method) on the standardised public
   features (`PUBLIC`: everything the moderator sees except the fact-check verdict, which
   the rule reads directly);
3. `classifier_rule`, grid-searched over its threshold and whether it fact-checks: remove a
   post whose predicted misinformation probability is >= the threshold, or whose
   fact-check found it false (never one found true); with checks on, spend the budget on
   the unchecked posts it would keep that it finds most suspicious.

Labels are read only on the tuning seeds. At evaluation the rule sees what PPO sees (the
observation), on the held-out seeds and population like every baseline. The fitted model
is saved in the result (`weights`, `mean`, `scale`), so `rule_of` rebuilds the rule.
`cross_validated_auc` scores a classifier family (`fit_logistic` or `fit_mlp`) cross-validated by
episode; `bench/research/moderator_v1_auc.py` reports it per tier.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from oasis_gym.batched.tasks import ModeratorTask
from oasis_gym.model import moderation
from oasis_gym.model.observations import MODERATOR_GLOBALS

from .tuned_baselines import make_steps, run_episodes, verdict_sign

F = {name: i for i, name in enumerate(moderation.QUEUE_FEATURES)}
NF, QUEUE = len(F), moderation.QUEUE
BUDGET = QUEUE * NF + MODERATOR_GLOBALS.index("fact_check_budget_share")  # its column in the observation
PUBLIC = [i for name, i in F.items() if name not in ("fact_check", "filled")]
WITH_CHECK = PUBLIC + [F["fact_check"]]
THRESHOLDS = (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def collect(env: dict, seeds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features (S, 14), labels (S,), episode index (S,)) of every filled queue slot of one
    episode per seed (env: the ModeratorTask kwargs), played without removals and with the
    fact-check budget on the first slots every step (so verdicts exist)."""
    seeds = np.asarray(seeds, np.int64)
    task = ModeratorTask(len(seeds), **env)
    rows = np.arange(len(seeds))
    task.reset(rows, seeds)
    obs = task.reset_obs(rows)
    xs, ys, eps = [], [], []
    codes = np.zeros((len(seeds), QUEUE), np.int64)
    codes[:, : task.state.dyn.fact_check_budget] = moderation.FACT_CHECK
    for _ in range(task.max_steps):
        st, ids = task.state, task.queue_ids
        label = st.misinfo[rows[:, None], st.slot(ids)]
        k, j = np.nonzero(ids >= 0)
        xs.append(obs[:, : QUEUE * NF].reshape(len(seeds), QUEUE, NF)[k, j])
        ys.append(label[k, j])
        eps.append(k)
        obs, _, _ = task.step(codes)
    return np.concatenate(xs), np.concatenate(ys).astype(np.float64), np.concatenate(eps)


def auc(score: np.ndarray, y: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney, ties counted half)."""
    order = np.argsort(score, kind="stable")
    s = score[order]
    edges = np.flatnonzero(np.diff(s)) + 1
    starts, ends = np.concatenate([[0], edges]), np.concatenate([edges, [len(s)]])
    ranks = np.empty(len(score))
    ranks[order] = np.repeat((starts + ends + 1) / 2, ends - starts)  # tied scores share their mean rank
    pos = y > 0.5
    n1, n0 = pos.sum(), (~pos).sum()
    return float((ranks[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def auc_note(value: float | None, why_undefined: str) -> str:
    """ "in-sample AUC 0.812", or what makes it undefined (None or NaN: one class only)."""
    if value is None or not np.isfinite(value):
        return f"in-sample AUC undefined: {why_undefined}"
    return f"in-sample AUC {value:.3f}"


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, iters: int = 50) -> np.ndarray:
    """Newton's method for L2-regularised logistic regression; returns weights (bias last)."""
    a = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(a.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(a @ w, -30, 30)))
        grad = a.T @ (p - y) / len(y) + l2 * w
        hess = (a * (p * (1 - p))[:, None]).T @ a / len(y) + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w


def fit_mlp(x: np.ndarray, y: np.ndarray, seed: int, hidden: int = 16, epochs: int = 60):
    """A 1-hidden-layer tanh MLP (torch, Adam, full-batch); returns a scoring function."""
    import torch

    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1))
    opt = torch.optim.Adam(net.parameters(), lr=0.02, weight_decay=1e-4)
    xt, yt = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    for _ in range(epochs * 5):
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(net(xt)[:, 0], yt)
        loss.backward()
        opt.step()
    return lambda z: net(torch.tensor(z, dtype=torch.float32))[:, 0].detach().numpy()


def cross_validated_auc(x: np.ndarray, y: np.ndarray, episode: np.ndarray, model: str, folds: int = 5) -> float:
    """Out-of-fold AUC, folds by episode, features standardised on each training fold."""
    score = np.zeros(len(y))
    fold = episode % folds
    for f in range(folds):
        train, test = fold != f, fold == f
        mu, sd = x[train].mean(0), x[train].std(0) + 1e-9
        xtr, xte = (x[train] - mu) / sd, (x[test] - mu) / sd
        if model == "logistic":
            w = fit_logistic(xtr, y[train])
            score[test] = np.hstack([xte, np.ones((len(xte), 1))]) @ w
        else:
            score[test] = fit_mlp(xtr, y[train], seed=f)(xte)
    return auc(score, y)


def probability(model: dict, slots: np.ndarray) -> np.ndarray:
    """The classifier's misinformation probability of queue slots (..., 14)."""
    z = (slots[..., PUBLIC] - np.asarray(model["mean"])) / np.asarray(model["scale"])
    w = np.asarray(model["weights"])
    return 1 / (1 + np.exp(-np.clip(z @ w[:-1] + w[-1], -30, 30)))


def classifier_rule(model: dict, threshold: np.ndarray, check: np.ndarray, shown_sign: int = -1) -> Callable:
    """A batched rule with per-episode settings (K,) (module docstring, step 3); `shown_sign`:
    how the task shows verdicts (`tuned_baselines.verdict_sign`)."""

    def act(obs: np.ndarray, t: int) -> np.ndarray:
        k = len(obs)
        x = obs[:, : QUEUE * NF].reshape(k, QUEUE, NF)
        filled, verdict = x[..., F["filled"]] > 0, shown_sign * x[..., F["fact_check"]]  # the model's sign
        p = probability(model, x)
        remove = filled & (((p >= threshold[:, None]) & (verdict == 0)) | (verdict > 0))
        codes = np.where(remove, moderation.REMOVE, moderation.NONE)
        budget = np.rint(obs[:, BUDGET] * QUEUE).astype(np.int64)
        suspect = np.where(filled & ~remove & (verdict == 0) & check[:, None], p, -1.0)
        rank = np.argsort(np.argsort(-suspect, axis=1, kind="stable"), axis=1)  # 0: most suspicious
        codes[(suspect >= 0) & (rank < budget[:, None])] = moderation.FACT_CHECK
        return codes

    return act


def rule_of(tuned: dict, k: int) -> Callable:
    """The tuned classifier rule (a `tune_classifier` result) over K episodes."""
    return classifier_rule(tuned, np.full(k, tuned["threshold"]), np.full(k, tuned["check"]),
                           tuned.get("verdict_sign", -1))  # fmt: skip


def tune_classifier(env: dict, seeds, progress: Callable[[str], None] | None = None) -> dict:
    """Fit the classifier on the tuning seeds' labelled slots, then grid-search its rule
    (THRESHOLDS x checks off / on, every cell on every tuning seed, in one batched run)."""
    seeds = np.asarray(seeds, np.int64)
    x, y, _ = collect(env, seeds)
    mean, scale = x[:, PUBLIC].mean(0), x[:, PUBLIC].std(0) + 1e-9
    weights = fit_logistic((x[:, PUBLIC] - mean) / scale, y)
    model = {"weights": weights.tolist(), "mean": mean.tolist(), "scale": scale.tolist()}
    cells = [(thr, check) for check in (False, True) for thr in THRESHOLDS]
    thr = np.repeat([c[0] for c in cells], len(seeds))
    chk = np.repeat([c[1] for c in cells], len(seeds))
    sign = verdict_sign(env)
    totals = run_episodes("moderator", env, np.tile(seeds, len(cells)), classifier_rule(model, thr, chk, sign))
    score = totals["return"].reshape(len(cells), len(seeds)).mean(1)
    i = int(np.argmax(score))
    fit_auc = round(auc(probability(model, x), y), 3) if 0 < y.sum() < len(y) else None  # None: one kind of post
    threshold, check = cells[i]
    if progress:
        auc_text = auc_note(fit_auc, "the tuning episodes' posts were all true or all false")
        progress(f"tuned the label classifier: remove at p >= {threshold}, fact-checks {'on' if check else 'off'}: "
                 f"mean return {score[i]:.3f} ({auc_text})")  # fmt: skip
    steps = (1 + len(cells)) * len(seeds) * make_steps(env)  # the labelled episodes, then the grid
    return {**model, "threshold": threshold, "check": check, "score": float(score[i]), "samples": len(y),
            "in_sample_auc": fit_auc, "cells": len(cells), "tune_seeds": seeds.tolist(), "env_steps": steps,
            "method": "logistic regression + grid", "verdict_sign": sign}  # fmt: skip
