"""The model (`oasis_gym.model`, issue 51): one home per mechanism for both paths.

Each mechanism moved here is pinned to the numbers both paths gave before (tests/test_pins.py
pins the episodes; these pin the functions), and a name the model defines is defined nowhere
else, so the two paths cannot drift apart under one name again.
"""

from __future__ import annotations

import ast

import numpy as np
import pytest
from test_layers import project_modules

from oasis_gym.model import seeds
from oasis_gym.model.users import report_probability


def test_report_probability_is_the_rate_times_floor_plus_half_the_disagreement():
    misinfo = np.array([[True, False, True]])
    opinion = np.array([[0.5]])
    stance = np.array([[-0.5, 0.5, 1.0]])
    got = report_probability(misinfo, opinion, stance, 0.3, 0.01, floor=0.0)
    assert got.ravel().tolist() == pytest.approx([0.3 * 0.5, 0.0, 0.3 * 0.25])  # the platform's ReportingUsers
    got = report_probability(misinfo, opinion, stance, 0.08, 0.01, floor=0.5)
    assert got.ravel().tolist() == pytest.approx([0.08 * 1.0, 0.01 * 0.5, 0.08 * 0.75])  # the fast path's tasks


def test_report_probability_keeps_each_paths_float_type_and_bits():
    rng = np.random.default_rng(0)
    o32 = rng.uniform(-1, 1, (50, 1)).astype(np.float32)
    s32 = rng.uniform(-1, 1, (50, 8)).astype(np.float32)
    m = rng.random((50, 8)) < 0.3
    # the fast path's formula as it stood in batched/users.py (float32 opinions and stances)
    before = np.where(m, 0.08, 0.01) * (0.5 + np.abs(o32 - s32) / 2)
    assert np.array_equal(report_probability(m, o32, s32, 0.08, 0.01, floor=0.5), before)
    # the platform's as it stood in policies/reporting.py (float64)
    o64, s64 = o32.astype(np.float64), s32.astype(np.float64)
    before = np.where(m, 0.3, 0.01) * (np.abs(o64 - s64) / 2.0)
    got = report_probability(m, o64, s64, 0.3, 0.01, floor=0.0)
    assert got.dtype == np.float64 and np.array_equal(got, before)


def test_training_seeds_are_at_or_above_the_one_seed_floor():
    assert seeds.TRAIN_SEEDS_FROM == 2**20
    assert seeds.next_episode_seed(np.arange(100)).min() >= seeds.TRAIN_SEEDS_FROM
    assert seeds.training_seeds(0, 1, 64).min() >= seeds.TRAIN_SEEDS_FROM
    g = np.random.default_rng(3)
    drawn = [seeds.draw_training_seed(g) for _ in range(100)]
    assert min(drawn) >= seeds.TRAIN_SEEDS_FROM and max(drawn) < 2**31 - 1


def _defined_names(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out


def test_a_name_the_model_defines_is_defined_nowhere_else():
    modules = project_modules()
    model = {m for m in modules if m.startswith("oasis_gym.model.")}
    public = set().union(*(_defined_names(modules[m]) for m in model)) - {"annotations"}
    public = {n for n in public if not n.startswith("_")}
    assert {"report_probability", "TRAIN_SEEDS_FROM", "hash64"} <= public
    assert {"linear_reward", "RecommenderReward", "ModeratorReward", "V0RecommenderReward"} <= public
    assert {"feed_counts", "opinion_spread", "recommender_obs", "MODERATOR_GLOBALS"} <= public
    clashes = {(m, n) for m in modules if m not in model for n in _defined_names(modules[m]) & public}
    assert not clashes, f"defined again outside oasis_gym.model: {sorted(clashes)}"
    # the platform path's old name for the seed floor is gone
    for m, path in modules.items():
        assert "TRAIN_SEED_MIN" not in path.read_text(encoding="utf-8"), m


def test_one_table_of_moderator_codes_and_one_verdict_sign():
    from oasis_gym.agents.moderator import ACTION_CODES, MODERATION_ACTIONS
    from oasis_gym.batched import moderation as fast
    from oasis_gym.model import moderation as m

    assert m.CODES[m.FACT_CHECK] == "fact_check" and m.CODES[m.LABEL] == "label"  # code 1 has one meaning
    assert fast.ACTIONS == m.CODES[:4]  # Moderator-v1's action values are the model's codes
    # moderator_0 (Moderator-v0) keeps its published action order, translated in one array
    assert [m.CODES[c] for c in ACTION_CODES] == [*MODERATION_ACTIONS, "fact_check"]
    assert MODERATION_ACTIONS == ("none", "label", "downrank", "remove", "remove_and_suspend")
    misinfo, right = np.array([True, True, False, False]), np.array([True, False, True, False])
    assert m.verdict(misinfo, right).tolist() == [m.VERDICT_MISINFO, m.VERDICT_TRUE, m.VERDICT_TRUE, m.VERDICT_MISINFO]
    assert m.VERDICT_MISINFO == 1  # the label's sign (platform.MISINFO_LABEL)


def test_both_paths_store_the_models_verdict_and_v1_shows_its_published_encoding():
    from oasis_gym.agents.fact_check import FactChecker
    from oasis_gym.batched import moderation as fast
    from oasis_gym.batched.engine import Engine
    from oasis_gym.model import moderation as m
    from oasis_gym.platform import MISINFO_LABEL, TRUE_LABEL

    checker = FactChecker(budget=1, delay=0, error=0.0)
    checker.seed = 0
    assert checker._verdict(0, MISINFO_LABEL) == m.VERDICT_MISINFO and checker._verdict(1, TRUE_LABEL) == m.VERDICT_TRUE
    e = Engine(1, 200, "easy")
    e.reset(np.arange(1), np.array([5]))
    for _ in range(4):
        e.step()
    st = e.state
    ids = fast.queue(st)
    codes = np.where(ids >= 0, m.FACT_CHECK, m.NONE)
    fast.apply(st, ids, codes)  # easy: accuracy 0.95, budget 4
    slots = st.slot(ids[0][ids[0] >= 0])[: st.dyn.fact_check_budget]
    stored = st.verdict[0, slots]
    assert set(stored.tolist()) <= {m.VERDICT_MISINFO, m.VERDICT_TRUE} and len(stored)
    x = fast.queue_features(st, ids)
    col = fast.QUEUE_FEATURES.index("fact_check")
    shown = x[0, : len(slots), col]
    assert shown.tolist() == (-stored).astype(np.float32).tolist()  # v1: +1 = found true


def test_every_reward_is_the_one_linear_form_with_the_bits_each_path_gave():
    from oasis_gym.model.rewards import (
        ModeratorReward,
        RecommenderReward,
        V0ModeratorReward,
        V0RecommenderReward,
        linear_reward,
    )

    rng = np.random.default_rng(1)
    eng, mis = rng.random(64) * 3, rng.random(64) * 0.5  # the tasks' terms: float64 counts / N
    d_std = rng.normal(0, 0.01, 64).astype(np.float32)
    p = RecommenderReward(7.0, 13.0, 31.0)
    before = p.engagement_weight * eng - p.misinfo_penalty * mis - p.polarization_penalty * d_std  # batched/tasks.py
    terms = {"engagements": eng, "misinfo_impressions": mis, "polarization_increase": d_std}
    got = linear_reward(terms, p.weights())
    assert got.dtype == before.dtype and got.tobytes() == before.tobytes()
    q, wrong = ModeratorReward(), rng.integers(0, 30, 64).astype(np.float32)
    before = -q.misinfo_penalty * mis + q.engagement_weight * eng
    before = before - q.action_cost * wrong
    got = linear_reward({"misinfo_impressions": mis, "engagements": eng, "false_positives": wrong}, q.weights())
    assert got.tobytes() == before.tobytes()
    # the platform's (v0): Python floats, as agents/recommender.py and agents/moderator.py summed them
    v = V0RecommenderReward()
    for e, m, i, c in rng.random((50, 4)) - [0, 0, 0.5, 0]:
        e, m, i, c = float(e), float(m), float(i) / 100, float(c)
        before = v.engagement_weight * e - v.misinfo_penalty * m - v.polarization_penalty * i + v.diversity_bonus * c
        terms = {"engagement": e, "misinfo_exposure": m, "polarization_increase": i, "diversity": c}
        assert linear_reward(terms, v.weights()) == before
        n = int(e * 10)
        assert linear_reward({"misinfo_exposure": m, "true_actions": n}, V0ModeratorReward().weights()) == -m - 0.02 * n


def test_the_fast_paths_measures_count_per_simulation_in_its_float_types():
    from oasis_gym.metrics.opinions import opinion_std
    from oasis_gym.model.measures import feed_counts, opinion_extremity, opinion_spread

    rng = np.random.default_rng(2)
    ka = np.sort(rng.integers(0, 3, 40))  # visits of simulations 0 and 2 (1 may have none)
    ka[ka == 1] = 2
    ok, mis, eng, rep = (rng.random((4, 40, 10)) < [[[0.9]], [[0.3]], [[0.2]], [[0.05]]]).astype(bool)
    arousal = rng.random((40, 10)).astype(np.float32)
    got = feed_counts(ka, 3, ok, mis, arousal, eng & ok, rep & ok)
    assert got["active"].tolist() == np.bincount(ka, minlength=3).tolist() and got["active"][1] == 0
    assert got["impressions"].tolist() == [ok[ka == k].sum() for k in range(3)]
    assert got["misinfo_impressions"].tolist() == [(mis & ok)[ka == k].sum() for k in range(3)]
    assert got["engagements"].tolist() == [(eng & ok)[ka == k].sum() for k in range(3)]
    assert got["arousal_served"][2] == pytest.approx(float((arousal * ok)[ka == 2].sum()), rel=1e-6)
    op = rng.uniform(-1, 1, (3, 200)).astype(np.float32)
    spread = opinion_spread(op)
    assert spread.dtype == np.float32 and spread.tobytes() == op.std(axis=1).tobytes()  # as batched/engine.py had it
    assert opinion_extremity(op).tolist() == np.abs(op).mean(axis=1).tolist()
    # the platform's metric is another measure under another name: float64, the known opinions only
    with_unknown = np.append(op[0], np.nan)
    assert opinion_std(with_unknown) == pytest.approx(float(op[0].astype(np.float64).std()))


def test_the_tasks_observations_are_the_models_columns_under_their_names():
    from oasis_gym.batched.tasks import RECOMMENDER_OBS, ModeratorTask, RecommenderTask
    from oasis_gym.model import observations as o
    from oasis_gym.model.measures import opinion_spread

    task = RecommenderTask(2, users=200, max_steps=10)
    rows = np.arange(2)
    task.reset(rows, np.array([3, 4]))
    first = task.reset_obs(rows)
    assert first.shape == (2, len(RECOMMENDER_OBS)) == (2, 19) and RECOMMENDER_OBS[:10] == o.RECOMMENDER_STEP_FEATURES
    col = RECOMMENDER_OBS.index
    assert first[:, col("opinion_std")].tolist() == opinion_spread(task.state.opinion).tolist()
    assert not first[:, col("engagements_per_visitor")].any() and not first[:, col("time")].any()
    for t in (1, 2):
        obs, _, info = task.step(np.zeros((2, task.action_size), np.float32))
        assert obs[:, col("time")].tolist() == [np.float32(t / 10)] * 2
        assert obs[:, col("visitor_share")].tolist() == pytest.approx(info["visitors"].tolist())
    mod = ModeratorTask(1, users=200, max_steps=10)
    mod.reset(np.arange(1), np.array([3]))
    g = mod.reset_obs(np.arange(1))[0, -len(o.MODERATOR_GLOBALS) :]
    assert g[o.MODERATOR_GLOBALS.index("time")] == 0
    assert g[o.MODERATOR_GLOBALS.index("fact_check_budget_share")] == mod.state.dyn.fact_check_budget / mod.queue_size
