"""`oasis-gym scratch --jobs N`: N (agent, seed) runs at once, each in a process of its own.

A from-scratch run uses `--env-workers` cores (its env shares), so on a machine with more cores
the table's runs go side by side: each job is one run, trained by the same `train_run` as one at
a time (its checkpoints, its curve, its budget and the session's end), so a run's numbers are
the same whatever `--jobs` (an (agent, seed) run depends on its seed only; tests/test_scratch.py).
The jobs start in the table's order (seed-major) as slots free up; none starts after
`--time-limit` once anything has trained.

One writer per folder: a job reads its own checkpoint from --out but writes nothing there; it
sends each file to this process, which writes it under the output rule (`OutputDir.write`: temp
name and rename, the folder's manifest). Jobs ignore Ctrl-C and SIGTERM: this process decides;
stopped, it kills them (their env workers end with them) and keeps every checkpoint written,
from which the same command continues. A job that fails is raised here with its traceback.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import time
import traceback
from multiprocessing.connection import wait
from pathlib import Path

from .common import limit_threads
from .v1 import progress_printer


class Session:
    """This command's share of the work: after `--time-limit` seconds no chunk starts (the first always
    does). A job gets a copy; its deadline is the same moment (`time.monotonic`: the machine's clock)."""

    def __init__(self, seconds: float):
        self.deadline, self.trained = time.monotonic() + (seconds or float("inf")), False

    def over(self) -> bool:
        """Is the time up (and something trained)?"""
        return self.trained and time.monotonic() >= self.deadline


class _Sender:
    """A job's --out: read where it lies, written by the parent (`write` sends the bytes)."""

    def __init__(self, path: Path, conn):
        self.path, self._conn = path, conn

    def write(self, rel: str, data: bytes) -> Path:
        self._conn.send(("write", (rel, data)))
        return self.path / rel


def _job(conn, train, args, agent: str, seed: int, path: Path, key: str, session, quiet: bool) -> None:
    """One run in a job's process: `train(args, agent, seed, output, key, session, say)`, its
    progress lines on the stderr it shares with the parent."""
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)  # the parent decides, and kills the job when it stops
    limit_threads(1)
    try:
        train(args, agent, seed, _Sender(path, conn), key, session, progress_printer(quiet))
        conn.send(("done", None))
    except BaseException:  # noqa: BLE001 - sent to the parent, raised there
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


def run_jobs(train, args, runs: list[tuple[str, int]], output, key: str, session, quiet: bool, jobs: int) -> None:
    """Train `runs` ((agent, seed), in order) `jobs` at a time, each by `train` in its own process
    (module docstring); their files written into `output` here. Returns when all have ended."""
    ctx = mp.get_context("spawn")
    pending, active = list(runs), {}
    try:
        while pending or active:
            while pending and len(active) < jobs and not session.over():
                agent, seed = pending.pop(0)
                parent, child = ctx.Pipe()
                job = (child, train, args, agent, seed, output.path, key, session, quiet)
                proc = ctx.Process(target=_job, args=job, name=f"oasis-gym scratch {agent} seed {seed}")
                proc.start()  # (not a daemon: its env shares are processes of its own)
                child.close()
                active[parent] = (proc, f"{agent}_seed{seed}")
            if not active:
                break  # the session's time is up: the runs left start next time
            for conn in wait(list(active)):
                proc, name = active[conn]
                try:
                    kind, payload = conn.recv()
                except EOFError:  # it died before answering (killed, out of memory)
                    proc.join()
                    kind, payload = "error", f"its process ended (exit code {proc.exitcode})"
                if kind == "write":
                    output.write(*payload)
                    session.trained = True
                    continue
                del active[conn]
                proc.join()
                if kind == "error":
                    raise RuntimeError(f"scratch run {name} failed:\n{payload}")
    finally:
        for proc, _ in active.values():
            proc.kill()
            proc.join()
