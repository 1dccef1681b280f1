"""The training mode's stand-in for the journal: every step happens in memory, nothing is written.

`SimulationConfig(journal=False)` (the envs' `journal=False`) gives the simulation a
`NoJournal`: the step's phases, its atomicity (a failed step still restores memory) and
every result are those of a journaled run with the same seed, but no SQLite file exists, so
nothing of the run is recorded (no OASIS tables, no `rec` rows, no metrics table, no saved
state) and it cannot be resumed. Step hooks get `conn=None`: a hook that writes to the
journal (the metrics recorder, `log_recs`) needs a journaled run. Record an evaluation
episode in full by making its env with the default `journal=True` (and a `db_path`).
"""

from __future__ import annotations

from ..platform import Platform


class NoJournal:
    """The `Journal` interface the simulation uses, writing nothing (module docstring)."""

    path = None
    journal_id = None
    conn = None
    steps_taken = 0  # (never counts: a failed step is always restored)

    def commit_step(self, platform: Platform, advance_minutes: int | None = None, extra=None, meta=None) -> None:
        """Run `extra(None)`, then move the platform on as a commit would."""
        self.begin_step(platform, advance_minutes, extra, meta)
        platform.reset_pending()
        if advance_minutes is not None:
            platform.advance(advance_minutes)

    def begin_step(self, platform: Platform, advance_minutes: int | None = None, extra=None, meta=None) -> list:
        """Run `extra(None)` (the step hooks); nothing to build."""
        if extra is not None:
            extra(None)
        return []

    def finish_step(self, statements: list) -> None:
        """Nothing to commit."""

    def abort_step(self) -> None:
        """Nothing to roll back."""

    def flush(self) -> None:
        """Nothing in flight."""

    def close(self, query_indexes: bool = True) -> None:
        """Nothing to close."""
