"""Closed forms for the derivative tests and benchmark, in mpmath (no loopint, no JAX).

* :func:`c0`: C0(0,0,s;m,m,m) in pySecDec's normalization, below and above threshold;
* :func:`box`: the massless one-loop box with four off-shell legs in the Euclidean region,
  Phi^(1)(X, Y)/(S T) (Usyukina and Davydychev, Phys. Lett. B 298 (1993) 363);
* :func:`ladder_phi`: their ladder functions Phi^(L)(x, y), of which the massless L-loop
  ladder triangle is Phi^(L)(p1^2/p3^2, p2^2/p3^2)/(p3^2)^L;
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


def ladder_phi(L: int, x, y):
    """Usyukina and Davydychev's ladder function Phi^(L)(x, y) (Phys. Lett. B 305 (1993) 136,
    eq. (18)), with lambda = sqrt((1 - x - y)^2 - 4 x y) and rho = 2 / (1 - x - y + lambda):
    real where lambda^2 < 0, or lambda > 0 and x + y < 1 (the branch of the polylogarithms
    taken here)."""
    lam = mpmath.sqrt((1 - x - y) ** 2 - 4 * x * y)
    rho = 2 / (1 - x - y + lam)
    total = 0
    for j in range(L, 2 * L + 1):
        total += ((-1) ** j * mpmath.factorial(j) * mpmath.log(y / x) ** (2 * L - j)
                  / (mpmath.factorial(j - L) * mpmath.factorial(2 * L - j))
                  * (mpmath.polylog(j, -1 / (rho * x)) - mpmath.polylog(j, -rho * y)))
    return -total / (mpmath.factorial(L) * lam)


def box(p1sq, p2sq, p3sq, p4sq, s, t):
    """The massless box with off-shell legs in the Euclidean region: Phi^(1)(X, Y)/(S T)."""
    P1, P2, P3, P4, S, T = -p1sq, -p2sq, -p3sq, -p4sq, -s, -t
    return ladder_phi(1, P1 * P3 / (S * T), P2 * P4 / (S * T)) / (S * T)


def diff(f, point: dict, names: tuple) -> complex:
    """The partial derivative of ``f(**point)`` by ``names`` (one or two) at 40 digits."""
    with mpmath.workdps(40):
        args = {k: mpmath.mpf(v) for k, v in point.items()}
        order = {n: names.count(n) for n in names}
        keys = list(order)

        def g(*xs):
            return f(**{**args, **dict(zip(keys, xs))})
        return complex(mpmath.diff(g, [args[k] for k in keys], [order[k] for k in keys]))
