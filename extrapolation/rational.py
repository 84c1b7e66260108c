r"""Rational extrapolation to :math:`\delta \to 0` (Bulirsch and Stoer).

The values :math:`I(\delta_j)` are interpolated by the rational function of lowest degrees
(numerator and denominator of equal degree, or the numerator one higher) through all points,
and the interpolant is evaluated at :math:`\delta = 0`.  The recursion of Bulirsch and Stoer
(Stoer & Bulirsch, *Introduction to Numerical Analysis*, 3rd ed., Sec. 2.2.3, eq. 2.2.3.8;
Bulirsch & Stoer, Numer. Math. 8 (1966) 1-13) builds the table

.. math::
    T_{i,k} = T_{i,k-1} + \frac{T_{i,k-1} - T_{i-1,k-1}}
        {\frac{\delta_{i-k}}{\delta_i}\left[1 - \frac{T_{i,k-1} - T_{i-1,k-1}}
        {T_{i,k-1} - T_{i-1,k-2}}\right] - 1},
    \qquad T_{i,0} = I(\delta_i),\ T_{i,-1} = 0,

where :math:`T_{i,k}` is the value at 0 of the rational interpolant through the points
:math:`i-k, \dots, i` (points ordered from the largest :math:`\delta` to the smallest).

Why rational: a regulated loop integral :math:`I(\delta) = \int U^a (F - i\delta U)^{-b}` is a
Stieltjes-like transform of the distribution of :math:`F/U` on the simplex.  At a physical
point away from Landau singularities it is analytic at :math:`\delta = 0`, but its
singularities (the critical values of :math:`F/U` on the faces of the simplex: the thresholds
of the diagram and its reduced diagrams) lie on the imaginary :math:`\delta` axis, often at a
distance small compared with the :math:`\delta_j` that are cheap to integrate.  A power series
in :math:`\delta` (Richardson extrapolation) then converges slowly on the sampled range;
rational functions place poles along those cuts and converge much faster (on the pentagon of
seed 000, 16 terms with :math:`\delta_{min}/\delta_0 = 0.065`: 1e-9 relative against 2e-5
for the best polynomial fit).

Error estimate, as for :func:`extrapolation.richardson`: the extrapolants without the one, two
and three largest :math:`\delta` (:math:`T_{n-1,n-2}, T_{n-1,n-3}, T_{n-1,n-4}`, free in the
table) and the one without the smallest (where a singularity at or near 0 shows first) are
compared with the full one, and ``SAFETY = 3`` times the sum of the four differences
estimates the truncation error; at least five points are needed.  The factor: on
:math:`1 + 0.3\sqrt{\delta} + \delta^2` (a branch point at 0, which no rational function
has) the plain sum was up to 3.1 times too small (8, 12, 16 points: 1.1, 0.9, 3.1), so the
estimate is just about honest there (Wynn's epsilon algorithm is the method for such
sequences); on regulated loop integrals away from thresholds (C0 at s = 6 to 50 m², the
pentagon of seed 000) the true error stayed below the plain sum.  Close to a threshold (C0 at
s = 4.2 m², 16 terms, far from converged) the real part's error came out 6 times too small;
with 20 terms it is honest again.  Added to it: the
term errors propagated to first order (``sum_j |dT/dI_j| sigma_j``, the derivatives by finite
differences, and never less than the largest term error) and round-off.  The method is
nonlinear: a vanishing denominator (a pole of the interpolant at 0) is a breakdown, reported
as ``irregular`` with value NaN and infinite error.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .result import (CONVERGED, IRREGULAR, NONFINITE, TOLERANCE_NOT_MET, TOO_FEW_TERMS,
                     ExtrapolationResult, tolerance)
from .sequences import delta_table

EPS = float(np.finfo(float).eps)
MIN_TERMS = 5
SAFETY = 3.0


def rational_table(delta: np.ndarray, values: np.ndarray) -> np.ndarray:
    r"""The last row :math:`T_{n-1,k}`, ``k = 0..n-1``, of the Bulirsch–Stoer table at 0.

    ``delta`` (n,) ordered from the largest to the smallest, ``values`` (n, ...).  Entry ``k``
    extrapolates the ``k + 1`` smallest deltas; NaN where the recursion broke down.
    """
    n = delta.size
    shape = (-1,) + (1,) * (values.ndim - 1)
    out = np.empty_like(values)
    c2 = np.zeros((n + 1,) + values.shape[1:], values.dtype)   # column k-2, rows k-2..n-1
    c1 = values.copy()                                         # column k-1, rows k-1..n-1
    out[0] = c1[-1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for k in range(1, n):                                  # column k, rows i = k..n-1
            diff = c1[1:] - c1[:-1]                            # T_{i,k-1} - T_{i-1,k-1}
            ratio = (delta[:n - k] / delta[k:]).reshape(shape)  # delta_{i-k} / delta_i
            denom = ratio * (1.0 - diff / (c1[1:] - c2[1:-1])) - 1.0
            col = np.where(diff == 0, c1[1:], c1[1:] + diff / denom)   # constant: exact
            c2, c1 = c1, np.where(np.isfinite(col), col, np.nan)
            out[k] = c1[-1]
    return out


def rational(delta: Sequence[float] | np.ndarray, values: Sequence[Any] | np.ndarray,
             errors: Any = None, *, rtol: float = 1e-10,
             atol: float = 0.0) -> ExtrapolationResult:
    r"""Extrapolate :math:`I(\delta_j)` to :math:`\delta \to 0` by rational interpolation.

    Args:
        delta: the points :math:`\delta_j > 0`, shape ``(n,)``, distinct, any order.
        values: :math:`I(\delta_j)`, shape ``(n,)`` or ``(n, m)``; real or complex.
        errors: absolute errors of the values (scalar or broadcastable to ``values``),
            propagated to first order.
        rtol, atol: requested accuracy, ``error <= max(atol, rtol * |value|)``.
    Returns:
        :class:`~extrapolation.ExtrapolationResult`; ``order`` is the number of points
        interpolated minus one, ``amplification`` is :math:`\sum_j |\partial T/\partial I_j|`.
        Fewer than five points: status ``too_few_terms`` (value from the table, error inf).
    Example:
        >>> from extrapolation import geometric_sequence
        >>> d = geometric_sequence(0.5, 8)
        >>> r = rational(d, (1.0 + 2 * d) / (1.0 + d + d**2))
        >>> r.converged, abs(r.value - 1.0) < 1e-12
        (True, True)
    """
    d, v = delta_table(delta, values, distinct=True)
    n = d.size
    if n < 2:
        raise ValueError(f"need at least 2 points, got {n}")
    v = v.astype(np.result_type(v.dtype, np.float64))
    single = v.ndim == 1
    v2 = v[:, None] if single else v
    sigma = np.zeros(v.shape) if errors is None else np.broadcast_to(np.abs(errors), v.shape)
    sigma = np.asarray(sigma, float).reshape(v2.shape)
    order = np.argsort(-d, kind="stable")              # largest delta first
    d, v2, sigma = d[order], v2[order], sigma[order]

    row = rational_table(d, v2)
    value = row[-1]
    if n >= MIN_TERMS:
        truncation = sum(np.abs(value - row[-1 - k]) for k in (1, 2, 3))
        # and without the smallest delta, where a singularity at or near 0 shows first
        truncation = truncation + np.abs(value - rational_table(d[:-1], v2[:-1])[-1])
        truncation = SAFETY * truncation
    else:
        truncation = np.full(value.shape, np.inf)
    # first-order sensitivities dT/dI_j by finite differences (n extra tables)
    scale = np.max(np.abs(v2), axis=0)
    h = 1e-7 * np.where(scale > 0, scale, 1.0)
    grad = np.empty((n,) + value.shape)
    for j in range(n):
        vp = v2.copy()
        vp[j] = vp[j] + h
        grad[j] = np.abs(rational_table(d, vp)[-1] - value) / h
    # the weights sum to 1 (a constant added to all terms shifts T by it), so a common
    # error passes through at least once: never less than the largest term error
    propagated = np.maximum(np.sum(grad * sigma, axis=0), np.max(sigma, axis=0))
    roundoff = EPS * np.sum(grad * np.abs(v2), axis=0)
    error = truncation + propagated + np.maximum(roundoff, 5 * EPS * np.abs(value))
    inputs_ok = np.all(np.isfinite(v2), axis=0)
    broke = inputs_ok & ~(np.isfinite(value) & np.all(np.isfinite(grad), axis=0))
    value = np.where(inputs_ok & ~broke, value, np.nan)
    error = np.where(inputs_ok & ~broke, error, np.inf)
    converged = (n >= MIN_TERMS) & np.isfinite(error) & (error <= tolerance(value, rtol, atol))
    status = np.where(converged, CONVERGED,
                      np.where(~inputs_ok, NONFINITE,
                               np.where(broke, IRREGULAR,
                                        TOLERANCE_NOT_MET if n >= MIN_TERMS else TOO_FEW_TERMS)))
    # at least 1 (the weights sum to one); below it only where exactly rational data of lower
    # degree leave the full interpolant degenerate and the finite differences meaningless
    amplification = np.maximum(np.sum(grad, axis=0), 1.0)
    if single:
        val = complex(value[0]) if np.iscomplexobj(value) else float(value[0])
        return ExtrapolationResult(value=val, error=float(error[0]),
                                   converged=bool(converged[0]), status=str(status[0]),
                                   n_terms=n, order=n - 1,
                                   amplification=float(amplification[0]))
    m = v2.shape[1]
    return ExtrapolationResult(value=value, error=error.astype(float),
                               converged=converged.astype(bool), status=status.astype(object),
                               n_terms=np.full(m, n), order=np.full(m, n - 1),
                               amplification=amplification.astype(float))
