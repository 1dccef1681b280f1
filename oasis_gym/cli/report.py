"""`oasis-gym report`: PNG plots and a text summary of a finished run."""

from __future__ import annotations

import os
import time
from pathlib import Path

from oasis_gym.app.console import Summary, bar, duration, quoted
from oasis_gym.metrics.report import make_report
from oasis_gym.platform.journal import JournalError, read_meta
from oasis_gym.platform.journal_file import require_journal
from oasis_gym.platform.journal_lock import being_written, writers
from oasis_gym.platform.oasis_import import is_oasis_db


def cmd_report(args) -> int:
    """Write the report of the journal (or OASIS database) `args.db`: a progress bar over its
    parts on stderr, then its summary (`--json`: one JSON line of its files)."""
    oasis = is_oasis_db(args.db)
    if not oasis:  # an OASIS database is reported from its own tables
        require_reportable(args.db)
    out = args.out or f"{Path(args.db).with_suffix('')}_report"
    shown = []  # the bar, made at the first part: a refused --out stays one line

    def tick(part: str, parts: int) -> None:
        if not shown:
            shown.append(bar(parts, "report", "part", quiet=getattr(args, "quiet", False)))
        shown[0].total = parts
        shown[0].set_postfix_str(part, refresh=False)
        shown[0].update(1)

    start = time.perf_counter()
    try:
        paths = make_report(args.db, out, overwrite=args.overwrite, progress=tick)
    finally:
        for progress in shown:
            progress.close()
    report_summary(args.db, out, paths, oasis, time.perf_counter() - start).show(getattr(args, "json", False))
    return 0


def require_reportable(db: str) -> None:
    """Refuse (`JournalError`, one line) what is no journal, and a journal whose file does not
    hold its run: no step committed, or another process writes it and its -wal is gone (the
    steps since its last checkpoint are only in that process until it ends)."""
    require_journal(db)
    pids = writers(db)
    if pids and not os.path.exists(f"{db}-wal"):
        raise JournalError(
            f"{being_written(db, pids)}, and its -wal is missing (deleted?): the file is behind the run;"
            " report it once that run ends (it then writes every step into the file)"
        )
    if "step" not in read_meta(db):
        why = (
            f"{being_written(db, pids)}; report it once that run ends"
            if pids
            else "its run ended before its first commit"
        )
        raise JournalError(f"{db} holds no step: nothing to report ({why})")


def report_summary(db: str, out: str, paths: list[Path], oasis: bool, seconds: float) -> Summary:
    """What `oasis-gym report` says at its end: its folder, its files, what to open next."""
    pngs = [p for p in paths if p.suffix == ".png"]
    what = "the OASIS database" if oasis else "the journal"
    done = f"Reported {what} {db} in {duration(seconds)}: {len(pngs)} plots and summary.txt."
    outputs = [(str(Path(out) / "summary.txt"), "the run in numbers, and what the report could not draw")]
    if pngs:
        names = ", ".join(p.name for p in pngs)
        outputs.append((str(pngs[0].parent) + "/", f"{len(pngs)} plots: {names}"))
    nxt = [(quoted(["cat", str(Path(out) / "summary.txt")]), "read the summary")]
    if oasis:
        ours = f"{Path(db).stem}_oasis_gym.db"
        nxt.append((quoted(["oasis-gym", "import", db, "--out", ours]), "convert it: a journal oasis-gym continues"))
    else:
        try:
            step = int(read_meta(db)["step"])
        except (JournalError, KeyError, TypeError, ValueError):
            step = None
        if step is not None:
            more = ["oasis-gym", "run", "--resume", db, "--steps", str(step + 20)]
            nxt.append((quoted(more), "continue the run for 20 more steps"))
    data = {"db": db, "out": out, "files": [str(p) for p in paths]}
    return Summary(done, outputs, nxt, data)
