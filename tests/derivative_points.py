"""Closed forms for the derivative tests and benchmark, in mpmath (no loopint, no JAX).

* :func:`c0`: C0(0,0,s;m,m,m) in pySecDec's normalization, below and above threshold;
* :func:`box`: the massless one-loop box with four off-shell legs in the Euclidean region,
  Phi^(1)(X, Y)/(S T) (Usyukina and Davydychev, Phys. Lett. B 298 (1993) 363);
* :func:`diff`: a partial derivative of such a function at 40 digits (``mpmath.diff``).
"""

from __future__ import annotations

import mpmath


def c0(s, m):
    """C0(0,0,s;m,m,m), pySecDec's normalization, in mpmath (s != 0)."""
    if s < 4 * m * m:
        return -(2 / s) * mpmath.asin(mpmath.sqrt(s / (4 * m * m))) ** 2
    b = mpmath.sqrt(1 - 4 * m * m / s)
    return (mpmath.log((1 + b) / (1 - b)) - 1j * mpmath.pi) ** 2 / (2 * s)


def box(p1sq, p2sq, p3sq, p4sq, s, t):
    """The massless box with off-shell legs in the Euclidean region: Phi^(1)(X, Y)/(S T)."""
    P1, P2, P3, P4, S, T = -p1sq, -p2sq, -p3sq, -p4sq, -s, -t
    x, y = P1 * P3 / (S * T), P2 * P4 / (S * T)
    lam = mpmath.sqrt((1 - x - y) ** 2 - 4 * x * y)
    rho = 2 / (1 - x - y + lam)
    phi = (2 * (mpmath.polylog(2, -rho * x) + mpmath.polylog(2, -rho * y))
           + mpmath.log(y / x) * mpmath.log((1 + rho * y) / (1 + rho * x))
           + mpmath.log(rho * x) * mpmath.log(rho * y) + mpmath.pi ** 2 / 3) / lam
    return phi / (S * T)


def diff(f, point: dict, names: tuple) -> complex:
    """The partial derivative of ``f(**point)`` by ``names`` (one or two) at 40 digits."""
    with mpmath.workdps(40):
        args = {k: mpmath.mpf(v) for k, v in point.items()}
        order = {n: names.count(n) for n in names}
        keys = list(order)

        def g(*xs):
            return f(**{**args, **dict(zip(keys, xs))})
        return complex(mpmath.diff(g, [args[k] for k in keys], [order[k] for k in keys]))
