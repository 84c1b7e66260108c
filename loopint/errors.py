"""The errors loopint raises for bad input.  Both are ``ValueError``s whose message names the
key (and the file, for a problem file) and the problem; the CLI turns them into exit code 2."""

from __future__ import annotations


class DiagramError(ValueError):
    """A diagram that cannot be built or computed; the message names the key and the problem."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


class SpecError(ValueError):
    """Bad input: the message names the file (when there is one), the key and the problem."""
