"""Behaviour of the ABM users: one action per user per step (post, engage with a feed slot, or
nothing), with agreement-, popularity- and fame-driven rates, vectorized over blocks of users."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oasis_gym.actions import NUM_ACTIONS, ActionType
from oasis_gym.blas import matmul
from oasis_gym.model.opinion_kernels import as_opinions, take_rows

__all__ = ["BehaviourParams", "ENGAGE_ACTIONS", "choose_actions"]

# Feed-engagement actions in the fixed order used for sampling (after CREATE_POST).
ENGAGE_ACTIONS: tuple[ActionType, ...] = (
    ActionType.LIKE_POST,
    ActionType.DISLIKE_POST,
    ActionType.REPOST,
    ActionType.QUOTE_POST,
    ActionType.CREATE_COMMENT,
    ActionType.FOLLOW,
)
_TEXT_OUT = (ActionType.CREATE_POST, ActionType.QUOTE_POST, ActionType.CREATE_COMMENT)


@dataclass(frozen=True)
class BehaviourParams:
    """Per-exposure engagement rates of the ABM user, and what drives them.

    The rate of action a on feed slot k is
        rate_a * pref_a(agree) * (1 + popularity_weight * log1p(likes))
               * (1 + fame_weight_a * log1p(author followers)) * [unknown_stance_weight]
    with agree = 1 - |x - s| / 2 in [0, 1] and pref = agree^agreement_power for like, repost,
    quote, follow; (1 - agree)^p for dislike; max(agree, 1 - agree)^p for comment (people
    comment on what they feel strongly about, either way). Follow ignores post popularity and
    uses follow_fame_weight. With small rates, rate ~ P(this action on this slot this step).
    Defaults give a user with a 10-post feed of agreeing, little-liked posts about a 50 %
    chance of some engagement per step; post_rate is supplied per user by the caller.
    """

    like_rate: float = 0.03
    dislike_rate: float = 0.01
    repost_rate: float = 0.008
    quote_rate: float = 0.002
    comment_rate: float = 0.008
    follow_rate: float = 0.004
    agreement_power: float = 2.0
    popularity_weight: float = 0.15
    fame_weight: float = 0.05
    follow_fame_weight: float = 0.25
    unknown_stance_weight: float = 0.5  # NaN stance: agreement computed against 0, weight x0.5
    stance_noise: float = 0.1  # sd of the noise on the stance of written texts

    def rate_of(self, action: ActionType) -> float:
        """The base rate of a feed-engagement action."""
        return {
            ActionType.LIKE_POST: self.like_rate,
            ActionType.DISLIKE_POST: self.dislike_rate,
            ActionType.REPOST: self.repost_rate,
            ActionType.QUOTE_POST: self.quote_rate,
            ActionType.CREATE_COMMENT: self.comment_rate,
            ActionType.FOLLOW: self.follow_rate,
        }[action]


CHOICE_BLOCK_ROWS = 16_384  # choose_actions works on blocks of users (cache-resident temporaries)


def _opt_mask(a, shape) -> np.ndarray | None:
    if a is None:
        return None
    a = np.asarray(a, dtype=bool)
    if a.shape != shape:
        raise ValueError(f"mask must have shape {shape}, got {a.shape}")
    return a


def _log_boost(counts: np.ndarray, weight: float) -> np.ndarray:
    """1 + weight * log1p(max(counts, 0)) as float32."""
    v = counts.astype(np.float32)
    np.maximum(v, 0, out=v)
    np.log1p(v, out=v)
    v *= np.float32(weight)
    v += np.float32(1)
    return v


def _pow_inplace(a: np.ndarray, p: float) -> np.ndarray:
    return np.square(a, out=a) if p == 2.0 else np.power(a, np.float32(p), out=a)


def _engagement_weights(
    params: BehaviourParams, x, stance, fmask, likes, followers, liked, followed, disliked, reposted, own
) -> dict:
    """Per-action (b, K) float32 rates of one block of users, zero where the action is impossible.

    Written with in-place ufuncs and multiplications by boolean masks: numpy's boolean
    indexing and masked ``where=`` paths are several times slower on these small blocks.
    """
    f32 = np.float32
    agree = stance.astype(f32)  # a copy: worked on in place
    unknown = np.isnan(agree)
    np.fmax(agree, f32(-1), out=agree)  # clip to [-1, 1]; fmax maps NaN to -1 ...
    np.fmin(agree, f32(1), out=agree)
    agree *= ~unknown  # ... and this to 0: unknown read as neutral
    agree -= np.clip(x, -1.0, 1.0).astype(f32)[:, None]
    np.abs(agree, out=agree)
    agree *= f32(-0.5)
    agree += f32(1)  # 1 - |x - s| / 2, in [0, 1]
    disagree = f32(1) - agree
    p = float(params.agreement_power)
    pref_com = _pow_inplace(np.maximum(agree, disagree), p)
    _pow_inplace(disagree, p)
    _pow_inplace(agree, p)
    base = unknown * f32(params.unknown_stance_weight - 1.0)
    base += f32(1)
    base *= fmask
    fame = followers.astype(f32)
    np.maximum(fame, 0, out=fame)
    np.log1p(fame, out=fame)
    follow_base = fame * f32(params.follow_fame_weight)
    follow_base += f32(1)
    follow_base *= base
    fame *= f32(params.fame_weight)
    fame += f32(1)
    post_base = _log_boost(likes, params.popularity_weight)
    post_base *= fame
    post_base *= base

    def keep(w: np.ndarray, *excluded) -> np.ndarray:
        for m in excluded:
            if m is not None:
                w *= ~m
        return w

    pos = agree * post_base
    return {
        ActionType.LIKE_POST: keep(pos.copy(), liked, disliked, own),
        ActionType.DISLIKE_POST: keep(np.multiply(disagree, post_base, out=disagree), liked, disliked, own),
        ActionType.REPOST: keep(pos.copy(), reposted, own),
        ActionType.QUOTE_POST: keep(pos, own),
        ActionType.CREATE_COMMENT: np.multiply(pref_com, post_base, out=pref_com),
        ActionType.FOLLOW: keep(np.multiply(agree, follow_base, out=agree), followed, own),
    }


def _sample_slots(w: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One slot per row, with probability proportional to w (rows have a positive sum)."""
    c = np.cumsum(w, axis=1, dtype=np.float64)
    target = u * c[:, -1]
    slot = (c <= target[:, None]).sum(axis=1)
    last_pos = w.shape[1] - 1 - np.argmax(w[:, ::-1] > 0, axis=1)  # guard rounding at u ~ 1
    return np.minimum(slot, last_pos)


_PICK_CODES = np.array([ActionType.CREATE_POST, *ENGAGE_ACTIONS, ActionType.DO_NOTHING], dtype=np.int8)


def _choose_block(
    params: BehaviourParams, allowed: np.ndarray, p_post: np.ndarray, u_act, u_slot, *feed
) -> tuple[np.ndarray, np.ndarray]:
    """choose_actions on one block of users with pre-drawn uniforms; returns (action, slot)."""
    w = _engagement_weights(params, *feed)
    b, k = feed[2].shape
    ones = np.ones(k, dtype=np.float32)
    totals = [matmul(w[a], ones).astype(np.float64) * (params.rate_of(a) * allowed[..., a]) for a in ENGAGE_ACTIONS]
    scale = (1.0 - p_post) / np.maximum(1.0, np.sum(totals, axis=0))
    bound = p_post.copy()  # cumulative category bounds
    pick = (bound <= u_act).astype(np.int64)  # 0 create_post, 1.. engage, last nothing
    for t in totals:
        bound += t * scale
        pick += bound <= u_act
    action = _PICK_CODES[pick]
    slot = np.full(b, -1, dtype=np.int64)
    for a in ENGAGE_ACTIONS:
        rows = np.flatnonzero(action == a)
        if rows.size:
            slot[rows] = _sample_slots(w[a][rows], u_slot[rows])
    return action, slot


def choose_actions(
    rng: np.random.Generator,
    params: BehaviourParams,
    opinion,
    feed_stance,
    feed_mask,
    feed_likes,
    feed_author_followers,
    post_rate,
    allowed,
    already_liked,
    already_followed_author,
    *,
    already_disliked=None,
    already_reposted=None,
    own_post=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One action per user: create a post, engage with one feed slot, or do nothing.

    P(create_post) = post_rate (if allowed). Otherwise each engagement action a has total
    weight S_a = sum_k rate_a[k] (see BehaviourParams), and with S = sum_a S_a,
    P(a) = (1 - post_rate) * S_a / max(1, S); the rest is do_nothing. Given a, the target slot
    is drawn with probability proportional to rate_a[k] (inverse CDF of one uniform). Never
    chosen: masked slots, actions not in ``allowed`` ((NUM_ACTIONS,) or per-user
    (n, NUM_ACTIONS) bool), liking an already-liked post, following an already-followed
    author; the optional masks also exclude disliking a liked/disliked post, reposting a
    reposted post and targeting one's own post (commenting on it stays possible). do_nothing
    is the fallback even when it is not in ``allowed``. Opinions and stances are assumed in
    [-1, 1]; counts (likes, followers) below 0 count as 0.

    Returns (action (n,) int8 ActionType codes, slot (n,) int64 or -1, stance (n,) float32:
    opinion + N(0, stance_noise) clipped to [-1, 1] for create_post / quote_post /
    create_comment, NaN otherwise). Randomness: exactly three (n,) draws from ``rng``
    (action uniform, slot uniform, stance normal), so results depend only on the seed.
    """
    opinion = as_opinions(opinion)
    n = opinion.shape[0]
    feed_mask = np.asarray(feed_mask, dtype=bool)
    if feed_mask.ndim != 2 or feed_mask.shape[0] != n:
        raise ValueError(f"feed_mask must be (n, K) with n={n}, got {feed_mask.shape}")
    shape = feed_mask.shape
    feed = [
        opinion,
        np.asarray(feed_stance),
        feed_mask,
        np.asarray(feed_likes),
        np.asarray(feed_author_followers),
        np.asarray(already_liked, dtype=bool),
        np.asarray(already_followed_author, dtype=bool),
        _opt_mask(already_disliked, shape),
        _opt_mask(already_reposted, shape),
        _opt_mask(own_post, shape),
    ]
    names = (
        "feed_stance",
        "feed_mask",
        "feed_likes",
        "feed_author_followers",
        "already_liked",
        "already_followed_author",
    )
    for name, a in zip(names, feed[1:7]):
        if a.shape != shape:
            raise ValueError(f"{name} must have shape {shape}, got {a.shape}")
    allowed = np.asarray(allowed, dtype=bool)
    if allowed.shape not in ((NUM_ACTIONS,), (n, NUM_ACTIONS)):
        raise ValueError(f"allowed must be ({NUM_ACTIONS},) or ({n}, {NUM_ACTIONS}), got {allowed.shape}")
    p_post = np.broadcast_to(np.clip(np.asarray(post_rate, dtype=np.float64), 0.0, 1.0), (n,))
    p_post = p_post * allowed[..., ActionType.CREATE_POST]
    u_act, u_slot = rng.random(n), rng.random(n)
    noise = rng.standard_normal(n)

    action = np.empty(n, dtype=np.int8)
    slot = np.empty(n, dtype=np.int64)
    for start in range(0, n, CHOICE_BLOCK_ROWS):
        sl = slice(start, min(n, start + CHOICE_BLOCK_ROWS))
        allowed_b = allowed[sl] if allowed.ndim == 2 else allowed
        action[sl], slot[sl] = _choose_block(
            params, allowed_b, p_post[sl], u_act[sl], u_slot[sl], *(take_rows(a, sl) for a in feed)
        )
    is_text = np.isin(action, np.array(_TEXT_OUT, dtype=np.int8))
    stance = np.where(is_text, np.clip(opinion + params.stance_noise * noise, -1.0, 1.0), np.nan)
    return action, slot, stance.astype(np.float32)
