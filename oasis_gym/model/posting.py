"""Posting: who posts and what a new post is, one home for both paths (issue 51).

A visitor posts with their posting rate (times `chill` if wrongly moderated before); a
misinformation account posts `campaign_boost` times as often while its simulation's campaign
is on (`posts_made`). A post's topic, stance, quality and arousal are drawn around its
author's; misinformation accounts post extreme, low-quality, high-arousal misinformation
(with mimicry, arousal drawn like true posts': `adversaries.mimicked_arousal`), and any post
is misinformation with probability `misinfo_base + misinfo_arousal_link * max(r - 0.5, 0)`
(`misinfo_probability`: outrage and harm go together). The arousal classifier's score is
the arousal plus noise (`post_attributes`).

Callers: the fast path (`oasis_gym.batched.posting.post`, which puts the posts into its
ring). The platform's news stream (`oasis_gym.scenarios.misinfo_stream`) is another model of
who posts (source accounts with labels fixed by the stream), kept as that scenario's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import rng
from .adversaries import mimicked_arousal

# the draws of a post, all from its one hash: normals 0 .. T-1 move its topic, then these
_STANCE, _QUALITY, _AROUSAL, _MISINFO_AROUSAL, _MISINFO, _SCORE = 10, 11, 12, 13, 14, 15  # _MISINFO: a uniform
_NORMALS = (_STANCE, _QUALITY, _AROUSAL, _MISINFO_AROUSAL, _SCORE)


def posts_made(
    u: np.ndarray, post_rate: np.ndarray, chill: np.ndarray, boosted: np.ndarray, boost: float
) -> np.ndarray:
    """Which visitors (M,) post this step: uniform `u` below their `post_rate` times `chill`,
    times `boost` where `boosted` (a misinformation account while its campaign runs)."""
    rate = post_rate * chill
    rate = np.where(boosted, rate * boost, rate)
    return u < rate


def misinfo_probability(arousal: np.ndarray, misinfo_account: np.ndarray, dyn: Any) -> np.ndarray:
    """P(a post is misinformation) (M,): `misinfo_account_base` for a misinformation account's,
    else `misinfo_base + misinfo_arousal_link * max(arousal - 0.5, 0)` (the tier's `Dynamics`)."""
    return np.where(
        misinfo_account,
        dyn.misinfo_account_base,
        dyn.misinfo_base + dyn.misinfo_arousal_link * np.maximum(arousal - 0.5, 0),
    )


def post_attributes(
    h: np.ndarray, interest: np.ndarray, opinion: np.ndarray, quality: np.ndarray, arousal: np.ndarray,
    misinfo_account: np.ndarray, dyn: Any,
) -> dict[str, np.ndarray]:  # fmt: skip
    """The attributes of M new posts, drawn from one hash `h` (M,) uint64 each (`rng.hash64`
    of the caller's key, step and author) around their authors' `interest` (M, T), `opinion`,
    `quality` and `arousal` (M,); `misinfo_account` (M,) bool; `dyn` the tier's `Dynamics`.

    Returns (M,) arrays `stance` (in [-1, 1]), `quality`, `arousal`, `arousal_score` (the
    classifier's reading), `misinfo` (bool) and `topic` (M, T) (unit rows).
    """

    t = interest.shape[1]
    normals = rng.normal(np.asarray(h)[:, None], np.r_[np.arange(t), _NORMALS])  # every draw at once: (M, t + 5)
    column = {j: normals[:, t + i] for i, j in enumerate(_NORMALS)}

    def noise(j: int) -> np.ndarray:
        return column[j]

    topic = interest + 0.3 * normals[:, :t]
    topic /= np.maximum(np.linalg.norm(topic, axis=1, keepdims=True), 1e-6)
    stance = np.where(misinfo_account, 0.9 * np.where(opinion >= 0, 1.0, -1.0), opinion + 0.2 * noise(_STANCE))
    quality = np.clip(quality + 0.15 * noise(_QUALITY), 0, 1)
    true_arousal = np.clip(arousal + 0.15 * noise(_AROUSAL), 0, 1)
    own_arousal = np.clip(0.8 + 0.1 * noise(_MISINFO_AROUSAL), 0, 1)
    arousal = np.where(misinfo_account, mimicked_arousal(true_arousal, own_arousal, dyn.mimicry), true_arousal)
    misinfo = rng.uniform(h, _MISINFO) < misinfo_probability(arousal, misinfo_account, dyn)
    return {
        "stance": np.clip(stance, -1, 1),
        "quality": np.where(misinfo, 0.4 * quality, quality),
        "arousal": arousal,
        "arousal_score": np.clip(arousal + dyn.arousal_score_noise * noise(_SCORE), 0, 1),
        "misinfo": misinfo,
        "topic": topic,
    }
