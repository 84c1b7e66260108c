"""Dimensional regularization: loopint's Laurent coefficients in eps against independent
references.

The cases of tests/dimreg_points.py (one-loop bubbles with UV poles, massless triangles and
boxes with soft and collinear 1/eps^2, the massive and massless two-loop sunrise, the
massless two-loop planar and crossed vertices with 1/eps^4, pySecDec's documented box1L and
triangle2L examples; Euclidean and physical kinematics) are computed by

    loopint.compute(Diagram.from_graph(..., dimension="4 - 2*eps", powers=...),
                    kinematics=..., eps_order=k, rtol=R)          (R: 1e-6 one loop, 1e-4 two)

and compared, order by order from the leading pole to eps^k, with the references
(closed forms and mpmath quadratures, else pySecDec 1.6.6; tests/test_dimreg_references.py
checks those against each other).  Asserted per case and unit system:

* converged, and a coefficient for every order of the reference (extra leading orders
  must vanish within their errors);
* right: |c_j - ref_j| <= 5 |error_j| + the reference's allowance + 1e-12 max|ref|;
* honest and useful errors: |error_j| <= 10 rtol max_i |ref_i| (not absurdly large; the
  true error within 5 errors is the previous line).

"GeV" units (masses * 150, invariants * 150^2) for a few cases in the default run and for
the others under ``slow``: there the reference is ``rescale`` of the m = 1 coefficients, the
orders mixing by lam^(4L - 2nu) exp(-2 L eps log lam).
"""

from __future__ import annotations

import functools
import os
import sys
from math import factorial
from pathlib import Path

import numpy as np
import pytest

import loopint

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dimreg_points as dp  # noqa: E402

RTOL = {1: 1e-6, 2: 1e-4}
UNITS = ("m=1", "GeV")
# GeV units in the default run for these (one of each kind: a physical massive bubble, a
# squared propagator, a massless physical triangle, a two-loop closed form, a box on the
# deformed contour)
GEV_DEFAULT = {"B_12_phys", "B_pow21_eucl", "T0_phys", "SS0_eucl", "D1_phys"}


@functools.lru_cache(maxsize=None)
def diagram(name: str):
    c = dp.CASES_BY_NAME[name]
    return loopint.Diagram.from_graph(internal_lines=c["internal_lines"],
                                      external_lines=c["external_lines"],
                                      scalar_products=c["scalar_products"],
                                      dimension=dp.DIMENSION, powers=c["powers"])


@functools.lru_cache(maxsize=None)
def run(name: str, unit: str):
    c = dp.CASES_BY_NAME[name]
    kin = c["kinematics"] if unit == "m=1" else dp.scaled_kinematics(c["kinematics"])
    return loopint.compute(diagram(name), kinematics=kin, eps_order=c["eps_order"],
                           rtol=RTOL[c["loops"]])


def expected(name: str, unit: str) -> tuple[dict, dict, str]:
    """(coefficients, allowance, source) in the unit system: the m = 1 reference, rescaled
    for GeV (the allowance through the same series with absolute values)."""
    c = dp.CASES_BY_NAME[name]
    ref, err, src = dp.reference(c)
    if unit == "m=1":
        return ref, {j: abs(e) for j, e in err.items()}, src
    nu = dp.nu(c)
    lam = dp.LAMBDA
    a, sc = 2 * c["loops"] * np.log(lam), lam ** (4 * c["loops"] - 2 * nu)
    lo = min(err)
    allow = {j: sc * sum(a ** n / factorial(n) * abs(err[j - n]) for n in range(0, j - lo + 1))
             for j in err}
    return dp.rescale(ref, c["loops"], nu, lam), allow, src


def problems(name: str, unit: str) -> list[str]:
    c = dp.CASES_BY_NAME[name]
    r = run(name, unit)
    ref, allow, src = expected(name, unit)
    rtol = RTOL[c["loops"]]
    scale = max(abs(v) for v in ref.values())
    head = f"{name} [{unit}] ({c['region']}, reference {src})"
    out = []
    if not r.converged:
        out.append(f"{head}: not converged ({r.status})")
    got, errs = r.coefficients or {}, r.coefficient_errors or {}
    for j in sorted(set(ref) | set(got)):
        if j not in got:
            if j <= c["eps_order"]:
                out.append(f"{head}: no coefficient of eps^{j} (reference {ref[j]!r})")
            continue
        if j > c["eps_order"]:
            continue            # more orders than asked: not checked
        v, e = complex(got[j]), complex(errs.get(j, np.inf))
        err = float(np.hypot(e.real, e.imag))
        want = ref.get(j, 0j)
        diff = abs(v - want)
        line = (f"eps^{j}: {v!r} +- {err:.3g} vs {want!r} (+- {allow.get(j, 0):.3g}), "
                f"|diff| = {diff:.3g}")
        if not diff <= 5 * err + allow.get(j, 0) + 1e-12 * scale:
            out.append(f"{head}: wrong beyond 5 errors: {line}")
        if not err <= 10 * rtol * scale:
            out.append(f"{head}: error larger than 10 rtol max|c|: {line}")
    return out


def _check(name: str, units=UNITS):
    found = [p for u in units for p in problems(name, u)]
    assert not found, "\n".join(found)


def _is_slow(c) -> bool:
    return c["loops"] == 2 and c["diagram"] != "sunrise_massless"


# the expensive cases take 5-25 s each on a 2-core CPU, triangle2L minutes (the GPU
# benchmark `loopint bench --suite dimreg` runs all of them): LOOPINT_DIMREG_ALL=1 runs them
ALL = pytest.mark.skipif(not os.environ.get("LOOPINT_DIMREG_ALL"),
                         reason="expensive on a CPU; set LOOPINT_DIMREG_ALL=1")
DEFAULT = [pytest.param(c["name"], id=c["name"]) for c in dp.CASES if not _is_slow(c)]
SLOW = [pytest.param(c["name"], id=c["name"], marks=[pytest.mark.slow, ALL]) for c in dp.CASES
        if _is_slow(c)]


@pytest.mark.parametrize("name", DEFAULT)
def test_dimreg_case(name):
    """The one-loop cases and the massless sunrise in m = 1 units, a few also in GeV
    units."""
    _check(name, UNITS if name in GEV_DEFAULT else ("m=1",))


@pytest.mark.parametrize("name", SLOW)
def test_dimreg_case_slow(name):
    """The massive sunrises, the two-loop massless vertices, triangle2L (m = 1 units)."""
    _check(name, ("m=1",))


@pytest.mark.slow
@ALL
@pytest.mark.parametrize("name", [c["name"] for c in dp.CASES
                                  if c["name"] not in GEV_DEFAULT
                                  and (c["loops"] == 1 or c["diagram"].startswith("sunrise"))])
def test_dimreg_case_gev_units(name):
    """The other one-loop cases and the sunrises in GeV units: the coefficients mix."""
    _check(name, ("GeV",))


def test_unit_systems_mix_orders():
    """The coefficients in GeV units are NOT the m = 1 ones times one power of lambda: the
    GeV references are rescale() of the m = 1 ones, here the massive bubble (1/eps pole: the
    eps^0 coefficient shifts by -2 log(150))."""
    ref1, _, _ = expected("B_12_eucl", "m=1")
    ref2, _, _ = expected("B_12_eucl", "GeV")
    assert ref2[-1] == pytest.approx(ref1[-1])
    assert ref2[0] == pytest.approx(ref1[0] - 2 * np.log(dp.LAMBDA) * ref1[-1])


def test_result_fields():
    """coefficients and coefficient_errors are dicts {int: complex} from the leading pole to
    eps_order (the massless triangle: -2 .. 1)."""
    r = run("T0_eucl", "m=1")
    assert sorted(r.coefficients) == [-2, -1, 0, 1]
    assert sorted(r.coefficient_errors) == sorted(r.coefficients)
    for j in r.coefficients:
        assert isinstance(j, int)
        complex(r.coefficients[j])
        e = complex(r.coefficient_errors[j])
        assert e.real >= 0 and e.imag >= 0


def _series(g, shift: int, orders: range) -> dict:
    """Laurent coefficients c_j = [eps^(j + shift)] g(eps) of g(eps) / eps^shift (mpmath)."""
    import mpmath
    mpmath.mp.dps = 30
    t = mpmath.taylor(g, 0, orders.stop + shift)
    return {j: complex(t[j + shift]) for j in orders}


@pytest.mark.parametrize("case", ["bubble, c0 = 0", "bubble, c0 = 0, GeV", "triangle"])
def test_every_coefficient_meets_its_tolerance_after_the_prefactor(case):
    """The engine meets the tolerance on the bare parametric series; the Laurent coefficients
    are its products with the prefactor's series, and a product can cancel far below its
    terms: the massless bubble at s = -exp(2 - gamma_E) has c_0 = 2 - gamma_E - log(-s) = 0,
    the one-off-shell massless triangle's eps^2 coefficient is 0.03 of its terms.  Every
    coefficient must meet max(rtol |c_j|, 1e-3 rtol max_i |c_i|) with its error, and the
    closed form (Gamma functions, mpmath) within that, in two unit systems."""
    import mpmath
    G = mpmath.gamma
    if case.startswith("bubble"):
        lines, ext, sp = [["0", [1, 2]], ["0", [2, 1]]], [["p1", 1], ["p2", 2]], {"p1*p1": "s"}
        s = -float(mpmath.exp(2 - mpmath.euler)) * (91.19 ** 2 if "GeV" in case else 1.0)
        order, rtol = 1, 1e-3
        ref = _series(lambda e: G(1 + e) * G(1 - e) ** 2 / G(2 - 2 * e) * (-s) ** (-e), 1,
                      range(-1, order + 1))
    else:
        lines = [["0", [1, 2]], ["0", [2, 3]], ["0", [3, 1]]]
        ext, sp = [["p1", 1], ["p2", 2], ["p3", 3]], {"p1*p1": "0", "p2*p2": "0",
                                                     "p1*p2": "s/2"}
        s, order, rtol = -2.2, 2, 1e-6
        ref = _series(lambda e: -G(1 + e) * G(1 - e) ** 2 / G(1 - 2 * e) * (-s) ** (-1 - e), 2,
                      range(-2, order + 1))
    d = loopint.Diagram.from_graph(internal_lines=lines, external_lines=ext,
                                   scalar_products=sp, dimension="4 - 2*eps")
    r = loopint.compute(d, kinematics={"s": s}, eps_order=order, rtol=rtol)
    assert r.converged, r.status
    biggest = max(abs(v) for v in ref.values())
    for j, want in ref.items():
        tol = rtol * max(abs(want), 1e-3 * biggest)
        got, err = complex(r.coefficients[j]), complex(r.coefficient_errors[j])
        assert max(abs(err.real), abs(err.imag)) <= 1.01 * tol, (j, got, err, tol)
        assert abs(got - want) <= tol, (j, got, want, tol)
