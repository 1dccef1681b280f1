"""Scenario experiment machinery: CIs, sweeps (tables, PNG, CLI), held-out calibration split,
the generated follow graph, evidence statements and the content-aware sharing rule. These
check the machinery, never that a finding comes out a given way."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from oasis_gym import cli
from oasis_gym.scenarios import Scenario, load_scenario
from oasis_gym.scenarios.effects import effects
from oasis_gym.scenarios.evidence import evidence
from oasis_gym.scenarios.graphs import price_follow_graph
from oasis_gym.scenarios.spread_calibration import calibrate_heldout, split_errors, window_nrmse
from oasis_gym.scenarios.stats import mean_ci, ordering_share, t975
from oasis_gym.scenarios.sweep import parse_param, plan_sweep, resolve_key, run_sweep

HERD_SMALL = {"users": 36, "steps": 2}


# --------------------------------------------------------------------------- stats


def test_mean_ci_is_the_t_interval():
    x = [1.0, 2.0, 4.0, 7.0]
    m, sd = np.mean(x), np.std(x, ddof=1)
    ci = mean_ci(x + [math.nan])  # NaN seeds are left out
    assert ci["n"] == 4 and ci["mean"] == pytest.approx(m) and ci["sd"] == pytest.approx(sd)
    assert ci["hi"] - m == pytest.approx(3.182 * sd / 2) and m - ci["lo"] == pytest.approx(3.182 * sd / 2)
    assert t975(9) == 2.262 and t975(1000) == 1.96 and 2.0 < t975(50) < 2.021
    one = mean_ci([3.0])
    assert one["mean"] == 3.0 and math.isnan(one["lo"]) and mean_ci([])["n"] == 0
    with pytest.raises(ValueError):
        t975(0)


def test_ordering_share():
    assert ordering_share([[3, 2, 1], [3, 3, 1], [1, 2, 3], [2, math.nan, 0]]) == 0.25
    assert math.isnan(ordering_share([]))


# --------------------------------------------------------------------------- sweep


def test_parse_param_and_resolve_key():
    assert parse_param("rho=0.4:1.2:5") == ("rho", [0.4, 0.6, 0.8, 1.0, 1.2])
    assert parse_param("k=1,2,4") == ("k", [1, 2, 4])
    assert parse_param("policy.abm.diffusion=none,content_aware")[1] == ["none", "content_aware"]
    assert parse_param("users=10:40:4") == ("users", [10, 20, 30, 40])  # whole numbers stay whole
    assert parse_param("users=5:1:3") == ("users", [5, 3, 1])
    assert parse_param("rho=0:1:3") == ("rho", [0.0, 0.5, 1.0])
    assert parse_param("users=1:4:3")[1] == [1.0, 2.5, 4.0]
    for bad in ("rho", "rho=", "rho=1:2", "rho=a:b:3", "rho=1:2:0", "k=1,,2", "k=1,2,", "k=,1"):
        with pytest.raises(ValueError):
            parse_param(bad)
    cfg = load_scenario("group_polarization").config
    assert resolve_key(cfg, "rho") == "policy.abm.opinion_params.rho"
    assert resolve_key(cfg, "a.b") == "a.b"
    with pytest.raises(KeyError, match="unknown"):
        resolve_key(cfg, "no_such_parameter")
    with pytest.raises(KeyError, match="ambiguous"):
        resolve_key(cfg, "kind")  # scenario.kind and policy.kind


def test_sweep_writes_tables_and_png_that_agree(tmp_path):
    out = tmp_path / "sw"
    res = run_sweep("reddit_herd_effect", ["herd_weight=0,0.5"], seeds=3, seed_start=50, sets=HERD_SMALL, out=out)
    rows = list(csv.DictReader(open(out / "runs.csv")))
    assert len(rows) == 6 and {r["seed"] for r in rows} == {"50", "51", "52"}
    for pt in res["points"]:
        hw = pt["point"]["policy.comment_votes.herd_weight"]
        vals = [float(r["user_up_minus_control"]) for r in rows if float(r["policy.comment_votes.herd_weight"]) == hw]
        assert pt["effects"]["user_up_minus_control"] == pytest.approx(mean_ci(vals))  # table = its runs
        order = [
            [float(r[f"user_score_{g}"]) for g in ("up", "control", "down")]
            for r in rows
            if float(r["policy.comment_votes.herd_weight"]) == hw
        ]
        assert pt["ordered_share"] == pytest.approx(ordering_share(order))
    summary = list(csv.DictReader(open(out / "summary.csv")))
    assert {r["effect"] for r in summary} >= {"user_up_minus_control", "user_score_down"}
    assert json.loads((out / "summary.json").read_text())["seeds"] == [50, 51, 52]
    assert (out / "effect_vs_herd_weight.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # same seeds, same results; an earlier sweep is not overwritten without the flag
    again = run_sweep("reddit_herd_effect", ["herd_weight=0,0.5"], seeds=3, seed_start=50, sets=HERD_SMALL)
    assert again["points"][1]["effects"] == res["points"][1]["effects"]
    with pytest.raises(FileExistsError):
        run_sweep("reddit_herd_effect", ["herd_weight=0"], seeds=1, sets=HERD_SMALL, out=out)


def test_sweep_uses_the_scenario_table():
    plan = plan_sweep("group_polarization")
    assert plan["parsed"] == [("policy.abm.opinion_params.rho", [0.4, 0.6, 0.8, 1.0, 1.2])]
    assert len(plan["seeds"]) == 10 and len(plan["grid"]) == 5


def test_cli_sweep(tmp_path, capsys):
    out = tmp_path / "cli_sweep"
    assert (
        cli.main(
            [
                "sweep",
                "reddit_herd_effect",
                "--param",
                "herd_weight=0.2",
                "--seeds",
                "2",
                "--set",
                "users=36",
                "--steps",
                "2",
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["points"] == 1 and last["seeds"] == 2 and (out / "summary.csv").is_file()


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--param", "rho"], "key=lo:hi:n"),
        (["--param", "nope=1,2"], "unknown parameter"),
        (["--param", "rho=1:2:3", "--seeds", "0"], "--seeds"),
        (["--set", "nokey=1"], "unknown setting"),
    ],
)
def test_cli_sweep_bad_arguments_one_line_exit_2(argv, needle, tmp_path, capsys):
    try:
        code = cli.main(["sweep", "group_polarization", "--out", str(tmp_path / "x"), *argv])
    except SystemExit as stop:  # a value out of its option's range (--seeds 0): refused by the parser
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in err


def test_cli_sweep_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "keep"
    out.mkdir()
    (out / "summary.csv").write_text("mine")
    assert cli.main(["sweep", "reddit_herd_effect", "--param", "herd_weight=0", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err and (out / "summary.csv").read_text() == "mine"
    with pytest.raises(SystemExit) as e:  # argparse: bad type
        cli.main(["sweep", "reddit_herd_effect", "--seeds", "ten"])
    assert e.value.code == 2


# --------------------------------------------------------------------------- held-out calibration


def test_window_nrmse_and_split():
    sim, real = [0, 1, 2, 3, 4], [0, 1, 2, 4, 6]
    assert window_nrmse(sim, real, 2, 4) == pytest.approx(math.sqrt((0 + 1 + 4) / 3) / 6)
    assert window_nrmse(sim, real, 0, 1) == 0.0
    assert window_nrmse([5], [1, 2], 0, 3) == pytest.approx(math.sqrt((16 + 9 + 9 + 9) / 4) / 2)  # padded
    fig = {
        "fit_minutes": 2,
        "nrmse_minutes": 4,
        "sim_curves": {k: sim for k in ("scale", "depth", "max_breadth")},
        "real_curves": {k: real for k in ("scale", "depth", "max_breadth")},
    }
    e = split_errors(fig)
    assert e["insample_nrmse_scale"] == pytest.approx(window_nrmse(sim, real, 0, 2))
    assert e["heldout_nrmse_depth"] == pytest.approx(window_nrmse(sim, real, 2, 4))


def test_calibrate_heldout_keeps_seeds_apart():
    with pytest.raises(ValueError, match="overlap"):
        calibrate_heldout({"policy.abm.cascade_p": [1.0]}, [1, 2], [2, 3])
    res = calibrate_heldout(
        {"policy.abm.cascade_p": [0.5, 1.0]}, [100], [0, 1], {"steps": 8, "figures.fit_minutes": 12}
    )
    assert res["best"]["policy.abm.cascade_p"] in (0.5, 1.0) and len(res["grid"]) == 2
    best = min(res["grid"], key=lambda r: r["insample_nrmse_scale"])
    assert res["best"] == best["point"]  # chosen on the in-sample error only
    assert res["eval"]["heldout_nrmse_scale"]["n"] == 2 and res["eval_seeds"] == [0, 1]


# --------------------------------------------------------------------------- generated follow graph


def test_price_graph_is_not_a_star():
    src, dst = price_follow_graph(111, first=32, mean_following=3.0, seed=0)
    assert len(src) and not np.any(src == dst)
    assert len(np.unique(src * 111 + dst)) == len(src)
    assert np.mean(dst == 32) < 0.5
    # some user is more than 2 follow hops from the root (a cascade can grow deeper than 2)
    dist = np.full(111, -1)
    dist[32], frontier = 0, [32]
    while frontier:
        nxt = np.unique(src[np.isin(dst, frontier)])
        nxt = nxt[dist[nxt] < 0]
        dist[nxt] = dist[frontier[0]] + 1
        frontier = nxt.tolist()
    assert dist.max() > 2
    a, b = price_follow_graph(111, 32, 3.0, 0)
    assert np.array_equal(a, src) and np.array_equal(b, dst)


def test_information_spread_with_generated_graph(shared_data):
    sc = load_scenario(
        "twitter_information_spread", {"population.follow_graph": "generated", "steps": 5, "metrics.enabled": False}
    )
    env = sc.make_env()
    pop = env.sim.population
    root_author = pop.previous_posts[0][0]
    assert np.mean(pop.follow_dst == root_author) < 0.5
    env.close()
    f = sc.run(db_path=":memory:", seed=3)
    assert set(effects("information_spread", f)) >= {"insample_nrmse_scale", "heldout_nrmse_depth"}


# --------------------------------------------------------------------------- evidence


def test_every_scenario_states_its_evidence(tmp_path):
    for name in ("twitter_information_spread", "group_polarization", "reddit_herd_effect", "misinformation_1m"):
        ev = evidence(load_scenario(name).config)
        assert ev["mechanism"] != "not stated" and ev["level"] != "not stated" and ev["hand_set"]
        assert "rule-based ABM" in ev["users"]
    hy = evidence(load_scenario("reddit_herd_effect", {"policy.kind": "hybrid"}).config)
    assert "LLM users" in hy["users"] and "LLM users decide" in hy["level"]
    logdir = tmp_path / "tb"
    f = load_scenario("reddit_herd_effect", HERD_SMALL).run(db_path=str(tmp_path / "h.db"), logdir=logdir)
    assert f["summary"]["evidence"]["mechanism"].startswith("Rule-based users vote")
    from oasis_gym.platform.journal import read_meta

    assert read_meta(str(tmp_path / "h.db"))["scenario_figures"]["evidence"] == f["evidence"]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir / "scenario"))
    acc.Reload()
    assert any(t.startswith("evidence") for t in acc.Tags().get("tensors", []))


# --------------------------------------------------------------------------- content-aware sharing


def test_moral_emotional_lexicon_and_signature():
    from oasis_gym.policies.content_share import moral_emotional_count, word_signature

    assert moral_emotional_count("They BETRAYED us, shameful and evil!") == 3
    assert moral_emotional_count("Single sink lies") == 1  # 'sin' whole-word only; 'lies' counts
    assert moral_emotional_count("The weather is mild today") == 0
    a, b = word_signature("phones update battery"), word_signature("battery update phones")
    assert np.array_equal(a, b) and a.dtype == np.uint64


def test_content_aware_users_ignore_stance():
    """Swapping the configured stances of news and rumours changes nothing: the users read the
    texts, not the stance (nor the truth label)."""
    base = {"users": 3000, "steps": 6, "metrics.enabled": False}
    f1 = load_scenario("misinformation_1m", base).run(db_path=":memory:", seed=4)
    posts = load_scenario("misinformation_1m").config["posts"]
    swapped = [{**p, "news_stance": p["rumour_stance"], "rumour_stance": p["news_stance"]} for p in posts]
    sc = load_scenario("misinformation_1m", base)
    f2 = Scenario({**sc.config, "posts": swapped}, sc.source).run(db_path=":memory:", seed=4)
    assert f1["totals"] == f2["totals"]
    assert f1["totals"]["news"]["reposts"] + f1["totals"]["rumour"]["reposts"] > 0


def test_content_aware_novelty_falls_on_repeat():
    """A user served the same post twice sees its words as known: the second decision uses novelty 0."""
    from oasis_gym.policies.abm import ABMConfig
    from oasis_gym.policies.content_share import ContentAwareABM, ContentParams

    sc = load_scenario("misinformation_1m", {"users": 500, "steps": 1, "metrics.enabled": False})
    env = sc.make_env(max_cycles=2)
    env.reset(seed=0)
    pol = ContentAwareABM(
        ABMConfig(opinion_model=None, diffusion="content_aware"),
        content=ContentParams(base_share=1.0, novelty_weight=50.0),
    )
    pol.reset(env, np.arange(env.sim.platform.n_users), 0)
    obs = env.sim.observe(np.arange(20))
    first = pol.act(env, obs)
    has_feed = obs.mask_post.any(1)
    assert np.all(first.type[has_feed] != 0)  # novel: p = 1
    second = pol.act(env, obs)
    assert np.all(second.type[has_feed] == 0)  # seen: p = exp(-50)
    env.close()
