"""`oasis-gym report`: PNG plots and a text summary of a finished run."""

from __future__ import annotations

from pathlib import Path

from oasis_gym.metrics.report import make_report
from oasis_gym.platform.journal_file import require_journal
from oasis_gym.platform.oasis_import import is_oasis_db


def cmd_report(args) -> int:
    """Write the report of the journal (or OASIS database) `args.db`; print its files."""
    if not is_oasis_db(args.db):  # an OASIS database is reported from its own tables
        require_journal(args.db)
    out = args.out or f"{Path(args.db).with_suffix('')}_report"
    paths = make_report(args.db, out, overwrite=args.overwrite)
    for p in paths:
        print(p)
    return 0
