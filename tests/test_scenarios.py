"""The paper scenarios in reduced form: they load, run, and report sane figures that agree with
the journal they wrote."""

from __future__ import annotations

import argparse
import csv
import json
import math
import sqlite3

import numpy as np
import pytest
from conftest import make_population

from oasis_gym.actions import ActionType as A
from oasis_gym.platform import ActionBatch, Platform
from oasis_gym.platform.journal import read_meta
from oasis_gym.population import data_path
from oasis_gym.scenarios import (
    SampledFeed,
    add_scenario_args,
    interview_opinion,
    list_scenarios,
    load_scenario,
    nrmse,
    parse_sets,
    root_cascade_curves,
    run_scenario_cli,
)

SHIPPED = {"twitter_information_spread", "group_polarization", "reddit_herd_effect", "misinformation_1m"}


def _query(db, sql, args=()):
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _monotone(x) -> bool:
    return bool(np.all(np.diff(np.asarray(x)) >= 0))


# --------------------------------------------------------------------------- config


def test_shipped_scenarios_load():
    assert SHIPPED <= set(list_scenarios())
    for name in SHIPPED:
        sc = load_scenario(name)
        assert sc.name == name and sc.steps > 0
    assert load_scenario("misinformation_1m").config["population"]["users"] == 1_000_000


def test_overrides_bare_dotted_and_errors():
    sc = load_scenario(
        "reddit_herd_effect",
        [
            "users=3600",
            "steps=7",
            "policy.abm.post_rate=0.5",
            "policy.comment_votes.herd_weight=0",
            "env.log_recs=true",
        ],
    )
    assert sc.config["population"]["users"] == 3600 and sc.steps == 7
    assert sc.config["policy"]["abm"]["post_rate"] == 0.5
    assert sc.config["policy"]["comment_votes"]["herd_weight"] == 0
    assert sc.config["env"]["log_recs"] is True
    assert load_scenario("reddit_herd_effect").config["population"]["users"] == 36  # the file is untouched
    with pytest.raises(KeyError, match="unknown setting"):
        load_scenario("reddit_herd_effect", {"no_such_key": 1})
    with pytest.raises(KeyError, match="unknown section"):
        load_scenario("reddit_herd_effect", {"nosection.key": 1})
    with pytest.raises(ValueError, match="policy.kind"):
        load_scenario("reddit_herd_effect", {"policy.kind": "telepathy"})
    with pytest.raises(FileNotFoundError):
        load_scenario("no_such_scenario")
    assert parse_sets(["a=1", "b=0.5", "c=text", 'd=["x", "y"]', "e=true"]) == {
        "a": 1,
        "b": 0.5,
        "c": "text",
        "d": ["x", "y"],
        "e": True,
    }
    with pytest.raises(ValueError):
        parse_sets(["novalue"])


def test_nrmse_formula_and_padding():
    assert nrmse([1, 2, 3], [1, 2, 4], 2) == pytest.approx(math.sqrt(1 / 3) / 4)
    # a short real curve is padded with its last value, a short sim curve too
    assert nrmse([1, 5], [1, 5, 5, 5], 3) == 0.0
    assert nrmse([0, 0, 0, 0], [2], 3) == pytest.approx(1.0)


def test_interview_opinion_parsing():
    assert interview_opinion("7 - she should go for it") == pytest.approx(0.7)
    assert interview_opinion("I'd say -10, too risky") == pytest.approx(-1.0)
    assert interview_opinion("In 2024 I think -3") == pytest.approx(-0.3)  # 2024 is off the scale
    assert interview_opinion("I strongly support it, a great idea") > 0
    assert math.isnan(interview_opinion("hmm"))


def test_root_cascade_curves_end_of_step_stamps():
    """Root by 0; 1 follows 0, 2 follows 1. Step 0: 1 reposts; step 1: 2 and 3 repost."""
    pf = Platform()
    pf.add_users(make_population(4, edges=[(1, 0), (2, 1)]))
    root = int(pf.create_posts(np.array([0]), ["the root"])[0])
    pf.apply(ActionBatch.of([(1, A.REPOST, root)]))
    pf.advance(3)
    pf.apply(ActionBatch.of([(2, A.REPOST, root), (3, A.REPOST, root)]))
    c = root_cascade_curves(pf, root, horizon=8, minutes_per_step=3)
    assert c.scale[0].tolist() == [1, 1, 1, 2, 2, 2, 4, 4, 4]
    assert c.depth[0].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]  # 2 hangs under 1's repost
    assert c.max_breadth[0].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_sampled_feed_draws_from_the_top():
    """OASIS's refresh: k posts drawn from each user's top `sample_from`, no empty slot first."""
    from oasis_gym.recsys import make_recommender

    pf = Platform()
    pf.add_users(make_population(3))
    posts = pf.create_posts(np.zeros(12, np.int64), [f"post {i}" for i in range(12)])
    pf.apply(ActionBatch.of([(1, A.LIKE_POST, int(p)) for p in posts[:6]]))
    inner = make_recommender("reddit")
    inner.reset(pf, np.random.default_rng(0))
    users = np.array([1, 2])
    top = inner.recommend(pf, users, 6, None)
    feed = SampledFeed(inner, 6)
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(20):
        out = feed.recommend(pf, users, 3, rng)
        assert out.shape == (2, 3)
        for row, t in zip(out, top):
            assert set(row.tolist()) <= set(t.tolist()) and len(set(row.tolist())) == 3
            seen |= set(row.tolist())
    assert seen == set(top.ravel().tolist())  # every one of the top 6 gets shown
    few = SampledFeed(inner, 50).recommend(pf, np.array([0]), 20, rng)  # user 0 authored all
    assert (few == -1).all()


# --------------------------------------------------------------------------- information spread


def test_information_spread_full_run(tmp_path):
    db = str(tmp_path / "spread.db")
    sc = load_scenario("twitter_information_spread")
    f = sc.run(db_path=db)
    H = f["horizon_minutes"]
    assert H == 150 and f["simulated_minutes"] == 150
    # the seeded root is the real source tweet by the real root user
    with open(data_path("all_topics.csv"), newline="", encoding="utf-8") as fh:
        topic = next(r for r in csv.DictReader(fh) if r["topic_name"] == "False_Business_0")
    with open(data_path("False_Business_0.csv"), newline="", encoding="utf-8") as fh:
        users = list(csv.DictReader(fh))
    assert f["root_text"] == topic["source_tweet"]
    assert users[f["root_author"]]["user_id"] == topic["root_user"]
    sim, real = f["sim_curves"], f["real_curves"]
    for k in ("scale", "depth", "max_breadth"):
        assert len(sim[k]) == len(real[k]) == H + 1
        assert _monotone(sim[k])
        assert f["nrmse"][k] == pytest.approx(nrmse(sim[k], real[k], H)) and np.isfinite(f["nrmse"][k])
    assert sim["scale"][0] == 1 and sim["depth"][0] == 0 and sim["max_breadth"][0] == 0
    assert all(b <= s - 1 for b, s in zip(sim["max_breadth"], sim["scale"]))
    assert all(d <= s - 1 for d, s in zip(sim["depth"], sim["scale"]))
    assert sim["scale"][-1] > 1  # it spread
    # scale = root author + distinct reposters of the root in the journal
    reposters = _query(
        db, "SELECT COUNT(DISTINCT user_id) FROM post WHERE original_post_id = ? AND kind = 1", (f["root_post"],)
    )[0][0]
    assert sim["scale"][-1] == 1 + reposters
    # per-step metrics: one row per step and tag, the real curve read at the end of each step
    rows = _query(db, "SELECT step, value FROM metrics WHERE tag = 'spread/real_scale' ORDER BY step")
    assert [s for s, _ in rows] == list(range(50))
    assert [v for _, v in rows] == [real["scale"][3 * (s + 1)] for s in range(50)]
    assert _query(db, "SELECT value FROM metrics WHERE tag = 'spread/nrmse_scale'")[0][0] == pytest.approx(
        f["nrmse"]["scale"]
    )
    meta = read_meta(db)
    assert meta["state"]["scenario"]["config"]["scenario"]["name"] == "twitter_information_spread"
    assert meta["scenario_figures"]["nrmse"]["depth"] == pytest.approx(f["nrmse"]["depth"])


def test_information_spread_attention_decay_acts():
    """A vanishing half-life leaves only the reposts of step 0 (age 0); none is plain IC."""
    f = load_scenario(
        "twitter_information_spread", {"policy.abm.cascade_half_life": 1e-6, "steps": 6, "metrics.enabled": False}
    ).run(db_path=":memory:")
    scale = f["sim_curves"]["scale"]
    assert scale[3] == scale[-1] > 1
    g = load_scenario(
        "twitter_information_spread", {"policy.abm.cascade_half_life": "none", "steps": 6, "metrics.enabled": False}
    ).run(db_path=":memory:")
    assert g["sim_curves"]["scale"][-1] > g["sim_curves"]["scale"][3]


# --------------------------------------------------------------------------- group polarization


def test_group_polarization_reduced(tmp_path):
    db = str(tmp_path / "pol.db")
    sc = load_scenario("group_polarization", {"steps": 4})
    f = sc.run(db_path=db)
    assert set(f["groups"]) == {"conservative", "progressive"}
    assert f["groups"]["conservative"]["users"] == f["groups"]["progressive"]["users"] == 196
    assert f["groups"]["conservative"]["initial_mean"] < 0 < f["groups"]["progressive"]["initial_mean"]
    assert f["steps"] == [0, 1, 2, 3]
    for tag, vals in f["series"].items():
        assert len(vals) == 4, tag
        if tag.endswith("share") or tag.endswith("esteban_ray") or tag.endswith("bimodality"):
            assert all(0 <= v <= 1 for v in vals), tag
        if tag.endswith("std"):
            assert all(v >= 0 for v in vals), tag
    # the dilemma is posted by the host, whom every user follows
    host = _query(db, "SELECT user_id FROM post WHERE post_id = ?", (f["topic_post"],))[0][0]
    n = _query(db, "SELECT COUNT(*) FROM user")[0][0]
    assert host == n - 1
    assert _query(db, "SELECT COUNT(*) FROM follow WHERE followee_id = ?", (host,))[0][0] == n - 1
    # opinions in the metrics table are the journal's opinions
    final = _query(db, "SELECT value FROM metrics WHERE tag = 'polarization/mean' AND step = 3")[0][0]
    assert final == pytest.approx(f["final"]["mean"], abs=1e-6)


def test_group_polarization_one_group():
    f = load_scenario(
        "group_polarization", {"steps": 2, "population.groups": ["197_baoshou.csv"], "metrics.enabled": False}
    ).run(db_path=":memory:")
    assert list(f["groups"]) == ["conservative"] and f["groups"]["conservative"]["users"] == 196


# --------------------------------------------------------------------------- herd effect


def test_herd_effect_reduced_matches_journal(tmp_path):
    db = str(tmp_path / "herd.db")
    f = load_scenario("reddit_herd_effect", {"steps": 10, "policy.comment_votes.vote_rate": 0.5}).run(db_path=db)
    pairs = json.loads(data_path("counterfactual_36.json").read_text(encoding="utf-8"))
    expected = {g: sum(p["RC_1"]["group"] == g for p in pairs) for g in ("up", "control", "down")}
    assert f["groups"] == expected
    assert f["seed_mean_score"] == {"up": 1.0, "control": 0.0, "down": -1.0}
    n_users = 36
    for g, ids in f["comment_ids"].items():
        marks = ",".join("?" * len(ids))
        likes = _query(db, f"SELECT COUNT(*) FROM comment_like WHERE comment_id IN ({marks})", ids)[0][0]
        dislikes = _query(db, f"SELECT COUNT(*) FROM comment_dislike WHERE comment_id IN ({marks})", ids)[0][0]
        assert f["final_mean_score"][g] == pytest.approx((likes - dislikes) / len(ids))
        by_users = sum(
            _query(db, f"SELECT COUNT(*) FROM {t} WHERE comment_id IN ({marks}) AND user_id < ?", [*ids, n_users])[0][0]
            for t in ("comment_like", "comment_dislike")
        )
        assert f["user_votes"][g] == by_users
    assert sum(f["user_votes"].values()) > 0
    assert len(f["series"]["up"]) == 10


def test_herd_rule_follows_the_shown_score():
    """With a huge herd weight every vote follows the sign of the shown score."""
    sc = load_scenario(
        "reddit_herd_effect",
        {
            "steps": 10,
            "users": 60,
            "metrics.enabled": False,
            "policy.comment_votes.vote_rate": 1.0,
            "policy.comment_votes.herd_weight": 50.0,
        },
    )
    f = sc.run(db_path=":memory:")
    assert f["run"]["users"] == 62  # 36 profiles + 24 synthetic + 2 seed accounts
    assert f["user_votes"]["up"] > 0 and f["user_votes"]["down"] > 0
    assert f["final_mean_score"]["up"] == pytest.approx(1 + f["user_votes"]["up"] / f["groups"]["up"])
    assert f["final_mean_score"]["down"] == pytest.approx(-1 - f["user_votes"]["down"] / f["groups"]["down"])
    assert f["ordered"]


# --------------------------------------------------------------------------- misinformation


def test_misinformation_reduced_matches_journal(tmp_path):
    db = str(tmp_path / "mis.db")
    f = load_scenario(
        "misinformation_1m",
        {"users": 3000, "steps": 6, "policy.abm.behaviour.repost_rate": 0.2, "policy.abm.behaviour.comment_rate": 0.1},
    ).run(db_path=db)
    roots = [r["post_id"] for r in f["per_root"]]
    labels = dict(_query(db, f"SELECT post_id, label FROM post WHERE post_id IN ({','.join('?' * 8)})", roots))
    for r in f["per_root"]:
        assert labels[r["post_id"]] == (1 if r["class"] == "rumour" else 0)
    assert [r["class"] for r in f["per_root"]] == ["news", "rumour"] * 4
    fam = """WITH RECURSIVE fam(post_id, root) AS (
               SELECT post_id, post_id FROM post WHERE post_id = ?
               UNION ALL SELECT p.post_id, fam.root FROM post p JOIN fam ON p.original_post_id = fam.post_id
               WHERE p.kind != 0)"""
    for r in f["per_root"]:
        reposts, quotes = (
            _query(db, fam + " SELECT COUNT(*) FROM fam JOIN post USING (post_id) WHERE kind = ?", (r["post_id"], k))[
                0
            ][0]
            for k in (1, 2)
        )
        comments = _query(db, fam + " SELECT COUNT(*) FROM comment JOIN fam USING (post_id)", (r["post_id"],))[0][0]
        assert (r["reposts"], r["quotes"], r["comments"]) == (reposts, quotes, comments)
        assert 0 <= r["reach"] <= min(r["impressions"], f["users"])
    total = sum(r["reposts"] + r["quotes"] + r["comments"] for r in f["per_root"])
    assert total > 0
    s = f["series"]
    assert _monotone(s["misinfo/news_posts"]) and _monotone(s["misinfo/rumour_reach"])
    assert s["misinfo/news_posts"][-1] + s["misinfo/rumour_posts"][-1] == total
    assert sum(s["misinfo/news_impressions"]) + sum(s["misinfo/rumour_impressions"]) == sum(
        r["impressions"] for r in f["per_root"]
    )


# --------------------------------------------------------------------------- CLI + TensorBoard


def test_cli_runs_a_scenario_with_sets(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    for flag, kw in (
        ("--steps", {"type": int}),
        ("--seed", {"type": int, "default": 0}),
        ("--db", {}),
        ("--logdir", {}),
    ):
        parser.add_argument(flag, default=kw.pop("default", None), **kw)
    parser.add_argument("--no-tensorboard", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    add_scenario_args(parser)
    db, figs, logdir = tmp_path / "cli.db", tmp_path / "figs.json", tmp_path / "tb"
    args = parser.parse_args(
        [
            "--scenario",
            "reddit_herd_effect",
            "--set",
            "users=40",
            "--set",
            "steps=3",
            "--db",
            str(db),
            "--logdir",
            str(logdir),
            "--quiet",
            "--figures",
            str(figs),
        ]
    )
    args.json = True  # the summary as one JSON line
    assert run_scenario_cli(args) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["scenario"] == "reddit_herd_effect" and line["users"] == 42 and line["steps"] == 3
    assert set(line["final_mean_score"]) == {"up", "control", "down"}
    assert json.loads(figs.read_text())["groups"] == line["groups"]
    meta = read_meta(db)
    assert meta["state"]["scenario"]["config"]["population"]["users"] == 40
    # TensorBoard: the scenario run holds the config and the herd curves
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir / "scenario"))
    acc.Reload()
    assert "herd/up_mean_score" in acc.Tags()["scalars"]
    assert len(acc.Scalars("herd/up_mean_score")) == 3
    assert any(t.startswith("config") for t in acc.Tags().get("tensors", []))
