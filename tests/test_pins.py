"""Every registered env id and tier has its results pinned here, under a test id named after it.

Issue 51 moves the mechanisms of the two engines into one home; issue 55 asks that no task's
results can change unnoticed. Each case plays two episodes of one id (and tier) through the
public API (`gymnasium.make` / the PettingZoo constructors) with a seeded random action
sequence that exercises the whole action space (every moderator code, rankings all over the
box), and pins what an agent sees and gets: each episode's return and the sum of every
observation value it was shown. A change that moves any of them fails here; if the change is
meant to change results, the id's version bumps (the old id keeps its numbers) and the new id
gets pins of its own.

The numbers were computed at b2d591d (before the one-world work began); those of Recommender-v4
and Moderator-v2 (OASIS's rules, issue 51 plan commit 12) when the ids were made; TaskPlatform-v0's
(the recommender's then the moderator's episode, two agent users each) when it was registered.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pettingzoo
import pytest
from gymnasium import spaces

import oasis_gym
from oasis_gym.envs import reddit_v0, task_platform_v0, twitter_v0
from oasis_gym.model.tiers import TASK_TIERS

SEEDS = (9000, 9001)  # two episodes per case
BATCHED = set(oasis_gym.GYMNASIUM_VECTOR_ENVS)  # the batched tasks: played in tiers
_SOCIAL = {"users": 60, "activation": 0.5, "max_cycles": 6, "recommender_agent": True, "moderator_agent": True}
_TASK = {"difficulty": "hard", "users": 64, "max_steps": 6, "agent_users": [0, 7]}
PETTINGZOO = {  # each id's parallel envs of a pinned case
    "oasis_gym/Twitter-v0": lambda: [twitter_v0.parallel_env(**_SOCIAL)],
    "oasis_gym/Reddit-v0": lambda: [reddit_v0.parallel_env(**_SOCIAL)],
    "oasis_gym/TaskPlatform-v0": lambda: [
        task_platform_v0.parallel_env(task=t, **_TASK) for t in ("recommender", "moderator")
    ],
}


def _tiers(env_id: str) -> tuple[str, ...]:
    """A batched task's tiers (`model.tiers.TASK_TIERS` of its task and version), else ("default",)."""
    if env_id not in BATCHED:
        return ("default",)
    task, version = env_id.split("/")[1].split("-v")
    return tuple(TASK_TIERS[task.lower()][int(version)])


def _registered() -> tuple[set[str], set[str]]:
    """The oasis_gym ids in Gymnasium's registry and in PettingZoo's (parallel and AEC)."""
    gym_ids = {i for i in gym.registry if i.startswith("oasis_gym/")}
    pz_ids = {i for i in (*pettingzoo.parallel_registry, *pettingzoo.aec_registry) if i.startswith("oasis_gym/")}
    return gym_ids, pz_ids


def _cases() -> list[str]:
    out = []
    gym_ids, pz_ids = _registered()
    for env_id in sorted(gym_ids):
        out += [f"{env_id.split('/')[1]}-{t}" for t in _tiers(env_id)]
    return out + [f"{env_id.split('/')[1]}-default" for env_id in sorted(pz_ids)]


CASES = _cases()


def _action(space: spaces.Space, rng: np.random.Generator):
    """A random action of `space` from uniform draws only (stable across numpy releases)."""
    if isinstance(space, spaces.Box):
        return (space.low + (space.high - space.low) * rng.random(space.shape)).astype(space.dtype)
    if isinstance(space, spaces.MultiDiscrete):
        return (rng.random(space.shape) * space.nvec).astype(np.int64)
    if isinstance(space, spaces.Discrete):
        return int(rng.random() * space.n)
    raise TypeError(f"no pinned action sequence for {space}")


def _pick(allowed: np.ndarray, rng: np.random.Generator):
    return allowed[int(rng.random() * len(allowed))] if len(allowed) else 0


def _gym_episodes(env_id: str, tier: str) -> list[float]:
    kwargs = {"users": 300, "max_steps": 30, "difficulty": tier} if env_id in BATCHED else {"users": 200}
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(7)
    returns, obs_sums = [], []
    try:
        for seed in SEEDS:
            obs, _ = env.reset(seed=seed)
            total, seen, done, steps = 0.0, float(np.sum(obs, dtype=np.float64)), False, 0
            while not done and steps < 30:
                obs, reward, terminated, truncated, _ = env.step(_action(env.action_space, rng))
                total += float(reward)
                seen += float(np.sum(obs, dtype=np.float64))
                done, steps = terminated or truncated, steps + 1
            returns.append(total)
            obs_sums.append(seen)
    finally:
        env.close()
    return returns + obs_sums


def _pettingzoo_episodes(make) -> list[float]:
    out = []
    for seed in SEEDS:
        for env in make():
            rng = np.random.default_rng(seed)
            observations, _ = env.reset(seed=seed)
            user_return = agent_return = seen = 0.0
            while env.agents:
                actions = {}
                for a, o in observations.items():
                    space = env.action_space(a)
                    if isinstance(o, dict):  # a user: each part drawn uniformly among the allowed values
                        masks = o["action_mask"]
                        actions[a] = {k: int(_pick(np.flatnonzero(masks[k]), rng)) for k in space.spaces}
                        seen += float(np.sum(o["feed"], dtype=np.float64) + np.sum(o["self"], dtype=np.float64))
                    else:
                        seen += float(np.sum(o, dtype=np.float64))
                        actions[a] = _action(space, rng)
                observations, rewards, _, _, _ = env.step(actions)
                for a, r in rewards.items():
                    if a in ("recommender_0", "moderator_0"):
                        agent_return += float(r)
                    else:
                        user_return += float(r)
            env.close()
            out += [user_return, agent_return, seen]
    return out


def run_case(case: str) -> list[float]:
    """The pinned numbers of one case (an id's name and tier, e.g. `Recommender-v3-hard`)."""
    name, tier = case.rsplit("-", 1)
    env_id = f"oasis_gym/{name}"
    if env_id in PETTINGZOO:
        return _pettingzoo_episodes(PETTINGZOO[env_id])
    return _gym_episodes(env_id, tier)


PINNED: dict[str, list[float]] = {
    "Moderator-v0-default": [-6.3259274130977055, -4.021112281761603, 2924.9284775294363, 2314.1313537098467],
    "Moderator-v1-easy": [-57.160000048577785, -59.54666593298316, 3034.1347384816036, 3737.4279317692854],
    "Moderator-v1-medium": [-50.759999949485064, -49.820000257343054, 2605.6631427283864, 2983.8991495496593],
    "Moderator-v1-hard": [-50.42333348467946, -50.39999997243285, 2576.7640266544186, 2995.698426773306],
    "Moderator-v2-easy": [-55.93999990820885, -55.1233329847455, 2766.24362136703, 3356.805529330857],
    "Moderator-v2-medium": [-51.66666665300727, -50.85333353700116, 2499.782970129978, 2831.469807568472],
    "Moderator-v2-hard": [-51.766666796058416, -49.08333335118368, 2504.647859382443, 2883.9884920618497],
    "Recommender-v0-default": [-1.8764677169993818, -4.115049262966495, 453.47015257810835, 454.6094536288183],
    "Recommender-v1-easy": [76.26666682958603, 77.93333323299885, 211.9532797416905, 196.18705148156732],
    "Recommender-v1-medium": [45.23333337903023, 53.69999973475933, 223.59245850681327, 211.0649850901682],
    "Recommender-v1-hard": [46.342282205820084, 50.47265598550439, 225.21331270993687, 213.97745400457643],
    "Recommender-v2-easy": [110.93333375453949, 113.83333353698254, 238.69597470399458, 224.29237881617155],
    "Recommender-v2-medium": [93.30000007152557, 94.56666684895754, 261.3744864775799, 243.66746721649542],
    "Recommender-v2-hard": [84.90715456008911, 90.79330951347947, 260.9696337271016, 244.2689577222336],
    "Recommender-v3-easy": [110.93333375453949, 113.83333353698254, 238.69597470399458, 224.29237881617155],
    "Recommender-v3-medium": [78.50000016391277, 94.56666684895754, 263.82767211226746, 243.66746721649542],
    "Recommender-v3-hard": [80.34821379184723, 90.79330951347947, 261.54465077258646, 244.2689577222336],
    "Recommender-v4-easy": [74.19999980926514, 82.23333398997784, 213.46773182821926, 202.03553072793875],
    "Recommender-v4-medium": [37.233333483338356, 56.90000020712614, 231.75613381387666, 215.3833931926638],
    "Recommender-v4-hard": [35.36121890693903, 54.28118519857526, 231.11876833764836, 217.22408789698966],
    "Reddit-v0-default": [32.0, 2.714389529898878, 14209.525895655039, 21.0, 1.0598610048815298, 11948.784612376709],
    "TaskPlatform-v0-default": [
        0.0, 4.5021896958351135, 432.875405985862, 0.0, -1.7750000394880772, 345.8811499532312,
        0.0, 2.920568525791168, 25.026296071708202, 0.0, -0.9062499888241291, 102.0034497603774,
    ],
    "Twitter-v0-default": [81.0, 1.7038486849727723, 22074.278964154422, 83.0, 2.0113929995929993, 19473.781169736932],
}  # fmt: skip


def test_every_registered_id_and_tier_is_pinned():
    """A new id or tier must come with pins of its own: the cases are read from Gymnasium's and
    PettingZoo's registries (what `import oasis_gym` registered), the tiers from the task tables."""
    gym_ids, pz_ids = _registered()
    assert gym_ids == set(oasis_gym.GYMNASIUM_ENVS) and pz_ids == set(oasis_gym.PETTINGZOO_ENVS) == set(PETTINGZOO)
    assert set(PINNED) == set(CASES)
    assert all(math.isfinite(v) for values in PINNED.values() for v in values)


@pytest.mark.parametrize("case", CASES)
def test_pinned(case):
    assert run_case(case) == pytest.approx(PINNED[case], rel=1e-9, abs=1e-9)
