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

from oasis_gym.model import adversaries, rng, seeds, users
from oasis_gym.model.opinions import pull_push
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


def test_visit_probability_is_activity_times_satisfaction_capped():
    activity = np.array([0.1, 0.5, 0.6], np.float32)
    s = np.array([[0.5, 1.0, 0.0], [1.0, 0.5, 1.0]], np.float32)
    p = users.visit_probability(activity, s)
    assert p.dtype == np.float32 and p.shape == (2, 3)
    np.testing.assert_allclose(p, [[0.1, 0.8, 0.24], [0.16, 0.5, users.VISIT_CAP]], rtol=1e-6)


def test_visits_bring_churned_users_back_and_keep_the_away_ones_away():
    # columns: churned and comes back, churned and stays, active and draws low, active and draws
    # high, a campaign bot drawing high, a suspended user drawing low
    churned = np.array([[True, True, False, False, False, False]])
    u_return = np.array([[0.01, 0.5, 0.0, 0.0, 0.0, 0.0]])
    u_visit = np.array([[0.99, 0.0, 0.1, 0.9, 0.9, 0.1]])
    always = np.array([[False, False, False, False, True, False]])
    away = np.array([[False, False, False, False, False, True]])
    visit, back = users.visits(np.full((1, 6), 0.5), u_visit, u_return, churned, away, 0.02, always)
    assert visit.tolist() == [[True, False, True, False, True, False]]
    assert back.tolist() == [[True, False, False, False, False, False]]
    visit, _ = users.visits(np.full((1, 6), 0.5), u_visit, u_return, churned, np.ones((1, 6), bool), 0.02, always)
    assert not visit.any()  # a simulation that does not step: nobody visits


def test_pull_push_moves_towards_close_engaged_stances_and_out_with_aroused_agreement():
    o = np.array([0.2, 0.2, -0.9], np.float32)
    stance = np.array([[0.6, -0.6], [0.6, 0.9], [-1.0, 0.5]], np.float32)
    engaged = np.array([[1, 1], [0, 0], [1, 0]], np.float32)
    arousal = np.array([[0.5, 0.5], [1.0, 1.0], [1.0, 0.0]], np.float32)
    new = pull_push(o, stance, engaged, arousal, pull=0.1, confidence=0.5, push=0.2)
    # user 0: only 0.6 is close (|0.6 - 0.2| < 0.5); it agrees, -0.6 does not: means over 2 engaged
    # user 1 engaged with nothing: unchanged; user 2: pulled to -1 and pushed out, clipped at -1
    np.testing.assert_allclose(new, [0.2 + 0.1 * 0.4 / 2 + 0.2 * 0.5 / 2, 0.2, -1.0], rtol=1e-6)


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
    assert {"post_attributes", "posts_made", "draw_roles", "retarget", "brigade", "switch_campaigns", "amplify",
            "returning", "mimicked_arousal", "MISINFO_ACCOUNT_SHARE"} <= public  # fmt: skip
    assert {"CANDIDATE_FEATURES", "USER_FEATURES", "DEFAULT_WEIGHTS", "V0_FEATURES", "V0_USER_FEATURES",
            "V0_DEFAULT_WEIGHTS", "post_features", "user_features", "rank", "top_columns", "demote",
            "feed_candidates"} <= public  # fmt: skip
    assert {"report_probability", "TRAIN_SEEDS_FROM", "hash64", "Dynamics", "tier"} <= public
    assert {"make_population", "outlets", "TaskPopulation"} <= public
    assert {"engage_logit", "respond", "satisfaction", "churn", "visit_probability", "visits", "history_emas"} <= public
    assert {"update_opinions", "deffuant_weisbuch", "DWParams", "pull_push", "run_blocked"} <= public
    assert {"CODES", "V0_CODES", "QUEUE_FEATURES", "V0_VIEW_FEATURES", "priority_queue", "velocity_view"} <= public
    assert {"queue_features", "v0_view_features", "moderation_effects", "chill", "verdict", "select_checks"} <= public
    assert {"linear_reward", "RecommenderReward", "ModeratorReward", "V0RecommenderReward"} <= public
    assert {"feed_counts", "opinion_spread", "recommender_obs", "MODERATOR_GLOBALS"} <= public
    assert {"amplify_once", "TIERS_V4", "MODERATOR_TIERS", "V4_BOTS", "shown_verdict_sign"} <= public  # OASIS rules
    clashes = {(m, n) for m in modules if m not in model for n in _defined_names(modules[m]) & public}
    assert not clashes, f"defined again outside oasis_gym.model: {sorted(clashes)}"
    # the platform path's old name for the seed floor is gone
    for m, path in modules.items():
        assert "TRAIN_SEED_MIN" not in path.read_text(encoding="utf-8"), m


def test_one_table_of_moderator_codes_and_one_verdict_sign():
    from oasis_gym.agents.moderator import MODERATION_ACTIONS
    from oasis_gym.model import fact_check as fc
    from oasis_gym.model import moderation as m

    assert m.CODES[m.FACT_CHECK] == "fact_check" and m.CODES[m.LABEL] == "label"  # code 1 has one meaning
    assert m.ACTIONS == m.CODES[:4]  # Moderator-v1's action values are the model's codes
    # moderator_0 (Moderator-v0) keeps its published action order, translated in one array
    assert [m.CODES[c] for c in m.V0_CODES] == [*MODERATION_ACTIONS, "fact_check"]
    assert MODERATION_ACTIONS == ("none", "label", "downrank", "remove", "remove_and_suspend")
    misinfo, right = np.array([True, True, False, False]), np.array([True, False, True, False])
    assert fc.verdict(misinfo, right).tolist() == [
        fc.VERDICT_MISINFO,
        fc.VERDICT_TRUE,
        fc.VERDICT_TRUE,
        fc.VERDICT_MISINFO,
    ]
    assert fc.VERDICT_MISINFO == 1  # the label's sign (platform.MISINFO_LABEL)


def test_both_paths_store_the_models_verdict_and_v1_shows_its_published_encoding():
    from oasis_gym.agents.fact_check import FactChecker
    from oasis_gym.batched import moderation as fast
    from oasis_gym.batched.engine import Engine
    from oasis_gym.model import fact_check as fc
    from oasis_gym.model import moderation as m

    checker = FactChecker(budget=1, delay=0, error=0.0)
    checker.seed = 0
    assert checker._verdicts(np.array([0, 1]), np.array([True, False])).tolist() == [
        fc.VERDICT_MISINFO,
        fc.VERDICT_TRUE,
    ]
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
    assert set(stored.tolist()) <= {fc.VERDICT_MISINFO, fc.VERDICT_TRUE} and len(stored)
    x = fast.features(st, ids)
    col = m.QUEUE_FEATURES.index("fact_check")
    shown = x[0, : len(slots), col]
    assert shown.tolist() == (-stored).astype(np.float32).tolist()  # v1: +1 = found true


def _brigade_setup(seed: int, k: int = 3, n: int = 40, p: int = 60):
    g = np.random.default_rng(seed)
    author = g.integers(0, n, (k, p))
    targeted = np.zeros((k, n), bool)
    targeted[:, :8] = True  # every author below 8 is targeted
    brigader = g.random((k, n)) < 0.3
    return g, author, targeted, brigader


def test_brigade_gives_the_fast_paths_reports_for_the_tasks_parameters():
    g, author, targeted, brigader = _brigade_setup(1)
    k, p = author.shape
    key, t = rng.episode_key(np.arange(k) + 5), np.array([7, 7, 3])
    post_id = np.where(g.random((k, p)) < 0.9, np.arange(p), -1)
    removed, created = g.random((k, p)) < 0.1, g.integers(0, 8, (k, p))
    # the fast path's brigade as it stood in batched/posting.py: posts made last step x brigaders
    rows = np.arange(k)[:, None]
    fresh = (post_id >= 0) & ~removed & (created == t[:, None] - 1) & targeted[rows, author]
    before = set()
    for kq, sq in zip(*np.nonzero(fresh), strict=True):
        for bu in np.flatnonzero(brigader[kq]):
            if rng.uniform(key[kq], t[kq], 10, post_id[kq, sq], bu) < 0.5:
                before.add((int(kq), int(sq), int(bu)))
    assert len(before) > 5

    def draw(kk, ss, uu):
        return rng.uniform(key[kk], t[kk], 10, post_id[kk, ss], uu)

    age, live = t[:, None] - created, (post_id >= 0) & ~removed
    got = adversaries.brigade(age, live, author, targeted, brigader, (1, 1), 0.5, draw)
    assert set(zip(*(a.tolist() for a in got), strict=True)) == before


def test_brigade_gives_v0s_reports_for_v0s_parameters_and_draws():
    g, author, targeted, brigader = _brigade_setup(2, k=1, p=200)
    minute, p = 30, author.shape[1]
    p_minute = np.sort(g.integers(0, minute + 1, p))
    original, removed = g.random(p) < 0.8, g.random(p) < 0.1
    # v0's brigade as it stood in scenarios/misinfo_stream.py: a meshgrid of (brigader, post),
    # one draw of the generator for every pair, then the pairs already reported dropped
    posts = np.arange(np.searchsorted(p_minute, minute - 9), p)
    posts = posts[np.isin(author[0, posts], np.flatnonzero(targeted[0])) & original[posts] & ~removed[posts]]
    u, q = (a.reshape(-1) for a in np.meshgrid(np.flatnonzero(brigader[0]), posts, indexing="ij"))
    reported = {(int(a), int(b)) for a, b in zip(u[::3], q[::3], strict=True)}
    v0 = np.random.default_rng(9)
    pick = v0.random(len(u)) < 0.2
    drawn = pick.sum()
    pick &= ~np.array([(int(a), int(b)) in reported for a, b in zip(u, q, strict=True)])
    assert 5 < pick.sum() < drawn
    ours = np.random.default_rng(9)
    _, slot, user = adversaries.brigade(
        minute - p_minute[None, :], (original & ~removed)[None, :], author, targeted, brigader, (0, 9), 0.2,
        lambda kk, ss, uu: ours.random(len(uu)),
        lambda kk, ss, uu: np.array([(int(a), int(b)) in reported for a, b in zip(uu, ss, strict=True)]),
    )  # fmt: skip
    assert user.tolist() == u[pick].tolist() and slot.tolist() == q[pick].tolist()  # same reports, same order
    assert ours.random() == v0.random()  # as many draws


def test_both_rankings_compute_their_features_with_the_models_functions_and_keep_their_bits():
    from oasis_gym.model import ranking as r

    g = np.random.default_rng(1)
    n = 300
    # the fast path's table as batched/feed.post_table computed it before the move (float32 ring)
    likes, shares, fans, reports, imp = (g.integers(0, 900, n).astype(np.float32) for _ in range(5))
    age, arousal, stance = g.integers(0, 40, n).astype(np.float32), g.random(n, np.float32), g.random(n, np.float32)
    got = r.post_features(r.TASK_FEATURES, age=age, likes=likes, shares=shares, author_fans=fans,
                          arousal_score=arousal, reports=reports, impressions=imp, stance=stance)  # fmt: skip
    f = r.CANDIDATE_FEATURES.index
    before = {"recency": np.exp(-age / 3.0), "popularity": np.log1p(likes + shares) / np.log(1000.0),
              "author_fans": np.log1p(fans) / np.log(1000.0), "arousal": arousal,
              "reports": np.log1p(reports) / np.log(100.0), "like_rate": (likes + shares) / (imp + 5.0)}  # fmt: skip
    for name, value in before.items():
        assert np.array_equal(got[:, f(name)], value.astype(np.float32)), name
    assert np.array_equal(got[:, f("alignment")], stance) and not got[:, f("similarity")].any()
    # v0's (recsys/agent_controlled.py before the move: platform columns, minutes, float64)
    likes64, dislikes64 = g.integers(0, 50, n).astype(np.float64), g.integers(0, 50, n).astype(np.float64)
    shares_i, fans_i, reports_i = (g.integers(0, 3000, n) for _ in range(3))
    minutes, stance64 = g.integers(0, 2000, n), np.where(g.random(n) < 0.2, np.nan, g.uniform(-1, 1, n))
    got = r.post_features(r.V0_FEATURES, age=minutes, likes=likes64, dislikes=dislikes64, shares=shares_i,
                          author_fans=fans_i, reports=reports_i, stance=stance64)  # fmt: skip
    f = r.V0_FEATURES.names.index
    hi = np.maximum(likes64, dislikes64)
    before = {"recency": np.exp(-minutes / 180.0), "popularity": np.log1p(likes64 + shares_i) / np.log(1000.0),
              "author_fans": np.log1p(fans_i) / np.log(1000.0),
              "controversy": np.minimum(likes64, dislikes64) / np.where(hi > 0, hi, 1.0),
              "reports": np.log1p(reports_i) / np.log(1000.0), "alignment": np.nan_to_num(stance64)}  # fmt: skip
    for name, value in before.items():
        assert np.array_equal(got[:, f(name)], value.astype(np.float32)), name
    assert got.shape == (n, 8) and r.V0_USER_FEATURES == r.USER_FEATURES[:3]


def test_demote_has_the_platforms_factor_rule_and_the_fast_paths_minus2_rule():
    from oasis_gym.model.ranking import demote

    score = np.array([[2.0, -2.0, 0.5, 3.0]], np.float32)
    demoted = np.array([[True, True, False, False]])
    assert demote(score, demoted, "factor", 0.1).tolist() == [[np.float32(2.0) * 0.1, -20.0, 0.5, 3.0]]
    assert demote(score, demoted, "minus2").tolist() == [[0.0, -4.0, 0.5, 3.0]]
    assert demote(score, demoted, "factor", 1.0) is score
    assert demote(score, np.zeros_like(demoted), "minus2") is score
    with pytest.raises(ValueError, match="unknown demote rule"):
        demote(score, demoted, "halve")


def test_feed_candidates_keep_the_in_network_copy_and_mask_dead_own_and_repeated_posts():
    from oasis_gym.model.candidates import OUT_OF_NETWORK, SHARES_SEEN, feed_candidates

    p = 8
    ring = np.array([[0, 1, 2, 3, -1, -1, -1, -1]])
    author = np.array([[1, 2, 0, 2, 0, 0, 0, 0]])
    removed = np.zeros((1, p), bool)
    removed[0, 3] = True
    followees = np.array([[1, 2], [0, 2], [0, 1]])
    last_post, last_share = np.array([[2, 0, 3]]), np.full((1, 3), -1)
    u_out = np.zeros((1, OUT_OF_NETWORK), np.float32)  # slot 0: post 0 (in-network too)
    u_out[0, 1] = 0.3  # slot 2: post 2, the user's own
    reach, t, ka, ua = np.ones((1, 3), bool), np.zeros(1, np.int64), np.array([0]), np.array([0])
    ids, flat, in_net, valid = feed_candidates(
        followees, reach, last_post, last_share, ring, removed, author, t, u_out, ka, ua
    )
    assert ids.shape == (1, 2 + SHARES_SEEN + OUT_OF_NETWORK)
    kept = sorted(zip(ids[valid].tolist(), in_net[valid].tolist(), strict=True))
    assert kept == [(0, True)]  # post 0 once, in-network; 3 removed; 2 is the user's own
    assert 2 in ids and 3 in ids and np.array_equal(flat, ids & (p - 1))


def test_one_fact_check_service_budget_delay_and_each_paths_draw_rule():
    from oasis_gym.model import fact_check as fc

    requested = np.array([[True, True, False, True, True], [False, True, True, True, True]])
    checked = np.array([[False, True, False, False, False], [False, False, False, False, False]])
    # the first `budget` requests not checked before, in the caller's order
    assert fc.select_checks(requested, checked, 2).tolist() == [
        [True, False, False, True, False],
        [False, True, True, False, False],
    ]
    assert not fc.select_checks(requested, checked, 0).any()
    assert fc.checks_due(np.array([3, 4, 5]), 6, 2).tolist() == [True, True, False]
    misinfo = np.array([True, False, True])
    u = np.array([0.01, 0.5, 0.97])
    # the tasks: right where u < accuracy; v0: wrong where u < error; the same u lands apart
    assert fc.verdicts(misinfo, u, 0.95).tolist() == [1, -1, -1]
    assert fc.v0_verdicts(misinfo, u, 0.05).tolist() == [-1, -1, 1]


def test_the_two_review_views_and_what_moderating_does():
    from oasis_gym.model import moderation as m

    post_id = np.array([[10, 11, 12, 13, -1]])
    live = post_id >= 0
    age = np.array([[1, 1, 7, 0, 0]])
    likes = np.array([[3.0, 3.0, 50.0, 0.0, 0.0]], np.float32)
    zero = np.zeros_like(likes)
    # equal priority: lower id first; older than MAX_AGE: out; a smaller queue is padded
    assert m.priority_queue(post_id, live, age, likes, zero, zero, size=4).tolist() == [[10, 11, 13, -1]]
    posts = np.array([5, 6, 7])
    view = m.velocity_view(posts, np.array([2, 2, 0]), np.zeros(3), np.zeros(3), np.array([60, 60, 60]), 4)
    assert view.tolist() == [6, 5, 7, -1]  # equal velocity: newer first
    codes = np.array([[m.REMOVE, m.REMOVE_AND_SUSPEND, m.FACT_CHECK, m.REMOVE_AND_SUSPEND]])
    misinfo = np.array([[False, True, False, False]])
    author = np.array([[0, 1, 2, 3]])
    suspended_at = np.array([[-1, -1, -1, 2]])
    misinfo_account = np.array([[False, True, False, False]])
    done = m.moderation_effects(codes, misinfo, author, suspended_at, misinfo_account)
    assert done["removed"].tolist() == [[True, True, False, True]]
    assert done["wrong"].tolist() == [[True, False, False, True]]
    assert done["suspended"].tolist() == [[False, True, False, False]]  # user 3 was suspended before
    assert not done["innocent"].any()
    rate, sat = m.chill(np.float32([1.0, 0.5]), np.float32([0.3, 0.05]), 0.5, 0.1)
    assert rate.tolist() == [0.5, 0.25] and sat.tolist() == pytest.approx([0.2, 0.0])


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
