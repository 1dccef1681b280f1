"""One report-threshold rule (issue 51, row 31): `envs.platform_rules.threshold_rule` is the rule
of both views, and each view's rule gives exactly what it gave before the merge.

The v0 moderator's view (`ReportThresholdModerator`, the platform's report counts of its slots)
and Moderator-v1's review queue (`train.tuned_baselines.queue_rule`, its observation) are
compared with their rules as they stood (written out below), on a real v0 env and on random
queue observations.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_layers import project_modules

from oasis_gym.envs.moderator_v0 import ModeratorEnv
from oasis_gym.envs.platform_rules import ReportThresholdModerator, threshold_rule
from oasis_gym.model import moderation
from oasis_gym.model.observations import MODERATOR_GLOBALS
from oasis_gym.scenarios.misinfo_stream import MisinfoScenario
from oasis_gym.train import tuned_baselines as tb

F = {name: i for i, name in enumerate(moderation.QUEUE_FEATURES)}


def old_queue_rule(remove_at, suspend_at, check_at, obs):
    """Moderator-v1's report-threshold rule as it stood (train/tuned_baselines.py, e385384)."""
    x = obs[:, : moderation.QUEUE * len(F)].reshape(len(obs), moderation.QUEUE, len(F))
    reports = np.expm1(x[..., F["log_reports"]])
    filled, verdict = x[..., F["filled"]] > 0, x[..., F["fact_check"]]
    repeat = x[..., F["author_moderated"]] >= 1
    codes = np.zeros(reports.shape, np.int64)
    found = verdict < 0
    remove = filled & ((reports >= remove_at[:, None]) | found) & (verdict <= 0)
    codes[remove] = moderation.REMOVE
    suspend = remove & (repeat | found) & ((reports >= suspend_at[:, None]) | found)
    codes[suspend] = moderation.REMOVE_AND_SUSPEND
    if check_at is not None:
        check = filled & (verdict == 0) & ~remove & (reports >= check_at[:, None])
        codes[check] = moderation.FACT_CHECK
    return codes


def queue_obs(k: int, rng) -> np.ndarray:
    """K random Moderator-v1 observations whose report counts, verdicts and flags vary."""
    x = rng.random((k, moderation.QUEUE, len(F)), dtype=np.float32)
    x[..., F["log_reports"]] = np.log1p(rng.integers(0, 12, (k, moderation.QUEUE))).astype(np.float32)
    x[..., F["filled"]] = rng.random((k, moderation.QUEUE)) < 0.8
    x[..., F["fact_check"]] = rng.integers(-1, 2, (k, moderation.QUEUE))
    x[..., F["author_moderated"]] = rng.integers(0, 3, (k, moderation.QUEUE))
    globals_ = rng.random((k, len(MODERATOR_GLOBALS)), dtype=np.float32)
    return np.concatenate([x.reshape(k, -1), globals_], axis=1)


@pytest.mark.parametrize("checks", [False, True])
def test_the_queue_rule_gives_what_moderator_v1s_rule_gave(checks):
    rng = np.random.default_rng(0)
    k = 64
    remove_at = rng.choice([1, 2, 3, 4, 6, 9, 99], k).astype(np.float64)
    suspend_at = np.maximum(remove_at, rng.choice([1, 2, 3, 5, 8, 99], k)).astype(np.float64)
    check_at = rng.choice([0, 1, 2, 4], k).astype(np.float64) if checks else None
    rule = tb.queue_rule(remove_at, suspend_at, check_at)
    for _ in range(5):
        obs = queue_obs(k, rng)
        got = rule(obs, 0)
        assert got.dtype == np.int64 and np.array_equal(got, old_queue_rule(remove_at, suspend_at, check_at, obs))
    assert {moderation.REMOVE, moderation.REMOVE_AND_SUSPEND} <= set(np.unique(got).tolist())


def test_the_v0_rule_gives_what_report_threshold_moderator_gave():
    scenario = MisinfoScenario(initial_true=8, initial_misinfo=4, stream_rate=1.5, n_outlets=5, n_misinfo_accounts=3)
    env = ModeratorEnv(users=80, max_cycles=6, activation=0.3, scenario=scenario)
    env.reset(seed=3)
    seen = set()
    for _ in range(5):
        agent = env.sim.platform_agents["moderator_0"]
        slots, ok = agent.slots, agent.slots >= 0
        reports = env.sim.platform.p_reports.a
        seen |= set(reports[slots[ok]].tolist())
        for threshold in range(4):
            for action in range(1, 5):
                old = np.zeros(len(slots), np.int64)  # ReportThresholdModerator.__call__ as it stood
                old[ok] = np.where(reports[slots[ok]] >= threshold, action, 0)
                got = ReportThresholdModerator(threshold, action)(env.sim)
                assert got.dtype == np.int64 and np.array_equal(got, old)
        env.step(np.zeros(env.action_space.shape, np.int64))
    env.close()
    assert len(seen) > 1  # the view held posts with different report counts


def test_threshold_rule_without_verdicts_or_suspensions():
    reports = np.array([[0, 1, 3, 5]])
    filled = np.array([[True, True, True, False]])
    remove, suspend, check = threshold_rule(reports, filled, np.array([3]))
    assert remove.tolist() == [[False, False, True, False]] and not suspend.any() and not check.any()
    remove, suspend, check = threshold_rule(reports, filled, np.array([3]), np.array([3]), np.array([1]))
    assert suspend.tolist() == remove.tolist() and check.tolist() == [[False, True, False, False]]


def test_one_ppo_driver_and_one_report_threshold_rule():
    """`train_ppo` and `threshold_rule` are defined once in the project, in their homes."""
    import ast

    homes = {"train_ppo": "oasis_gym.train.ppo", "threshold_rule": "oasis_gym.envs.platform_rules"}
    found: dict[str, list[str]] = {name: [] for name in homes}
    for module, path in project_modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name in homes:
                found[node.name].append(module)
    assert found == {name: [home] for name, home in homes.items()}
