"""Derivatives with respect to the kinematics (loopint.derivatives) against closed forms.

References, differentiated in mpmath at 40 digits (tests/derivative_points.py):
C0(0,0,s;m,m,m) below and above threshold (every path of the physical region: Euclidean
delta = 0, the deformed contour, the delta sequence), the massless off-shell box (Usyukina and
Davydychev's Phi^(1), Phys. Lett. B 298 (1993) 363), and the Laurent coefficients of the
massive bubble in D = 4 - 2 eps (tests/dimreg_points.py, by a sixth-order central difference
of its 20-digit values).  Each derivative must be converged, within its tolerance of the
reference and within 3 times its own error estimate.
"""

from __future__ import annotations

import json
import subprocess
import sys

import mpmath
import numpy as np
import pytest

import loopint
from loopint.compute import compute
from loopint.errors import SpecError
from loopint.problem import problem_from_dict

from derivative_points import box, c0, diff

TRIANGLE = dict(internal_lines=[["m", [1, 2]], ["m", [2, 3]], ["m", [3, 1]]],
                external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
                scalar_products={"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"})

BOX = dict(internal_lines=[["0", [4, 1]], ["0", [1, 2]], ["0", [2, 3]], ["0", [3, 4]]],
           external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
           scalar_products={"p1*p1": "p1sq", "p2*p2": "p2sq", "p3*p3": "p3sq",
                            "p1*p2": "(s - p1sq - p2sq)/2", "p2*p3": "(t - p2sq - p3sq)/2",
                            "p1*p3": "(p4sq - s - t + p2sq)/2"})
BOX_POINT = {"p1sq": -1.0, "p2sq": -2.0, "p3sq": -3.0, "p4sq": -4.0, "s": -5.0, "t": -6.0}


def check(d, exact: complex, rtol: float) -> None:
    """A derivative within rtol of the reference and within 3 times its error estimate."""
    err = abs(complex(d.value) - exact)
    assert err <= rtol * abs(exact), (d.value, exact)
    assert err <= 3 * abs(complex(d.error)) + 1e-14 * abs(exact), (d.value, d.error, exact)


@pytest.fixture(scope="module")
def triangle():
    return loopint.Diagram.from_graph(**TRIANGLE)


@pytest.mark.parametrize("s, contour, rtol", [
    (-3.0, "auto", 1e-8),        # Euclidean: delta = 0, the iterated engine
    (2.0, "auto", 1e-8),         # below threshold
    (10.0, "auto", 1e-7),        # above: the deformed contour
    (10.0, "none", 1e-6),        # above: the delta sequence, every derivative extrapolated
])
def test_c0_first_derivatives_on_every_path(triangle, s, contour, rtol):
    r = compute(triangle, {"s": s, "m": 1.0}, rtol=rtol, contour=contour,
                derivatives=["s", "m"])
    assert r.converged, r.status
    assert list(r.derivatives) == ["s", "m"]
    point = {"s": s, "m": 1.0}
    for name in ("s", "m"):
        check(r.derivatives[name], diff(c0, point, (name,)), rtol)
    if contour == "none":
        assert r.info["regulated"]["point_method"] == ["delta sequence"]


def test_a_cross_check_compares_the_derivatives_too(triangle):
    r = compute(triangle, {"s": 10.0, "m": 1.0}, rtol=1e-6, derivatives=["s"],
                cross_check=True)
    assert r.converged, r.status
    check(r.derivatives["s"], diff(c0, {"s": 10.0, "m": 1.0}, ("s",)), 1e-6)
    from loopint.contour import combine_physical
    one = np.array([True])
    c = {"value": np.array([1.0 + 1.0j]), "error": np.array([1e-8 + 1e-8j]), "converged": one,
         "status": ["converged"], "derivatives": np.array([[2.0 + 0j]]),
         "derivative_errors": np.array([[1e-8 + 1e-8j]])}
    d = dict(c, points=np.array([0]), derivatives=np.array([[2.001 + 0j]]))
    out = combine_physical(c, d, 1, cross_check=True)     # values agree, derivatives do not
    assert not out["converged"][0] and out["status"][0].startswith("methods disagree")
    assert out["derivatives"].shape == (1, 1)


def test_second_derivatives_below_and_above_threshold(triangle):
    for s, rtol in ((2.0, 1e-7), (10.0, 1e-6)):
        r = compute(triangle, {"s": s, "m": 1.0}, rtol=rtol, derivatives=["s", "m"],
                    derivative_order=2)
        assert r.converged, r.status
        assert list(r.derivatives) == ["s", "m", "s,s", "s,m", "m,m"]
        point = {"s": s, "m": 1.0}
        for label, d in r.derivatives.items():
            check(d, diff(c0, point, tuple(label.split(","))), rtol)


def test_units_scale_the_derivatives_and_not_the_work(triangle):
    """C0 has mass dimension -2: in units where every mass is LAMBDA times larger,
    dC0/ds scales as LAMBDA^-4 and dC0/dm as LAMBDA^-3, and the run is the same."""
    lam = 150.0
    one = compute(triangle, {"s": 10.0, "m": 1.0}, rtol=1e-7, derivatives=["s", "m"])
    gev = compute(triangle, {"s": 10.0 * lam ** 2, "m": lam}, rtol=1e-7,
                  derivatives=["s", "m"])
    assert one.converged and gev.converged
    for name, power in (("s", -4), ("m", -3)):
        a, b = one.derivatives[name].value, gev.derivatives[name].value * lam ** -power
        assert abs(a - b) <= 1e-7 * abs(a)
    assert abs(gev.evaluations - one.evaluations) <= 0.1 * one.evaluations


def test_box_derivatives_against_usyukina_davydychev():
    d = loopint.Diagram.from_graph(**BOX)
    r = compute(d, BOX_POINT, rtol=1e-7, derivatives=["s", "p1sq"])
    assert r.converged, r.status
    for name in ("s", "p1sq"):
        check(r.derivatives[name], diff(box, BOX_POINT, (name,)), 1e-7)


def test_batched_derivatives_equal_single_points(triangle):
    s = np.array([-2.0, 0.0, 2.0])
    r = compute(triangle, {"s": s, "m": 1.0}, rtol=1e-8, derivatives=["s"])
    assert r.converged and r.derivatives["s"].value.shape == (3,)
    for i, si in enumerate(s):
        exact = -1 / 24 if si == 0 else diff(c0, {"s": si, "m": 1.0}, ("s",))
        assert abs(r.derivatives["s"].value[i] - exact) <= 1e-8 * abs(exact)


def sixth_order_difference(f, x: float, h: float) -> complex:
    return (45 * (f(x + h) - f(x - h)) - 9 * (f(x + 2 * h) - f(x - 2 * h))
            + (f(x + 3 * h) - f(x - 3 * h))) / (60 * h)


@pytest.mark.parametrize("s", [-3.0, 5.0])
def test_derivatives_of_laurent_coefficients(s):
    from dimreg_points import bubble
    d = loopint.Diagram.from_graph(internal_lines=[["m", [1, 2]], ["m", [2, 1]]],
                                   external_lines=[["p1", 1], ["p2", 2]],
                                   scalar_products={"p1*p1": "s"}, dimension="4 - 2*eps")
    r = compute(d, {"s": s, "m": 1.0}, eps_order=1, rtol=1e-8, derivatives=["s"])
    assert r.converged, r.status
    ds = r.derivatives["s"]
    assert set(ds.coefficients) == {-1, 0, 1}
    assert abs(ds.coefficients[-1]) <= 1e-10          # the UV pole does not depend on s
    for j in (0, 1):
        exact = sixth_order_difference(lambda x: complex(bubble(x, 1.0, 1.0)[j]), s, 1e-3)
        err = abs(ds.coefficients[j] - exact)
        assert err <= 1e-8 * abs(exact)
        assert err <= 3 * abs(ds.coefficient_errors[j]) + 1e-11
    assert ds.value == ds.coefficients[0]


def test_a_redundant_vanishing_coefficient_is_kept_and_a_vertex_one_is_refused():
    # C0 at s = 2 m^2: F's coefficient of x1 x3, 2 m^2 - s, vanishes but lies inside the
    # Newton polytope of the mass terms, so the derivative by s is computed (test above);
    # the massless box in D = 6 at p1^2 = 0: the monomial of p1sq is a vertex
    d = loopint.Diagram.from_graph(**BOX, dimension=6)
    point = dict(BOX_POINT, p1sq=0.0)
    with pytest.raises(SpecError, match=r"derivatives: 'p1sq' cannot be taken.*vanishes"):
        compute(d, point, rtol=1e-4, derivatives=["p1sq"])
    r = compute(d, point, rtol=1e-6, derivatives=["s"])      # s is unaffected there
    assert r.converged
    h = 1e-3
    up, down = (compute(d, dict(point, s=-5.0 + x), rtol=1e-11).value for x in (h, -h))
    assert abs(r.derivatives["s"].value - (up - down) / (2 * h)) <= 1e-5 * abs(
        r.derivatives["s"].value)


def bubble_d3(P, m):
    """The D = 3 bubble with masses m and 0 at p^2 = -P (pySecDec's normalization):
    sqrt(pi) int_0^1 dx / sqrt(x (m^2 + P (1 - x)))."""
    return mpmath.sqrt(mpmath.pi) * mpmath.quad(
        lambda x: 1 / mpmath.sqrt(x * (m * m + P * (1 - x))), [0, 1])


def test_a_zero_mass_is_refused_alone_and_marked_in_a_batch():
    """At m = 0 the bubble in D = 3 goes like I(0) - 3.54 |m|: no derivative by m.  The
    coefficient m**2 vanishes there with its first derivative, but depends on m; its
    monomial x1^2 is a vertex of the Newton polytope."""
    d = loopint.Diagram.from_graph(internal_lines=[["m", [1, 2]], ["0", [2, 1]]],
                                   external_lines=[["p1", 1], ["p2", 2]],
                                   scalar_products={"p1*p1": "-P"}, dimension=3)
    with pytest.raises(SpecError, match=r"derivatives: 'm' cannot be taken.*m\*\*2"):
        compute(d, {"P": 1.0, "m": 0.0}, rtol=1e-8, derivatives=["m"])
    r = compute(d, {"P": 1.0, "m": np.array([0.0, 0.5])}, rtol=1e-8, derivatives=["m"])
    assert not r.converged and r.info["point_converged"] == [False, True]
    assert "cannot be taken" in r.status
    dm = r.derivatives["m"]
    assert np.isnan(dm.value[0]) and abs(r.value[0] - complex(bubble_d3(1, 0))) <= 1e-7
    check(type(dm)(dm.value[1], dm.error[1]), diff(bubble_d3, {"P": 1.0, "m": 0.5}, ("m",)),
          1e-8)


def test_second_derivative_at_a_zero_mass_is_refused():
    """d2/dm2 of the massless off-shell triangle with one line of mass m diverges at m = 0
    (an m^2 log m^2 term) although every first derivative of its coefficients vanishes."""
    d = loopint.Diagram.from_graph(
        internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["m", [3, 1]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
        scalar_products={"p1*p1": "-P1", "p2*p2": "-P2", "p1*p2": "(P1 + P2 - P3)/2"})
    with pytest.raises(SpecError, match="derivatives: 'm' cannot be taken"):
        compute(d, {"P1": 0.3, "P2": 0.5, "P3": 1.0, "m": 0.0}, rtol=1e-6,
                derivatives=["m"], derivative_order=2)


def test_bad_derivative_requests_are_clear_errors(triangle, tmp_path):
    with pytest.raises(SpecError, match=r"derivatives: 'q' is not a kinematic symbol"):
        compute(triangle, {"s": 1.0, "m": 1.0}, derivatives=["q"])
    with pytest.raises(SpecError, match="derivative_order: must be 1 or 2"):
        compute(triangle, {"s": 1.0, "m": 1.0}, derivatives=["s"], derivative_order=3)
    with pytest.raises(SpecError, match="derivatives: a symbol is given twice"):
        compute(triangle, {"s": 1.0, "m": 1.0}, derivatives=["s", "s"])
    with pytest.raises(SpecError, match="derivative_order: 2 needs the symbols"):
        compute(triangle, {"s": 1.0, "m": 1.0}, derivative_order=2)
    doc = {"diagram": TRIANGLE, "kinematics": {"s": 1.0, "m": 1.0},
           "integration": {"derivatives": ["s", "x"]}}
    with pytest.raises(SpecError, match=r"f.toml: integration.derivatives: 'x' is not"):
        problem_from_dict(doc, "f.toml")


def test_cli_derivatives_json_and_errors(tmp_path):
    out = tmp_path / "r.json"
    run = [sys.executable, "-m", "loopint.cli", "compute",
           "diagrams/triangle_below_threshold.toml", "--quiet"]
    p = subprocess.run(run + ["--derivative", "s", "--json", str(out)], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    assert "d/ds" in p.stdout
    d = json.loads(out.read_text())["derivatives"]["s"]
    exact = diff(c0, {"s": 1.0, "m": 1.0}, ("s",))
    assert abs(complex(*d["value"]) - exact) <= 1e-6 * abs(exact)
    p = subprocess.run(run + ["--derivative", "q"], capture_output=True, text=True)
    assert p.returncode == 2
    assert "triangle_below_threshold.toml: derivatives: 'q' is not a kinematic symbol" in p.stderr
