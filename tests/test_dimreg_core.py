"""Dimensional regularization (loopint.dimreg): input, the series machinery and one-loop
closed forms (mpmath), each coefficient checked, in Euclidean, F <= 0 and physical
kinematics and in two unit systems."""

import json
import subprocess
import sys

import mpmath as mp
import numpy as np
import pytest

import loopint
from loopint.diagram import DiagramError
from loopint.dimreg import prefactor_series, series_integrand, structure
from loopint.problem import SpecError, load

mp.mp.dps = 30
EPS0 = mp.mpf("1e-25")      # mpmath.taylor evaluates near, not at, the removable point

BUBBLE = dict(internal_lines=[["m", [1, 2]], ["m", [2, 1]]], external_lines=[["p1", 1], ["p2", 2]],
              scalar_products={"p1*p1": "s"})
MASSLESS_BUBBLE = dict(internal_lines=[["0", [1, 2]], ["0", [2, 1]]],
                       external_lines=[["p1", 1], ["p2", 2]], scalar_products={"p1*p1": "s"})
TRIANGLE = dict(internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["0", [3, 1]]],
                external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
                scalar_products={"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"})
BOX = dict(internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["0", [3, 4]], ["0", [4, 1]]],
           external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
           scalar_products={"p1*p1": "0", "p2*p2": "0", "p3*p3": "0", "p1*p2": "s/2",
                            "p2*p3": "t/2", "p1*p3": "-s/2 - t/2"})
LAM = 150.0     # the second unit system: masses x LAM, invariants x LAM^2


def laurent(g, lo, hi):
    """Coefficients of eps^lo .. eps^hi of g (a function with a pole of order -lo at 0).
    Taken at 60 digits: sums like nu - D/2 cancel about 25 of them at eps = EPS0."""
    with mp.workdps(60):
        c = mp.taylor(lambda e: e ** (-lo) * g(e), EPS0, hi - lo)
    return {lo + k: complex(c[k]) for k in range(hi - lo + 1)}


def log_m(x):
    """log(-x - i0) for real x (the propagators' +i0: -s - i0 for an invariant s)."""
    x = mp.mpf(x)
    return mp.log(-x) if x < 0 else mp.log(x) - 1j * mp.pi


def check(r, ref, rtol, scale_floor=0.0):
    """Every coefficient within 5 of its errors (plus rtol of the largest) of the reference,
    and the errors honest and small."""
    assert r.converged, r.status
    assert sorted(r.coefficients) == sorted(ref)
    big = max(abs(v) for v in ref.values())
    for j, want in ref.items():
        got, err = r.coefficients[j], r.coefficient_errors[j]
        bound = 5 * (abs(err.real) + abs(err.imag)) + 1e-12 * big + scale_floor
        assert abs(got - want) <= bound, (j, got, want, err)
        assert abs(err.real) + abs(err.imag) <= 10 * rtol * big, (j, err)


def bubble_reference(s, m, lo=-1, hi=1):
    """Gamma(eps) int_0^1 (m^2 - s x(1-x) - i0)^(-eps) dx, the inner integral expanded."""
    s, m = mp.mpf(s), mp.mpf(m)
    roots = []
    if s > 4 * m * m:
        r = mp.sqrt(1 - 4 * m * m / s)
        roots = [(1 - r) / 2, (1 + r) / 2]

    def logF(x):
        F = m * m - s * x * (1 - x)
        return mp.log(abs(F)) - (1j * mp.pi if F < 0 else 0)

    bare = [mp.quad(lambda x: (-logF(x)) ** n / mp.factorial(n), [0] + roots + [1])
            for n in range(hi - lo + 2)]
    pre = mp.taylor(lambda e: e * mp.gamma(e), EPS0, hi - lo + 1)
    return {j: complex(sum(pre[i] * bare[j + 1 - i] for i in range(j + 2)))
            for j in range(lo, hi + 1)}


# ------------------------------------------------------------------------------- input
def test_dimension_parsing_and_errors():
    d = loopint.Diagram.from_graph(**BUBBLE, dimension="4 - 2*eps")
    assert d.regulated and str(d.F_exponent) == "eps"
    assert not loopint.Diagram.from_graph(**BUBBLE, dimension=2).regulated
    for bad, what in (("4 - 2*eps*m", "unknown symbol 'm'"), ("4 - 2*eps**2", r"a \+ b\*eps"),
                      ("4 - 2*delta", "eps"), ("-2*eps", "positive")):
        with pytest.raises(DiagramError, match=what) as e:
            loopint.Diagram.from_graph(**BUBBLE, dimension=bad)
        assert e.value.key == "dimension"
    with pytest.raises(DiagramError, match="powers"):
        loopint.Diagram.from_graph(**BUBBLE, dimension="4 - 2*eps", powers=["eps", 1])


def test_eps_order_errors():
    d = loopint.Diagram.from_graph(**BUBBLE, dimension=2)
    with pytest.raises(DiagramError, match="needs a regulated integral"):
        loopint.compute(d, {"s": -1.0, "m": 1.0}, eps_order=0)
    d = loopint.Diagram.from_graph(**TRIANGLE, dimension="4 - 2*eps")
    with pytest.raises(DiagramError, match="below the leading pole") as e:
        loopint.compute(d, {"s": -1.0}, eps_order=-3)
    assert e.value.key == "regulator.eps_order"
    with pytest.raises(SpecError, match="eps_order"):
        loopint.compute(d, {"s": -1.0}, eps_order=1.5)


def test_prefactor_series():
    d = loopint.Diagram.from_graph(**TRIANGLE, dimension="4 - 2*eps")
    lo, c = prefactor_series(d, "pysecdec", 2)           # -Gamma(1 + eps)
    assert lo == 0
    want = laurent(lambda e: -mp.gamma(1 + e), 0, 2)
    assert np.allclose(c, [want[j] for j in range(3)], rtol=1e-14)
    d = loopint.Diagram.from_graph(**BUBBLE, dimension="4 - 2*eps")
    lo, c = prefactor_series(d, "pysecdec", 1)           # Gamma(eps)
    assert lo == -1 and abs(c[0] - 1) < 1e-14 and abs(c[1] + float(mp.euler)) < 1e-14


def test_pole_structure():
    d = loopint.Diagram.from_graph(**BOX, dimension="4 - 2*eps")
    si = series_integrand(d, 0)
    assert si.lo == -2 and len(si.sectors) == 12
    assert np.all(si.E >= -1) and np.all(si.B[si.E == -1] != 0)


# ------------------------------------------------------------------------------- one loop
@pytest.mark.parametrize("s", [-3.0, 2.0, 5.0])       # Euclidean, below and above threshold
def test_massive_bubble(s):
    d = loopint.Diagram.from_graph(**BUBBLE, dimension="4 - 2*eps")
    r = loopint.compute(d, {"s": s, "m": 1.0}, eps_order=1, rtol=1e-8)
    check(r, bubble_reference(s, 1.0), 1e-8)
    assert r.region == ("physical" if s > 4 else "euclidean" if s < 2 else r.region)


def test_massive_bubble_second_unit_system():
    """I(LAM^2 s, LAM m) = LAM^(-2 eps) I(s, m): the coefficients mix."""
    d = loopint.Diagram.from_graph(**BUBBLE, dimension="4 - 2*eps")
    r = loopint.compute(d, {"s": 5.0 * LAM ** 2, "m": LAM}, eps_order=1, rtol=1e-8)
    ref1 = bubble_reference(5.0, 1.0, hi=2)
    lg = mp.log(LAM)
    ref = {j: complex(sum(ref1[i] * (-2 * lg) ** (j - i) / mp.factorial(j - i)
                          for i in range(-1, j + 1))) for j in range(-1, 2)}
    check(r, ref, 1e-8)


BUBBLE_12 = dict(internal_lines=[["m1", [1, 2]], ["m2", [2, 1]]],
                 external_lines=[["p1", 1], ["p2", 2]], scalar_products={"p1*p1": "s"})


def test_deformation_strength_per_sector():
    """One strength per sector; the pilot sample returned with them is the whole integrand's
    at those strengths, and the sectors' own samples add up to it."""
    from loopint import dimreg
    d = loopint.Diagram.from_graph(**BUBBLE_12, dimension="4 - 2*eps")
    red, kin = dimreg._reduced_at(d, {"s": 12.0, "m1": 1.0, "m2": 2.0})
    si = series_integrand(red, 1)
    lam, pilot = dimreg._deformation_lambda(si, kin)
    assert lam.shape == (len(si.sectors),) and np.all(lam > 0)
    whole = dimreg._pilot(si, si.bind(kin, "deform", lam))
    parts = dimreg._pilot(si, si.bind(kin, "deform", lam, per_sector=True))
    assert parts.shape == (len(si.sectors),) + whole.shape
    scale = np.abs(whole).max()
    np.testing.assert_allclose(pilot, whole, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(parts.sum(axis=0), whole, rtol=0, atol=1e-13 * scale)


def test_cross_check_on_a_second_contour(monkeypatch):
    """``cross_check`` at a physical point: the series on the contour with every sector's
    strength halved agrees; a second contour that disagreed would make the status 'methods
    disagree'; a Euclidean point has nothing to cross-check."""
    from loopint import dimreg
    d = loopint.Diagram.from_graph(**BUBBLE, dimension="4 - 2*eps")
    plain = loopint.compute(d, {"s": 5.0, "m": 1.0}, eps_order=1, rtol=1e-8)
    r = loopint.compute(d, {"s": 5.0, "m": 1.0}, eps_order=1, rtol=1e-8, cross_check=True)
    check(r, bubble_reference(5.0, 1.0), 1e-8)
    c = r.info["series"]["cross_check"][0]
    assert c["lambda_ratio"] == 0.5 and c["sigmas"] < 5 and c["evaluations"] > 0
    assert r.evaluations == plain.evaluations + c["evaluations"]

    orig, calls = dimreg._run, []

    def shifted_second(*args, **kw):
        out = orig(*args, **kw)
        calls.append(1)
        return dict(out, value=out["value"] + 1e-3) if len(calls) == 2 else out
    monkeypatch.setattr(dimreg, "_run", shifted_second)
    bad = loopint.compute(d, {"s": 5.0, "m": 1.0}, eps_order=1, rtol=1e-8, cross_check=True)
    assert not bad.converged and bad.status.startswith("methods disagree")
    monkeypatch.setattr(dimreg, "_run", orig)

    e = loopint.compute(d, {"s": -3.0, "m": 1.0}, eps_order=1, rtol=1e-8, cross_check=True)
    assert e.converged and e.info["cross_check"].startswith("nothing to cross-check")


def massless_triangle(s):
    """-Gamma(1+eps) Gamma(-eps)^2/Gamma(1-2 eps) (-s - i0)^(-1-eps): the Dirichlet integral
    of the bare parametric form (U = 1 on the simplex, F = -s x1 x3)."""
    L = log_m(s)
    return lambda e: (-mp.gamma(1 + e) * mp.gamma(-e) ** 2 / mp.gamma(1 - 2 * e)
                      * mp.exp((-1 - e) * L))


@pytest.mark.parametrize("s", [-2.0, 3.0, -2.0 * LAM ** 2])
def test_massless_triangle(s):
    d = loopint.Diagram.from_graph(**TRIANGLE, dimension="4 - 2*eps")
    r = loopint.compute(d, {"s": s}, eps_order=1, rtol=1e-8)
    check(r, laurent(massless_triangle(s), -2, 1), 1e-8)


def test_batched_points_and_prefactor_none():
    d = loopint.Diagram.from_graph(**TRIANGLE, dimension="4 - 2*eps")
    svals = np.array([-1.0, -2.0, -5.0])
    r = loopint.compute(d, {"s": svals}, eps_order=0, rtol=1e-8, prefactor="none")
    assert r.converged
    for k, s in enumerate(svals):
        ref = laurent(lambda e: -massless_triangle(s)(e) / mp.gamma(1 + e), -2, 0)
        for j, want in ref.items():
            assert abs(r.coefficients[j][k] - want) <= 1e-7 * abs(want) + 1e-10


def massless_box(s, t):
    """The on-shell massless box (Bern, Dixon, Kosower; Ellis and Zanderighi, JHEP 02 (2008)
    002, box 1, times their r_Gamma) to O(eps^0)."""
    Ls, Lt = log_m(s), log_m(t)

    def g(e):
        cg = mp.gamma(1 + e) * mp.gamma(1 - e) ** 2 / mp.gamma(1 - 2 * e)
        return cg / (s * t) * (2 / e ** 2 * (mp.exp(-e * Ls) + mp.exp(-e * Lt))
                               - (Ls - Lt) ** 2 - mp.pi ** 2)
    return g


def test_massless_box_euclidean():
    d = loopint.Diagram.from_graph(**BOX, dimension="4 - 2*eps")
    r = loopint.compute(d, {"s": -3.0, "t": -2.0}, eps_order=0, rtol=1e-7)
    check(r, laurent(massless_box(-3.0, -2.0), -2, 0), 1e-7)


def test_analytic_regulator_in_a_power():
    """The massless bubble with nu_1 = 1 + eps in D = 4 - 2 eps against its Gamma-function
    form: (-1)^nu Gamma(nu - D/2) Gamma(D/2 - nu_1) Gamma(D/2 - nu_2) / (Gamma(nu_1)
    Gamma(nu_2) Gamma(D - nu)) (-s - i0)^(D/2 - nu), with (-1)^nu = exp(i pi nu)."""
    d = loopint.Diagram.from_graph(**MASSLESS_BUBBLE, dimension="4 - 2*eps", powers=["1 + eps", 1])
    s = -2.0

    def g(e):
        n1, n2, D = 1 + e, 1, 4 - 2 * e
        nu = n1 + n2
        return (mp.exp(1j * mp.pi * nu) * mp.gamma(nu - D / 2) * mp.gamma(D / 2 - n1)
                * mp.gamma(D / 2 - n2) / (mp.gamma(n1) * mp.gamma(n2) * mp.gamma(D - nu))
                * mp.exp((D / 2 - nu) * log_m(s)))
    r = loopint.compute(d, {"s": s}, eps_order=1, rtol=1e-8)
    check(r, laurent(g, -1, 1), 1e-8)


def test_unregulated_divergence_is_refused():
    """In D = 4 with powers (1 + eps, 1 - eps, 1) the eps parts cancel in U's and F's
    exponents, so the soft singularity at x3 -> 0 (F = -s x2 x3) keeps t^-1 without eps."""
    d = loopint.Diagram.from_graph(**TRIANGLE, dimension=4, powers=["1 + eps", "1 - eps", 1])
    with pytest.raises(DiagramError, match="not regulated by eps"):
        loopint.compute(d, {"s": -1.0}, eps_order=0)


def laurent_quad(f, lo: int, hi: int) -> dict:
    """The Laurent coefficients lo..hi of f at eps = 0 from the Taylor series of
    eps^-lo f(eps) by contour integration (mpmath.taylor, method "quad": f is never called
    at its pole)."""
    with mp.workdps(30):
        c = mp.taylor(lambda e: e ** (-lo) * f(e), 0, hi - lo, method="quad", radius=0.25)
    return {lo + k: complex(v) for k, v in enumerate(c)}


@pytest.mark.parametrize("scale", [1.0, 150.0])
def test_tadpoles_in_closed_form(scale):
    """One propagator of power nu in D = 4 - 2 eps: (-1)^nu Gamma(nu - D/2)/Gamma(nu)
    (m^2)^(D/2 - nu), by mpmath, for nu = 1 and 2, two masses in one batch, and the bare
    integral (m^2)^(D/2 - nu) with prefactor 'none'; exact to round-off."""
    m = np.array([1.3, 0.2]) * scale
    for nu in (1, 2):
        d = loopint.Diagram.from_graph(internal_lines=[["m", [1, 1]]], external_lines=[],
                                       dimension="4 - 2*eps", powers=[nu])
        r = loopint.compute(d, {"m": m}, eps_order=2)
        assert r.converged and r.method == "closed form" and r.evaluations == 0
        bare = loopint.compute(d, {"m": m}, eps_order=1, prefactor="none")
        for k, mk in enumerate(m):
            m2 = mp.mpf(mk) ** 2
            want = laurent_quad(lambda e: (-1) ** nu * mp.gamma(nu - 2 + e) / mp.gamma(nu)
                                * m2 ** (2 - e - nu), 2 - nu - 1 if nu == 1 else -1, 2)
            for j, w in want.items():
                got, err = r.coefficients[j][k], r.coefficient_errors[j][k]
                assert abs(got - w) <= 1e-13 * abs(w) + 1e-300 and abs(got - w) <= 3 * abs(err)
            want = laurent_quad(lambda e: m2 ** (2 - e - nu), 0, 1)
            for j, w in want.items():
                assert abs(bare.coefficients[j][k] - w) <= 1e-13 * abs(w)
    with pytest.raises(ValueError, match="scaleless"):      # m = 0 as a kinematic value
        loopint.compute(d, {"m": 0.0})
    r = loopint.compute(d, {"m": np.array([1.0, 0.0]) * scale})    # and as a point of a scan
    assert r.info["point_converged"] == [True, False]
    assert r.info["point_status"][1].startswith("scaleless") and np.isnan(r.coefficients[0][1])


@pytest.mark.parametrize("scale", [1.0, 150.0])
def test_products_of_tadpoles_in_closed_form(scale):
    """Two loops of one propagator each (the two-loop vacuum sunrise with its third line's
    power 0), powers 1 and 2, in D = 4 - 2 eps: the product of the two one-loop closed forms
    (-1)^nu Gamma(nu - D/2)/Gamma(nu) (m^2)^(D/2 - nu), by mpmath, from the double pole on;
    with prefactor 'none' that product over pySecDec's prefactor (-1)^nu Gamma(nu - L D/2)
    / prod Gamma(nu_i).  In fixed D such a product is refused with its formula (an audit
    found it refused as an overall UV divergence, Gamma(-1) at D = 3, although it is finite
    there)."""
    lines = [["m1", [1, 2]], ["m2", [1, 2]], ["m3", [1, 2]]]
    d = loopint.Diagram.from_graph(internal_lines=lines, external_lines=[],
                                   dimension="4 - 2*eps", powers=[1, 2, 0])
    kin = {"m1": 1.3 * scale, "m2": 0.7 * scale, "m3": 1.0 * scale}
    r = loopint.compute(d, kin, eps_order=1)
    bare = loopint.compute(d, kin, eps_order=1, prefactor="none")
    assert r.converged and r.method == "closed form" and min(r.coefficients) == -2
    assert "leading pole eps^-2 (2 one-propagator loops" in structure(d)     # loopint show

    def product(e):
        D2 = 2 - e
        return mp.mpf(1) * (-1) ** 3 * mp.gamma(1 - D2) * mp.gamma(2 - D2) / mp.gamma(2) * (
            mp.mpf(kin["m1"]) ** 2) ** (D2 - 1) * (mp.mpf(kin["m2"]) ** 2) ** (D2 - 2)

    for j, w in laurent_quad(product, -2, 1).items():
        assert abs(r.coefficients[j] - w) <= 1e-12 * abs(w)
    pre = lambda e: (-1) ** 3 * mp.gamma(3 - 2 * (2 - e)) / mp.gamma(2)
    for j, w in laurent_quad(lambda e: product(e) / pre(e), -1, 1).items():
        assert abs(bare.coefficients[j] - w) <= 1e-12 * abs(w)
    with pytest.raises(ValueError, match="product of 2 one-propagator loops.*4 - 2\\*eps"):
        loopint.Diagram.from_graph(internal_lines=lines, external_lines=[], dimension=3,
                                   powers=[1, 1, 0])


# ------------------------------------------------------------------------------- the CLI
BOX_FILE = """
[diagram]
name = "box"
dimension = "4 - 2*eps"
internal_lines = [["0", [1, 2]], ["0", [2, 3]], ["0", [3, 4]], ["0", [4, 1]]]
external_lines = [["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]]
[diagram.scalar_products]
"p1*p1" = "0"
"p2*p2" = "0"
"p3*p3" = "0"
"p1*p2" = "s/2"
"p2*p3" = "t/2"
"p1*p3" = "-s/2 - t/2"
[kinematics]
s = -3.0
t = -2.0
[regulator]
eps_order = 0
"""


@pytest.mark.parametrize("s, t, region", [(-3.0, -2.0, "Euclidean"), (2.2, -0.9, "physical")])
def test_cli_series_json_and_show(tmp_path, s, t, region):
    f = tmp_path / "box.toml"
    f.write_text(BOX_FILE.replace("s = -3.0\nt = -2.0", f"s = {s}\nt = {t}"))
    out = tmp_path / "box.json"
    rtol = 1e-6 if region == "Euclidean" else 1e-4
    run = subprocess.run([sys.executable, "-m", "loopint.cli", "compute", str(f), "--rtol",
                          str(rtol), "--json", str(out), "--quiet"], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert "eps^-2" in run.stdout and "eps^0" in run.stdout
    assert f"{region} region" in run.stdout
    data = json.loads(out.read_text())
    ref = laurent(massless_box(s, t), -2, 0)
    for j, want in ref.items():
        got = complex(*data["coefficients"][str(j)])
        assert abs(got - want) < 10 * rtol * abs(want)
    assert set(data["coefficient_errors"]) == {"-2", "-1", "0"}
    show = subprocess.run([sys.executable, "-m", "loopint.cli", "show", str(f)],
                          capture_output=True, text=True)
    assert show.returncode == 0 and "leading pole eps^-2" in show.stdout
    if region == "physical":
        assert "contour deformed" in show.stdout and "delta" not in show.stdout


def test_cli_bad_dimension(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(BOX_FILE.replace('"4 - 2*eps"', '"4 - 2*eps*s"'))
    run = subprocess.run([sys.executable, "-m", "loopint.cli", "compute", str(f)],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert "diagram.dimension" in run.stderr and str(f) in run.stderr
    with pytest.raises(SpecError, match="eps_order"):
        f.write_text(BOX_FILE.replace("eps_order = 0", "eps_order = \"one\""))
        load(str(f))
