"""``oasis-gym run --scenario NAME [--set key=value ...]``: arguments and the command."""

from __future__ import annotations

import json
import math

from ..app.console import Summary, duration, plural, quoted
from ..errors import ConfigError
from ..outputs import OutputFile, is_signed, signed
from ..outputs.logdir import claim_logdir, logdir_for
from .config import list_scenarios, parse_sets
from .scenario import _jsonable, load_scenario

FIGURES = "run --scenario --figures"  # the signature of a figures file (oasis_gym.outputs)


def add_scenario_args(run_parser) -> None:
    """Add --scenario / --set / --figures to the `oasis-gym run` parser."""
    run_parser.add_argument(
        "--scenario",
        default=None,
        metavar="NAME",
        help=f"run a paper scenario ({', '.join(list_scenarios())}) or a scenario .toml file; "
        "then only --steps, --seed, --db, --logdir, --no-tensorboard and --quiet apply",
    )
    run_parser.add_argument(
        "--set",
        dest="scenario_set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario setting (repeatable): users=3600, policy.kind=hybrid, policy.abm.cascade_p=0.5",
    )
    run_parser.add_argument(
        "--figures",
        default=None,
        metavar="JSON",
        help="scenario: write the full figures (curves, series) to this JSON file",
    )


def run_scenario_cli(args) -> int:
    """`oasis-gym run --scenario NAME [--set key=value ...]`: run it, end with a summary of its
    headline figures (`--json`: one JSON line of them) and write them all to --figures."""
    try:  # a bad name, file or --set is the user's input: one line on the command line
        sets = parse_sets(getattr(args, "scenario_set", None) or [])
        scenario = load_scenario(args.scenario, sets)
    except (FileNotFoundError, KeyError, ValueError) as err:
        raise ConfigError(err.args[0] if err.args else str(err)) from err
    seed = None if "seed" in sets or "scenario.seed" in sets else getattr(args, "seed", None)
    given = getattr(args, "given", None)  # the options the command line names (oasis_gym.cli)
    db = (None if given is not None and "db" not in given else getattr(args, "db", None)) or f"{scenario.name}.db"
    overwrite = getattr(args, "overwrite", False)
    logdir = None
    if not getattr(args, "no_tensorboard", False):  # runs/<db stem>, or the next free runs/<stem>-2, ...
        logdir = str(logdir_for(db, getattr(args, "logdir", None), overwrite=overwrite))
    # the outputs' rule (oasis_gym.outputs) before anything runs: a taken path is one line, exit code 2
    out = getattr(args, "figures", None)
    out = out and OutputFile(out, FIGURES, is_signed(FIGURES), overwrite=overwrite, option="--figures").check()
    if logdir is not None:
        claim_logdir(logdir, db, overwrite=overwrite)
    figures = scenario.run(
        steps=getattr(args, "steps", None),
        db_path=db,
        logdir=logdir,
        progress=not getattr(args, "quiet", False),
        seed=seed,
        overwrite=overwrite,
    )
    if out:  # written beside it, then renamed into place; signed, so a later run knows it as its own
        with out.staging() as tmp:
            tmp.write_text(json.dumps(signed(_jsonable(figures), FIGURES), indent=1), encoding="utf-8")
    data = _jsonable({"scenario": scenario.name, **figures["summary"], **figures["run"]})
    scenario_summary(data, out and str(out.path)).show(getattr(args, "json", False))
    return 0


def _short(value) -> str:
    """A figure in a few characters: numbers to 3 significant digits, dicts as k v pairs."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.3g}" if math.isfinite(value) else "n/a"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_short(v)}" for k, v in value.items())
    if isinstance(value, list):
        return f"[{len(value)} values]"
    return str(value)


def scenario_summary(data: dict, figures: str | None) -> Summary:
    """What `oasis-gym run --scenario` says at its end (`data`: its JSON line)."""
    name, db, logdir = data["scenario"], data.get("db_path"), data.get("logdir")
    seconds = float(data.get("setup_s", 0)) + float(data.get("run_s", 0))
    done = [
        f"Ran the scenario {name}: {plural(data.get('steps', 0), 'step')} of {plural(data.get('users', 0), 'user')} "
        f"({data.get('policy')} users) in {duration(seconds)}, {plural(data.get('actions', 0), 'action')}."
    ]
    run_keys = {"steps", "users", "seed", "policy", "setup_s", "run_s", "actions", "db_path", "logdir", "scenario"}
    done += [f"  {k}: {_short(v)}" for k, v in data.items() if k not in run_keys and k != "evidence"]
    evidence = data.get("evidence")
    if isinstance(evidence, dict) and evidence.get("level"):
        done.append(f"  evidence: {evidence['level']}")
    outputs = [(db, "the journal (SQLite, OASIS's tables)")] if db and db != ":memory:" else []
    if logdir:
        outputs.append((logdir, "TensorBoard logs"))
    if figures:
        outputs.append((figures, "every figure, curves and series included (JSON)"))
    nxt = [(quoted(["oasis-gym", "report", db]), "its plots and summary.txt")] if outputs and db else []
    nxt.append((quoted(["oasis-gym", "sweep", name, "--seeds", "10"]), "its effects over seeds, with 95% CIs"))
    return Summary("\n".join(done), outputs, nxt, data)
