"""Kinematic points exactly on a Landau singularity of a one-loop diagram.

There F has a zero with zero gradient on a face of the simplex (a normal threshold of two of
its lines) or inside it (its leading singularity): the deformed contour's shift vanishes at
that point and no engine's error estimate sees the integrable singularity, so such points are
never integrated nor reported converged (:func:`loopint.region.one_loop_landau_faces`).
Integrated, a triangle with unequal masses exactly at p3^2 = (m2 + m3)^2 comes out certified
at rtol 1e-8 with a true error 29 times its estimate (reference: the 1-D mpmath integral of
``tests/physical_points.py``).
"""

import numpy as np
import pytest

import loopint
from loopint.plan import integrand
from loopint.region import one_loop_landau_faces, pinch_tolerance
from physical_points import bubble_d2, triangle_d4

TRIANGLE = dict(internal_lines=[["m1", [1, 2]], ["m2", [2, 3]], ["m3", [3, 1]]],
                external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
                scalar_products={"p1*p1": "P1s", "p2*p2": "P2s",
                                 "p1*p2": "(P3s - P1s - P2s)/2"})
MASSES = {"m1": 1.0, "m2": 2.0, "m3": 1.5}


def faces(diagram, points):
    probe = integrand(diagram, "simplex", "none", "float64")
    kin = np.array([[p[s] for s in probe.symbols] for p in points])
    return one_loop_landau_faces(probe.F_exponents, probe.F_coefficients(kin))


def test_landau_faces_of_the_triangle_and_the_bubble():
    """Normal threshold of lines 2, 3 at p3^2 = (m2 + m3)^2 (and 5e-13 from it: F at its
    critical point is then 5e-13 of its terms there, within LANDAU_TOLERANCE), not
    1e-10 away nor at the pseudo-threshold (m2 - m3)^2; the leading singularity at an
    anomalous threshold (equal masses 1, p1^2 = p2^2 = 3.5, p3^2 = 1.75); the bubble's
    threshold is its whole face; a massless on-shell box (F's monomials vanish, the sector
    analysis's case) has none."""
    tri = loopint.Diagram.from_graph(**TRIANGLE, dimension=4)
    at = {"P1s": -1.0, "P2s": 0.5, **MASSES}
    got = faces(tri, [{**at, "P3s": 12.25 * f} for f in (1, 1 + 5e-13, 1 + 1e-10, 1 - 1e-10)]
                + [{**at, "P3s": 0.25}, {**at, "P3s": 12.5}])
    assert got == [[(1, 2)], [(1, 2)], [], [], [], []]
    anomalous = {"P1s": 3.5, "P2s": 3.5, "P3s": 1.75, "m1": 1.0, "m2": 1.0, "m3": 1.0}
    assert faces(tri, [anomalous]) == [[(0, 1, 2)]]
    bubble = loopint.Diagram.from_graph([["m1", [1, 2]], ["m2", [2, 1]]],
                                        [["p1", 1], ["p2", 2]], {"p1*p1": "psq"}, dimension=2)
    assert faces(bubble, [{"psq": 9.0, "m1": 1.0, "m2": 2.0},
                          {"psq": 1.0, "m1": 1.0, "m2": 2.0}]) == [[(0, 1)], []]
    box = loopint.Diagram.from_graph(
        [["0", [1, 2]], ["0", [2, 3]], ["0", [3, 4]], ["0", [4, 1]]],
        [["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
        {"p1*p1": "0", "p2*p2": "0", "p3*p3": "0", "p1*p2": "s/2", "p2*p3": "t/2",
         "p1*p3": "-(s + t)/2"}, dimension=6)
    assert faces(box, [{"s": -3.0, "t": -2.0}]) == [[]]


@pytest.mark.parametrize("scale", [1.0, 150.0])
def test_a_hierarchy_of_scales_is_not_a_landau_singularity(scale):
    """A triangle with lines 1e-3, 1, 1e-2, p1^2 = -0.5, p2^2 = 0.3 has its leading
    singularity only where det Y = 0 (p3^2 = 0.2855 and -3.5e5), not at p3^2 = 1e3 .. 1e6,
    where F's quadratic form is ill-conditioned (eigenvalues from 1e-3 to p3^2) but F at its
    critical point is not small against its terms there; the refusal at rtol 1e-10 (the
    pinch tolerance eps/rtol) must not take those points, and must still take the anomalous
    threshold itself and a D = 2 bubble 1e-9 above its threshold."""
    tri = loopint.Diagram.from_graph(**TRIANGLE, dimension=4)
    probe = integrand(tri, "simplex", "none", "float64")
    tol = pinch_tolerance(4.0, [1, 1, 1], 1e-10)
    m = {"m1": 1e-3 * scale, "m2": scale, "m3": 1e-2 * scale}
    pts = [{"P1s": -0.5 * scale ** 2, "P2s": 0.3 * scale ** 2, "P3s": q * scale ** 2, **m}
           for q in (1e3, 1e4, 1e5, 1e6)]
    kin = np.array([[p[s] for s in probe.symbols] for p in pts])
    assert one_loop_landau_faces(probe.F_exponents, probe.F_coefficients(kin), tol) == [[]] * 4
    anomalous = {"P1s": 3.5, "P2s": 3.5, "P3s": 1.75, "m1": 1.0, "m2": 1.0, "m3": 1.0}
    kin = np.array([[anomalous[s] * scale ** 2 if s.startswith("P") else anomalous[s] * scale
                     for s in probe.symbols]])
    assert one_loop_landau_faces(probe.F_exponents, probe.F_coefficients(kin), tol) \
        == [[(0, 1, 2)]]
    bubble = loopint.Diagram.from_graph([["m1", [1, 2]], ["m2", [2, 1]]],
                                        [["p1", 1], ["p2", 2]], {"p1*p1": "psq"}, dimension=2)
    probe = integrand(bubble, "simplex", "none", "float64")
    kin = np.array([[{"psq": 9.0 * (1 + 1e-9) * scale ** 2, "m1": scale,
                      "m2": 2.0 * scale}[s] for s in probe.symbols]])
    tol2 = pinch_tolerance(2.0, [1, 1], 1e-10)
    assert one_loop_landau_faces(probe.F_exponents, probe.F_coefficients(kin), tol2) \
        == [[(0, 1)]]


@pytest.mark.parametrize("scale", [1.0, 150.0])
def test_triangles_just_above_a_normal_threshold_are_honest(scale):
    """A triangle (masses 1.3, 0.8, 2.1) 10^-10.6 and 10^-10 above the threshold
    (m2 + m3)^2 of its third leg, one call per point at rtol 1e-5 (an audit's case): the
    imaginary part, about 1e-5 of the value, comes from a layer of F at a face of the sector
    cube, which the deformation leaves unsmoothed; the contour's boundary transform
    (:data:`loopint.plan.CONTOUR_TRANSFORM`) lets cubature find it.  Each point converges
    within its tolerance of the mpmath reference and within 3 estimates in each part, in two
    unit systems (without the transform: 8 estimates off in the imaginary part at 1e-10)."""
    tri = loopint.Diagram.from_graph(**TRIANGLE, dimension=4)
    s2 = scale * scale
    for eps in (10**-10.6, 1e-10):
        P3s = 8.41 * (1 + eps)
        r = loopint.compute(tri, kinematics={"P1s": 2.0 * s2, "P2s": -1.0 * s2, "P3s": P3s * s2,
                                             "m1": 1.3 * scale, "m2": 0.8 * scale,
                                             "m3": 2.1 * scale}, rtol=1e-5)
        ref = triangle_d4(2.0, -1.0, P3s, 1.3, 0.8, 2.1) / s2
        assert r.converged and abs(r.value - ref) <= 1e-5 * abs(ref)
        assert abs(r.value.real - ref.real) <= 3 * r.error.real
        assert abs(r.value.imag - ref.imag) <= 3 * r.error.imag


@pytest.mark.parametrize("scale", [1.0, 150.0])
def test_a_d2_bubble_too_near_its_threshold_for_float64_is_not_certified(scale):
    """The D = 2 bubble, infinite at its threshold (1/beta): 3e-11 above it (an audit's
    point, "converged" ten times off at rtol 1e-6) F near the pinch is resolved only to
    eps/eta = 1.4e-5 > rtol, and the point is not integrated (status threshold) at rtol
    1e-6; at rtol 1e-4, and at 1e-8 above the threshold at rtol 1e-6, it converges within
    its tolerance of the closed form (mpmath), in two unit systems."""
    bub = loopint.Diagram.from_graph([["m1", [1, 2]], ["m2", [2, 1]]], [["p1", 1], ["p2", 2]],
                                     {"p1*p1": "psq"}, dimension=2)
    s2 = scale * scale
    for eps, rtol, certified in ((3e-11, 1e-6, False), (3e-11, 1e-4, True), (1e-8, 1e-6, True)):
        psq = (0.7 + 1.9) ** 2 * (1 + eps)
        r = loopint.compute(bub, kinematics={"psq": psq * s2, "m1": 0.7 * scale,
                                             "m2": 1.9 * scale}, rtol=rtol)
        assert r.converged == certified, (eps, rtol, r.status)
        if certified:
            ref = bubble_d2(psq, 0.7, 1.9) / s2
            assert abs(r.value - ref) <= rtol * abs(ref)
        else:
            assert r.status.startswith("threshold:") and np.isnan(r.value)


@pytest.mark.parametrize("scale", [1.0, 150.0])
def test_a_triangle_exactly_at_a_normal_threshold_is_not_certified(scale):
    """A scan through the threshold point: that point not integrated (NaN, not converged,
    a status that names the lines), in both unit systems; the points around it converge
    by default (deformed contour) within their tolerance of the mpmath reference."""
    tri = loopint.Diagram.from_graph(**TRIANGLE, dimension=4)
    s2 = scale * scale
    P3s = np.array([12.0, 12.25, 12.5]) * s2
    kin = {"P1s": -1.0 * s2, "P2s": 0.5 * s2, "P3s": P3s,
           **{k: v * scale for k, v in MASSES.items()}}
    r = loopint.compute(tri, kinematics=kin, rtol=1e-6)
    ok = np.asarray(r.info["point_converged"])
    assert ok.tolist() == [True, False, True]
    assert "threshold" in r.status and "{x2, x3}" in r.status and np.isnan(r.value[1])
    why = r.info["point_status"]
    assert why[0] == why[2] == "converged"
    assert why[1].startswith("threshold") and "{x2, x3}" in why[1]
    for k in (0, 2):
        ref = triangle_d4(-1.0, 0.5, P3s[k] / s2, 1.0, 2.0, 1.5) / s2
        assert abs(r.value[k] - ref) <= 1e-6 * abs(ref)


@pytest.mark.parametrize("scale", [1.0, 150.0])
def test_an_eps_expansion_exactly_at_a_massive_threshold_is_not_integrated(scale):
    """The vertex with lines (0, m, m) and p1^2 = p2^2 = m^2 in D = 4 - 2 eps (its soft pole
    regulated by eps) exactly at p3^2 = 4 m^2: F has a double zero inside the face of the
    massive lines, which eps does not regulate (integrated, the coefficients came out near
    1e33 and ran for minutes).  That point is NaN with a threshold status; the other point of
    the batch is as computed alone."""
    vertex = loopint.Diagram.from_graph(
        internal_lines=[["0", [1, 2]], ["m", [2, 3]], ["m", [3, 1]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
        scalar_products={"p1*p1": "m**2", "p2*p2": "m**2", "p1*p2": "(s - 2*m**2)/2"},
        dimension="4 - 2*eps")
    s2 = scale * scale
    r = loopint.compute(vertex, {"s": np.array([-2.0, 4.0]) * s2, "m": scale}, rtol=1e-6)
    assert not r.converged and r.info["point_converged"] == [True, False]
    assert r.info["point_status"][0] == "converged"
    assert r.info["point_status"][1].startswith("threshold")
    assert "threshold" in r.status and "{x2, x3}" in r.status
    alone = loopint.compute(vertex, {"s": -2.0 * s2, "m": scale}, rtol=1e-6)
    for j, c in r.coefficients.items():
        assert np.isnan(c[1]) and np.isnan(r.coefficient_errors[j][1])
        assert abs(c[0] - alone.coefficients[j]) <= 3 * abs(alone.coefficient_errors[j])
