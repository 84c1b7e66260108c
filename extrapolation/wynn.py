r"""Wynn's epsilon algorithm (the iterated Shanks transformation), with QUADPACK's safeguards.

The epsilon table of a sequence :math:`s_0, s_1, \dots` is

.. math::

    \varepsilon_{-1}^{(n)} = 0, \qquad \varepsilon_0^{(n)} = s_n, \qquad
    \varepsilon_{k+1}^{(n)} = \varepsilon_{k-1}^{(n+1)}
        + \frac{1}{\varepsilon_k^{(n+1)} - \varepsilon_k^{(n)}}

(Wynn 1956).  The even columns are Shanks' transforms, :math:`\varepsilon_{2k}^{(n)} =
e_k(s_n)`: the limit :math:`L` of the model :math:`s_m = L + \sum_{i=1}^{k} c_i \lambda_i^m`
fitted to :math:`s_n, \dots, s_{n+2k}` (Shanks 1955).  It is exact for sums of ``k``
geometric components, and it accelerates linearly convergent and alternating sequences
such as the regulator sequences :math:`I(\delta_j)`, :math:`\delta_j = \delta_0 q^{-j}`, of the
Direct Computation Method (seed 000, Sec. 4.4).  The odd columns are auxiliary.

:class:`WynnEpsilon` follows QUADPACK's DQELG (Piessens et al. 1983):

* Only the even columns are stored, as a *condensed table*: the newest two ascending
  diagonals.  A new term adds one diagonal with Wynn's cross rule (Wynn 1966)

  .. math::

      \frac{1}{N - C} + \frac{1}{S - C} = \frac{1}{E - C} + \frac{1}{W - C},

  with :math:`C = \varepsilon_{2k}^{(n)}`, :math:`W, E = \varepsilon_{2k}^{(n \mp 1)}`,
  :math:`S = \varepsilon_{2k-2}^{(n+1)}` and the new element :math:`N =
  \varepsilon_{2k+2}^{(n-1)}`.
* At most ``limexp`` (50) terms are kept; the oldest are dropped beyond that.
* When three neighbours in a column agree to machine precision the column has converged and
  its newest element is the result.  When two neighbours agree to machine precision, or the
  new element would jump by more than ``1e4`` times the size of the data (DQELG's test for
  irregular behaviour), the oldest terms are dropped so that the table ends at that column.
  Irregular behaviour is reported (status ``irregular``, not converged) unless the column's
  neighbours already agree within the requested tolerance.
* The result is the element of the new diagonal with the smallest local spread
  ``|E - C| + |C - W| + |N - E|``, and its error estimate is the spread of the result and the
  three previous results, ``sum_(i=1..3) |r - r_(-i)|``, at least ``5 eps |r|``.

Deviations from DQELG, each making the estimate more careful, never less:

* The machine-precision tests are relative to the largest term in the table as well as to
  the elements compared, so that sequences tending to zero are not cut at random, and the
  irregularity test compares with that scale too (DQELG: ``|e1| * |ss| <= 1e-4``).
* The spread runs over four previous results instead of three, and is at least the local
  spread of the chosen element (:data:`~extrapolation.safeguards.HISTORY_DEPTH`): more robust
  when the terms are noisy.
* The error is widened by the propagated input errors and round-off, and by the acceleration
  check of :mod:`extrapolation.safeguards` (logarithmic convergence).

Complex sequences are transformed in complex arithmetic (the recursion is valid in any field),
with moduli in all tests and error estimates.  Transforming the real and imaginary parts
separately is equally valid; it is what the ``loopint`` regulator driver does.

References:
    P. Wynn, "On a device for computing the e_m(S_n) transformation", Math. Tables Aids
    Comput. 10 (1956) 91-96.
    P. Wynn, "Upon systems of recursions which obtain among the quotients of the Pade table",
    Numer. Math. 8 (1966) 264-269.
    D. Shanks, "Non-linear transformations of divergent and slowly convergent sequences",
    J. Math. Phys. 34 (1955) 1-42.
    R. Piessens, E. de Doncker-Kapenga, C. W. Ueberhuber, D. K. Kahaner, "QUADPACK: A
    Subroutine Package for Automatic Integration", Springer (1983): routine DQELG.
    A. Sidi, "Practical Extrapolation Methods", Cambridge University Press (2003), Ch. 16.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from . import safeguards
from .result import ExtrapolationResult, stack, tolerance

EPS = safeguards.EPS
LIMEXP = 50
"""Default for the largest number of terms the table holds (QUADPACK's ``limexp``)."""
IRREGULAR_JUMP = 1e4
"""A new element further than this many times the size of the data from its neighbour marks
the table as irregular (DQELG's ``epsinf <= 1e-4`` test)."""


def epsilon_table(seq: Sequence[complex] | np.ndarray) -> np.ndarray:
    r"""The full epsilon table of a sequence, by the plain rhombus rule (no safeguards).

    Returns an array ``E`` of shape ``(n, n)`` with ``E[k, m]`` :math:`=\varepsilon_k^{(m)}`
    for ``k + m < n`` and NaN elsewhere.  The even columns ``E[2k, m]`` are the Shanks
    transforms :math:`e_k(s_m)`; a division by zero gives ``inf``/NaN and propagates.
    This is the textbook algorithm, for inspection and for checking :class:`WynnEpsilon`.
    """
    s = np.asarray(seq)
    if s.ndim != 1:
        raise ValueError(f"epsilon_table takes one sequence (1-D), got shape {s.shape}")
    n = s.size
    dtype = np.result_type(s.dtype, np.float64)
    table = np.full((n, n), np.nan, dtype=dtype)
    if n == 0:
        return table
    table[0] = s
    below = np.zeros(n, dtype=dtype)  # column k-1 (epsilon_{-1} = 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for k in range(1, n):
            col = table[k - 1, : n - k + 1]
            table[k, : n - k] = below[1 : n - k + 1] + 1.0 / (col[1:] - col[:-1])
            below = col
    return table


def shanks_gradient(terms: np.ndarray) -> np.ndarray:
    r"""Gradient of the Shanks transform :math:`e_k(t_0)` with respect to ``t_0 .. t_(2k)``.

    :math:`e_k` is the ``L`` of the linear system (Sidi 2003, Ch. 16)

    .. math:: t_i = L + \sum_{j=1}^{k} a_j \, \Delta t_{i+j-1}, \qquad i = 0, \dots, k,

    written ``M(t) x = t_(0..k)``.  Differentiating, ``dL = gamma . (dt - dM x)`` with
    ``gamma`` the first row of ``M^-1``; this is exact to first order (unlike ``gamma``
    alone, which ignores that the weights depend on the data).  Returns NaNs where the system
    is singular.
    """
    t = np.asarray(terms)
    t = t.astype(np.result_type(t.dtype, np.float64))
    k = (t.size - 1) // 2
    if k == 0:
        return np.ones(1, dtype=t.dtype)
    d = np.diff(t[: 2 * k + 1])
    m = np.ones((k + 1, k + 1), dtype=d.dtype)
    m[:, 1:] = d[np.arange(k + 1)[:, None] + np.arange(k)[None, :]]     # m[i, j] = d[i+j-1]
    # Column scaling: the Delta columns shrink geometrically; L and its gradient do not change.
    scale = np.max(np.abs(m), axis=0)
    scale[scale == 0] = 1.0
    try:
        inverse = np.linalg.inv(m / scale)
    except np.linalg.LinAlgError:
        return np.full(2 * k + 1, np.nan)
    gamma = inverse[0]                              # first row of M^-1 (column 0 has scale 1)
    a = (inverse @ t[: k + 1])[1:] / scale[1:]
    # (gamma . dM x)_l = sum_(i,j) gamma_i a_j (dt_(i+j) - dt_(i+j-1)): a convolution.
    c = np.convolve(gamma, a)
    g = np.zeros(2 * k + 1, dtype=c.dtype)
    g[: k + 1] += gamma
    g[: 2 * k] += c
    g[1:] -= c
    return g


class _EpsilonState:
    """DQELG's condensed table for one scalar (real or complex) sequence."""

    def __init__(self, limexp: int, rtol: float, atol: float):
        self.limexp, self.rtol, self.atol = limexp, rtol, atol
        self.terms: list = []     # every term seen (the acceleration check needs the newest)
        self.sigma: list = []     # their absolute errors
        self.start = 0            # index in `terms` of the oldest term still in the table
        self.prev: list = []      # even columns 0, 2, ... of the previous ascending diagonal
        self.cur: list = []       # even columns 0, 2, ... of the newest ascending diagonal
        self.history: list = []   # DQELG's res3la: earlier results
        self.result: ExtrapolationResult | None = None

    def append(self, x: Any, sigma: float) -> ExtrapolationResult:
        self.terms.append(x)
        self.sigma.append(sigma)
        if not math.isfinite(abs(x)) or (self.result is not None
                                         and not math.isfinite(abs(self.result.value))):
            # A NaN poisons the table for good; say so instead of guessing.
            nan = complex(math.nan, math.nan) if isinstance(x, complex) else math.nan
            self.result = safeguards.assess(nan, math.inf, 0.0, self.terms, rtol=self.rtol,
                                            atol=self.atol, order=0, amplification=math.nan)
            return self.result
        n = len(self.terms) - self.start
        scale = max(abs(t) for t in self.terms[self.start:])
        new = [x]
        result, best, column = x, math.inf, 0
        keep = n                  # terms kept in the table after this step
        exact = irregular = False
        for k in range((n - 1) // 2):
            e0, e1, e2 = self.prev[k], self.cur[k], new[k]
            d2, d3 = e2 - e1, e1 - e0
            err2, err3 = abs(d2), abs(d3)
            small2 = err2 <= EPS * max(abs(e2), abs(e1), scale)
            small3 = err3 <= EPS * max(abs(e1), abs(e0), scale)
            if small2 and small3:
                # Column 2k has converged to machine precision: take its newest element.
                result, best, column, exact = e2, err2 + err3, 2 * k, True
                keep = 2 * k + 1
                break
            if k == 0:
                inv1, small1 = 0.0, False   # epsilon_{-2} = infinity
            else:
                e3 = self.prev[k - 1]
                d1 = e1 - e3
                small1 = abs(d1) <= EPS * max(abs(e1), abs(e3), scale)
                inv1 = 1.0 / d1 if not small1 else 0.0
            if small1 or small2 or small3:
                keep = 2 * k + 1
                break
            ss = inv1 + 1.0 / d2 - 1.0 / d3
            if abs(ss) * max(abs(e1), scale) * IRREGULAR_JUMP <= 1.0:
                keep = 2 * k + 1
                # Irregularity among digits the tolerance does not ask for (the round-off
                # plateau of a converged table) only cuts the table; otherwise it is reported.
                irregular = err2 + err3 > tolerance(e2, self.rtol, self.atol)
                break
            res = e1 + 1.0 / ss
            new.append(res)
            local = err2 + abs(res - e2) + err3
            if local <= best:
                result, best, column = res, local, 2 * k + 2
        if keep >= self.limexp:
            keep = 2 * (self.limexp // 2) - 1
        self.start += n - keep
        self.prev = self.cur[: (keep - 2) // 2 + 1] if keep >= 2 else []
        self.cur = new[: (keep - 1) // 2 + 1]

        if len(self.terms) >= 3:
            if exact:
                spread = best
            else:
                spread = max(best, safeguards.history_spread(result, self.history))
            self.history = (self.history + [result])[-safeguards.HISTORY_DEPTH:]
        else:
            spread = math.inf
        used = np.asarray(self.terms[-(column + 1):])
        gradient = shanks_gradient(used)
        if np.all(np.isfinite(gradient)):
            amplification = float(np.sum(np.abs(gradient)))
        else:  # singular Shanks system: the column converged exactly; no amplification known
            gradient, amplification = np.ones(1), math.nan
            used = used[-1:]
        propagated = safeguards.propagated_error(
            gradient, used, np.asarray(self.sigma[-used.size:], dtype=float))
        self.result = safeguards.assess(result, spread, propagated, self.terms, rtol=self.rtol,
                                        atol=self.atol, order=column,
                                        amplification=amplification, irregular=irregular)
        return self.result

    def diagonal(self) -> np.ndarray:
        return np.asarray(self.cur)


class WynnEpsilon:
    """Incremental Wynn epsilon extrapolation with QUADPACK DQELG safeguards.

    Append terms one at a time; each :meth:`append` returns the current
    :class:`~extrapolation.ExtrapolationResult`.  A term may be a scalar (real or complex)
    or an array, in which case each component is an independent sequence (e.g. several
    kinematic points, or the real and imaginary parts of ``I(delta_j)``) and the result
    holds arrays.  See the module docstring for the algorithm and its safeguards.

    Args:
        rtol, atol: requested accuracy, ``error <= max(atol, rtol * |value|)``.
        limexp: largest number of terms kept in the table (QUADPACK: 50).

    Example:
        >>> w = WynnEpsilon(rtol=1e-10)
        >>> s = 0.0
        >>> for k in range(20):
        ...     s += (-1) ** k / (k + 1)
        ...     r = w.append(s)
        >>> r.converged, abs(r.value - math.log(2)) < 1e-13
        (True, True)
    """

    def __init__(self, *, rtol: float = 1e-10, atol: float = 0.0, limexp: int = LIMEXP):
        if limexp < 3:
            raise ValueError(f"limexp must be at least 3, got {limexp}")
        self.rtol, self.atol, self.limexp = float(rtol), float(atol), int(limexp)
        self._shape: tuple | None = None
        self._states: list[_EpsilonState] = []
        self._result: ExtrapolationResult | None = None

    def append(self, term: Any, error: Any = 0.0) -> ExtrapolationResult:
        """Add the next term (and optionally its absolute error) and extrapolate.

        Args:
            term: the next element of the sequence: scalar or array (fixed shape).
            error: absolute uncertainty of ``term`` (scalar or same shape), e.g. the
                integration error of ``I(delta_j)``; propagated into the error estimate.
        """
        t = np.asarray(term)
        if self._shape is None:
            self._shape = t.shape
            if t.size == 0:
                raise ValueError("an empty array is not a term")
            self._states = [_EpsilonState(self.limexp, self.rtol, self.atol)
                            for _ in range(t.size)]
        if t.shape != self._shape:
            raise ValueError(f"term has shape {t.shape}, earlier terms had {self._shape}")
        sig = np.broadcast_to(np.abs(np.asarray(error)), t.shape).astype(float)
        flat_t = t.reshape(-1)
        flat_s = sig.reshape(-1)
        convert = complex if np.iscomplexobj(t) else float
        results = [st.append(convert(flat_t[i]), float(flat_s[i]))
                   for i, st in enumerate(self._states)]
        self._result = results[0] if t.ndim == 0 else _reshape(stack(results), t.shape)
        return self._result

    @property
    def result(self) -> ExtrapolationResult | None:
        """The result after the last :meth:`append` (None before the first)."""
        return self._result

    @property
    def n_terms(self) -> int:
        """Number of terms appended so far."""
        return len(self._states[0].terms) if self._states else 0

    @property
    def diagonal(self) -> np.ndarray | list[np.ndarray]:
        r"""Even-column elements of the newest ascending diagonal of the (condensed) table.

        Entry ``k`` is :math:`\varepsilon_{2k}^{(N-1-2k)}` for the ``N`` terms still in the
        table.  Shape ``(n_diag,)`` for a scalar sequence; for array terms, a list of such
        arrays (their lengths may differ, because each sequence's table is cut on its own).
        """
        if not self._states:
            return np.empty(0)
        if self._shape == ():
            return self._states[0].diagonal()
        return [st.diagonal() for st in self._states]


def wynn_epsilon(seq: Sequence[Any] | np.ndarray, errors: Any = None, *, rtol: float = 1e-10,
                 atol: float = 0.0, limexp: int = LIMEXP) -> ExtrapolationResult:
    """Extrapolate a sequence (or a batch of sequences) to its limit with Wynn's epsilon.

    Equivalent to appending the terms one by one to a :class:`WynnEpsilon` and keeping the
    last result; see the module docstring for the algorithm, the safeguards and the error
    estimate.

    Args:
        seq: shape ``(n_terms,)``, or ``(n_terms, m)`` for ``m`` independent sequences (each
            column is extrapolated on its own).  Real or complex.
        errors: absolute errors of the terms: scalar, or an array broadcastable to
            ``seq.shape``; propagated into the error estimate.  Default: none (round-off only).
        rtol, atol: requested accuracy, ``error <= max(atol, rtol * |value|)``.
        limexp: largest number of terms kept in the table (QUADPACK: 50).

    Returns:
        :class:`~extrapolation.ExtrapolationResult`; with arrays of shape ``(m,)`` for 2-D input.
    """
    s = np.asarray(seq)
    if s.ndim not in (1, 2) or s.shape[0] == 0:
        raise ValueError(f"seq must have shape (n_terms,) or (n_terms, m), got {s.shape}")
    err = np.zeros(s.shape) if errors is None else np.broadcast_to(np.abs(errors), s.shape)
    w = WynnEpsilon(rtol=rtol, atol=atol, limexp=limexp)
    for row, e in zip(s, err):
        result = w.append(row, e)
    return result


def _reshape(r: ExtrapolationResult, shape: tuple) -> ExtrapolationResult:
    return ExtrapolationResult(**{f: np.reshape(getattr(r, f), shape)
                                  for f in r.__dataclass_fields__})
