"""What a task post says: its text, written from the model's attributes (issue 52).

The model's posts have a topic, a stance, a quality, an arousal and a misinformation label,
and no words; the platform stores a text with every post and an LLM user reads only texts. So
the world writes each task post's text from what the model drew for it:

- its topic: `TOPICS`, a word per model topic (the first `N_TOPICS` of `sim/content.py`'s
  `TOPIC_WORDS`; the topic of a post is the largest component of its topic vector), as the
  post's leading hashtag and in its sentence;
- its stance: the stance-matched template of its stance's bin (`sim/content.py`'s
  `stance_texts`: strongly against, against, neutral, for, strongly for), the template's
  variant drawn from the episode's key and the post's id (`rng.hash64`, no stream of the model
  is drawn);
- its arousal: a post of arousal >= `AROUSED` shouts (its hashtag in capitals, a sentence
  ending in "." ends in "!");
- nothing else: not its quality, and nothing of its misinformation label (an observation never
  holds the answer): a misinformation post reads as any claim of its topic, stance and
  arousal.

So "#climate Not convinced by climate so far." or "#ELECTION Firmly with election. It is
excellent and a huge win!". Topic and stance come first: the prompt of a full feed cuts each
text to about 40 characters (`policies/llm/prompt.py`'s `feed_tokens`). The texts feed no
number of the model (the stance is on the post's row), so they change no result. The
`ALL_TEXTS` are made once; a post's text is an index into them.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..model import rng
from ..model.population import N_TOPICS
from ..sim.content import STANCE_LABELS, TEMPLATE_VARIANTS, TOPIC_WORDS, stance_label, stance_texts

TOPICS = TOPIC_WORDS[:N_TOPICS]  # model topic d -> its word
AROUSED = 0.7  # the arousal from which a post shouts (about a sixth of the posts, a third of the misinformation)
S_TEXT = 0x7E47  # the hash stream of a text's template variant (none of the model's streams)
BINS = len(STANCE_LABELS)


def _shout(sentence: str) -> str:
    return sentence[:-1] + "!" if sentence.endswith(".") else sentence


def _all_texts() -> np.ndarray:
    """Every text a task post can have, at [topic, stance bin, shouts, variant] (flat)."""
    cells = list(itertools.product(range(N_TOPICS), range(BINS), (False, True), range(TEMPLATE_VARIANTS)))
    sentences = stance_texts([b for _, b, _, _ in cells], [TOPICS[d] for d, *_ in cells], [w for *_, w in cells])
    return np.array(
        [
            f"#{TOPICS[d].upper()} {_shout(s)}" if loud else f"#{TOPICS[d]} {s}"
            for (d, _, loud, _), s in zip(cells, sentences)
        ],
        dtype=object,
    )


ALL_TEXTS = _all_texts()


def task_texts(topic, stance, arousal, which) -> list[str]:
    """The texts of posts of model topics `topic` (ints), stances, arousals and template
    variants `which` (0 .. `TEMPLATE_VARIANTS` - 1), all (M,)."""
    cell = (np.asarray(topic, np.int64) * BINS + stance_label(stance)) * 2 + (np.asarray(arousal) >= AROUSED)
    return ALL_TEXTS[cell * TEMPLATE_VARIANTS + np.asarray(which, np.int64)].tolist()


def post_texts(state, ids: np.ndarray) -> list[str]:
    """The texts of the posts `ids` of the one episode (K = 1) of a `batched.state.State`."""
    ids = np.asarray(ids, np.int64)
    slots = state.slot(ids)
    which = (rng.hash64(state.key[0], S_TEXT, ids) % np.uint64(TEMPLATE_VARIANTS)).astype(np.int64)
    return task_texts(state.topic[:, 0, slots].argmax(0), state.stance[0, slots], state.arousal[0, slots], which)
