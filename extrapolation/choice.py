"""The limit of a complex sequence ``I(delta_j)`` at ``delta -> 0``: Wynn or rational.

Each of the real and imaginary parts is extrapolated two ways and keeps the one with the
smaller error estimate (:func:`extrapolate`):

* Wynn's epsilon algorithm (:mod:`extrapolation.wynn`), valid under general conditions and
  exact on ``delta^(1/2)`` and ``delta*log(delta)`` terms (a threshold);
* rational extrapolation in ``delta`` (:mod:`extrapolation.rational`) over windows of
  consecutive deltas (:func:`rational_windows`), for ``I(delta)`` analytic at 0 with
  singularities nearby (on the imaginary axis for a regulated loop integral), where power
  series in ``delta`` converge slowly and rational functions do not.
"""

from __future__ import annotations

import numpy as np

from .rational import rational
from .wynn import wynn_epsilon

# The rational fit is tried on every window of at least this many consecutive deltas.
MIN_WINDOW = 6


def extrapolate(values: np.ndarray, errors: np.ndarray, *, rtol: float, atol: float,
                deltas: np.ndarray | None = None) -> dict:
    """Real and imaginary parts of every column's sequence ``values[n, P]`` (complex, errors
    ``errors[n, P]`` per part) extrapolated to 0.

    Two candidates per part, the one with the smaller error estimate is kept: Wynn epsilon
    and (with ``deltas[n]``) rational extrapolation in delta (:func:`rational_windows`).

    Error model of the epsilon algorithm: its own estimate (the spread of successive
    extrapolants, as QUADPACK's DQELG) plus the largest error of the terms used.  The term
    errors are not propagated through the (large, ~1e6) amplification factor of the epsilon
    table: terms computed by one adaptive rule on one subdivision have errors that are a
    smooth function of delta, which the extrapolation treats like the sequence itself, not
    independent noise; the spread of successive extrapolants measures what is left of them.
    The rational fit propagates them to first order (``sum_j |dI/dI_j| sigma_j``,
    :mod:`extrapolation.rational`).

    A column converges when ``|error| <= max(atol, rtol |value|)`` and each part behaved
    regularly (or is negligible).  Returns a dict of ``value[P]``, ``error[P]`` (complex:
    real and imaginary parts' errors), ``converged[P]``, ``status[P]`` and ``method[P]``
    (``"re: <method>; im: <method>"``, the method ``wynn``, ``rational(k=<k>)`` or
    ``rational(<i>:<j>)``).
    """
    parts = []
    for part, perr in ((values.real, errors.real), (values.imag, errors.imag)):
        w = wynn_epsilon(part, None, rtol=rtol, atol=atol)
        value = np.asarray(w.value, float)
        error = np.asarray(w.error, float) + np.max(np.abs(perr), axis=0)
        status = np.asarray(w.status, object)
        regular = np.isin(status, ["converged", "tolerance_not_met"])
        method = np.full(value.shape, "wynn", object)
        if deltas is not None:
            rv, re_, rk = rational_windows(deltas, part, np.abs(perr))
            better = np.isfinite(re_) & ~(re_ >= error)
            # Consistency: the limit lies within the other method's error of its value (if
            # that one is honest), so the chosen value is at least |value - other| - e_other
            # from it; the error is widened to that.  Where the two disagree beyond their
            # errors one is overconfident (e.g. the rational fit on delta^(1/2) terms at a
            # threshold), and which one cannot be told.
            other_v, other_e = np.where(better, value, rv), np.where(better, error, re_)
            value = np.where(better, rv, value)
            error = np.where(better, re_, error)
            with np.errstate(invalid="ignore"):
                gap = np.abs(value - other_v) - other_e
            error = np.where(np.isfinite(gap) & (gap > error), gap, error)
            regular = regular | better
            status = np.where(better, "tolerance_not_met", status)
            method = np.where(better, [f"rational({k})" for k in np.atleast_1d(rk)], method)
        parts.append((value, error, status, regular, method))
    (vr, er, sr, gr, mr), (vi, ei, si, gi, mi) = parts
    value = _complex(vr, vi)
    error = _complex(er, ei)
    mag = np.abs(value)
    tol = np.maximum(atol, rtol * mag)
    with np.errstate(invalid="ignore"):
        converged = np.hypot(error.real, error.imag) <= tol
    # each part must also have behaved regularly (its own status), unless it is negligible
    for regular, err in ((gr, error.real), (gi, error.imag)):
        converged &= regular | (np.abs(err) <= 0.5 * tol)
    status = np.where(converged, "converged",
                      np.asarray([f"re: {a}; im: {b}" for a, b in
                                  zip(np.atleast_1d(sr), np.atleast_1d(si))]))
    method = [f"re: {a}; im: {b}" for a, b in zip(np.atleast_1d(mr), np.atleast_1d(mi))]
    return {"value": value, "error": error, "converged": converged, "status": status,
            "method": method}


def best_fit(fits: list, P: int):
    """The fit with the smallest error per column, its error widened by the distance to the
    two next-best fits (picking the smallest of several estimates is optimistic).

    ``fits``: ``(label, error[P], value[P])`` with non-finite errors as inf.  Returns
    ``(value[P], error[P], label[P])``; error inf where fewer than three fits exist.
    """
    if len(fits) < 3:
        return np.full(P, np.nan), np.full(P, np.inf), np.zeros(P, int)
    E = np.stack([f[1] for f in fits])                  # [fits, P]
    V = np.stack([f[2] for f in fits])
    labels = np.array([f[0] for f in fits])
    rank = np.argsort(E, axis=0, kind="stable")
    cols = np.arange(P)
    best = rank[0]
    value = V[best, cols]
    spread = np.maximum(np.abs(value - V[rank[1], cols]), np.abs(value - V[rank[2], cols]))
    error = E[best, cols] + spread
    return value, np.where(np.isfinite(error), error, np.inf), labels[best]


def rational_windows(deltas: np.ndarray, values: np.ndarray, sigma: np.ndarray):
    """Rational extrapolation (:func:`extrapolation.rational`) of ``values[n, P]`` (term errors
    ``sigma[n, P]``) over windows of at least :data:`MIN_WINDOW` consecutive deltas, the best
    window per column (:func:`best_fit`).

    The largest deltas lie far from 0 on the scale of the singularities of I(delta) and can
    spoil a low-degree rational fit; the smallest deltas are the hardest integrals and may
    carry errors that the fit amplifies beyond what they add.  Windows leave out either end.
    Returns ``(value[P], error[P], label[P])``, the label ``"k=<k>"`` (the k smallest deltas)
    or ``"i:j"`` (the i-th to j-th largest, 0-based, j exclusive).
    """
    n, P = values.shape
    order = np.argsort(-deltas, kind="stable")         # largest delta first
    d, v, sg = deltas[order], values[order], sigma[order]
    fits = []
    for j in range(n, MIN_WINDOW - 1, -1):
        for i in range(j - MIN_WINDOW + 1):
            r = rational(d[i:j], v[i:j], sg[i:j])
            e = np.asarray(r.error, float)
            label = f"k={j - i}" if j == n else f"{i}:{j}"
            fits.append((label, np.where(np.isfinite(e), e, np.inf), np.asarray(r.value, float)))
    return best_fit(fits, P)


def _complex(re, im) -> np.ndarray:
    """Complex array from real and imaginary parts without inf * 1j = nan surprises."""
    re, im = np.broadcast_arrays(np.asarray(re, float), np.asarray(im, float))
    z = np.empty(re.shape, complex)
    z.real, z.imag = re, im
    return z
