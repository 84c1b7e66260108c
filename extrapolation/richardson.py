r"""Richardson (linear) extrapolation for a known asymptotic expansion.

Given values :math:`I(\delta_j)` and an asymptotic expansion

.. math::

    I(\delta) \sim I + \sum_{\ell=1}^{p} a_\ell \, \varphi_\ell(\delta), \qquad \delta \to 0,

with known gauge functions :math:`\varphi_\ell` (:math:`\varphi_\ell(\delta) \to 0`), the limit
:math:`I` and the :math:`a_\ell` solve the linear system :math:`I(\delta_j) = I + \sum_\ell
a_\ell \varphi_\ell(\delta_j)`: interpolation for ``n = p + 1`` points, least squares for more.
This is Richardson's deferred approach to the limit for :math:`\varphi_\ell = \delta^\ell`
(Richardson 1911, 1927) and its generalisation to arbitrary :math:`\varphi_\ell`, e.g. with
logarithms :math:`\delta^k \log^m \delta` as they arise at thresholds of loop integrals
(Sidi 2003, Ch. 1 and Ch. 3; seed 000, Sec. 4.4).  Unlike the epsilon algorithm it is linear
in the data: :math:`I = \sum_j c_j I(\delta_j)`, so input errors propagate exactly as
:math:`\sum_j |c_j| \sigma_j`, and :math:`\sum_j |c_j|` is its stability index.

Basis functions are callables, or spec strings from one fixed family, ``delta**p *
log(delta)**m`` with ``p > 0`` and integer ``m >= 0``; for example ``"delta"``,
``"delta**2"``, ``"delta**(3/2)"``, ``"sqrt(delta)"``, ``"delta*log(delta)"``,
``"delta**2*log(delta)**2"``.  Strings are matched against that pattern, never evaluated.

Error estimate: the fit is repeated without the one, two and three points of largest
``delta`` (where neglected higher terms weigh most; as many as leave ``p + 1`` points), and
``sum_k |I - I'_k|`` estimates the truncation error (the analogue of QUADPACK DQELG's sum over
three earlier results).  If the basis is complete this is at round-off level; if a term is
missing, each refit moves towards the limit and the sum is of the size of the true error.
With only ``p + 1`` points no point can be dropped, and the comparison is with the fit of
``p - 1`` terms without the first point (the classical Richardson-table estimate, which is
conservative: it is the error of the lower-order fit).  Added to it: propagated input errors,
and round-off ``eps * (sum_j |c_j| |I(delta_j)| + cond * |I|)``.

References:
    L. F. Richardson, "The deferred approach to the limit", Phil. Trans. Roy. Soc. London A
    226 (1927) 299-349.
    A. Sidi, "Practical Extrapolation Methods", Cambridge University Press (2003).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Callable, Sequence, Union

import numpy as np

from .result import (CONVERGED, NONFINITE, TOLERANCE_NOT_MET, ExtrapolationResult, tolerance)
from .sequences import delta_table

EPS = float(np.finfo(float).eps)

BasisSpec = Union[str, tuple, Callable[[np.ndarray], np.ndarray]]

_NUMBER = r"\d+(?:\.\d+)?(?:/\d+)?"
_TERM = re.compile(
    rf"^delta(?:\*\*(?P<p>{_NUMBER})|\*\*\((?P<pp>{_NUMBER})\))?"
    r"(?P<log>\*log\(delta\)(?:\*\*(?P<m>\d+))?)?$")


def power_log(p: float, m: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    r"""The gauge function :math:`\varphi(\delta) = \delta^p \log^m \delta` (``p > 0``)."""
    p, m = float(p), int(m)
    if not p > 0 or m < 0:
        raise ValueError(f"need p > 0 and integer m >= 0 for delta**p * log(delta)**m, "
                         f"got p={p}, m={m}")

    def phi(delta: np.ndarray) -> np.ndarray:
        delta = np.asarray(delta, dtype=float)
        return delta ** p * np.log(delta) ** m

    phi.__name__ = f"delta**{p:g}" + (f"*log(delta)**{m}" if m else "")
    return phi


def parse_term(spec: str) -> tuple[float, int]:
    """``(p, m)`` of a spec string ``delta**p * log(delta)**m`` (see the module docstring)."""
    text = re.sub(r"\s+", "", spec).replace("sqrt(delta)", "delta**(1/2)")
    match = _TERM.match(text)
    if match is None:
        raise ValueError(f"basis term {spec!r} is not of the form delta**p * log(delta)**m "
                         "(e.g. 'delta', 'delta**2', 'sqrt(delta)', 'delta*log(delta)')")
    p = match.group("p") or match.group("pp") or "1"
    m = int(match.group("m") or 1) if match.group("log") else 0
    return float(Fraction(p)), m


def basis(terms: Sequence[BasisSpec]) -> list[Callable[[np.ndarray], np.ndarray]]:
    """Gauge functions from specs: a string (:func:`parse_term`), a pair ``(p, m)``, or a
    callable ``phi(delta) -> array``."""
    out = []
    for t in terms:
        if callable(t):
            out.append(t)
        elif isinstance(t, str):
            out.append(power_log(*parse_term(t)))
        elif isinstance(t, tuple) and len(t) == 2:
            out.append(power_log(*t))
        else:
            raise TypeError(f"basis term must be a string, a (p, m) pair or a callable, got {t!r}")
    return out


def _weights(delta: np.ndarray, phis: list) -> tuple[np.ndarray, float] | None:
    """Row ``c`` with ``I = c @ values`` for the least-squares fit, and the condition number
    of the (column-scaled) design matrix; None if the basis is degenerate on these points."""
    a = np.column_stack([np.ones_like(delta)] + [np.asarray(f(delta), dtype=float) for f in phis])
    scale = np.max(np.abs(a), axis=0)
    scale[scale == 0] = 1.0
    u, sv, vt = np.linalg.svd(a / scale, full_matrices=False)
    if not sv[-1] > sv[0] * a.shape[0] * EPS:
        return None
    # Row 0 of the pseudo-inverse; the constant column has scale 1.
    c = (vt[:, 0] / sv) @ u.T
    return c, float(sv[0] / sv[-1])


def _refit(delta: np.ndarray, values: np.ndarray, phis: list) -> np.ndarray | None:
    w = _weights(delta, phis)
    return None if w is None else np.tensordot(w[0], values, axes=(0, 0))


def richardson(delta: Sequence[float] | np.ndarray, values: Sequence[Any] | np.ndarray,
               terms: Sequence[BasisSpec] = ("delta",), errors: Any = None, *,
               rtol: float = 1e-10, atol: float = 0.0) -> ExtrapolationResult:
    r"""Extrapolate :math:`I(\delta_j)` to :math:`\delta \to 0` for a given expansion.

    Args:
        delta: the points :math:`\delta_j > 0`, shape ``(n,)``, any order.
        values: :math:`I(\delta_j)`, shape ``(n,)`` or ``(n, m)`` for ``m`` functions sampled
            at the same points; real or complex.
        terms: the gauge functions :math:`\varphi_\ell`, ``p`` of them (see
            :func:`basis`); ``n >= p + 1`` points are needed, ``n >= p + 4`` for the full error
            estimate (three refits).
        errors: absolute errors of the values (scalar or broadcastable to ``values``),
            propagated as :math:`\sum_j |c_j| \sigma_j`.
        rtol, atol: requested accuracy, ``error <= max(atol, rtol * |value|)``.

    Returns:
        :class:`~extrapolation.ExtrapolationResult` (arrays of shape ``(m,)`` for 2-D
        ``values``); ``order`` is ``p``, ``amplification`` is :math:`\sum_j |c_j|`.

    Example:
        >>> from extrapolation import geometric_sequence
        >>> d = geometric_sequence(0.5, 8)
        >>> r = richardson(d, 1.0 + 2 * d - 3 * d**2, ["delta", "delta**2"])
        >>> r.converged, abs(r.value - 1.0) < 1e-14
        (True, True)
    """
    d, v = delta_table(delta, values)
    phis = basis(terms)
    p, n = len(phis), d.size
    if n < p + 1:
        raise ValueError(f"{p} basis terms need at least {p + 1} points, got {n}")
    v = v.astype(np.result_type(v.dtype, np.float64))
    sigma = np.zeros(v.shape) if errors is None else np.broadcast_to(np.abs(errors), v.shape)
    by_size = np.argsort(-d, kind="stable")          # largest delta first
    d, v, sigma = d[by_size], v[by_size], np.asarray(sigma, dtype=float)[by_size]

    fit = _weights(d, phis)
    if fit is None:
        raise ValueError("the basis functions are linearly dependent on these delta values")
    c, cond = fit
    value = np.tensordot(c, v, axes=(0, 0))
    if n >= p + 2:
        # Refit without the 1, 2, 3 largest-delta points, where neglected terms weigh most.
        refits = [_refit(d[k:], v[k:], phis) for k in range(1, min(3, n - p - 1) + 1)]
    elif p >= 1:
        # Only p + 1 points: compare with the fit of one term fewer without the first point.
        refits = [_refit(d[1:], v[1:], phis[:-1])]
    else:
        refits = []
    refits = [r for r in refits if r is not None]
    truncation = (sum(np.abs(value - r) for r in refits) if refits
                  else np.full(np.shape(value), np.inf))
    absc = np.abs(c)
    propagated = np.tensordot(absc, sigma, axes=(0, 0))
    roundoff = EPS * (np.tensordot(absc, np.abs(v), axes=(0, 0)) + cond * np.abs(value))
    error = truncation + propagated + np.maximum(roundoff, 5 * EPS * np.abs(value))
    finite = np.isfinite(value) & np.all(np.isfinite(v), axis=0)
    error = np.where(finite, error, np.nan)
    converged = finite & (error <= tolerance(value, rtol, atol))
    status = np.where(converged, CONVERGED, np.where(finite, TOLERANCE_NOT_MET, NONFINITE))
    amplification = float(np.sum(absc))
    if v.ndim == 1:
        val = complex(value) if np.iscomplexobj(value) else float(value)
        return ExtrapolationResult(value=val, error=float(error), converged=bool(converged),
                                   status=str(status), n_terms=n, order=p,
                                   amplification=amplification)
    m = v.shape[1]
    return ExtrapolationResult(value=value, error=error.astype(float),
                               converged=converged.astype(bool),
                               status=status.astype(object), n_terms=np.full(m, n),
                               order=np.full(m, p), amplification=np.full(m, amplification))
