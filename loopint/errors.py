"""The errors loopint raises for bad input.  All are ``ValueError``s whose message names the
key (and the file, for a problem file) or the setting, and the problem; the CLI turns them into
exit code 2.  This module imports nothing, so that the command line can catch them without
loading JAX."""

from __future__ import annotations


class DiagramError(ValueError):
    """A diagram that cannot be built or computed; the message names the key and the problem."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


class SpecError(ValueError):
    """Bad input: the message names the file (when there is one), the key and the problem."""


class BudgetError(ValueError):
    """``max_evals`` below the smallest unit of work of an engine (one rule application on
    the initial regions, one lattice level, one chunk of samples): no estimate, not even an
    unconverged one, can be made within it."""
