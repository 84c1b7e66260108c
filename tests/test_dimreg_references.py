"""The references of the dimensional-regularization test set against each other.

tests/dimreg_points.py gives each case's Laurent coefficients in eps from closed forms or
low-dimensional mpmath integrals; tests/data/dimreg_references.json
(tools/make_dimreg_references.py) gives pySecDec 1.6.6's.  Asserted here, without loopint:

* every mpmath coefficient equals pySecDec's within 3 of pySecDec's standard deviations
  (real and imaginary part each) plus 1e-12 of the case's largest coefficient;
* ``rescale`` (the coefficients mix under a change of units, the mass dimension
  L (4 - 2 eps) - 2 nu depending on eps) against the closed forms evaluated directly in
  "GeV" units, and against pySecDec's own run in those units;
* the pieces the closed forms rest on: the eps-expansion helpers against mpmath's Gamma
  function, the -i0 branch of Li2(1 - A/B) against an explicit small imaginary part, the
  analytic continuation in s against the closed forms, the sunrise's 2-D quadrature against
  its PSLQ-identified closed form.
"""

from __future__ import annotations

import sys
from pathlib import Path

import mpmath
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dimreg_points as dp  # noqa: E402

HAS_MPMATH = [c for c in dp.CASES
              if c["reference"].split(":")[0] in ("closed", "mpmath-1d", "mpmath-2d")]
PSD_CASES = [c for c in dp.CASES if c["name"] not in dp.CONTINUED_FROM]


def _slow_if_2d(c):
    # the 2-D sunrise quadratures take 1-6 s each
    marks = [pytest.mark.slow] if c["reference"] == "mpmath-2d:sunrise" else []
    return pytest.param(c["name"], id=c["name"], marks=marks)


def _agree(a: dict, b: dict, allow: dict, what: str) -> list[str]:
    """Problems where coefficients a and b differ by more than allow (re and im each); orders
    present in only one of them must vanish there within the allowance."""
    out = []
    for j in sorted(set(a) | set(b)):
        x, y, tol = a.get(j, 0j), b.get(j, 0j), allow[j]
        if not (abs(x.real - y.real) <= tol.real and abs(x.imag - y.imag) <= tol.imag):
            out.append(f"{what} eps^{j}: {x!r} vs {y!r}, |diff| = {abs(x - y):.3g}, "
                       f"allowed {tol!r}")
    return out


# ------------------------------------------------------------------------------- the set
def test_the_set():
    """Unique names, the classes of integrals asked for, and pySecDec's file made for these
    very cases (the same kinematics, powers and order)."""
    names = [c["name"] for c in dp.CASES]
    assert len(names) == len(set(names)) >= 25
    for c in dp.CASES:
        assert set(c) >= {"name", "loops", "internal_lines", "external_lines",
                          "scalar_products", "powers", "kinematics", "eps_order", "region",
                          "reference"}, c["name"]
        assert len(c["powers"]) == len(c["internal_lines"])
        assert c["region"] in ("euclidean", "physical")
        assert c["reference"] in dp.REFERENCE_SOURCES
    data = dp.pysecdec_data()
    assert data["pysecdec_version"] == "1.6.6"
    # pySecDec's generator runs for hours on the two-loop cases: the file may lack a case;
    # the cases it holds must match, and the planar vertex (a README goal) must be there
    assert "V2P_eucl" in data["cases"]
    for c in PSD_CASES:
        if c["name"] not in data["cases"]:
            continue
        e = data["cases"][c["name"]]
        assert e["kinematics"] == c["kinematics"], c["name"]
        assert e["eps_order"] == c["eps_order"], c["name"]
        assert e["definition"]["powers"] == c["powers"], c["name"]
        assert e["definition"]["loops"] == c["loops"], c["name"]
    # a pySecDec-only case must have pySecDec's numbers, every order asked for
    for c in dp.CASES:
        if c["reference"] == "pysecdec":
            coeffs, errors, _ = dp.reference(c)
            assert min(coeffs) <= -1 and max(coeffs) == c["eps_order"], c["name"]


# ------------------------------------------------------------------------------- mpmath vs pySecDec
@pytest.mark.parametrize("name", [_slow_if_2d(c) for c in HAS_MPMATH])
def test_mpmath_references_agree_with_pysecdec(name):
    """Every coefficient from the leading pole to eps_order: |diff| <= 3 sigma + 1e-12 of the
    largest coefficient (1e-9 for the 10 printed digits of pySecDec's box1L example); the
    physical two-loop massless vertices against pySecDec's Euclidean value continued."""
    c = dp.CASES_BY_NAME[name]
    ref, ref_err, _ = dp.reference(c)
    psd, psd_err = dp.pysecdec_check(c)
    allow = {j: 3 * psd_err.get(j, 0j) + ref_err.get(j, ref_err[max(ref_err)])
             for j in set(ref) | set(psd)}
    assert max(psd) == c["eps_order"] and min(psd) <= min(ref)
    problems = _agree(ref, psd, allow, name)
    assert not problems, "\n".join(problems)


def _rescale_allowance(err: dict, loops: int, nu: int, lam: float) -> dict:
    """The errors of ``rescale`` of coefficients with these errors (each order a sum of the
    lower ones times positive factors of one sign pattern: bound by absolute values)."""
    a = 2 * loops * np.log(lam)
    sc = lam ** (4 * loops - 2 * nu)
    lo = min(err)
    return {j: sc * sum(a ** n / mpmath.factorial(n) * complex(err[j - n])
                        for n in range(0, j - lo + 1)) for j in err}


@pytest.mark.parametrize("name", [c["name"] for c in PSD_CASES
                                  if c["loops"] == 1 or c["diagram"].startswith("sunrise")])
def test_pysecdec_unit_systems_agree_through_rescale(name):
    """pySecDec's own run in GeV units equals ``rescale`` of its m = 1 run (both with their
    errors, plus 1e-12 of the largest coefficient for rounding)."""
    c = dp.CASES_BY_NAME[name]
    e = dp.pysecdec_data()["cases"][name]
    if "failure" in e:
        pytest.skip(f"pySecDec failed: {e['failure']}")
    c1, e1 = dp.pysecdec_coefficients(name)
    c2 = {int(j): complex(*v) for j, v in e["coefficients_GeV"].items()}
    e2 = {int(j): complex(*v) for j, v in e["errors_GeV"].items()}
    nu = dp.nu(c)
    mapped = dp.rescale(c1, c["loops"], nu, dp.LAMBDA)
    mapped_err = _rescale_allowance(e1, c["loops"], nu, dp.LAMBDA)
    scale = max(abs(x) for x in c2.values())
    allow = {j: 3 * (mapped_err[j] + e2[j]) + 1e-12 * scale * (1 + 1j) for j in c2}
    problems = _agree(mapped, c2, allow, name)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------- rescale
RESCALE_CASES = [c["name"] for c in HAS_MPMATH
                 if c["reference"] not in ("closed:box1L_documented", "mpmath-2d:sunrise")]


@pytest.mark.parametrize("name", RESCALE_CASES)
def test_rescale_against_closed_form_in_gev_units(name):
    """The closed form (or 1-D quadrature) evaluated at the GeV kinematics equals ``rescale``
    of its m = 1 coefficients, to 1e-12 of the largest coefficient."""
    c = dp.CASES_BY_NAME[name]
    gev = dict(c, kinematics=dp.scaled_kinematics(c["kinematics"]), name=name + "@GeV")
    direct = dp.closed_reference(gev)
    mapped = dp.rescale(dp.closed_reference(c), c["loops"], dp.nu(c), dp.LAMBDA)
    scale = max(abs(x) for x in direct.values())
    allow = {j: 1e-12 * scale * (1 + 1j) for j in direct}
    problems = _agree(mapped, direct, allow, name)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_rescale_of_the_sunrise_quadrature():
    """The same for the 2-D sunrise quadrature (masses 1, 2, 3 at p^2 = 4) and a scale that
    is not LAMBDA: the quadrature at masses * 7 equals rescale(..., 7)."""
    c = dp.CASES_BY_NAME["SS_123_below"]
    k = c["kinematics"]
    direct = dp.sunrise(k["s"] * 49, k["m1"] * 7, k["m2"] * 7, k["m3"] * 7)
    mapped = dp.rescale(dp.closed_reference(c), 2, 3, 7.0)
    scale = max(abs(x) for x in direct.values())
    assert not _agree(mapped, direct, {j: 1e-12 * scale * (1 + 1j) for j in direct}, "SS")


def test_rescale_by_hand():
    """rescale of a pure pole 1/eps: lam^(4L - 2nu) (1/eps - 2 L log(lam) + 2 L^2 log^2(lam)
    eps)."""
    out = dp.rescale({-1: 1.0, 0: 0.0, 1: 0.0}, 1, 2, 10.0)
    lg = np.log(10.0)
    assert out[-1] == pytest.approx(1.0, rel=1e-15)
    assert out[0] == pytest.approx(-2 * lg, rel=1e-15)
    assert out[1] == pytest.approx(2 * lg ** 2, rel=1e-15)
    out = dp.rescale({-2: 1.0, -1: 0.0}, 2, 3, 10.0)      # two loops, nu = 3: lam^2
    assert out[-2] == pytest.approx(100.0, rel=1e-15)
    assert out[-1] == pytest.approx(-400 * lg, rel=1e-15)


# ------------------------------------------------------------------------------- the pieces
@pytest.mark.parametrize("n,a", [(1, 1), (1, -1), (1, -2), (0, 1), (-1, 2), (2, -2), (3, -3)])
def test_gamma_series_against_mpmath(n, a):
    """The Laurent series of Gamma(n + a eps) (to eps^8) summed at small eps, real and
    complex, against mpmath.gamma: the truncation leaves O(eps^9) ~ 1e-27."""
    with mpmath.workdps(40):
        g = dp._gamma(n, a, 8)
        for e in (mpmath.mpf("1e-3"), mpmath.mpf("-2e-3"), mpmath.mpc(0, "1.5e-3")):
            series = mpmath.fsum(c * e ** j for j, c in g.items())
            exact = mpmath.gamma(n + a * e)
            assert abs(series - exact) <= mpmath.mpf("1e-20") * abs(exact)


@pytest.mark.parametrize("a,b", [(1.5, 5.0), (1.5, -2.0), (-3.0, 2.0), (2.0, 1.0),
                                 (-1.0, -4.0), (4.0, -0.5)])
def test_li2_branch_against_explicit_imaginary_part(a, b):
    """Li2(1 - A/B), A = -a - i0, B = -b - i0, against the principal branch with A, B given
    a small negative imaginary part d (extrapolated linearly from d and d/2)."""
    with mpmath.workdps(40):
        def direct(d):
            A, B = mpmath.mpc(-a, -d), mpmath.mpc(-b, -d)
            return mpmath.polylog(2, 1 - A / B)
        d = mpmath.mpf("1e-15")
        v = 2 * direct(d / 2) - direct(d)
        assert abs(v - dp._li2_one_minus_ratio(a, b)) <= 1e-12


@pytest.mark.parametrize("s0,s", [(-1.0, 5.0), (-2.0, 3.0), (-1.0, -4.0)])
def test_continuation_against_closed_forms(s0, s):
    """``continuation`` (I(s) = I(s0) ((-s-i0)/(-s0))^(a + b eps)) reproduces the closed forms
    with a single scale: massless bubble (0, -1), triangle (-1, -1), sunrise (1, -2)."""
    for f, power in ((dp.bubble_massless, (0, -1)), (dp.triangle_massless, (-1, -1)),
                     (dp.sunrise_massless, (1, -2))):
        direct = f(s, top=1)
        cont = dp.continuation(f(s0, top=1), s, 1, s0, power)
        scale = max(abs(x) for x in direct.values())
        assert not _agree(cont, direct, {j: 1e-13 * scale * (1 + 1j) for j in direct},
                          f.__name__)


def test_massless_vertex_continuation_round_trip():
    """The check of the physical two-loop massless vertices: pySecDec's Euclidean values
    continued to s, times (-s - i0)^(2 + 2 eps), give back pySecDec's coefficients."""
    for phys, eucl in dp.CONTINUED_FROM.items():
        c, _ = dp.pysecdec_coefficients(eucl)
        there, _ = dp.pysecdec_check(dp.CASES_BY_NAME[phys])
        s = dp.CASES_BY_NAME[phys]["kinematics"]["s"]
        with mpmath.workdps(30):
            L = dp._log_m(s)
            f = dp._scale(dp._pow_eps(L, 2, 8), mpmath.exp(2 * L))
            back = dp._mul({j: mpmath.mpc(v) for j, v in there.items()}, f, 0)
        scale = max(map(abs, c.values()))
        assert all(abs(complex(back[j]) - c[j]) <= 1e-12 * scale for j in c)


def test_sunrise_vacuum_quadrature_against_closed_form():
    """The 2-D sunrise quadrature at p^2 = 0, equal masses, against Gamma(1+eps)^2
    m^(2-4eps) [3/(2eps^2) + 9/(2eps) + 21/2 - 2 sqrt(3) Cl2(pi/3)] for m = 1 and m = 2."""
    for m in (1.0, 2.0):
        q = dp.sunrise(0.0, m, m, m)
        cf = dp.sunrise_vacuum_equal(m)
        assert not _agree(q, cf, {j: 1e-14 * max(map(abs, cf.values())) * (1 + 1j)
                                  for j in cf}, f"m = {m}")


def test_bubble_quadrature_against_the_textbook_finite_part():
    """The equal-mass bubble's eps^0 coefficient against the closed form
    -gamma_E - log(m^2) + 2 - beta log((beta+1)/(beta-1)), beta = sqrt(1 - 4m^2/s), for
    s < 0 (real) and s > 4m^2 (log((1+b)/(1-b)) - i pi): a check of the quadrature's
    branch (the standard B0, e.g. A. Denner, Fortsch. Phys. 41 (1993) 307)."""
    with mpmath.workdps(30):
        for s in (-3.0, 6.0, 40.0):
            b = mpmath.sqrt(1 - 4 / mpmath.mpf(s))
            if s < 0:
                fin = 2 - b * mpmath.log((b + 1) / (b - 1))
            else:
                fin = 2 - b * (mpmath.log((1 + b) / (1 - b)) - 1j * mpmath.pi)
            expect = complex(-mpmath.euler + fin)
            got = dp.bubble(s, 1.0, 1.0)[0]
            assert abs(got - expect) <= 1e-13 * abs(expect), s


def test_box1l_documented_digits():
    """pySecDec's documented box1L "Analytic Result" (10 digits) as the case's reference."""
    ref, err, src = dp.reference(dp.CASES_BY_NAME["box1L_psd"])
    assert ref[0] == complex(-0.426354612, 1.866502363) and "box1L" in src


def test_vertex_normalization_is_fixed_by_pysecdec():
    """The quoted Gonsalves expansions need e^(-2 gamma eps) in front: with Gamma(1+eps)^2,
    r_Gamma^2 or 1/Gamma(1-eps)^2 instead, the eps^-2 coefficient misses pySecDec's by far more
    than its error (the comparison with e^(-2 gamma eps) is test_mpmath_references_...)."""
    import mpmath as mp
    with mp.workdps(30):
        g2 = dp._mul(dp._gamma(1, 1, 4), dp._gamma(1, 1, 4), 4)
        others = [g2, dp._mul(dp._r_gamma(4), dp._r_gamma(4), 4),
                  dp._inv(dp._mul(dp._gamma(1, -1, 4), dp._gamma(1, -1, 4), 4), 4)]
        e2g = dp._exp({1: -2 * mp.euler}, 4)
        for name in ("V2P_eucl", "V2X_eucl"):
            psd, err = dp.pysecdec_coefficients(name)
            ours = dp.closed_reference(dp.CASES_BY_NAME[name])
            # strip e^(-2 gamma eps) off our closed form: the bracket (s = -1)
            bracket = dp._mul({j: mp.mpc(v) for j, v in ours.items()}, dp._inv(e2g, 4), 0)
            for n in others:
                alt = dp._mul(n, bracket, 0)
                assert abs(complex(alt[-2]) - psd[-2]) > 1000 * abs(err[-2]) + 0.1


def test_triangle2l_against_the_pysecdec_paper():
    """pySecDec's documented triangle2L example (s = 9, m^2 = 1): our pySecDec run against
    the values its integrate_triangle2L.py quotes from the pySecDec paper, Table 1 of
    arXiv:1703.09692 (errors 1e-3 .. 1e-2), within 3 of those errors."""
    paper = {-2: (complex(-0.0379735, -0.0747738), complex(0.000375449, 0.000695892)),
             -1: (complex(0.2812615, 0.1738216), complex(0.003117778, 0.002358655)),
             0: (complex(-1.03936733, 0.2414135), complex(0.011940978, 0.004604699))}
    ours, err = dp.pysecdec_coefficients("triangle2L_psd")
    for j, (v, e) in paper.items():
        assert abs(ours[j].real - v.real) <= 3 * e.real + 3 * err[j].real, j
        assert abs(ours[j].imag - v.imag) <= 3 * e.imag + 3 * err[j].imag, j
