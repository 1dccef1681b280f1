"""A replaced user's posts as task posts: what the model makes of a post it did not write (issue 52).

With `user_policy=` / `policy_users=` (LLM, ABM or scripted users in some task users' place),
those users post through their own policy: `CREATE_POST` rows with their own texts. The world
(`sim_world.SimWorld`, after the platform applied the step's rows) makes each such post a task
post, so it enters the ring of candidate posts at once: at the next step it is a candidate of its
author's followers' feeds (the author's newest post) and of anyone's out-of-network draws, it can
be served, liked, reposted, reported and moderated, and its counters (likes, reposts, reports,
read back from the platform) feed the ranking features as any task post's do. Its model
attributes, by this rule:

- **topic**: the first of the task's topics (`texts.TOPICS`) its text names, as a hashtag or a
  word (case aside), as a unit topic vector; a text that names none gets the topic the model
  draws around its author's interests;
- **stance**: the model's draw around its author's opinion after the step's change (a
  misinformation account's extreme stance), as a task post of that author would have; the
  stance on the post's row (the policy's own, if any) is the platform's, not the model's;
- **misinformation**: only a misinformation (campaign) account's post can be, with the model's
  probability for such an account's post (`Dynamics.misinfo_account_base`); any other user's
  post is not (the model never reads a label from a text it did not write);
- **quality, arousal and its classifier's score**: as the model draws them for that author
  (`model.posting.post_attributes`; a misinformation post's quality cut as the model cuts it).

The draws are counter-based, keyed by the episode, the step and the post's model id in a stream
of their own (`S_THEIRS`), so a replaced user's post changes no other draw of the model. With no
replaced users nothing here runs, and an episode is the fast path's bit for bit.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from ..model import rng
from ..model.posting import post_attributes
from .texts import TOPICS

S_THEIRS = 0x7E48  # the hash stream of a replaced user's post's attributes (none of the model's streams)
TOPIC_WORD = re.compile(r"\b(" + "|".join(map(re.escape, TOPICS)) + r")\b", re.IGNORECASE)
COUNTERS = ("likes", "shares", "reports", "impressions", "step_reports", "frequent_reports", "verdict", "removed",
            "checked")  # fmt: skip


def named_topic(texts: list[str]) -> np.ndarray:
    """The model topic (index into `TOPICS`) each text names first, -1 where it names none."""
    found = [TOPIC_WORD.search(text or "") for text in texts]
    return np.array([-1 if m is None else TOPICS.index(m.group(1).lower()) for m in found], np.int64)


def admit(state, authors: np.ndarray, texts: list[str]) -> np.ndarray:
    """Put the posts of model users `authors` (M,) with `texts` into the ring of episode 0 of
    `state` (a `batched.state.State`) as new task posts (the module docstring's rule), at the
    step `state.t`; their model post ids (M,) (at most the ring's size: the newest kept)."""
    authors = np.asarray(authors, np.int64)[-state.p :]
    texts = list(texts)[len(texts) - len(authors) :]
    pop, t = state.pop, int(state.t[0])
    ids = int(state.next_post[0]) + np.arange(len(authors), dtype=np.int64)
    state.next_post[0] += len(authors)
    # a non-account's post is never misinformation: the tier's base rate and arousal link at 0
    dyn = dataclasses.replace(state.dyn, misinfo_base=0.0, misinfo_arousal_link=0.0)
    h = rng.hash64(state.key[0], t, S_THEIRS, ids)
    values = post_attributes(h, pop.interest[authors], state.opinion[0, authors], pop.quality[authors],
                             pop.arousal[authors], state.misinfo_account[0, authors], dyn)  # fmt: skip
    topic = values.pop("topic")
    named = named_topic(texts)
    topic[named >= 0] = np.eye(topic.shape[1], dtype=topic.dtype)[named[named >= 0]]
    at = state.slot(ids)
    for pairs in state.pair_sets():  # the slots' old posts are gone, and their pairs
        pairs.clear(at)
    values.update(post_id=ids, author=authors, created=t, **dict.fromkeys(COUNTERS, 0))
    for name, value in values.items():
        getattr(state, name)[0, at] = value
    state.topic[:, 0, at] = topic.T
    state.last_post[0, authors] = ids
    return ids
