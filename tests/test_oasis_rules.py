"""OASIS's rules on the fast path (issue 51, plan commit 12): Recommender-v4 and Moderator-v2.

Under `Dynamics.oasis_rules` a user likes or reposts a post at most once per episode and reports
it at most once (a brigader's reports included), each campaign bot likes a post once, and a
fact-check's verdict depends on the episode and the post only. Recorded here through the real
vector envs (K > 1, every tier, across steps): every like, repost and report the users make,
every brigade report and every bot like; none repeats a pair. The same recording on v3 finds
repeats (the rule is what removes them).
"""

from __future__ import annotations

from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest

import oasis_gym  # noqa: F401  (registers the ids)
from oasis_gym.batched import engine as engine_module
from oasis_gym.batched import moderation, posting
from oasis_gym.batched.engine import Engine
from oasis_gym.batched.pairs import PairSet
from oasis_gym.model.fact_check import VERDICT_MISINFO
from oasis_gym.model.moderation import FACT_CHECK, NONE
from oasis_gym.model.tiers import DIFFICULTIES, tier

STEPS = 40


def _record(monkeypatch, env_id: str, difficulty: str, seed: int, num_envs: int = 3) -> dict[str, np.ndarray]:
    """Play `STEPS` random steps of `num_envs` episodes of `env_id`; every (episode row, user,
    post id) of likes, reposts, reports (users' and brigades'), and bot likes (bot account)."""
    env = gym.make_vec(env_id, num_envs=num_envs, users=300, max_steps=STEPS, difficulty=difficulty)
    state = env.unwrapped.task.state
    events: dict[str, list] = {"likes": [], "reposts": [], "reports": [], "bot_likes": []}
    respond, brigade, amplify_once = engine_module.users.respond_to_feeds, posting.brigade, posting.amplify_once

    def keep(name, k, u, post):
        events[name].append(np.stack([k, u, post], 1))

    def recording_respond(st, ka, ua, ids, sx, valid):
        engaged, shared, reported = respond(st, ka, ua, ids, sx, valid)
        for name, m in (("likes", engaged & ~shared), ("reposts", shared), ("reports", reported)):
            i, j = np.nonzero(m)
            keep(name, ka[i], ua[i], ids[i, j])
        return engaged, shared, reported

    def recording_brigade(*args, **kw):
        kk, ss, uu = brigade(*args, **kw)
        keep("reports", kk, uu, state.post_id[kk, ss])
        return kk, ss, uu

    def recording_amplify(*args, **kw):
        likes, views, (kk, ss, aa) = amplify_once(*args, **kw)
        keep("bot_likes", kk, aa, state.post_id[kk, ss])
        return likes, views, (kk, ss, aa)

    monkeypatch.setattr(engine_module.users, "respond_to_feeds", recording_respond)
    monkeypatch.setattr(posting, "brigade", recording_brigade)
    monkeypatch.setattr(posting, "amplify_once", recording_amplify)
    env.action_space.seed(seed)
    env.reset(seed=seed)
    for _ in range(STEPS):  # the last step truncates; no autoreset within the recording
        env.step(env.action_space.sample())
    env.close()
    return {k: np.concatenate(v) if v else np.zeros((0, 3), np.int64) for k, v in events.items()}


def _repeats(x: np.ndarray) -> int:
    return len(x) - len(np.unique(x, axis=0))


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("env_id", ["oasis_gym/Recommender-v4", "oasis_gym/Moderator-v2"])
def test_under_oasis_rules_no_pair_engages_or_reports_twice_nor_a_bot_likes_a_post_twice(monkeypatch, env_id,
                                                                                        difficulty):  # fmt: skip
    seed = 11
    ev = _record(monkeypatch, env_id, difficulty, seed)
    engaged = np.concatenate([ev["likes"], ev["reposts"]])
    assert len(ev["likes"]) > 500 and len(ev["reports"]) > 10  # the recording saw the users act
    assert _repeats(engaged) == 0  # a like or a repost of a pair, once
    assert _repeats(ev["reports"]) == 0  # users' and brigaders' reports together
    assert _repeats(ev["bot_likes"]) == 0
    if env_id.endswith("Recommender-v4") and difficulty != "easy":
        assert len(ev["bot_likes"]) > 0  # campaigns ran: the bots' rule was exercised


def test_without_the_rules_the_same_recording_finds_repeats(monkeypatch):
    """The control: Recommender-v3 (no rule) repeats pairs, so the test above can see them."""
    monkeypatch.setattr(posting, "amplify_once", posting.amplify_once)
    ev = _record(monkeypatch, "oasis_gym/Recommender-v3", "medium", 11)
    assert _repeats(np.concatenate([ev["likes"], ev["reposts"]])) > 0


def test_a_fact_check_draw_is_a_fact_about_the_post_under_oasis_rules():
    """A re-check's verdict equals the first: two episodes of one seed, the same posts checked at
    different steps, get the same verdicts (Moderator-v2); Moderator-v1's draw moves with the step."""
    for version, same in ((2, True), (1, False)):
        dyn = replace(tier("medium", version, "moderator"), fact_check_accuracy=0.5, fact_check_budget=16)
        eng = Engine(2, 300, dynamics=dyn)
        eng.reset(np.arange(2), np.array([5, 5]))
        for _ in range(3):
            eng.step()
        ids = moderation.queue(eng.state)
        assert (ids[0] >= 0).sum() >= 8 and np.array_equal(ids[0], ids[1])
        check = np.where(ids >= 0, FACT_CHECK, NONE)
        first = moderation.apply(eng.state, ids, np.stack([check[0], np.full(16, NONE)]))
        eng.step()  # fact-checks change nothing else: the two episodes stay the same
        moderation.apply(eng.state, ids, np.stack([np.full(16, NONE), check[1]]))
        assert first["fact_checks"][0] == (ids[0] >= 0).sum()
        slots = eng.state.slot(ids[0][ids[0] >= 0])
        verdicts = eng.state.verdict[:, slots]
        assert (verdicts != 0).all()
        assert np.array_equal(verdicts[0], verdicts[1]) == same


@pytest.mark.parametrize("version", [1, 2])
def test_the_observed_verdict_has_the_model_sign_in_moderator_v2(version):
    """Moderator-v2 shows +1 for a post found misinformation; Moderator-v1 the negation."""
    env = gym.make(f"oasis_gym/Moderator-v{version}", users=300, max_steps=30, difficulty="easy")
    env.reset(seed=3)
    task, compared = env.unwrapped.task, []
    for _ in range(20):
        ids = task.queue_ids[0].copy()
        obs, *_ = env.step(np.where(ids >= 0, FACT_CHECK, NONE))
        shown, now = obs[:-3].reshape(16, -1)[:, 12], list(task.queue_ids[0])
        for post in ids[ids >= 0]:
            verdict = task.state.verdict[0, task.state.slot(post)]
            if post in now and verdict != 0:
                compared.append((shown[now.index(post)], verdict))
    shown, found = np.array(compared).T
    assert (found == VERDICT_MISINFO).any() and (found != VERDICT_MISINFO).any()
    assert np.array_equal(shown, found if version == 2 else -found)


def test_a_pair_set_is_exactly_a_set_of_pairs_per_simulation():
    """PairSet against Python sets over rings of 8 slots: adds, membership of the posts in the
    rings, a new post taking a slot (its old post's pairs go), resets of some simulations."""
    rng = np.random.default_rng(0)
    k, slots, users = 3, 8, 70  # 70 users: two words a slot
    pairs, ref = PairSet(k, slots, users), set()
    newest = np.full(k, slots - 1)  # posts 0..7 in every ring
    for step in range(80):
        kk, uu = rng.integers(0, k, 300), rng.integers(0, users, 300)
        pp = newest[kk] - rng.integers(0, slots, 300)  # posts in the ring now
        assert np.array_equal(pairs.contains(kk, uu, pp), [(a, b, c) in ref for a, b, c in zip(kk, uu, pp)])
        pairs.add(kk[:100], uu[:100], pp[:100])
        ref |= set(zip(kk[:100].tolist(), uu[:100].tolist(), pp[:100].tolist()))
        sim = step % k  # a new post in one ring: it takes the slot of the oldest
        newest[sim] += 1
        pairs.clear(np.array([sim * slots + newest[sim] % slots]))
        ref = {x for x in ref if not (x[0] == sim and x[2] == newest[sim] - slots)}
        if step % 9 == 4:
            pairs.reset(np.array([(step + 1) % k]))
            ref = {x for x in ref if x[0] != (step + 1) % k}
        assert len(pairs) == len(ref)
    assert len(ref) > 100


@pytest.mark.parametrize("version", [1, 2])
def test_the_tuned_moderator_rules_read_the_verdict_with_the_task_sign(version):
    """The baselines of `oasis-gym train moderator` remove a post found misinformation and keep
    one found true, whichever sign the task shows (Moderator-v1: -1 = misinformation, v2: +1)."""
    from oasis_gym.model.fact_check import VERDICT_TRUE
    from oasis_gym.model.moderation import QUEUE, QUEUE_FEATURES, REMOVE
    from oasis_gym.train import label_classifier, tuned_baselines

    sign = tuned_baselines.verdict_sign({"difficulty": "medium", "version": version})
    assert sign == (1 if version == 2 else -1)
    slots = np.zeros((1, QUEUE, len(QUEUE_FEATURES)), np.float32)
    slots[0, :2, QUEUE_FEATURES.index("filled")] = 1
    slots[0, :2, QUEUE_FEATURES.index("fact_check")] = sign * np.array([VERDICT_MISINFO, VERDICT_TRUE])
    obs = np.concatenate([slots.reshape(1, -1), np.zeros((1, 3), np.float32)], axis=1)
    never = np.array([99.0])
    rule = tuned_baselines.queue_rule(never, never, None, sign)
    model = {"weights": [0.0] * (len(label_classifier.PUBLIC) + 1), "mean": 0.0, "scale": 1.0}
    classifier = label_classifier.classifier_rule(model, np.array([1.0]), np.array([False]), sign)
    for act in (rule, classifier):
        codes = act(obs, 0)[0]
        assert codes[0] >= REMOVE and codes[1] < REMOVE  # removed (and suspended), kept
