"""Where a sweep's runs compute: one after another in this process (`LocalExecutor`, the
default) or as Ray tasks spread over a Ray cluster (`RayExecutor`, ``--executor ray``).

Both compute the same function on the same arguments (`sweep.run_config`: a grid point's
whole scenario configuration, its seed, the steps) and hand each result back as it finishes,
in whatever order; the sweep (`sweep._run_plan`) writes it at once through its store
(`sweep_store.SweepRuns`: ``runs/<point>_seed<seed>.json``) and builds the tables in grid
order at the end, so both executors give the same bytes and ``--resume`` continues a sweep
started with either one. A run that raises is tried a second time (Ray: ``max_retries=1``
for a lost worker or node, ``retry_exceptions=True`` for an exception), then reported as
`Failed` (its error in one line) while the other runs go on.

Ray is imported only here and only for ``--executor ray`` (`ray_module`). Each Ray task
declares its resources: ``--cpus-per-run`` (default 1) and ``--gpus-per-run`` (default 1
when the run's LLM users run a model in the task's own process, i.e. a hybrid or llm
policy whose backend is not "openai"; 0 otherwise: ABM users, or LLM users on endpoints).
A task receives the configuration itself, not the scenario file's name: the worker nodes
need oasis-gym (the same version) installed, not the scenario file; it runs in the folder
the sweep was started from where that node has it, so data files a scenario names by a
relative path must be there on every node (shared storage). It writes nothing there (no
journal, no TensorBoard: a sweep's runs keep only their effects, shipped back to the
driver), so only ``--out`` on the driver's machine is written.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..app.interrupts import deferred
from ..checks import ray_address

__all__ = [
    "EXECUTORS",
    "ATTEMPTS",
    "Failed",
    "LocalExecutor",
    "RayExecutor",
    "make_executor",
    "check_address",
    "ray_module",
    "gpus_for",
]

EXECUTORS = ("local", "ray")
ATTEMPTS = 2  # a run that fails is tried once more, then reported
STOP_GRACE_S = 4.0  # how long `ray.shutdown` may take at `close` before the local Ray is killed
_CORE = ("raylet", "gcs_server")  # the local Ray's processes that `close` leaves to `ray.shutdown` on a stop
RAY_HINT = "pip install 'oasis-gym[ray]' (Ray core; or pip install ray)"

Job = tuple[Any, tuple]  # (key, the arguments of the run function)


@dataclass(frozen=True)
class Failed:
    """A run that failed on every attempt: its last error in one line."""

    error: str
    attempts: int = ATTEMPTS


def error_line(err: BaseException) -> str:
    """`FileNotFoundError: no packaged data file 'x.json'`: the class and the message's first line."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


def _timed(fn: Callable[..., dict], *args: Any) -> tuple[dict, float]:
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def _task(cwd: str, fn: Callable[..., dict], *args: Any) -> tuple[dict, float]:
    """A Ray task: `fn(*args)` in the sweep's working folder where the node has it (a Ray
    worker starts elsewhere: a scenario's relative file paths then mean what they mean locally)."""
    if os.path.isdir(cwd):
        os.chdir(cwd)
    return _timed(fn, *args)


class LocalExecutor:
    """The runs one after another in this process (the default executor)."""

    name = "local"

    def start(self, plan: Mapping[str, Any] | None = None) -> None:
        """Nothing to start."""

    def where(self) -> str:
        """Where the runs compute, in words."""
        return "in this process"

    def map(self, fn: Callable[..., dict], jobs: Iterable[Job]) -> Iterator[tuple[Any, dict | Failed, float]]:
        """(key, `fn(*args)` or `Failed`, seconds) for each job, in order; a job that raises
        an exception is run once more before it counts as failed (Ctrl-C stops everything)."""
        for key, args in jobs:
            spent = 0.0
            for _ in range(ATTEMPTS):
                start = time.perf_counter()
                try:
                    out = fn(*args)
                except Exception as err:  # noqa: BLE001 - any failure of one run is that run's
                    spent += time.perf_counter() - start
                    last = err
                    continue
                yield key, out, spent + time.perf_counter() - start
                break
            else:
                yield key, Failed(error_line(last)), spent

    def close(self) -> None:
        """Nothing to close."""


def ray_module():
    """`import ray`, or ValueError (one line: how to install it) where Ray is not installed."""
    try:
        import ray
    except ImportError as err:
        raise ValueError(f"--executor ray needs Ray, which is not installed ({err}): {RAY_HINT}") from None
    return ray


def check_address(address: str | None) -> str | None:
    """`--address` as Ray takes it (`checks.ray_address`), or None; else ValueError (one line)."""
    return None if address is None else ray_address(address)


def _reachable(address: str, timeout: float = 10.0) -> None:
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as err:
        raise ValueError(
            f"--address {address}: nothing answers there ({error_line(err)}); start the cluster's head with "
            "`ray start --head` and give the address it prints"
        ) from None


@contextlib.contextmanager
def _our_handlers() -> Iterator[None]:
    """The SIGINT / SIGTERM handlers of before, installed again after the block (main thread):
    Ray's core sets its own as it starts and the default ones (killed, no line) as it stops."""
    main = threading.current_thread() is threading.main_thread()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        yield
    finally:
        for s, handler in handlers.items():
            if handler is not None:
                signal.signal(s, handler)


def _local_ray_processes(ray) -> dict[str, list]:
    """The processes (`subprocess.Popen`) of the local Ray that `ray.init` started in this
    driver by kind ("raylet", "gcs_server", "monitor", ...: Ray's own record of them): empty for
    a cluster it connected to, whose processes are not this driver's."""
    node = getattr(getattr(getattr(ray, "_private", None), "worker", None), "_global_node", None)
    groups = getattr(node, "all_processes", None) or {}
    return {kind: [i.process for i in group if getattr(i, "process", None)] for kind, group in groups.items()}


def _kill_local_ray(processes: Iterable) -> None:
    """SIGKILL those of `processes` still running (the watchdog of `RayExecutor.close`): the
    driver's waits on them then end. Never `ray stop`, which ends every Ray on the machine."""
    for process in processes:
        with contextlib.suppress(OSError):
            if process.poll() is None:  # (Popen: never a pid that has since been reused)
                process.kill()


def gpus_for(config: Mapping[str, Any]) -> float:
    """1 when the run's LLM users run a model in its own process (a hybrid or llm policy whose
    backend is not "openai"), else 0."""
    policy = config.get("policy", {})
    if policy.get("kind", "abm") not in ("hybrid", "llm"):
        return 0.0
    return 0.0 if policy.get("llm", {}).get("backend", "auto") == "openai" else 1.0


class RayExecutor:
    """Every run a Ray task on the cluster at `address` (None: a local Ray started here and
    stopped at `close`), `cpus` CPUs and `gpus` GPUs each (None: `gpus_for` its config)."""

    name = "ray"

    def __init__(self, address: str | None = None, cpus: float = 1.0, gpus: float | None = None):
        self.address, self.cpus, self.gpus = check_address(address), float(cpus), gpus
        self.ray = ray_module()  # before anything is planned: one line where it is missing
        self._started = False

    def where(self) -> str:
        """Where the runs compute, in words."""
        nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        cpus = sum(n.get("Resources", {}).get("CPU", 0) for n in nodes)
        at = self.address or "a local Ray started for this sweep"
        return f"as Ray tasks on {at} ({len(nodes)} node{'s' * (len(nodes) != 1)}, {cpus:g} CPUs)"

    def start(self, plan: Mapping[str, Any] | None = None) -> None:
        """Connect to the cluster (or start a local one), then check that a node fits the runs
        of `plan` (`check_fits`); ValueError (one line) where it cannot."""
        if not self.ray.is_initialized():  # (else a caller connected already: its cluster, its shutdown)
            self._connect()
        if plan is not None:
            fixed = plan["fixed"]
            self.check_fits(fixed.with_overrides(point).config for point in plan["grid"])

    def _connect(self) -> None:
        import logging

        if self.address not in (None, "auto"):  # Ray itself would retry for minutes
            _reachable(self.address)
        # Ray takes SIGTERM for itself as it starts (it exits with code 15, or 1 when it started a
        # local Ray, with no line): its setter does nothing meanwhile (Ray's private one; missing:
        # the handlers are ours again after init all the same), so ours stops the command then too
        utils = getattr(getattr(self.ray, "_private", None), "utils", None)
        setter = getattr(utils, "set_sigterm_handler", None)
        if setter is not None:
            utils.set_sigterm_handler = lambda handler: None
        self._started = True  # (stopped within init: `close` shuts down what it started)
        try:
            with _our_handlers():
                # no --address: a new local Ray of its own ("local"), never the cluster that
                # RAY_ADDRESS or the last `ray start` on this machine names (Ray's default for None)
                self.ray.init(address=self.address or "local", include_dashboard=False, log_to_driver=False,
                              logging_level=logging.WARNING)  # fmt: skip
        except (ConnectionError, RuntimeError, ValueError) as err:
            self.close()
            at = self.address or "(a local one)"
            raise ValueError(f"--executor ray: cannot reach a Ray cluster at {at}: {error_line(err)}") from None
        except KeyboardInterrupt:  # stopped while Ray starts: what it started goes now, bounded (not at exit)
            self.close()
            raise
        finally:
            if setter is not None:
                utils.set_sigterm_handler = setter

    def _options(self, config: Mapping[str, Any]) -> dict:
        gpus = gpus_for(config) if self.gpus is None else float(self.gpus)
        return {"num_cpus": self.cpus, "num_gpus": gpus, "max_retries": ATTEMPTS - 1, "retry_exceptions": True}

    def check_fits(self, configs: Iterable[Mapping[str, Any]]) -> None:
        """ValueError (one line) when no node of the cluster has the CPUs and GPUs one run asks
        for (Ray would wait for it forever)."""
        nodes = [n.get("Resources", {}) for n in self.ray.nodes() if n.get("Alive")]
        for need in {(o["num_cpus"], o["num_gpus"]) for o in map(self._options, configs)}:
            if not any(r.get("CPU", 0) >= need[0] and r.get("GPU", 0) >= need[1] for r in nodes):
                why = " (its LLM users run a model in the task: use endpoints, or --gpus-per-run 0)" if need[1] else ""
                raise ValueError(
                    f"--executor ray: a run asks for {need[0]:g} CPUs and {need[1]:g} GPUs{why}, and no node "
                    f"of the cluster has them (largest: {max((r.get('CPU', 0) for r in nodes), default=0):g} CPUs, "
                    f"{max((r.get('GPU', 0) for r in nodes), default=0):g} GPUs)"
                )

    def map(self, fn: Callable[..., dict], jobs: Iterable[Job]) -> Iterator[tuple[Any, dict | Failed, float]]:
        """Submit the jobs as tasks (a window of them ahead of the finished ones); (key, result
        or `Failed`, seconds) as each finishes. Tasks not finished when the caller stops
        (Ctrl-C) end when `close` disconnects this driver (Ray ends a finished job's tasks). A
        signal waits while Ray's core is called (`interrupts.deferred`, a tenth of a second at
        most): raised inside it, it crashed the process now and then (SIGSEGV, SIGABRT)."""
        ray = self.ray
        jobs, task, cwd = iter(jobs), ray.remote(_task), os.getcwd()
        cpus = sum(n.get("Resources", {}).get("CPU", 0) for n in ray.nodes() if n.get("Alive"))
        window = max(64, 4 * int(cpus))  # tasks submitted ahead: every CPU busy, the grid made as it goes
        pending: dict = {}

        def submit() -> None:
            for key, args in itertools.islice(jobs, max(0, window - len(pending))):
                pending[task.options(**self._options(args[0])).remote(cwd, fn, *args)] = key

        try:
            with deferred():
                submit()
            while pending:
                with deferred():  # whatever finished within a tenth of a second
                    done = ray.wait(list(pending), num_returns=len(pending), timeout=0.1)[0]
                for ref in done:
                    key = pending.pop(ref)
                    try:
                        with deferred():
                            out, seconds = ray.get(ref)
                    except ray.exceptions.RayTaskError as err:  # the run's own exception, after its retry
                        yield key, Failed(error_line(getattr(err, "cause", None) or err)), 0.0
                    except ray.exceptions.RayError as err:  # a worker or node lost twice
                        yield key, Failed(error_line(err)), 0.0
                    else:
                        yield key, out, seconds
                with deferred():
                    submit()
        finally:  # stopped (Ctrl-C): the unfinished tasks end with this driver's job at `close`
            pending.clear()  # (not ray.cancel: in Ray 2.60 it races a finishing task and aborts the process)

    def close(self) -> None:
        """Stop the local Ray this executor started (a cluster it connected to goes on); a signal
        meanwhile waits until it is done (`interrupts.deferred`). Bounded: where `ray.shutdown`
        has not returned within `STOP_GRACE_S` (it waits for the local raylet's answer with no
        limit: a raylet stalled on a busy machine kept a stopped sweep alive for minutes), the
        local Ray's own processes are killed, which ends that wait (`_kill_local_ray`).

        Closed by a stop (Ctrl-C, SIGTERM: a KeyboardInterrupt on its way), the local Ray's
        helpers (all but its raylet and GCS: the autoscaler's monitor, the log monitor, the
        dashboard) are killed first, at once: `ray.shutdown` ends them one after another after
        the GCS, each given a second to go, and the monitor, asked to go, reports its end to the
        GCS that is gone and took that whole second every time. The driver's own disconnect, and
        the raylet's and the GCS's ends (the raylet ends the tasks' workers), stay Ray's."""
        if self._started:
            self._started = False
            local = _local_ray_processes(self.ray) if self.address is None else {}
            stopping = isinstance(sys.exc_info()[1], KeyboardInterrupt)
            watchdog = threading.Timer(STOP_GRACE_S, _kill_local_ray, ([p for group in local.values() for p in group],))
            watchdog.daemon = True
            with deferred(), _our_handlers():
                if stopping:
                    _kill_local_ray(p for kind, group in local.items() if kind not in _CORE for p in group)
                watchdog.start()
                try:
                    self.ray.shutdown()
                finally:
                    watchdog.cancel()


def make_executor(name: str, address: str | None = None, cpus: float | None = None, gpus: float | None = None):
    """The executor `--executor name` asks for; ValueError (one line) on bad options or no Ray."""
    if name not in EXECUTORS:
        raise ValueError(f"--executor must be one of {', '.join(EXECUTORS)}, got {name!r}")
    if name == "local":
        options = (("--address", address), ("--cpus-per-run", cpus), ("--gpus-per-run", gpus))
        given = [f for f, v in options if v is not None]
        if given:
            raise ValueError(f"{' and '.join(given)}: the Ray executor's options; add --executor ray")
        return LocalExecutor()
    for flag, v in (("--cpus-per-run", cpus), ("--gpus-per-run", gpus)):
        if v is not None and not (0 <= v <= 1024) or (flag == "--cpus-per-run" and v is not None and v <= 0):
            raise ValueError(f"{flag} must be a number of CPUs / GPUs per run (CPUs > 0, GPUs >= 0), got {v}")
    return RayExecutor(address, 1.0 if cpus is None else cpus, gpus)
