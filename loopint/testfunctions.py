"""Standard test integrands over the unit cube with known integrals.

f1-f8 are the suite of seed 001 (PAGANI, SC'21) section 4.1, from Genz's families; the
reference values are their closed forms, evaluated below with mpmath at 30 digits.
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


def table51_cc_dd(x1, x2, x3, x4, x5, x6, x7):
    """cc and dd of the seed's CUDA function (seed 000 appendix C), transcribed verbatim; any
    arithmetic type (arrays, sympy symbols)."""
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
    return cc, dd


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
    cc, dd = table51_cc_dd(x1, x2, x3, x4, x5, x6, x7)
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


@mpmath.workdps(30)
def _f1_exact(d: int) -> float:
    # Re of prod_k (e^{ik} - 1)/(ik)
    z = mpmath.mpf(1)
    for k in range(1, d + 1):
        z *= (mpmath.exp(1j * k) - 1) / (1j * k)
    return float(mpmath.re(z))


@mpmath.workdps(30)
def _f3_exact(d: int) -> float:
    # Iterated: int (1 + a.x)^(-d-1) over the cube; inclusion-exclusion closed form
    # sum_{S subset} (-1)^|S| (1 + sum_{i in S} i)^(-1) / (d! prod i)
    total = mpmath.mpf(0)
    for mask in range(1 << d):
        s = 1 + sum(i + 1 for i in range(d) if mask >> i & 1)
        total += (-1) ** bin(mask).count("1") / mpmath.mpf(s)
    return float(total / (math.factorial(d) * math.prod(range(1, d + 1))))


@mpmath.workdps(30)
def _f4_exact(d: int) -> float:
    one = mpmath.sqrt(mpmath.pi) / 25 * mpmath.erf(mpmath.mpf(25) / 2)
    return float(one**d)


@mpmath.workdps(30)
def _f5_exact(d: int) -> float:
    one = (1 - mpmath.exp(-5)) / 5
    return float(one**d)


@mpmath.workdps(30)
def _f6_exact(d: int) -> float:
    p = mpmath.mpf(1)
    for i in range(1, d + 1):
        p *= (mpmath.exp(mpmath.mpf((i + 4) * (i + 3)) / 10) - 1) / (i + 4)
    return float(p)


@mpmath.workdps(30)
def _f7_exact(d: int) -> float:
    # E[(sum x_i^2)^11] over the cube: expand with multinomials of the moments 1/(2k+1).
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


@mpmath.workdps(30)
def genz_suite() -> list[TestCase]:
    """The f1-f7 cases of seed 001 (Sakiotis et al., PAGANI, SC'21) section 4.1 at the listed
    dimensions."""
    src = "closed form, mpmath at 30 digits (Genz family; PAGANI, SC'21, section 4.1)"
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
"""Seed 000 (R. Assaf, MSc thesis, Western Michigan University 2014) Table 5.1 integral (bare):
tensor Gauss-Legendre in 6-D after Sidi's sin^2 map, orders 40-64 per axis agree to 1e-14."""


# ----------------------------------------------------------------------------------------------
# Stochastic-geometry integrands (seed 000, chapter 3 and appendices A, B)

def _tetra_volume6(p1, p2, p3, p4):
    """6 x the volume of the tetrahedron p1..p4 (points ``[n, 3]``): |det(p2-p1, p3-p1, p4-p1)|.

    Equal to the modulus of seed 000's 4x4 determinant ``d1 - d2 + d3 - d4`` (expansion along
    the column of ones), written with edge vectors to avoid its cancellations.
    """
    a, b, c = p2 - p1, p3 - p1, p4 - p1
    cross = jnp.stack([b[:, 1] * c[:, 2] - b[:, 2] * c[:, 1],
                       b[:, 2] * c[:, 0] - b[:, 0] * c[:, 2],
                       b[:, 0] * c[:, 1] - b[:, 1] * c[:, 0]], axis=1)
    return jnp.abs(jnp.sum(a * cross, axis=1))


def sphere_tetrahedron(x):
    """Seed 000 appendix A: mean volume of a tetrahedron with vertices on the unit sphere, V(pi).

    Five variables on [0,1]^5 (eq. 3.2): ``u_k = 2 x - 1`` (k = 2, 3, 4) and
    ``theta_k = 2 pi x`` (k = 3, 4); vertex 1 fixed at the north pole, vertex 2 in the xz-plane.
    The integral over the unit cube is the normalized mean ``4 pi / 105``.
    """
    u2, u3, u4 = 2.0 * x[:, 0] - 1.0, 2.0 * x[:, 1] - 1.0, 2.0 * x[:, 2] - 1.0
    t3, t4 = 2.0 * jnp.pi * x[:, 3], 2.0 * jnp.pi * x[:, 4]
    one, zero = jnp.ones_like(u2), jnp.zeros_like(u2)
    r2 = jnp.sqrt(jnp.maximum(1.0 - u2 * u2, 0.0))
    r3 = jnp.sqrt(jnp.maximum(1.0 - u3 * u3, 0.0))
    r4 = jnp.sqrt(jnp.maximum(1.0 - u4 * u4, 0.0))
    p1 = jnp.stack([zero, zero, one], axis=1)
    p2 = jnp.stack([r2, zero, u2], axis=1)
    p3 = jnp.stack([r3 * jnp.cos(t3), r3 * jnp.sin(t3), u3], axis=1)
    p4 = jnp.stack([r4 * jnp.cos(t4), r4 * jnp.sin(t4), u4], axis=1)
    return _tetra_volume6(p1, p2, p3, p4) / 6.0


def cube_tetrahedron(x):
    """Seed 000 eq. 3.3: volume of the tetrahedron with four uniform vertices in the unit cube.

    Twelve variables on [0,1]^12, vertex k = (x_(3k), x_(3k+1), x_(3k+2)).
    """
    p = [x[:, 3 * k:3 * k + 3] for k in range(4)]
    return _tetra_volume6(*p) / 6.0


def tetrahedron_tetrahedron(x):
    """Seed 000 appendix B: tetrahedron picking in a tetrahedron, E[V_4(T^3)] / |T^3|.

    Each vertex ``(x, y, z)`` of the unit simplex from three cube variables ``(s, t, v)``:
    ``x = s, y = (1 - x) t, z = (1 - x - y) v`` with Jacobian ``(1 - x)(1 - x - y)``.  The
    factor ``1296 = 6^4`` is the uniform density on the simplex (volume 1/6) for the four
    vertices, and the seed's code integrates ``6 |V|`` = |det|, i.e. the volume relative to
    the simplex's volume, whose expectation is ``13/720 - pi^2/15015`` (Buchta & Reitzner 2001).
    """
    pts, jac = [], 1.0
    for k in range(4):
        s, t, v = x[:, 3 * k], x[:, 3 * k + 1], x[:, 3 * k + 2]
        px = s
        py = (1.0 - px) * t
        pz = (1.0 - px - py) * v
        pts.append(jnp.stack([px, py, pz], axis=1))
        jac = jac * (1.0 - px) * (1.0 - px - py)
    return 1296.0 * _tetra_volume6(*pts) * jac


@mpmath.workdps(30)
def geometry_suite() -> list[TestCase]:
    """The tetrahedron-picking integrals of seed 000 chapter 3 with their exact values.

    Exact values: ``4 pi / 105`` (Heinrich et al. 1998, seed 000 eq. 3.2);
    ``3977/216000 - pi^2/2160`` (cube; the seed prints 21600, a typo); ``13/720 - pi^2/15015``
    (Buchta & Reitzner 2001).
    """
    pi = mpmath.pi
    return [
        TestCase("sphere_tetrahedron_5d", sphere_tetrahedron, 5, float(4 * pi / 105),
                 "closed form 4 pi/105 (Heinrich et al. 1998; seed 000 ch. 3)"),
        TestCase("cube_tetrahedron_12d", cube_tetrahedron, 12,
                 float(mpmath.mpf(3977) / 216000 - pi**2 / 2160),
                 "closed form 3977/216000 - pi^2/2160 (seed 000 ch. 3 prints 21600, a typo)"),
        TestCase("tetrahedron_tetrahedron_12d", tetrahedron_tetrahedron, 12,
                 float(mpmath.mpf(13) / 720 - pi**2 / 15015),
                 "closed form 13/720 - pi^2/15015 (Buchta & Reitzner 2001; seed 000 appendix B)"),
    ]
