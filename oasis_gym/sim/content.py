"""Content generation and reading: stance-matched template texts and a lexicon stance.

The core needs both: a post created without text gets a template text matching its stance,
and a text posted without a stance gets the lexicon stance of its wording
(``Simulation``); the ABM users (``policies.abm``) and the scenarios use them too.
Stances live in [-1, 1] (-1 strongly against the topic, +1 strongly for).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..actions import ActionType as A
from ..actions import KindMask

# Topics of the text the core writes for users that post without text (and of the benches' posts).
TOPIC_WORDS = (
    "economy",
    "climate",
    "election",
    "health",
    "technology",
    "sports",
    "music",
    "science",
    "education",
    "travel",
    "food",
    "business",
)

__all__ = [
    "STANCE_LABELS",
    "stance_label",
    "stance_texts",
    "template_text",
    "lexicon_stance",
    "fill_text",
    "score_stance",
]

STANCE_LABELS: tuple[str, ...] = ("strongly against", "against", "neutral", "for", "strongly for")

# Every template of a non-neutral bin carries lexicon words of its sign, graded so that the
# mild bins score about +-0.46 and the strong bins above +-0.9; neutral ones carry none.
_TEMPLATES: tuple[tuple[str, ...], ...] = (
    (
        "I strongly oppose {topic}. This is completely wrong and harmful!",
        "Absolutely unacceptable: {topic} would be a total disaster!",
        "Firmly against {topic}. It is dangerous and must be stopped!",
    ),
    ("I have doubts about {topic}.", "Not convinced by {topic} so far.", "Leaning against {topic} for now."),
    (
        "Still not sure what to think about {topic}.",
        "Reading more about {topic} before I make up my mind.",
        "Anyone have a balanced take on {topic}?",
    ),
    (
        "I think {topic} is a good idea overall.",
        "Leaning in favor of {topic} for now.",
        "Cautiously supportive of {topic}.",
    ),
    (
        "I strongly support {topic}. This is absolutely the right thing to do!",
        "Absolutely love the push for {topic}. Great news for everyone!",
        "Firmly with {topic}. It is excellent and a huge win!",
    ),
)
TEMPLATE_VARIANTS = len(_TEMPLATES[0])  # the templates of each bin


def stance_label(stance) -> np.ndarray:
    """Bin stances into 0..4 = strongly against, against, neutral, for, strongly for (NaN -> 2)."""
    s = np.asarray(stance, dtype=np.float64)
    conds = [s <= -0.6, s <= -0.2, s < 0.2, s < 0.6, s >= 0.6]  # first true wins; NaN: none
    return np.select(conds, [0, 1, 2, 3, 4], default=2).astype(np.int64)


def stance_texts(bins, topics, which) -> list[str]:
    """The template of each stance bin `bins` (0 .. 4, `stance_label`'s), its variant `which`
    (0 .. `TEMPLATE_VARIANTS` - 1), filled with its topic (`topics`: one string per bin)."""
    pairs = zip(np.ravel(bins).tolist(), np.ravel(which).tolist(), topics, strict=True)
    return [_TEMPLATES[b][w].format(topic=t) for b, w, t in pairs]


def template_text(stance, topic: str, rng: np.random.Generator) -> list[str]:
    """Short post texts whose wording matches each stance's bin; one rng draw per text.

    Bins: <= -0.6 strongly against, (-0.6, -0.2] against, (-0.2, 0.2) neutral,
    [0.2, 0.6) for, >= 0.6 strongly for; NaN counts as neutral.
    """
    bins = stance_label(stance).ravel()
    return stance_texts(bins, [topic] * len(bins), rng.integers(0, TEMPLATE_VARIANTS, size=len(bins)))


_POSITIVE: dict[str, float] = {
    # template words
    "support": 2.0,
    "supportive": 1.0,
    "favor": 1.0,
    "favour": 1.0,
    "good": 1.0,
    "love": 2.0,
    "great": 1.5,
    "excellent": 2.0,
    "right": 1.0,
    "win": 1.5,
    "convinced": 1.0,
    # general
    "agree": 1.5,
    "agreed": 1.5,
    "best": 1.5,
    "better": 1.0,
    "awesome": 1.5,
    "amazing": 1.5,
    "wonderful": 1.5,
    "fantastic": 1.5,
    "happy": 1.0,
    "glad": 1.0,
    "proud": 1.0,
    "hope": 0.5,
    "hopeful": 1.0,
    "benefit": 1.0,
    "beneficial": 1.0,
    "helpful": 1.0,
    "positive": 1.0,
    "fair": 1.0,
    "safe": 0.5,
    "progress": 1.0,
    "success": 1.0,
    "successful": 1.0,
    "yes": 0.5,
    "thank": 0.5,
    "thanks": 0.5,
    "brilliant": 1.5,
    "important": 0.5,
    "welcome": 1.0,
    "endorse": 2.0,
    "approve": 1.5,
    "nice": 1.0,
    "true": 0.5,
    "wise": 1.0,
    "smart": 1.0,
    "overdue": 1.0,
    "backing": 1.0,
}
_NEGATIVE: dict[str, float] = {
    # template words
    "oppose": 2.0,
    "wrong": 1.5,
    "harmful": 1.5,
    "unacceptable": 2.0,
    "disaster": 2.0,
    "against": 1.0,
    "dangerous": 1.5,
    "stopped": 1.0,
    "doubts": 1.0,
    # general
    "bad": 1.0,
    "terrible": 2.0,
    "awful": 2.0,
    "horrible": 2.0,
    "worst": 2.0,
    "worse": 1.0,
    "hate": 2.0,
    "disagree": 1.5,
    "reject": 1.5,
    "fail": 1.0,
    "failed": 1.0,
    "failure": 1.5,
    "false": 1.0,
    "fake": 1.5,
    "lie": 1.5,
    "lies": 1.5,
    "corrupt": 1.5,
    "unfair": 1.5,
    "ridiculous": 1.5,
    "stupid": 1.5,
    "shame": 1.5,
    "shameful": 2.0,
    "sad": 1.0,
    "angry": 1.0,
    "outrage": 1.5,
    "outrageous": 2.0,
    "danger": 1.5,
    "threat": 1.0,
    "mistake": 1.0,
    "nonsense": 1.5,
    "boycott": 1.5,
    "stop": 1.0,
    "doubt": 1.0,
    "worried": 1.0,
    "worry": 1.0,
    "scam": 2.0,
    "useless": 1.5,
    "harm": 1.5,
    "damage": 1.0,
    "problem": 0.5,
    "crazy": 1.0,
}
_LEXICON: dict[str, float] = {**_POSITIVE, **{w: -v for w, v in _NEGATIVE.items()}}
_INTENSIFIERS: dict[str, float] = {
    "strongly": 1.5,
    "absolutely": 1.5,
    "completely": 1.5,
    "totally": 1.5,
    "fully": 1.5,
    "firmly": 1.5,
    "very": 1.3,
    "really": 1.3,
    "extremely": 1.8,
    "deeply": 1.5,
    "so": 1.2,
    "huge": 1.3,
    "total": 1.3,
    "utterly": 1.8,
    "cautiously": 0.7,
    "somewhat": 0.7,
    "slightly": 0.5,
}
_NEGATORS = frozenset({"not", "no", "never", "nor", "hardly", "without", "neither", "nothing"})
_NEGATION_SPAN = 3  # a negator flips the next sentiment word within 3 tokens
_BOOST_SPAN = 2  # an intensifier scales the next sentiment word within 2 tokens
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?")
_SCALE = 0.5  # stance = tanh(0.5 * summed weight)


def _score_tokens(tokens: list[str]) -> tuple[float, int]:
    """Signed weight sum and number of sentiment words of one tokenized text."""
    total, hits = 0.0, 0
    neg_left, boost_left, boost = 0, 0, 1.0
    for tok in tokens:
        if tok in _NEGATORS or tok.endswith("n't"):
            neg_left = _NEGATION_SPAN
        elif tok in _INTENSIFIERS:
            boost = (boost if boost_left else 1.0) * _INTENSIFIERS[tok]
            boost_left = _BOOST_SPAN
        elif tok in _LEXICON:
            v = _LEXICON[tok] * (boost if boost_left else 1.0)
            total += -v if neg_left else v
            hits += 1
            neg_left = boost_left = 0
        else:
            neg_left = max(0, neg_left - 1)
            boost_left = max(0, boost_left - 1)
    return total, hits


def lexicon_stance(texts: list[str], topic: str | None = None) -> np.ndarray:
    """Cheap lexicon stance in [-1, 1] for texts with no stance attached (NaN: no signal).

    Sums signed word weights (intensifiers multiply the next sentiment word; "not", "no",
    "never", "...n't" flip the next one within 3 tokens) and returns tanh(0.5 * sum). It knows
    every word template_text uses, so template round-trips keep their sign and grade. If
    ``topic`` is given, its occurrences are removed first so that words in the topic name
    ("... ban", "war on ...") do not count.
    Limits: it measures the sentiment of the wording, not the stance towards the topic
    ("I hate how people attack X" reads as against X); no sarcasm, irony, emoji, hashtags or
    non-English words; a text mentioning several targets gets one blended score.
    """
    topic_re = re.compile(re.escape(topic.lower())) if topic else None
    out = np.full(len(texts), np.nan, dtype=np.float64)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            continue
        low = text.lower().replace("\u2019", "'")
        if topic_re is not None:
            low = topic_re.sub(" ", low)
        total, hits = _score_tokens(_TOKEN.findall(low))
        if hits:
            out[i] = math.tanh(_SCALE * total)
    return out


# ---------------------------------------------------------------- the texts of a step's actions
_WRITES = (A.CREATE_POST, A.QUOTE_POST, A.CREATE_COMMENT)
_SEARCHES = (A.SEARCH_POSTS, A.SEARCH_USER)
_IS_WRITE, _IS_WRITE_OR_SEARCH = KindMask(_WRITES), KindMask(_WRITES + _SEARCHES)


def score_stance(action: np.ndarray, texts: list, stance: np.ndarray) -> None:
    """Texts sent without a stance (e.g. by LLM users) get one from the lexicon scorer, so
    rule-based users can react to them (`stance` is filled in place)."""
    need = np.flatnonzero(_IS_WRITE(action) & np.isnan(stance))
    need = [i for i in need.tolist() if isinstance(texts[i], str)]
    if need:
        stance[need] = lexicon_stance([texts[i] for i in need])


def fill_text(platform, rng: np.random.Generator, users, action, texts: list, stance: np.ndarray) -> None:
    """Numeric policies send no text: give their text actions a short template text whose
    wording follows the user's opinion, and a stance equal to that opinion (in place)."""
    need = [i for i in np.flatnonzero(_IS_WRITE_OR_SEARCH(action)) if texts[i] is None]
    for i in need:
        if action[i] in _SEARCHES:
            texts[i] = TOPIC_WORDS[int(rng.integers(len(TOPIC_WORDS)))]
        else:
            op = float(platform.u_opinion.a[users[i]])
            texts[i] = template_text(np.array([op]), TOPIC_WORDS[int(rng.integers(len(TOPIC_WORDS)))], rng)[0]
            if np.isnan(stance[i]):
                stance[i] = op
