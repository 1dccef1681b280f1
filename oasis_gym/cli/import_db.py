"""`oasis-gym import`: convert an OASIS database into a journal that `run --resume` continues."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

from oasis_gym.app.console import Summary, duration, plural, quoted, timed
from oasis_gym.outputs import OutputError, OutputFile
from oasis_gym.platform.journal_file import SIBLINGS
from oasis_gym.platform.oasis_import import OasisImportError, is_import, journal_path, load_oasis, write_import
from oasis_gym.sim import SimulationConfig

from .parser import build_parser


def import_target(out: str | Path, overwrite: bool = False) -> OutputFile:
    """The journal file an import writes, checked (`oasis_gym.outputs`): missing, or an earlier
    import (replaced only with `overwrite`); anything else raises `OutputError` naming it."""
    return OutputFile(out, "import", is_import, overwrite=overwrite, siblings=SIBLINGS).check()


def cmd_import(args) -> int:
    """Write the journal `args.out` from the OASIS database `args.oasis_db` (only read): its two
    passes timed on stderr, then its summary (`--json`: one JSON line)."""

    def fail(message: str) -> int:  # a bad argument: one line, exit code 2
        print(f"oasis-gym import: error: {message}", file=sys.stderr)
        return 2

    quiet, start = getattr(args, "quiet", False), time.perf_counter()
    args.out = str(journal_path(args.oasis_db, args.out))  # `--out folder/`: the journal goes inside
    if Path(args.out).exists() and Path(args.oasis_db).resolve() == Path(args.out).resolve():
        return fail("the output must be a new file, not the OASIS database")
    try:  # a taken --out: one line, exit code 2, before anything is read
        target = import_target(args.out, args.overwrite)
    except OutputError as err:
        return fail(str(err))
    try:  # read first (a second, cheap pass writes): the saved settings need the platform's kind and step
        with timed(f"reading {args.oasis_db}", quiet=quiet):
            loaded = load_oasis(
                args.oasis_db, minutes_per_step=args.minutes_per_step, platform=args.platform, strict=args.strict
            )
    except (OasisImportError, FileNotFoundError) as err:
        return fail(f"cannot import {args.oasis_db}: {str(err).removeprefix(f'{args.oasis_db}: ')}")
    pf = loaded.platform
    name = pf.config.name
    config = SimulationConfig(
        platform=name, recsys=name, max_cycles=pf.step, db_path=str(args.out), minutes_per_step=args.minutes_per_step
    )
    run_args = [
        "run",
        "--platform",
        name,
        "--policy",
        args.policy,
        "--db",
        str(args.out),
        "--seed",
        str(args.seed),
        "--steps",
        str(pf.step),
    ] + (["--no-tensorboard"] if args.no_tensorboard else [])
    cli = {k: v for k, v in vars(build_parser().parse_args(run_args)).items() if k != "resume"}
    seqs = np.random.SeedSequence(args.seed).spawn(3)
    meta = {
        "config": dataclasses.asdict(config),
        "seed": args.seed,
        "views": [],
        "recsys_weights": None,
        "rng": [np.random.default_rng(s).bit_generator.state for s in seqs],
        "state": {"cli": cli},
    }
    with timed(f"writing the journal {args.out}", quiet=quiet), target.staging() as tmp:  # renamed into place
        result = write_import(
            args.oasis_db,
            tmp,
            meta=meta,
            minutes_per_step=args.minutes_per_step,
            platform=args.platform,
            strict=args.strict,
        )
    data = {"out": str(args.out), **result.summary()}
    import_summary(args, data, name, time.perf_counter() - start).show(getattr(args, "json", False))
    return 0


TABLE_WORDS = (("user", "user"), ("post", "post"), ("comment", "comment"), ("follow", "follow"), ("trace", "trace row"))


def import_summary(args, data: dict, platform: str, seconds: float) -> Summary:
    """What `oasis-gym import` says at its end: what it read, the journal, how to go on."""
    counts, step = data["counts"], data["step"]
    done = (
        f"Imported {args.oasis_db} ({platform}, at step {step}) in {duration(seconds)}: "
        + ", ".join(plural(counts.get(t, 0), w) for t, w in TABLE_WORDS)
        + "."
    )
    if data["counter_mismatches"]:
        done += f"\nStored counters that disagreed with the rows, recomputed: {data['counter_mismatches']}."
    if data["dropped_rows"]:
        done += f"\nRows left out (naming rows that do not exist): {data['dropped_rows']}."
    outputs = [(args.out, "the journal: OASIS's rows with 0-based ids (oasis_id_map keeps OASIS's)")]
    nxt = [
        (quoted(["oasis-gym", "run", "--resume", args.out, "--steps", str(step + 20)]), "go on for 20 steps"),
        (quoted(["oasis-gym", "report", args.out]), "plots and a summary of the imported run"),
    ]
    return Summary(done, outputs, nxt, data)
