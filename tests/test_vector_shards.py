"""`ShardedVectorEnv` (envs/vector_shards.py): the native vector env split over worker processes
is the same env bit for bit, for every registered task, in both autoreset modes, with any split;
it pickles with its episodes in flight, refuses bad input before a worker steps, reports a
worker's error as its own, survives a Ctrl-C in a worker; and training on it gives the same
PPO, to the last bit of every parameter, as training in one process with one torch thread."""

from __future__ import annotations

import hashlib
import os
import pickle
import signal

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import oasis_gym
from oasis_gym.envs.vector_shards import ShardedVectorEnv, WorkerError, auto_workers, join_infos

USERS, STEPS = 60, 4  # 4-step episodes: a reset within a few steps of every test
IDS = sorted(oasis_gym.GYMNASIUM_VECTOR_ENVS)


def _native(env_id: str, k: int, **kw):
    return gym.make_vec(env_id, num_envs=k, vectorization_mode="vector_entry_point", **kw)


def _actions(env, steps: int, seed: int = 0) -> list[np.ndarray]:
    space, rng = env.action_space, np.random.default_rng(seed)
    if np.issubdtype(space.dtype, np.integer):
        low, high = (space.start, space.start + space.nvec - 1) if hasattr(space, "nvec") else (space.low, space.high)
        return [rng.integers(low, high + 1) for _ in range(steps)]
    return [rng.uniform(space.low, space.high).astype(space.dtype) for _ in range(steps)]


def _same(a, b, where: str = "") -> None:
    """Equal to the last bit: arrays (object arrays element by element), dicts key by key."""
    if isinstance(a, dict):
        assert list(a) == list(b), (where, list(a), list(b))
        for key in a:
            _same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) and a.dtype == object:
        assert a.shape == b.shape, where
        for x, y in zip(a, b):
            _same(x, y, where)
    elif a is None:
        assert b is None, where
    else:
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), where


def _play(env, actions, seed=3) -> list:
    out = [env.reset(seed=seed)]
    out += [env.step(a) for a in actions]
    out.append(env.reset())  # no seed: each episode's next of its chain
    out += [env.step(a) for a in actions[:2]]
    return out


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_the_sharded_env_is_the_native_vector_env_bit_for_bit(env_id, mode):
    kw = {"users": USERS, "max_steps": STEPS, "difficulty": "hard", "autoreset_mode": mode}
    native = _native(env_id, 5, **kw)
    actions = _actions(native, 2 * STEPS + 1)
    expected = _play(native, actions)
    sharded = ShardedVectorEnv(env_id, 5, workers=2, **kw)  # slices of 2 and 3 episodes
    try:
        assert sharded.sizes == [2, 3] and sharded.workers == 2
        assert sharded.single_observation_space == native.single_observation_space
        assert sharded.single_action_space == native.single_action_space
        assert sharded.observation_space == native.observation_space and sharded.action_space == native.action_space
        assert sharded.autoreset_mode == mode
        _same(_play(sharded, actions), expected)
        assert np.array_equal(sharded.episode_seeds, native.unwrapped.episode_seeds)
        assert sharded.max_steps == STEPS
    finally:
        sharded.close()


@pytest.mark.parametrize("workers", [1, 3, 7])
def test_any_split_plays_the_same_episodes(workers):
    env_id, kw = "oasis_gym/Moderator-v1", {"users": USERS, "max_steps": STEPS, "autoreset_mode": "SameStep"}
    native = _native(env_id, 7, **kw)
    actions = _actions(native, STEPS + 2, seed=1)
    with_workers = ShardedVectorEnv(env_id, 7, workers=workers, **kw)
    try:
        assert sum(with_workers.sizes) == 7 and len(with_workers.sizes) == workers
        _same(
            _play(with_workers, actions, seed=[11, 5, 9, 2, 30, 4, 8]),
            _play(native, actions, seed=[11, 5, 9, 2, 30, 4, 8]),
        )
    finally:
        with_workers.close()


def test_a_pickled_env_goes_on_with_its_episodes_in_flight():
    env_id, kw = "oasis_gym/Recommender-v3", {"users": USERS, "max_steps": STEPS, "difficulty": "medium"}
    native = _native(env_id, 4, **kw).unwrapped
    sharded = ShardedVectorEnv(env_id, 4, workers=2, **kw)
    actions = _actions(native, 3 * STEPS)
    try:
        native.reset(seed=40)
        sharded.reset(seed=40)
        for a in actions[: STEPS + 1]:  # past an episode's end: the seed chains have moved on
            native.step(a)
            sharded.step(a)
        copy = pickle.loads(pickle.dumps(sharded))
        twin = pickle.loads(pickle.dumps(native))
        try:
            assert copy.workers == 2 and not copy.closed
            _same([copy.step(a) for a in actions[STEPS + 1 :]], [twin.step(a) for a in actions[STEPS + 1 :]])
            _same(copy.reset(), twin.reset())
        finally:
            copy.close()
    finally:
        sharded.close()


def test_a_bad_action_is_refused_before_any_worker_steps():
    env_id, kw = "oasis_gym/Moderator-v1", {"users": USERS, "max_steps": STEPS}
    native = _native(env_id, 4, **kw)
    sharded = ShardedVectorEnv(env_id, 4, workers=2, **kw)
    try:
        a = _actions(native, 1)[0]
        native.reset(seed=0)
        sharded.reset(seed=0)
        bad = a.copy()
        bad[3, 0] = 99  # the last worker's slice: the first may not step either
        with pytest.raises(ValueError, match="Moderator-v1 action") as err:
            sharded.step(bad)
        assert "\n" not in str(err.value)
        with pytest.raises(ValueError):
            sharded.step(a[:3])  # too few rows
        _same(sharded.step(a), native.step(a))  # nothing moved
    finally:
        sharded.close()


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("oasis_gym/Moderator-v0", 4), {}, "native vector env"),
        (("nope", 4), {}, "native vector env"),
        (("oasis_gym/Moderator-v1", 0), {}, "num_envs"),
        (("oasis_gym/Moderator-v1", True), {}, "num_envs"),
        (("oasis_gym/Moderator-v1", 4), {"workers": 0}, "workers"),
        (("oasis_gym/Moderator-v1", 4), {"workers": 2.0}, "workers"),
        (("oasis_gym/Moderator-v1", 4), {"workers": 5}, "at most num_envs"),
    ],
)
def test_bad_arguments_are_refused_in_one_line_before_a_worker_starts(args, kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        ShardedVectorEnv(*args, **kwargs)
    assert "\n" not in str(err.value)


def test_a_bad_keyword_argument_is_the_tasks_own_one_line_error():
    with pytest.raises(ValueError, match="difficulty") as err:
        ShardedVectorEnv("oasis_gym/Moderator-v1", 4, workers=2, users=USERS, difficulty="impossible")
    assert "\n" not in str(err.value)


def test_an_error_in_a_worker_is_raised_as_itself_with_the_workers_traceback():
    env = ShardedVectorEnv("oasis_gym/Moderator-v1", 4, workers=2, users=USERS, max_steps=STEPS)
    try:
        with pytest.raises(AttributeError, match="no_such_thing") as err:
            env.get("no_such_thing")  # this process's share fails too: the worker's answer is read all the same
        worker = env._conns[0]
        worker.send(("get", "no_such_thing"))
        with pytest.raises(AttributeError, match="no_such_thing") as err:
            env._receive(worker)
        assert isinstance(err.value.__cause__, WorkerError) and "Traceback" in str(err.value.__cause__)
        _same(env.reset(seed=2), _native("oasis_gym/Moderator-v1", 4, users=USERS, max_steps=STEPS).reset(seed=2))
    finally:
        env.close()


def test_a_ctrl_c_in_a_worker_is_ignored_and_close_ends_the_workers():
    env = ShardedVectorEnv("oasis_gym/Moderator-v1", 4, workers=2, users=USERS, max_steps=STEPS)
    procs = list(env._procs)
    assert len(procs) == 1  # this process steps the other share
    env.reset(seed=0)
    for proc in procs:
        os.kill(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole process group
    env.step(_actions(env, 1)[0])  # the workers still answer: the parent decides when to stop
    env.close()
    env.close()  # idempotent
    assert all(not p.is_alive() for p in procs)
    with pytest.raises(RuntimeError, match="closed"):
        env.step(_actions(env, 1)[0])


def test_render_joins_the_workers_lines():
    kw = {"users": USERS, "max_steps": STEPS, "render_mode": "ansi"}
    native = _native("oasis_gym/Moderator-v1", 3, **kw)
    env = ShardedVectorEnv("oasis_gym/Moderator-v1", 3, workers=2, **kw)
    try:
        native.reset(seed=1)
        env.reset(seed=1)
        assert env.render() == native.render() and len(env.render()) == 3
    finally:
        env.close()


def test_join_infos_fills_a_key_a_slice_lacks():
    joined = join_infos(
        [{"a": np.array([1, 2]), "f": {"x": np.array([1.5])}}, {"o": np.array([None, "x"], object)}], [2, 2]
    )
    assert joined["a"].tolist() == [1, 2, 0, 0]
    assert joined["o"].tolist() == [None, None, None, "x"]
    assert joined["f"]["x"].shape == (3,)  # a nested dict is joined the same way (row sizes as given)


def test_auto_workers_keeps_at_least_16_episodes_a_worker():
    assert auto_workers(8) == 1 and auto_workers(16) == 1
    assert auto_workers(32) == min(2, len(os.sched_getaffinity(0)))


def _train(workers: int, tmp_path) -> tuple[str, list]:
    from oasis_gym.train import v1

    args = v1.Args(task="moderator", version=1, difficulty="hard", users=USERS, max_steps=STEPS, n_envs=4,
                   n_steps=8, batch_size=16, n_epochs=2, timesteps=64, anchor="none", quiet=True,
                   env_workers=workers, out=str(tmp_path / f"w{workers}"))  # fmt: skip
    model, vec, info = v1.train_on_task(args)
    params = b"".join(p.detach().numpy().tobytes() for p in model.policy.parameters())
    vec.close()
    return hashlib.sha256(params).hexdigest(), info["learning_curve"]


def test_training_on_two_workers_with_two_update_threads_is_training_in_one_process(tmp_path):
    """`oasis-gym train`'s moderator: env workers and torch threads in the update change no bit."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as `oasis-gym train` runs (`limit_threads`)
    try:
        one = _train(1, tmp_path)
        two = _train(2, tmp_path)  # the slot policy's updates on 2 torch threads (`UpdateThreads`)
        assert torch.get_num_threads() == 1  # put back after training
    finally:
        torch.set_num_threads(threads)
    assert one == two


@pytest.mark.parametrize(
    ("loadavg", "busy"),
    [
        ("1.31 1.20 0.90 1/130 4242", False),  # this process alone runs; a training's own load
        ("1.31 1.20 0.90 2/130 4242", True),  # another runnable task now
        ("2.40 1.20 0.90 1/130 4242", True),  # the last minute: more work than cores
    ],
)
def test_the_updates_take_a_second_thread_only_on_an_idle_machine(loadavg, busy, monkeypatch):
    from oasis_gym.train import callbacks

    assert callbacks.machine_busy(2, loadavg) is busy
    # elsewhere (no /proc/loadavg): the load alone (a fixed one: the real load moves between two reads)
    monkeypatch.setattr(callbacks.os, "getloadavg", lambda: (float(loadavg.split()[0]), 0.0, 0.0))
    assert callbacks.machine_busy(2, "not a loadavg") is (float(loadavg.split()[0]) >= 2)
