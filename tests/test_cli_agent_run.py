"""`oasis-gym run --recommender RUN` / `--moderator RUN` (issue 52): a policy trained for a few
hundred steps by `oasis-gym train` plays its task's platform from the command line, journaled,
with TensorBoard curves of the agent's episode (`metrics/agent_episode.py`) read back from the
event files, and `oasis-gym report` on the journal. Real subprocesses, SQLite files, event files
and signals; bad input is one line and exit code 2 before any compute (the tripwire of
tests/test_guarantees_cli_inputs.py)."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from llm_fixtures import tiny_model_dir  # noqa: F401 - a session fixture (a tiny real model)
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from test_guarantees_cli_inputs import TRIPPED, oasis_cli
from test_guarantees_interrupts import again, one_line, stopped
from test_transfer import ENVS, runs  # noqa: F401 - `runs`: the module fixture (oasis-gym train, both tasks)

from oasis_gym.metrics.agent_episode import INFO_TAGS, AgentEpisodeRecorder
from oasis_gym.model.moderation import ACTIONS
from oasis_gym.model.ranking import CANDIDATE_FEATURES
from oasis_gym.train.task_policy import load_task_policy

STEPS = 6


def scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] of the event files in `logdir`."""
    ea = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    ea.Reload()
    return {tag: [(e.step, e.value) for e in ea.Scalars(tag)] for tag in ea.Tags()["scalars"]}


def test_a_trained_recommender_plays_its_platform_journaled_and_its_curves_are_the_episodes(runs, tmp_path):  # noqa: F811
    res = oasis_cli("run", "--recommender", runs["recommender"], "--steps", str(STEPS), "--db", "rec.db", "--json",
                    "--quiet", cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads(res.stdout)
    assert data["task"] == "recommender-v4" and data["agent"] == "ppo" and data["steps"] == STEPS
    assert data["llm_users"] == 0 and data["population"] == 1 and data["logdir"] == str(Path("runs", "rec"))
    with sqlite3.connect(f"file:{tmp_path / 'rec.db'}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT COUNT(*) FROM trace").fetchone()[0] > 0
    # the curves are the episode the env plays in Python: the fast path's, same policy, seed and population
    policy = load_task_policy(runs["recommender"])
    settings = {k: v for k, v in policy.args.env(policy.args.eval_population).items() if k != "version"}
    env = ENVS["recommender"](**{**settings, "max_steps": STEPS}, privileged_info=True)
    obs, _ = env.reset(seed=0)
    want = []
    for _ in range(STEPS):
        obs, reward, _, _, info = env.step(policy(obs))
        want.append((reward, info))
    got = scalars(tmp_path / "runs" / "rec")
    assert {f"agent/weight/{f}" for f in CANDIDATE_FEATURES} <= set(got)
    for tag in ("users/satisfaction", "users/churned", "engagement/per_user", "exposure/misinfo_impressions"):
        assert [s for s, _ in got[tag]] == list(range(1, STEPS + 1)), tag
    for key in ("satisfaction", "churned", "engagements", "misinfo_impressions"):
        tag = INFO_TAGS[key]
        assert np.allclose([v for _, v in got[tag]], [i[key] for _, i in want], atol=1e-6), tag
    assert np.allclose([v for _, v in got["reward/total"]], [r for r, _ in want], atol=1e-5)
    parts = sum(np.array([v for _, v in got[f"reward/{t}"]]) for t in ("engagements", "misinfo_impressions",
                                                                       "polarization_increase"))  # fmt: skip
    assert np.allclose(parts, [v for _, v in got["reward/total"]], atol=1e-5)  # the components add up
    assert got["reward/return"][-1][1] == pytest.approx(data["return"], abs=1e-3)
    assert data["return"] == pytest.approx(sum(r for r, _ in want), abs=1e-3)
    # the report reads the task's journal; it suggests no `run --resume` (a task run is not one)
    rep = oasis_cli("report", "rec.db", "--quiet", cwd=tmp_path)
    assert rep.returncode == 0 and (tmp_path / "rec_report" / "summary.txt").is_file(), rep.stderr[-3000:]
    assert "--resume" not in rep.stdout
    # the output rule, as `oasis-gym run` applies it: its own journal and logs replaced only with --overwrite
    before = (tmp_path / "rec.db").read_bytes()
    res = oasis_cli("run", "--recommender", runs["recommender"], "--steps", "2", "--db", "rec.db", cwd=tmp_path)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "--overwrite" in res.stderr
    assert (tmp_path / "rec.db").read_bytes() == before
    res = oasis_cli("run", "--recommender", runs["recommender"], "--steps", "2", "--db", "rec.db", "--overwrite",
                    "--quiet", cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    assert lines[0].startswith("Played ppo of") and "recommender-v4" in lines[0]
    assert "oasis-gym report rec.db" in res.stdout and "--llm-users 10" in res.stdout
    assert max(s for s, _ in scalars(tmp_path / "runs" / "rec")["reward/total"]) == 2  # the new episode's logs only


def test_a_moderator_plays_beside_tiny_llm_users_and_tensorboard_counts_their_share(runs, tmp_path, tiny_model_dir):  # noqa: F811
    argv = ["run", "--moderator", runs["moderator"], "--agent", "tuned_report_threshold", "--steps", "3",
            "--users", "150", "--difficulty", "hard", "--seed", "9000", "--llm-users", "10", "--llm-backend",
            "transformers", "--llm-model", tiny_model_dir, "--db", "mod.db",
            "--json", "--quiet"]  # fmt: skip
    res = oasis_cli(*argv, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads(res.stdout)
    assert data["task"] == "moderator-v2" and data["agent"] == "tuned_report_threshold" and data["llm_users"] == 10
    assert (data["users"], data["difficulty"], data["seed"], data["steps"]) == (150, "hard", 9000, 3)  # the overrides
    got = scalars(tmp_path / "runs" / "mod")
    codes = np.array([[v for _, v in got[f"agent/code/{c}"]] for c in ACTIONS])
    assert codes.shape == (len(ACTIONS), 3) and (codes.sum(axis=0) == 16).all()  # a code per queue slot
    share = [v for _, v in got.get("llm/action_share", [])]
    assert share and all(0 <= v <= 1 for v in share) and sum(v for _, v in got["llm/actions"]) > 0
    assert 0 <= data["llm_action_share"] <= 1
    parts = sum(np.array([v for _, v in got[f"reward/{t}"]]) for t in ("engagements", "misinfo_impressions",
                                                                       "false_positives"))  # fmt: skip
    assert np.allclose(parts, [v for _, v in got["reward/total"]], atol=1e-5)
    rep = oasis_cli("report", "mod.db", "--quiet", cwd=tmp_path)
    assert rep.returncode == 0 and (tmp_path / "mod_report" / "summary.txt").is_file(), rep.stderr[-3000:]


def test_the_recorder_names_the_reward_term_info_lacks_as_what_is_left(tmp_path):
    rec = AgentEpisodeRecorder(tmp_path / "tb", {"a": 2.0, "b": -1.0}, code_names=("none", "remove"))
    values = rec.record(1, np.array([0, 1, 1]), 5.0, {"a": 3.0, "satisfaction": 0.5, "episode_seed": 7})
    assert values["reward/a"] == 6.0 and values["reward/b"] == -1.0 and values["users/satisfaction"] == 0.5
    assert values["agent/code/none"] == 1 and values["agent/code/remove"] == 2 and "task/episode_seed" not in values
    rec.close()
    assert scalars(tmp_path / "tb")["reward/b"] == [(1, -1.0)]
    with pytest.raises(ValueError, match="weight_names"):
        AgentEpisodeRecorder(tmp_path / "tb2", {})


def _fake_run(runs, tmp_path: Path, name: str, **settings) -> Path:  # noqa: F811
    """A copy of the recommender's run folder with its saved settings changed."""
    folder = tmp_path / name
    shutil.copytree(runs["recommender"], folder)
    saved = json.loads((folder / "eval.json").read_text())
    saved["settings"].update(settings)
    (folder / "eval.json").write_text(json.dumps(saved))
    return folder


def test_bad_input_is_one_line_and_exit_code_2_before_any_compute(runs, tmp_path):  # noqa: F811
    rec, mod = str(runs["recommender"]), str(runs["moderator"])
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "eval.json").write_text("{not json")
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "results.json").write_text((runs["recommender"] / "eval.json").read_text())
    v3 = _fake_run(runs, tmp_path, "v3", version=3)
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "profiles.csv").write_text("user_id,name\n0,a\n")
    cases = [
        (["--recommender", "nowhere"], "no run of oasis-gym train or benchmark here"),
        (["--recommender", "empty"], "no run of oasis-gym train or benchmark here"),
        (["--recommender", "broken"], "not a training run's results"),
        (["--recommender", rec, "--agent", "best"], "no policy 'best'"),
        (["--recommender", rec, "--agent", "campaign_told (privileged)"], "hidden truth"),
        (["--recommender", "bench"], "a benchmark of several PPO seeds"),
        (["--moderator", rec], "give it as --recommender"),
        (["--recommender", str(v3)], "no platform form"),
        (["--recommender", rec, "--moderator", mod], "not allowed with"),
        (["--recommender", rec, "--scenario", "twitter_information_spread"], "--scenario does not go with"),
        (["--recommender", rec, "--policy", "abm"], "--policy does not go with"),
        (["--recommender", rec, "--resume", "run.db"], "--resume does not go with"),
        (["--recommender", rec, "--core-users", "3", "--recsys", "random"], "--core-users and --recsys do not"),
        (["--agent", "ppo", "--users", "30"], "--agent needs --recommender"),
        (["--llm-users", "3"], "--llm-users needs --recommender"),
        (["--recommender", rec, "--llm-users", "201"], "more than the run's 200 users"),
        (["--recommender", rec, "--llm-users", "-1"], "--llm-users"),
        (["--recommender", rec, "--users", "10"], "--users with --recommender must be in [32, "),
        (["--recommender", rec, "--users", "profiles.csv"], "not a file"),
        (["--recommender", rec, "--steps", "20000"], "--steps with --recommender must be at most"),
        (["--recommender", rec, "--difficulty", "extreme"], "--difficulty"),
        (["--recommender", rec, "--db", "notes.txt"], "not an oasis-gym journal"),
        (["--recommender", rec, "--llm-users", "2", "--llm-timeout", "5"], "--llm-timeout"),
    ]
    for argv, message in cases:
        res = oasis_cli("run", *argv, "--quiet", cwd=tmp_path, tripwire=True)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, (argv, res.stderr)
        assert res.returncode != TRIPPED and message in lines[0], (argv, lines[0])
        assert not (tmp_path / "run.db").exists() and not (tmp_path / "runs").exists(), argv
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130)])
def test_a_task_run_stopped_says_what_its_journal_holds_and_the_command_that_plays_it_again(
    runs,  # noqa: F811
    tmp_path,
    signum,
    code,
):
    argv = ["run", "--recommender", str(runs["recommender"]), "--steps", "8", "--db", "rec.db", "--quiet"]
    result = stopped(tmp_path, argv, signum, pause=("oasis_gym.world.sim_world", "SimWorld.step", 4))
    line = one_line(result, code, "run", signum)
    assert "after 3 of 8 steps" in line and "rec.db holds its steps up to step" in line, line
    rerun = again(line)
    assert rerun[-1] == "--overwrite" and rerun[:-1] == argv, rerun
    res = subprocess.run([sys.executable, "-m", "oasis_gym.cli", *rerun], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
