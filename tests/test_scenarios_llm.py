"""Every paper scenario runs end to end with LLM core users (`policy.kind = "hybrid"`) on CPU:
a tiny random Llama (tests/llm_fixtures.py, no download) behind the transformers backend, at
reduced size. The model is random, so this checks the wiring (routes, interviews, figures,
evidence), not what LLM users would do."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oasis_gym.scenarios import load_scenario
from oasis_gym.scenarios.effects import effects

pytest_plugins = ["llm_fixtures"]

REDUCED = {
    "twitter_information_spread": {"steps": 2},
    "group_polarization": {"steps": 2, "interview.every": 2, "population.groups": ["197_baoshou.csv"]},
    "reddit_herd_effect": {"steps": 2, "users": 36, "population.activation": 1.0},
    "misinformation_1m": {"steps": 2, "users": 600, "population.core_activation": 1.0},
}


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """The tiny model's matmuls are small: on a shared 2-core machine torch's thread pool
    only oversubscribes the cores (measured: ~10x slower under load)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("name", sorted(REDUCED))
def test_scenario_runs_with_llm_core_users(name, tiny_model_dir, tmp_path):
    sc = load_scenario(
        name,
        {
            **REDUCED[name],
            "metrics.enabled": False,
            "policy.kind": "hybrid",
            "policy.core_users": 2,
            "policy.llm.backend": "transformers",
            "policy.llm.model": str(tiny_model_dir),
            "policy.llm.backend_options": {"device": "cpu"},
            "policy.llm.options": {"max_tokens": 32, "interview_max_tokens": 16},
        },
    )
    env = sc.make_env()
    policy = sc.make_policy(env)
    from oasis_gym.policies.hybrid import HybridPolicy

    assert isinstance(policy, HybridPolicy) and len(policy.routes[0][1]) == 2
    env.close()
    llm, served = policy.routes[0][0], []
    act = llm.act
    llm.act = lambda e, obs: (served.append(len(obs)), act(e, obs))[1]
    f = sc.run(db_path=str(tmp_path / f"{name}.db"), policy=policy)
    assert f["run"]["steps"] == 2 and f["run"]["policy"] == "hybrid"
    assert sum(served) > 0  # the LLM users did act
    assert "LLM users" in f["summary"]["evidence"]["users"]
    eff = effects(sc.kind, f)
    assert eff and all(isinstance(v, float) for v in eff.values())
    if name == "group_polarization":  # LLM users were interviewed each step
        assert f["interviews"] == 2
        assert all(math.isfinite(v) for v in (eff["d_esteban_ray"], eff["d_mean_abs_opinion"]))
    if name == "misinformation_1m":
        assert np.isfinite(eff["news_reach"])
