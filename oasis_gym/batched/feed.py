"""The fast path's feeds: the model's candidates and ranking features over the ring of K simulations.

Glue only: the candidate generation is `model/candidates.py`, the features, the ranking
weights, the scores and the top-k `model/ranking.py` (`TASK_FEATURES`). Here the state's
arrays are gathered for them: the post table (every post's row, one row per (simulation,
slot), gathered for all candidates in one take) and the visitors' user features.
Every operation is over the flat list of (simulation, user) pairs, so a step costs the
same Python for 1 or 64 simulations, and a row's numbers never depend on the other rows.
"""

from __future__ import annotations

import numpy as np

from ..model import rng
from ..model.candidates import OUT_OF_NETWORK, feed_candidates
from ..model.population import N_TOPICS
from ..model.ranking import CANDIDATE_FEATURES, TASK_FEATURES, cell_features, post_features, user_features
from .state import S_CANDIDATE, State


def candidates(state: State, ka: np.ndarray, ua: np.ndarray):
    """Candidate post ids (M, C) of active pairs, their flat indexes, in-network flags and
    validity (`model.candidates.feed_candidates`, its out-of-network draws from the episode key)."""
    draw = rng.uniform(ua[:, None], np.arange(OUT_OF_NETWORK), start=state.step_hash(S_CANDIDATE)[ka, None])
    return feed_candidates(
        state.pop.followees,
        state.account_start == 0,
        state.last_post,
        state.last_share,
        state.post_id,
        state.removed,
        state.author,
        state.t,
        draw,
        ka,
        ua,
    )


# the post table: the first columns are the CANDIDATE_FEATURES (the per-cell ones, similarity /
# in_network / alignment, are filled after the gather), then the hidden attributes the users
# respond to and their topic.
HIDDEN = ("stance", "quality", "true_arousal", "misinfo")
TABLE = CANDIDATE_FEATURES + HIDDEN + tuple(f"topic{d}" for d in range(N_TOPICS))
COL = {name: i for i, name in enumerate(TABLE)}
_TOPIC0 = COL["topic0"]


def post_table(state: State) -> np.ndarray:
    """(K * P, len(TABLE)) float32: every post's row of the table now (dead slots too: the
    candidates' validity masks them)."""
    k, p = state.k, state.p
    table = np.zeros((k, p, len(TABLE)), np.float32)
    post_features(
        TASK_FEATURES,
        out=table[..., : len(CANDIDATE_FEATURES)],
        age=(state.t[:, None] - state.created).astype(np.float32),
        likes=state.likes,
        shares=state.shares,
        author_fans=np.take_along_axis(state.fans, state.author, 1),
        arousal_score=state.arousal_score,
        reports=state.reports,
        impressions=state.impressions,
        stance=state.stance,
    )
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
    float32, with the per-cell features filled (`model.ranking.cell_features`)."""
    x = np.take(table, flat, axis=0)
    cell_features(x, x[..., _TOPIC0:], state.pop.interest[ua], in_net, np.take(state.opinion, state.users_at(ka, ua)))
    return x


def visitor_features(state: State, ka: np.ndarray, ua: np.ndarray) -> np.ndarray:
    """The user features z of pairs (ka, ua): (M, len(user_feature_names)) float32."""
    history = [state.eng_ema, state.visit_ema, state.arousal_ema]
    if state.dyn.history_affinities:
        history += [state.in_network_ema, state.recency_ema]
    at = state.users_at(ka, ua)
    return user_features(np.take(state.opinion, at), *(np.take(h, at) for h in history))
