"""The dimensional-regularization test set: loop integrals in D = 4 - 2*eps and the Laurent
coefficients of their expansion in eps, each with an independent reference.

Used by ``tests/test_dimreg_references.py`` (the references against each other),
``tests/test_dimreg.py`` (loopint against the references) and
``tools/make_dimreg_references.py`` (pySecDec 1.6.6, in its own virtual environment, writes
``tests/data/dimreg_references.json``).  This module imports neither loopint nor JAX, so the
generator can load it from pySecDec's environment.

Normalization everywhere: pySecDec's (DESIGN.md section 4.1), with the prefactor expanded in
eps and NOTHING pulled out (no exp(eps*gamma_E), no Gamma(1 + eps)):

    I = int prod_l d^D k_l/(i pi^{D/2}) prod_j 1/(q_j^2 - m_j^2 + i0)^{nu_j}
      = (-1)^nu Gamma(nu - L D/2)/prod_j Gamma(nu_j)
        * int delta(1 - sum x) prod_j x_j^(nu_j - 1) U^(nu - (L+1) D/2) / (F - i0)^(nu - L D/2),
    D = 4 - 2*eps,   I = sum_j c_j eps^j.

Branches: F - i0, i.e. log(F - i0) = log|F| - i pi for F < 0; in the closed forms every
invariant carries +i0 (F is linear in -s), so (-s)^(-eps) means exp(-eps log(-s - i0)) with
log(-s - i0) = log(s) - i pi for s > 0.

Units.  Each case is given in "m = 1" units (``kinematics``) and, through
``scaled_kinematics``, in "GeV" units: every mass times ``LAMBDA`` = 150 and every invariant
times ``LAMBDA**2``.  In dimensional regularization the integral has mass dimension
L*D - 2*nu = L*(4 - 2 eps) - 2 nu, which depends on eps, so the Laurent coefficients MIX
under a change of units:

    I_GeV(eps) = LAMBDA^(4L - 2nu) * exp(-2 L eps log LAMBDA) * I_1(eps)      (``rescale``).

A case (a dict in ``CASES``):

    name, loops, internal_lines, external_lines, scalar_products, powers (the arguments of
    ``loopint.Diagram.from_graph(..., dimension=DIMENSION)``), kinematics (symbol -> float),
    eps_order (the highest order of the reference), region ("euclidean": F >= 0 on the
    simplex; "physical": F changes sign or is negative), reference (a key of
    ``REFERENCE_SOURCES``), diagram (the shape's name: cases that differ only in numbers
    share pySecDec's library), note.

References (``reference(case)`` -> (coefficients, allowances, source), each {j: complex} in
m = 1 units; ``closed_reference(case)`` the mpmath coefficients alone), in order of
preference:

* ``closed:*``: closed forms in Gamma functions, logarithms and dilogarithms expanded with
  mpmath (30 digits), the source of each formula in its docstring;
* ``mpmath-1d:bubble``: the one-loop bubble's single Feynman parameter by mpmath.quad, the
  eps-expansion taken under the integral (F^(-k eps) = sum_n (-k eps log(F - i0))^n/n!);
* ``mpmath-2d:sunrise``: the two-loop sunrise below threshold by primary and one secondary
  sector decomposition done by hand, the 1/eps of the subdivergences subtracted
  analytically and the rest by 2-D mpmath.quad;
* ``pysecdec``: pySecDec 1.6.6 only (tests/data/dimreg_references.json), with its errors.

Every ``closed``/``mpmath`` reference is also computed by pySecDec (the JSON file), which
checks both (tests/test_dimreg_references.py); for the physical massless two-loop vertices,
which depend on s only through (-s - i0)^(-2 - 2 eps), pySecDec's check is its Euclidean
value at s = -1 times that exact factor (``pysecdec_check``, ``CONTINUED_FROM``).
"""

from __future__ import annotations

import json
import os

import mpmath

DIMENSION = "4 - 2*eps"
LAMBDA = 150.0          # "GeV" per unit, as in tests/physical_points.py
MASSES = {"m", "m1", "m2", "m3"}    # mass dimension 1; every other symbol is an invariant
DPS = 30

# ------------------------------------------------------------------------------- diagrams
# (graph definitions in the format of tests/physical_points.py; masses as symbols, "0"
# massless)
BUBBLE = dict(
    internal_lines=[["m1", [1, 2]], ["m2", [2, 1]]],
    external_lines=[["p1", 1], ["p2", 2]],
    scalar_products={"p1*p1": "s"})

BUBBLE_EQ = dict(
    internal_lines=[["m", [1, 2]], ["m", [2, 1]]],
    external_lines=[["p1", 1], ["p2", 2]],
    scalar_products={"p1*p1": "s"})

BUBBLE_ONE_MASS = dict(
    internal_lines=[["m", [1, 2]], ["0", [2, 1]]],
    external_lines=[["p1", 1], ["p2", 2]],
    scalar_products={"p1*p1": "s"})

BUBBLE_MASSLESS = dict(
    internal_lines=[["0", [1, 2]], ["0", [2, 1]]],
    external_lines=[["p1", 1], ["p2", 2]],
    scalar_products={"p1*p1": "s"})

# lines a = V1-V2, b = V2-V3, c = V3-V1 (as tests/physical_points.TRIANGLE): p1^2 is cut by
# (c, a), p2^2 by (a, b), p3^2 by (b, c)
TRIANGLE_MASSLESS = dict(   # p1^2 = p2^2 = 0, p3^2 = s:  F = -s x_b x_c
    internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["0", [3, 1]]],
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
    scalar_products={"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"})

TRIANGLE_2OFF = dict(       # p1^2 = 0, p2^2 = q2, p3^2 = q3:  F = -x_b (q2 x_a + q3 x_c)
    internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["0", [3, 1]]],
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
    scalar_products={"p1*p1": "0", "p2*p2": "q2", "p1*p2": "(q3 - q2)/2"})

# lines 1 = V1-V2, 2 = V2-V3, 3 = V3-V4, 4 = V4-V1; s = (p1+p2)^2 is cut by lines (2, 4),
# t = (p2+p3)^2 by (1, 3):  F = -s x2 x4 - t x1 x3 (- p4^2 x3 x4 for the one-mass box)
BOX_MASSLESS = dict(
    internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["0", [3, 4]], ["0", [4, 1]]],
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
    scalar_products={"p1*p1": "0", "p2*p2": "0", "p3*p3": "0",
                     "p1*p2": "s/2", "p2*p3": "t/2", "p1*p3": "-(s + t)/2"})

BOX_ONE_MASS = dict(        # p4^2 = q4 (the leg eliminated by momentum conservation)
    internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["0", [3, 4]], ["0", [4, 1]]],
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
    scalar_products={"p1*p1": "0", "p2*p2": "0", "p3*p3": "0",
                     "p1*p2": "s/2", "p2*p3": "t/2", "p1*p3": "(q4 - s - t)/2"})

BOX_TWO_MASS_EASY = dict(   # p2^2 = q2 and p4^2 = q4 (opposite legs) off shell
    internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["0", [3, 4]], ["0", [4, 1]]],
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
    scalar_products={"p1*p1": "0", "p2*p2": "q2", "p3*p3": "0", "p1*p2": "(s - q2)/2",
                     "p2*p3": "(t - q2)/2", "p1*p3": "(q4 + q2 - s - t)/2"})

BOX1L_PSD = dict(   # pySecDec's documented example examples/box1L (generate_box1L.py)
    internal_lines=[["m", [1, 2]], ["0", [2, 3]], ["0", [3, 4]], ["0", [4, 1]]],
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
    scalar_products={"p1*p1": "s1", "p2*p2": "0", "p3*p3": "0",
                     "p1*p2": "s/2 - s1/2", "p1*p3": "-s/2 - t/2", "p2*p3": "t/2"})

SUNRISE = dict(
    internal_lines=[["m1", [1, 2]], ["m2", [1, 2]], ["m3", [1, 2]]],
    external_lines=[["p1", 1], ["p2", 2]],
    scalar_products={"p1*p1": "s"})

SUNRISE_EQ = dict(
    internal_lines=[["m", [1, 2]], ["m", [1, 2]], ["m", [1, 2]]],
    external_lines=[["p1", 1], ["p2", 2]],
    scalar_products={"p1*p1": "s"})

SUNRISE_MASSLESS = dict(
    internal_lines=[["0", [1, 2]], ["0", [1, 2]], ["0", [1, 2]]],
    external_lines=[["p1", 1], ["p2", 2]],
    scalar_products={"p1*p1": "s"})

# the two-loop vertices of tests/physical_points.py (LADDER_2L, CROSSED_2L) with massless
# lines and light-like p1, p2 (the quark form factor's two-loop masters)
LADDER_2L_MASSLESS = dict(
    internal_lines=[["0", ["V3", "Va"]], ["0", ["V3", "Vb"]], ["0", ["Va", "Vb"]],
                    ["0", ["Va", "V1"]], ["0", ["Vb", "V2"]], ["0", ["V1", "V2"]]],
    external_lines=[["p1", "V1"], ["p2", "V2"], ["p3", "V3"]],
    scalar_products={"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"})

CROSSED_2L_MASSLESS = dict(
    internal_lines=[["0", ["V3", "Va"]], ["0", ["V3", "Vb"]], ["0", ["Va", "V2"]],
                    ["0", ["Va", "V1"]], ["0", ["Vb", "V2"]], ["0", ["V1", "Vb"]]],
    external_lines=[["p1", "V1"], ["p2", "V2"], ["p3", "V3"]],
    scalar_products={"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"})

TRIANGLE2L_PSD = dict(  # pySecDec's documented example examples/triangle2L (m^2 = msq)
    internal_lines=[["m", [3, 4]], ["m", [4, 5]], ["m", [3, 5]], ["0", [1, 2]],
                    ["0", [4, 1]], ["0", [2, 5]]],
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
    scalar_products={"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"})

DIAGRAMS = {
    "bubble": BUBBLE, "bubble_eq": BUBBLE_EQ, "bubble_one_mass": BUBBLE_ONE_MASS,
    "bubble_massless": BUBBLE_MASSLESS, "triangle_massless": TRIANGLE_MASSLESS,
    "triangle_2off": TRIANGLE_2OFF, "box_massless": BOX_MASSLESS,
    "box_one_mass": BOX_ONE_MASS, "box_two_mass_easy": BOX_TWO_MASS_EASY, "box1L_psd": BOX1L_PSD, "sunrise": SUNRISE,
    "sunrise_eq": SUNRISE_EQ, "sunrise_massless": SUNRISE_MASSLESS,
    "ladder_2L_massless": LADDER_2L_MASSLESS, "crossed_2L_massless": CROSSED_2L_MASSLESS,
    "triangle2L_psd": TRIANGLE2L_PSD,
}
LOOPS = {"sunrise": 2, "sunrise_eq": 2, "sunrise_massless": 2, "ladder_2L_massless": 2,
         "crossed_2L_massless": 2, "triangle2L_psd": 2}     # every other diagram: one loop


def C(name, diagram, kinematics, eps_order, region, reference, note, powers=None):
    graph = DIAGRAMS[diagram]
    n = len(graph["internal_lines"])
    return {"name": name, "diagram": diagram, "loops": LOOPS.get(diagram, 1),
            "internal_lines": graph["internal_lines"], "external_lines": graph["external_lines"],
            "scalar_products": graph["scalar_products"],
            "powers": list(powers) if powers is not None else [1] * n,
            "kinematics": dict(kinematics), "eps_order": eps_order, "region": region,
            "reference": reference, "note": note}


# ------------------------------------------------------------------------------- the cases
CASES = [
    # one loop: bubbles (UV 1/eps), the Feynman parameter by mpmath.quad
    C("B_eq_eucl", "bubble_eq", {"s": -3.0, "m": 1.0}, 1, "euclidean", "mpmath-1d:bubble",
      "bubble, equal masses, p^2 = -3 m^2"),
    C("B_eq_phys", "bubble_eq", {"s": 6.0, "m": 1.0}, 1, "physical", "mpmath-1d:bubble",
      "bubble, equal masses, p^2 = 6 m^2 above the threshold 4 m^2"),
    C("B_12_eucl", "bubble", {"s": -2.5, "m1": 1.0, "m2": 2.0}, 1, "euclidean",
      "mpmath-1d:bubble", "bubble, masses 1 and 2, p^2 = -2.5"),
    C("B_12_below", "bubble", {"s": 4.0, "m1": 1.0, "m2": 2.0}, 1, "euclidean",
      "mpmath-1d:bubble", "bubble, masses 1 and 2, 0 < p^2 = 4 < (m1+m2)^2 = 9 (F > 0)"),
    C("B_12_phys", "bubble", {"s": 12.0, "m1": 1.0, "m2": 2.0}, 1, "physical",
      "mpmath-1d:bubble", "bubble, masses 1 and 2, p^2 = 12 above (m1+m2)^2 = 9"),
    C("B_m0_phys", "bubble_one_mass", {"s": 3.0, "m": 1.0}, 1, "physical",
      "mpmath-1d:bubble", "bubble, one massive and one massless line, p^2 = 3 > m^2"),
    C("B_pow21_eucl", "bubble", {"s": -1.0, "m1": 1.0, "m2": 2.0}, 1, "euclidean",
      "mpmath-1d:bubble", "bubble, masses 1 and 2, line 1 squared (powers 2, 1: UV finite), "
      "p^2 = -1", powers=[2, 1]),
    # one loop, massless: closed forms in Gamma functions (every order)
    C("B0_eucl", "bubble_massless", {"s": -2.0}, 1, "euclidean", "closed:bubble_massless",
      "massless bubble, p^2 = -2"),
    C("B0_phys", "bubble_massless", {"s": 5.0}, 1, "physical", "closed:bubble_massless",
      "massless bubble, p^2 = 5"),
    C("T0_eucl", "triangle_massless", {"s": -3.0}, 1, "euclidean",
      "closed:triangle_massless", "massless triangle, p1^2 = p2^2 = 0, p3^2 = -3 (1/eps^2)"),
    C("T0_phys", "triangle_massless", {"s": 5.0}, 1, "physical", "closed:triangle_massless",
      "massless triangle, p1^2 = p2^2 = 0, p3^2 = 5"),
    C("T2_eucl", "triangle_2off", {"q2": -2.0, "q3": -5.0}, 1, "euclidean",
      "closed:triangle_2off", "massless triangle, p1^2 = 0, p2^2 = -2, p3^2 = -5 (1/eps)"),
    C("T2_phys", "triangle_2off", {"q2": 3.0, "q3": -1.0}, 1, "physical",
      "closed:triangle_2off", "massless triangle, p1^2 = 0, p2^2 = 3, p3^2 = -1"),
    # one loop, boxes: Ellis-Zanderighi / Bern-Dixon-Kosower closed forms to eps^0
    C("D0_eucl", "box_massless", {"s": -3.0, "t": -2.0}, 0, "euclidean",
      "closed:box_massless", "massless on-shell box, s = -3, t = -2"),
    C("D0_phys", "box_massless", {"s": 5.0, "t": -2.0}, 0, "physical", "closed:box_massless",
      "massless on-shell box, s = 5, t = -2 (u = -3)"),
    C("D1_eucl", "box_one_mass", {"s": -3.0, "t": -2.0, "q4": -1.0}, 0, "euclidean",
      "closed:box_one_mass", "massless box, one off-shell leg p4^2 = -1, s = -3, t = -2"),
    C("D1_phys", "box_one_mass", {"s": 5.0, "t": -2.0, "q4": 1.5}, 0, "physical",
      "closed:box_one_mass", "massless box, one off-shell leg p4^2 = 1.5, s = 5, t = -2"),
    C("D2E_eucl", "box_two_mass_easy", {"s": -3.0, "t": -2.0, "q2": -0.5, "q4": -1.0}, 0,
      "euclidean", "closed:box_two_mass_easy",
      "massless box, opposite legs off shell p2^2 = -0.5, p4^2 = -1, s = -3, t = -2"),
    C("D2E_phys", "box_two_mass_easy", {"s": 5.0, "t": -2.0, "q2": 1.5, "q4": -1.0}, 0,
      "physical", "closed:box_two_mass_easy",
      "massless box, opposite legs off shell p2^2 = 1.5, p4^2 = -1, s = 5, t = -2"),
    C("box1L_psd", "box1L_psd", {"s": 4.0, "t": -0.75, "s1": 1.25, "m": 1.0}, 0, "physical",
      "closed:box1L_documented",
      "pySecDec's example box1L (one massive line, p1^2 = s1) at its documented point"),
    # two loops
    C("SS0_eucl", "sunrise_massless", {"s": -1.0}, 1, "euclidean",
      "closed:sunrise_massless", "massless two-loop sunrise, p^2 = -1 (1/eps)"),
    C("SS0_phys", "sunrise_massless", {"s": 2.0}, 1, "physical", "closed:sunrise_massless",
      "massless two-loop sunrise, p^2 = 2"),
    C("SS_eq_vacuum", "sunrise_eq", {"s": 0.0, "m": 1.0}, 0, "euclidean",
      "mpmath-2d:sunrise", "two-loop sunrise, three equal masses, p^2 = 0 (1/eps^2)"),
    C("SS_eq_eucl", "sunrise_eq", {"s": -1.0, "m": 1.0}, 0, "euclidean",
      "mpmath-2d:sunrise", "two-loop sunrise, three equal masses, p^2 = -1"),
    C("SS_123_below", "sunrise", {"s": 4.0, "m1": 1.0, "m2": 2.0, "m3": 3.0}, 0, "euclidean",
      "mpmath-2d:sunrise", "two-loop sunrise, masses 1, 2, 3, 0 < p^2 = 4 < 36"),
    C("SS_eq_phys", "sunrise_eq", {"s": 12.0, "m": 1.0}, 0, "physical", "pysecdec",
      "two-loop sunrise, three equal masses, p^2 = 12 above the threshold 9"),
    C("V2P_eucl", "ladder_2L_massless", {"s": -1.0}, 0, "euclidean", "closed:vertex_planar",
      "two-loop massless planar (ladder) vertex, p1^2 = p2^2 = 0, s = -1 (1/eps^4)"),
    C("V2P_phys", "ladder_2L_massless", {"s": 2.0}, 0, "physical", "closed:vertex_planar",
      "two-loop massless planar vertex, s = 2 (pySecDec's check: V2P_eucl continued by "
      "(-s - i0)^(-2 - 2 eps))"),
    C("V2X_eucl", "crossed_2L_massless", {"s": -1.0}, 0, "euclidean",
      "closed:vertex_crossed",
      "two-loop massless crossed (non-planar) vertex, p1^2 = p2^2 = 0, s = -1 (1/eps^4)"),
    C("V2X_phys", "crossed_2L_massless", {"s": 2.0}, 0, "physical", "closed:vertex_crossed",
      "two-loop massless crossed vertex, s = 2 (pySecDec's check: V2X_eucl continued by "
      "(-s - i0)^(-2 - 2 eps))"),
    C("triangle2L_psd", "triangle2L_psd", {"s": 9.0, "m": 1.0}, 0, "physical", "pysecdec",
      "pySecDec's example triangle2L at its documented point s = 9, m^2 = 1"),
]

CASES_BY_NAME = {c["name"]: c for c in CASES}
# physical cases that pySecDec is not run on: a massless vertex whose only scale is s, so
# that I(s) = I(-1) (-s - i0)^(-2 - 2 eps) exactly; pySecDec's Euclidean value, continued
# (``continuation``), is their check (F = -s * a positive polynomial: nothing for a contour
# deformation to do, and the 2-loop runs take 15 minutes each)
CONTINUED_FROM = {"V2P_phys": "V2P_eucl", "V2X_phys": "V2X_eucl"}


def nu(case) -> int:
    return sum(case["powers"])


def leading_order(case) -> int:
    """The leading power of eps of the case (its deepest pole)."""
    return min(reference(case)[0])


def scaled_kinematics(kin: dict, lam: float = LAMBDA) -> dict:
    """The same point in units where the reference mass is ``lam`` (masses * lam, invariants
    * lam**2)."""
    return {k: v * (lam if k in MASSES else lam * lam) for k, v in kin.items()}


def rescale(coeffs: dict, loops: int, nu: int, lam: float = LAMBDA) -> dict:
    """Laurent coefficients in units scaled by ``lam`` from those in the original units:

        I_lam(eps) = lam^(L*(4 - 2 eps) - 2 nu) I_1(eps)
                   = lam^(4L - 2nu) * sum_n (-2 L log(lam))^n eps^n / n! * I_1(eps),

    the series product exact in mpmath (DPS digits).  Coefficient j of the result needs the
    coefficients of I_1 up to order j only, so every order given is exact."""
    with mpmath.workdps(DPS):
        lam = mpmath.mpf(lam)
        a = -2 * loops * mpmath.log(lam)
        scale = lam ** (4 * loops - 2 * nu)
        out = {}
        for j in sorted(coeffs):
            out[j] = complex(scale * mpmath.fsum(
                a ** n / mpmath.factorial(n) * mpmath.mpc(coeffs[j - n])
                for n in range(0, j - min(coeffs) + 1)))
        return out


# ------------------------------------------------------------------------------- series
# Truncated Laurent series in eps: dicts {power: mpc}; ``top`` is the highest power kept.
def _mul(a: dict, b: dict, top: int) -> dict:
    out = {}
    for i, x in a.items():
        for j, y in b.items():
            if i + j <= top:
                out[i + j] = out.get(i + j, 0) + x * y
    return out


def _scale(a: dict, c) -> dict:
    return {j: c * x for j, x in a.items()}


def _add(*series) -> dict:
    out = {}
    for s in series:
        for j, x in s.items():
            out[j] = out.get(j, 0) + x
    return out


def _exp(g: dict, top: int) -> dict:
    """exp(g(eps)) for a series g without negative powers (f' = g' f, order by order)."""
    f = {0: mpmath.exp(g.get(0, 0))}
    for n in range(1, top + 1):
        f[n] = mpmath.fsum(k * g.get(k, 0) * f[n - k] for k in range(1, n + 1)) / n
    return f


def _pow_eps(log_base, a, top: int) -> dict:
    """base^(a eps) = exp(a eps log(base)); the caller picks the branch of the log."""
    return _exp({1: a * log_base}, top)


def _gamma(n: int, a, top: int) -> dict:
    """Gamma(n + a eps) for an integer n and a != 0, to eps^top:
    log Gamma(1 + x) = -gamma x + sum_{k>=2} (-1)^k zeta(k) x^k / k  (DLMF 5.7.3),
    Gamma(n + x) = Gamma(1 + x) (1 + x) ... (n - 1 + x)  or  Gamma(1 + x) / (x (x - 1) ...
    (x + n))  for n <= 0."""
    a = mpmath.mpf(a)
    poles = 1 if n <= 0 else 0
    depth = top + poles
    g = {1: -mpmath.euler * a}
    for k in range(2, depth + 1):
        g[k] = (-1) ** k * mpmath.zeta(k) * a ** k / k
    out = _exp(g, depth)
    if n >= 1:
        for j in range(1, n):
            out = _mul(out, {0: mpmath.mpf(j), 1: a}, depth)
        return {j: x for j, x in out.items() if j <= top}
    for j in range(n, 0):           # 1/(j + a eps) = (1/j) sum_k (-a eps / j)^k
        inv = {k: (-a / j) ** k / j for k in range(0, depth + 1)}
        out = _mul(out, inv, depth)
    return {j - 1: x / a for j, x in out.items() if j - 1 <= top}     # 1/(a eps)


def _inv(a: dict, top: int) -> dict:
    """1/a(eps) for a series with a nonzero leading coefficient at power p: power -p on."""
    p = min(a)
    b = {j - p: x for j, x in a.items()}
    depth = top + p
    out = {0: 1 / b[0]}
    for n in range(1, depth + 1):
        out[n] = -mpmath.fsum(b.get(k, 0) * out[n - k] for k in range(1, n + 1)) / b[0]
    return {j - p: x for j, x in out.items() if j - p <= top}


def _log_m(x):
    """log(-x - i0) for real x: log|x| - i pi for x > 0."""
    x = mpmath.mpf(x)
    if x > 0:
        return mpmath.log(x) - 1j * mpmath.pi
    return mpmath.mpc(mpmath.log(-x))


def _li2_one_minus_ratio(a, b):
    """Li2(1 - A/B) with A = -a - i0, B = -b - i0 (a, b real nonzero invariants).

    The integral is analytic where every invariant has a positive imaginary part (then
    Im F < 0 on the whole simplex), and there A/B, a ratio of two numbers in the lower half
    plane, never crosses the negative real axis: the function to continue is Li2(1 - A/B)
    with the principal branch.  For a, b of opposite signs y = 1 - a/b > 1 lies on the cut:
    with A = -a - i d, B = -b - i d, Im(A/B) = d (b - a)/|B|^2, so y carries +i0 sign(a - b),
    and Li2(y +- i0) = Re Li2(y) +- i pi log y for y > 1."""
    a, b = mpmath.mpf(a), mpmath.mpf(b)
    y = 1 - a / b
    if y <= 1:
        return mpmath.mpc(mpmath.polylog(2, y))
    side = 1 if a > b else -1
    return mpmath.mpc(mpmath.re(mpmath.polylog(2, y)), side * mpmath.pi * mpmath.log(y))


def _complex(series: dict, lo: int, hi: int) -> dict:
    return {j: complex(series.get(j, 0)) for j in range(lo, hi + 1)}


# ------------------------------------------------------------------------------- closed forms
def bubble_massless(s, top=1) -> dict:
    """Massless bubble, p^2 = s:  Gamma(eps) Gamma(1-eps)^2 / Gamma(2-2eps) (-s - i0)^(-eps).

    From the parametric form (U = 1, F = -s x1 x2): Gamma(eps) (-s)^(-eps) times
    int_0^1 (x(1-x))^(-eps) dx, the Beta function B(1-eps, 1-eps) (the G-function G(1,1) of
    V. A. Smirnov, "Analytic Tools for Feynman Integrals", Springer 2012, chapter 1)."""
    with mpmath.workdps(DPS):
        t = top + 2
        r = _mul(_gamma(0, 1, t), _mul(_gamma(1, -1, t), _gamma(1, -1, t), t), t)
        r = _mul(r, _inv(_gamma(2, -2, t), t), t)
        r = _mul(r, _pow_eps(_log_m(s), -1, t), top)
        return _complex(r, -1, top)


def _r_gamma(top: int) -> dict:
    """r_Gamma = Gamma(1+eps) Gamma(1-eps)^2 / Gamma(1-2eps) (R. K. Ellis and G. Zanderighi,
    "Scalar one-loop integrals for QCD", JHEP 0802 (2008) 002, arXiv:0712.1851, section 2:
    their I_N^D carries 1/(i pi^{D/2} r_Gamma) in front of int d^D l, so at mu = 1 their
    integrals are ours divided by r_Gamma)."""
    r = _mul(_gamma(1, 1, top), _mul(_gamma(1, -1, top), _gamma(1, -1, top), top), top)
    return _mul(r, _inv(_gamma(1, -2, top), top), top)


def triangle_massless(s, top=1) -> dict:
    """Massless triangle, p1^2 = p2^2 = 0, p3^2 = s:

        I = -Gamma(1+eps) Gamma(-eps)^2 / Gamma(1-2eps) (-s - i0)^(-1-eps)
          = r_Gamma / eps^2 (-s - i0)^(-eps) / s,

    from the parametric form (U = 1, F = -s x_b x_c, the simplex integral of
    (x_b x_c)^(-1-eps) = Gamma(-eps)^2/Gamma(1-2eps)); the same as Ellis-Zanderighi,
    arXiv:0712.1851, triangle 1, times r_Gamma."""
    with mpmath.workdps(DPS):
        t = top + 3
        r = _mul(_r_gamma(t), _pow_eps(_log_m(s), -1, t), t)
        r = {j - 2: x / mpmath.mpf(s) for j, x in r.items() if j - 2 <= top}
        return _complex(r, -2, top)


def triangle_2off(q2, q3, top=1) -> dict:
    """Massless triangle, p1^2 = 0, p2^2 = q2, p3^2 = q3 (q2 != q3):

        I = r_Gamma / eps^2 [(-q2 - i0)^(-eps) - (-q3 - i0)^(-eps)] / (q2 - q3),

    derived from the parametric form (F = -x_b (q2 x_a + q3 x_c): x_b = 1 - t,
    x_a = t y, x_c = t (1 - y) gives Gamma(1-eps) Gamma(-eps)/Gamma(1-2eps) times
    int_0^1 (A y + B (1-y))^(-1-eps) dy = (A^(-eps) - B^(-eps))/(-eps (A - B)),
    A = -q2 - i0, B = -q3 - i0); Ellis-Zanderighi, arXiv:0712.1851, triangle 2, times
    r_Gamma."""
    with mpmath.workdps(DPS):
        t = top + 3
        d = _add(_pow_eps(_log_m(q2), -1, t), _scale(_pow_eps(_log_m(q3), -1, t), -1))
        r = _mul(_r_gamma(t), d, t)
        r = {j - 2: x / (mpmath.mpf(q2) - q3) for j, x in r.items() if j - 2 <= top}
        return _complex(r, -1, top)


def box_massless(s, t) -> dict:
    """Massless on-shell box, to eps^0 (Bern, Dixon, Kosower, Nucl. Phys. B412 (1994) 751,
    hep-ph/9306240; Ellis-Zanderighi, arXiv:0712.1851, box 1; QCDLoop 2's Box::B1
    (github.com/scarrazza/qcdloop, src/box.cc)):

        I = r_Gamma/(s t) { 2/eps^2 [(-s)^(-eps) + (-t)^(-eps)] - ln^2((-s)/(-t)) - pi^2 }
            + O(eps),

    every (-x) = -x - i0."""
    with mpmath.workdps(DPS):
        top = 0
        Ls, Lt = _log_m(s), _log_m(t)
        br = _scale(_add(_pow_eps(Ls, -1, top + 2), _pow_eps(Lt, -1, top + 2)), 2)
        br = {j - 2: x for j, x in br.items()}
        br = _add(br, {0: -(Ls - Lt) ** 2 - mpmath.pi ** 2})
        r = _mul(_r_gamma(top + 2), br, top)
        return _complex(_scale(r, 1 / (mpmath.mpf(s) * t)), -2, top)


def box_one_mass(s, t, q4) -> dict:
    """Massless box with one off-shell leg p4^2 = q4, to eps^0 (Bern, Dixon, Kosower,
    hep-ph/9306240; Ellis-Zanderighi, arXiv:0712.1851, box 2; QCDLoop 2's Box::B2):

        I = r_Gamma/(s t) { 2/eps^2 [(-s)^(-eps) + (-t)^(-eps) - (-q4)^(-eps)]
                            - 2 Li2(1 - q4/s) - 2 Li2(1 - q4/t) - ln^2((-s)/(-t)) - pi^2/3 }
            + O(eps),

    every (-x) = -x - i0, Li2(1 - q4/s) meaning Li2(1 - (-q4 - i0)/(-s - i0))."""
    with mpmath.workdps(DPS):
        top = 0
        Ls, Lt, L4 = _log_m(s), _log_m(t), _log_m(q4)
        br = _add(_pow_eps(Ls, -1, 2), _pow_eps(Lt, -1, 2), _scale(_pow_eps(L4, -1, 2), -1))
        br = {j - 2: 2 * x for j, x in br.items()}
        br = _add(br, {0: -2 * _li2_one_minus_ratio(q4, s) - 2 * _li2_one_minus_ratio(q4, t)
                       - (Ls - Lt) ** 2 - mpmath.pi ** 2 / 3})
        r = _mul(_r_gamma(top + 2), br, top)
        return _complex(_scale(r, 1 / (mpmath.mpf(s) * t)), -2, top)


def box_two_mass_easy(s, t, q2, q4) -> dict:
    """Massless box with the opposite legs p2^2 = q2, p4^2 = q4 off shell, to eps^0 (Bern,
    Dixon, Kosower, hep-ph/9306240; Ellis-Zanderighi, arXiv:0712.1851, box 4):

        I = r_Gamma/(s t - q2 q4) { 2/eps^2 [(-s)^(-eps) + (-t)^(-eps) - (-q2)^(-eps)
                                             - (-q4)^(-eps)]
                - 2 Li2(1 - q2/s) - 2 Li2(1 - q2/t) - 2 Li2(1 - q4/s) - 2 Li2(1 - q4/t)
                + 2 Li2(1 - q2 q4/(s t)) - ln^2((-s)/(-t)) } + O(eps),

    every (-x) = -x - i0.  The ratio q2 q4/(s t) is exp(L), L = l(q2) + l(q4) - l(s) - l(t)
    with l(x) = log(-x - i0); its Li2 is the principal branch only while |Im L| < pi, which
    holds when as many of q2, q4 as of s, t are positive (Im L = 0; other regions raise)."""
    with mpmath.workdps(DPS):
        top = 0
        Ls, Lt, L2, L4 = _log_m(s), _log_m(t), _log_m(q2), _log_m(q4)
        L = L2 + L4 - Ls - Lt
        if abs(mpmath.im(L)) > 1e-20:
            raise ValueError("box_two_mass_easy: Li2(1 - q2 q4/(s t)) off its principal "
                             "branch in this region (not implemented)")
        br = _add(_pow_eps(Ls, -1, 2), _pow_eps(Lt, -1, 2), _scale(_pow_eps(L2, -1, 2), -1),
                  _scale(_pow_eps(L4, -1, 2), -1))
        br = {j - 2: 2 * x for j, x in br.items()}
        li = sum(_li2_one_minus_ratio(q, x) for q in (q2, q4) for x in (s, t))
        br = _add(br, {0: -2 * li + 2 * mpmath.polylog(2, 1 - mpmath.exp(mpmath.re(L)))
                       - (Ls - Lt) ** 2})
        r = _mul(_r_gamma(top + 2), br, top)    # the 1/eps^2 terms cancel: from eps^-1
        return _complex(_scale(r, 1 / (mpmath.mpf(s) * t - mpmath.mpf(q2) * q4)), -1, top)


# pySecDec's examples/box1L/integrate_box1L.py prints this "Analytic Result" for
# s = 4, t = -0.75, s1 = 1.25, msq = 1 (10 digits): checked against our pySecDec run
BOX1L_DOCUMENTED = {-2: complex(-0.1428571429), -1: complex(0.6384337090),
                    0: complex(-0.426354612, 1.866502363)}
BOX1L_DOCUMENTED_REL = 1e-9        # the digits printed


def sunrise_massless(s, top=1) -> dict:
    """Massless two-loop sunrise, p^2 = s:

        I = -Gamma(-1+2eps) Gamma(1-eps)^3 / Gamma(3-3eps) (-s - i0)^(1-2eps),

    from two one-loop massless bubbles in turn: with 1/(q^2 + i0) = -1/(-q^2 - i0),
    int d^Dk/(i pi^{D/2}) 1/((-k^2)^a (-(k+p)^2)^b) = G(a,b) (-p^2)^(D/2-a-b),
    G(a,b) = Gamma(a+b-D/2) Gamma(D/2-a) Gamma(D/2-b) / (Gamma(a) Gamma(b) Gamma(D-a-b))
    (V. A. Smirnov, "Analytic Tools for Feynman Integrals", chapter 1);
    I = (-1)^3 G(1,1) G(1, 2-D/2) (-s)^(D-3)."""
    with mpmath.workdps(DPS):
        t = top + 2
        r = _mul(_gamma(-1, 2, t), _mul(_gamma(1, -1, t), _mul(_gamma(1, -1, t),
                                                               _gamma(1, -1, t), t), t), t)
        r = _mul(r, _inv(_gamma(3, -3, t), t), t)
        L = _log_m(s)
        r = _mul(r, _pow_eps(L, -2, t), top)       # (-s)^(1-2eps) = (-s) * (-s)^(-2eps)
        r = _scale(r, mpmath.mpf(s))       # -(-s): the integer power is real
        return _complex(r, -1, top)


def continuation(euclid: dict, s, top: int, s0=-1.0, power=(-2, -2)) -> dict:
    """An integral whose only scale is s, I(s) = C(eps) (-s - i0)^(a + b eps) with
    (a, b) = ``power``, at s from its coefficients at s0 < 0:
    I(s) = I(s0) ((-s - i0)/(-s0))^(a + b eps).  The default power is that of the two-loop
    massless vertices (mass dimension 2(4 - 2eps) - 12 = 2(-2 - 2eps))."""
    a, b = power
    with mpmath.workdps(DPS):
        L = _log_m(s) - mpmath.log(-mpmath.mpf(s0))
        f = _scale(_pow_eps(L, b, top + 6), (mpmath.mpf(s) / s0) ** a)   # a: an integer
        lo = min(euclid)
        r = _mul({j: mpmath.mpc(v) for j, v in euclid.items()}, f, top)
        return _complex(r, lo, top)


def sunrise_vacuum_equal(m, top=0) -> dict:
    """The equal-mass two-loop vacuum sunrise (p^2 = 0), to eps^0:

        I = Gamma(1+eps)^2 m^(2-4eps) [3/(2 eps^2) + 9/(2 eps) + 21/2 - 2 sqrt(3) Cl2(pi/3)]
            + O(eps),

    the constants identified by PSLQ (mpmath.pslq, basis 1, gamma_E, gamma_E^2, pi^2,
    sqrt(3) Cl2(pi/3)) from ``sunrise`` at 32 digits; the same structure as the general-mass
    result of A. I. Davydychev and J. B. Tausk, Nucl. Phys. B397 (1993) 123, whose finite
    part carries the Clausen function Cl2(pi/3) at equal masses.  A check of the 2-D
    quadrature (and of pySecDec)."""
    assert top <= 0
    with mpmath.workdps(DPS):
        br = {-2: mpmath.mpf(3) / 2, -1: mpmath.mpf(9) / 2,
              0: mpmath.mpf(21) / 2 - 2 * mpmath.sqrt(3) * mpmath.clsin(2, mpmath.pi / 3)}
        g = _gamma(1, 1, 2)
        r = _mul(_mul(g, g, 2), br, top)
        r = _mul(r, _scale(_pow_eps(mpmath.log(mpmath.mpf(m) ** 2), -2, 2),
                           mpmath.mpf(m) ** 2), top)
        return _complex(r, -2, top)


def vertex_2l_massless(kind: str, s) -> dict:
    """The massless two-loop vertices with p1^2 = p2^2 = 0, p3^2 = s, to eps^0:

        planar (ladder):   e^(-2 gamma eps) (-s - i0)^(-2-2eps)
                           [1/(4 eps^4) + 5 pi^2/(24 eps^2) + 29 zeta3/(6 eps) + 3 pi^4/32],
        crossed:           e^(-2 gamma eps) (-s - i0)^(-2-2eps)
                           [1/eps^4 - pi^2/eps^2 - 83 zeta3/(3 eps) - 59 pi^4/120],

    R. J. Gonsalves, Phys. Rev. D28 (1983) 1542 (also G. Kramer and B. Lampe, J. Math. Phys.
    28 (1987) 945; T. Gehrmann, T. Huber and D. Maitre, Phys. Lett. B622 (2005) 295,
    hep-ph/0507061, to higher orders).  The constants are quoted from that literature; the
    normalization factor e^(-2 gamma eps) (and the overall sign, +1 = (-1)^6 in pySecDec's
    convention) were fixed by comparison with pySecDec 1.6.6 at s = -1: every coefficient of
    both agrees within 2.1 of pySecDec's standard deviations (1e-9 .. 1e-7), while
    Gamma(1+eps)^2, r_Gamma^2 or 1/Gamma(1-eps)^2 in its place miss the eps^-2 coefficient by
    0.4 (tests/test_dimreg_references.py).  The physical cases continue (-s - i0) exactly."""
    with mpmath.workdps(DPS):
        pi, z3 = mpmath.pi, mpmath.zeta(3)
        if kind == "planar":
            br = {-4: mpmath.mpf(1) / 4, -3: 0, -2: 5 * pi ** 2 / 24, -1: 29 * z3 / 6,
                  0: 3 * pi ** 4 / 32}
        elif kind == "crossed":
            br = {-4: mpmath.mpf(1), -3: 0, -2: -pi ** 2, -1: -83 * z3 / 3,
                  0: -59 * pi ** 4 / 120}
        else:
            raise ValueError(kind)
        L = _log_m(s)
        f = _scale(_exp({1: -2 * mpmath.euler - 2 * L}, 4), 1 / mpmath.mpf(s) ** 2)
        return _complex(_mul(f, br, 0), -4, 0)


# ------------------------------------------------------------------------------- quadratures
def _real_roots_01(a, b, c):
    """Real roots in (0, 1) of a x^2 + b x + c."""
    if a == 0:
        return [] if b == 0 else [r for r in [-c / b] if 0 < r < 1]
    d = b * b - 4 * a * c
    if d < 0:
        return []
    sq = mpmath.sqrt(d)
    return sorted(r for r in ((-b - sq) / (2 * a), (-b + sq) / (2 * a)) if 0 < r < 1)


def bubble(s, m1, m2, powers=(1, 1), top=1) -> dict:
    """One-loop bubble with masses m1, m2 and powers (nu1, nu2), p^2 = s:

        I = (-1)^nu Gamma(nu - 2 + eps)/(Gamma(nu1) Gamma(nu2))
            int_0^1 x^(nu1-1) (1-x)^(nu2-1) (F - i0)^(-(nu - 2) - eps) dx,
        F = x m1^2 + (1-x) m2^2 - s x (1-x)        (U = 1 on the simplex),

    the eps-expansion under the integral, (F - i0)^(-eps) = sum_n (-eps)^n log^n(F - i0)/n!,
    each moment by mpmath.quad split at the roots of F (log(F - i0) = log|F| - i pi where
    F < 0).  For nu > 2 F must stay positive (the Euclidean region)."""
    n1, n2 = powers
    k = n1 + n2 - 2
    with mpmath.workdps(DPS):
        s, m1, m2 = mpmath.mpf(s), mpmath.mpf(m1), mpmath.mpf(m2)
        a, b, c = s, m1 ** 2 - m2 ** 2 - s, m2 ** 2
        roots = _real_roots_01(a, b, c)
        if k > 0 and roots:
            raise ValueError("bubble: F vanishes inside (0, 1); only nu = 2 there")
        pts = [mpmath.mpf(0), *roots, mpmath.mpf(1)]
        poles = 1 if k == 0 else 0
        nmax = top + poles

        def logF(x):
            F = a * x * x + b * x + c
            return mpmath.log(F) if F > 0 else mpmath.log(-F) - 1j * mpmath.pi

        def moment(n):
            return mpmath.quad(lambda x: x ** (n1 - 1) * (1 - x) ** (n2 - 1)
                               * (a * x * x + b * x + c) ** (-k) * logF(x) ** n, pts)
        integral = {n: (-1) ** n * moment(n) / mpmath.factorial(n) for n in range(nmax + 1)}
        pref = _scale(_gamma(k, 1, top + 1 + poles),
                      (-1) ** (n1 + n2) / (mpmath.gamma(n1) * mpmath.gamma(n2)))
        r = _mul(pref, integral, top)
        return _complex(r, -poles, top)


def sunrise(s, m1, m2, m3, top=0, dps=20) -> dict:
    """Two-loop sunrise with masses m1, m2, m3 below threshold (s < (m1+m2+m3)^2, F > 0):

        I = -Gamma(-1 + 2eps) J(eps),
        J = int delta(1 - sum x) U^(-3+3eps) F^(1-2eps),
        U = x1 x2 + x2 x3 + x3 x1,  F = U (x1 m1^2 + x2 m2^2 + x3 m3^2) - s x1 x2 x3.

    The integrand is projective (degree -3), so J is the sum of the primary sectors
    "x_c largest" (x_c = 1, the others in [0, 1]; Binoth and Heinrich, Nucl. Phys. B585
    (2000) 741), each split once more by which of the other two is larger: x_a = x,
    x_b = x u (x, u in [0, 1], Jacobian x).  Then U = x A, F = x B with
    A = 1 + u + x u,  B = A (x m_a^2 + x u m_b^2 + m_c^2) - s x u,  and

        J = sum_{(a,b,c) permutations} int_0^1 du int_0^1 dx x^(-1+eps) h(x, u),
        h = A^(-3+3eps) B^(1-2eps),  h(0, u) = (1+u)^(-2+eps) m_c^(2-4eps):

    the subdivergence x -> 0 (the (a, b) subloop's UV pole) gives
    (1/eps) int_0^1 h(0, u) du = (1/eps) m_c^(2-4eps) (2^(eps-1) - 1)/(eps - 1), exactly,
    and int int x^(-1+eps) (h(x,u) - h(0,u)) is expanded in eps under the integral
    (2-D mpmath.quad, ``dps`` digits: the reference is good to ~1e-15)."""
    import itertools
    with mpmath.workdps(dps):
        s = mpmath.mpf(s)
        ms = [mpmath.mpf(m1) ** 2, mpmath.mpf(m2) ** 2, mpmath.mpf(m3) ** 2]
        perms = list(itertools.permutations(range(3)))
        # J to order top + 1 (Gamma(-1 + 2 eps) has a simple pole)
        jtop = top + 1
        # the subtraction term: sum over perms of m_c^(2 - 4eps) (2^(eps-1) - 1)/(eps - 1)
        half = _scale(_pow_eps(mpmath.log(2), 1, jtop + 1), mpmath.mpf(1) / 2)
        num = _add(half, {0: -1})
        sub_u = _mul(num, _inv({0: mpmath.mpf(-1), 1: mpmath.mpf(1)}, jtop + 1), jtop + 1)
        msum = {}
        for (a, b, c) in perms:
            msum = _add(msum, _scale(_pow_eps(mpmath.log(ms[c]), -2, jtop + 1), ms[c]))
        pole_part = _mul(msum, sub_u, jtop + 1)
        pole_part = {j - 1: x for j, x in pole_part.items() if j - 1 <= jtop}   # the 1/eps

        # permutations with equal masses give equal integrands: each distinct one once
        weights: dict = {}
        for (a, b, c) in perms:
            key = (ms[a], ms[b], ms[c])
            weights[key] = weights.get(key, 0) + 1
        fact = [mpmath.factorial(n) for n in range(jtop + 1)]
        memo: dict = {}

        def integrands(x, u):
            """The integrands of every order at (x, u) (mpmath.quad visits the same nodes for
            each order: computed once)."""
            if (x, u) in memo:
                return memo[(x, u)]
            out = [mpmath.mpf(0)] * (jtop + 1)
            if x != 0:
                lx = mpmath.log(x)
                A = 1 + u + x * u
                lA, l1u = mpmath.log(A), mpmath.log(1 + u)
                for (ma, mb, mc), w in weights.items():
                    B = A * (x * ma + x * u * mb + mc) - s * x * u
                    h, e = B / A ** 3, 3 * lA - 2 * mpmath.log(B)
                    h0, e0 = mc / (1 + u) ** 2, l1u - 2 * mpmath.log(mc)
                    diff = [(h * e ** n - h0 * e0 ** n) / fact[n] for n in range(jtop + 1)]
                    for order in range(jtop + 1):
                        out[order] += w * mpmath.fsum(lx ** (order - n) / fact[order - n]
                                                      * diff[n] for n in range(order + 1))
                out = [v / x for v in out]
            memo[(x, u)] = out
            return out

        def remainder(order):
            return mpmath.quad(lambda x, u: integrands(x, u)[order], [0, 1], [0, 1])

        rem = {o: remainder(o) for o in range(jtop + 1)}
        J = _add(pole_part, rem)
        r = _mul(_scale(_gamma(-1, 2, jtop), -1), J, top)
        return _complex(r, -2, top)


# ------------------------------------------------------------------------------- references
REFERENCE_SOURCES = {
    "mpmath-1d:bubble": "bubble: Feynman parameter integral of log^n(F - i0) by mpmath.quad "
                        "(30 digits), Gamma prefactor expanded",
    "closed:bubble_massless": "Gamma(eps) Gamma(1-eps)^2/Gamma(2-2eps) (-s-i0)^(-eps)",
    "closed:triangle_massless": "r_Gamma/eps^2 (-s-i0)^(-eps)/s (Ellis-Zanderighi "
                                "arXiv:0712.1851 triangle 1, times r_Gamma)",
    "closed:triangle_2off": "r_Gamma/eps^2 [(-q2)^(-eps) - (-q3)^(-eps)]/(q2 - q3) "
                            "(Ellis-Zanderighi triangle 2, times r_Gamma)",
    "closed:box_massless": "Bern-Dixon-Kosower hep-ph/9306240 / Ellis-Zanderighi box 1, "
                           "times r_Gamma, to eps^0",
    "closed:box_one_mass": "Bern-Dixon-Kosower / Ellis-Zanderighi box 2, times r_Gamma, to "
                           "eps^0",
    "closed:box_two_mass_easy": "Bern-Dixon-Kosower / Ellis-Zanderighi box 4, times r_Gamma, "
                                "to eps^0",
    "closed:box1L_documented": "pySecDec 1.6.6 examples/box1L 'Analytic Result' (10 digits)",
    "closed:sunrise_massless": "-Gamma(-1+2eps) Gamma(1-eps)^3/Gamma(3-3eps) (-s-i0)^(1-2eps)"
                               " (two massless bubbles in turn)",
    "closed:vertex_planar": "Gonsalves PRD 28 (1983) 1542: e^(-2 gamma eps) (-s)^(-2-2eps) "
                            "[1/(4eps^4) + 5pi^2/(24eps^2) + 29zeta3/(6eps) + 3pi^4/32], the "
                            "normalization fixed and checked against pySecDec",
    "closed:vertex_crossed": "Gonsalves PRD 28 (1983) 1542: e^(-2 gamma eps) (-s)^(-2-2eps) "
                             "[1/eps^4 - pi^2/eps^2 - 83zeta3/(3eps) - 59pi^4/120], the "
                             "normalization fixed and checked against pySecDec",
    "mpmath-2d:sunrise": "sunrise below threshold: sector decomposition by hand, the "
                         "subdivergence subtracted analytically, 2-D mpmath.quad (20 digits)",
    "pysecdec": "pySecDec 1.6.6 (Borowka et al., CPC 222 (2018) 313), Qmc "
                "(tests/data/dimreg_references.json)",
}

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                    "dimreg_references.json")
MPMATH_REL = 1e-12      # claimed accuracy of the mpmath references (relative to max |c_j|)
_PSD: dict = {}
_CACHE: dict = {}


def pysecdec_data() -> dict:
    """tests/data/dimreg_references.json (tools/make_dimreg_references.py)."""
    if not _PSD:
        with open(DATA) as f:
            _PSD.update(json.load(f))
    return _PSD


def pysecdec_coefficients(name: str) -> tuple[dict, dict]:
    """pySecDec's coefficients and their errors ({j: complex}, {j: complex with the real and
    imaginary standard-deviation estimates}) of a case, m = 1 units."""
    e = pysecdec_data()["cases"][name]
    if "coefficients" not in e:
        raise KeyError(f"{name}: pySecDec failed ({e.get('failure', '?')})")
    return ({int(j): complex(*v) for j, v in e["coefficients"].items()},
            {int(j): complex(*v) for j, v in e["errors"].items()})


def pysecdec_check(case) -> tuple[dict, dict]:
    """pySecDec's coefficients of a case and their errors (standard deviations, re and im):
    from the JSON file, or for the cases of CONTINUED_FROM the Euclidean partner's times the
    exact (-s - i0)^(-2 - 2eps)/(-s0)^(-2 - 2eps), with the error bound of
    ``_continuation_bound`` in both parts."""
    if case["name"] not in CONTINUED_FROM:
        return pysecdec_coefficients(case["name"])
    base = CASES_BY_NAME[CONTINUED_FROM[case["name"]]]
    c, e = pysecdec_coefficients(base["name"])
    s0, s = base["kinematics"]["s"], case["kinematics"]["s"]
    cc = continuation(c, s, case["eps_order"], s0)
    bound = _continuation_bound(s, s0, e, case["eps_order"])
    return cc, {j: complex(bound[j], bound[j]) for j in cc}


def closed_reference(case) -> dict | None:
    """The mpmath reference of a case, {j: complex} in m = 1 units; None for pySecDec-only
    cases."""
    key = (case["name"], case["reference"], tuple(sorted(case["kinematics"].items())))
    if key not in _CACHE:
        _CACHE[key] = _closed_reference(case)
    return _CACHE[key]


def _closed_reference(case) -> dict | None:
    ref, k, top = case["reference"], case["kinematics"], case["eps_order"]
    if ref == "mpmath-1d:bubble":
        if case["diagram"] == "bubble_eq":
            m1 = m2 = k["m"]
        elif case["diagram"] == "bubble_one_mass":
            m1, m2 = k["m"], 0.0
        else:
            m1, m2 = k["m1"], k["m2"]
        return bubble(k["s"], m1, m2, case["powers"], top)
    if ref == "closed:bubble_massless":
        return bubble_massless(k["s"], top)
    if ref == "closed:triangle_massless":
        return triangle_massless(k["s"], top)
    if ref == "closed:triangle_2off":
        return triangle_2off(k["q2"], k["q3"], top)
    if ref == "closed:box_massless":
        return box_massless(k["s"], k["t"])
    if ref == "closed:box_one_mass":
        return box_one_mass(k["s"], k["t"], k["q4"])
    if ref == "closed:box_two_mass_easy":
        return box_two_mass_easy(k["s"], k["t"], k["q2"], k["q4"])
    if ref == "closed:box1L_documented":
        return dict(BOX1L_DOCUMENTED)
    if ref == "closed:sunrise_massless":
        return sunrise_massless(k["s"], top)
    if ref == "closed:vertex_planar":
        return vertex_2l_massless("planar", k["s"])
    if ref == "closed:vertex_crossed":
        return vertex_2l_massless("crossed", k["s"])
    if ref == "mpmath-2d:sunrise":
        if case["diagram"] == "sunrise_eq":
            ms = (k["m"],) * 3
        else:
            ms = (k["m1"], k["m2"], k["m3"])
        return sunrise(k["s"], *ms, top=top)
    return None


def reference(case) -> tuple[dict, dict, str]:
    """(coefficients, errors, source) in m = 1 units, {j: complex} each: the mpmath value where
    the case has one (error MPMATH_REL * max |c_j|; the documented box1L digits 1e-9), else
    pySecDec's value with 3 times its standard-deviation estimate (each of re and im)."""
    v = closed_reference(case)
    src = REFERENCE_SOURCES[case["reference"]]
    if v is not None:
        rel = BOX1L_DOCUMENTED_REL if case["reference"] == "closed:box1L_documented" \
            else MPMATH_REL
        scale = max(abs(x) for x in v.values())
        return v, {j: complex(rel * scale, rel * scale) for j in v}, src
    c, e = pysecdec_coefficients(case["name"])
    return c, {j: 3 * e[j] for j in c}, src


def _continuation_bound(s, s0, err: dict, top: int) -> dict:
    """An upper bound of the error of ``continuation`` from pySecDec's errors: order j of the
    product sums f_n * c_(j-n); |error_j| <= sum_n |f_n| |err_(j-n)|."""
    with mpmath.workdps(DPS):
        L = _log_m(s) - mpmath.log(-mpmath.mpf(s0))
        f = _scale(_pow_eps(L, -2, top + 6), (mpmath.mpf(s) / s0) ** -2)
        lo = min(err)
        return {j: float(sum(abs(f.get(n, 0)) * abs(err.get(j - n, 0))
                             for n in range(0, j - lo + 1)))
                for j in range(lo, top + 1)}
