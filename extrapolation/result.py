"""The result type shared by every extrapolation method, and its status words.

Error convention: ``error`` is a non-negative real bound on ``|value - limit|``; for a complex
sequence it bounds the complex modulus (so it bounds the real and the imaginary part alike).
A result meets the tolerance when ``error <= max(atol, rtol * |value|)`` (:func:`tolerance`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

# Status words, in the style of QUADPACK's ``ier`` codes.  ``converged`` is the only one for
# which ``converged`` is True.
CONVERGED = "converged"
"""The error estimate meets ``max(atol, rtol*|value|)`` and nothing irregular was seen."""
TOLERANCE_NOT_MET = "tolerance_not_met"
"""The method behaved regularly but the error estimate is above the tolerance: add terms."""
TOO_FEW_TERMS = "too_few_terms"
"""Not enough terms for an error estimate (Wynn, Aitken: 7 or more are needed)."""
NO_ACCELERATION = "no_acceleration"
"""The extrapolated estimates do not agree better than consecutive raw terms do, so the method
is not accelerating (typical of logarithmic convergence); the error was widened to the raw
sequence's own tail estimate (:func:`extrapolation.safeguards.raw_tail_estimate`)."""
IRREGULAR = "irregular"
"""The newest term made the epsilon table behave irregularly (DQELG's test) and the table was
cut back; wait for more terms before trusting the estimate."""
NONFINITE = "nonfinite"
"""A term was NaN or infinite; value and error are NaN."""

STATUSES = (CONVERGED, TOLERANCE_NOT_MET, TOO_FEW_TERMS, NO_ACCELERATION, IRREGULAR, NONFINITE)


@dataclasses.dataclass(frozen=True)
class ExtrapolationResult:
    """Outcome of one extrapolation.

    For a single sequence every field is a scalar (``value`` a Python ``float`` or ``complex``);
    for a batch of sequences (input of shape ``(n_terms, m)``) every field is an ``np.ndarray``
    of shape ``(m,)`` (``status`` has dtype ``object``).

    Attributes:
        value: estimate of the limit.
        error: estimate of ``|value - limit|``: the method's own estimate, widened by the
            propagated input errors and round-off (never below ``5 * eps * |value|``).
        converged: True only when ``error <= max(atol, rtol * |value|)``, enough terms were
            seen for an error estimate, and the last step behaved regularly.
        status: one of :data:`STATUSES` (see their docstrings in this module).
        n_terms: number of terms of the sequence that were given.
        order: what was eliminated: for Wynn's epsilon algorithm the even column ``2k`` of the
            chosen table element (``k`` exponential terms removed), for iterated Aitken the
            number of Aitken steps, for Richardson the number of basis functions fitted.
        amplification: ``sum_j |d value / d s_j|``, the factor by which errors in the terms
            can be amplified in ``value`` (the stability index Gamma of Sidi 2003, Sec. 0.5).
            Large values (say 1e6) mean the result is sensitive to noise in the terms.
    """

    value: Any
    error: Any
    converged: Any
    status: Any
    n_terms: Any
    order: Any
    amplification: Any

    def __repr__(self) -> str:
        if np.ndim(self.value) == 0:
            return (f"ExtrapolationResult({self.value!r} +- {self.error:.2g}; {self.status}; "
                    f"n_terms={self.n_terms}, order={self.order}, "
                    f"amplification={self.amplification:.3g})")
        n = np.size(self.value)
        ok = int(np.count_nonzero(self.converged))
        return f"ExtrapolationResult({n} sequences, {ok} converged)"


def tolerance(value: Any, rtol: float, atol: float) -> Any:
    """The accepted error ``max(atol, rtol * |value|)``."""
    return np.maximum(atol, rtol * np.abs(value))


def stack(results: Sequence[ExtrapolationResult]) -> ExtrapolationResult:
    """Combine per-sequence scalar results into one batch result of arrays."""
    values = np.array([r.value for r in results])
    return ExtrapolationResult(
        value=values,
        error=np.array([r.error for r in results], dtype=float),
        converged=np.array([r.converged for r in results], dtype=bool),
        status=np.array([r.status for r in results], dtype=object),
        n_terms=np.array([r.n_terms for r in results], dtype=int),
        order=np.array([r.order for r in results], dtype=int),
        amplification=np.array([r.amplification for r in results], dtype=float),
    )
