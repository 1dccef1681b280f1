"""Online metrics of a live simulation: TensorBoard and the journal's metrics table agree with
each other, with the trace / rec tables and with the formulas applied to the platform state;
incremental cascades equal the formulas' reconstruction."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from conftest import make_population
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from oasis_gym.actions import ACTION_NAMES, RESULT_NAMES
from oasis_gym.actions import ActionType as A
from oasis_gym.cli.report import make_report
from oasis_gym.envs import twitter_v0
from oasis_gym.envs.social_env import SocialMediaEnv
from oasis_gym.metrics import MetricsRecorder, read_cascade_curves, read_metrics
from oasis_gym.metrics import formulas as F
from oasis_gym.metrics.online import CascadeForest
from oasis_gym.platform import ActionBatch, Platform, PlatformConfig
from oasis_gym.platform.store import unpack_keys

STEPS = 8
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def load_events(logdir: Path) -> EventAccumulator:
    ea = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "histograms": 0, "tensors": 0})
    ea.Reload()
    return ea


def seed_labelled_posts(sim) -> None:
    """Scenario roots: one misinformation post, one true post (reposts inherit the label)."""
    sim.platform.create_posts(
        np.array([0, 1]),
        ["a false claim #health", "a true fact #health"],
        stance=np.array([0.8, -0.6], dtype=np.float32),
        label=np.array([1, 0]),
    )


def follow_edges(pf):
    return unpack_keys(pf.rel["follow"].keys())


# --------------------------------------------------------------------------- a real random run


@pytest.fixture(scope="module")
def random_run(tmp_path_factory):
    """60 users, random recsys, half active, random masked actions for 8 steps, recorder on."""
    tmp = tmp_path_factory.mktemp("online")
    env = twitter_v0.parallel_env(
        users=60,
        recsys="random",
        activation=0.5,
        db_path=str(tmp / "run.db"),
        log_recs=True,
        setup=seed_labelled_posts,
        max_cycles=50,
    )
    obs, infos = env.reset(seed=3)
    pf = env.sim.platform
    rec = MetricsRecorder.attach(
        env.sim,
        tmp / "tb",
        every=1,
        histograms_every=2,
        strict=True,
        herd_groups={"seeded": [0, 1], "early": np.arange(2, 12)},
    )
    space = env.action_space("user_0")
    space.seed(11)
    opinions_seen = {}
    rng = np.random.default_rng(5)
    for step in range(STEPS):
        if step == 4:  # opinions move mid-run (as an opinion-dynamics policy would)
            users = rng.choice(pf.n_users, 20, replace=False)
            pf.set_opinions(users, np.clip(pf.u_opinion.a[users] * 1.5 + rng.normal(0, 0.2, 20), -1, 1))
        if step == 2:
            rec.record_llm(
                {"agents": 4, "prompt_tokens": 100, "completion_tokens": 40, "latency_s": 2.0, "backend_error": None}
            )
            rec.record_llm({"agents": 2, "prompt_tokens": 50, "completion_tokens": 20, "latency_s": 1.0})
            rec.record_llm({"backend_cached_prompt_tokens": 45})
        opinions_seen[step] = pf.u_opinion.a.copy()
        actions = {a: space.sample(mask=obs[a]["action_mask"]) for a in env.agents if infos[a]["active"]}
        if step == 1:  # a malformed action: traced as a rejected "invalid" action
            actions[next(iter(actions))] = {"type": 99}
        obs, _, _, _, infos = env.step(actions)
    rec.finalize()
    conn = sqlite3.connect(tmp / "run.db")
    yield {"env": env, "rec": rec, "conn": conn, "tmp": tmp, "opinions": opinions_seen, "metrics": read_metrics(conn)}
    conn.close()
    env.close()


def at(metrics, tag, step):
    steps, vals = metrics[tag]
    return vals[list(steps).index(step)]


def test_tensorboard_equals_metrics_table(random_run):
    m, tmp = random_run["metrics"], random_run["tmp"]
    ea = load_events(tmp / "tb" / "episode_0")
    expected = (
        {f"actions/{n}" for n in (*ACTION_NAMES, "invalid")}
        | {f"invalid/{n}" for n in RESULT_NAMES[1:]}
        | {
            "activity/active_users",
            "activity/posts_created",
            "activity/comments_created",
            "engagement/rate",
            "invalid/rate",
            "cascade/scale",
            "cascade/depth",
            "cascade/max_breadth",
            "cascade/structural_virality",
            "cascade/top1/scale",
            "cascade/top1/depth",
            "opinion/mean",
            "opinion/std",
            "opinion/bimodality",
            "opinion/esteban_ray",
            "opinion/to_extreme_share",
            "opinion/to_moderation_share",
            "network/follower_gini",
            "network/attention_gini",
            "network/opinion_assortativity",
            "network/neighbourhood_correlation",
            "network/new_follows",
            "exposure/misinfo_share",
            "exposure/cross_cutting_share",
            "exposure/feed_diversity",
            "exposure/impressions",
            "herd/seeded_mean_score",
            "herd/early_mean_score",
            "llm/prompt_tokens",
            "llm/latency_s",
        }
    )
    assert expected <= set(m)
    finite_tags = {t for t, (_, v) in m.items() if np.isfinite(v).any()}
    assert set(ea.Tags()["scalars"]) == finite_tags
    for tag in finite_tags:
        steps, vals = m[tag]
        ok = np.isfinite(vals)
        events = ea.Scalars(tag)
        assert [e.step for e in events] == steps[ok].tolist(), tag
        np.testing.assert_allclose([e.value for e in events], vals[ok], rtol=1e-6, err_msg=tag)
    for tag in (f"actions/{ACTION_NAMES[0]}", "opinion/std", "exposure/impressions"):
        assert m[tag][0].tolist() == list(range(STEPS))
    assert [h.step for h in ea.Histograms("opinion/values")] == [0, 2, 4, 6]
    text = ea.Tensors("config/text_summary")[0].tensor_proto.string_val[0].decode()
    assert '"seed": 3' in text and '"recsys": "random"' in text
    # llm stats are summed until the next logged step, then reset
    assert at(m, "llm/prompt_tokens", 2) == 150 and at(m, "llm/latency_s", 2) == 3.0
    assert at(m, "llm/completion_tokens_per_s", 2) == pytest.approx(20.0)
    assert at(m, "llm/decisions_per_s", 2) == pytest.approx(2.0)
    assert at(m, "llm/prefix_cache_hit_rate", 2) == pytest.approx(0.3)
    assert m["llm/prompt_tokens"][0].tolist() == [2]


def test_action_and_result_counts_equal_trace(random_run):
    m, conn = random_run["metrics"], random_run["conn"]
    counts = {(s, a): c for s, a, c in conn.execute("SELECT step, action, COUNT(*) FROM trace GROUP BY step, action")}
    assert sum(counts.values()) > 50
    assert counts[(1, "invalid")] == 1
    for name in (*ACTION_NAMES, "invalid"):
        steps, vals = m[f"actions/{name}"]
        assert vals.tolist() == [counts.get((s, name), 0) for s in steps.tolist()], name
    bad = {
        (s, r): c
        for s, r, c in conn.execute(
            "SELECT step, result, COUNT(*) FROM trace WHERE result != 'ok' GROUP BY step, result"
        )
    }
    total = dict(conn.execute("SELECT step, COUNT(*) FROM trace GROUP BY step").fetchall())
    for name in RESULT_NAMES[1:]:
        steps, vals = m[f"invalid/{name}"]
        assert vals.tolist() == [bad.get((s, name), 0) for s in steps.tolist()]
    assert at(m, "invalid/invalid_action", 1) == 1
    rate = m["invalid/rate"]
    assert rate[1].tolist() == pytest.approx(
        [sum(bad.get((s, r), 0) for r in RESULT_NAMES) / total[s] for s in rate[0].tolist()]
    )
    ok = dict(
        conn.execute(
            "SELECT step, COUNT(*) FROM trace WHERE action='create_post' AND result='ok' GROUP BY step"
        ).fetchall()
    )
    steps, vals = m["activity/posts_created"]
    assert vals.tolist() == [ok.get(s, 0) for s in steps.tolist()]
    follows = dict(
        conn.execute("SELECT step, COUNT(*) FROM trace WHERE action='follow' AND result='ok' GROUP BY step").fetchall()
    )
    steps, vals = m["network/new_follows"]
    assert vals.tolist() == [follows.get(s, 0) for s in steps.tolist()]


def test_exposure_and_engagement_match_served_feeds(random_run):
    """Impressions are the feeds served (the journal's rec table, log_recs=True)."""
    m, conn, env, seen = random_run["metrics"], random_run["conn"], random_run["env"], random_run["opinions"]
    pf = env.sim.platform
    label, root = pf.p_label.a.astype(np.float64), pf.p_root.a
    is_mis = (label == 1) | ((root >= 0) & (label[np.maximum(root, 0)] == 1))
    engaged = dict(
        conn.execute(
            "SELECT step, COUNT(*) FROM trace WHERE result='ok' AND action IN"
            " ('like_post','dislike_post','repost','quote_post','create_comment') GROUP BY step"
        ).fetchall()
    )
    total_misinfo = 0
    for step in range(STEPS):
        rows = np.array(conn.execute("SELECT user_id, post_id FROM rec WHERE step=?", (step,)).fetchall()).reshape(
            -1, 2
        )
        viewer, post = rows[:, 0], rows[:, 1]
        assert at(m, "exposure/impressions", step) == len(rows) > 0
        misinfo = F.misinformation_share(post, is_mis)
        total_misinfo += misinfo
        assert at(m, "exposure/misinfo_share", step) == pytest.approx(misinfo)
        assert at(m, "exposure/cross_cutting_share", step) == pytest.approx(
            F.cross_cutting_share(viewer, post, seen[step], pf.p_stance.a)
        )
        assert at(m, "exposure/feed_diversity", step) == pytest.approx(F.feed_diversity(viewer, post, pf.p_stance.a))
        assert at(m, "engagement/rate", step) == pytest.approx(engaged.get(step, 0) / len(rows))
        assert at(m, "activity/active_users", step) == len(np.unique(viewer))
    assert total_misinfo > 0  # the labelled root was served


def test_opinion_and_network_metrics_match_formulas(random_run):
    m, env, rec = random_run["metrics"], random_run["env"], random_run["rec"]
    pf = env.sim.platform
    last = STEPS - 1
    op = pf.u_opinion.a
    for key, value in F.opinion_summary(op).items():
        assert at(m, key, last) == pytest.approx(value)
    initial = env.sim.population.opinion
    ext, mod = F.opinion_shift_shares(initial, op)
    assert ext > 0 and mod >= 0
    assert at(m, "opinion/to_extreme_share", last) == pytest.approx(ext)
    assert at(m, "opinion/to_moderation_share", last) == pytest.approx(mod)
    assert at(m, "opinion/to_extreme_share", 3) == 0.0  # nothing moved before step 4
    assert at(m, "opinion/std", 3) == pytest.approx(F.opinion_std(random_run["opinions"][3]))
    src, dst = follow_edges(pf)
    assert at(m, "network/follower_gini", last) == pytest.approx(F.gini(pf.u_followers.a))
    assert at(m, "network/attention_gini", last) == pytest.approx(
        F.gini(F.received_per_user(pf.p_author.a, pf.n_users, pf.p_likes.a))
    )
    assert at(m, "network/opinion_assortativity", last) == pytest.approx(F.opinion_assortativity(src, dst, op))
    assert at(m, "network/neighbourhood_correlation", last) == pytest.approx(F.neighbourhood_correlation(src, dst, op))
    assert at(m, "network/follow_edges", last) == len(src)
    herd = F.herd_effect(np.repeat(["early"], 10), (pf.p_likes.a - pf.p_dislikes.a)[2:12])
    assert at(m, "herd/early_mean_score", last) == pytest.approx(herd["early"])
    assert rec.errors == 0


def test_cascades_equal_formulas_and_curves(random_run):
    m, env, rec, conn = random_run["metrics"], random_run["env"], random_run["rec"], random_run["conn"]
    pf, forest = env.sim.platform, rec.forest
    assert forest.n_seen == pf.n_posts
    parent = forest.parent.a
    stats = F.cascade_stats(parent, pf.p_author.a)
    assert stats.size.max() > 2  # random reposts made real cascades
    mine = forest.stats(stats.root)
    for name in ("scale", "depth", "max_breadth", "size"):
        np.testing.assert_array_equal(mine[name], getattr(stats, name), err_msg=name)
    np.testing.assert_allclose(mine["structural_virality"], stats.structural_virality, equal_nan=True)
    summary = F.cascade_summary(stats)
    last = STEPS - 1
    assert at(m, "cascade/scale", last) == summary["cascade/max_scale"]
    assert at(m, "cascade/depth", last) == summary["cascade/max_depth"]
    assert at(m, "cascade/max_breadth", last) == summary["cascade/max_breadth"]
    assert at(m, "cascade/spread_count", last) == summary["cascade/spread_count"]
    assert at(m, "cascade/structural_virality", last) == pytest.approx(summary["cascade/mean_structural_virality"])
    assert at(m, "cascade/top1/scale", last) == stats.scale[np.lexsort((stats.root, -stats.size))[0]]
    # repost parents follow the rule: the parent is the shared post or an earlier share of it by a followee
    shares = np.flatnonzero(pf.p_root.a >= 0)
    par = parent[shares]
    via_sharer = par != pf.p_root.a[shares]
    assert np.all(pf.p_root.a[par[via_sharer]] == pf.p_root.a[shares][via_sharer])
    assert np.all(pf.p_minute.a[par[via_sharer]] < pf.p_minute.a[shares][via_sharer])
    assert pf.rel["follow"].contains(pf.p_author.a[shares][via_sharer], pf.p_author.a[par[via_sharer]]).all()
    # dense per-minute curves, appended step by step, equal the curves rebuilt from the tree
    curves = read_cascade_curves(conn)
    assert len(curves) >= 3
    end = env.sim.platform.minute - env.sim.clock.minutes_per_step  # the last step's minute
    for post, c in curves.items():
        horizon = end - int(pf.p_minute.a[post])
        assert c["minute"].tolist() == list(range(horizon + 1))
        ref = forest.curve(pf, post, horizon)
        for key in ("scale", "depth", "max_breadth"):
            np.testing.assert_array_equal(c[key], getattr(ref, key)[0], err_msg=f"{post} {key}")
        assert c["scale"][-1] == forest.scale.a[post]


def test_report_from_finished_db(random_run, tmp_path):
    written = make_report(random_run["tmp"] / "run.db", tmp_path / "report")
    names = {p.name for p in written}
    assert {
        "actions.png",
        "cascade.png",
        "metrics_opinion.png",
        "metrics_network.png",
        "metrics_exposure.png",
        "metrics_activity.png",
        "metrics_invalid.png",
        "opinion_heatmap.png",
        "follower_ccdf.png",
        "summary.txt",
    } <= names
    import sqlite3

    has_curves = (
        sqlite3.connect(random_run["tmp"] / "run.db").execute("SELECT COUNT(*) FROM cascade_curve").fetchone()[0]
    )
    assert ("cascade_curves.png" in names) == (has_curves > 0)
    for p in written:
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == PNG_MAGIC
    assert "cascade/scale" in (tmp_path / "report" / "summary.txt").read_text()


# --------------------------------------------------------------------------- a constructed cascade


def test_constructed_cascade_depth_scale_and_new_episode(tmp_path):
    """Root by user 0; reposts in a known order over known follows (see the tree below)."""
    edges = [(1, 0), (2, 1), (3, 2), (3, 1), (5, 3), (5, 1), (7, 6)]
    pop = make_population(10, edges, previous_posts=[(0, "the root")])
    env = twitter_v0.parallel_env(users=pop, recsys="random", activation=0.0, db_path=str(tmp_path / "c.db"))
    env.reset(seed=0)
    sim, pf = env.sim, env.sim.platform
    root = 0
    rec = MetricsRecorder.attach(sim, tmp_path / "tb", tracked_posts=[root], strict=True)

    def apply(*rows):
        res, new = pf.apply(ActionBatch.of(list(rows)))
        assert res.tolist() == [0] * len(rows)
        return new

    env.step({})  # step 0, minute 0: the root alone
    (a,) = apply((1, A.REPOST, root))  # 1 follows 0 -> under the root
    env.step({})
    (b,) = apply((2, A.REPOST, a))  # aimed at a repost: resolves to the root
    env.step({})
    c, e, q = apply((3, A.REPOST, root), (5, A.REPOST, root), (6, A.QUOTE_POST, root, "my take"))
    env.step({})  # 3 -> b (latest followed); 5 -> a (3 is same minute)
    d, rq = apply((4, A.REPOST, root), (7, A.REPOST, q))  # 4 follows nobody; 7 reposts the quote
    env.step({})
    parent = rec.forest.parent.a
    assert parent[[a, b, c, d, e, q, rq]].tolist() == [root, a, b, root, a, root, q]
    # the formulas' reconstruction (graph unchanged) gives the same tree
    src, dst = follow_edges(pf)
    np.testing.assert_array_equal(F.infer_repost_parents(pf.p_root.a, pf.p_author.a, pf.p_minute.a, src, dst), parent)
    st = rec.forest.stats(np.array([root]))
    # depths: a 1, b 2, c 3, d 1, e 2, q 1, rq 2; subtree sizes a 4, b 2, q 2, the rest 1
    assert (st["scale"][0], st["depth"][0], st["max_breadth"][0]) == (8, 3, 3)
    assert st["structural_virality"][0] == pytest.approx(2 * (4 * 4 + 2 * 6 * 2 + 7 * 4) / (8 * 7))
    ref = F.cascade_stats(parent, pf.p_author.a)
    assert ref.structural_virality[0] == pytest.approx(st["structural_virality"][0])

    m = read_metrics(sim.journal.conn)
    assert m[f"cascade/post_{root}/scale"][1].tolist() == [1, 2, 3, 6, 8]
    assert m[f"cascade/post_{root}/depth"][1].tolist() == [0, 1, 2, 3, 3]
    assert m[f"cascade/post_{root}/max_breadth"][1].tolist() == [0, 1, 1, 2, 3]
    assert m["cascade/depth"][1].tolist() == [0, 1, 2, 3, 3]
    assert m["cascade/new_shares"][1].tolist() == [0, 1, 1, 3, 2]
    assert m["activity/active_users"][1].tolist() == [0] * 5
    curve = read_cascade_curves(sim.journal.conn)[root]
    assert curve["minute"].tolist() == list(range(13))
    assert curve["scale"][[0, 2, 3, 5, 6, 8, 9, 11, 12]].tolist() == [1, 1, 2, 2, 3, 3, 6, 6, 8]
    assert curve["depth"][[0, 3, 6, 9]].tolist() == [0, 1, 2, 3]
    rec.finalize()

    # a reset starts a new journal: the hook notices it, recreates the tables, logs a new episode
    env.reset(seed=1)
    env.step({})
    rec.finalize()
    conn = sqlite3.connect(tmp_path / "c.db")
    assert conn.execute("SELECT COUNT(DISTINCT step) FROM metrics").fetchone()[0] == 1
    assert conn.execute("SELECT value FROM metrics WHERE tag=?", (f"cascade/post_{root}/scale",)).fetchone() == (1,)
    conn.close()
    assert list((tmp_path / "tb" / "episode_1").glob("events.out.tfevents.*"))
    env.close()


def test_every_accumulates_counts_and_full_metrics_are_sparse(tmp_path):
    env = twitter_v0.parallel_env(users=40, recsys="random", activation=0.6, db_path=str(tmp_path / "e.db"))
    obs, infos = env.reset(seed=2)
    rec = MetricsRecorder.attach(env.sim, None, every=2, every_full=4, histograms_every=4, strict=True)
    space = env.action_space("user_0")
    space.seed(1)
    for _ in range(6):
        obs, _, _, _, infos = env.step(
            {a: space.sample(mask=obs[a]["action_mask"]) for a in env.agents if infos[a]["active"]}
        )
    conn = env.sim.journal.conn
    m = read_metrics(conn)
    assert m["actions/like_post"][0].tolist() == [0, 2, 4]
    assert m["opinion/std"][0].tolist() == [0, 4]
    trace = dict(conn.execute("SELECT step, COUNT(*) FROM trace GROUP BY step").fetchall())
    logged = sum(m[f"actions/{n}"][1] for n in (*ACTION_NAMES, "invalid"))
    assert logged.tolist() == [trace[0], trace[1] + trace[2], trace[3] + trace[4]]
    # activity/*_users count distinct users over the interval (they summed user-steps: 89 of 40 users)
    acting = [
        conn.execute(
            "SELECT COUNT(DISTINCT user_id) FROM trace WHERE action NOT IN ('do_nothing', 'invalid')"
            " AND step BETWEEN ? AND ?",
            bounds,
        ).fetchone()[0]
        for bounds in ((0, 0), (1, 2), (3, 4))
    ]
    assert m["activity/acting_users"][1].tolist() == acting
    assert max(acting) > 0 and all(v <= 40 for v in m["activity/active_users"][1])
    assert all(a <= b for a, b in zip(m["activity/acting_users"][1], m["activity/active_users"][1]))
    rec.finalize()  # step 5 had no row: finalize writes the full metrics of the final state
    m = read_metrics(conn)
    assert m["opinion/std"][0].tolist() == [0, 4, 5]
    assert m["network/follower_gini"][1][-1] == pytest.approx(F.gini(env.sim.platform.u_followers.a))
    env.close()


# --------------------------------------------------------------------------- the forest alone


@pytest.mark.parametrize("sharer_scan", [0, 1024])
def test_forest_matches_formulas_on_random_reposts(sharer_scan):
    """Many batches of random reposts/quotes over a fixed follow graph with skewed degrees:
    both attribution paths (enumerate sharers / enumerate followees) agree with the
    formulas' as-of join, and the incremental statistics with cascade_stats."""
    rng = np.random.default_rng(7)
    n = 300
    src = rng.integers(0, n, 6000)
    dst = np.minimum(rng.zipf(1.6, 6000) - 1, n - 1)  # a few very popular followees
    heavy = np.repeat(np.arange(5), 250), rng.integers(0, n, 1250)  # five users follow hundreds
    src, dst = np.r_[src, heavy[0]], np.r_[dst, heavy[1]]
    pf = Platform(PlatformConfig())
    pf.add_users(make_population(n, np.c_[src, dst], [(int(u), "p") for u in rng.integers(0, n, 30)]))
    forest = CascadeForest(sharer_scan=sharer_scan)  # 0: both paths taken; 1024: sharers only
    forest.update(pf, n_top=3)
    for _ in range(25):
        k = 60
        users = rng.integers(0, n, k)
        targets = rng.integers(0, pf.n_posts, k)
        kinds = np.where(rng.random(k) < 0.15, A.QUOTE_POST, A.REPOST)
        extra = [(int(u), A.CREATE_POST, -1, "new") for u in rng.integers(0, n, 3)]
        pf.apply(ActionBatch.of([(int(u), int(a), int(t), "q") for u, a, t in zip(users, kinds, targets)] + extra))
        forest.update(pf, n_top=3)
        pf.advance(3)
    pf.reset_pending()
    fs, fd = follow_edges(pf)
    expected = F.infer_repost_parents(pf.p_root.a, pf.p_author.a, pf.p_minute.a, fs, fd)
    np.testing.assert_array_equal(forest.parent.a, expected)
    assert (expected != np.where(pf.p_root.a >= 0, pf.p_root.a, -1)).sum() > 50  # many non-root parents
    ref = F.cascade_stats(expected, pf.p_author.a)
    mine = forest.stats(ref.root)
    for name in ("scale", "depth", "max_breadth", "size"):
        np.testing.assert_array_equal(mine[name], getattr(ref, name))
    np.testing.assert_allclose(mine["structural_virality"], ref.structural_virality, equal_nan=True)
    top = ref.root[np.lexsort((ref.root, -ref.size))[:3]]
    np.testing.assert_array_equal(forest.top_ids, top)
    summary = forest.summary()
    spread = ref.size >= 2
    assert summary["cascade/mean_scale"] == pytest.approx(ref.scale[spread].mean())
    assert summary["cascade/structural_virality"] == pytest.approx(np.nanmean(ref.structural_virality[spread]))
    horizon = pf.minute - int(pf.p_minute.a[top[0]])
    curves = F.cascade_curves(expected, pf.p_minute.a, horizon, user=pf.p_author.a)
    row = np.searchsorted(curves.root, top[0])
    mine_curve = forest.curve(pf, int(top[0]), horizon)
    np.testing.assert_array_equal(mine_curve.scale[0], curves.scale[row])
    np.testing.assert_array_equal(mine_curve.max_breadth[0], curves.max_breadth[row])


def test_rejects_bad_cadence():
    with pytest.raises(ValueError):
        MetricsRecorder(None, every=2, every_full=3)
    with pytest.raises(ValueError):
        MetricsRecorder(None, every=0)


def test_full_metrics_cadence_follows_platform_size(tmp_path, monkeypatch):
    from oasis_gym.metrics import online

    env = twitter_v0.parallel_env(users=30, recsys="random", activation=0.5, db_path=str(tmp_path / "a.db"))
    env.reset(seed=0)
    small = MetricsRecorder.attach(env.sim, None, every=2)
    assert small.every_full == 2  # small platform: every logged step
    monkeypatch.setattr(online, "FULL_AUTO_SIZE", 10)
    large = MetricsRecorder.attach(env.sim, None, every=4)
    assert large.every_full == 12  # 10 rounded up to a multiple of every
    env.close()


def random_steps(env, space, obs, infos, n, rng):
    pf = env.sim.platform
    for _ in range(n):
        users = rng.choice(pf.n_users, 5, replace=False)
        pf.set_opinions(users, np.clip(pf.u_opinion.a[users] * 1.6, -1, 1))
        obs, _, _, _, infos = env.step(
            {a: space.sample(mask=obs[a]["action_mask"]) for a in env.agents if infos[a]["active"]}
        )
    return obs, infos


def test_resume_continues_metrics_with_the_episode_baseline(tmp_path):
    db = str(tmp_path / "r.db")
    env = twitter_v0.parallel_env(users=40, recsys="random", activation=0.5, db_path=db)
    obs, infos = env.reset(seed=4)
    initial = env.sim.platform.u_opinion.a.copy()
    rec = MetricsRecorder.attach(env.sim, tmp_path / "tb", strict=True)
    space = env.action_space("user_0")
    space.seed(2)
    rng = np.random.default_rng(0)
    random_steps(env, space, obs, infos, 4, rng)
    rec.finalize()
    env.close()

    env = SocialMediaEnv.resume(db)
    assert env.sim.platform.step == 4
    rec = MetricsRecorder.attach(env.sim, tmp_path / "tb", strict=True)  # a new process would do this
    obs = {a: env.row_observation(env.sim.obs, r) for r, a in enumerate(env.active_agents)}
    infos = {a: {"active": a in obs} for a in env.agents}
    random_steps(env, space, obs, infos, 3, rng)
    rec.finalize()
    pf = env.sim.platform
    m = read_metrics(env.sim.journal.conn)
    assert m["actions/do_nothing"][0].tolist() == list(range(7))
    assert m["opinion/to_extreme_share"][0].tolist() == list(range(7))
    ext, mod = F.opinion_shift_shares(initial, pf.u_opinion.a)
    assert ext > 0.2
    assert m["opinion/to_extreme_share"][1][-1] == pytest.approx(ext)
    # the forest rebuilt minute by minute from the restored posts equals the formulas' tree
    src, dst = follow_edges(pf)
    expected = F.infer_repost_parents(pf.p_root.a, pf.p_author.a, pf.p_minute.a, src, dst)
    fresh = CascadeForest()
    fresh.update(pf)
    np.testing.assert_array_equal(fresh.parent.a, expected)
    assert (
        m["cascade/spread_count"][1][-1]
        == F.cascade_summary(F.cascade_stats(rec.forest.parent.a, pf.p_author.a))["cascade/spread_count"]
    )
    env.close()


def test_instance_attach_on_reset_once_and_close_finalizes(tmp_path):
    """The CLI's pattern: construct, attach(sim), on_reset(sim), run, close()."""
    env = twitter_v0.parallel_env(users=30, recsys="random", activation=0.5, db_path=str(tmp_path / "i.db"))
    env.reset(seed=0)
    rec = MetricsRecorder(str(tmp_path / "tb"), every=3)
    assert rec.attach(env.sim) is rec
    rec.on_reset(env.sim)  # the same episode: not started twice
    assert rec.episode == 0 and env.sim.step_hooks.count(rec) == 1
    for _ in range(5):
        env.step({})
    rec.close()  # = finalize: the open interval (step 4) is written
    m = read_metrics(env.sim.journal.conn)
    assert m["actions/do_nothing"][0].tolist() == [0, 3, 4]
    assert rec.logdir == str(tmp_path / "tb") and (tmp_path / "tb" / "episode_0").is_dir()
    rec.detach()
    assert rec not in env.sim.step_hooks
    env.close()
