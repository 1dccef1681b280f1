"""Feeds of every active user of K simulations at once: candidates, features, ranking.

An active user's candidates are the newest post of each followee and the newest repost of
`SHARES_SEEN` of them (in-network, the followees taken in turn step by step; a returned
account has lost its followers, so its posts are in-network for nobody) and
`OUT_OF_NETWORK` posts drawn from the ring (out-of-network), duplicates and dead posts
masked. Each candidate has the `CANDIDATE_FEATURES` a ranking service would
compute (no labels: arousal is a classifier's noisy score), each user the `USER_FEATURES`
(history summaries; Recommender-v2 adds the `AFFINITY_FEATURES`). The score of a candidate
is x . w(u), w(u) = z(u) @ W, with the ranking weights W of the user's simulation; the top
`feed_size` are served in score order.
Every operation is over the flat list of (simulation, user) pairs, so a step costs the
same Python for 1 or 64 simulations, and a row's numbers never depend on the other rows.
"""

from __future__ import annotations

import numpy as np

from ..model import rng
from ..model.population import FOLLOWEES, N_TOPICS
from .state import S_CANDIDATE, State

SHARES_SEEN = 8
OUT_OF_NETWORK = 8
IN_NETWORK = FOLLOWEES + SHARES_SEEN
CANDIDATES = IN_NETWORK + OUT_OF_NETWORK
CANDIDATE_FEATURES = (
    "recency",  # exp(-age / 3 steps)
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
_LOG1000, _LOG100 = np.log(1000.0), np.log(100.0)


def candidates(state: State, ka: np.ndarray, ua: np.ndarray):
    """Candidate post ids (M, CANDIDATES) of active pairs, their flat indexes, in-network
    flags and validity."""
    rows = ka[:, None]
    fol = rows * state.n + state.pop.followees[ua]  # flat (simulation, followee) indexes
    reach = state.account_start.reshape(-1)[fol] == 0
    own_post = np.where(reach, state.last_post.reshape(-1)[fol], -1)
    turn = (state.t[rows] + np.arange(SHARES_SEEN)) % FOLLOWEES
    shared = state.last_share.reshape(-1)[np.take_along_axis(fol, turn, 1)]
    draw = rng.uniform(state.key[rows], state.t[rows], S_CANDIDATE, ua[:, None], np.arange(OUT_OF_NETWORK))
    out = state.post_id.reshape(-1)[rows * state.p + (draw * state.p).astype(np.int64)]
    ids = np.concatenate([own_post, shared, out], axis=1)
    # dedupe: sort the keys 2 id + (out-of-network) and drop repeated ids, so the in-network
    # copy of a post is the one kept; the keys decode back into ids and flags
    code = ids * 2
    code[:, IN_NETWORK:] += 1
    code.sort(axis=1)
    ids = code >> 1
    in_net = (code & 1) == 0
    flat = state.flat(ka, ids)
    valid = state.live_flat(ids, flat)
    valid[:, 1:] &= ids[:, 1:] != ids[:, :-1]
    valid &= state.author.reshape(-1)[flat] != ua[:, None]
    return ids, flat, in_net, valid


# the post table: what a step reads of every post, one row per (simulation, slot), gathered
# for all candidates in one take. The first columns are the CANDIDATE_FEATURES (the per-cell
# ones, similarity / in_network / alignment, are filled after the gather), then the hidden
# attributes the users respond to and their topic.
HIDDEN = ("stance", "quality", "true_arousal", "misinfo")
TABLE = CANDIDATE_FEATURES + HIDDEN + tuple(f"topic{d}" for d in range(N_TOPICS))
COL = {name: i for i, name in enumerate(TABLE)}
_TOPIC0 = COL["topic0"]


def post_table(state: State) -> np.ndarray:
    """(K * P, len(TABLE)) float32: every post's row of the table now (dead slots too: the
    candidates' validity masks them)."""
    k, p = state.k, state.p
    table = np.zeros((k, p, len(TABLE)), np.float32)
    age = (state.t[:, None] - state.created).astype(np.float32)
    likes, shares = state.likes, state.shares
    np.exp(-age / 3.0, out=table[..., COL["recency"]])
    table[..., COL["popularity"]] = np.log1p(likes + shares) / _LOG1000
    author_fans = np.take_along_axis(state.fans, state.author, 1)
    table[..., COL["author_fans"]] = np.log1p(author_fans) / _LOG1000
    table[..., COL["arousal"]] = state.arousal_score
    table[..., COL["reports"]] = np.log1p(state.reports) / _LOG100
    table[..., COL["like_rate"]] = (likes + shares) / (state.impressions + 5.0)
    table[..., COL["stance"]] = state.stance
    table[..., COL["quality"]] = state.quality
    table[..., COL["true_arousal"]] = state.arousal
    table[..., COL["misinfo"]] = state.misinfo
    table[..., _TOPIC0:] = np.moveaxis(state.topic, 0, -1)
    return table.reshape(k * p, len(TABLE))


def features(
    state: State, table: np.ndarray, ka: np.ndarray, ua: np.ndarray, flat: np.ndarray, in_net: np.ndarray
) -> np.ndarray:
    """The table rows of the candidates at `flat` of pairs (ka, ua), (M, C, len(TABLE))
    float32, with the per-cell features filled: similarity (user interests . post topic),
    in_network, alignment (user opinion x post stance)."""
    x = np.take(table, flat, axis=0)
    interest = state.pop.interest[ua]
    x[..., COL["similarity"]] = np.einsum("mcd,md->mc", x[..., _TOPIC0:], interest)
    x[..., COL["in_network"]] = in_net
    np.multiply(state.opinion[ka, ua][:, None], x[..., COL["stance"]], out=x[..., COL["alignment"]])
    return x


def user_feature_names(dyn) -> tuple[str, ...]:
    """The user features of a tier's ranking: USER_FEATURES, + AFFINITY_FEATURES in v2."""
    return USER_FEATURES + (AFFINITY_FEATURES if dyn.history_affinities else ())


def user_features(state: State, ka: np.ndarray, ua: np.ndarray) -> np.ndarray:
    """The user features of pairs (ka, ua): (M, len(user_feature_names)) float32."""
    z = np.empty((len(ka), len(user_feature_names(state.dyn))), np.float32)
    z[:, 0] = 1.0
    z[:, 1] = state.opinion[ka, ua]
    z[:, 2] = np.abs(z[:, 1])
    z[:, 3] = state.eng_ema[ka, ua]
    z[:, 4] = state.visit_ema[ka, ua]
    z[:, 5] = state.arousal_ema[ka, ua]
    if state.dyn.history_affinities:
        z[:, 6] = state.in_network_ema[ka, ua]
        z[:, 7] = state.recency_ema[ka, ua]
    return z


def rank(
    x: np.ndarray, z: np.ndarray, weights: np.ndarray, valid: np.ndarray, demoted: np.ndarray, feed_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Positions (M, feed_size) into the candidates, best first, and whether each is a post.

    `x` (M, C, len(TABLE)) from `features`; `weights` (M, Z, 9) are the ranking weights W of
    each pair's simulation. The scores are einsum's sum of products per cell (no BLAS, a fixed
    order per cell), so a row's scores are bit-identical whatever the batch (tested). Demoted
    (downranked) candidates lose 2."""
    w = np.einsum("mi,mif->mf", z, weights)
    score = np.einsum("mcf,mf->mc", x[..., : len(CANDIDATE_FEATURES)], w)
    np.subtract(score, np.float32(2.0), out=score, where=demoted)
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
    key = np.where(bits < 0, bits ^ np.int32(0x7FFFFFFF), bits)
    key = (-(key >> 5)) << 5
    key |= np.arange(score.shape[1], dtype=np.int32)
    key.sort(axis=1)
    return (key[:, :k] & 31).astype(np.int64)
