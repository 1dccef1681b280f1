"""``oasis-gym sweep``: its arguments and the command (the sweep itself: `scenarios.sweep`).

While it runs, a progress bar over grid points x seeds (rate and ETA) on stderr (none with
``--quiet``); at the end a short summary on stdout: the headline effects per grid point, the
files written and the next commands. With ``--json``, stdout holds one JSON line per grid
point and a final one instead, and nothing else.
"""

from __future__ import annotations

import atexit
import gc
import json
import math
import sys
import time
from pathlib import Path

from ..app.console import Summary, bar, duration, plural, quoted
from ..app.interrupts import exit_code, signum_of
from ..checks import MAX_ID, MAX_SEED, float_option, int_option, with_bounds
from .config import parse_sets
from .scenario import load_scenario
from .sweep import MAX_SWEEP_RUNS, _clean, plan_sweep, run_sweep
from .sweep_executors import EXECUTORS, make_executor
from .sweep_store import resume_argv, stopped_line

__all__ = ["add_sweep_parser", "cmd_sweep"]

_seeds, _seed_start, _steps = int_option(1, MAX_SWEEP_RUNS), int_option(0, MAX_SEED), int_option(1, MAX_ID)
# a run's Ray resources: fractions of a CPU down to Ray's granularity (1e-4), at most 1024 (make_executor's check)
_cpus, _gpus = float_option(1e-4, 1024.0), float_option(0.0, 1024.0)
_SHOWN_POINTS = 12  # grid points the summary lists (the rest: summary.csv)
_SHOWN_FAILED = 12  # failed runs the summary lists (the rest: summary.json)


def add_sweep_parser(sub) -> None:
    """The `oasis-gym sweep` subcommand's arguments."""
    p = sub.add_parser(
        "sweep",
        help="run a scenario over a parameter grid and seeds (effects with 95%% CIs)",
        description="Run a scenario over a parameter grid and seeds; write runs.csv, summary.csv, "
        "summary.json and effect_vs_<param>.png to --out. Shows a progress bar over the runs "
        "(grid points x seeds) on stderr and ends with a summary and the next commands.",
    )
    p.add_argument("scenario", help="a shipped scenario name or a scenario .toml file")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=LO:HI:N",
        help="parameter grid (repeatable): rho=0.4:1.2:5 or k=1,2,4; default: the [sweep] table. "
        f"Grid points x seeds: at most {MAX_SWEEP_RUNS:,} runs",
    )
    for flag, parse, text in (
        ("--seeds", _seeds, "seeds per grid point (default: [sweep] seeds or 10)"),
        ("--seed-start", _seed_start, "first seed (default: [sweep] seed_start or 0)"),
        ("--steps", _steps, "steps per run (default: the scenario's)"),
    ):
        p.add_argument(flag, type=parse, default=None, help=with_bounds(text, parse))
    p.add_argument(
        "--set",
        dest="sweep_set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="fixed override for every run (repeatable), e.g. users=2000",
    )
    p.add_argument("--out", default=None, help="output folder (default sweeps/<scenario>)")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier sweep's tables in --out")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the interrupted sweep in --out (same settings), skipping its finished runs",
    )
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="where the runs compute: local (one after another in this process, the default) or ray "
        "(each run a Ray task: a local Ray, or the cluster at --address; needs pip install 'oasis-gym[ray]')",
    )
    p.add_argument(
        "--address",
        default=None,
        help="with --executor ray: the Ray cluster's head, HOST:PORT as `ray start --head` prints it "
        "(or ray://HOST:PORT, or auto); default: start a local Ray for this sweep",
    )
    p.add_argument(
        "--cpus-per-run",
        type=_cpus,
        default=None,
        help=with_bounds("with --executor ray: the CPUs each run's task asks for (default 1)", _cpus),
    )
    p.add_argument(
        "--gpus-per-run",
        type=_gpus,
        default=None,
        help=with_bounds(
            "with --executor ray: the GPUs each run's task asks for (default 1 when its LLM users run a "
            "model in the task, 0 for ABM users or LLM users on endpoints)",
            _gpus,
        ),
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON line per grid point and a final one instead of the summary "
        "(stdout stays machine-readable)",
    )


def _interval(s: dict) -> str:
    """`+0.123 [+0.050, +0.200]` (no interval from one seed, n/a without a value)."""
    mean, lo, hi = (s.get(k) for k in ("mean", "lo", "hi"))
    if not isinstance(mean, float) or not math.isfinite(mean):
        return "n/a"
    if not all(isinstance(v, float) and math.isfinite(v) for v in (lo, hi)):
        return f"{mean:+.3g}"
    return f"{mean:+.3g} [{lo:+.3g}, {hi:+.3g}]"


def _point_line(pt: dict, headline: list[str]) -> str:
    point = ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in pt["point"].items())
    names = headline or list(pt["effects"])[:2]
    effects = "; ".join(f"{n} {_interval(pt['effects'].get(n, {}))}" for n in names)
    share = pt.get("ordered_share")
    ordered = f"; expected ordering in {share:.0%} of seeds" if isinstance(share, float) else ""
    return f"  {point}: {effects}{ordered}"


def _failed_lines(failed: list[dict]) -> list[str]:
    lines = [f"{len(failed)} run{'s' * (len(failed) != 1)} failed (each tried twice) and are left out of the tables:"]
    for f in failed[:_SHOWN_FAILED]:
        point = ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in f["point"].items())
        lines.append(f"  {point}, seed {f['seed']}: {f['error']}")
    if len(failed) > _SHOWN_FAILED:
        lines.append(f"  ... {len(failed) - _SHOWN_FAILED} more in summary.json")
    return lines


def sweep_summary(
    res: dict, out: str, seconds: float, where: str = "", resume_argv: list[str] | None = None
) -> Summary:
    """What `oasis-gym sweep` says at its end (`res`: `run_sweep`'s result; `where`: the
    executor's words; `resume_argv`: the command that runs the failed runs again)."""
    points, seeds = len(res["points"]), len(res["seeds"])
    failed = res.get("failed", [])
    params = " x ".join(f"{k.rsplit('.', 1)[-1]} ({plural(len(v), 'value')})" for k, v in res["params"].items())
    at = f" {where}" if where else ""
    done = [
        f"Swept {res['scenario']} over {params} x {plural(seeds, 'seed')} = {plural(points * seeds, 'run')}{at} "
        f"in {duration(seconds)}; "
        "mean [95% CI] over the seeds:"
    ]
    done += [_point_line(pt, res["headline"]) for pt in res["points"][:_SHOWN_POINTS]]
    if points > _SHOWN_POINTS:
        done.append(f"  ... {plural(points - _SHOWN_POINTS, 'more grid point')} in summary.csv")
    if failed:
        done += _failed_lines(failed)
    if res.get("plot_error"):  # degenerate figures (values near the float limits): the tables are whole
        done.append(f"No plot: the effects cannot be drawn ({res['plot_error']}); the tables hold them all.")
    folder = Path(out)
    outputs = [
        (str(folder / "summary.csv"), "per grid point and effect: mean, 95% CI, sd, n"),
        (str(folder / "runs.csv"), "one row per run (grid point, seed): every effect"),
        (
            str(folder / "summary.json"),
            "the same with the settings, as JSON" + (" and the failed runs" if failed else ""),
        ),
    ]
    if res.get("png"):
        x = next(iter(res["params"])).rsplit(".", 1)[-1]
        outputs.append((res["png"], f"the headline effects against {x}, with 95% CIs"))
    outputs.append((str(folder / "runs") + "/", "each finished run (what --resume reads)"))
    if len(failed) == points * seeds:
        outputs = []  # no run finished: no tables, no runs
    first = res["points"][0]["point"]
    sets = [a for k, v in first.items() for a in ("--set", f"{k}={v}")]
    one = ["oasis-gym", "run", "--scenario", res["scenario"], *sets, "--db", f"{res['scenario']}_one.db"]
    nxt = [
        (quoted(one), "one grid point in detail: a journal and TensorBoard logs"),
        (quoted(["oasis-gym", "report", f"{res['scenario']}_one.db"]), "then its plots"),
    ]
    if failed and resume_argv:
        nxt.insert(
            0, (quoted(resume_argv), "after fixing the cause: runs only the failed runs, then writes whole tables")
        )
    data = {"sweep": res["scenario"], "out": out, "points": points, "seeds": seeds, "png": res.get("png"),
            "failed": len(failed)}  # fmt: skip
    if res.get("plot_error"):
        data["plot_error"] = res["plot_error"]
    return Summary("\n".join(done), outputs, nxt, data)


def _point_json(pt: dict) -> str:
    effects = {
        k: {c: round(v[c], 4) if isinstance(v[c], float) else v[c] for c in ("mean", "lo", "hi", "n")}
        for k, v in pt["effects"].items()
    }
    line = {"point": pt["point"], "wall_s": pt["wall_s"], "ordered_share": pt["ordered_share"], **effects}
    return json.dumps(_clean(line))


def cmd_sweep(args) -> int:
    """Run `oasis-gym sweep`: a progress bar while it runs, a summary at the end (`--json`: one
    JSON line per grid point and a final one). Exit code 0; 1 when runs failed (the summary
    lists them, the tables hold the others); 2 on bad input, before anything runs."""
    as_json = getattr(args, "json", False)
    plan = executor = None
    try:  # bad arguments: one line, exit code 2, before anything runs
        executor = make_executor(getattr(args, "executor", "local"), getattr(args, "address", None),
                                 getattr(args, "cpus_per_run", None), getattr(args, "gpus_per_run", None))  # fmt: skip
        sets = parse_sets(args.sweep_set or [])
        out = args.out or str(Path("sweeps") / load_scenario(args.scenario).name)
        plan = plan_sweep(
            args.scenario,
            args.param,
            args.seeds,
            args.seed_start,
            args.steps,
            sets,
            out,
            overwrite=args.overwrite,
            resume=getattr(args, "resume", False),
        )
        executor.start(plan)  # Ray: connected (or a local one started) and the runs' resources checked
    except (ValueError, KeyError, FileExistsError, FileNotFoundError) as err:
        if executor is not None:
            executor.close()
        if plan is not None and plan.get("output") is not None:
            plan["output"].release()  # (a folder the check made, still empty, goes)
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"oasis-gym sweep: error: {msg}", file=sys.stderr)
        return 2
    total = plan["runs"].total
    progress = bar(total, f"sweep {plan['base'].name}", "run", quiet=getattr(args, "quiet", False))

    def log(pt):
        if as_json:
            print(_point_json(pt), flush=True)

    resumed = [0]

    def on_run(loaded: bool) -> None:
        if loaded:  # a finished run of the interrupted sweep, read back
            resumed[0] += 1
        postfix = {"read_back": resumed[0], "failed": len(plan["runs"].failed)}
        if any(postfix.values()):
            progress.set_postfix({k: v for k, v in postfix.items() if v}, refresh=False)
        progress.update(1)

    start = time.perf_counter()
    try:  # Ctrl-C, or SIGTERM (raised as one by the command line: oasis_gym.app.interrupts): the finished runs are kept
        where = executor.where()
        with progress:
            res = run_sweep(args.scenario, log=log, plan=plan, on_run=on_run, executor=executor)
    except KeyboardInterrupt as stop:
        print(stopped_line(signum_of(stop), plan["runs"], args, out), file=sys.stderr)
        # the command ends: Python's last garbage collection at exit need not walk the heap it
        # leaves (Ray's: 0.2 s idle, 1.5-2.6 s at load 10 on 2 cores, after the line was said)
        atexit.register(gc.freeze)
        return exit_code(stop)
    finally:
        executor.close()
    summary = sweep_summary(res, out, time.perf_counter() - start, where, resume_argv(args, out))
    summary.show(as_json)
    return 1 if res.get("failed") else 0  # failed runs: the tables of the others, exit code 1
