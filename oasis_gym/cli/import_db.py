"""`oasis-gym import`: convert an OASIS database into a journal that `run --resume` continues."""

from __future__ import annotations

import dataclasses
import json
import sys

import numpy as np

from oasis_gym.outputs import OutputError
from oasis_gym.platform.oasis_import import (
    OasisImportError,
    import_oasis,
    import_target,
    journal_path,
    load_oasis,
)
from oasis_gym.sim import SimulationConfig
from oasis_gym.sim.clock import MAX_MINUTES_PER_STEP

from .parser import build_parser


def cmd_import(args) -> int:
    """Write the journal `args.out` from the OASIS database `args.oasis_db` (only read)."""

    def fail(message: str) -> int:  # a bad argument: one line, exit code 2
        print(f"oasis-gym import: error: {message}", file=sys.stderr)
        return 2

    if not 1 <= args.minutes_per_step <= MAX_MINUTES_PER_STEP:  # (a week: the clock stays a date)
        return fail(f"--minutes-per-step must be in [1, {MAX_MINUTES_PER_STEP}], got {args.minutes_per_step}")
    args.out = str(journal_path(args.oasis_db, args.out))  # `--out folder/`: the journal goes inside
    try:  # a taken --out: one line, exit code 2, before anything is read
        import_target(args.out, args.overwrite)
    except OutputError as err:
        return fail(str(err))
    try:  # read first (a second, cheap pass writes): the saved settings need the platform's kind and step
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
    result = import_oasis(
        args.oasis_db,
        args.out,
        meta=meta,
        minutes_per_step=args.minutes_per_step,
        platform=args.platform,
        strict=args.strict,
        overwrite=args.overwrite,
    )
    print(json.dumps({"out": str(args.out), **result.summary()}))
    return 0
