"""The task ranking as a platform recommender: the feeds of Recommender-v4 / Moderator-v2 (issue 51).

`TaskRecommender` serves a task world's feeds through the recommender interface
(`recommend(platform, users, k, rng)` -> platform post ids), so a `Simulation` can build a task
step's feeds as it builds any other (`Observer.observe` -> `recsys.recommend`). Its ranking is
the fast path's, the same functions over the same arrays: the candidates of
`model.candidates.feed_candidates` (the world's ring of posts, its follow graph, its
out-of-network draws), the features of `model.ranking` (`TASK_FEATURES`, gathered by
`batched/feed.py`), and `model.ranking.rank` with the weights W the recommender agent set
(`set_weights`; `DEFAULT_WEIGHTS` in the bias row until it does). So a feed it serves is the
feed the fast path serves in the same state (`tests/test_task_ranking.py`).

The world is any object with `state` (the model's arrays of one episode: a `batched.state.State`
with K = 1), `alias` (model user -> platform account) and `pid` (ring slot -> platform post id):
`oasis_gym.world.sim_world.SimWorld` (an env's `world`). What it served last (`served`: the model's post
ids, whether each slot holds a post, their feature rows) is what the task users respond to
(`policies/task_users.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..batched import feed
from ..batched.engine import FEED_SIZE
from ..model.ranking import CANDIDATE_FEATURES, DEFAULT_WEIGHTS, global_weights, rank, user_feature_names
from .base import BaseRecommender, as_users


@dataclass
class Served:
    """A task feed as the model sees it: one row per visitor (model user `users`)."""

    users: np.ndarray  # (M,) model users
    ids: np.ndarray  # (M, FEED_SIZE) the model's post ids, best first
    ok: np.ndarray  # (M, FEED_SIZE) whether the slot holds a post
    flat: np.ndarray  # (M, FEED_SIZE) their flat ring indexes (`State` arrays' k * P + slot)
    rows: np.ndarray  # (M, FEED_SIZE, len(feed.TABLE)) their feature rows (`batched.feed.TABLE`)
    pool: tuple[np.ndarray, np.ndarray]  # every candidate's rows (M, C, len(feed.TABLE)) and validity (M, C)


def serve(state, users: np.ndarray, weights: np.ndarray) -> Served:
    """The feeds of model `users` (M,) in simulation 0 of `state`, ranked by `weights` (Z, F)."""
    ka = np.zeros(len(users), np.int64)
    ids, flat, in_net, valid = feed.candidates(state, ka, users)
    x = feed.features(state, feed.post_table(state), ka, users, flat, in_net)
    z = feed.visitor_features(state, ka, users)
    w = np.broadcast_to(np.asarray(weights, np.float32), (len(users), *np.shape(weights)))
    top, ok = rank(x, z, w, valid, FEED_SIZE)
    at = top + (np.arange(len(users)) * ids.shape[1])[:, None]  # flat cells of the served posts
    rows = np.take(x.reshape(-1, x.shape[-1]), at, axis=0)
    return Served(users, ids.reshape(-1)[at], ok, flat.reshape(-1)[at], rows, (x, valid))


class TaskRecommender(BaseRecommender):
    """A task world's ranking (module docstring): `model.candidates` + `model.ranking.rank` with W."""

    name = "task"

    def __init__(self, world, **base):
        super().__init__(**base)
        self.world = world
        self.weights: np.ndarray | None = None
        self.served: Served | None = None

    def reset(self, platform, rng: np.random.Generator | None = None) -> None:
        """Nothing to rebuild: the feeds are ranked from the world's arrays (no embeddings)."""

    def update(self, platform) -> None:
        """Nothing to catch up with (no embeddings)."""

    def similarity(self, platform, users: np.ndarray, posts: np.ndarray) -> np.ndarray:
        """(len(users), k) float32: the model's similarity of the posts last served to `users`
        (the task's topic cosine, `model.ranking.cell_features`); 0 where a slot is empty."""
        served, posts = self.served, np.asarray(posts, np.int64)
        rows = np.searchsorted(served.users, self.model_users(as_users(users)))
        out = np.zeros(posts.shape, np.float32)
        m = min(posts.shape[1], served.rows.shape[1])
        out[:, :m] = served.rows[rows, :m, feed.COL["similarity"]]
        out[posts < 0] = 0.0
        return out

    def weight_shape(self) -> tuple[int, int]:
        """The shape (Z, F) of W: the tier's user features x the candidate features."""
        return len(user_feature_names(self.world.state.dyn)), len(CANDIDATE_FEATURES)

    def set_weights(self, weights) -> None:
        """The ranking weights W (Z, F) of the feeds built next (the recommender agent's action)."""
        w = np.asarray(weights, np.float32)
        if w.shape != self.weight_shape():
            raise ValueError(f"the task ranking's weights are {self.weight_shape()}, got {w.shape}")
        self.weights = w.copy()

    def current_weights(self) -> np.ndarray:
        """W now: the agent's last, else `DEFAULT_WEIGHTS` in the bias row."""
        if self.weights is not None:
            return self.weights
        return global_weights(DEFAULT_WEIGHTS, self.weight_shape()[0])

    def model_users(self, accounts: np.ndarray) -> np.ndarray:
        """The model user of each platform account (-1: an account of no task user, e.g. a bot's)."""
        alias = self.world.alias
        inverse = np.full(max(int(alias.max(initial=-1)), int(np.max(accounts, initial=-1))) + 1, -1, np.int64)
        inverse[alias] = np.arange(len(alias))
        return inverse[accounts]

    def recommend(self, platform, users, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """(len(users), k) platform post ids of the task feeds of platform accounts `users` (task
        users' only: ValueError), best first, -1 padded; kept as `served` for the task users."""
        users = as_users(users)
        model = self.model_users(users)
        if (model < 0).any():
            raise ValueError("the task ranking serves task users only")
        order = np.argsort(model, kind="stable")  # served in the model's order, as the fast path serves
        self.served = served = serve(self.world.state, model[order], self.current_weights())
        posts = np.where(served.ok, self.world.pid[self.world.state.slot(served.ids)], -1)
        out = np.full((len(users), k), -1, np.int64)
        m = min(k, posts.shape[1])
        out[order, :m] = posts[:, :m]
        return out
