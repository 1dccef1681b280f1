"""The one PPO driver (`oasis_gym.train.ppo`) trains exactly as the two drivers it replaced.

Guard of issue 51's commit 10: a short PPO run of each path (the v0 platform envs built by
`train.common`'s builder, the v1 tasks through the native vector env) gives bitwise the same
policy parameters and observation statistics as before the drivers were merged. The hashes
below were recorded with the two old drivers (`train/common.py` and `train/v1.py`, commit
e385384) on this machine; a change of them is a change of training results.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from test_train import one_torch_thread  # noqa: E402, F401 (autouse: one torch thread, as training sets)

from oasis_gym.scenarios.misinfo_stream import MisinfoScenario  # noqa: E402
from oasis_gym.train import anchored, common, v1  # noqa: E402
from oasis_gym.train.ppo import PPOConfig  # noqa: E402

SCENARIO = dict(initial_true=8, initial_misinfo=4, stream_rate=1.5, n_outlets=5, n_misinfo_accounts=3)

# sha256 of (parameter names and bytes, VecNormalize's mean and var), recorded from the old drivers
V0_HASHES = {
    "recommender": "ff4a6d5b92f9de6c325a8e1444a4c250e11eb01305c4fd0a0dc228915c99d7bd",
    "moderator": "90cd14bc2f7eb2383cf9911ee8d3285ed0a974dd4e13a0eb2fe11dfb88903fc6",
}
V1_HASHES = {
    "recommender": "869cf8444da70187f90b26d8a2a3141f9a0e55eaee77411543848048df590fb3",
    "moderator": "70f559e37f072473ddc6b4879fd170a8e9cb3d3ac3717f978f5b01e6e7da6a01",
}


def fingerprint(model, vec) -> str:
    """sha256 of the policy's parameters (names and bytes) and the observation statistics."""
    h = hashlib.sha256()
    for name, tensor in model.policy.state_dict().items():
        h.update(name.encode())
        h.update(tensor.detach().cpu().numpy().tobytes())
    h.update(np.asarray(vec.obs_rms.mean, np.float64).tobytes())
    h.update(np.asarray(vec.obs_rms.var, np.float64).tobytes())
    return h.hexdigest()


def train_v0(kind: str, out) -> tuple:
    """64 timesteps of PPO on a tiny v0 env (the recommender's MLP in one process, the
    moderator's slot policy in two worker processes, with checkpoints)."""
    env = common.EnvConfig(
        kind=kind,
        users=80,
        max_cycles=6,
        scenario=MisinfoScenario(**SCENARIO),
        env_kwargs={"activation": 0.3},
    )
    slot = kind == "moderator"
    cfg = PPOConfig(
        total_timesteps=64,
        n_envs=2,
        subproc=slot,
        n_steps=16,
        batch_size=16,
        n_epochs=2,
        policy="slot" if slot else "mlp",
        first_bias=1.0 if slot else 0.0,
        checkpoint_every=32,
        out_dir=str(out),
    )
    return common.train_on_platform(env, cfg)


def train_v1(task: str, out) -> tuple:
    """64 timesteps of PPO on a small v1 task (4 envs in pairs; the recommender anchored with gSDE)."""
    args = v1.Args(
        task=task,
        users=200,
        max_steps=5,
        n_envs=4,
        n_steps=16,
        batch_size=32,
        n_epochs=2,
        timesteps=64,
        paired=2,
        sde_sample_freq=4 if task == "recommender" else 0,
        out=str(out),
        quiet=True,
    )
    anchor = None
    if task == "recommender":
        from oasis_gym import load_entry_point

        env = args.env()
        env.pop("version")
        venv = load_entry_point(v1.VERSIONS[task][args.version])(1, **env)
        anchor = anchored.ConstantAnchor(np.zeros(venv.single_action_space.shape, np.float32))
        venv.close()
    v1.train_output(args.out, overwrite=True).claim_trees()
    return v1.train_on_task(args, anchor)


@pytest.mark.parametrize("kind", ["recommender", "moderator"])
def test_v0_ppo_trains_the_same_parameters_as_before(kind, tmp_path):
    """v0's envs (the builder) under the one driver: the parameters of the old driver, bit for bit."""
    model, vec, info = train_v0(kind, tmp_path / "out")
    assert info["timesteps"] == 64 and (tmp_path / "out" / "model.zip").is_file()
    assert list((tmp_path / "out" / "checkpoints").iterdir())
    assert fingerprint(model, vec) == V0_HASHES[kind]


@pytest.mark.parametrize("task", ["recommender", "moderator"])
def test_v1_ppo_trains_the_same_parameters_as_before(task, tmp_path):
    """The native vector env under the one driver: the parameters of the old driver, bit for bit."""
    model, vec, info = train_v1(task, tmp_path / "out")
    assert info["timesteps"] == 64 and (tmp_path / "out" / "model.zip").is_file()
    assert fingerprint(model, vec) == V1_HASHES[task]
