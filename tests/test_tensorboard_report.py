"""TensorBoard logger and SQLite metrics table agree; the report renders from a real run DB."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import plugin_data_pb2

from oasis_gym.actions import ActionType
from oasis_gym.cli.report import main as report_main
from oasis_gym.cli.report import make_report
from oasis_gym.metrics import formulas as F
from oasis_gym.metrics.tensorboard import (
    MetricsTable,
    TensorBoardLogger,
    create_schema,
    flatten_config,
    insert,
    read_metrics,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def load_events(logdir: Path) -> EventAccumulator:
    ea = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "histograms": 0, "tensors": 0})
    ea.Reload()
    return ea


def step_values(rng: np.random.Generator, step: int, n_users: int = 50) -> tuple[dict[str, float], np.ndarray]:
    """One step's metric dict computed by the real formulas from random state."""
    opinion = np.tanh(rng.normal(0.0, 0.5 + 0.1 * step, n_users))
    actions = rng.integers(0, 8, 40)
    parent = np.r_[-1, rng.integers(0, np.arange(1, 12))]
    followers = rng.poisson(3.0, n_users)
    values = F.action_count_scalars(actions)
    values |= F.cascade_summary(F.cascade_stats(parent))
    values |= F.opinion_summary(opinion)
    values["network/follower_gini"] = F.gini(followers)
    values["exposure/misinfo_share"] = (
        float("nan") if step == 1 else F.misinformation_share(rng.integers(0, 20, 100), rng.random(20) < 0.2)
    )
    return values, opinion


# --------------------------------------------------------------------------- TensorBoard + SQLite


def test_tensorboard_and_metrics_table_agree(tmp_path):
    rng = np.random.default_rng(0)
    logdir, db = tmp_path / "tb", tmp_path / "run.db"
    conn = sqlite3.connect(db)
    create_schema(conn)
    conn.commit()
    opinions = {}
    with TensorBoardLogger(logdir, flush_secs=1) as tb:
        for step in range(6):
            values, opinion = step_values(rng, step)
            tb.log_scalars(step, values)
            tb.log_histogram("opinion/values", opinion, step)
            opinions[step] = opinion
            with conn:  # the caller's per-step transaction
                insert(conn, step, values)
    conn.close()

    conn = sqlite3.connect(db)
    stored = read_metrics(conn)
    conn.close()
    ea = load_events(logdir)
    assert set(ea.Tags()["scalars"]) == set(stored)
    assert "actions/like_post" in stored and "cascade/max_depth" in stored
    for tag, (steps, vals) in stored.items():
        events = ea.Scalars(tag)
        finite = np.isfinite(vals)  # NaN: NULL in SQL, a gap in TensorBoard
        assert [e.step for e in events] == steps[finite].tolist()
        np.testing.assert_allclose([e.value for e in events], vals[finite], rtol=1e-6)
    steps, vals = stored["exposure/misinfo_share"]
    assert steps.tolist() == list(range(6)) and np.isnan(vals[1]) and np.isfinite(vals[0])

    hists = ea.Histograms("opinion/values")
    assert [h.step for h in hists] == list(range(6))
    for h in hists:
        x = opinions[h.step]
        hv = h.histogram_value
        assert hv.num == x.size
        assert hv.min == pytest.approx(x.min()) and hv.max == pytest.approx(x.max())
        assert hv.sum == pytest.approx(x.sum(), abs=1e-6)
        assert sum(hv.bucket) == x.size


def test_histogram_ignores_non_finite_and_empty(tmp_path):
    with TensorBoardLogger(tmp_path) as tb:
        tb.log_histogram("h", [1.0, np.nan, 3.0, np.inf], 0)
        tb.log_histogram("empty", [np.nan], 0)
    ea = load_events(tmp_path)
    assert ea.Tags()["histograms"] == ["h"]
    assert ea.Histograms("h")[0].histogram_value.num == 2


def test_log_config_text_and_hparams(tmp_path):
    cfg = {
        "env": {"num_users": 1000, "platform": "twitter", "lst": [1, 2]},
        "seed": 7,
        "deterministic": True,
        "lr": 3e-4,
        "unset": None,
    }
    assert flatten_config(cfg)["env.num_users"] == 1000
    with TensorBoardLogger(tmp_path) as tb:
        tb.log_config(cfg, metric_tags=("opinion/std",))
        tb.log_scalars(0, {"opinion/std": 0.5})
    ea = load_events(tmp_path)
    text = ea.Tensors("config/text_summary")[0].tensor_proto.string_val[0].decode()
    assert '"num_users": 1000' in text and '"platform": "twitter"' in text
    content = ea.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hp = start.session_start_info.hparams
    assert hp["env.num_users"].number_value == 1000
    assert hp["env.platform"].string_value == "twitter"
    assert hp["env.lst"].string_value == "[1, 2]"
    assert hp["deterministic"].bool_value is True
    assert hp["lr"].number_value == pytest.approx(3e-4)
    assert "unset" not in hp
    exp = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    assert [m.name.tag for m in exp.metric_infos] == ["opinion/std"]


def test_metrics_table_leaves_transactions_to_caller(tmp_path):
    db = tmp_path / "m.db"
    writer = sqlite3.connect(db)
    MetricsTable.create_schema(writer)
    writer.commit()
    idx = writer.execute("SELECT sql FROM sqlite_master WHERE type='index' AND tbl_name='metrics'").fetchone()
    assert idx is not None and "(tag, step)" in idx[0]
    reader = sqlite3.connect(db)
    MetricsTable.insert(writer, 3, {"a/x": 1.5, "a/y": float("nan")})
    assert reader.execute("SELECT COUNT(*) FROM metrics").fetchone()[0] == 0  # not committed
    writer.rollback()
    assert MetricsTable.read(writer) == {}
    MetricsTable.insert(writer, 4, {"a/x": 2.5, "a/y": -1.0})
    MetricsTable.insert(writer, 2, {"a/x": 0.5})
    writer.commit()
    got = MetricsTable.read(reader)
    assert got["a/x"][0].tolist() == [2, 4] and got["a/x"][1].tolist() == [0.5, 2.5]
    assert got["a/y"][0].tolist() == [4] and got["a/y"][1].tolist() == [-1.0]
    writer.close()
    reader.close()


# --------------------------------------------------------------------------- report

OASIS_USER = """CREATE TABLE user (user_id INTEGER PRIMARY KEY AUTOINCREMENT, agent_id INTEGER,
    user_name TEXT, name TEXT, bio TEXT, created_at DATETIME, num_followings INTEGER DEFAULT 0,
    num_followers INTEGER DEFAULT 0)"""
OASIS_POST = """CREATE TABLE post (post_id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER,
    original_post_id INTEGER, content TEXT DEFAULT '', quote_content TEXT, created_at DATETIME,
    num_likes INTEGER DEFAULT 0, num_dislikes INTEGER DEFAULT 0, num_shares INTEGER DEFAULT 0,
    num_reports INTEGER DEFAULT 0)"""


def build_run_db(path: Path, *, n_users: int = 30, n_steps: int = 5) -> dict:
    rng = np.random.default_rng(1)
    conn = sqlite3.connect(path)
    create_schema(conn)
    conn.execute(OASIS_USER)
    conn.execute(OASIS_POST)
    conn.execute("CREATE TABLE opinion (step INTEGER, user_id INTEGER, opinion REAL)")
    followers = rng.zipf(2.0, n_users).clip(max=500)
    followers[:3] = 0
    conn.executemany(
        "INSERT INTO user (agent_id, user_name, name, bio, created_at, num_followings, num_followers)"
        " VALUES (?, ?, ?, '', 0, 0, ?)",
        [(i, f"u{i}", f"User {i}", int(f)) for i, f in enumerate(followers)],
    )
    posts = [(1, None), (2, None), (3, 1), (4, 1), (5, 3), (6, 2)] + [(7, None)] * 4 + [(8, 1), (9, 1)]
    conn.executemany("INSERT INTO post (user_id, original_post_id, content, created_at) VALUES (?, ?, 'x', 0)", posts)
    last = {}
    for step in range(n_steps):
        values, opinion = step_values(rng, step, n_users)
        conn.executemany("INSERT INTO opinion VALUES (?, ?, ?)", [(step, u, float(o)) for u, o in enumerate(opinion)])
        insert(conn, step, values)
        last = values
    conn.commit()
    conn.close()
    return {"followers": followers, "last": last, "n_posts": len(posts)}


def assert_valid_png(path: Path) -> None:
    assert path.read_bytes()[:8] == PNG_MAGIC
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    assert np.ptp(img[..., :3]) > 0  # something was drawn


def test_make_report_full_run(tmp_path):
    db = tmp_path / "run.db"
    info = build_run_db(db)
    out = tmp_path / "report"
    written = make_report(db, out)
    names = {p.name for p in written}
    assert {
        "actions.png",
        "cascade.png",
        "opinion_heatmap.png",
        "follower_ccdf.png",
        "metrics_opinion.png",
        "metrics_network.png",
        "metrics_exposure.png",
        "summary.txt",
    } == names
    for p in written:
        assert p.parent == out and p.is_file()
        if p.suffix == ".png":
            assert_valid_png(p)
    text = (out / "summary.txt").read_text()
    assert "steps: 5 (step 0 to 4)" in text
    assert "users: 30" in text
    assert f"posts: {info['n_posts']} (6 reposts/quotes)" in text
    assert f"follower gini: {F.gini(info['followers']):.4g}" in text
    std = info["last"]["opinion/std"]
    assert f"  opinion/std: {std:.4g} at step 4" in text
    assert "action totals over the run:" in text
    assert "notes:" not in text


def test_make_report_tolerates_missing_and_empty_tables(tmp_path):
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    written = make_report(empty, tmp_path / "r1")
    assert [p.name for p in written] == ["summary.txt"]
    text = written[0].read_text()
    assert "no 'metrics' table" in text and "no 'opinion' table" in text
    assert "no 'user' table" in text and "no 'post' table" in text and "users: unknown" in text

    hollow = tmp_path / "hollow.db"
    conn = sqlite3.connect(hollow)
    create_schema(conn)
    conn.execute(OASIS_USER)
    conn.execute(OASIS_POST)
    conn.execute("CREATE TABLE opinion (step INTEGER, user_id INTEGER, opinion REAL)")
    conn.commit()
    conn.close()
    written = make_report(hollow, tmp_path / "r2")
    assert [p.name for p in written] == ["summary.txt"]
    text = written[0].read_text()
    assert "'metrics' table is empty" in text and "'opinion' table is empty" in text
    assert "'user' table is empty" in text and "users: 0" in text and "posts: 0" in text

    odd = tmp_path / "odd.db"
    conn = sqlite3.connect(odd)
    conn.execute("CREATE TABLE user (user_id INTEGER, name TEXT)")  # no num_followers
    conn.execute("INSERT INTO user VALUES (1, 'a')")
    create_schema(conn)
    insert(conn, 0, {"actions/like_post": 0.0, "opinion/std": 0.2})  # actions all zero
    conn.execute("CREATE TABLE opinion (step INTEGER, user_id INTEGER, opinion REAL)")
    conn.executemany("INSERT INTO opinion VALUES (?, ?, ?)", [(0, 1, 0.5), (0, 2, 0.5)])
    conn.commit()
    conn.close()
    written = make_report(odd, tmp_path / "r3")
    assert {p.name for p in written} == {"metrics_opinion.png", "opinion_heatmap.png", "summary.txt"}
    text = (tmp_path / "r3" / "summary.txt").read_text()
    assert "num_followers' unreadable" in text and "actions plot skipped" in text
    assert "users: 1" in text


def test_make_report_garbage_and_missing_file(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    written = make_report(junk, tmp_path / "r")
    assert [p.name for p in written] == ["summary.txt"]
    assert "not a readable SQLite database" in written[0].read_text()
    with pytest.raises(FileNotFoundError):
        make_report(tmp_path / "nope.db", tmp_path / "r")


def test_report_cli(tmp_path, capsys):
    db = tmp_path / "run.db"
    build_run_db(db, n_users=12, n_steps=2)
    assert report_main([str(db), str(tmp_path / "cli")]) == 0
    printed = capsys.readouterr().out.split()
    assert any(p.endswith("summary.txt") for p in printed)
    assert all(Path(p).is_file() for p in printed)


def test_action_tags_from_real_codes_reach_the_report(tmp_path):
    db = tmp_path / "a.db"
    conn = sqlite3.connect(db)
    create_schema(conn)
    for step in range(3):
        codes = np.array([ActionType.LIKE_POST] * (step + 1) + [ActionType.REPOST])
        insert(conn, step, F.action_count_scalars(codes))
    conn.commit()
    conn.close()
    make_report(db, tmp_path / "r")
    text = (tmp_path / "r" / "summary.txt").read_text()
    assert "  like_post: 6" in text and "  repost: 3" in text
    assert "  follow:" not in text  # zero totals are left out
    assert_valid_png(tmp_path / "r" / "actions.png")


def test_opinion_grid_carries_unchanged_users_forward(tmp_path):
    """The journal's opinion table lists only users whose opinion changed; the heatmap must
    still show every user's current opinion at each step."""
    from oasis_gym.metrics.report import opinion_grid

    conn = sqlite3.connect(tmp_path / "o.db")
    conn.execute("CREATE TABLE user_profile (user_id INTEGER, opinion REAL)")
    conn.execute("CREATE TABLE opinion (step INTEGER, user_id INTEGER, opinion REAL)")
    conn.executemany("INSERT INTO user_profile VALUES (?, ?)", [(0, -0.99), (1, -0.99), (2, 0.99), (3, 0.99)])
    conn.executemany("INSERT INTO opinion VALUES (?, ?, ?)", [(1, 0, 0.99), (3, 1, 0.99), (3, 2, -0.99)])
    steps, edges, grid = opinion_grid(conn)
    assert steps.tolist() == [1, 3]
    assert grid[0, 0] == 0.25 and grid[0, -1] == 0.75  # step 1: one user moved up, three unchanged
    assert grid[1, 0] == 0.25 and grid[1, -1] == 0.75  # step 3: one moved up, one moved down
    assert np.allclose(grid.sum(axis=1), 1.0)
