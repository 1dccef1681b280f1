"""A small scenario sweep through the Python API: one paper scenario over a parameter grid
and a few seeds, effects with 95% confidence intervals.

What it shows: `oasis_gym.scenarios.sweep.run_sweep`, what `oasis-gym sweep` runs. Each grid
point runs the same seeds (paired across points; a seed also redraws the population's random
parts), without journals on disk; the tables (runs.csv, summary.csv, summary.json) and a PNG
of the headline effects against the parameter go to the output folder. The default is the
group-polarization scenario (392 real accounts, ABM users with Lorenz et al.'s 2021 attitude
model) over its deciding parameter rho: rho < 1 mixes contagion into assimilation, so the
groups should drift apart more at low rho.

With the defaults (3 values of rho x 2 seeds x 10 steps): 6.1 s on 2 cores shared with other
jobs (load average 13-14, 2026-12-06).

    python examples/scenario_sweep.py                          # output in a fresh temp folder
    python examples/scenario_sweep.py --param rho=0.4:1.2:5 --seeds 10 --steps 30 --out sweeps/rho
    python examples/scenario_sweep.py --scenario reddit_herd_effect --param herd_weight=0,0.2,0.5
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

from oasis_gym.scenarios import parse_sets
from oasis_gym.scenarios.sweep import run_sweep


def interval(s: dict) -> str:
    """`mean [lo, hi]` of one effect (no interval from a single seed)."""
    if not math.isfinite(s["mean"]):
        return "n/a"
    if not (math.isfinite(s["lo"]) and math.isfinite(s["hi"])):
        return f"{s['mean']:+.3f}"
    return f"{s['mean']:+.3f} [{s['lo']:+.3f}, {s['hi']:+.3f}]"


def main(argv: list[str] | None = None) -> int:
    """Run the sweep, print the headline effects per grid point and a summary."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="group_polarization", help="a shipped scenario or a .toml file")
    p.add_argument(
        "--param", action="append", default=None, help="KEY=LO:HI:N or KEY=V1,V2 (repeatable; default rho=0.4:1.2:3)"
    )
    p.add_argument("--seeds", type=int, default=2, help="seeds per grid point (default 2)")
    p.add_argument("--steps", type=int, default=10, help="steps per run (default 10)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="fixed override, e.g. users=36")
    p.add_argument("--out", type=Path, default=None, help="output folder (default: a fresh temp folder)")
    args = p.parse_args(argv)
    params = args.param or (["rho=0.4:1.2:3"] if args.scenario == "group_polarization" else None)
    sets = parse_sets(args.set)  # "users=36" -> {"users": 36} (values read as TOML)
    out = args.out or Path(tempfile.mkdtemp(prefix="oasis_gym_sweep_"))
    print(f"output folder: {out}")

    def log(point: dict) -> None:  # called after each grid point
        print(f"  {point['point']}: {point['wall_s']} s")

    result = run_sweep(
        args.scenario, params, seeds=args.seeds, steps=args.steps, sets=sets, out=out, overwrite=True, log=log
    )
    headline = result["headline"] or list(result["points"][0]["effects"])[:2]
    print(f"\n{result['scenario']}: mean [95% CI] over seeds {result['seeds']}")
    for pt in result["points"]:
        values = ", ".join(f"{name} {interval(pt['effects'][name])}" for name in headline)
        print(f"  {pt['point']}: {values}")

    print(
        f"\nSummary: swept {result['scenario']} over {result['params']} with {len(result['seeds'])} seeds per point "
        f"({len(result['points'])} points, {result['steps']} steps per run), through "
        "oasis_gym.scenarios.sweep.run_sweep."
    )
    print(f"Outputs in {out}: runs.csv, summary.csv, summary.json and {Path(result.get('png', '')).name}.")
    other = "reddit_herd_effect" if result["scenario"] != "reddit_herd_effect" else "group_polarization"
    print(
        "Try next: 10 seeds and the scenario's own steps for intervals you can read "
        f"(oasis-gym sweep {result['scenario']} --seeds 10 --out sweeps/{result['scenario']}), "
        f"another scenario (--scenario {other}, its [sweep] table's grid), or docs/scenarios.md."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
