"""`oasis-gym sweep --executor ray`: every (grid point, seed) run a Ray task on a local
two-node Ray cluster (`ray.cluster_utils.Cluster`, started and shut down here), the same
bytes as the local executor, `--resume` across executors, failed runs retried once and
reported per run; bad options and a missing Ray: one line, exit code 2, before any run.

The tests that need Ray skip where it is not installed (`pip install -e ".[ray]"`), unless
OASIS_GYM_REQUIRE_RAY=1 (.ci/run sets it: there they must run)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from oasis_gym import cli
from oasis_gym.scenarios import sweep
from oasis_gym.scenarios.sweep_executors import ATTEMPTS, Failed, LocalExecutor, RayExecutor, gpus_for
from oasis_gym.scenarios.sweep_store import stable

SMALL = ["--param", "herd_weight=0,0.5", "--seeds", "2", "--seed-start", "7", "--set", "users=36", "--steps", "3"]
SWEEP = ["sweep", "reddit_herd_effect", *SMALL]
TABLES = ("runs.csv", "summary.csv", "summary.json", "effect_vs_herd_weight.png")
needs_ray = pytest.mark.skipif(
    os.environ.get("OASIS_GYM_REQUIRE_RAY") != "1" and not __import__("importlib").util.find_spec("ray"),
    reason="Ray is not installed (pip install -e '.[ray]')",
)


def tables(out: Path) -> dict[str, bytes]:
    return {n: (out / n).read_bytes() for n in TABLES if (out / n).exists()}


def one_line_error(capsys, needle: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in err, err
    return err


# --------------------------------------------------------------------------- no Ray needed


def test_executor_ray_without_ray_installed_is_one_line_exit_2_before_anything(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as where it is not installed
    assert cli.main([*SWEEP, "--executor", "ray", "--out", str(tmp_path / "s")]) == 2
    one_line_error(capsys, "oasis-gym[ray]")
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--executor", "ray", "--address", "head-node"], "HOST:PORT"),
        (["--executor", "ray", "--address", "10.0.0.1:99999"], "HOST:PORT"),
        (["--executor", "ray", "--address", "http://10.0.0.1:6379"], "HOST:PORT"),
        (["--address", "127.0.0.1:6379"], "add --executor ray"),
        (["--gpus-per-run", "1"], "add --executor ray"),
        (["--executor", "ray", "--cpus-per-run", "0"], "--cpus-per-run"),
        (["--executor", "ray", "--gpus-per-run", "nan"], "--gpus-per-run"),
    ],
)
def test_bad_executor_options_one_line_exit_2(argv, needle, tmp_path, capsys):
    try:
        code = cli.main([*SWEEP, *argv, "--out", str(tmp_path / "s")])
    except SystemExit as stop:  # a value out of its option's range: refused by the parser
        code = stop.code
    assert code == 2
    one_line_error(capsys, needle)
    assert not (tmp_path / "s").exists()


def test_a_failed_run_is_retried_once_and_a_second_failure_is_reported_without_losing_the_others(tmp_path, monkeypatch):
    kw = dict(params=["herd_weight=0,0.5"], seeds=2, seed_start=7, sets={"users": 36}, steps=3)
    whole = sweep.run_sweep("reddit_herd_effect", out=tmp_path / "whole", **kw)
    calls, real = [], sweep.effects

    def flaky(kind, figures):  # the first attempt of every run fails (a transient failure)
        calls.append(1)
        if len(calls) % 2:
            raise OSError("transient")
        return real(kind, figures)

    monkeypatch.setattr(sweep, "effects", flaky)
    res = sweep.run_sweep("reddit_herd_effect", out=tmp_path / "flaky", **kw)
    assert len(calls) == 8 and "failed" not in res  # each of the 4 runs: a retry, which worked
    assert tables(tmp_path / "flaky") == tables(tmp_path / "whole") and stable(whole)["points"] == stable(res)["points"]


def test_task_options_declare_resources_and_one_retry():
    ex = object.__new__(RayExecutor)
    ex.cpus, ex.gpus = 1.0, None
    herd = sweep.load_scenario("reddit_herd_effect").config
    assert ex._options(herd) == {"num_cpus": 1.0, "num_gpus": 0.0, "max_retries": 1, "retry_exceptions": True}
    hybrid = sweep.load_scenario("reddit_herd_effect", {"policy.kind": "hybrid"}).config
    on_endpoints = sweep.load_scenario("reddit_herd_effect", {"policy.kind": "hybrid", "policy.llm.backend": "openai"})
    assert gpus_for(hybrid) == 1.0 and gpus_for(on_endpoints.config) == 0.0 and ATTEMPTS == 2


# --------------------------------------------------------------------------- a two-node Ray cluster


@pytest.fixture(scope="module")
def cluster():
    """Ray's own local multi-node cluster: two raylets of one CPU each (as tests/test_rllib_v1.py)."""
    import ray
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    c.add_node(num_cpus=1)
    c.wait_for_nodes()
    try:
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()


def ray_sweep_argv(cluster, argv: list[str]) -> int:
    return cli.main([*argv, "--executor", "ray", "--address", cluster.address, "--quiet"])


def ray_sweep(cluster, out: Path, *extra: str) -> int:
    return ray_sweep_argv(cluster, [*SWEEP, "--out", str(out), *extra])


@needs_ray
def test_ray_and_local_executors_write_byte_identical_tables(cluster, tmp_path, capsys):
    assert cli.main([*SWEEP, "--out", str(tmp_path / "local"), "--quiet"]) == 0
    capsys.readouterr()
    assert ray_sweep(cluster, tmp_path / "ray") == 0
    said = capsys.readouterr().out
    assert "as Ray tasks on" in said and "(2 nodes, 2 CPUs)" in said, said
    local, on_ray = tables(tmp_path / "local"), tables(tmp_path / "ray")
    assert set(local) == set(TABLES) and local == on_ray
    assert sorted(p.name for p in (tmp_path / "ray" / "runs").iterdir()) == sorted(
        p.name for p in (tmp_path / "local" / "runs").iterdir()
    )


@needs_ray
def test_the_readme_herd_sweep_on_two_nodes_equals_the_local_one(cluster, tmp_path, capsys):
    """The README's `oasis-gym sweep reddit_herd_effect --seeds 10` (3 grid points x 10 seeds,
    the scenario's own size: about 7 s each way on 2 busy cores), as written, on both executors."""
    import shlex

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    line = next(ln for ln in readme.splitlines() if ln.startswith("oasis-gym sweep reddit_herd_effect"))
    argv = shlex.split(line, comments=True)[1:]
    out = argv.index("--out")
    assert argv[:3] == ["sweep", "reddit_herd_effect", "--seeds"] and out == 4
    assert cli.main([*argv[:out], "--out", str(tmp_path / "local"), "--quiet"]) == 0
    assert ray_sweep_argv(cluster, [*argv[:out], "--out", str(tmp_path / "ray")]) == 0
    local = tables(tmp_path / "local")
    assert len(local) == 4 and local == tables(tmp_path / "ray")
    assert len((tmp_path / "ray" / "runs.csv").read_text().splitlines()) == 1 + 30


@needs_ray
def test_a_sweep_started_on_one_executor_resumes_on_the_other(cluster, tmp_path, monkeypatch):
    import ray

    kw = dict(params=["herd_weight=0,0.5"], seeds=2, seed_start=7, sets={"users": 36}, steps=3)
    sweep.run_sweep("reddit_herd_effect", out=tmp_path / "whole", **kw)
    whole = tables(tmp_path / "whole")

    def stop_after(n):
        seen = []

        def on_run(loaded):
            seen.append(loaded)
            if len(seen) == n:
                raise KeyboardInterrupt  # Ctrl-C after n finished runs

        return on_run

    # local first, Ray finishes it
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep("reddit_herd_effect", out=tmp_path / "a", on_run=stop_after(1), **kw)
    assert len(list((tmp_path / "a" / "runs").iterdir())) == 1 and not (tmp_path / "a" / "runs.csv").exists()
    assert ray_sweep(cluster, tmp_path / "a", "--resume") == 0
    assert tables(tmp_path / "a") == whole

    # Ray first (stopped after two runs came back: the others are cancelled), local finishes it
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep("reddit_herd_effect", out=tmp_path / "b", on_run=stop_after(2),
                        executor=RayExecutor(cluster.address), **kw)  # fmt: skip
    assert not ray.is_initialized()  # the executor let go of the cluster
    assert len(list((tmp_path / "b" / "runs").iterdir())) >= 2 and not (tmp_path / "b" / "runs.csv").exists()
    assert cli.main([*SWEEP, "--out", str(tmp_path / "b"), "--resume", "--quiet"]) == 0
    assert tables(tmp_path / "b") == whole


@needs_ray
def test_failed_runs_are_reported_per_run_with_the_others_kept_on_both_executors(cluster, tmp_path, capsys):
    """A grid value that fails inside its runs only (a content file that does not exist):
    each such run is tried twice, then listed; the other point's runs finish and make the
    tables; exit code 1; the same bytes from both executors."""
    bad = ["--param", "content.pairs=counterfactual_36.json,no_such_pairs.json"]
    argv = ["sweep", "reddit_herd_effect", *bad, *SMALL[2:]]
    assert cli.main([*argv, "--out", str(tmp_path / "local"), "--quiet"]) == 1
    said_local = capsys.readouterr().out
    assert cli.main([*argv, "--executor", "ray", "--address", cluster.address, "--out", str(tmp_path / "ray"),
                     "--quiet"]) == 1  # fmt: skip
    said = capsys.readouterr().out
    for text in (said_local, said):
        assert (
            "2 runs failed (each tried twice)" in text and "pairs=no_such_pairs.json, seed 7: FileNotFoundError" in text
        )
        assert "--resume" in text  # the next step: run the failed runs again
    summary = json.loads((tmp_path / "ray" / "summary.json").read_text())
    assert [(f["seed"], f["attempts"]) for f in summary["failed"]] == [(7, 2), (8, 2)]
    assert "no_such_pairs.json" in summary["failed"][0]["error"]
    assert len((tmp_path / "ray" / "runs.csv").read_text().splitlines()) == 1 + 2  # the good point's two runs
    assert sorted(p.name for p in (tmp_path / "ray" / "runs").iterdir()) == ["0000_seed7.json", "0000_seed8.json"]
    assert tables(tmp_path / "local") == tables(tmp_path / "ray")


@needs_ray
def test_on_ray_a_run_failing_once_is_retried_and_one_failing_twice_is_reported(cluster, tmp_path):
    """Ray's own retry (`retry_exceptions`, `max_retries=1`), counted by the attempts
    themselves: each leaves a file in a folder both nodes see (this machine's disk)."""
    marks = tmp_path / "attempts"
    marks.mkdir()

    def run(key: str, failures: int) -> dict:  # fails its first `failures` attempts
        attempt = len(list(marks.glob(f"{key}-*")))
        (marks / f"{key}-{attempt}").touch()
        if attempt < failures:
            raise OSError(f"transient failure {attempt + 1} of {key}")
        return {"key": key, "attempt": attempt + 1}

    ex = RayExecutor(cluster.address, cpus=1.0, gpus=0.0)
    ex.start()
    try:
        jobs = [(key, (key, failures)) for key, failures in (("never", 0), ("once", 1), ("always", 5))]
        got = {key: out for key, out, _ in ex.map(run, jobs)}
    finally:
        ex.close()
    assert got["never"] == {"key": "never", "attempt": 1} and got["once"] == {"key": "once", "attempt": 2}
    assert got["always"] == Failed("OSError: transient failure 2 of always", attempts=ATTEMPTS)
    assert {k: len(list(marks.glob(f"{k}-*"))) for k in got} == {"never": 1, "once": 2, "always": 2}


@needs_ray
def test_a_users_scenario_file_and_its_relative_data_file_work_on_the_ray_workers(cluster, tmp_path, monkeypatch):
    """The task gets the configuration (not the file's name) and runs in the sweep's folder,
    where a Ray worker would not start by itself."""
    from oasis_gym.population.files import data_path
    from oasis_gym.scenarios.config import scenario_path

    monkeypatch.chdir(tmp_path)
    Path("my_pairs.json").write_bytes(data_path("counterfactual_36.json").read_bytes())
    text = scenario_path("reddit_herd_effect").read_text().replace('name = "reddit_herd_effect"', 'name = "my_herd"')
    Path("my_herd.toml").write_text(text.replace('"counterfactual_36.json"', '"my_pairs.json"'))
    argv = ["sweep", "my_herd.toml", "--param", "herd_weight=0.5", "--seeds", "2", "--set", "users=36", "--steps", "2"]
    assert cli.main([*argv, "--out", "local", "--quiet"]) == 0
    assert cli.main([*argv, "--executor", "ray", "--address", cluster.address, "--out", "ray", "--quiet"]) == 0
    assert tables(tmp_path / "local") == tables(tmp_path / "ray") and len(tables(tmp_path / "ray")) == 4


@needs_ray
def test_a_run_asking_for_a_gpu_the_cluster_lacks_is_one_line_exit_2_before_anything(cluster, tmp_path, capsys):
    assert ray_sweep(cluster, tmp_path / "s", "--set", "policy.kind=hybrid") == 2
    one_line_error(capsys, "no node")
    assert not (tmp_path / "s").exists()


@needs_ray
def test_an_address_where_no_cluster_answers_is_one_line_exit_2(tmp_path, capsys):
    import socket

    with socket.socket() as s:  # a free port on this machine, closed again: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert cli.main([*SWEEP, "--executor", "ray", "--address", f"127.0.0.1:{port}", "--out", str(tmp_path / "s")]) == 2
    one_line_error(capsys, "nothing answers")
    assert not (tmp_path / "s").exists()


@needs_ray
def test_without_an_address_a_sweep_starts_a_ray_of_its_own_never_a_cluster_running_here(
    cluster, tmp_path, capsys, monkeypatch
):
    """`ray.init()` without an address joins the cluster RAY_ADDRESS names, or the one last
    started on this machine: a sweep without --address ran its tasks on someone else's
    cluster (two test runs at once: one's sweep lost its tasks when the other's cluster
    stopped). It starts a Ray of its own (one node here, not the two-node cluster)."""
    monkeypatch.setenv("RAY_ADDRESS", cluster.address)
    assert cli.main([*SWEEP, "--executor", "ray", "--out", str(tmp_path / "s")]) == 0
    out = capsys.readouterr()
    assert "on a local Ray started for this sweep (1 node," in out.out + out.err, out


def _closed_by_a_stop(executor: RayExecutor) -> None:
    """`executor.close()` as a stopped sweep calls it: while a KeyboardInterrupt is on its way."""
    with pytest.raises(KeyboardInterrupt):
        try:
            raise KeyboardInterrupt
        finally:
            executor.close()


@needs_ray
def test_a_stop_kills_the_local_rays_helpers_at_once_and_never_a_cluster_given_by_address(cluster):
    """Closed by a stop, the executor kills the helpers of the local Ray it started (monitor,
    log monitor, dashboard) at once: `ray.shutdown` asked each to go after the GCS had gone and
    gave each a second (the autoscaler's monitor, reporting its end to that GCS, took the whole
    second every time: a stopped sweep took 1.5-2 s at light load). The raylet and the GCS end
    as Ray ends them, and nothing of that Ray is left. A cluster given by --address goes on."""
    import signal

    from oasis_gym.scenarios.sweep_executors import _local_ray_processes

    ex = RayExecutor(None, cpus=1.0, gpus=0.0)
    ex.start()
    local = _local_ray_processes(ex.ray)
    assert {"raylet", "gcs_server", "monitor", "log_monitor"} <= set(local), local
    _closed_by_a_stop(ex)
    codes = {kind: [p.returncode for p in group] for kind, group in local.items()}
    assert all(None not in group for group in codes.values()), codes  # all ended (and reaped)
    helpers = {kind: group for kind, group in codes.items() if kind not in ("raylet", "gcs_server")}
    assert all(group == [-signal.SIGKILL] for group in helpers.values()), codes  # not asked (-15, 15) nor waited on

    theirs = RayExecutor(cluster.address, cpus=1.0, gpus=0.0)
    theirs.start()
    assert _local_ray_processes(theirs.ray) == {}  # this driver started none of them
    _closed_by_a_stop(theirs)
    assert cluster.remaining_processes_alive()


@needs_ray
def test_sigterm_stops_a_ray_sweep_with_one_line_and_the_local_executor_finishes_it(tmp_path, monkeypatch):
    """Ray's core ends the process on SIGTERM by itself (no line, no exit code 143, a stack
    dump): the executor puts the command's own handler back after `ray.init`. Once it has
    said its line, the process leaves Python's last garbage collection only what is new at
    exit (`gc.freeze`): walking Ray's heap there took 1.5-2.6 s at load 10 (a sitecustomize
    says how many objects were frozen, in the process's very last atexit hook)."""
    import signal
    import subprocess

    from test_guarantees_interrupts import stopped

    site = tmp_path / ".site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count(), file=sys.stderr))\n"
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))

    argv = ["sweep", "reddit_herd_effect", "--param", "herd_weight=0,0.5", "--seeds", "6", "--set", "users=36"]
    argv += ["--steps", "3", "--out", "s", "--quiet"]
    # the signal lands while the command keeps its second run (paused there, however fast Ray runs)
    pause = ("oasis_gym.scenarios.sweep_store", "SweepRuns.keep", 2)
    code, err, _ = stopped(tmp_path, [*argv, "--executor", "ray"], signal.SIGTERM, pause=pause)
    lines = [ln for ln in err if ln.startswith("oasis-gym sweep:")]
    assert code == 143 and len(lines) == 1 and "stopped by SIGTERM" in lines[0], err[-40:]
    assert lines[0].endswith("--executor ray --out s --resume") and not any("Traceback" in ln for ln in err)
    assert len(list((tmp_path / "s" / "runs").iterdir())) == 1  # the first run, kept at once
    frozen = [int(ln.split(":")[1]) for ln in err if ln.startswith("frozen at exit:")]
    assert frozen and frozen[0] > 0, err[-10:]
    resumed = subprocess.run([sys.executable, "-m", "oasis_gym.cli", *argv, "--resume"], cwd=tmp_path, timeout=600)
    assert resumed.returncode == 0
    assert len((tmp_path / "s" / "runs.csv").read_text().splitlines()) == 1 + 12


def test_local_executor_is_the_default():
    assert isinstance(cli.build_parser().parse_args(SWEEP), object)
    args = cli.build_parser().parse_args(SWEEP)
    assert args.executor == "local" and args.address is None
    assert LocalExecutor().where() == "in this process"
