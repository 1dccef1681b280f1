"""TensorBoard opens on the main curves: a Custom Scalars layout, read back from the event file."""

from __future__ import annotations

import re

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.custom_scalar import layout_pb2

from oasis_gym.envs import twitter_v0
from oasis_gym.metrics import MetricsRecorder
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
