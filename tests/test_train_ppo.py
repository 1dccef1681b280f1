"""The one PPO driver (`oasis_gym.train.ppo`) trains exactly as the two drivers it replaced.

Guard of issue 51's commit 10: a short PPO run of each path (the v0 platform envs built by
`train.common`'s builder, the v1 tasks through the native vector env) gives bitwise the same
policy parameters and observation statistics as before the drivers were merged (checked bit for
bit when the drivers were merged, session 25); the summaries below were recorded with the two
old drivers (`train/common.py` and `train/v1.py`, commit e385384); a change of them is a change
of training results.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from test_train import one_torch_thread  # noqa: E402, F401 (autouse: one torch thread, as training sets)

from oasis_gym.scenarios.misinfo_stream import MisinfoScenario  # noqa: E402
from oasis_gym.train import anchored, common, v1  # noqa: E402
from oasis_gym.train.ppo import PPOConfig  # noqa: E402

SCENARIO = dict(initial_true=8, initial_misinfo=4, stream_rate=1.5, n_outlets=5, n_misinfo_accounts=3)

# per parameter tensor its sum and L1 norm, then the sums of VecNormalize's mean and var: the old
# drivers' values (their sha256 over the bytes matched the one driver's too, on the machine that
# recorded them); compared to 1e-4 relative, so a CPU whose torch sums floats in another order
# passes, while any change of the training (a rate, a normalizer, an anchor) moves them far more
V0_SUMMARY = {
    "recommender": [
        -23.9990271926,
        23.9990271926,
        -5.961062941,
        235.1943588101,
        -0.0064755496,
        0.0559275738,
        -3.4929584116,
        580.9042963454,
        0.0084032245,
        0.0613829002,
        -0.8812211808,
        235.7183361444,
        -0.0054208972,
        0.1150858017,
        -0.7389985905,
        582.8171548786,
        -0.0256360481,
        0.1194800513,
        -0.1090200535,
        2.179757352,
        0.0087024751,
        0.0250216622,
        -1.3684182292,
        6.3991939189,
        0.0019276765,
        0.0019276765,
        15.0425856402,
        0.0565755381,
    ],
    "moderator": [
        -12.3048844821,
        325.8788250647,
        0.0033346313,
        0.0814215741,
        7.810847209,
        582.4295492344,
        -0.0230008613,
        0.0827668391,
        10.5610072094,
        329.1941656607,
        -0.0198136489,
        0.143028514,
        14.1391577048,
        580.3874890223,
        -0.0058657294,
        0.1414702085,
        -0.0105630461,
        0.5865400493,
        1.0010396435,
        1.0079388573,
        -0.4503745314,
        8.5416804439,
        -0.0023518316,
        0.0023518316,
        72.3344006851,
        87.4307594692,
    ],
}
V1_SUMMARY = {
    "recommender": [
        -9215.8625711203,
        9215.8625711203,
        -2.8544667797,
        172.651779033,
        0.0019572352,
        0.0434963343,
        6.7022934536,
        576.403864739,
        -0.0007187787,
        0.0412279893,
        5.5147342573,
        172.3306915954,
        0.0090580534,
        0.0711505679,
        -8.9874873372,
        580.7354461915,
        0.004682375,
        0.0727780628,
        -0.0945741022,
        5.1181336495,
        0.0008580674,
        0.0501857249,
        0.6450564589,
        6.5170362608,
        0.0011485284,
        0.0011485284,
        3.6275670635,
        0.9573714125,
    ],
    "moderator": [
        -3.3992268369,
        281.5909521062,
        -0.0039959075,
        0.0281797136,
        -6.2537742027,
        579.1213566223,
        0.0058137842,
        0.0290801961,
        1.140736389,
        283.1239031565,
        -0.004451983,
        0.075869609,
        11.6118004754,
        580.0254660842,
        0.0193665739,
        0.0761220126,
        -0.0157957455,
        0.3209203302,
        2.9992132802,
        3.0037108141,
        -2.9251776724,
        8.919192987,
        -0.0011976536,
        0.0011976536,
        54.8155308882,
        53.6049761154,
    ],
}


def summary(model, vec) -> np.ndarray:
    """Per parameter tensor its sum and L1 norm, then the sums of the observation statistics."""
    out = []
    for tensor in model.policy.state_dict().values():
        a = tensor.detach().cpu().numpy().astype(np.float64)
        out += [a.sum(), np.abs(a).sum()]
    out += [np.asarray(vec.obs_rms.mean, np.float64).sum(), np.asarray(vec.obs_rms.var, np.float64).sum()]
    return np.array(out)


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
    np.testing.assert_allclose(summary(model, vec), V0_SUMMARY[kind], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("task", ["recommender", "moderator"])
def test_v1_ppo_trains_the_same_parameters_as_before(task, tmp_path):
    """The native vector env under the one driver: the parameters of the old driver, bit for bit."""
    model, vec, info = train_v1(task, tmp_path / "out")
    assert info["timesteps"] == 64 and (tmp_path / "out" / "model.zip").is_file()
    np.testing.assert_allclose(summary(model, vec), V1_SUMMARY[task], rtol=1e-4, atol=1e-6)
