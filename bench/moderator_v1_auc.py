"""How much Moderator-v1's public signals reveal the label, per tier (issue 30).

    python bench/moderator_v1_auc.py                       # every tier, 24 episodes each
    python bench/moderator_v1_auc.py --tiers hard --episodes 40

For each tier: play `--episodes` episodes (held-out style seeds 7000+, 1 000 users) with no
removals and the fact-check budget spent on the queue's first slots every step (so
verdicts exist), and collect every filled queue slot of every step: its public features and
its hidden label (misinformation or not). Then, cross-validated by episode (5 folds: no
episode in both training and test data), a logistic regression and a small MLP (16 tanh
units) predict the label from
- the public features alone (everything the moderator sees but the fact-check verdict), and
- the public features plus the verdict.
One JSON line per tier and classifier: out-of-fold AUC of each feature set, samples, the
misinformation share, load. The design goal (issue 30): in hard, no classifier on the public
features alone reaches AUC 0.85, and the fact-check verdict raises it.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from oasis_gym.batched import moderation
from oasis_gym.batched.tasks import ModeratorTask

F = {name: i for i, name in enumerate(moderation.QUEUE_FEATURES)}
PUBLIC = [i for name, i in F.items() if name not in ("fact_check", "filled")]
WITH_CHECK = PUBLIC + [F["fact_check"]]


def collect(difficulty: str, seeds: list[int], users: int, steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features (S, 14), labels (S,), episode index (S,)) of every filled queue slot."""
    task = ModeratorTask(len(seeds), users, difficulty, population_seed=0, max_steps=steps)
    rows = np.arange(len(seeds))
    task.reset(rows, np.asarray(seeds))
    obs = task.reset_obs(rows)
    xs, ys, eps = [], [], []
    budget = task.state.dyn.fact_check_budget
    for _ in range(steps):
        st, ids = task.state, task.queue_ids
        x = obs[:, : moderation.QUEUE * len(F)].reshape(len(seeds), moderation.QUEUE, len(F))
        filled = ids >= 0
        label = st.misinfo[rows[:, None], st.slot(ids)]
        k, j = np.nonzero(filled)
        xs.append(x[k, j])
        ys.append(label[k, j])
        eps.append(k)
        codes = np.zeros((len(seeds), moderation.QUEUE), np.int64)
        codes[:, :budget] = moderation.FACT_CHECK
        obs, _, _ = task.step(codes)
    return np.concatenate(xs), np.concatenate(ys).astype(np.float64), np.concatenate(eps)


def auc(score: np.ndarray, y: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney, ties counted half)."""
    order = np.argsort(score, kind="stable")
    ranks = np.empty(len(score))
    s = score[order]
    # average ranks of ties
    edges = np.flatnonzero(np.diff(s)) + 1
    starts = np.concatenate([[0], edges])
    ends = np.concatenate([edges, [len(s)]])
    for a, b in zip(starts, ends):
        ranks[order[a:b]] = (a + b + 1) / 2
    pos = y > 0.5
    n1, n0 = pos.sum(), (~pos).sum()
    return float((ranks[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tiers", default="easy,medium,hard")
    p.add_argument("--episodes", type=int, default=24)
    p.add_argument("--users", type=int, default=1000)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--models", default="logistic,mlp")
    args = p.parse_args()
    seeds = list(range(7000, 7000 + args.episodes))
    for tier in args.tiers.split(","):
        x, y, ep = collect(tier, seeds, args.users, args.steps)
        for model in args.models.split(","):
            row = {"bench": "moderator_v1_auc", "difficulty": tier, "model": model, "samples": int(len(y)),
                   "misinfo_share": round(float(y.mean()), 4),
                   "auc_public": round(cross_validated_auc(x[:, PUBLIC], y, ep, model), 4),
                   "auc_public_and_fact_check": round(cross_validated_auc(x[:, WITH_CHECK], y, ep, model), 4),
                   "checked_share": round(float((x[:, F["fact_check"]] != 0).mean()), 4),
                   "episodes": args.episodes, "load_avg_1m": round(os.getloadavg()[0], 2)}  # fmt: skip
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
