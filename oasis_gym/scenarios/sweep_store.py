"""A sweep's output folder: the rule of `oasis_gym.outputs`, its runs kept as they finish,
`--resume`, and a clean stop on SIGINT / SIGTERM.

Each finished (grid point, seed) run is written at once to ``runs/<point>_seed<seed>.json`` in
the sweep's folder (under a temporary name, then renamed into place) with the key of the
sweep's settings; the folder's marker keeps those settings. `oasis-gym sweep ... --resume`
(the same settings, else refused with one line) loads the finished runs and runs the rest.
Fresh and loaded runs' effects both pass through the same JSON round trip, and the tables hold
no wall-clock times, so a resumed sweep's runs.csv, summary.csv and summary.json equal an
uninterrupted sweep's byte for byte. Stopped by Ctrl-C or SIGTERM (the command line raises
both as a KeyboardInterrupt: `oasis_gym.app.interrupts`), `oasis-gym sweep` prints one line saying
how to resume (`stopped_line`), exit code 128 + the signal.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..app.interrupts import deferred
from ..outputs import OutputDir, signed

__all__ = ["FILES", "TABLES", "SweepRuns", "sweep_output", "sweep_settings", "stable", "resume_argv", "stopped_line"]

FILES = ("runs.csv", "summary.csv", "summary.json", "effect_vs_*.png", "runs/*.json")
TABLES = FILES[:4]  # written together at the end; an earlier sweep's that are not written again go
_CHECKED = (
    ("scenario", "the scenario"),
    ("param", "--param"),
    ("seeds", "--seeds / --seed-start"),
    ("steps", "--steps"),
    ("set", "--set"),
    ("config", "the scenario's settings"),
)


def _plain(value: Any) -> Any:
    """`value` as JSON gives it back (tuples as lists, numpy scalars as Python numbers, NaN kept)."""
    return json.loads(json.dumps(value, default=lambda v: v.item() if hasattr(v, "item") else str(v)))


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def sweep_settings(plan: Mapping[str, Any]) -> dict:
    """What makes two sweeps the same one: scenario, grid, seeds, steps, overrides, and the
    scenario's whole configuration (a scenario file edited since is another sweep)."""
    base = plan["base"]
    return _plain(
        {
            "scenario": base.name,
            "param": {k: v for k, v in plan["parsed"]},
            "seeds": plan["seeds"],
            "steps": plan["steps"],
            "set": plan["extra"],
            "config": _digest(base.config),
        }
    )


def _show(value: Any) -> str:
    if (
        isinstance(value, list)
        and len(value) > 1
        and all(isinstance(v, int) for v in value)
        and value == list(range(value[0], value[0] + len(value)))
    ):
        return f"{value[0]}..{value[-1]} ({len(value)})"
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def sweep_output(out: str | Path, settings: dict, overwrite: bool, resume: bool) -> OutputDir:
    """The sweep's folder, checked (`OutputError` naming a file it may not write); with
    `resume`, it must hold a sweep of the same `settings` (else ValueError, one line)."""
    if resume and overwrite:
        raise ValueError("--resume continues the sweep in --out and --overwrite replaces it: use one of them")
    output = OutputDir(
        out,
        "sweep",
        FILES,
        overwrite=overwrite,
        resume=resume,
        settings=settings,
        own_hint="pass --overwrite to replace it, or --resume to continue it (with the same settings)",
    ).check()
    try:
        if resume:
            _check_resumable(output, out, settings)
    except BaseException:
        output.release()
        raise
    return output


def _check_resumable(output: OutputDir, out: str | Path, settings: dict) -> None:
    stored = output.stored_settings()
    if not isinstance(stored, dict):
        raise ValueError(f"{out} holds no sweep to resume: start it without --resume")
    for key, label in _CHECKED:
        if stored.get(key) != settings[key]:
            raise ValueError(
                f"{out} holds a sweep with other settings ({label}: {_show(stored.get(key))}, given "
                f"{_show(settings[key])}): resume it with its own settings, or start anew with --overwrite"
            )


class SweepRuns:
    """The finished runs of a sweep, one file each in its folder (`output`; None: kept nowhere)."""

    def __init__(self, output: OutputDir | None, settings: Mapping[str, Any], resume: bool, total: int = 0):
        self.output, self.resume, self.total = output, resume, total
        self.key = _digest(settings)[:16]
        self.finished = 0  # runs done: read back, computed or failed
        self.failed: dict[tuple[int, int], dict] = {}  # (grid point, seed) -> {"error", "attempts"}

    @staticmethod
    def name(index: int, seed: int) -> str:
        """The file of grid point `index`'s run with `seed`, relative to the sweep's folder."""
        return f"runs/{index:04d}_seed{seed}.json"

    def load(self, index: int, point: Mapping[str, Any], seed: int) -> dict | None:
        """The effects of a finished run of the interrupted sweep (on resume), else None."""
        if self.output is None or not self.resume:
            return None
        try:  # (`sweep_output` checked that every runs/*.json there is the sweep's own)
            data = json.loads((self.output.path / self.name(index, seed)).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(data, dict) or (data.get("sweep"), data.get("point"), data.get("seed")) != (
            self.key,
            _plain(dict(point)),
            seed,
        ):
            return None  # another sweep's (started anew with --overwrite)
        effects = data.get("effects") if isinstance(data.get("effects"), dict) else None
        self.finished += effects is not None
        return effects

    def keep(self, index: int, point: Mapping[str, Any], seed: int, effects: Mapping[str, Any]) -> dict:
        """A run just computed (by any executor): written at once; its effects as JSON gives
        them back (what a resumed sweep reads, so both give the same tables)."""
        effects = _plain(dict(effects))
        with deferred():  # (a signal as the file is renamed into place: counted, then raised)
            if self.output is not None:
                record = {"sweep": self.key, "point": dict(point), "seed": seed, "effects": effects}
                self.output.write(self.name(index, seed), json.dumps(signed(record, "sweep run"), indent=1).encode())
            self.finished += 1
        return effects

    def fail(self, index: int, point: Mapping[str, Any], seed: int, error: str, attempts: int) -> None:
        """A run that failed on every attempt: nothing written (`--resume` runs it again)."""
        self.failed[index, seed] = {"error": error, "attempts": attempts}
        self.finished += 1


def stable(result: Mapping[str, Any]) -> dict:
    """The sweep's result without wall-clock times (what summary.json holds: equal for equal runs)."""
    return {**result, "points": [{k: v for k, v in pt.items() if k != "wall_s"} for pt in result["points"]]}


def resume_argv(args, out: str) -> list[str]:
    """The `oasis-gym sweep ... --resume` command that continues the sweep of `args` in `out`
    (with its executor: `--resume` also works with the other one)."""
    argv = ["oasis-gym", "sweep", args.scenario]
    for p in args.param or []:
        argv += ["--param", p]
    for flag, value in (("--seeds", args.seeds), ("--seed-start", args.seed_start), ("--steps", args.steps)):
        if value is not None:
            argv += [flag, str(value)]
    for s in args.sweep_set or []:
        argv += ["--set", s]
    if getattr(args, "executor", "local") != "local":
        argv += ["--executor", args.executor]
        for flag in ("address", "cpus_per_run", "gpus_per_run"):
            if getattr(args, flag, None) is not None:
                argv += [
                    "--" + flag.replace("_", "-"),
                    f"{getattr(args, flag):g}" if flag != "address" else args.address,
                ]
    return [*argv, "--out", str(out), "--resume"]


def stopped_line(signum: int, runs: SweepRuns | None, args, out: str) -> str:
    """The one line `oasis-gym sweep` prints when signal `signum` stopped it: how to continue
    (`--resume` where `out` holds this sweep; else, nothing kept there, the command again)."""
    done = f"after {runs.finished} of {runs.total} runs " if runs is not None else ""
    stopped = f"oasis-gym sweep: stopped by {signal.Signals(signum).name} {done}"
    output = runs.output if runs is not None else None
    if output is None or output.stored_settings() != output.settings:  # (a first sweep's folder goes)
        again = [*resume_argv(args, out)[:-1], *["--overwrite"] * bool(args.overwrite)]
        return f"{stopped}(nothing kept in {out}); run it again: {shlex.join(again)}"
    return f"{stopped}(kept in {out}); continue with: {shlex.join(resume_argv(args, out))}"
