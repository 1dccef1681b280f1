"""Synthetic populations: topic-clustered core users plus a scale-free periphery."""

from __future__ import annotations

import math

import numpy as np

from .files import oasis_daily_rhythm
from .model import IdStrings, Population, ProfileStrings
from .topics import TOPICS


def synthetic(
    n: int,
    *,
    seed: int | np.random.Generator = 0,
    core_fraction: float = 0.0002,
    n_core: int | None = None,
    topics_per_user: float = 3.0,
    max_topics_per_user: int = 8,
    topic_zipf: float = 1.0,
    core_follow_prob: float = 0.2,
    max_core_followees: float | None = 20.0,
    mean_followees: float = 10.0,
    followee_sigma: float = 1.0,
    in_degree_exponent: float = 2.3,
    homophily: float = 0.5,
    activity_median: float = 0.02,
    activity_sigma: float = 1.2,
    max_hour_shift: int = 2,
    polarized_fraction: float = 0.5,
    opinion_noise: float = 0.2,
) -> Population:
    """An OASIS-style synthetic population, fully vectorized (1M users in seconds).

    Structure (OASIS paper, large-scale user generation): a few *core* users (ids
    ``0..n_core-1``) and many ordinary users. Each ordinary user follows each core user
    that shares at least one interest with it, independently with probability
    ``min(core_follow_prob, max_core_followees / E)``, E being the mean number of
    interest-sharing core users per ordinary user (exact, from the drawn interests).
    The rest of the follow graph is scale-free: out-degrees are heavy-tailed and followees
    are ordinary users drawn in proportion to a Pareto "attractiveness" (static
    scale-free model), so ordinary in-degrees follow a power law with exponent
    ``in_degree_exponent``. No self-follows, no duplicate edges. Edge order: scale-free
    edges sorted by (follower, followee), then the core follows grouped by core user
    (a global sort would cost ~2 s at 1M users; consumers that need CSR sort anyway).

    Size: as n_core grows with n (``core_fraction``), so does E, and the unbounded rule
    (``max_core_followees=None``) makes ~n * E ~ n**2 core edges: 17.6M at 1M users, 71M
    at 2M, ~1.8B at 10M. The bound holds the mean number of core followees at
    ``max_core_followees``: ~30 edges per user at any n (20 core + ~10 scale-free), built
    in O(edges) time and memory. Where ``core_follow_prob * E <= max_core_followees`` the
    probability is ``core_follow_prob`` itself and nothing is drawn differently, so the
    population is the unbounded rule's, bit for bit: every default population up to ~1.1M
    users (at 1M: 200 core users, 17.5 core followees) and the 196-core-user populations
    of ``misinformation_1m`` (17.0 core followees, sd 0.6 over seeds).

    Parameters (defaults in brackets):
      n: number of users.
      seed [0]: int seed or numpy Generator; same seed, same arrays.
      core_fraction [0.0002]: share of core users when ``n_core`` is None (~200 per 1M
        users); at least one core user when n > 0.
      n_core [None]: explicit number of core users (overrides core_fraction).
      topics_per_user [3.0]: mean number of topic draws per user (1 + Poisson(mean-1));
        repeated draws collapse, so users hold up to that many distinct topics.
      max_topics_per_user [8]: cap on draws per user.
      topic_zipf [1.0]: topic popularity ~ 1/rank**topic_zipf over TOPICS minus "Other".
      core_follow_prob [0.2]: P(ordinary user follows a core user sharing an interest).
      max_core_followees [20.0]: upper bound on the mean number of core users an ordinary
        user follows (None: no bound, edges ~ n * n_core). 20 is what the unbounded rule
        gives at OASIS's scale of 1M users with ~200 core users (misinformation_1m: 196)
        and p = 0.2 (17.0-17.5) plus a margin of ~4.5 standard deviations over seeds, so
        no population used so far changes; with ``mean_followees`` it puts the mean
        out-degree near 30 at any n, the order of Twitter's measured mean (Kwak et al.,
        WWW 2010: 1.47B follow edges among 41.7M users, ~35 followees per user). How many
        of a user's followees are "core" accounts is assumed, not measured.
      mean_followees [10.0]: mean number of scale-free (non-core) followees per user,
        before self/duplicate removal.
      followee_sigma [1.0]: lognormal sigma of the per-user out-degree rate (heavy tail).
      in_degree_exponent [2.3]: power-law exponent gamma of the in-degree distribution
        (Kwak et al. 2010 report ~2.28 for Twitter's follower counts, with a deviation
        in the far tail; other crawls give 2-2.5); must be > 2. Core users sit above this tail: each gets
        ~n * p * (share of users holding one of its topics) followers.
      homophily [0.5]: share of scale-free follows drawn among users whose first topic
        equals the follower's first topic (interest homophily / echo chambers).
      activity_median [0.02]: median per-step activation level of a user.
      activity_sigma [1.2]: lognormal sigma of that level (heavy-tailed activity).
      max_hour_shift [2]: each user's daily rhythm is shifted by a uniform integer number
        of hours in [-max_hour_shift, max_hour_shift] (time-zone / habit spread).
      polarized_fraction [0.5]: share of users with a polarized opinion
        (sign * Beta(5, 2)); the rest are centrist, Normal(0, opinion_noise).
      opinion_noise [0.2]: std of centrist opinions.

    Activity = clip(rhythm(hour - shift) * level, 0, 1), where rhythm is
    :func:`oasis_daily_rhythm` (real OASIS users' hourly counts, max 1).
    """
    _check_synthetic_args(
        n,
        core_fraction,
        n_core,
        topics_per_user,
        max_topics_per_user,
        core_follow_prob,
        max_core_followees,
        mean_followees,
        in_degree_exponent,
        homophily,
        activity_median,
        polarized_fraction,
    )
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if n_core is None:
        n_core = max(1, int(round(core_fraction * n))) if n > 0 else 0
    n_core = min(int(n_core), n)
    interests, primary = _synthetic_interests(rng, n, topics_per_user, max_topics_per_user, topic_zipf)
    p_core = _bounded_core_prob(interests, n_core, core_follow_prob, max_core_followees)
    core_chunks = _core_follows(rng, interests, n_core, p_core)
    sf_key = _scale_free_follows(rng, n, n_core, primary, mean_followees, followee_sigma, in_degree_exponent, homophily)
    src, dst = _assemble_edges(n, sf_key, core_chunks)
    del core_chunks, sf_key
    activity = _synthetic_activity(rng, n, activity_median, activity_sigma, max_hour_shift)
    opinion = _synthetic_opinions(rng, n, polarized_fraction, opinion_noise)
    is_core = np.zeros(n, dtype=bool)
    is_core[:n_core] = True
    seed_repr = seed if isinstance(seed, int) else "Generator"
    return Population(
        n=n,
        user_name=IdStrings("user{i}", n),
        name=IdStrings("User {i}", n),
        bio=ProfileStrings("bio", interests, opinion, is_core),
        persona=ProfileStrings("persona", interests, opinion, is_core),
        activity=activity,
        follow_src=src,
        follow_dst=dst,
        previous_posts=[],
        opinion=opinion,
        interests=interests,
        is_core=is_core,
        extra=None,
        source=f"synthetic(n={n}, seed={seed_repr}, n_core={n_core})",
    )


def _check_synthetic_args(
    n: int,
    core_fraction: float,
    n_core: int | None,
    topics_per_user: float,
    max_topics: int,
    p_core: float,
    max_core_followees: float | None,
    mean_followees: float,
    gamma: float,
    homophily: float,
    activity_median: float,
    polarized: float,
) -> None:
    checks = [
        (isinstance(n, (int, np.integer)) and n >= 0, f"n must be an int >= 0, got {n!r}"),
        (0 <= core_fraction <= 1, "core_fraction must be in [0, 1]"),
        (n_core is None or n_core >= 0, "n_core must be >= 0"),
        (topics_per_user >= 1, "topics_per_user must be >= 1"),
        (1 <= max_topics <= 64, "max_topics_per_user must be in [1, 64]"),
        (0 <= p_core <= 1, "core_follow_prob must be in [0, 1]"),
        (max_core_followees is None or max_core_followees >= 0, "max_core_followees must be >= 0 or None"),
        (mean_followees >= 0, "mean_followees must be >= 0"),
        (gamma > 2, "in_degree_exponent must be > 2 (finite mean in-degree)"),
        (0 <= homophily <= 1, "homophily must be in [0, 1]"),
        (0 <= activity_median <= 1, "activity_median must be in [0, 1]"),
        (0 <= polarized <= 1, "polarized_fraction must be in [0, 1]"),
    ]
    for ok, msg in checks:
        if not ok:
            raise ValueError(msg)


def _synthetic_interests(
    rng: np.random.Generator, n: int, mean_topics: float, max_topics: int, zipf: float
) -> tuple[np.ndarray, np.ndarray]:
    """(interests bitmask, first-drawn topic) per user; topic popularity is Zipf-like."""
    if n == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    n_topics = len(TOPICS) - 1  # "Other" is for unmapped names, not drawn
    pop = 1.0 / np.arange(1, n_topics + 1) ** zipf
    k = np.minimum(1 + rng.poisson(mean_topics - 1, size=n), max_topics)
    starts = np.concatenate(([0], np.cumsum(k)[:-1]))
    draws = rng.choice(n_topics, size=int(k.sum()), p=pop / pop.sum())
    bits = np.left_shift(np.uint64(1), draws.astype(np.uint64))
    return np.bitwise_or.reduceat(bits, starts), draws[starts].astype(np.int64)


def _bounded_core_prob(interests: np.ndarray, n_core: int, p: float, cap: float | None) -> float:
    """``p``, or ``cap / E`` where ``p * E > cap`` (E: mean number of interest-sharing core
    users per ordinary user). Draws nothing, so an unbound ``p`` leaves the stream as it was."""
    n = interests.shape[0]
    if cap is None or p == 0 or n_core == 0 or n == n_core:
        return p
    eligible = _mean_eligible_core(interests, n_core)
    return p if p * eligible <= cap else cap / eligible


def _mean_eligible_core(interests: np.ndarray, n_core: int) -> float:
    """Mean over ordinary users of the number of core users sharing an interest with them.

    Exact, in O(n log n + distinct core masks * distinct ordinary masks): users are grouped
    by interest mask (~1e5 distinct masks at 1M users), never paired one by one.
    """
    n = interests.shape[0]
    if n <= n_core:
        return 0.0
    masks, counts = np.unique(interests[n_core:], return_counts=True)
    core_masks, mult = np.unique(interests[:n_core], return_counts=True)
    pairs = 0
    for m, k in zip(core_masks.tolist(), mult.tolist()):
        pairs += k * int(counts[(masks & np.uint64(m)) != 0].sum())
    return pairs / (n - n_core)


def _core_follows(
    rng: np.random.Generator, interests: np.ndarray, n_core: int, p: float
) -> list[tuple[int, np.ndarray]]:
    """Ordinary users follow each interest-sharing core user with probability p.

    Returns (core id, follower ids) chunks. Cost is proportional to the edges made, not
    n * n_core: for core user c and each of its topics t, Bernoulli(p) positions in the
    list of ordinary users holding t are drawn by geometric skips, and a candidate is
    kept only at its lowest topic shared with c, so every sharing user is tried once.
    Follower ids are int32 to halve the memory of the largest edge block.
    """
    n = interests.shape[0]
    chunks: list[tuple[int, np.ndarray]] = []
    if n_core == 0 or p == 0 or n == n_core:
        return chunks
    ordinary = interests[n_core:]
    by_topic: dict[int, np.ndarray] = {}
    for c in range(n_core):
        mc = int(interests[c])
        for t in (i for i in range(64) if mc >> i & 1):
            if t not in by_topic:
                by_topic[t] = (np.flatnonzero(ordinary & np.uint64(1 << t)) + n_core).astype(np.int32)
            cand = by_topic[t][_bernoulli_positions(rng, by_topic[t].size, p)]
            lower = np.uint64(mc & ((1 << t) - 1))
            if lower:
                cand = cand[(interests[cand] & lower) == 0]
            chunks.append((c, cand))
    return chunks


def _bernoulli_positions(rng: np.random.Generator, size: int, p: float) -> np.ndarray:
    """Sorted positions in [0, size) each included independently with probability p."""
    if size == 0 or p <= 0:
        return np.zeros(0, dtype=np.int64)
    if p >= 1:
        return np.arange(size, dtype=np.int64)
    chunks, last = [], -1
    while True:
        m = int(size * p + 5 * math.sqrt(size * p) + 16)
        pos = last + np.cumsum(rng.geometric(p, size=m))
        chunks.append(pos[pos < size])
        if pos[-1] >= size:
            return np.concatenate(chunks)
        last = int(pos[-1])


def _scale_free_follows(
    rng: np.random.Generator,
    n: int,
    n_core: int,
    primary: np.ndarray,
    mean_out: float,
    sigma: float,
    gamma: float,
    homophily: float,
) -> np.ndarray:
    """Packed keys src*n + dst of the scale-free follows, unique, sorted, no self-loops.

    Out-degrees are Poisson(lognormal rate) (heavy-tailed); followees are ordinary users
    drawn in proportion to Pareto weights (static scale-free model). Weighted sampling
    uses an urn (each ordinary user repeated ~weight times with stochastic rounding, ~4n
    entries) ordered by primary topic, so a draw is one random index into a small int32
    array and a homophilous draw one index into the follower's topic segment. Core users
    get their followers from the interest rule only, so the two edge sets never overlap.
    """
    if n - n_core < 1 or mean_out == 0:
        return np.zeros(0, np.int64)
    rate = mean_out * rng.lognormal(-sigma * sigma / 2, sigma, size=n)
    out_deg = np.minimum(rng.poisson(rate), n - 1)
    weight = rng.pareto(gamma - 1, size=n) + 1.0  # P(w > x) ~ x^-(gamma-1)
    weight[:n_core] = 0.0
    scaled = weight * (4.0 * n / weight.sum())
    copies = np.floor(scaled).astype(np.int64)
    copies += rng.random(n) < (scaled - copies)
    order = np.argsort(primary, kind="stable")
    urn = np.repeat(order.astype(np.int32), copies[order])
    if urn.size == 0:
        return np.zeros(0, np.int64)
    seg_len = np.bincount(primary, weights=copies, minlength=64).astype(np.int64)
    seg_start = np.concatenate(([0], np.cumsum(seg_len)[:-1]))
    src = np.repeat(np.arange(n, dtype=np.int32), out_deg)
    g = primary[src]
    local = (rng.random(src.size) < homophily) & (seg_len[g] > 0)
    lo = np.where(local, seg_start[g], 0)
    hi = np.where(local, seg_start[g] + seg_len[g], urn.size)
    del g, local
    key = urn[rng.integers(lo, hi)].astype(np.int64)
    del lo, hi
    keep = key != src
    key += src.astype(np.int64) * np.int64(n)
    key = key[keep]
    del src, keep
    key.sort(kind="stable")  # ~4x faster than the default on these nearly-sorted keys
    if key.size:
        fresh = np.empty(key.size, dtype=bool)
        fresh[0] = True
        np.not_equal(key[1:], key[:-1], out=fresh[1:])
        key = key[fresh]
    return key


def _assemble_edges(
    n: int, sf_key: np.ndarray, core_chunks: list[tuple[int, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """int64 (src, dst): scale-free edges sorted by (src, dst), then core follows by core."""
    total = sf_key.size + sum(ch.size for _, ch in core_chunks)
    src = np.empty(total, dtype=np.int64)
    dst = np.empty(total, dtype=np.int64)
    m = sf_key.size
    bounds = np.searchsorted(sf_key, np.arange(n + 1, dtype=np.int64) * n)
    src[:m] = np.repeat(np.arange(n, dtype=np.int64), np.diff(bounds))
    np.subtract(sf_key, src[:m] * np.int64(n), out=dst[:m])
    at = m
    for c, chunk in core_chunks:
        src[at : at + chunk.size] = chunk
        dst[at : at + chunk.size] = c
        at += chunk.size
    return src, dst


def _synthetic_activity(rng: np.random.Generator, n: int, median: float, sigma: float, max_shift: int) -> np.ndarray:
    """(n, 24) float32: shifted real daily rhythm times a lognormal per-user level."""
    rhythm = oasis_daily_rhythm()
    shifts = np.arange(-max_shift, max_shift + 1)
    table = np.stack([np.roll(rhythm, s) for s in shifts]).astype(np.float32)
    act = table[rng.integers(0, shifts.size, size=n)]
    level = (median * rng.lognormal(0.0, sigma, size=n)).astype(np.float32)
    act *= level[:, None]
    np.clip(act, 0.0, 1.0, out=act)
    return act


def _synthetic_opinions(rng: np.random.Generator, n: int, polarized: float, noise: float) -> np.ndarray:
    """Bimodal mixture: polarized users at sign*Beta(5,2), centrists at Normal(0, noise)."""
    is_pol = rng.random(n) < polarized
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    op = np.where(is_pol, sign * rng.beta(5.0, 2.0, size=n), rng.normal(0.0, noise, size=n))
    return np.clip(op, -1.0, 1.0).astype(np.float32)
