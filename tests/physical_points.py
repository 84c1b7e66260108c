"""The physical test set: loop integrals above thresholds (F changes sign on the simplex), each
with an independent reference, each in two unit systems.

Used by ``tests/test_physical.py`` (loopint against the references), by
``loopint/bench/physical_cases.py`` (the ``physical`` benchmark rows) and by
``tools/make_physical_references.py`` (pySecDec 1.6.6, in its own virtual environment, writes
``tests/data/physical_references.json``).  This module imports neither loopint nor JAX, so the
generator can load it from pySecDec's environment.

Normalization everywhere: pySecDec's (DESIGN.md section 4.1),

    I = int prod_l d^D k_l/(i pi^{D/2}) prod_j 1/(q_j^2 - m_j^2 + i0)^{nu_j}.

Units.  Each point is given in "m = 1" units (``kinematics``: masses and invariants as
multiples of a reference mass, e.g. m_t = 1) and again in "GeV" units: every mass times
``LAMBDA`` = 150 and every invariant times ``LAMBDA**2``.  The integral has mass dimension
``L*D - 2*nu``, so I_GeV = LAMBDA**(L*D - 2*nu) * I_(m=1).

References, in order of preference (``reference`` of a point):

* ``closed``: closed forms with mpmath (30 digits) in this module;
    - ``c0_equal``: C0(0, 0, s; m, m, m) (REFERENCES.md),
    - ``bubble_d2``: the one-loop bubble in D = 2 with two masses, logarithms with the -i0
      branch taken analytically,
* ``mpmath-1d``: one Feynman parameter integrated analytically, the other by mpmath.quad
    - ``triangle_d4``: the D = 4 triangle with three masses and three invariants (inner
      integral of 1/(F - i0) in closed form, the logarithms' branches from the sign of
      dF/dx at each root),
    - ``sunrise_d2``: the D = 2 two-loop sunrise with three masses from the dispersion
      relation of its one-loop subloop: I(s) = -int ds1 rho(s1) B(s; m1^2, s1), rho(s1) =
      2/sqrt(lambda(s1, m2^2, m3^2)), B the D = 2 bubble in closed form;
* ``pysecdec``: pySecDec 1.6.6 (Borowka et al., CPC 222 (2018) 313), contour deformation,
  Qmc (``tests/data/physical_references.json``; that file also holds pySecDec's value for the
  points with an mpmath reference, as a check of both).
"""

from __future__ import annotations

import json
import os

import mpmath

LAMBDA = 150.0          # "GeV" per unit: m_t = 1 <-> 150 GeV (seed 000's unit, m_Z = 91.17/150)
MZ = 0.6078             # 91.17/150, as in diagrams/ladder_vertex_2L_*.toml

# ------------------------------------------------------------------------------- diagrams
TRIANGLE = dict(  # lines: a = V1-V2, b = V2-V3, c = V3-V1; p1^2 cut by (c, a), p2^2 by (a, b),
    internal_lines=[["ma", [1, 2]], ["mb", [2, 3]], ["mc", [3, 1]]],   # p3^2 by (b, c)
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
    scalar_products={"p1*p1": "q1", "p2*p2": "q2", "p1*p2": "(q3 - q1 - q2)/2"})

TRIANGLE_EQ = dict(
    internal_lines=[["m", [1, 2]], ["m", [2, 3]], ["m", [3, 1]]],
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
    scalar_products={"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"})

BUBBLE = dict(
    internal_lines=[["m1", [1, 2]], ["m2", [2, 1]]],
    external_lines=[["p1", 1], ["p2", 2]],
    scalar_products={"p1*p1": "s"})

BOX = dict(  # lines: 1 = V1-V2, 2 = V2-V3, 3 = V3-V4, 4 = V4-V1; s = (p1+p2)^2, t = (p2+p3)^2
    internal_lines=[["m1", [1, 2]], ["m2", [2, 3]], ["m3", [3, 4]], ["m4", [4, 1]]],
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
    scalar_products={"p1*p1": "q1", "p2*p2": "q2", "p3*p3": "q3",
                     "p1*p2": "(s - q1 - q2)/2", "p2*p3": "(t - q2 - q3)/2",
                     "p1*p3": "(q2 + q4 - s - t)/2"})

PENTAGON = dict(  # diagrams/pentagon_ggttH.toml: gamma gamma -> t tbar H, Higgs exchanged
    internal_lines=[["mt", ["V5", "V1"]], ["mt", ["V1", "V2"]], ["mt", ["V2", "V3"]],
                    ["mH", ["V3", "V4"]], ["mt", ["V4", "V5"]]],
    external_lines=[["p1", "V1"], ["p2", "V2"], ["p3", "V3"], ["p4", "V4"], ["p5", "V5"]],
    scalar_products={"p1*p1": "0", "p2*p2": "0", "p3*p3": "mt**2", "p4*p4": "mt**2",
                     "p1*p2": "s12/2", "p2*p3": "(s23 - mt**2)/2",
                     "p3*p4": "(s34 - 2*mt**2)/2", "p1*p3": "(s45 - s12 - s23)/2",
                     "p2*p4": "(s51 - s23 - s34 + mt**2)/2",
                     "p1*p4": "(s23 - s51 - s45 + mH**2)/2"})

LADDER_2L = dict(  # diagrams/ladder_vertex_2L_k5.toml (seed 000 eq. 4.5)
    internal_lines=[["mt", ["V3", "Va"]], ["mt", ["V3", "Vb"]], ["mZ", ["Va", "Vb"]],
                    ["mt", ["Va", "V1"]], ["mt", ["Vb", "V2"]], ["mZ", ["V1", "V2"]]],
    external_lines=[["p1", "V1"], ["p2", "V2"], ["p3", "V3"]],
    scalar_products={"p1*p1": "mt**2", "p2*p2": "mt**2", "p1*p2": "(k2 - 2*mt**2)/2"})

CROSSED_2L = dict(  # the non-planar vertex: the two Z rungs cross (top lines V1-Va, V2-Vb are
    # swapped to V1-Vb ... V2-Va), so p1 and p2 enter the loop on opposite sides of both rungs
    internal_lines=[["mt", ["V3", "Va"]], ["mt", ["V3", "Vb"]], ["mZ", ["Va", "V2"]],
                    ["mt", ["Va", "V1"]], ["mt", ["Vb", "V2"]], ["mZ", ["V1", "Vb"]]],
    external_lines=[["p1", "V1"], ["p2", "V2"], ["p3", "V3"]],
    scalar_products={"p1*p1": "mt**2", "p2*p2": "mt**2", "p1*p2": "(k2 - 2*mt**2)/2"})

ELLIPTIC_2L = dict(  # pySecDec's example elliptic2L_physical (Borowka et al., CPC 222 (2018)
    # 313) in graph form: its propagators k1^2 - m^2 (line V5-V1), (k1+p1)^2 - m^2 (V1-V2),
    # (k1+p1+p2)^2 - m^2 (V2-V3), (k2+p1+p2)^2 - m^2 (V3-V4), (k2-p3)^2 - m^2 (V4-V5) and the
    # massless (k1-k2)^2 (V3-V5); light-like p1, p2, p3, p4^2 = pp4
    internal_lines=[["m", ["V5", "V1"]], ["m", ["V1", "V2"]], ["m", ["V2", "V3"]],
                    ["m", ["V3", "V4"]], ["m", ["V4", "V5"]], ["m0", ["V3", "V5"]]],
    external_lines=[["p1", "V1"], ["p2", "V2"], ["p3", "V5"], ["p4", "V4"]],
    scalar_products={"p1*p1": "0", "p2*p2": "0", "p3*p3": "0", "p1*p2": "s/2",
                     "p2*p3": "(pp4 - s - t)/2", "p1*p3": "t/2"})

SUNRISE_2L = dict(  # diagrams/sunrise_2L_D2.toml in graph form, D = 2 (finite)
    internal_lines=[["m1", [1, 2]], ["m2", [1, 2]], ["m3", [1, 2]]],
    external_lines=[["p1", 1], ["p2", 2]],
    scalar_products={"p1*p1": "s"})

DIAGRAMS = {"triangle": TRIANGLE, "triangle_eq": TRIANGLE_EQ, "bubble": BUBBLE, "box": BOX,
            "pentagon": PENTAGON, "ladder_2L": LADDER_2L, "crossed_2L": CROSSED_2L,
            "elliptic_2L": ELLIPTIC_2L, "sunrise_2L": SUNRISE_2L}

# dimension D, loops L, propagators N (all powers 1): the mass dimension is L*D - 2*N
SHAPE = {"triangle": (4, 1, 3), "triangle_eq": (4, 1, 3), "bubble": (2, 1, 2), "box": (4, 1, 4),
         "pentagon": (4, 1, 5), "ladder_2L": (4, 2, 6), "crossed_2L": (4, 2, 6),
         "elliptic_2L": (4, 2, 6), "sunrise_2L": (2, 2, 3)}

MASSES = {"m", "m0", "ma", "mb", "mc", "m1", "m2", "m3", "m4", "mt", "mH", "mZ"}   # mass dimension 1
# every other kinematic symbol is an invariant (mass dimension 2)


def P(id, diagram, kin, reference, note, loops=None):
    D, L, N = SHAPE[diagram]
    return {"id": id, "diagram": diagram, "dimension": D, "loops": L, "propagators": N,
            "kinematics": kin, "reference": reference, "note": note}


# ------------------------------------------------------------------------------- the points
PENT_KIN = {"s12": 33.412409, "s23": -11.39553, "s34": 15.256374, "s45": 12.297508,
            "s51": -2.428178, "mt": 1.0, "mH": 0.722543}

POINTS = [
    # one loop, closed forms
    P("C0eq_s4.01", "triangle_eq", {"s": 4.01, "m": 1.0}, "closed:c0_equal",
      "C0(0,0,s;m,m,m), s = 4.01 m^2: just above the 2m threshold"),
    P("C0eq_s4.0001", "triangle_eq", {"s": 4.0001, "m": 1.0}, "closed:c0_equal",
      "C0(0,0,s;m,m,m), s = 4.0001 m^2: very near threshold"),
    P("C0eq_s30", "triangle_eq", {"s": 30.0, "m": 1.0}, "closed:c0_equal",
      "C0(0,0,s;m,m,m), s = 30 m^2: far above threshold"),
    P("B0D2_m1_2_s12", "bubble", {"s": 12.0, "m1": 1.0, "m2": 2.0}, "closed:bubble_d2",
      "D = 2 bubble, masses 1 and 2, s = 12 > (m1+m2)^2 = 9"),
    P("B0D2_near", "bubble", {"s": 4.004, "m1": 0.5, "m2": 1.5}, "closed:bubble_d2",
      "D = 2 bubble, masses 0.5 and 1.5, s = 1.001 (m1+m2)^2"),
    # one-loop triangles with unequal masses: 1-D mpmath integral
    P("C0_one_above", "triangle", {"q1": 3.0, "q2": 1.0, "q3": -2.0,
                                   "ma": 1.0, "mb": 2.0, "mc": 0.5}, "mpmath-1d:triangle_d4",
      "masses 1, 2, 0.5; p1^2 = 3 above (ma+mc)^2 = 2.25, p2^2 below, p3^2 < 0"),
    P("C0_two_above", "triangle", {"q1": 4.5, "q2": 8.0, "q3": 2.0,
                                   "ma": 1.0, "mb": 1.5, "mc": 0.7}, "mpmath-1d:triangle_d4",
      "masses 1, 1.5, 0.7; p1^2 = 4.5 > 2.89 and p2^2 = 8 > 6.25 above, p3^2 = 2 < 4.84"),
    P("C0_three_above", "triangle", {"q1": 5.0, "q2": 3.0, "q3": 7.0,
                                     "ma": 0.6, "mb": 0.8, "mc": 1.0}, "mpmath-1d:triangle_d4",
      "masses 0.6, 0.8, 1; all of p1^2 = 5 > 2.56, p2^2 = 3 > 1.96, p3^2 = 7 > 3.24 above"),
    P("C0_massless_line_near", "triangle", {"q1": 2.5, "q2": 1.0, "q3": 4.04,
                                            "ma": 1.0, "mb": 2.0, "mc": 0.0},
      "mpmath-1d:triangle_d4",
      "masses 1, 2, 0 (one massless line); p1^2 = 2.5 > 1, p3^2 = 4.04 = 1.01 (mb+mc)^2"),
    P("C0_photon_offshell_1e-6", "triangle", {"q1": -3.0, "q2": 1.000001, "q3": 1.000001,
                                              "ma": 1.0, "mb": 0.0, "mc": 1.0},
      "mpmath-1d:vertex_photon_d4",
      "vertex with a massless exchange (masses 1, 0, 1): both legs at p^2 = 1.000001 m^2, "
      "1e-6 above the (m, 0) threshold and near the infrared divergence at p^2 = m^2; s = -3"),
    P("C0_photon_s7_legs_below", "triangle", {"q1": 7.0, "q2": 0.99999, "q3": 0.99999,
                                              "ma": 1.0, "mb": 0.0, "mc": 1.0},
      "mpmath-1d:vertex_photon_d4",
      "vertex with a massless exchange (masses 1, 0, 1): s = 7 > 4 m^2, both legs at "
      "p^2 = 0.99999 m^2, 1e-5 below the (m, 0) threshold"),
    # one-loop boxes and the pentagon: pySecDec
    P("D0_unequal_st", "box", {"q1": 0.0, "q2": 0.0, "q3": 1.0, "q4": 1.0, "s": 6.0, "t": -2.0,
                               "m1": 1.0, "m2": 0.5, "m3": 1.0, "m4": 0.8}, "pysecdec",
      "box, masses 1, 0.5, 1, 0.8, p1^2 = p2^2 = 0, p3^2 = p4^2 = 1, s = 6, t = -2"),
    P("D0_massive_legs_s_t_above", "box", {"q1": 1.5, "q2": 0.5, "q3": 2.0, "q4": 1.0,
                                           "s": 9.0, "t": 5.0,
                                           "m1": 0.6, "m2": 0.9, "m3": 0.4, "m4": 1.1},
      "pysecdec",
      "box, masses 0.6, 0.9, 0.4, 1.1, legs 1.5, 0.5, 2, 1; s = 9 and t = 5 above thresholds"),
    P("D0_near_threshold", "box", {"q1": 0.0, "q2": 0.0, "q3": 0.3, "q4": 0.3,
                                   "s": 4.0004, "t": -1.0,
                                   "m1": 1.0, "m2": 1.0, "m3": 0.3, "m4": 1.0}, "pysecdec",
      "box, masses 1, 1, 0.3, 1; s = 4.0004 = 1.0001 (m2+m4)^2, t = -1"),
    P("E0_ggttH", "pentagon", dict(PENT_KIN), "pysecdec",
      "pentagon gamma gamma -> t tbar H of diagrams/pentagon_ggttH.toml (sqrt(s) = 1 TeV)"),
    # two loops
    P("ladder2L_k6", "ladder_2L", {"k2": 6.0, "mt": 1.0, "mZ": MZ}, "pysecdec",
      "two-loop planar ladder vertex, k^2 = 6 m_t^2 (above 4 m_t^2)"),
    P("ladder2L_k8", "ladder_2L", {"k2": 8.0, "mt": 1.0, "mZ": MZ}, "pysecdec",
      "two-loop planar ladder vertex, k^2 = 8 m_t^2"),
    P("crossed2L_k5", "crossed_2L", {"k2": 5.0, "mt": 1.0, "mZ": MZ}, "pysecdec",
      "two-loop crossed (non-planar) vertex, k^2 = 5 m_t^2"),
    P("elliptic2L_s90", "elliptic_2L", {"s": 90.0, "t": -2.5, "pp4": 1.6, "m": 1.0, "m0": 0.0},
      "pysecdec",
      "two-loop box with an elliptic sunrise subtopology (pySecDec's elliptic2L_physical), "
      "s = 90, t = -2.5, p4^2 = 1.6, m = 1"),
    P("sunrise2L_D2_above", "sunrise_2L", {"s": 49.0, "m1": 1.0, "m2": 2.0, "m3": 3.0},
      "mpmath-1d:sunrise_d2",
      "two-loop sunrise, D = 2, masses 1, 2, 3, s = 49 > (m1+m2+m3)^2 = 36"),
    P("sunrise2L_D2_near", "sunrise_2L", {"s": 36.36, "m1": 1.0, "m2": 2.0, "m3": 3.0},
      "mpmath-1d:sunrise_d2",
      "two-loop sunrise, D = 2, masses 1, 2, 3, s = 1.01 (m1+m2+m3)^2"),
]

POINTS_BY_ID = {p["id"]: p for p in POINTS}


def mass_dimension(point) -> int:
    return point["loops"] * point["dimension"] - 2 * point["propagators"]


def scaled_kinematics(kin: dict, lam: float = LAMBDA) -> dict:
    """The same point in units where the reference mass is ``lam`` (masses * lam, invariants
    * lam**2)."""
    return {k: v * (lam if k in MASSES else lam * lam) for k, v in kin.items()}


# ------------------------------------------------------------------------------- closed forms
def _mp(x):
    return mpmath.mpf(x) if not isinstance(x, mpmath.mpf) else x


def c0_equal(s, m, dps=30) -> complex:
    """C0(0, 0, s; m, m, m) in pySecDec's normalization: (2/s) arcsin^2 form below threshold,
    [ln((1+b)/(1-b)) - i pi]^2 / (2 s), b = sqrt(1 - 4 m^2/s), above it."""
    with mpmath.workdps(dps):
        s, m = _mp(s), _mp(m)
        if s < 4 * m * m:
            if s == 0:
                return complex(-1 / (2 * m * m))
            return complex(-(2 / s) * mpmath.asin(mpmath.sqrt(s / (4 * m * m))) ** 2)
        b = mpmath.sqrt(1 - 4 * m * m / s)
        return complex((mpmath.log((1 + b) / (1 - b)) - 1j * mpmath.pi) ** 2 / (2 * s))


def _log_i0(t, sign):
    """log(t + i0*sign) for real t (sign = +1 or -1); complex t: the principal log."""
    if isinstance(t, mpmath.mpc) and t.imag != 0:
        return mpmath.log(t)
    t = mpmath.re(t)
    if t > 0:
        return mpmath.log(t)
    return mpmath.log(-t) + sign * 1j * mpmath.pi


def _quad(f, pts):
    """mpmath.quad of ``f`` over the intervals of ``pts`` to a relative 1e-15 (beyond float64's
    resolution), raising the tanh-sinh degree while its own error estimate says otherwise (two
    close break points, near an anomalous threshold, take more than its default degree: the
    default degree left the triangle at p3^2 = 2.997 with masses 1 and p1^2 = p2^2 = 3 off by
    2e-7, with an error estimate of 1e-5)."""
    tol = mpmath.mpf(10) ** -15
    for degree in (6, 8, 10, 12):
        value, error = mpmath.quad(f, pts, error=True, maxdegree=degree)
        if error <= tol * max(abs(value), 1):
            return value
    raise ValueError(f"mpmath.quad: error {mpmath.nstr(error, 3)} at degree {degree}")


def _int_inv_quadratic(a, b, c, lo, hi):
    """int_lo^hi dx / (a x^2 + b x + c - i0), a, b, c real (mpf), a != 0, lo < hi real.

    A = a (x - r1)(x - r2) = partial fractions (1/sqrt(disc)) [1/(x - r1) - 1/(x - r2)].
    Real roots: A - i0 moves a root r by +i0/A'(r) (A'(r1) = +sqrt(disc) > 0, A'(r2) < 0),
    so log(x - r) is log(t - i0 sign A'(r)) with t = x - r real.  Complex roots: principal
    logs (Im(x - r) keeps its sign along the real path).  The roots come from the stable
    formula and each log difference is one log1p where the root lies outside [lo, hi], so a
    root far away (large masses in the sunrise's dispersion integral) costs no digits."""
    disc = b * b - 4 * a * c
    if disc == 0:   # double real root: measure-zero points, callers split the outer
        r = -b / (2 * a)     # integral there
        return (1 / (lo - r) - 1 / (hi - r)) / a
    sq = mpmath.sqrt(disc) if disc > 0 else mpmath.sqrt(mpmath.mpc(disc))
    q = -(b + sq) / 2 if (disc < 0 or b >= 0) else -(b - sq) / 2
    ra, rb = q / a, c / q        # the two roots, each without cancellation
    # r1: the root with A'(r1) = +sq  (2 a r1 + b = sq)
    r1, r2 = (ra, rb) if abs(2 * a * ra + b - sq) <= abs(2 * a * rb + b - sq) else (rb, ra)

    def seg(r, sign):
        """int_lo^hi dx/(x - r) with r -> r + i0*sign for real r."""
        if disc < 0 or (lo - r) * (hi - r) > 0:
            return mpmath.log1p((hi - lo) / (lo - r))
        return _log_i0(hi - r, -sign) - _log_i0(lo - r, -sign)
    return (seg(r1, 1) - seg(r2, -1)) / sq


def bubble_d2(s, m1, m2, dps=30) -> complex:
    """One-loop bubble in D = 2: int_0^1 dx 1/(x m1^2 + (1-x) m2^2 - x(1-x) s - i0), with
    pySecDec's prefactor (-1)^2 Gamma(1) = 1; s != 0, closed form in logarithms."""
    with mpmath.workdps(dps):
        s, m1, m2 = _mp(s), _mp(m1), _mp(m2)
        return complex(_int_inv_quadratic(s, m1 ** 2 - m2 ** 2 - s, m2 ** 2, 0, 1))


def bubble_d2_direct(s, m1, m2, eta, dps=30) -> complex:
    """The same bubble by mpmath.quad with an explicit -i*eta (check of the branches)."""
    with mpmath.workdps(dps):
        s, m1, m2, eta = _mp(s), _mp(m1), _mp(m2), _mp(eta)
        a, b, c = s, m1 ** 2 - m2 ** 2 - s, m2 ** 2
        disc = b * b - 4 * a * c
        pts = [0, 1]
        if disc > 0:
            pts = sorted({0, 1, *[r for r in ((-b + mpmath.sqrt(disc)) / (2 * a),
                                               (-b - mpmath.sqrt(disc)) / (2 * a)) if 0 < r < 1]})
        return complex(mpmath.quad(lambda x: 1 / (a * x * x + b * x + c - 1j * eta), pts))


def _real_roots_in(coeffs, lo, hi):
    """Real roots in (lo, hi) of the polynomial sum coeffs[k] x^k (k = 0..2)."""
    c0, c1, c2 = coeffs
    out = []
    if c2 != 0:
        disc = c1 * c1 - 4 * c2 * c0
        if disc >= 0:
            sq = mpmath.sqrt(disc)
            out = [(-c1 + sq) / (2 * c2), (-c1 - sq) / (2 * c2)]
    elif c1 != 0:
        out = [-c0 / c1]
    return [r for r in out if lo < r < hi]


def triangle_d4(q1, q2, q3, ma, mb, mc, dps=30) -> complex:
    """One-loop triangle in D = 4 (lines a = V1-V2, b = V2-V3, c = V3-V1; p1^2 = q1 cut by
    (c, a), p2^2 = q2 by (a, b), p3^2 = q3 by (b, c)) in pySecDec's normalization:

        C0 = -int_simplex 1/(F - i0),
        F = sum_i m_i^2 x_i^2 + sum_{i<j} x_i x_j (m_i^2 + m_j^2 - s_ij)

    with s_ac = q1, s_ab = q2, s_bc = q3.  The inner integral over x_b = v in [0, 1 - u]
    (x_a = u, x_c = 1 - u - v) is a closed form (the v^2 coefficient is the invariant of the
    pair (b, c), so the pair is chosen with a nonzero invariant); the outer one is mpmath.quad
    split where the inner roots cross the ends of the interval or merge."""
    with mpmath.workdps(dps):
        M = {"a": _mp(ma) ** 2, "b": _mp(mb) ** 2, "c": _mp(mc) ** 2}
        S = {frozenset("ac"): _mp(q1), frozenset("ab"): _mp(q2), frozenset("bc"): _mp(q3)}
        # outer variable: the line opposite to a pair with nonzero invariant
        for outer, (p, q) in (("a", "bc"), ("b", "ca"), ("c", "ab")):
            if S[frozenset(p + q)] != 0:
                break
        else:
            raise ValueError("all invariants zero")

        def Y(i, j):
            return M[i] + M[j] - S[frozenset(i + j)]
        # x_outer = u, x_p = v, x_q = w = 1 - u - v.  F = sum m^2 x^2 + sum Y x x.
        # coefficients of v^2, v, 1 as polynomials in u (index = power of u)
        o = outer
        # F = M_o u^2 + M_p v^2 + M_q w^2 + Y_op u v + Y_oq u w + Y_pq v w, w = 1 - u - v
        A = S[frozenset(p + q)]                   # v^2: M_p + M_q - Y_pq = s_pq
        # v^1: -2 M_q (1-u) + Y_op u - Y_oq u + Y_pq (1-u)
        B1 = [-2 * M[q] + Y(p, q), 2 * M[q] + Y(o, p) - Y(o, q) - Y(p, q)]
        # v^0: M_o u^2 + M_q (1-u)^2 + Y_oq u (1-u)
        C0c = [M[q], -2 * M[q] + Y(o, q), M[o] + M[q] - Y(o, q)]

        def inner(u):
            b = B1[0] + B1[1] * u
            c = C0c[0] + C0c[1] * u + C0c[2] * u * u
            return _int_inv_quadratic(A, b, c, 0, 1 - u)

        # breakpoints: c(u) = 0 (root at v = 0), F(u, 1-u) = 0 (root at v = 1-u),
        # b^2 - 4 A c = 0 (roots merge)
        c_poly = C0c
        # F at v = 1 - u: A (1-u)^2 + b(u)(1-u) + c(u)
        e_poly = [A + B1[0] + C0c[0], -2 * A + B1[1] - B1[0] + C0c[1], A - B1[1] + C0c[2]]
        d_poly = [B1[0] ** 2 - 4 * A * C0c[0], 2 * B1[0] * B1[1] - 4 * A * C0c[1],
                  B1[1] ** 2 - 4 * A * C0c[2]]
        pts = sorted({mpmath.mpf(0), mpmath.mpf(1), *_real_roots_in(c_poly, 0, 1),
                      *_real_roots_in(e_poly, 0, 1), *_real_roots_in(d_poly, 0, 1)})
        return complex(-_quad(inner, pts))


def vertex_photon_d4(s, P, m, dps=30) -> complex:
    """The D = 4 vertex with a massless line between two legs of equal virtuality P and lines
    of mass m to the third leg (s), pySecDec's normalization: ``triangle_d4`` with ma = mc = m,
    mb = 0 (line b the massless one), q1 = s and q2 = q3 = P.  With x_a = rho xi, x_c = rho (1 - xi),
    x_b = 1 - rho, F = rho [m^2 - P + rho A(xi)], A = P - s xi (1 - xi), so the rho integral
    is a logarithm:

        C0 = -int_0^1 dxi [ln(G - i0) - ln(m^2 - P - i0)] / A,   G = m^2 - s xi (1 - xi),

    regular where A = 0 (the bracket vanishes there too).  Finite for P != m^2; near P = m^2
    (the threshold of the massless line and one massive line) it grows like ln|m^2 - P|, which
    ``triangle_d4``'s closed inner integral does not resolve (a log of zero at an end)."""
    with mpmath.workdps(dps):
        s, P, m2 = _mp(s), _mp(P), _mp(m) ** 2
        if P == m2:
            raise ValueError("P = m^2: the vertex is infrared divergent")
        lnB = _log_i0(m2 - P, -1)

        def f(xi):
            A = P - s * xi * (1 - xi)
            if A == 0:
                return 1 / (m2 - P)
            return (_log_i0(m2 - s * xi * (1 - xi), -1) - lnB) / A
        # break points: G = 0 (the logarithm's branch) and A = 0 (a removable 0/0)
        pts = {mpmath.mpf(0), mpmath.mpf(1) / 2, mpmath.mpf(1)}
        for c in (m2, P):
            pts.update(_real_roots_in([c, -s, s], 0, 1))
        return complex(-_quad(f, sorted(pts)))


def sunrise_d2(s, m1, m2, m3, dps=30) -> complex:
    """Two-loop sunrise in D = 2 (masses m1, m2, m3, p^2 = s > 0) in pySecDec's normalization,
    from the dispersion relation of the (m2, m3) subloop (an unsubtracted one: the D = 2
    bubble falls like log(q^2)/q^2):

        B(q^2; m2, m3) = int_{(m2+m3)^2}^inf ds1 rho(s1)/(s1 - q^2 - i0),
        rho(s1) = Im B(s1 + i0)/pi = 2/sqrt(lambda(s1, m2^2, m3^2)),
        I(s) = -int ds1 rho(s1) B(s; m1^2, s1)       (B with masses m1 and sqrt(s1)).

    Checked against the position-space Bessel integral of diagrams/sunrise_2L_D2.toml below
    threshold (tests/test_physical.py)."""
    with mpmath.workdps(dps):
        s, m1, m2, m3 = _mp(s), _mp(m1), _mp(m2), _mp(m3)
        t0 = (m2 + m3) ** 2
        # s1 = t0 + v^2 takes the 1/sqrt singularity of rho at t0 away:
        # rho(s1) ds1 = 4 dv / sqrt(v^2 + 4 m2 m3)

        def integrand(v):
            s1 = t0 + v * v
            # B(s; m1^2, s1) with x -> 1 - x: m1^2 as the constant term keeps both roots
            # accurate when s1 >> s (one root is then -m1^2/s1, tiny, beside x = 0)
            a, b, c = s, s1 - m1 ** 2 - s, m1 ** 2
            if b * b == 4 * a * c:      # the bubble's own threshold: an integrable 1/sqrt
                return mpmath.mpf(0)    # singularity, met only as an end point of the split
            return 4 / mpmath.sqrt(v * v + 4 * m2 * m3) * _int_inv_quadratic(a, b, c, 0, 1)

        pts = [mpmath.mpf(0)]
        if s > 0:
            rs = mpmath.sqrt(s)
            for x in ((rs - m1) ** 2, (rs + m1) ** 2):   # threshold, pseudo-threshold of B
                if x > t0:
                    pts.append(mpmath.sqrt(x - t0))
        pts = sorted(set(pts))
        pts.append(max(pts[-1], mpmath.sqrt(t0)) * 4)
        pts.append(mpmath.inf)
        return complex(-_quad(integrand, pts))


def sunrise_d2_bessel(s, m1, m2, m3, dps=20) -> complex:
    """Below threshold only: -4 int_0^inf r I0(sqrt(s) r) K0(m1 r) K0(m2 r) K0(m3 r) dr
    (the reference of diagrams/sunrise_2L_D2.toml)."""
    with mpmath.workdps(dps):
        rs = mpmath.sqrt(_mp(s))
        return complex(-4 * mpmath.quad(lambda r: r * mpmath.besseli(0, rs * r) * mpmath.besselk(
            0, m1 * r) * mpmath.besselk(0, m2 * r) * mpmath.besselk(0, m3 * r), [0, 1, mpmath.inf]))


_CLOSED: dict = {}


def closed_reference(point) -> complex | None:
    """The mpmath reference of a point (m = 1 units), None for pySecDec-only points."""
    key = (point["reference"], tuple(sorted(point["kinematics"].items())))
    if key not in _CLOSED:
        _CLOSED[key] = _closed_reference(point)
    return _CLOSED[key]


def _closed_reference(point) -> complex | None:
    ref, k = point["reference"], point["kinematics"]
    if ref == "closed:c0_equal":
        return c0_equal(k["s"], k["m"])
    if ref == "closed:bubble_d2":
        return bubble_d2(k["s"], k["m1"], k["m2"])
    if ref == "mpmath-1d:triangle_d4":
        return triangle_d4(k["q1"], k["q2"], k["q3"], k["ma"], k["mb"], k["mc"])
    if ref == "mpmath-1d:sunrise_d2":
        return sunrise_d2(k["s"], k["m1"], k["m2"], k["m3"])
    if ref == "mpmath-1d:vertex_photon_d4":
        assert k["mb"] == 0 and k["q2"] == k["q3"] and k["ma"] == k["mc"], point["id"]
        return vertex_photon_d4(k["q1"], k["q2"], k["ma"])
    return None


REFERENCE_SOURCES = {
    "closed:c0_equal": "closed form of C0(0,0,s;m,m,m) (REFERENCES.md), mpmath 30 digits",
    "closed:bubble_d2": "closed form (logarithms, -i0 branch analytic) of the D = 2 bubble, "
                        "mpmath 30 digits",
    "mpmath-1d:triangle_d4": "D = 4 triangle: inner Feynman parameter in closed form, outer "
                             "by mpmath.quad (30 digits)",
    "mpmath-1d:vertex_photon_d4": "D = 4 vertex with a massless exchange between legs of "
                                  "equal virtuality: one Feynman parameter in closed form, "
                                  "the other by mpmath.quad (30 digits)",
    "mpmath-1d:sunrise_d2": "D = 2 sunrise: dispersion integral over the subloop's spectral "
                            "density of the closed-form D = 2 bubble, mpmath.quad (30 digits)",
    "pysecdec": "pySecDec 1.6.6 (Borowka et al., CPC 222 (2018) 313), contour deformation, Qmc "
                "(tests/data/physical_references.json)",
}


# ------------------------------------------------------------------------------- references
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                    "physical_references.json")
MPMATH_REL = 1e-12      # claimed accuracy of the mpmath references (measured: 1e-15 and better)
_PSD = {}


def pysecdec_data() -> dict:
    """tests/data/physical_references.json (tools/make_physical_references.py)."""
    if not _PSD:
        with open(DATA) as f:
            _PSD.update(json.load(f))
    return _PSD


def reference(point) -> tuple[complex, float, str]:
    """(value, error, source) in m = 1 units: mpmath where the point has it (error: 1e-12
    relative), else pySecDec (error: 3 times its standard-deviation estimate, |re + i im|)."""
    v = closed_reference(point)
    if v is not None:
        return v, MPMATH_REL * abs(v), REFERENCE_SOURCES[point["reference"]]
    e = pysecdec_data()["points"][point["id"]]
    return (complex(*e["value"]), 3 * float(abs(complex(*e["error"]))),
            REFERENCE_SOURCES["pysecdec"])
