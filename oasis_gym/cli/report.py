"""`oasis-gym report`: PNG plots and a text summary of a finished run (`make_report`: the report
as a command's output, under the output rule; the report itself is `metrics/report.py`'s)."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from oasis_gym.app.console import Summary, bar, duration, quoted
from oasis_gym.metrics.report import REPORT_FILES, write_report
from oasis_gym.outputs import OutputDir
from oasis_gym.platform.journal import JournalError, read_meta
from oasis_gym.platform.journal_file import require_journal
from oasis_gym.platform.journal_lock import being_written, writers
from oasis_gym.platform.oasis_import import check_tables, is_oasis_db


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
            meta = read_meta(db)
            step = int(meta["step"])
        except (JournalError, KeyError, TypeError, ValueError):
            meta, step = {}, None
        state = meta.get("state")
        if step is not None and isinstance(state, dict) and "cli" in state:  # a run `run --resume` continues
            more = ["oasis-gym", "run", "--resume", db, "--steps", str(step + 20)]
            nxt.append((quoted(more), "continue the run for 20 more steps"))
    data = {"db": db, "out": out, "files": [str(p) for p in paths]}
    return Summary(done, outputs, nxt, data)


def report_output(out_dir: str | Path, overwrite: bool = False) -> OutputDir:
    """The report's folder under the rule of `oasis_gym.outputs` (checked): its files are
    summary.txt and the PNGs; an earlier report there is replaced only with `overwrite`."""
    return OutputDir(out_dir, "report", REPORT_FILES, overwrite=overwrite).check()


def make_report(
    db_path: str | Path,
    out_dir: str | Path,
    *,
    overwrite: bool = False,
    progress: Callable[[str, int], None] | None = None,
) -> list[Path]:
    """Write the run's plots (PNG) and summary.txt into ``out_dir``; return their paths.

    Plots: actions.png (tags "actions/*"), cascade.png ("cascade/*") and cascade_tracked.png
    (the tracked cascades, "cascade/top<k>/*"), metrics_<group>.png for every other tag group
    ("opinion/*", "network/*", ...), opinion_heatmap.png (table ``opinion``),
    follower_ccdf.png (``user.num_followers``) and cascade_curves.png (``cascade_curve``); a
    series that is 0 at every step is left out (summary.txt names them in one line), and so
    is one that holds one value throughout (named under its figure's panels and in
    summary.txt). The database is only read, its committed state (`journal_file.connect_read`);
    FileNotFoundError if it does not exist, and an OASIS database holding a view is refused
    (`OasisImportError`). ``out_dir`` follows `oasis_gym.outputs`:
    a file of these names that is not an earlier report's is refused (`OutputError`) before
    anything is read, an earlier report is replaced only with ``overwrite`` (its plots that
    this report does not draw are removed), and the files appear together once all are drawn.
    `progress(part, parts)` is called after each part (reading the tables, each file), with
    the number of parts in all.
    """
    db_path = Path(db_path)
    if not db_path.is_file():
        raise FileNotFoundError(db_path)
    if is_oasis_db(db_path):
        check_tables(db_path)  # a view there is refused before anything else is read
    output = report_output(out_dir, overwrite)
    try:
        with output.staging(prune=REPORT_FILES) as tmp:
            written = write_report(db_path, tmp, progress or (lambda part, parts: None))
    finally:
        output.release()  # the folder's writer lock (one command at a time)
    return [output.path / p.relative_to(tmp) for p in written]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m oasis_gym.cli.report RUN.db OUT_DIR``: print the written paths."""
    ap = argparse.ArgumentParser(description="Plots and a summary from an oasis-gym run database.")
    ap.add_argument("db", type=Path, help="the run's SQLite database")
    ap.add_argument("out_dir", type=Path, help="folder for the PNGs and summary.txt")
    ap.add_argument("--overwrite", action="store_true", help="replace an earlier report in out_dir")
    args = ap.parse_args(argv)
    for path in make_report(args.db, args.out_dir, overwrite=args.overwrite):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
