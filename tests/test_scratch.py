"""`oasis-gym scratch`: agents trained from scratch, resumable per (agent, seed), reported as RL papers do
(train/scratch.py, scratch_agents.py, scratch_report.py). Tiny budgets: 40 users, 20-step episodes,
rollouts of 256 transitions, real subprocesses and SQLite-free batched tasks."""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

TIMEOUT = 1200  # a hang only: each command takes 0.5-3 min at load 5+ on 2 cores
TINY = ["--users", "40", "--max-steps", "20", "--n-envs", "8", "--rollout", "256", "--checkpoint-every", "256",
        "--timesteps", "512", "--seeds", "2", "--eval-seeds", "9000", "9001", "9002", "--tune-seeds", "5000",
        "--validation-seeds", "8000", "8001", "--cem-iterations", "1", "--cem-population", "2"]  # fmt: skip


def scratch(*argv, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "oasis_gym.cli", "scratch", *map(str, argv)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def moderator_run(tmp_path_factory) -> Path:
    """ppo and slot_ppo on Moderator-v1, 2 seeds, uninterrupted; the baselines tuned here."""
    out = tmp_path_factory.mktemp("scratch") / "mod"
    scratch("moderator", *TINY, "--agents", "ppo,slot_ppo", "--out", out, "--quiet")
    return out


def _params(ckpt: Path, agent: str = "ppo") -> dict:
    """Every number of a run's networks and optimizers (SB3's `get_parameters`), flattened."""
    import torch

    from oasis_gym.train import scratch_agents

    model, _, _ = scratch_agents.restore(agent, pickle.loads(ckpt.read_bytes())["state"])
    flat: dict[str, np.ndarray] = {}

    def walk(prefix, x):
        if isinstance(x, torch.Tensor):
            flat[prefix] = x.detach().numpy().copy()
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(f"{prefix}.{k}", v)
        elif isinstance(x, (list, tuple)):
            for i, v in enumerate(x):
                walk(f"{prefix}.{i}", v)
        elif isinstance(x, (int, float)):
            flat[prefix] = np.asarray(x)

    walk("", model.get_parameters())
    assert any(".exp_avg" in k for k in flat)  # Adam's moments are there
    return flat


def test_each_moderator_agent_trains_and_evaluates_and_writes_its_files(moderator_run):
    result = json.loads((moderator_run / "results.json").read_text())
    assert result["task"] == "moderator-v1" and set(result["agents"]) == {"ppo", "slot_ppo"}
    for agent in ("ppo", "slot_ppo"):
        assert result["agents"][agent]["progress"]["text"] == "2/2 seeds done"
        for name in ("held-out seeds", "held-out population"):
            s = result["eval_sets"][name]["stats"][agent]
            assert (s["runs"], s["episodes"]) == (2, 3) and s["iqm_lo"] <= s["iqm"] <= s["iqm_hi"]
            p = result["eval_sets"][name]["p_improvement"][agent]
            assert {"no_moderation", "tuned_classifier", "truth (privileged)"} <= set(p)
    md = (moderator_run / "results.md").read_text()
    assert "P(agent > baseline)" in md and "Plateau check" in md and "| tuned_classifier |" in md


def test_the_curve_files_and_the_plot_are_written_and_read_back(moderator_run):
    import matplotlib.image

    for agent in ("ppo", "slot_ppo"):
        for seed in (0, 1):
            curve = json.loads((moderator_run / f"curves/{agent}_seed{seed}.json").read_text())["curve"]
            assert [p["timesteps"] for p in curve] == [0, 256, 512]  # before training, then every checkpoint
            assert all(np.isfinite(p["validation"]) and len(p["validation_returns"]) == 2 for p in curve)
            assert curve[0]["seconds"] == 0 < curve[1]["seconds"] < curve[2]["seconds"]
    for png in ("learning_curves.png", "performance_profiles.png"):
        image = matplotlib.image.imread(moderator_run / png)
        assert image.shape[0] > 200 and image.shape[1] > 600  # two panels side by side


def test_a_continued_ppo_run_equals_an_uninterrupted_one(moderator_run, tmp_path):
    """Stopped after its first checkpoint (--time-limit), then the same command again: every
    parameter, Adam moment, validation return and held-out episode is the uninterrupted run's."""
    out = tmp_path / "resumed"
    argv = ["moderator", *TINY, "--agents", "ppo,slot_ppo", "--out", out, "--quiet", "--baselines", moderator_run]
    first = scratch(*argv, "--time-limit", "0.001", "--json")
    line = json.loads(first.stdout.strip().splitlines()[-1])
    assert line["agents"]["ppo"]["progress"]["text"] == "0/2 seeds done, least 0% of budget"  # marked as partial
    assert not (out / "runs/ppo_seed1.ckpt").exists() and not (out / "runs/slot_ppo_seed0.ckpt").exists()
    curve = json.loads((out / "curves/ppo_seed0.json").read_text())["curve"]
    assert [p["timesteps"] for p in curve] == [0, 256]
    scratch(*argv)
    for seed in (0, 1):
        a, b = _params(moderator_run / f"runs/ppo_seed{seed}.ckpt"), _params(out / f"runs/ppo_seed{seed}.ckpt")
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
        ca, cb = (json.loads((d / f"curves/ppo_seed{seed}.json").read_text())["curve"] for d in (moderator_run, out))
        assert [(p["timesteps"], p["validation"]) for p in ca] == [(p["timesteps"], p["validation"]) for p in cb]
        ea, eb = (
            json.loads((d / f"runs/ppo_seed{seed}.eval.json").read_text())["eval_sets"] for d in (moderator_run, out)
        )
        assert ea == eb
    again = scratch(*argv)  # finished runs are skipped: nothing trains
    assert "started" not in again.stderr and "continued" not in again.stderr


def test_table_only_trains_nothing_and_tables_the_runs_as_they_stand(moderator_run, tmp_path):
    """--table-only on a folder stopped after its first chunk: no run starts or continues, the
    checkpoints are untouched, and the table says how far each agent got."""
    out = tmp_path / "partial"
    argv = ["moderator", *TINY, "--agents", "ppo,slot_ppo", "--out", out, "--quiet", "--baselines", moderator_run]
    scratch(*argv, "--time-limit", "0.001")
    before = {p.name: p.read_bytes() for p in (out / "runs").glob("*.ckpt")}
    assert list(before) == ["ppo_seed0.ckpt"]
    done = scratch(*[a for a in argv if a != "--quiet"], "--table-only", "--json")
    assert "started" not in done.stderr and "continued" not in done.stderr
    assert {p.name: p.read_bytes() for p in (out / "runs").glob("*.ckpt")} == before
    agents = json.loads(done.stdout)["agents"]
    assert agents["ppo"]["progress"]["text"] == "0/2 seeds done, least 0% of budget" and "slot_ppo" not in agents


def test_runs_side_by_side_are_the_runs_one_at_a_time(moderator_run, tmp_path):
    """--jobs 2: each (agent, seed) run in a process of its own, the files written by the command;
    every parameter, validation return and held-out episode is the one-at-a-time run's."""
    out = tmp_path / "jobs"
    argv = ["moderator", *TINY, "--agents", "ppo,slot_ppo", "--out", out, "--baselines", moderator_run, "--jobs", 2]
    done = scratch(*argv)
    assert all(f"{a}_seed{s}: started" in done.stderr for a in ("ppo", "slot_ppo") for s in (0, 1))  # the jobs' lines
    for agent in ("ppo", "slot_ppo"):
        for seed in (0, 1):
            name = f"{agent}_seed{seed}"
            a, b = _params(moderator_run / f"runs/{name}.ckpt", agent), _params(out / f"runs/{name}.ckpt", agent)
            assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a), name
            ca, cb = (json.loads((d / f"curves/{name}.json").read_text())["curve"] for d in (moderator_run, out))
            assert [(p["timesteps"], p["validation"]) for p in ca] == [(p["timesteps"], p["validation"]) for p in cb]
            ea, eb = (json.loads((d / f"runs/{name}.eval.json").read_text())["eval_sets"] for d in (moderator_run, out))
            assert ea == eb, name
    settings = json.loads((out / ".oasis-gym-scratch.json").read_text())["settings"]
    assert "jobs" not in settings and "env_workers" not in settings  # not settings: another count continues it


def test_each_recommender_agent_trains_evaluates_and_continues(tmp_path):
    """recurrent_ppo, framestack_ppo and sac on Recommender-v3 (2 seeds each); each stopped after
    its first checkpoint and continued ends where the uninterrupted run ends (every parameter); ppo too."""
    whole, agents = tmp_path / "whole", ["recurrent_ppo", "framestack_ppo", "sac"]
    argv = ["recommender", *TINY, "--timesteps", "256", "--rollout", "128", "--checkpoint-every", "128", "--quiet"]
    scratch(*argv, "--out", whole, "--agents", ",".join(agents))
    result = json.loads((whole / "results.json").read_text())
    assert result["task"] == "recommender-v3" and list(result["agents"]) == agents
    assert {"tuned_constant", "default_ranking"} <= set(result["eval_sets"]["held-out seeds"]["p_improvement"]["sac"])
    for agent in agents:
        out, one = tmp_path / agent, [*argv, "--seeds", "1", "--agents", agent, "--baselines", whole]
        partial = scratch(*one, "--out", out, "--time-limit", "0.001", "--json")
        assert json.loads(partial.stdout)["agents"][agent]["progress"]["least"] == 0.5
        scratch(*one, "--out", out)
        a, b = _params(whole / f"runs/{agent}_seed0.ckpt", agent), _params(out / f"runs/{agent}_seed0.ckpt", agent)
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a), agent
    ppo = scratch(*argv, "--out", tmp_path / "ppo", "--agents", "ppo", "--seeds", "1", "--baselines", whole, "--json")
    assert json.loads(ppo.stdout)["agents"]["ppo"]["progress"]["finished"] == 1


def _digest(folder: Path) -> dict:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*")
        if p.is_file()
    }


def test_another_command_line_on_the_folder_is_refused_and_overwrite_starts_anew(moderator_run, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(moderator_run, out)
    before = _digest(out)
    done = scratch("moderator", *TINY, "--agents", "ppo,slot_ppo", "--timesteps", "768", "--out", out, check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "another command line (--timesteps: 512, given 768)" in done.stderr and "--overwrite" in done.stderr
    assert _digest(out) == before
    scratch("moderator", *TINY, "--agents", "ppo", "--seeds", "1", "--out", out, "--baselines", moderator_run,
            "--overwrite", "--quiet")  # fmt: skip
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["ppo_seed0.ckpt", "ppo_seed0.eval.json"]
    assert not (out / "baselines.json").exists()  # (its baselines came from --baselines this time)


def test_a_users_file_in_the_folder_is_never_touched(tmp_path):
    out = tmp_path / "mine"
    (out / "runs").mkdir(parents=True)
    (out / "runs/ppo_seed0.ckpt").write_bytes(b"my own file")
    done = scratch("moderator", *TINY, "--out", out, check=False)
    assert done.returncode == 2 and "is not an output of oasis-gym scratch" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and (out / "runs/ppo_seed0.ckpt").read_bytes() == b"my own file"


@pytest.mark.parametrize(
    ("task", "extra", "match"),
    [
        ("moderator", ["--agents", "dqn"], "--agents: unknown agent 'dqn'"),
        ("moderator", ["--agents", "sac"], "--agents: sac is not an agent of the moderator"),
        ("recommender", ["--agents", "slot_ppo"], "--agents: slot_ppo is not an agent of the recommender"),
        ("moderator", ["--agents", "ppo,ppo"], "--agents names an agent twice"),
        ("moderator", ["--validation-seeds", "9001"], "--validation-seeds overlap --eval-seeds"),
        ("moderator", ["--validation-seeds", "5000"], "--validation-seeds overlap --tune-seeds"),
        ("moderator", ["--validation-seeds", "3"], "--validation-seeds overlap the training seeds 0..8"),
        ("moderator", ["--seeds", "0"], "argument --seeds: expected a whole number in [1, 100]"),
        ("moderator", ["--rollout", "0"], "argument --rollout: expected a whole number in [1, "),
        ("moderator", ["--time-limit", "-1"], "argument --time-limit: expected a finite number"),
        ("moderator", ["--jobs", "0"], "argument --jobs: expected a whole number in [1, 256]"),
        ("moderator", ["--jobs", "two"], "argument --jobs: expected a whole number"),
        ("moderator", ["--eval-population", "0"], "--eval-population must differ"),
        ("moderator", ["--baselines", "nowhere"], "--baselines nowhere: no benchmark's results.json"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2_before_any_compute(tmp_path, task, extra, match):
    done = scratch(task, *TINY, "--out", tmp_path / "s", *extra, check=False)
    assert done.returncode == 2 and match in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "s").exists()


def test_baselines_of_other_settings_are_one_line(moderator_run, tmp_path):
    done = scratch(
        "moderator", *TINY, "--users", "48", "--baselines", moderator_run, "--out", tmp_path / "s", check=False
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "is a benchmark with other settings (users)" in done.stderr and not (tmp_path / "s").exists()


def test_the_greedy_recurrent_policy_forgets_between_batches_of_episodes():
    """`protocol.evaluate` calls a policy's reset() before each batch of episodes (its hook)."""
    from oasis_gym.train import protocol

    calls = []

    class Policy:
        def reset(self):
            calls.append("reset")

        def __call__(self, obs):
            calls.append("act")
            return np.zeros((len(obs), 16), np.int64)

    protocol.evaluate(Policy(), "moderator", "easy", users=40, max_steps=2, eval_seeds=(9000,))
    assert calls == ["reset", "act", "act"] * 2  # two held-out sets, two steps each


def test_the_greedy_frame_stack_is_the_one_the_agent_trained_on():
    """framestack_ppo's greedy policy stacks the normalized observations as SB3's VecFrameStack did
    in training (oldest first, zeros before the first), and starts anew after `reset()`."""
    from oasis_gym.train import scratch_agents, v1

    args = v1.Args(task="moderator", users=40, max_steps=20, n_envs=4, anchor="none", quiet=True, env_workers=1)
    vec, _ = scratch_agents.make_env(args)
    model = scratch_agents.build("framestack_ppo", vec, 0, args.n_envs, 64)
    vec.training = False  # fixed statistics, so the two normalize alike
    env, greedy = model.get_env(), scratch_agents.Greedy(model, vec)
    assert greedy.frames == scratch_agents.STACK
    stacked = env.reset()
    for _ in range(6):  # past the stack's length, inside the 20-step episodes
        assert np.array_equal(greedy._stack(vec.normalize_obs(vec.get_original_obs())), stacked)
        greedy._start = False
        stacked = env.step(np.stack([env.action_space.sample() for _ in range(args.n_envs)]))[0]
    greedy.reset()
    first = greedy._stack(vec.normalize_obs(vec.get_original_obs()))
    width = vec.observation_space.shape[-1]
    assert not first[:, :-width].any() and np.array_equal(first[:, -width:], stacked[:, -width:])
    vec.close()


def test_sac_updating_on_two_threads_changes_no_bit(monkeypatch):
    """SAC's gradient steps on 2 torch threads (`scratch_agents.callbacks`, an idle machine assumed
    so the threaded path runs) end on the parameters one thread gives, to the last bit."""
    import torch

    from oasis_gym.train import callbacks, scratch_agents, v1

    monkeypatch.setattr(callbacks, "machine_busy", lambda *a: False)
    monkeypatch.setattr(scratch_agents, "cores", lambda: 2)
    args = v1.Args(task="recommender", users=40, max_steps=20, n_envs=4, anchor="none", quiet=True, env_workers=1)
    (threaded,) = scratch_agents.callbacks("sac", args)
    assert threaded.threads == 2 and scratch_agents.callbacks("ppo", args) == []
    threads, params = torch.get_num_threads(), []
    torch.set_num_threads(1)  # as `oasis-gym scratch` runs (`limit_threads`)
    try:
        for cb in ([], [threaded]):
            vec, _ = scratch_agents.make_env(args)
            model = scratch_agents.build("sac", vec, 0, args.n_envs)
            model.learn(256, callback=cb)  # past SAC's 100 learning starts: 39 steps of 4 transitions train
            params.append({k: v.detach().numpy().copy() for k, v in model.policy.state_dict().items()})
            vec.close()
            assert torch.get_num_threads() == 1  # put back after training
    finally:
        torch.set_num_threads(threads)
    assert threaded.updates_threaded > 0
    assert params[0].keys() == params[1].keys() and all(np.array_equal(params[0][k], params[1][k]) for k in params[0])


def test_a_checkpoint_holds_a_model_sb3_loads(moderator_run):
    from stable_baselines3 import PPO

    state = pickle.loads((moderator_run / "runs/ppo_seed0.ckpt").read_bytes())["state"]
    assert PPO.load(io.BytesIO(state["model"]), device="cpu").num_timesteps == 512


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_signal_keeps_the_checkpoints_and_the_same_command_continues(tmp_path, jobs):
    """SIGINT after the first checkpoint: one line, exit code 130, the checkpoint kept; the same
    command then continues that run (it does not start it anew). With --jobs 2 (ppo and slot_ppo
    side by side) the jobs are ended too."""
    import os
    import signal
    import time

    out, agents = tmp_path / "s", "ppo" if jobs == 1 else "ppo,slot_ppo"
    argv = ["moderator", *TINY, "--agents", agents, "--seeds", "1", "--timesteps", "100000", "--out", out, "--quiet",
            "--jobs", jobs]  # fmt: skip
    cmd = [sys.executable, "-m", "oasis_gym.cli", "scratch", *map(str, argv)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (out / "curves/ppo_seed0.json").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert len(err.strip().splitlines()) == 1 and "stopped by SIGINT; every checkpoint written is kept" in err
    done = pickle.loads((out / "runs/ppo_seed0.ckpt").read_bytes())["timesteps"]  # (the curve is written after it)
    assert done >= 256
    again = scratch(*[a for a in argv if a != "--quiet"], "--time-limit", "0.001")
    assert f"ppo_seed0: continued at {done:,} of 100,000 timesteps" in again.stderr
