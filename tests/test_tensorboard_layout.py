"""TensorBoard opens on the main curves: a Custom Scalars layout, read back from the event file."""

from __future__ import annotations

import json
import re

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.custom_scalar import layout_pb2

from oasis_gym.envs import twitter_v0
from oasis_gym.metrics import MetricsRecorder, read_metrics
from oasis_gym.metrics.tensorboard import MAIN_CURVES


def test_a_run_writes_the_main_curves_layout_and_every_chart_matches_a_logged_tag(tmp_path):
    env = twitter_v0.parallel_env(users=30, recsys="random", activation=0.5, db_path=str(tmp_path / "r.db"))
    env.reset(seed=0)
    rec = MetricsRecorder(str(tmp_path / "tb"), every=1).attach(env.sim)
    rec.on_reset(env.sim)
    for _ in range(3):
        env.step({})
    rec.close()
    env.close()
    acc = EventAccumulator(str(tmp_path / "tb" / "episode_0"), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    assert "custom_scalars__config__" in acc.PluginTagToContent("custom_scalars")  # the dashboard finds it
    layout = layout_pb2.Layout()
    layout.ParseFromString(acc.Tensors("custom_scalars__config__")[0].tensor_proto.string_val[0])
    sections = {c.title: {ch.title: list(ch.multiline.tag) for ch in c.chart} for c in layout.category}
    assert sections == {s: dict(charts) for s, charts in MAIN_CURVES.items()}
    tags = acc.Tags()["scalars"]
    for section, charts in sections.items():
        if section == "2 exposure":  # this run's feeds hold no labelled posts: the shares are NaN, not logged
            continue
        for chart, patterns in charts.items():
            if chart == "cascade size and shape":  # NaN, not logged, before any cascade spreads
                continue
            matched = [t for t in tags if any(re.fullmatch(p, t) for p in patterns)]
            assert matched, f"chart {section} / {chart} matches no logged tag"
    idle = sections["5 actions"]["actions per step (do_nothing apart)"]
    assert not re.fullmatch(idle[0], "actions/do_nothing") and re.fullmatch(idle[0], "actions/like_post")


def test_at_the_end_of_an_episode_tensorboard_shows_the_main_curves_without_the_series_that_stayed_zero(tmp_path):
    """TensorBoard opened on 24 action cards, many flat zero: the recorder writes the layout again
    at the episode's end with the tags that had a value other than 0, and TensorBoard's own Custom
    Scalars plugin (over its real data provider) serves that last layout."""
    from tensorboard import context
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.custom_scalar.custom_scalars_plugin import CustomScalarsPlugin

    env = twitter_v0.parallel_env(users=30, recsys="random", activation=0.5, db_path=str(tmp_path / "r.db"))
    obs, _ = env.reset(seed=0)
    rec = MetricsRecorder(str(tmp_path / "tb"), every=1).attach(env.sim)
    rec.on_reset(env.sim)
    for _ in range(3):  # every active user does nothing, or likes a post (type 13)
        obs, *_ = env.step({a: {"type": 0 if i % 2 else 13, "post": 0} for i, a in enumerate(obs)})
    rec.close()
    values = read_metrics(env.sim.journal.conn)
    env.close()
    zero = {t for t, (_, v) in values.items() if not np.any(np.nan_to_num(v) != 0)}
    assert {"actions/mute", "invalid/self_target"} <= zero  # (this run's flat series)
    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(tmp_path / "tb"))
    mux.Reload()
    tb = base_plugin.TBContext(
        data_provider=data_provider.MultiplexerDataProvider(mux, str(tmp_path / "tb")),
        multiplexer=mux,
        logdir=str(tmp_path / "tb"),
    )
    served = json.loads(CustomScalarsPlugin(tb).layout_impl(context.RequestContext(), ""))
    charts = {c["title"]: c["multiline"]["tag"] for s in served["category"] for c in s["chart"]}
    shown = {t for tags in charts.values() for t in tags}
    assert shown and not shown & zero and shown <= set(values)  # explicit tags, none of them flat zero
    assert charts["do_nothing per step"] == ["actions/do_nothing"]
    assert charts["actions per step (do_nothing apart)"] == ["actions/like_post"]
    assert "rejected actions by reason" not in charts or not set(charts["rejected actions by reason"]) & zero
