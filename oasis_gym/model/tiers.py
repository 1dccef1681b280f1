"""The tiers of the benchmark tasks: the constants of the model's dynamics, one set per difficulty.

The home of `Dynamics` and the tier tables (issue 51): every model function that depends on a
tier takes a `Dynamics`; the fast path (`oasis_gym.batched`: `Engine`, the batched tasks) and
the drivers that tune or train on it (`train/v1.py`, `train/tuned_baselines.py`, ...) pick a
tier with `tier(difficulty, version)`.

Every constant is chosen a priori from the mechanism it stands for (documented beside it),
never tuned on evaluation episodes. `easy` is the sanity tier: one kind of user, no
retention dynamics, harm independent of engagement, so a well-chosen constant ranking is
close to optimal. `medium` adds what makes the recommender's problem sequential: users
whose satisfaction follows what they are shown and who leave and come back (churn and
return), outrage that draws engagement and carries misinformation, misinformation
campaigns that come and go, three kinds of user. `hard` adds lasting opinion change,
a noisier arousal classifier and longer campaigns; for the moderator it adds adversaries
whose public signals mimic true posts, brigades that move, and costly false positives.

`TIERS_V2` are Recommender-v2's tiers: v1's, plus kinds that want different feeds
(`engage_in_network`, `engage_recency`), the ranking service's affinity summaries
(`history_affinities`) and campaign bots (`campaign_visits`). v1's fields keep their
meaning and v1's tiers their values: a v1 result never changes (tests/test_recommender_v2.py).
`TIERS_V3` are Recommender-v3's: v2's, plus campaigns whose bots inflate the popularity of
the campaign's posts (`campaign_amplify`), post more and run longer, so the best ranking
during a campaign differs from the best between campaigns (tests/test_recommender_v3.py).
`TIERS_V4` (Recommender-v4) and `MODERATOR_TIERS[2]` (Moderator-v2) are v3's and Moderator-v1's
under OASIS's rules (`oasis_rules`: a user likes, reposts and reports a post at most once, each
campaign bot likes a post once, a fact-check's verdict is a fact about the post); the task a
tier belongs to picks its table (`tier(difficulty, version, task)`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

DIFFICULTIES = ("easy", "medium", "hard")


@dataclass(frozen=True)
class Dynamics:
    """Constants of one tier (see the module docstring; `oasis_gym/batched/engine.py` is the order of calls)."""

    # users: kinds (shares of casual / outrage-prone / news-seeking users)
    kind_shares: tuple[float, float, float] = (1.0, 0.0, 0.0)
    # engagement logit = base + sim * similarity + quality[kind] * q + arousal[kind] * r
    #                    + align * alignment - position * rank
    engage_base: float = -2.2
    engage_similarity: float = 1.2
    engage_quality: tuple[float, float, float] = (1.2, 0.4, 2.2)
    engage_arousal: tuple[float, float, float] = (0.8, 2.6, -1.2)
    engage_alignment: float = 0.8
    engage_position: float = 0.08
    # v2: + in_network[kind] * in_network + recency[kind] * recency (kinds that want
    # different feeds: friends' posts, fresh news)
    engage_in_network: tuple[float, float, float] = (0.0, 0.0, 0.0)
    engage_recency: tuple[float, float, float] = (0.0, 0.0, 0.0)
    share_given_engage: float = 0.25
    # satisfaction s in [0, 1]: s <- (1 - rate) s + rate * sigmoid(4 * session value + 0.5),
    # session value = mean over the feed of quality_gain (q - 0.5) + engaged_gain * engaged
    # - arousal_cost[kind] * r - misinfo_cost * m (hate-scrolling engages and sours)
    satisfaction_rate: float = 0.0
    quality_gain: float = 1.0
    engaged_gain: float = 0.5
    arousal_cost: tuple[float, float, float] = (0.6, 0.9, 1.6)
    misinfo_cost: float = 0.5
    # activation: p = activity * (0.4 + 1.2 s); churn: an active user with s < churn_below
    # leaves with churn_prob; a churned user returns with return_prob a step (s reset to 0.5)
    churn_below: float = 0.3
    churn_prob: float = 0.0
    return_prob: float = 0.02
    # posts: misinformation probability = author base + arousal_link * max(r - 0.5, 0)
    misinfo_base: float = 0.03
    misinfo_account_base: float = 0.85
    misinfo_arousal_link: float = 0.0
    arousal_score_noise: float = 0.1  # sd of the arousal classifier's error
    # campaigns: a hidden regime per simulation in which misinformation accounts post
    # campaign_boost times more; on with campaign_on, off with campaign_off a step
    campaign_on: float = 0.0
    campaign_off: float = 0.2
    campaign_boost: float = 4.0
    campaign_visits: bool = False  # v2: misinformation accounts visit every step of a campaign (bots)
    # v3: coordinated inauthentic amplification: while a campaign runs, every live post of a
    # misinformation account gains campaign_amplify likes and twice as many views per
    # unsuspended bot a step (popularity lies; the like rate stays plausible)
    campaign_amplify: float = 0.0
    # v2: the ranking service also keeps per-user engagement contrasts (the ranking's AFFINITY_FEATURES)
    history_affinities: bool = False
    # opinions: bounded-confidence pull towards engaged stances within confidence, and an
    # outward push of aroused engagement (lasting: nothing pulls opinions back)
    opinion_pull: float = 0.0
    opinion_confidence: float = 0.5
    opinion_arousal_push: float = 0.0
    # moderator side: brigades (users reporting targeted true authors' posts), how often the
    # targets move, suspended misinformation accounts returning as new accounts after
    # return_delay steps, mimicry (misinformation arousal drawn like true posts'),
    # false-positive effects (a wrongly moderated author posts less and is less satisfied)
    brigaders: int = 0
    brigade_targets: int = 3
    brigade_move_every: int = 0  # 0: targets fixed for the episode
    brigade_report_prob: float = 0.5
    account_return_delay: int = 0  # 0: suspended accounts never return
    mimicry: float = 0.0  # 0: misinformation arousal as in its own distribution, 1: as true posts'
    chill_factor: float = 1.0  # post-rate multiplier of a wrongly moderated author
    chill_satisfaction: float = 0.0
    fact_check_budget: int = 4
    fact_check_accuracy: float = 0.95
    misinfo_report_prob: float = 0.08  # per impression, times disagreement (+ 0.5)
    true_report_prob: float = 0.01
    # OASIS's rules (Recommender-v4, Moderator-v2; issue 51 finding 1): a user engages with (likes
    # or reposts) a post at most once and reports it at most once per episode, each campaign bot
    # likes each campaign post once (campaign_amplify is then the bots per misinformation
    # account), and a fact-check's draw depends on the episode and the post only (a re-check
    # gives the same verdict); the moderator sees the verdict with the model's sign
    oasis_rules: bool = False
    extra: dict = field(default_factory=dict)


EASY = Dynamics()
MEDIUM = replace(
    EASY,
    kind_shares=(0.5, 0.3, 0.2),
    satisfaction_rate=0.3,
    churn_prob=0.15,
    misinfo_arousal_link=0.5,
    campaign_on=0.05,
    brigaders=20,
    account_return_delay=4,
    chill_factor=0.5,
    chill_satisfaction=0.3,
    fact_check_budget=2,
)
HARD = replace(
    MEDIUM,
    arousal_score_noise=0.25,
    campaign_off=0.1,
    opinion_pull=0.05,
    opinion_arousal_push=0.03,
    brigaders=40,
    brigade_move_every=10,
    account_return_delay=2,
    mimicry=0.8,
    misinfo_report_prob=0.04,
    true_report_prob=0.02,
    fact_check_budget=1,
    fact_check_accuracy=0.9,
)
TIERS = {"easy": EASY, "medium": MEDIUM, "hard": HARD}
# Recommender-v2: kinds that want different feeds (casual users engage with their friends'
# posts, news-seekers with fresh ones), the service's per-user engagement contrasts, and
# campaign bots that are always on while a campaign runs
_V2 = dict(engage_in_network=(1.5, 0.0, -0.8), engage_recency=(0.0, 0.0, 2.0), campaign_visits=True,
           history_affinities=True)  # fmt: skip
TIERS_V2 = {"easy": replace(EASY, **_V2, kind_shares=(0.5, 0.0, 0.5)), "medium": replace(MEDIUM, **_V2),
            "hard": replace(HARD, **_V2)}  # fmt: skip
# Recommender-v3: v2 plus campaigns that lie about popularity. While a campaign runs (about
# 40 % of the time, about 20 steps each), bots post twelve times as often and like and view
# every post of the campaign accounts: popularity, a good signal between campaigns, points
# at misinformation during them. The easy tier (no campaigns) is v2's.
_V3 = dict(campaign_amplify=1.0, campaign_boost=12.0, campaign_on=0.03, campaign_off=0.05)
TIERS_V3 = {"easy": TIERS_V2["easy"], "medium": replace(TIERS_V2["medium"], **_V3),
            "hard": replace(TIERS_V2["hard"], **_V3)}  # fmt: skip
# Recommender-v4: v3 under OASIS's rules. A bot likes a campaign post once, so v3's lie (one like
# per bot every step of the campaign) needs more bot accounts to say as much: V4_BOTS per
# misinformation account, measured by bench/research/campaign_signal.py on the tuning seeds (envs/recommender_v4.py)
V4_BOTS = 4.0
TIERS_V4 = {d: replace(t, oasis_rules=True, campaign_amplify=V4_BOTS if t.campaign_amplify > 0 else 0.0)
            for d, t in TIERS_V3.items()}  # fmt: skip
TIERS_BY_VERSION = {1: TIERS, 2: TIERS_V2, 3: TIERS_V3, 4: TIERS_V4}
# the moderator task's versions: Moderator-v1 plays v1's tiers, Moderator-v2 them under OASIS's rules
MODERATOR_TIERS = {1: TIERS, 2: {d: replace(t, oasis_rules=True) for d, t in TIERS.items()}}
TASK_TIERS = {"recommender": TIERS_BY_VERSION, "moderator": MODERATOR_TIERS}


def tier(difficulty: str, version: int = 1, task: str = "recommender") -> Dynamics:
    """The dynamics of a difficulty tier of a task's version (one line on a bad name)."""
    tables = TASK_TIERS[task]
    if version not in tables:
        raise ValueError(f"version must be one of {list(tables)}, got {version!r}")
    if difficulty not in tables[version]:
        raise ValueError(f"difficulty must be one of {list(DIFFICULTIES)}, got {difficulty!r}")
    return tables[version][difficulty]
