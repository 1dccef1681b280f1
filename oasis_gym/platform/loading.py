"""`load_db`: a Platform from a database file, ours (a journal) or OASIS's.

It sits above both loaders (journal.load_platform, oasis_import.load_oasis), which build a
Platform; `Platform.from_db` delegates here through `Platform._db_loader`, set when this
module is imported (the package's ``__init__`` does), so platform.py imports neither loader.
"""

from __future__ import annotations

from .journal import load_platform
from .oasis_import import is_oasis_db, load_oasis
from .platform import Platform


def load_db(path) -> Platform:
    """Restore the exact in-memory state from a journal written by `Journal`, or load a
    database written by OASIS (see `Platform.from_db`). A damaged journal (unreadable, or rows
    that contradict each other: `journal_load.load_platform` checks) is a `JournalError`."""
    if is_oasis_db(path):
        return load_oasis(path).platform
    return load_platform(path)


Platform._db_loader = staticmethod(load_db)
