"""The ranking of a feed: candidate and user features, the ranking weights W, scores, top-k and
downranking, one home for both paths (issue 51).

A candidate post has the features of a `FeatureSpec`; a user u ranks the candidates by
x . w(u), w(u) = z(u) @ W, with z(u) the `user_features` and W the ranking weights (the
recommender agent's action). Two specs use the same feature functions with their own
constants:

- `TASK_FEATURES` (`CANDIDATE_FEATURES`, recency over 3 steps, reports log_100, arousal and
  like_rate): the fast path's tasks (`batched/feed.py`: Recommender-v1..v3, Moderator-v1's
  feeds), ranked by `rank` / `top_columns` with `DEFAULT_WEIGHTS` when no agent ranks;
- `V0_FEATURES` (8, recency over 180 minutes, reports log_1000, controversy): the platform's
  agent-controlled recommender (`recsys/agent_controlled.py`: Recommender-v0 and every
  `recsys="agent"` run), which keeps its own fused scoring over its candidate pool, its
  `V0_USER_FEATURES` and `V0_DEFAULT_WEIGHTS`.

Each feature function computes in the float type of its inputs (float32 ring counters on the
fast path, float64 or integer platform columns on the platform) and the features are stored as
float32, so each path's numbers are what they were before the move. `demote` holds both
downranking rules (the platform's recommenders' "factor" and the fast path's "minus2").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CANDIDATE_FEATURES = (
    "recency",  # exp(-age / recency_tau): 3 steps
    "popularity",  # log(1 + likes + shares) / log(1000)
    "author_fans",  # log(1 + author's followers) / log(1000)
    "similarity",  # user interests . post topic (cosine)
    "in_network",  # 1 if from a followee's post or repost
    "arousal",  # the arousal classifier's score in [0, 1] (outrage, moral-emotional wording)
    "reports",  # log(1 + reports) / log(100)
    "alignment",  # user opinion x post stance (> 0: agreeing)
    "like_rate",  # (likes + shares) / (impressions + 5)
)
USER_FEATURES = (
    "bias",  # 1
    "opinion",  # the stance the user's engagement shows, in [-1, 1]
    "abs_opinion",
    "engagement_rate",  # moving average of engaged / served over the user's visits
    "visit_rate",  # moving average of visits per step
    "arousal_affinity",  # moving average of 4 * mean(engaged * (arousal - 0.5))
)
# v2 (`Dynamics.history_affinities`): moving averages of the user's engagement rate on
# in-network minus out-of-network posts, and on fresh minus old posts (recency-weighted)
AFFINITY_FEATURES = ("in_network_affinity", "recency_affinity")
# the platform's agent-controlled recommender (v0): z(u) = (1, opinion, |opinion|)
V0_USER_FEATURES = USER_FEATURES[:3]

# the fast path's default ranking (what the moderator task's feeds use): global weights
DEFAULT_WEIGHTS = np.array([1.0, 0.5, 0.3, 0.6, 0.5, 0.3, 0.0, 0.3, 0.5], np.float32)
# the agent-controlled recommender's weights before its agent acts (over V0_FEATURES.names)
V0_DEFAULT_WEIGHTS = np.array([1.0, 0.5, 0.25, 1.0, 0.5, 0.0, 0.0, 0.0], np.float32)


@dataclass(frozen=True)
class FeatureSpec:
    """The candidate features of one path's ranking: their names in order and the constants
    of their scales (`recency_tau` in the path's unit of age: steps or minutes)."""

    names: tuple[str, ...]
    recency_tau: float
    reports_base: float
    count_base: float = 1000.0  # popularity and author_fans: log_base(1 + count)


TASK_FEATURES = FeatureSpec(CANDIDATE_FEATURES, recency_tau=3.0, reports_base=100.0)
V0_FEATURES = FeatureSpec(
    ("recency", "popularity", "author_fans", "similarity", "in_network", "controversy", "reports", "alignment"),
    recency_tau=180.0,
    reports_base=1000.0,
)
# computed per (user, candidate) cell by the ranking, not per post (0 in `post_features`)
PER_CELL = ("similarity", "in_network")


def log_count(count, base: float) -> np.ndarray:
    """log_base(1 + count), in the float type of `count` (its log1p) and float64's log(base)."""
    return np.log1p(count) / np.log(base)


def _recency(c: dict, spec: FeatureSpec):
    return np.exp(-c["age"] / spec.recency_tau)


def _popularity(c: dict, spec: FeatureSpec):
    return log_count(c["likes"] + c["shares"], spec.count_base)


def _author_fans(c: dict, spec: FeatureSpec):
    return log_count(c["author_fans"], spec.count_base)


def _controversy(c: dict, spec: FeatureSpec):
    likes, dislikes = c["likes"], c["dislikes"]
    hi = np.maximum(likes, dislikes)
    return np.minimum(likes, dislikes) / np.where(hi > 0, hi, 1.0)


def _arousal(c: dict, spec: FeatureSpec):
    return c["arousal_score"]


def _reports(c: dict, spec: FeatureSpec):
    return log_count(c["reports"], spec.reports_base)


def _alignment(c: dict, spec: FeatureSpec):
    return np.nan_to_num(c["stance"])


def _like_rate(c: dict, spec: FeatureSpec):
    return (c["likes"] + c["shares"]) / (c["impressions"] + 5.0)


# the one list of per-post feature functions; a spec picks its features by name. Each reads
# the post columns it needs (keyword arguments of `post_features`):
POST_FEATURES = {
    "recency": _recency,  # age (steps or minutes, >= 0)
    "popularity": _popularity,  # likes, shares
    "author_fans": _author_fans,  # author_fans (the author's followers)
    "controversy": _controversy,  # likes, dislikes: min / max, 0 if none (v0)
    "arousal": _arousal,  # arousal_score (the classifier's, tasks)
    "reports": _reports,  # reports
    "alignment": _alignment,  # stance (NaN: unknown -> 0): the post's side of opinion x stance
    "like_rate": _like_rate,  # likes, shares, impressions (tasks)
}


def post_features(spec: FeatureSpec, out: np.ndarray | None = None, **columns) -> np.ndarray:
    """The per-post features of `spec` (..., len(spec.names)) float32 from post `columns`
    (arrays of one shape, named as in `POST_FEATURES`), written into `out` when given.

    The `PER_CELL` features are left 0, and the alignment column holds the post's stance: the
    ranking multiplies it by each user's opinion."""
    shape = np.shape(next(iter(columns.values())))
    if out is None:
        out = np.zeros((*shape, len(spec.names)), np.float32)
    for i, name in enumerate(spec.names):
        if name not in PER_CELL:
            out[..., i] = POST_FEATURES[name](columns, spec)
    return out


_SIM, _IN_NET, _ALIGN = (CANDIDATE_FEATURES.index(n) for n in ("similarity", "in_network", "alignment"))


def cell_features(x: np.ndarray, topic: np.ndarray, interest: np.ndarray, in_net: np.ndarray, opinion) -> None:
    """Fill the per-cell task features of candidates `x` (M, C, >= len(CANDIDATE_FEATURES)) of
    `post_features(TASK_FEATURES)` rows, in place: similarity (user `interest` (M, T) . post
    `topic` (M, C, T)), in_network (`in_net` (M, C)), alignment (`opinion` (M,) x the stance
    the column holds)."""
    x[..., _SIM] = np.einsum("mcd,md->mc", topic, interest)
    x[..., _IN_NET] = in_net
    np.multiply(np.asarray(opinion)[:, None], x[..., _ALIGN], out=x[..., _ALIGN])


def user_feature_names(dyn) -> tuple[str, ...]:
    """The user features of a task tier's ranking: USER_FEATURES, + AFFINITY_FEATURES where
    `dyn.history_affinities` (Recommender-v2 and v3)."""
    return USER_FEATURES + (AFFINITY_FEATURES if dyn.history_affinities else ())


def user_features(opinion, *history) -> np.ndarray:
    """z(u) (M, 3 + len(history)) float32: bias, opinion, |opinion| (`V0_USER_FEATURES`), then
    the `history` columns (M,) in order (the tasks: engagement, visit and arousal averages and
    the affinities of `user_feature_names`)."""
    z = np.empty((len(opinion), 3 + len(history)), np.float32)
    z[:, 0] = 1.0
    z[:, 1] = opinion
    z[:, 2] = np.abs(z[:, 1])
    for i, column in enumerate(history):
        z[:, 3 + i] = column
    return z


def global_weights(w: np.ndarray, user_features: int = len(USER_FEATURES)) -> np.ndarray:
    """W (user_features, len(w)) of one weight vector over the candidate features for every
    user: w in the bias row, zeros below."""
    out = np.zeros((user_features, len(w)), np.float32)
    out[0] = w
    return out


DEMOTE_RULES = ("factor", "minus2")


def demote(score: np.ndarray, demoted: np.ndarray, rule: str, factor: float = 0.1) -> np.ndarray:
    """Downrank the `demoted` entries of a higher-is-better `score` (broadcast), by `rule`:

    - "factor" (the platform's recommenders, `downrank_factor`): positive scores are
      multiplied by `factor`, negative ones divided by it (a factor of 1 changes nothing);
    - "minus2": the score loses 2 (a task ranking's scale, features in [0, 1]).

    Returns the score array itself where nothing changes, else a new one of its dtype."""
    if rule not in DEMOTE_RULES:
        raise ValueError(f"unknown demote rule {rule!r}; choose from {DEMOTE_RULES}")
    if not demoted.any() or (rule == "factor" and factor >= 1.0):
        return score
    if rule == "minus2":
        return np.where(demoted, score - np.asarray(2.0, score.dtype), score)
    pen = np.where(score >= 0, score * factor, score / factor)
    return np.where(demoted, pen, score).astype(score.dtype, copy=False)


def rank(
    x: np.ndarray,
    z: np.ndarray,
    weights: np.ndarray,
    valid: np.ndarray,
    feed_size: int,
    demoted: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Positions (M, feed_size) into the candidates, best first, and whether each is a post.

    `x` (M, C, >= F) candidate features (the first F = weights.shape[-1] columns count), `z`
    (M, Z) user features, `weights` (M, Z, F) the ranking weights W of each row's simulation.
    The scores are einsum's sum of products per cell (no BLAS, a fixed order per cell), so a
    row's scores are bit-identical whatever the batch (tested). `demoted` (M, C) candidates
    lose 2 ("minus2"); invalid ones are never served."""
    w = np.einsum("mi,mif->mf", z, weights)
    score = np.einsum("mcf,mf->mc", x[..., : weights.shape[-1]], w)
    if demoted is not None:
        score = demote(score, demoted, "minus2")
    np.copyto(score, np.float32(-np.inf), where=~valid)
    top = top_columns(score, feed_size)
    return top, valid.reshape(-1)[top + (np.arange(len(top)) * valid.shape[1])[:, None]]


def top_columns(score: np.ndarray, k: int) -> np.ndarray:
    """Columns of the k highest scores per row (M, C <= 32), best first, ties to the lower
    column. One int32 sort: each float32 score becomes an order-preserving int32 whose low
    5 bits are replaced by its column (the scores lose their 5 lowest mantissa bits, a
    relative 4e-6, for the ranking only)."""
    assert score.shape[1] <= 32, "top_columns packs the column into 5 bits"
    bits = score.view(np.int32)
    key = (bits >> 31) & np.int32(0x7FFFFFFF)  # negative floats: their bits but the sign flipped
    key ^= bits
    key >>= 5
    np.negative(key, out=key)
    key <<= 5
    key |= np.arange(score.shape[1], dtype=np.int32)
    key.sort(axis=1)
    return (key[:, :k] & 31).astype(np.int64)
