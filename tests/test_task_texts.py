"""What an LLM user reads of a task post (issue 52): the world writes each Recommender-v4 /
Moderator-v2 post's text from the model's attributes (`oasis_gym/world/texts.py`): its topic, its
stance, its arousal, never its misinformation label; only where something reads texts."""

from __future__ import annotations

import re
import sqlite3

import numpy as np
import pytest

from oasis_gym.envs.moderator_v2 import ModeratorEnv
from oasis_gym.envs.recommender_v4 import RecommenderEnv
from oasis_gym.policies.base import BasePolicy
from oasis_gym.policies.llm.prompt import PromptBuilder
from oasis_gym.policies.llm.textfit import cut
from oasis_gym.sim import ActionArrays
from oasis_gym.sim.content import TEMPLATE_VARIANTS, lexicon_stance, stance_label
from oasis_gym.world.sim_world import TASK_ACTIONS
from oasis_gym.world.texts import ALL_TEXTS, AROUSED, TOPICS, post_texts

USERS, STEPS = 400, 12
LABEL_WORDS = re.compile(r"misinfo|misleading|false|fake|hoax|label|untrue|debunk|fact", re.IGNORECASE)


class Readers(BasePolicy):
    """A user policy that reads what an LLM user reads (`Simulation.feed_views`, as `LLMPolicy`
    does) and does nothing."""

    def __init__(self):
        super().__init__()
        self.views: list[dict] = []

    def act(self, env, obs):
        """Its visitors' feed views kept; no action."""
        self.views.extend(env.feed_views(obs.users))
        return ActionArrays(obs.users[:0], np.zeros(0, np.int64))


def _play(cls, seed=9000, **backend):
    """An episode with default actions; the env (closed) and its world."""
    env = cls(difficulty="hard", users=USERS, max_steps=STEPS, backend="platform", **backend)
    env.reset(seed=seed)
    action = np.zeros(env.action_space.shape, env.action_space.dtype)
    for _ in range(STEPS):
        env.step(action)
    env.close()
    return env, env.world


def _task_posts(world) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The task posts live in the ring: their slots, model ids and platform texts."""
    st = world.state
    slots = np.flatnonzero((st.post_id[0] >= 0) & (world.pid >= 0))
    return slots, st.post_id[0, slots], [world.platform.p_content[p] for p in world.pid[slots].tolist()]


@pytest.mark.parametrize("cls", [RecommenderEnv, ModeratorEnv])
def test_a_text_names_its_posts_topic_stance_and_arousal_and_the_journal_holds_it(cls, tmp_path):
    db = tmp_path / "texts.db"
    _, world = _play(cls, journal=True, db_path=str(db))
    st = world.state
    slots, ids, texts = _task_posts(world)
    assert len(slots) > 100
    topic = st.topic[:, 0, slots].argmax(0)
    for text, d, stance, arousal in zip(texts, topic, st.stance[0, slots], st.arousal[0, slots], strict=True):
        loud = arousal >= AROUSED
        assert text.startswith(f"#{TOPICS[d].upper() if loud else TOPICS[d]} "), (text, d, arousal)
        assert text.lower().count(TOPICS[d]) == 2, text  # its sentence names it too
        assert stance_label(lexicon_stance([text], topic=TOPICS[d])) == stance_label(stance), (text, stance)
    assert len({TOPICS[d] for d in topic}) == len(TOPICS) and len(set(stance_label(st.stance[0, slots]))) == 5
    assert texts == post_texts(st, ids)  # from the model's attributes and the episode's key
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        journaled = dict(conn.execute("SELECT post_id, content FROM post"))
    assert [journaled[p] for p in world.pid[slots].tolist()] == texts
    again = _task_posts(_play(cls, journal=True, db_path=str(tmp_path / "again.db"))[1])[2]
    assert again == texts  # same seed, same texts


def test_no_text_holds_the_hidden_label():
    _, world = _play(RecommenderEnv, journal=True)
    st = world.state
    slots, _, texts = _task_posts(world)
    misinfo = st.misinfo[0, slots]
    assert misinfo.any() and (~misinfo).any()
    # each text is one of topic x stance bin x arousal level x variant: no label in any
    assert set(texts) <= set(ALL_TEXTS) and len(ALL_TEXTS) == len(set(ALL_TEXTS)) == 4 * 5 * 2 * TEMPLATE_VARIANTS
    assert not any(LABEL_WORDS.search(t) for t in ALL_TEXTS)
    # the texts read no label: flipped, every text is the same (and a misinformation post reads as any claim)
    ids = st.post_id[0, slots]
    st.misinfo[0, slots] = ~misinfo
    st.quality[0, slots] = 1 - st.quality[0, slots]
    assert post_texts(st, ids) == texts
    seen_mis = {t for t, m in zip(texts, misinfo, strict=True) if m}
    seen_true = {t for t, m in zip(texts, misinfo, strict=True) if not m}
    assert seen_mis & seen_true  # identical texts among both kinds


def test_the_fast_platform_path_writes_no_texts():
    env, world = _play(RecommenderEnv)
    assert not world.writes_texts
    assert all(re.fullmatch(r"post \d+", t) for t in _task_posts(world)[2])


@pytest.mark.parametrize("cls", [RecommenderEnv, ModeratorEnv])
def test_an_llm_users_prompt_of_a_task_feed_holds_the_posts_texts(cls):
    readers = Readers()
    _, world = _play(cls, user_policy=readers, policy_users=np.arange(0, USERS, 4))
    assert world.writes_texts
    views = [v for v in readers.views if v.get("posts")]
    full = max(views, key=lambda v: len(v["posts"]))
    assert len(full["posts"]) == 10  # a full task feed
    st = world.state
    by_platform_id = {int(p): int(i) for p, i in zip(world.pid, st.post_id[0]) if p >= 0 and i >= 0}
    unbounded = PromptBuilder(TASK_ACTIONS, feed_tokens=None)
    default = PromptBuilder(TASK_ACTIONS)  # `LLMPolicyCore`'s: a full feed's texts cut to their first ~40 characters
    assert default.feed_caps(full)[0] == 40
    for view in views[-50:] + [full]:
        whole, short, cap = unbounded.user_message(view), default.user_message(view), default.feed_caps(view)[0]
        for post in view["posts"]:
            model_id = by_platform_id.get(int(post["post_id"]))
            if model_id is None:  # written over in the ring since
                continue
            text = post_texts(st, np.array([model_id]))[0]
            assert post["text"] == text
            assert f"#{post['post_id']} " in whole and f": {text}\n" in whole + "\n", text
            seen = cut(text, cap)  # as the default prompt shows it: the topic never cut away
            assert f": {seen}" in short and seen.startswith(text.split(" ", 1)[0] + " "), seen
