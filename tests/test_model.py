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
    clashes = {(m, n) for m in modules if m not in model for n in _defined_names(modules[m]) & public}
    assert not clashes, f"defined again outside oasis_gym.model: {sorted(clashes)}"
    # the platform path's old name for the seed floor is gone
    for m, path in modules.items():
        assert "TRAIN_SEED_MIN" not in path.read_text(encoding="utf-8"), m
