"""`python -m oasis_gym.train.rllib`: bad input and a folder that is not its own are refused
in one line (exit code 2) before Ray starts; the learning curve is written under the output
rule. Needs no RLlib: it runs in the main venv (RLlib's training: tests/test_rllib*.py)."""

from __future__ import annotations

import json

import pytest

from oasis_gym.train import rllib
from oasis_gym.train.outputs import rllib_output


class RayStarted(Exception):
    """Raised in place of starting Ray: the command got past its checks."""


@pytest.fixture
def no_ray(monkeypatch):
    """`start_ray` raises `RayStarted` (nothing is trained)."""

    def start(*args, **kwargs):
        raise RayStarted

    monkeypatch.setattr(rllib, "start_ray", start)


def _refused(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        rllib.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2
    return err[-1]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["moderator", "--version", "3"], "--version of the moderator must be one of [1, 2]"),
        (["recommender", "--address", "head-node"], "HOST:PORT"),
        (["recommender", "--iterations", "0"], "argument --iterations"),
        (["recommender", "--env-runners", "-1"], "argument --env-runners"),
        (["recommender", "--envs-per-runner", "0"], "argument --envs-per-runner"),
        (["recommender", "--train-batch-size", "0"], "argument --train-batch-size"),
        (["recommender", "--seed", "-1"], "argument --seed"),
        (["recommender", "--users", "0"], "argument --users"),
        (["recommender", "--with-moderator"], "unrecognized arguments: --with-moderator"),
        (["sleeper"], "argument task: invalid choice"),
    ],
)
def test_the_vector_env_refuses_bad_input_in_one_line(capsys, no_ray, argv, says):
    assert says in _refused(capsys, ["vector", *argv])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--with-moderator", "--moderator-rule", "oracle"], "not allowed with argument --with-moderator"),
        (["--moderator-rule", "strict"], "argument --moderator-rule: invalid choice"),
        (["--max-cycles", "0"], "argument --max-cycles"),
        (["--address", "ray://:1"], "HOST:PORT"),
        (["--out", ""], "argument --out"),
        (["recommender"], "unrecognized arguments: recommender"),
    ],
)
def test_the_platform_env_refuses_bad_input_in_one_line(capsys, no_ray, argv, says):
    assert says in _refused(capsys, ["platform", *argv])


def test_an_env_it_lacks_is_refused_in_one_line(capsys):
    assert "invalid choice: 'grid'" in _refused(capsys, ["grid"])


def test_a_folder_holding_a_users_file_of_a_curve_name_is_refused_untouched(tmp_path, capsys, no_ray):
    (tmp_path / "rllib_curve.json").write_text("mine")
    line = _refused(capsys, ["platform", "--out", str(tmp_path), "--overwrite"])
    assert "is not an output of oasis-gym rllib" in line
    assert (tmp_path / "rllib_curve.json").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rllib_curve.json"]


def test_the_curve_is_written_and_replaced_only_with_overwrite(tmp_path, capsys, no_ray):
    rows = [
        {"iteration": i, "episode_return_mean": -1.0 + i, "num_env_steps_sampled_lifetime": 24.0 * i,
         "agent_episode_returns_mean": {"moderator_0": -1.0 * i, "recommender_0": 0.5 * i}}
        for i in (1, 2)
    ]  # fmt: skip
    output = rllib_output(tmp_path / "curve").check()
    try:
        json_path, png_path = rllib.write_curve(rows, output, "RLlib PPO, platform agents", ("recommender_0",))
    finally:
        output.release()
    assert json.loads(json_path.read_text()) == rows
    assert png_path.read_bytes()[:4] == b"\x89PNG"
    assert "pass --overwrite" in _refused(capsys, ["vector", "recommender", "--out", str(tmp_path / "curve")])
    with pytest.raises(RayStarted):  # its own earlier curve: replaced with --overwrite
        rllib.main(["vector", "recommender", "--out", str(tmp_path / "curve"), "--overwrite"])
    assert json.loads(json_path.read_text()) == rows  # (nothing trained: the curve stays)
