"""The errors oasis-gym raises for bad input, files or settings (not for its own bugs).

The command line reports any `OasisGymError` as one line on stderr with exit code 2; every
other exception is a bug and keeps its traceback.
"""

from __future__ import annotations


class OasisGymError(Exception):
    """Base of the errors caused by the user's input, files or settings."""


class ConfigError(OasisGymError, ValueError):
    """An invalid argument or setting (a user count of 0, max_cycles=0, ...)."""


class JournalError(OasisGymError, RuntimeError):
    """The journal cannot be used: its path holds something else, another run writes it, it
    is damaged, or a step failed to commit (the journal holds the steps before it; memory is
    ahead where the step was pipelined, as it was before the step where it was committed in place)."""
