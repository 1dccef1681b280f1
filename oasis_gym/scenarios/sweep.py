"""Sensitivity instead of one hand-set value: run a scenario over a parameter grid and seeds.

    oasis-gym sweep group_polarization --param rho=0.4:1.2:5 --seeds 10 --out sweeps/rho
    oasis-gym sweep group_polarization              # the scenario's [sweep] table

A --param is `key=lo:hi:n` (n evenly spaced values) or `key=v1,v2,...`; `key` is a dotted
config path or a bare name found exactly once anywhere in the config (`rho` ->
policy.abm.opinion_params.rho). Several --param make a full grid. Each grid point runs the
same seeds (seed_start .. seed_start + seeds - 1; paired across points; a seed sets both the
run and scenario.seed, so the population's random parts are redrawn too), without journals on
disk or per-step metrics. Written to --out under the rule of `oasis_gym.outputs` (a file
there that is not an earlier sweep's is refused; an earlier sweep is replaced only with
--overwrite, continued with --resume: `sweep_store`):

* runs/<point>_seed<seed>.json: each run as soon as it finishes (what --resume skips);

* runs.csv: one row per (grid point, seed): the parameters, the seed, every effect;
* summary.csv / summary.json: per grid point and effect: mean, 95% CI (t), sd, n, and the
  share of seeds with the kind's expected ordering (effects.ORDERINGS);
* effect_vs_<param>.png: the headline effects against the first parameter, with CIs.

The scenario's [sweep] table may give `param` (a --param string or a list of them), `seeds`,
`seed_start`, `steps` and `set` (extra overrides, e.g. {"population.users" = 2000}).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..checks import MAX_ID, MAX_SEED, path_name, whole_number
from ..figures import new_figure, save_png, series_style
from .config import parse_value
from .effects import HEADLINE, ORDERINGS, effect_label, effects
from .scenario import Scenario, load_scenario
from .stats import ordering_share, summarize
from .sweep_executors import Failed, LocalExecutor
from .sweep_store import TABLES, SweepRuns, stable, sweep_output, sweep_settings

__all__ = [
    "parse_param",
    "resolve_key",
    "plan_sweep",
    "run_sweep",
    "run_config",
    "plot_sweep",
    "sweep_figure",
    "OUTPUTS",
    "MAX_SWEEP_RUNS",
]

OUTPUTS = ("runs.csv", "summary.csv", "summary.json")
MAX_SWEEP_RUNS = 10_000  # grid points x seeds of one sweep (checked before it is planned)


def parse_param(text: str) -> tuple[str, list[float | Any]]:
    """ "rho=0.4:1.2:5" -> ("rho", [0.4, 0.6, 0.8, 1.0, 1.2]); "k=1,2,4" -> ("k", [1, 2, 4])."""
    key, sep, spec = str(text).partition("=")
    key, spec = key.strip(), spec.strip()
    if not sep or not key or not spec:
        raise ValueError(f"--param expects key=lo:hi:n or key=v1,v2,..., got {text!r}")
    if ":" in spec:
        parts = spec.split(":")
        try:
            lo, hi, n = float(parts[0]), float(parts[1]), int(parts[2])
        except (ValueError, IndexError) as err:
            raise ValueError(f"--param {text!r}: a range is lo:hi:n with numbers lo, hi and an integer n") from err
        if len(parts) != 3 or not 1 <= n <= MAX_SWEEP_RUNS or not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"--param {text!r}: a range is lo:hi:n with finite lo, hi and n in [1, {MAX_SWEEP_RUNS}]")
        values = [round(float(v), 10) for v in np.linspace(lo, hi, n)]
        if all(_is_int(p) for p in parts[:2]) and all(v.is_integer() for v in values):
            values = [int(v) for v in values]  # users=10:40:4 -> 10, 20, 30, 40 (whole numbers stay whole)
        return key, values
    items = [v.strip() for v in spec.split(",")]
    if "" in items:
        raise ValueError(f"--param {text!r}: an empty value (two commas, or a comma at an end)")
    return key, [parse_value(v) for v in items]


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _leaves(node: Mapping[str, Any], prefix: str = ""):
    for k, v in node.items():
        path = f"{prefix}{k}"
        if isinstance(v, Mapping):
            yield from _leaves(v, path + ".")
        else:
            yield path


def resolve_key(config: Mapping[str, Any], key: str) -> str:
    """A dotted key as given; a bare name must be the last part of exactly one config path."""
    if "." in key:
        return key
    hits = [p for p in _leaves(config) if p.rsplit(".", 1)[-1] == key and not p.startswith(("sweep.", "evidence."))]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise KeyError(f"unknown parameter {key!r}: no setting of that name; write its dotted path")
    raise KeyError(f"ambiguous parameter {key!r} (in {hits}); write its dotted path")


def _grid(params: Sequence[tuple[str, list]]) -> list[dict[str, Any]]:
    keys = [k for k, _ in params]
    return [dict(zip(keys, vals)) for vals in itertools.product(*(v for _, v in params))]


def plan_sweep(
    scenario: str,
    params: Sequence[str] | None = None,
    seeds: int | None = None,
    seed_start: int | None = None,
    steps: int | None = None,
    sets: Mapping[str, Any] | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    resume: bool = False,
) -> dict:
    """Check every argument (and that each grid point's config loads) before anything runs;
    raises ValueError / KeyError / FileExistsError / FileNotFoundError on bad input (an
    `OutputError`, a FileExistsError, for a taken `out`; `resume`: continue the sweep there)."""
    base = load_scenario(scenario, dict(sets or {}))
    table = base.config.get("sweep", {})
    specs = list(params or [])
    if not specs:
        spec = table.get("param")
        specs = [spec] if isinstance(spec, str) else list(spec or [])
    if not specs:
        raise ValueError(f"{base.name}: give --param key=lo:hi:n (the scenario has no [sweep] param)")
    parsed = [(resolve_key(base.config, k), v) for k, v in (parse_param(s) for s in specs)]
    twice = sorted({k for k, _ in parsed if sum(k == other for other, _ in parsed) > 1})
    if twice:  # the last one's values would silently replace the others' in every grid point
        raise ValueError(f"--param {twice[0]} is given more than once: give all its values in one --param")
    seeds = whole_number(seeds if seeds is not None else table.get("seeds", 10), "--seeds", 1, MAX_SWEEP_RUNS)
    seed_start = seed_start if seed_start is not None else table.get("seed_start", 0)
    seed_start = whole_number(seed_start, "--seed-start", 0, MAX_SEED)
    if seed_start + seeds - 1 > MAX_SEED:
        raise ValueError(f"--seed-start {seed_start} + --seeds {seeds}: the last seed is past {MAX_SEED}")
    steps = steps if steps is not None else table.get("steps")
    out_dir = Path(path_name(str(out), "--out")) if out is not None else None
    if steps is not None:
        steps = whole_number(steps, "--steps", 1, MAX_ID)
    sizes = [len(values) for _, values in parsed]
    if math.prod(sizes) * seeds > MAX_SWEEP_RUNS:  # before the grid is built: 10**8 points would take minutes
        raise ValueError(
            f"the sweep is {' x '.join(map(str, sizes))} grid points x {seeds} seeds = {math.prod(sizes) * seeds:,}"
            f" runs; a sweep has at most {MAX_SWEEP_RUNS:,}: split it or use fewer values or seeds"
        )
    extra = {"metrics.enabled": False, **dict(table.get("set", {})), **dict(sets or {})}
    grid = _grid(parsed)
    fixed = load_scenario(scenario, extra)
    for point in grid:  # each point's settings checked (`Scenario.check`): a 10,000-point grid in about 1 s
        fixed.with_overrides(point)
    plan = {
        "scenario": scenario,
        "base": base,
        "parsed": parsed,
        "grid": grid,
        "extra": extra,
        "steps": steps,
        "seeds": list(range(seed_start, seed_start + seeds)),
        "out": out_dir,
        "fixed": fixed,
    }
    settings = sweep_settings(plan)
    plan["output"] = None if out_dir is None else sweep_output(out_dir, settings, overwrite, resume)
    plan["runs"] = SweepRuns(plan["output"], settings, resume, total=len(grid) * seeds)
    return plan


def run_config(config: dict, source: str, steps: int | None, seed: int) -> dict:
    """One run of a sweep, what every executor computes: the scenario `config` (a grid
    point's, its seed set) run for `steps` with `seed`, without a journal on disk; its effects."""
    sc = Scenario(config, source)
    return effects(sc.kind, sc.run(steps=steps, db_path=":memory:", seed=seed))


def run_sweep(
    scenario: str,
    *args: Any,
    plot: bool = True,
    log=None,
    plan: dict | None = None,
    on_run: Callable[[bool], None] | None = None,
    executor=None,
    **kwargs: Any,
) -> dict:
    """Run the grid x seeds; returns {"scenario", "kind", "params", "seeds", "points": [...]}
    (and "failed": [{"point", "seed", "error", "attempts"}] when runs failed) and writes the
    tables (and the PNG) to `out` when given.

    The sweep is `plan` (from `plan_sweep`), else planned from `scenario` and the other
    arguments, which are plan_sweep's (params, seeds, seed_start, steps, sets, out, overwrite).
    Each point of "points" holds its grid point, effects (mean, CI, sd, n over the seeds that
    finished), ordered_share and wall_s (the seconds its runs took where they ran, summed;
    0 for runs read back). `executor` computes the runs (`sweep_executors`: `LocalExecutor()`, the default, or
    `RayExecutor(address)`); it is started here and closed at the end. `log(point)` is called
    when a grid point's runs are all done (in grid order), `on_run(loaded)` after each run
    (`loaded`: a finished run of an interrupted sweep, read back on resume; a failed run
    counts as done). A run that fails is retried once, then listed in "failed" while the
    others go on; the tables then hold the runs that finished (no tables when none did).
    The output folder's writer lock (`oasis_gym.outputs`) is let go when it ends.
    """
    plan = plan or plan_sweep(scenario, *args, **kwargs)
    executor = executor if executor is not None else LocalExecutor()
    try:
        executor.start(plan)
        try:
            return _run_plan(scenario, plan, plot, log, on_run, executor)
        finally:
            executor.close()
    finally:
        if plan.get("output") is not None:
            plan["output"].release()


def _run_plan(scenario: str, plan: dict, plot: bool, log, on_run, executor) -> dict:
    base, parsed, extra, steps = plan["base"], plan["parsed"], plan["extra"], plan["steps"]
    grid, seed_list, out_dir = plan["grid"], plan["seeds"], plan["out"]
    runs = plan.get("runs") or SweepRuns(None, {}, False)
    done: dict[tuple[int, int], dict] = {}
    spent = [0.0] * len(grid)  # the seconds each point's runs took where they ran
    todo = []
    for i, point in enumerate(grid):  # the finished runs of an interrupted sweep, read back
        for s in seed_list:
            eff = runs.load(i, point, s)
            if eff is None:
                todo.append((i, s))
                continue
            done[i, s] = eff
            if on_run is not None:
                on_run(True)
    points: list[dict] = []
    order = ORDERINGS.get(base.kind, ())

    def finish_points() -> None:  # each grid point whose runs are all done or failed, in grid order
        while len(points) < len(grid) and all((len(points), s) in done or (len(points), s) in runs.failed
                                              for s in seed_list):  # fmt: skip
            i = len(points)
            per_seed = [done[i, s] for s in seed_list if (i, s) in done]
            pt = {
                "point": grid[i],
                "effects": summarize(per_seed),  # shares' intervals stay in [0, 1]
                "wall_s": round(spent[i], 2),
                "ordered_share": ordering_share([[e[k] for k in order] for e in per_seed]) if order else None,
                "ordering": list(order),
            }
            points.append(pt)
            if log is not None:
                log(pt)

    def jobs():  # scenario.seed too: each seed also redraws the population's random parts
        for i, s in todo:
            sc = load_scenario(scenario, {**extra, **grid[i], "scenario.seed": s})
            yield (i, s), (sc.config, sc.source, steps, s)

    finish_points()
    results = executor.map(run_config, jobs())
    try:
        for (i, s), out, seconds in results:
            spent[i] += seconds
            if isinstance(out, Failed):
                runs.fail(i, grid[i], s, out.error, out.attempts)
            else:
                done[i, s] = runs.keep(i, grid[i], s, out)  # kept at once (resume loads it)
            if on_run is not None:
                on_run(False)
            finish_points()
    finally:
        results.close()  # stopped early (Ctrl-C): the executor lets go of its unfinished runs now
    rows = [{**grid[i], "seed": s, **done[i, s]} for i in range(len(grid)) for s in seed_list if (i, s) in done]
    result = {
        "scenario": base.name,
        "kind": base.kind,
        "params": {k: v for k, v in parsed},
        "seeds": seed_list,
        "steps": steps if steps is not None else base.steps,
        "overrides": {k: v for k, v in extra.items()},
        "headline": list(HEADLINE.get(base.kind, ())),
        "points": points,
    }
    if runs.failed:
        result["failed"] = [{"point": grid[i], "seed": s, **why} for (i, s), why in sorted(runs.failed.items())]
    if out_dir is not None and rows:  # the tables and the PNG: written beside, then renamed into place together
        with plan["output"].staging(prune=TABLES) as tmp:
            _write(tmp, rows, result)  # the tables first: a plot that cannot be drawn costs only itself
            png = _plot(result, tmp) if plot else None
        if png is not None:
            result["png"] = str(out_dir / png.name)
    return result


def _num(v: Any) -> Any:
    return "" if isinstance(v, float) and not math.isfinite(v) else v


def _write(out_dir: Path, rows: list[dict], result: dict) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    fields = list(rows[0])
    with open(out_dir / "runs.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows({k: _num(r.get(k)) for k in fields} for r in rows)
    keys = list(result["params"])
    with open(out_dir / "summary.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(keys + ["effect", "mean", "ci_lo", "ci_hi", "sd", "n", "ordered_share"])
        for pt in result["points"]:
            for name, s in pt["effects"].items():
                w.writerow(
                    [pt["point"][k] for k in keys]
                    + [name]
                    + [_num(s[c]) for c in ("mean", "lo", "hi", "sd")]
                    + [s["n"], _num(pt["ordered_share"]) if pt["ordered_share"] is not None else ""]
                )
    (out_dir / "summary.json").write_text(json.dumps(_clean(stable(result)), indent=1), encoding="utf-8")


def _clean(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _png_path(result: Mapping[str, Any], out_dir: str | Path) -> Path:
    return Path(out_dir) / f"effect_vs_{next(iter(result['params'])).rsplit('.', 1)[-1]}.png"


def _plot(result: dict, out_dir: Path) -> Path | None:
    """`plot_sweep`'s PNG, or None where the figures cannot be drawn (values near the float
    limits: matplotlib's transforms overflow), with `result["plot_error"]` saying why."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return plot_sweep(result, out_dir)
    except (ValueError, ArithmeticError) as err:  # np.linalg.LinAlgError is a ValueError
        _png_path(result, out_dir).unlink(missing_ok=True)  # (a half-written one)
        result["plot_error"] = " ".join(f"{type(err).__name__}: {err}".split())[:200]
        return None


def plot_sweep(result: Mapping[str, Any], out_dir: str | Path, effects_to_plot: Sequence[str] | None = None) -> Path:
    """`sweep_figure` as effect_vs_<first parameter>.png in `out_dir`."""
    return save_png(sweep_figure(result, effects_to_plot), _png_path(result, out_dir))


def sweep_figure(result: Mapping[str, Any], effects_to_plot: Sequence[str] | None = None):
    """Effect (mean and 95% CI) against the first parameter, a panel per effect (other
    parameters: one line per combination, each in its own colour, line style and marker)."""
    keys = list(result["params"])
    x_key = keys[0]
    names = list(effects_to_plot or result.get("headline") or list(result["points"][0]["effects"])[:2])
    fig, axes = new_figure(len(names), panel=(5.0, 4.0))
    lines: dict[tuple, list] = {}
    for pt in result["points"]:
        lines.setdefault(tuple((k, pt["point"][k]) for k in keys[1:]), []).append(pt)
    xs = [p["point"][x_key] for p in result["points"]]
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs)
    cats = list(dict.fromkeys(str(v) for v in xs))  # a non-numeric parameter: categories in order
    for ax, name in zip(axes, names):
        for i, (rest, pts) in enumerate(lines.items()):
            x = np.array([float(p["point"][x_key]) if numeric else cats.index(str(p["point"][x_key])) for p in pts])
            s = [p["effects"].get(name, {"mean": math.nan, "lo": math.nan, "hi": math.nan}) for p in pts]
            m = np.array([v["mean"] for v in s], float)
            lo, hi = np.array([v["lo"] for v in s], float), np.array([v["hi"] for v in s], float)
            label = ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in rest) or None
            style = series_style(i)
            ax.plot(x, m, label=label, **style)
            ax.fill_between(x, lo, hi, alpha=0.2, color=style["color"])
        if not numeric:
            ax.set_xticks(range(len(cats)), cats)
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_xlabel(x_key.rsplit(".", 1)[-1])
        ax.set_ylabel(effect_label(name))
        ax.set_title(name.replace("_", " "))
        if len(lines) > 1:
            ax.legend()
    fig.set_layout_engine("constrained")  # room for the suptitle
    fig.suptitle(f"{result['scenario']}: mean and 95% CI over {len(result['seeds'])} seeds")
    return fig
