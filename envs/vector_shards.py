"""A native vector env split over processes: the batched engine on every core.

`ShardedVectorEnv(env_id, num_envs, workers=2, **kwargs)` is a `gymnasium.vector.VectorEnv` of
`num_envs` episodes of a task with a native vector env (`oasis_gym.GYMNASIUM_VECTOR_ENVS`:
Recommender-v1..v4, Moderator-v1, -v2), split into `workers` contiguous shares: this process
steps the first share with the task's own vector env while `workers - 1` worker processes step
the others, all at once; the actions are checked first, and the shares' results joined in
order. It is the same env as `gymnasium.make_vec(env_id, num_envs, **kwargs)` bit for bit
(observations, rewards, ends, infos, episode seeds, autoreset), whatever the number of shares
(tests/test_vector_shards.py): an episode of a native vector env depends on its seed only,
never on which episodes are stepped beside it (tests/test_env.py).

Why: one step of the batched engine is one process's numpy, so `oasis-gym train` used one core
of two. Why this process keeps a share: measured in PPO's training (Moderator-v1 hard, 32
episodes of 1,000 users, 2 cores, quiet), a step took 11.6 ms (median) with two worker
processes and this one waiting, 8.9 ms with this process stepping one share and one worker the
other (one process a core, one wake-up a step), against 13.3 ms in one process. Each share keeps
at least `MIN_SHARD` episodes where it can (the engine's cost per episode rises below about 16
episodes a call); `auto_workers` picks the count `oasis-gym train` uses.

Seeds are the vector env's: `reset(seed=s)` gives episode i the seed s + i (a list gives each
its own); `reset()` continues each episode's chain, and the first one without any seed draws
from the OS in each share. A bad action is refused before any share steps. A worker's exception
is raised here as itself (a bad keyword argument is the task's own one-line ValueError), its
cause a `WorkerError` with the worker's traceback; every share answers before an error (or a
Ctrl-C in this process's share) is raised, so the pipes stay in step. Attributes this object
does not hold (`episode_seeds`, `privileged_info`, `max_steps`, ...) are read from the shares
(`get`: per-episode arrays joined in order, else the first share's value). The env pickles (each
share's vector env, episodes in flight and seed chains included: a from-scratch checkpoint) and
unpickles into new workers. Workers ignore Ctrl-C (this process decides: a stopped run still
checkpoints) and end when the env is closed or collected, or this process exits. They start
with the `spawn` method (no fork of a process that runs torch's threads), so a script that
builds one at import time needs the usual ``if __name__ == "__main__":`` guard.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import signal
import traceback
import weakref

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

import oasis_gym
from oasis_gym import load_entry_point

from .agent_spaces import check_action
from .lockstep import reset_seeds

MIN_SHARD = 16  # episodes per share below which the engine's cost per episode rises (train_speed.py)
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def auto_workers(num_envs: int) -> int:
    """The shares `oasis-gym train` steps its episodes in by default: one per core, each with at
    least `MIN_SHARD` episodes (1: no worker process, the vector env in this process alone)."""
    return max(1, min(cores(), num_envs // MIN_SHARD))


def vector_entry_point(env_id: str) -> str:
    """The native vector env's entry point of a registered id (ValueError, one line, if none)."""
    if env_id not in oasis_gym.GYMNASIUM_VECTOR_ENVS:
        ids = ", ".join(oasis_gym.GYMNASIUM_VECTOR_ENVS)
        raise ValueError(f"env_id must be an id with a native vector env ({ids}), got {env_id!r}")
    return oasis_gym.GYMNASIUM_VECTOR_ENVS[env_id]


def _build(build: tuple):
    """A share's vector env: ("make", (entry point, episodes, kwargs)) or ("load", its pickle)."""
    kind, payload = build
    if kind == "make":
        entry_point, k, kwargs = payload
        return load_entry_point(entry_point)(k, **kwargs)
    return pickle.loads(payload)


def _serve(conn, build: tuple) -> None:
    """A worker: build (or unpickle) its vector env, then answer the parent's calls until "close"."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and closes us
    env = None
    try:
        env = _build(build)
        conn.send(("ok", None))
        while True:
            try:
                cmd, arg = conn.recv()
            except EOFError:  # the parent is gone
                break
            if cmd == "close":
                break
            try:
                conn.send(("ok", _answer(env, cmd, arg)))
            except Exception as exc:  # noqa: BLE001 - sent to the parent, raised there
                conn.send(("error", _portable(exc)))
    except Exception as exc:  # noqa: BLE001 - a build that fails is reported the same way
        conn.send(("error", _portable(exc)))
    finally:
        if env is not None:
            env.close()
        conn.close()


def _portable(exc: Exception) -> tuple[Exception, str]:
    """The exception as the parent can raise it (itself if it pickles), with its traceback."""
    trace = traceback.format_exc()
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - an exception that does not pickle: its type and message
        exc = RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc, trace


def _answer(env, cmd: str, arg):
    """One call of the parent on the worker's vector env."""
    if cmd == "step":
        return env.step(arg)
    if cmd == "reset":
        return env.reset(seed=arg)
    if cmd == "get":
        return getattr(env, arg)
    if cmd == "render":
        return env.render()
    if cmd == "pickle":
        return pickle.dumps(env)
    raise ValueError(f"unknown worker call {cmd!r}")


def _shutdown(conns: list, procs: list) -> None:
    """Ask the workers to end, wait for them (a stuck one is terminated), close the pipes."""
    for conn in conns:
        try:
            conn.send(("close", None))
        except (BrokenPipeError, OSError):
            pass
    for proc in procs:
        proc.join(timeout=10)
        if proc.is_alive():  # pragma: no cover - a worker stuck in a step
            proc.terminate()
            proc.join()
    for conn in conns:
        conn.close()


class WorkerError(RuntimeError):
    """The cause of an exception raised in a worker: the worker's traceback."""


def join_infos(infos: list[dict], sizes: list[int]) -> dict:
    """The slices' info dicts as one (Gymnasium's vector info: arrays over the episodes with a
    "_name" mask); a key a slice lacks gets that array's zero values (None for objects) there."""
    out: dict = {}
    keys = list(dict.fromkeys(k for info in infos for k in info))
    for key in keys:
        values = [info.get(key) for info in infos]
        present = next(v for v in values if v is not None)
        if isinstance(present, dict):
            out[key] = join_infos([v or {} for v in values], sizes)
            continue
        present = np.asarray(present)
        parts = []
        for v, n in zip(values, sizes):
            if v is None:
                v = np.full((n, *present.shape[1:]), None, object) if present.dtype == object else (
                    np.zeros((n, *present.shape[1:]), present.dtype))  # fmt: skip
            parts.append(np.asarray(v))
        out[key] = np.concatenate(parts)
    return out


class ShardedVectorEnv(VectorEnv):
    """`num_envs` episodes of a native vector env stepped in `workers` shares, one per process (module docstring)."""

    def __init__(self, env_id: str, num_envs: int, workers: int = 2, **kwargs):
        entry_point = vector_entry_point(env_id)
        for name, value in (("num_envs", num_envs), ("workers", workers)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if workers > num_envs:
            raise ValueError(f"workers must be at most num_envs ({num_envs}), got {workers}")
        self.env_id, self.num_envs = env_id, int(num_envs)
        bounds = np.linspace(0, num_envs, workers + 1).round().astype(int)
        self.sizes = [int(b - a) for a, b in zip(bounds[:-1], bounds[1:])]
        self._start([("make", (entry_point, k, kwargs)) for k in self.sizes])

    def _start(self, builds: list[tuple]) -> None:
        """Start a worker for each build but the first, which this process holds (it steps its own
        share while the workers step theirs); read the env's spaces from it."""
        self._conns, self._procs, self.closed = [], [], False
        self._finalizer = weakref.finalize(self, _shutdown, self._conns, self._procs)
        ctx = mp.get_context("spawn")
        saved = {v: os.environ.get(v) for v in THREAD_VARS}
        os.environ.update({v: "1" for v in THREAD_VARS})  # one BLAS thread a worker: they share the cores
        try:
            for build in builds[1:]:
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=_serve, args=(child, build), daemon=True, name="oasis-gym env worker")
                proc.start()
                child.close()
                self._conns.append(parent)
                self._procs.append(proc)
        finally:
            for v, old in saved.items():
                if old is None:
                    os.environ.pop(v, None)
                else:
                    os.environ[v] = old
        try:
            self._local = _build(builds[0])  # while the workers build theirs
            for conn in self._conns:
                self._receive(conn)
        except BaseException:
            self.close()
            raise
        local = self._local
        self.single_observation_space, self.single_action_space = (
            local.single_observation_space,
            local.single_action_space,
        )
        self.metadata, self.render_mode = local.metadata, local.render_mode
        self.autoreset_mode = AutoresetMode(self.metadata["autoreset_mode"])
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.spec = gym.spec(self.env_id)

    @property
    def workers(self) -> int:
        """The number of shares the episodes are stepped in (this process's and its worker processes')."""
        return len(self.sizes)

    @staticmethod
    def _receive(conn):
        status, payload = conn.recv()
        if status == "error":  # the worker's own exception (a bad argument stays a one-line ValueError)
            exc, trace = payload
            raise exc from WorkerError(f"in an env worker:\n{trace}")
        return payload

    def _call_all(self, cmd: str, args: list) -> list:
        """Send each worker its call, answer this process's own, then collect the workers' answers in
        order (all run at once). Every worker's answer is read even when a call fails (or Ctrl-C
        stops this process's share), so the pipes stay in step; then the first error is raised."""
        if self.closed:
            raise RuntimeError("the env is closed")
        for conn, arg in zip(self._conns, args[1:]):
            conn.send((cmd, arg))
        answers, error = [], None
        try:
            answers.append(_answer(self._local, cmd, args[0]))
        except BaseException as exc:  # noqa: BLE001 - raised below, once the workers have answered
            error = exc
        for conn in self._conns:
            try:
                answers.append(self._receive(conn))
            except BaseException as exc:  # noqa: BLE001 - as above
                error = error or exc
        if error is not None:
            raise error
        return answers

    def _slices(self, array) -> list:
        ends = np.cumsum(self.sizes)
        return [array[e - n : e] for e, n in zip(ends, self.sizes)]

    def reset(self, *, seed=None, options=None):
        """Start all episodes (seed: s -> s + i, or one seed each; None: each episode's next)."""
        if seed is None:
            parts = self._call_all("reset", [None] * self.workers)
        else:
            seeds = reset_seeds(seed, self.num_envs)
            super().reset(seed=int(seeds[0]))
            parts = self._call_all("reset", [[int(s) for s in part] for part in self._slices(seeds)])
        obs = np.concatenate([p[0] for p in parts])
        return obs, join_infos([p[1] for p in parts], self.sizes)

    def step(self, actions):
        """Step every episode in its share, all shares at once; autoreset as the vector env's."""
        actions = check_action(self, actions, batched=True)  # before any share steps
        parts = self._call_all("step", self._slices(actions))
        obs, reward, terminated, truncated = (np.concatenate([p[i] for p in parts]) for i in range(4))
        return obs, reward, terminated, truncated, join_infos([p[4] for p in parts], self.sizes)

    def get(self, name: str):
        """An attribute of the shares' vector envs: per-episode arrays joined in episode order,
        anything else the first share's."""
        values = self._call_all("get", [name] * self.workers)
        if isinstance(values[0], np.ndarray) and values[0].ndim and len(values[0]) == self.sizes[0]:
            return np.concatenate(values)
        return values[0]

    def __getattr__(self, name: str):
        if name.startswith("_") or name in ("closed", "env_id", "sizes") or "_conns" not in self.__dict__:
            raise AttributeError(name)
        return self.get(name)

    def render(self):
        """The shares' renderings joined (ansi: one line per episode), or None."""
        if self.render_mode is None:
            return None
        return tuple(line for part in self._call_all("render", [None] * self.workers) for line in part)

    def close(self, **kwargs) -> None:
        """End the workers (idempotent; also when the env is collected or the interpreter exits)."""
        if "_finalizer" in self.__dict__:
            self._finalizer()
        if not self.__dict__.get("closed", True) and "_local" in self.__dict__:
            self._local.close()
        self.closed = True

    def __getstate__(self) -> dict:
        """The shares' vector envs, pickled (episodes in flight and seed chains included)."""
        shards = self._call_all("pickle", [None] * self.workers)
        keep = {
            k: v for k, v in self.__dict__.items() if k not in ("_conns", "_procs", "closed", "_finalizer", "_local")
        }
        return keep | {"_shards": shards}

    def __setstate__(self, state: dict) -> None:
        shards = state.pop("_shards")
        self.__dict__.update(state)
        self._start([("load", shard) for shard in shards])
