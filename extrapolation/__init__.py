"""Sequence acceleration and extrapolation to a limit.

A standalone package (numpy and mpmath only) used by ``loopint`` to extrapolate regulated
integrals ``I(delta_j)`` to ``delta -> 0`` (seed 000, Sec. 4.4), and usable on any sequence:

* :func:`wynn_epsilon`, :class:`WynnEpsilon` -- Wynn's epsilon algorithm (iterated Shanks
  transformation) with QUADPACK DQELG's safeguards and error estimate; batch or incremental.
* :func:`aitken_delta2` -- the iterated Aitken Delta^2 process.
* :func:`rational` -- rational extrapolation in ``delta`` (Bulirsch-Stoer), for ``I(delta)``
  analytic at 0 with singularities nearby, e.g. regulated loop integrals.
* :func:`richardson` -- linear extrapolation for a known expansion
  ``I(delta) ~ I + sum_l a_l phi_l(delta)``, e.g. ``["delta", "delta*log(delta)"]``.
* :func:`geometric_sequence` -- ``delta_j = delta0 * q**-j``.
* :func:`epsilon_table` -- the plain epsilon table, for inspection.
* :func:`extrapolate` -- a complex sequence ``I(delta_j)`` with error estimates to ``delta
  -> 0``: per part the better of Wynn's epsilon and rational extrapolation over windows of
  consecutive deltas (:func:`rational_windows`), see :mod:`extrapolation.choice`.

Every method returns an :class:`ExtrapolationResult` with ``value``, ``error``, ``converged``,
``status``; ``converged`` is True only when the error estimate meets ``max(atol, rtol*|value|)``
and the method behaved regularly (see :mod:`extrapolation.safeguards`).
"""

from .aitken import aitken_delta2
from .choice import extrapolate, rational_windows
from .rational import rational
from .result import STATUSES, ExtrapolationResult
from .richardson import power_log, richardson
from .sequences import geometric_sequence
from .wynn import WynnEpsilon, epsilon_table, shanks_gradient, wynn_epsilon

__all__ = [
    "ExtrapolationResult",
    "STATUSES",
    "WynnEpsilon",
    "aitken_delta2",
    "epsilon_table",
    "extrapolate",
    "geometric_sequence",
    "power_log",
    "rational",
    "rational_windows",
    "richardson",
    "shanks_gradient",
    "wynn_epsilon",
]
