"""Pins of the v1 and v2 tasks through the batched episode runner, under a test id named after
each id and tier (e.g. `test_runner_pinned[Recommender-v1-medium]`).

`tests/test_pins.py` pins every registered id and tier through the public API; these pin the
same tasks through `train.tuned_baselines.run_episodes` (what the baselines and the benchmark
play): 2 episodes (seeds 11, 12; 300 users, population 0, 30 steps) under a fixed action.
The numbers are those published before the next version came (v1's at 2b56377, before v2;
v2's at d48ed1c, before v3), moved here unchanged from the files named after the next version
(`test_recommender_v2.py`, `test_recommender_v3.py`): a change here is a change of that version.
"""

from __future__ import annotations

import numpy as np
import pytest

from oasis_gym.train import tuned_baselines as tb

ENV = {"users": 300, "population_seed": 0, "max_steps": 30}
SEEDS = [11, 12]

# Recommender-vN: the default ranking; returns, then engagements (v2: then misinformation impressions)
# Moderator-v1: a code cycling with the step (t % 3) on every slot; returns, then misinformation impressions
PINNED = {
    "Recommender-v1-medium": [53.866666831076145, 66.10000023245811, 9.81333333333333, 11.143333333333333],
    "Recommender-v1-hard": [54.645481169223785, 65.27111431956291, 9.806666666666667, 10.923333333333334],
    "Moderator-v1-medium": [-21.44333327934146, -12.496666747611016, 0.8266666666666668, 0.44666666666666677],
    "Moderator-v1-hard": [-21.76333336532116, -16.06999997794628, 0.8533333333333333, 0.6133333333333333],
    "Recommender-v2-medium": [105.29999981820583, 129.9333342909813, 15.203333333333331, 17.22, 2.336666666666667,
                              2.1133333333333333],
    "Recommender-v2-hard": [101.70855484902859, 127.76331454515457, 15.3, 17.206666666666667, 2.5266666666666673,
                            2.173333333333333],
}  # fmt: skip


def run_case(case: str) -> list[float]:
    """The pinned numbers of one case (an id's name and tier, e.g. `Recommender-v2-hard`)."""
    name, difficulty = case.rsplit("-", 1)
    task, version = name.split("-v")
    env = {**ENV, "difficulty": difficulty}
    if task == "Moderator":
        m = tb.run_episodes("moderator", env, SEEDS, lambda o, t: np.full((len(o), 16), t % 3, np.int64))
        return [*m["return"], *m["misinfo_impressions"]]
    if version == "1":
        a = tb.default_action()
        r = tb.run_episodes("recommender", env, SEEDS, lambda o, t: np.tile(a, (len(o), 1)))
        return [*r["return"], *r["engagements"]]
    a = tb.default_action("per_user", 8)
    r = tb.run_episodes("recommender", {**env, "version": 2}, SEEDS, lambda o, t: np.tile(a, (len(o), 1)))
    return [*r["return"], *r["engagements"], *r["misinfo_impressions"]]


@pytest.mark.parametrize("case", sorted(PINNED))
def test_runner_pinned(case):
    """The runner's episodes of this id and tier give the published numbers (rel 1e-9)."""
    assert run_case(case) == pytest.approx(PINNED[case], rel=1e-9)
