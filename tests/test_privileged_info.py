"""No label in reach of a learner (issue 57): what is computed from the hidden truth leaves `info`.

Every v1-v4 task id, single and vector env (both autoreset modes): the default info has no
`PRIVILEGED_INFO` key; `privileged_info=True` adds them and changes no observation or reward.
No training path turns the flag on (a scan of every call in the package, the drivers, bench
and examples), and the evaluation still gets its numbers (it reads the task, not the env).
"""

from __future__ import annotations

import ast
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import oasis_gym
from oasis_gym.batched.tasks import PRIVILEGED_INFO
from oasis_gym.train.benchmark import evaluate

IDS = sorted(oasis_gym.GYMNASIUM_VECTOR_ENVS)
SMALL = {"users": 200, "max_steps": 3, "difficulty": "hard"}
ROOT = Path(__file__).resolve().parents[1]


def _play_single(env_id: str, privileged: bool):
    env = gym.make(env_id, privileged_info=privileged, **SMALL)
    env.action_space.seed(0)
    obs, info = env.reset(seed=9000)
    steps = [(obs, 0.0, info)]
    for _ in range(SMALL["max_steps"]):
        obs, reward, _, _, info = env.step(env.action_space.sample())
        steps.append((obs, reward, info))
    return steps


@pytest.mark.parametrize("env_id", IDS)
def test_a_single_envs_info_holds_no_label_unless_evaluation_asks(env_id):
    hidden, shown = _play_single(env_id, False), _play_single(env_id, True)
    for (obs, reward, info), (p_obs, p_reward, p_info) in zip(hidden, shown):
        assert not PRIVILEGED_INFO & set(info), env_id
        assert np.array_equal(obs, p_obs) and reward == p_reward  # the flag changes nothing else
        assert {k: v for k, v in p_info.items() if k not in PRIVILEGED_INFO} == info
    assert {"misinfo_impressions", "campaign", "satisfaction", "churned"} <= set(shown[-1][2])
    if "Moderator" in env_id:
        assert {"removed_true", "removed_misinfo", "suspended_true", "suspended_misinfo"} <= set(shown[-1][2])


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_a_vector_envs_infos_hold_no_label_unless_evaluation_asks(env_id, mode):
    runs = {}
    for privileged in (False, True):
        vec = gym.make_vec(env_id, num_envs=2, autoreset_mode=mode, privileged_info=privileged, **SMALL)
        vec.action_space.seed(1)
        seen = [vec.reset(seed=9000)]
        for _ in range(SMALL["max_steps"] + 1):  # through an episode's end (final_info under SAME_STEP)
            seen.append(vec.step(vec.action_space.sample()))
        runs[privileged] = seen
    for hidden, shown in zip(runs[False], runs[True]):
        assert all(np.array_equal(a, b) for a, b in zip(hidden[:-1], shown[:-1]))  # obs, rewards, ends
        info = hidden[-1]
        keys = set(info) | set(info.get("final_info", {}))
        assert not {k.lstrip("_") for k in keys} & PRIVILEGED_INFO, env_id
    assert "satisfaction" in runs[True][-1][-1] and "campaign" in runs[True][-1][-1]


def test_the_flag_is_true_or_false():
    with pytest.raises(ValueError, match="privileged_info must be True or False, got 1"):
        gym.make("oasis_gym/Moderator-v1", privileged_info=1, **SMALL)


def _flag_calls(path: Path, root: Path = ROOT) -> list[str]:
    """Where a file passes `privileged_info=` anything but False, or sets the attribute."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "privileged_info" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    # passing a constructor's own argument on (`privileged_info=privileged_info`) is its wiring
                    if not (isinstance(kw.value, ast.Name) and kw.value.id == "privileged_info"):
                        found.append(f"{path.relative_to(root)}:{node.lineno}")
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr == "privileged_info":
                    if not (isinstance(node.value, ast.Name) and node.value.id == "privileged_info"):
                        found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


# the one place that may turn the labels on, and why: `oasis-gym run --recommender RUN` plays a
# trained agent once and records what the hidden truth shows (misinformation seen, satisfaction,
# churn) in TensorBoard for a person to read; it trains nothing and imports no training driver
OBSERVERS = {"oasis_gym/cli/task_run.py"}


def test_no_training_path_turns_the_labels_on():
    """The drivers (train/: PPO, the SB3 and RLlib adapters, the benchmark), the envs, the core,
    bench/ and examples/: none passes privileged_info=True (evaluation reads the task itself),
    apart from `OBSERVERS`, which never train."""
    files = [p for d in ("train", "envs", "oasis_gym", "bench", "examples") for p in (ROOT / d).rglob("*.py")]
    assert len(files) > 100
    hits = [hit for p in files for hit in _flag_calls(p)]
    assert [h for h in hits if h.split(":")[0] not in OBSERVERS] == []
    for path in OBSERVERS:
        text = (ROOT / path).read_text()
        assert "train.ppo" not in text and "train_on_task" not in text and ".learn(" not in text, path


def test_the_scan_finds_a_flag_turned_on(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text("make(privileged_info=True)\nenv.privileged_info = True\nf(privileged_info=False)\n")
    assert sorted(_flag_calls(bad, tmp_path)) == ["probe.py:1", "probe.py:2"]


def test_the_evaluation_still_gets_its_numbers():
    seeds = (9000, 9001)
    result = evaluate(lambda obs: np.zeros((len(obs), 16), np.int64), "moderator", "medium", users=200, max_steps=3,
                      eval_seeds=seeds)  # fmt: skip
    for res in result["eval_sets"].values():
        for episode in res["runs"]:
            assert {"misinfo_impressions", "satisfaction", "churned"} <= set(episode)
