"""A replaced user's posts are task posts (`oasis_gym/world/user_posts.py`, issue 52): with
`user_policy=` / `policy_users=`, a post written by another user policy enters the ring of the
task's candidate posts, is served in the task users' feeds the step after, is liked there (like
rows in the journal), and its counters feed the ranking features; its model attributes follow
the documented rule."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from oasis_gym.actions import ActionType as A
from oasis_gym.batched import feed
from oasis_gym.envs.moderator_v2 import ModeratorEnv
from oasis_gym.envs.recommender_v4 import RecommenderEnv
from oasis_gym.model.ranking import DEFAULT_WEIGHTS, global_weights
from oasis_gym.policies.base import BasePolicy
from oasis_gym.sim import ActionArrays
from oasis_gym.world.texts import TOPICS
from oasis_gym.world.user_posts import admit, named_topic

USERS, STEPS = 300, 10
NAMED, UNNAMED = "#Climate my own words on it", "just my own words"


class Poster(BasePolicy):
    """A scripted user policy: each of its visitors writes one post a step (accounts 4, 12, 20 ... name a
    task topic) and does nothing else."""

    def act(self, env, obs):
        """One `CREATE_POST` row per visitor."""
        texts = [NAMED if u % 8 else UNNAMED for u in obs.users.tolist()]
        return ActionArrays(obs.users, np.full(len(obs.users), int(A.CREATE_POST)), text=texts)


@pytest.mark.parametrize("cls", [RecommenderEnv, ModeratorEnv])
def test_a_replaced_users_post_is_served_the_step_after_and_liked_and_counted(cls, tmp_path):
    db, theirs = str(tmp_path / "posts.db"), np.arange(0, USERS, 4)
    backend = {"backend": "platform", "journal": True, "db_path": db, "user_policy": Poster(), "policy_users": theirs}
    env = cls(difficulty="medium", users=USERS, max_steps=STEPS, **backend)
    world = env.world
    if cls is RecommenderEnv:
        action = global_weights(DEFAULT_WEIGHTS, env.task.weight_shape[0]).ravel().astype(np.float32)
    else:
        action = np.zeros(16, np.int64)
    env.reset(seed=9000)
    mine = np.isin(np.arange(USERS), theirs)
    made_before, served_next = set(), 0
    for t in range(1, STEPS + 1):
        env.step(action)
        st, pf, served = world.state, world.platform, world.recsys.served
        task_user = ~mine[served.users][:, None] & served.ok  # the feeds served to task users
        feeds = world.pid[st.slot(served.ids[task_user])]
        served_next += len(made_before & set(feeds.tolist()))
        slots = np.flatnonzero((st.post_id[0] >= 0) & mine[st.author[0]] & (st.created[0] == t))
        assert len(slots) > 0, f"step {t}: none of their posts entered the ring"
        texts = [pf.p_content[p] for p in world.pid[slots].tolist()]
        assert set(texts) == {NAMED, UNNAMED}
        assert (pf.p_author.a[world.pid[slots]] == world.alias[st.author[0, slots]]).all()
        made_before = set(world.pid[slots].tolist())
    assert served_next > 0, "no post of theirs was served the step after it was written"
    live = np.flatnonzero((st.post_id[0] >= 0) & mine[st.author[0]])
    liked = live[st.likes[0, live] > 0]
    assert len(liked) > 0
    assert np.array_equal(st.likes[0, liked], pf.p_likes.a[world.pid[liked]].astype(np.float32))
    table = feed.post_table(st)
    assert (table[liked, feed.COL["popularity"]] > 0).all()  # the counters feed the ranking features
    env.close()
    accounts = ",".join(map(str, world.alias[theirs].tolist()))
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        q = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        theirs_sql = f"SELECT post_id FROM post WHERE user_id IN ({accounts}) AND original_post_id IS NULL"
        rec = q(f"SELECT COUNT(*) FROM rec WHERE post_id IN ({theirs_sql}) AND user_id NOT IN ({accounts})")
        likes = q(f"SELECT COUNT(*) FROM 'like' WHERE post_id IN ({theirs_sql}) AND user_id NOT IN ({accounts})")
    assert rec > 0 and likes > 0


def test_their_posts_attributes_follow_the_rule():
    assert named_topic(["#CLIMATE now", "the election day", "economy and health", "nothing", None]).tolist() == [
        TOPICS.index("climate"), TOPICS.index("election"), TOPICS.index("economy"), -1, -1,
    ]  # fmt: skip
    env = RecommenderEnv(difficulty="hard", users=USERS, backend="platform")
    env.reset(seed=9000)
    st = env.task.state
    accounts, others = np.flatnonzero(st.misinfo_account[0]), np.flatnonzero(~st.misinfo_account[0])
    assert len(accounts) > 0
    authors = np.concatenate([np.repeat(accounts[:1], 100), others[:100]])
    texts = ["#health claim"] * 100 + ["no topic"] * 50 + ["#Economy"] * 50
    before = int(st.next_post[0])
    ids = admit(st, authors, texts)
    assert ids.tolist() == list(range(before, before + 200)) and int(st.next_post[0]) == before + 200
    slots = st.slot(ids)
    assert np.array_equal(st.author[0, slots], authors) and (st.created[0, slots] == st.t[0]).all()
    assert st.misinfo[0, slots[:100]].any() and not st.misinfo[0, slots[100:]].any()  # an account's can be
    topic = st.topic[:, 0, slots].T
    assert (topic[:100].argmax(1) == TOPICS.index("health")).all() and (topic[:100].max(1) == 1).all()
    assert (topic[150:].argmax(1) == TOPICS.index("economy")).all()
    assert (topic[100:150].max(1) < 1).all()  # drawn around the author's interests
    assert (np.abs(st.stance[0, slots]) <= 1).all() and (st.likes[0, slots] == 0).all()
    assert st.last_post[0, others[0]] == ids[100]
    env.close()
