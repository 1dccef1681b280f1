"""Gymnasium platform-agent envs, SB3 training, SB3Policy and evaluation against baselines."""

from __future__ import annotations

import pickle

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_checker import check_env  # noqa: E402

from oasis_gym.envs.moderator_v0 import ModeratorEnv  # noqa: E402
from oasis_gym.envs.platform_agent_env import register_gym_envs  # noqa: E402
from oasis_gym.envs.platform_rules import OracleModerator, ReportThresholdModerator  # noqa: E402
from oasis_gym.envs.recommender_v0 import RecommenderEnv  # noqa: E402
from oasis_gym.policies.sb3 import SB3Policy, flatten_user_obs, user_model_spaces  # noqa: E402
from oasis_gym.scenarios.misinfo_stream import MisinfoScenario  # noqa: E402

TINY = dict(
    users=80,
    max_cycles=6,
    activation=0.3,
    scenario=MisinfoScenario(initial_true=8, initial_misinfo=4, stream_rate=1.5, n_outlets=5, n_misinfo_accounts=3),
)


@pytest.fixture(autouse=True)
def one_torch_thread():
    """PPO updates on tiny batches: one torch thread (several oversubscribe a small shared machine)."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def tiny(cls, **kw):
    """A small env of class `cls` (the tiny scenario), `kw` overriding."""
    return cls(**{**TINY, **kw})


def rollout(env, actions, seed):
    """Observations and rewards of one episode from `reset(seed)` with these actions."""
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out += [obs, np.float64(r)]
        if term or trunc:
            break
    return out


@pytest.mark.parametrize("cls", [RecommenderEnv, ModeratorEnv])
def test_check_env(cls):
    """SB3's `check_env` passes for both platform-agent envs."""
    env = tiny(cls)
    check_env(env, warn=False)
    env.close()


def test_gymnasium_make_and_spaces():
    """`gymnasium.make` builds both envs with their documented spaces; episodes run to `max_cycles`."""
    register_gym_envs()
    register_gym_envs()  # idempotent
    rec = gymnasium.make("oasis_gym/Recommender-v0", **TINY)
    assert rec.observation_space == spaces.Box(-np.inf, np.inf, (26,), np.float32)
    assert rec.action_space == spaces.Box(-1.0, 1.0, (3 * 8,), np.float32)  # per-user W: (user feats, cand feats)
    glob = gymnasium.make("oasis_gym/Recommender-v0", ranking="global", **TINY)
    assert glob.action_space == spaces.Box(-1.0, 1.0, (8,), np.float32)
    glob.close()
    mod = gymnasium.make("oasis_gym/Moderator-v0", **TINY)
    top_m = TINY["scenario"].agent_params["moderator"]["top_m"]
    assert mod.action_space == spaces.MultiDiscrete([6] * top_m)  # 5: request a fact-check
    assert mod.observation_space.shape == (top_m * 18,)
    for env in (rec, mod):
        obs, info = env.reset(seed=3)
        assert env.observation_space.contains(obs)
        steps = 0
        while True:
            obs, r, term, trunc, info = env.step(env.action_space.sample())
            steps += 1
            assert np.isfinite(r) and not term and env.observation_space.contains(obs)
            if trunc:
                break
        assert steps == TINY["max_cycles"]
        assert info["episode_metrics"]["steps"] == steps
        env.close()


def test_seeded_reset_reproduces_episode():
    """Same seed and actions, same episode; another seed, another episode."""
    env = tiny(ModeratorEnv)
    actions = [np.full(env.action_space.shape, k % 5) for k in range(6)]
    a, b = rollout(env, actions, 11), rollout(env, actions, 11)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    c = rollout(env, actions, 12)
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_scenario_streams_labelled_posts_and_users_report():
    """The scenario seeds labelled posts, keeps posting, and its users report misinformation."""
    env = tiny(ModeratorEnv, max_cycles=6)
    env.reset(seed=0)
    pf = env.sim.platform
    seeded = pf.n_posts
    labels = pf.p_label.a[:seeded]
    assert (labels == 1).sum() == 4 and (labels == 0).sum() == 8
    reports = 0
    for _ in range(6):
        _, _, _, _, info = env.step(np.zeros(env.action_space.shape, np.int64))
        reports += info["reports"]
    assert pf.n_posts > seeded and (pf.p_label.a[seeded:] >= 0).any()  # the stream keeps posting
    assert reports > 0 and pf.p_reports.a[pf.p_label.a == 1].sum() > 0


def test_moderation_rules_act_on_misinformation():
    """The oracle only touches misinformation (counted in `info`); the report rule acts at its threshold."""
    env = tiny(ModeratorEnv)
    env.reset(seed=1)
    rule = OracleModerator(action=4)
    counted = {"label": 0, "downrank": 0, "remove": 0, "suspend": 0}
    for _ in range(6):
        _, _, _, _, info = env.step(rule(env.sim))
        for k, v in info["moderation"].items():
            counted[k] += v
    out = env.sim.platform
    hit = out.p_status.a > 0
    assert hit.any() and (out.p_label.a[hit] == 1).all()  # the oracle only touches misinformation
    assert out.u_suspended.a.any()
    assert counted == {"label": 0, "downrank": 0, "remove": int(hit.sum()), "suspend": int(out.u_suspended.a.sum())}
    thr = ReportThresholdModerator(threshold=1)
    env.reset(seed=1)
    acted = thr(env.sim)
    slots = env.sim.platform_agents["moderator_0"].slots
    assert np.array_equal(acted > 0, (slots >= 0) & (env.sim.platform.p_reports.a[np.maximum(slots, 0)] >= 1))


def test_feed_baseline_ignores_action_and_uses_recommender_reward():
    """A fixed feed ignores the action and is scored with the learned ranking's reward."""
    env = tiny(RecommenderEnv, feed="reddit")
    lo = [np.full(24, -1.0, np.float32)] * 6
    hi = [np.full(24, 1.0, np.float32)] * 6
    a, b = rollout(env, lo, 5), rollout(env, hi, 5)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert env.sim.recsys.name == "reddit" and "recommender_0" not in env.sim.platform_agents
    # the learned-ranking env scores its feeds with the same function
    learned = tiny(RecommenderEnv)
    r1 = rollout(learned, lo, 5)[2::2]
    r2 = rollout(learned, hi, 5)[2::2]
    assert r1[0] == r2[0] and r1 != r2  # the first feeds precede any action; later ones follow it


def _hybrid_users(env):
    from oasis_gym.policies.abm import ABMPolicy
    from oasis_gym.policies.base import RandomPolicy
    from oasis_gym.policies.hybrid import HybridPolicy

    return HybridPolicy.top_k_by_followers(env, RandomPolicy(), ABMPolicy(), 5)


def test_user_policy_factory_drives_users():
    """A user-policy factory drives the background users and pickles with the env."""
    env = tiny(RecommenderEnv, user_policy=_hybrid_users)
    rollout(env, [np.zeros(24, np.float32)] * 3, 2)
    users = env._users
    assert type(users).__name__ == "HybridPolicy" and len(users.routes[0][1]) == 5
    traced = env.sim.journal.conn.execute("SELECT COUNT(*) FROM trace").fetchone()[0]
    assert traced > 0
    clone = pickle.loads(pickle.dumps(env))  # a module-level factory pickles with the env
    assert rollout(clone, [np.zeros(24, np.float32)] * 2, 2)[0].shape == (26,)


def test_pickle_rebuilds_lazily():
    """A pickled env rebuilds its simulation lazily and replays the same episode."""
    env = tiny(RecommenderEnv, moderator="report_threshold")
    first = rollout(env, [np.zeros(24, np.float32)] * 3, 4)
    clone = pickle.loads(pickle.dumps(env))
    assert clone._env is None and clone.observation_space == env.observation_space
    again = rollout(clone, [np.zeros(24, np.float32)] * 3, 4)
    assert all(np.array_equal(x, y) for x, y in zip(first, again))


def test_subproc_vec_env_two_workers():
    """Two subprocess workers: different seeds, auto-reset at the episode end with `episode_metrics`."""
    from stable_baselines3.common.vec_env import SubprocVecEnv

    from oasis_gym.train.common import EnvConfig, EnvFactory

    cfg = EnvConfig(
        kind="moderator", users=TINY["users"], max_cycles=4, scenario=TINY["scenario"], env_kwargs={"activation": 0.3}
    )
    vec = SubprocVecEnv([EnvFactory(cfg), EnvFactory(cfg)])
    try:
        vec.seed(0)
        obs = vec.reset()
        assert obs.shape == (2, 20 * 18)
        assert not np.array_equal(obs[0], obs[1])  # different seeds per worker
        ends = 0
        for _ in range(5):  # crosses an episode end: auto-reset
            obs, rew, done, infos = vec.step(np.stack([vec.action_space.sample() for _ in range(2)]))
            assert obs.shape == (2, 20 * 18) and rew.shape == (2,)
            ends += int(done.sum())
            assert all("episode_metrics" in infos[i] for i in np.flatnonzero(done))
        assert ends == 2
    finally:
        vec.close()


def _mean_return(model, env, seeds, deterministic):
    from stable_baselines3.common.utils import set_random_seed

    set_random_seed(0)
    out = []
    for s in seeds:
        obs, _ = env.reset(seed=s)
        total, done = 0.0, False
        while not done:
            obs, r, term, trunc, _ = env.step(model.predict(obs, deterministic=deterministic)[0])
            total += r
            done = term or trunc
        out.append(total)
    return float(np.mean(out))


def test_ppo_improves_and_model_reloads_as_policy(tmp_path):
    """A short PPO run improves the moderator; the saved model reloads as an `SB3Policy` and drives another env."""
    from stable_baselines3.common.logger import configure

    from oasis_gym.train.callbacks import EnvMetricsCallback

    # a clear signal for a short run: acting on a post that is not misinformation costs 0.2,
    # so the untrained policy (acting on ~4 of 5 posts a step) has a lot to gain
    scenario = MisinfoScenario(
        initial_true=8,
        initial_misinfo=4,
        stream_rate=1.5,
        n_outlets=5,
        n_misinfo_accounts=3,
        agent_params={"moderator": {"top_m": 5, "action_cost": 0.2}},
    )
    env = ModeratorEnv(users=80, max_cycles=8, activation=0.3, scenario=scenario)
    model = PPO(
        "MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=10, learning_rate=3e-3, gamma=0.9, seed=0, device="cpu"
    )
    model.set_logger(configure(str(tmp_path / "log"), ["csv"]))
    seeds = (100, 101, 102)
    before = _mean_return(model, env, seeds, deterministic=False)
    model.learn(768, callback=EnvMetricsCallback())
    after = _mean_return(model, env, seeds, deterministic=False)
    assert after > before
    # the emergent metrics were logged next to SB3's own curves
    header = (tmp_path / "log" / "progress.csv").read_text().splitlines()[0].split(",")
    assert {
        "env/misinfo_share",
        "env/engagement_rate",
        "env/opinion_std",
        "env/moderation_remove",
        "train/value_loss",
    } <= set(header)
    path = tmp_path / "moderator.zip"
    model.save(str(path))
    policy = SB3Policy.load(path, agent="moderator_0")
    obs, _ = env.reset(seed=7)
    assert np.array_equal(policy.predict(obs), model.predict(obs, deterministic=True)[0])
    assert np.array_equal(policy(env.sim), model.predict(obs, deterministic=True)[0])
    # the loaded policy drives moderator_0 inside another env, as a fixed rule
    rec = RecommenderEnv(users=80, max_cycles=3, activation=0.3, scenario=scenario, moderator=policy)
    rollout(rec, [np.zeros(24, np.float32)] * 3, 0)
    assert "moderator_0" in rec.sim.platform_agents


def test_obs_normalizer_round_trip(tmp_path):
    """The saved VecNormalize statistics let `SB3Policy` act on raw observations as the model did."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from oasis_gym.policies.sb3 import normalizer_path
    from oasis_gym.train.ppo import save_obs_normalizer

    env = tiny(RecommenderEnv)
    vec = VecNormalize(DummyVecEnv([lambda: env]), norm_reward=False)
    vec.seed(0)
    vec.reset()
    for _ in range(4):
        vec.step(np.zeros((1, 24), np.float32))
    model = PPO("MlpPolicy", vec, n_steps=16, batch_size=16, seed=0, device="cpu")
    path = tmp_path / "rec.zip"
    model.save(str(path))
    save_obs_normalizer(vec, normalizer_path(path))
    policy = SB3Policy.load(path, agent="recommender_0")
    raw = vec.get_original_obs()[0]
    expect = model.predict(vec.normalize_obs(raw), deterministic=True)[0]
    assert np.allclose(policy.predict(raw), expect)


def test_sb3_policy_drives_users():
    """A model over the flattened user spaces drives users through `SB3Policy`; masked
    action types become do_nothing."""
    from oasis_gym.envs import twitter_v0

    env = twitter_v0.parallel_env(users=40, max_cycles=3, activation=0.5, db_path=":memory:")
    env.reset(seed=0)
    obs = env.sim.obs
    row = env.row_observation(obs, 0)
    flat = flatten_user_obs(obs)
    assert np.allclose(flat[0], spaces.flatten(env.observation_space("user_0"), row).astype(np.float32))
    obs_space, act_space = user_model_spaces(env)
    assert flat.shape[1] == obs_space.shape[0]

    class UserSpaces(gymnasium.Env):  # only to build a model with the user spaces
        observation_space, action_space = obs_space, act_space

    model = PPO("MlpPolicy", UserSpaces(), n_steps=8, batch_size=8, seed=0, device="cpu")
    policy = SB3Policy(model)
    policy.reset(env, np.arange(40), 0)
    acts = policy.act(env, obs)
    assert np.array_equal(acts.users, obs.users)
    allowed = obs.mask_type[np.arange(len(obs)), acts.type] > 0
    assert allowed.all()  # masked action types were turned into do_nothing
    out = env.step_batch(acts)
    assert len(out.users) == len(obs)


def test_evaluate_baselines_share_scenario():
    """Every baseline is evaluated on the same scenario and seeds."""
    from oasis_gym.train.common import EnvConfig
    from oasis_gym.train.evaluate import evaluate_moderator, evaluate_recommender, summarize

    rec_cfg = EnvConfig(
        kind="recommender", users=80, max_cycles=5, scenario=TINY["scenario"], env_kwargs={"activation": 0.3}
    )
    hot = evaluate_recommender("reddit", (1, 2), rec_cfg)
    rnd = evaluate_recommender("random", (1, 2), rec_cfg)
    assert len(hot) == 2 and summarize(hot)["std"] >= 0
    assert [r["impressions"] for r in hot] != [r["impressions"] for r in rnd] or hot != rnd
    mod_cfg = EnvConfig(
        kind="moderator", users=80, max_cycles=5, scenario=TINY["scenario"], env_kwargs={"activation": 0.3}
    )
    none = evaluate_moderator("none", (1,), mod_cfg)[0]
    oracle = evaluate_moderator("oracle_suspend", (1,), mod_cfg)[0]
    assert none["posts_actioned"] == 0 and none["misinfo_actioned_share"] == 0.0
    assert oracle["true_actioned_share"] == 0.0 and oracle["misinfo_impressions"] <= none["misinfo_impressions"]
