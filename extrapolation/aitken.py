r"""Iterated Aitken :math:`\Delta^2` process.

One Aitken step maps a sequence :math:`x_n` to

.. math::

    x'_n = x_{n+2} - \frac{(\Delta x_{n+1})^2}{\Delta^2 x_n}
         = x_{n+2} - \frac{(x_{n+2} - x_{n+1})^2}{x_{n+2} - 2x_{n+1} + x_n},

which is exact for :math:`x_n = L + c\lambda^n` (Aitken 1926); it is Shanks' :math:`e_1`, the
column :math:`\varepsilon_2` of Wynn's table.  The iterated process applies the step again to
the new sequence, each step shortening it by two; after ``k`` steps the last element uses the
last ``2k + 1`` terms (Sidi 2003, Ch. 15).  Iterating Aitken is cheaper but usually weaker than
the full epsilon algorithm (:func:`extrapolation.wynn_epsilon`), which removes ``k``
exponentials at once instead of one at a time.

The written form above, anchored at the newest element, loses less to cancellation than
``x_n - (Delta x_n)^2 / Delta^2 x_n`` (Sidi 2003, Ch. 15).  The iteration stops early when
the newest second difference vanishes to round-off.

Error estimate, as for :func:`extrapolation.wynn_epsilon`: the result ``r`` is compared with
the results ``r_(-i)`` from the sequence without its last ``i = 1 .. 4`` terms
(``sum_i |r - r_(-i)|``, the QUADPACK DQELG estimate, see
:data:`~extrapolation.safeguards.HISTORY_DEPTH`), then widened by the checks of
:mod:`extrapolation.safeguards`.

References:
    A. C. Aitken, "On Bernoulli's numerical solution of algebraic equations", Proc. Roy.
    Soc. Edinburgh 46 (1926) 289-305.
    A. Sidi, "Practical Extrapolation Methods", Cambridge University Press (2003), Ch. 15.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from . import safeguards
from .result import ExtrapolationResult, stack

EPS = safeguards.EPS


def _iterated_aitken(x: np.ndarray) -> tuple[complex, int, np.ndarray]:
    """Best final element over the Aitken iterates, its number of steps, and its gradient.

    Each step's final element ``r_k`` gets the local spread ``|x_(-1) - x_(-2)| + |x_(-2) -
    x_(-3)| + |r_k - x_(-1)|`` (as in DQELG), the ``x`` being the last three elements of the
    iterate it came from.  Steps are taken while this spread shrinks; the first step at which it
    grows is discarded and the iteration stops there: beyond that point round-off, noise or
    the pre-asymptotic first terms dominate (iterated Aitken can otherwise settle on a false
    plateau built from the first terms, e.g. for ``L + a delta + b delta**2``).
    The gradient is carried in forward mode: one step is
    ``x'_n = (1 - u)**2 x_(n+2) + 2u(1 - u) x_(n+1) + u**2 x_n`` to first order, with
    ``u = Delta x_(n+1) / Delta^2 x_n``.  Where a second difference vanishes to round-off the
    step is undefined (NaN), unless the first difference vanishes too (converged: ``u = 0``);
    the iteration stops when the newest element is undefined or has converged.
    """
    jac = np.eye(x.size, dtype=x.dtype)
    tiny = 4 * EPS * float(np.max(np.abs(x)))
    best = (x[-1], 0, jac[-1])
    best_spread = math.inf
    steps = 0
    while x.size >= 3:
        d = np.diff(x)
        dd = d[1:] - d[:-1]
        flat = np.abs(dd) <= tiny
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(flat, np.where(np.abs(d[1:]) <= tiny, 0.0, np.nan), d[1:] / dd)
        new = x[2:] - u * d[1:]
        if not np.isfinite(new[-1]):
            break
        jac = (((1 - u) ** 2)[:, None] * jac[2:] + (2 * u * (1 - u))[:, None] * jac[1:-1]
               + (u ** 2)[:, None] * jac[:-2])
        steps += 1
        spread = abs(d[-1]) + abs(d[-2]) + abs(new[-1] - x[-1])
        if spread > best_spread:
            break
        best, best_spread = (new[-1], steps, jac[-1]), spread
        x = new
        if u[-1] == 0:
            break
    return best


def _aitken_1d(s: np.ndarray, sigma: np.ndarray, rtol: float, atol: float) -> ExtrapolationResult:
    terms = list(s)
    if not np.all(np.isfinite(s)):
        nan = complex(math.nan, math.nan) if np.iscomplexobj(s) else math.nan
        return safeguards.assess(nan, math.inf, 0.0, terms, rtol=rtol, atol=atol, order=0,
                                 amplification=math.nan)
    value, steps, gradient = _iterated_aitken(s)
    # Results from the shorter prefixes play the role of DQELG's earlier results.
    depth = safeguards.HISTORY_DEPTH
    history = [_iterated_aitken(s[:m])[0] for m in range(max(3, s.size - depth), s.size)]
    spread = safeguards.history_spread(value, history) if s.size >= 3 + depth else math.inf
    propagated = safeguards.propagated_error(gradient, s, sigma)
    return safeguards.assess(value, spread, propagated, terms, rtol=rtol, atol=atol,
                             order=steps, amplification=float(np.sum(np.abs(gradient))))


def aitken_delta2(seq: Sequence[Any] | np.ndarray, errors: Any = None, *, rtol: float = 1e-10,
                  atol: float = 0.0) -> ExtrapolationResult:
    r"""Extrapolate a sequence (or a batch) with the iterated Aitken :math:`\Delta^2` process.

    Args:
        seq: shape ``(n_terms,)``, or ``(n_terms, m)`` for ``m`` independent sequences.
            Real or complex.  At least 7 terms are needed for an error estimate.
        errors: absolute errors of the terms (scalar or broadcastable to ``seq``);
            propagated into the error estimate.
        rtol, atol: requested accuracy, ``error <= max(atol, rtol * |value|)``.

    Returns:
        :class:`~extrapolation.ExtrapolationResult` (arrays of shape ``(m,)`` for 2-D input);
        ``order`` is the number of Aitken steps applied.
    """
    s = np.asarray(seq)
    if s.ndim not in (1, 2) or s.shape[0] == 0:
        raise ValueError(f"seq must have shape (n_terms,) or (n_terms, m), got {s.shape}")
    s = s.astype(np.result_type(s.dtype, np.float64))
    err = np.zeros(s.shape) if errors is None else np.broadcast_to(np.abs(errors), s.shape)
    err = np.asarray(err, dtype=float)
    if s.ndim == 1:
        return _aitken_1d(s, err, rtol, atol)
    return stack([_aitken_1d(s[:, i], err[:, i], rtol, atol) for i in range(s.shape[1])])
