"""The task population: the users of the benchmark tasks, fixed per population seed (issue 51).

The home of `make_population` and `outlets` (the fast path's `Engine` draws its users here;
the platform path will build its profiles from the same arrays). A population is what stays
the same across episodes: each user's kind (casual, outrage-prone, news-seeking:
`Dynamics.kind_shares`), interests over `N_TOPICS` topics, starting opinion, activity,
posting rate, the quality and arousal of what they write, and `FOLLOWEES` accounts they
follow. Popularity is heavy-tailed (Pareto weights) and follows are homophilous (closer
opinions follow each other more), as on Twitter; the most-followed 2 % are outlets
(`outlets`) that post more, better and calmer. Held-out evaluation uses a population seed
never used in training (`population_seed`).

Its arrays are a `TaskPopulation`, not an `oasis_gym.population.Population`: that one is the
platform's profiles (names, texts, a follow graph of any shape), made by the general
generator `population/synthetic.py`; one name keeps one meaning. Everything that changes
within an episode lives in the fast path's `batched/state.py`; which accounts post
misinformation is drawn per episode there, from the episode seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tiers import Dynamics

N_TOPICS = 4
FOLLOWEES = 16
CASUAL, OUTRAGE_PRONE, NEWS_SEEKING = 0, 1, 2
KIND_NAMES = ("casual", "outrage_prone", "news_seeking")
MAX_TASK_USERS = 200_000


@dataclass(frozen=True)
class TaskPopulation:
    """Per-user arrays, shape (N,) unless noted."""

    kind: np.ndarray  # int8
    interest: np.ndarray  # (N, N_TOPICS) float32, unit rows
    opinion: np.ndarray  # float32 in [-1, 1]
    activity: np.ndarray  # float32: base probability of a visit per step
    post_rate: np.ndarray  # float32: probability of a post per visit
    quality: np.ndarray  # float32: mean quality of the user's posts
    arousal: np.ndarray  # float32: mean arousal of the user's posts
    followees: np.ndarray  # (N, FOLLOWEES) int32
    fans: np.ndarray  # float32: followers (in-degree)
    outlet: np.ndarray  # bool

    @property
    def n(self) -> int:
        """The number of users."""
        return len(self.kind)


def make_population(n: int, dynamics: Dynamics, seed: int = 0) -> TaskPopulation:
    """A population of `n` users (2 * FOLLOWEES <= n <= MAX_TASK_USERS) drawn from `seed`."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or not 2 * FOLLOWEES <= n <= MAX_TASK_USERS:
        raise ValueError(f"users must be an integer in [{2 * FOLLOWEES}, {MAX_TASK_USERS}], got {n!r}")
    rng = np.random.default_rng([int(seed), 0x0A515])
    kind = rng.choice(3, size=n, p=np.asarray(dynamics.kind_shares) / sum(dynamics.kind_shares)).astype(np.int8)
    interest = rng.dirichlet(np.full(N_TOPICS, 0.5), size=n).astype(np.float32)
    interest /= np.linalg.norm(interest, axis=1, keepdims=True)
    opinion = np.clip(rng.normal(0.0, 0.45, n), -1, 1).astype(np.float32)
    activity = np.clip(rng.lognormal(np.log(0.12), 0.6, n), 0.02, 0.6).astype(np.float32)
    popularity = rng.pareto(1.5, n) + 1.0
    followees = _follow_graph(rng, opinion, popularity)
    fans = np.bincount(followees.ravel(), minlength=n).astype(np.float32)
    outlet = outlets(fans)
    post_rate = np.clip(rng.lognormal(np.log(0.15), 0.5, n), 0.02, 0.8)
    post_rate[outlet] = 0.9
    quality = rng.beta(4, 4, n)
    quality[outlet] = rng.beta(8, 2, outlet.sum())
    arousal = np.where(kind == OUTRAGE_PRONE, rng.beta(5, 3, n), rng.beta(2, 5, n))
    arousal[outlet] = rng.beta(2, 6, outlet.sum())
    return TaskPopulation(
        kind=kind,
        interest=interest,
        opinion=opinion,
        activity=activity,
        post_rate=post_rate.astype(np.float32),
        quality=quality.astype(np.float32),
        arousal=arousal.astype(np.float32),
        followees=followees,
        fans=fans,
        outlet=outlet,
    )


def outlets(fans: np.ndarray, share: float = 0.02) -> np.ndarray:
    """(N,) bool: the outlets, the most-followed `share` of the users (fans at or above the
    1 - share quantile; ties at the quantile are all outlets)."""
    return fans >= np.quantile(fans, 1.0 - share)


def _follow_graph(rng: np.random.Generator, opinion: np.ndarray, popularity: np.ndarray) -> np.ndarray:
    """FOLLOWEES distinct accounts per user: 8x as many candidates drawn by popularity,
    the closest in opinion kept (Gumbel top-k on popularity x homophily), never oneself."""
    n = len(opinion)
    draws = rng.choice(n, size=(n, 8 * FOLLOWEES), p=popularity / popularity.sum())
    score = -np.abs(opinion[draws] - opinion[:, None]) / 0.3 + rng.gumbel(size=draws.shape)
    order = np.argsort(draws, axis=1, kind="stable")
    draws = np.take_along_axis(draws, order, 1)
    score = np.take_along_axis(score, order, 1)
    repeat = np.zeros(draws.shape, dtype=bool)
    repeat[:, 1:] = draws[:, 1:] == draws[:, :-1]
    score[repeat | (draws == np.arange(n)[:, None])] = -np.inf
    best = np.argsort(-score, axis=1, kind="stable")[:, :FOLLOWEES]
    out = np.take_along_axis(draws, best, 1)
    # a user with too few distinct candidates (tiny n) fills with the next accounts round
    bad = ~np.isfinite(np.take_along_axis(score, best, 1))
    if bad.any():
        rows, cols = np.nonzero(bad)
        out[rows, cols] = (rows + 1 + cols) % n
    return out.astype(np.int32)
