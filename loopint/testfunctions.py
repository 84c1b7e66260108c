"""Standard test integrands over the unit cube with known integrals.

f1-f8 are the suite of seed 001 (PAGANI, SC'21) section 4.1, from Genz's families; the
reference values are those of ``../shared/REFERENCES.md`` (computed in closed form).
``table51`` is the 6-D two-loop integrand of seed 000, appendix C, written exactly as the
seed's hand-written CUDA function (sequential simplex->cube map included).

Every function maps points ``x[n, d]`` to values ``[n]`` and is traceable by JAX.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import jax.numpy as jnp
import mpmath


def f1(x):
    """cos(sum_i i x_i)."""
    i = jnp.arange(1, x.shape[1] + 1, dtype=x.dtype)
    return jnp.cos(x @ i)


def f2(x):
    """prod_i (1/50^2 + (x_i - 1/2)^2)^-1."""
    return jnp.prod(1.0 / (1.0 / 50.0**2 + (x - 0.5) ** 2), axis=1)


def f3(x):
    """(1 + sum_i i x_i)^(-d-1)."""
    d = x.shape[1]
    i = jnp.arange(1, d + 1, dtype=x.dtype)
    return (1.0 + x @ i) ** (-(d + 1))


def f4(x):
    """exp(-625 sum_i (x_i - 1/2)^2)."""
    return jnp.exp(-625.0 * jnp.sum((x - 0.5) ** 2, axis=1))


def f5(x):
    """exp(-10 sum_i |x_i - 1/2|)."""
    return jnp.exp(-10.0 * jnp.sum(jnp.abs(x - 0.5), axis=1))


def f6(x):
    """exp(sum_i (i+4) x_i) if x_i < (3+i)/10 for every i, else 0 (seed 001 eq. 6)."""
    i = jnp.arange(1, x.shape[1] + 1, dtype=x.dtype)
    inside = jnp.all(x < (3.0 + i) / 10.0, axis=1)
    return jnp.where(inside, jnp.exp(x @ (i + 4.0)), 0.0)


def f7(x):
    """(sum_i x_i^2)^11."""
    return jnp.sum(x * x, axis=1) ** 11


def f8(x):
    """(sum_i x_i^2)^(15/2)."""
    return jnp.sum(x * x, axis=1) ** 7.5


def table51(u):
    """Seed 000 appendix C: the two-loop integrand on [0,1]^6 (bare, factor Gamma(3)=2 included).

    ``x1 = u1, x2 = (1-x1) u2, ..., x7 = 1 - x1 - ... - x6``; the result is
    ``2 cc / dd^3`` times the Jacobian ``prod_k (1 - x1 - ... - x_k)``, k = 1..5, and 0 where
    ``dd^3 == 0`` (the seed's guard).
    """
    x1 = u[:, 0]
    x2 = (1.0 - x1) * u[:, 1]
    x3 = (1.0 - x1 - x2) * u[:, 2]
    x4 = (1.0 - x1 - x2 - x3) * u[:, 3]
    x5 = (1.0 - x1 - x2 - x3 - x4) * u[:, 4]
    x6 = (1.0 - x1 - x2 - x3 - x4 - x5) * u[:, 5]
    x7 = 1.0 - x1 - x2 - x3 - x4 - x5 - x6
    t1 = x1 + x2 + x3
    cc = (x1 + x2 + x3 + x4 + x5) * (x1 + x2 + x3 + x6 + x7) - t1 * t1
    dd = cc * (x1 + x2 + x3 + x4 + x5 + x6 + x7) - (
        (x1 * x2 * x4 + x1 * x2 * x5 + x1 * x2 * x6 + x1 * x2 * x7
         + x1 * x5 * x6 + x2 * x4 * x7 - x3 * x4 * x6)
        + (x3 * (-x4 * x6 + x5 * x7))
        + (x3 * (x1 * x4 + x1 * x5 + x1 * x6 + x1 * x7 + x4 * x6 + x4 * x7))
        + (x3 * (x2 * x4 + x2 * x5 + x2 * x6 + x2 * x7 + x4 * x6 + x5 * x6))
        + (x1 * x4 * x5 + x1 * x5 * x7 + x2 * x4 * x5 + x2 * x4 * x6
           + x3 * x4 * x5 + x3 * x4 * x6 + x4 * x5 * x6 + x4 * x5 * x7)
        + (x1 * x4 * x6 + x1 * x6 * x7 + x2 * x5 * x7 + x2 * x6 * x7
           + x3 * x4 * x6 + x3 * x6 * x7 + x4 * x6 * x7 + x5 * x6 * x7))
    dd3 = dd * dd * dd
    jac = ((1.0 - x1) * (1.0 - x1 - x2) * (1.0 - x1 - x2 - x3)
           * (1.0 - x1 - x2 - x3 - x4) * (1.0 - x1 - x2 - x3 - x4 - x5))
    safe = jnp.where(dd3 == 0, 1.0, dd3)
    return jnp.where(dd3 == 0, 0.0, 2.0 * cc / safe * jac)


@dataclass(frozen=True)
class TestCase:
    """One integrand over [0,1]^ndim with its exact (or reference) integral and source."""

    name: str
    f: Callable
    ndim: int
    exact: float
    source: str
    sign_changing: bool = False


def _f1_exact(d: int) -> float:
    # Re of prod_k (e^{ik} - 1)/(ik)
    mpmath.mp.dps = 30
    z = mpmath.mpf(1)
    for k in range(1, d + 1):
        z *= (mpmath.exp(1j * k) - 1) / (1j * k)
    return float(mpmath.re(z))


def _f3_exact(d: int) -> float:
    # Iterated: int (1 + a.x)^(-d-1) over the cube; inclusion-exclusion closed form
    # sum_{S subset} (-1)^|S| (1 + sum_{i in S} i)^(-1) / (d! prod i)
    mpmath.mp.dps = 30
    total = mpmath.mpf(0)
    for mask in range(1 << d):
        s = 1 + sum(i + 1 for i in range(d) if mask >> i & 1)
        total += (-1) ** bin(mask).count("1") / mpmath.mpf(s)
    return float(total / (math.factorial(d) * math.prod(range(1, d + 1))))


def _f4_exact(d: int) -> float:
    mpmath.mp.dps = 30
    one = mpmath.sqrt(mpmath.pi) / 25 * mpmath.erf(mpmath.mpf(25) / 2)
    return float(one**d)


def _f5_exact(d: int) -> float:
    mpmath.mp.dps = 30
    one = (1 - mpmath.exp(-5)) / 5
    return float(one**d)


def _f6_exact(d: int) -> float:
    mpmath.mp.dps = 30
    p = mpmath.mpf(1)
    for i in range(1, d + 1):
        p *= (mpmath.exp(mpmath.mpf((i + 4) * (i + 3)) / 10) - 1) / (i + 4)
    return float(p)


def _f7_exact(d: int) -> float:
    # E[(sum x_i^2)^11] over the cube: expand with multinomials of the moments 1/(2k+1).
    mpmath.mp.dps = 30
    # polynomial in t: (sum_i x_i^2)^11 integrated = coefficient extraction via generating fn
    # int (sum x^2)^n = n! [t^n] (sum_k t^k/(k!(2k+1)))^d
    n = 11
    g = [mpmath.mpf(1) / (mpmath.factorial(k) * (2 * k + 1)) for k in range(n + 1)]
    poly = [mpmath.mpf(1)] + [mpmath.mpf(0)] * n
    for _ in range(d):
        new = [mpmath.mpf(0)] * (n + 1)
        for i, a in enumerate(poly):
            for k in range(n + 1 - i):
                new[i + k] += a * g[k]
        poly = new
    return float(mpmath.factorial(n) * poly[n])


def genz_suite() -> list[TestCase]:
    """The f1-f7 cases of REFERENCES.md (seed 001 section 4.1) at the listed dimensions."""
    src = "closed form (REFERENCES.md; seed 001 section 4.1)"
    return [
        TestCase("f1_8d", f1, 8, _f1_exact(8), src, sign_changing=True),
        TestCase("f2_6d", f2, 6, float((100 * mpmath.atan(25)) ** 6), src),
        TestCase("f3_3d", f3, 3, _f3_exact(3), src),
        TestCase("f3_5d", f3, 5, _f3_exact(5), src),
        TestCase("f3_8d", f3, 8, _f3_exact(8), src),
        TestCase("f4_5d", f4, 5, _f4_exact(5), src),
        TestCase("f4_8d", f4, 8, _f4_exact(8), src),
        TestCase("f5_5d", f5, 5, _f5_exact(5), src),
        TestCase("f5_8d", f5, 8, _f5_exact(8), src),
        TestCase("f6_6d", f6, 6, _f6_exact(6), src),
        TestCase("f7_8d", f7, 8, _f7_exact(8), src),
    ]


TABLE51_REFERENCE = 8.5351398153893e-2
"""Seed 000 Table 5.1 integral (bare); REFERENCES.md: tensor Gauss-Legendre after Sidi sin^2,
orders 40-64 per axis agree to 1e-14."""
