"""Physical kinematics that just work: loopint's defaults on points above thresholds.

The physical test set of tests/physical_points.py: one-loop bubbles (D = 2), triangles and
boxes with unequal masses, near and far from thresholds, the massive pentagon gamma gamma ->
t tbar H, two-loop planar and crossed vertices, pySecDec's elliptic two-loop box and the D = 2
two-loop sunrise, all with F changing sign on the simplex.  Each point is computed by
``loopint.compute`` with its DEFAULT settings (only ``rtol``: 1e-6 one loop, 1e-4 two loops)
in two unit systems ("m = 1" and "GeV" = m * 150) and compared with an independent reference:

* closed forms and 1-D mpmath integrals (tests/physical_points.py; checked here against
  each other, against an explicit -i*eta integration and against pySecDec),
* pySecDec 1.6.6 with contour deformation and Qmc (tests/data/physical_references.json,
  written by tools/make_physical_references.py).

Asserted per point and unit system: converged, and |value - reference| <= 3 |error| + the
reference's own error (3 sigma of pySecDec's estimate; 1e-12 relative for mpmath); per point:
the two unit systems agree after the scaling lambda**(L*D - 2*nu) within their combined
errors, and their relative error estimates agree within a factor of 10.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

import loopint

sys.path.insert(0, str(Path(__file__).resolve().parent))
import physical_points as pp  # noqa: E402

DATA = Path(pp.DATA)
RTOL = {1: 1e-6, 2: 1e-4}
MPMATH_REL = pp.MPMATH_REL
UNITS = ("m=1", "GeV")
psd_data = pp.pysecdec_data


@functools.lru_cache(maxsize=None)
def diagram(name: str, dimension: int):
    return loopint.Diagram.from_graph(**pp.DIAGRAMS[name], dimension=dimension)


@functools.lru_cache(maxsize=None)
def run(point_id: str, unit: str):
    p = pp.POINTS_BY_ID[point_id]
    kin = p["kinematics"] if unit == "m=1" else pp.scaled_kinematics(p["kinematics"])
    return loopint.compute(diagram(p["diagram"], p["dimension"]), kinematics=kin,
                           rtol=RTOL[p["loops"]])


def scale(point, unit: str) -> float:
    return 1.0 if unit == "m=1" else pp.LAMBDA ** pp.mass_dimension(point)


def _is_slow(p) -> bool:
    return p["loops"] == 2 or p["diagram"] == "pentagon"


ONE_LOOP = [pytest.param(p["id"], id=p["id"]) for p in pp.POINTS if not _is_slow(p)]
# the two-loop points and the pentagon (3 s and 15 s of a 2-core CPU for both unit systems)
SLOW = [pytest.param(p["id"], id=p["id"], marks=pytest.mark.slow) for p in pp.POINTS
        if _is_slow(p)]


def _value_problem(point_id: str, unit: str) -> str | None:
    """None if loopint's run in this unit system converged to within its error of the
    reference, else what went wrong."""
    p = pp.POINTS_BY_ID[point_id]
    r = run(point_id, unit)
    ref, ref_err, source = pp.reference(p)
    ref, ref_err = ref * scale(p, unit), ref_err * abs(scale(p, unit))
    how = r.info.get("regulated", {}).get("point_method")
    msg = (f"{point_id} [{unit}]: loopint {r.value!r} +- {r.error!r} ({r.status}, {how}, "
           f"{r.evaluations} evaluations, {r.seconds:.1f} s) vs {ref!r} +- {ref_err:.2g} "
           f"({source}); |diff| = {abs(r.value - ref):.3g}")
    if r.region != "physical":      # a physical point: F changes sign on the simplex
        return "not classified physical: " + msg
    if not r.converged:
        return "not converged: " + msg
    if not abs(r.value - ref) <= 3 * abs(r.error) + ref_err:
        return "wrong beyond 3 errors: " + msg
    return None


def _units_problem(point_id: str) -> str | None:
    """None if the two unit systems agree after the scaling lambda**(L*D - 2*nu): values
    within their combined errors, relative error estimates within a factor of 10."""
    p = pp.POINTS_BY_ID[point_id]
    a, b = run(point_id, "m=1"), run(point_id, "GeV")
    sc = scale(p, "GeV")
    vb, eb = b.value / sc, abs(b.error) / abs(sc)
    msg = (f"{point_id}: m=1 {a.value!r} +- {abs(a.error):.3g}; GeV / lambda^"
           f"{pp.mass_dimension(p)} {vb!r} +- {eb:.3g}")
    if not abs(a.value - vb) <= 3 * (abs(a.error) + eb):
        return "unit systems disagree: " + msg
    rel_a, rel_b = abs(a.error) / abs(a.value), eb / abs(vb)
    if not 0.1 <= rel_a / rel_b <= 10:
        return "relative errors inconsistent between unit systems: " + msg
    return None


def _check_point(point_id: str):
    """Both unit systems and their consistency in one test (one worker computes both runs
    under pytest-xdist); every problem is reported, not only the first."""
    problems = [_value_problem(point_id, u) for u in UNITS] + [_units_problem(point_id)]
    problems = [x for x in problems if x]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("point_id", ONE_LOOP)
def test_one_loop_physical(point_id):
    _check_point(point_id)


@pytest.mark.parametrize("point_id", SLOW)
def test_slow_physical(point_id):
    _check_point(point_id)


@pytest.mark.parametrize("point_id", ["B0D2_m1_2_s12", "C0eq_s30", "C0eq_s4.01"])
def test_the_delta_sequence_does_not_depend_on_units(point_id):
    """The delta sequence (contour 'none') in m = 1 units and in GeV: delta_0 scales with F/U,
    so both take the same path, the same evaluations and reach the same relative error, and
    a point that does not converge (just above threshold) fails alike in both."""
    p = pp.POINTS_BY_ID[point_id]
    d = diagram(p["diagram"], p["dimension"])
    a = loopint.compute(d, p["kinematics"], rtol=1e-6, contour="none")
    b = loopint.compute(d, pp.scaled_kinematics(p["kinematics"]), rtol=1e-6, contour="none")
    sc = scale(p, "GeV")
    assert a.converged == b.converged and a.method == b.method
    assert len(a.table) == len(b.table)
    assert abs(a.evaluations - b.evaluations) <= 0.1 * a.evaluations
    rel_a, rel_b = abs(a.error) / abs(a.value), abs(b.error) / abs(b.value)
    assert abs(rel_a / rel_b - 1) <= 0.1
    assert abs(a.value - b.value / sc) <= 1e-3 * rel_a * abs(a.value) + 1e-12 * abs(a.value)


# ------------------------------------------------------------------ the references themselves
def test_the_set():
    """At least 15 points, every class of the issue, and pySecDec's file made for them (the
    point tests check that each is physical: F changes sign on the simplex)."""
    ids = [p["id"] for p in pp.POINTS]
    assert len(ids) == len(set(ids)) >= 15
    kinds = {p["diagram"] for p in pp.POINTS}
    assert {"triangle", "triangle_eq", "box", "pentagon", "ladder_2L", "crossed_2L",
            "sunrise_2L"} <= kinds
    data = psd_data()
    assert data["pysecdec_version"] == "1.6.6"
    for p in pp.POINTS:
        assert p["id"] in data["points"], f"{p['id']}: no pySecDec value in {DATA.name}"
        e = data["points"][p["id"]]     # the file was made for this very point
        assert e["kinematics"] == p["kinematics"], p["id"]
        assert e["definition"]["dimension"] == p["dimension"], p["id"]
        assert e["definition"]["loops"] == p["loops"], p["id"]
        assert e["mass_dimension"] == pp.mass_dimension(p), p["id"]


@pytest.mark.parametrize("s,m1,m2", [(12.0, 1.0, 2.0), (4.004, 0.5, 1.5), (3.0, 1.0, 2.0),
                                     (-2.0, 1.0, 2.0)])
def test_bubble_closed_form_against_explicit_eta(s, m1, m2):
    """The -i0 branches of the D = 2 bubble's closed form against mpmath.quad with an explicit
    -i*eta, linearly extrapolated to eta -> 0 (eta = 1e-7 and 5e-8: the nearest singularity
    in eta is at |eta| ~ lambda(s, m1^2, m2^2)/s, 4e-3 for the near-threshold point)."""
    exact = pp.bubble_d2(s, m1, m2)
    e1 = pp.bubble_d2_direct(s, m1, m2, 1e-7)
    e2 = pp.bubble_d2_direct(s, m1, m2, 5e-8)
    assert abs((2 * e2 - e1) - exact) <= 1e-8 * abs(exact)


@pytest.mark.parametrize("s", [-3.0, 1.0, 4.0001, 4.01, 10.0, 30.0])
def test_triangle_1d_against_equal_mass_closed_form(s):
    """The 1-D triangle (inner Feynman parameter in closed form) at equal masses, the
    invariant s on each of the three legs in turn (each pair of lines as the inner one)."""
    exact = pp.c0_equal(s, 1.0)
    for q in ((0, 0, s), (s, 0, 0), (0, s, 0)):
        assert abs(pp.triangle_d4(*q, 1.0, 1.0, 1.0) - exact) <= 1e-13 * abs(exact)


def test_triangle_1d_just_below_an_anomalous_threshold():
    """Masses 1, p1^2 = p2^2 = 3 (anomalous threshold at p3^2 = 3), p3^2 = 2.997: two break
    points of the outer integral lie close, where mpmath.quad needs more than its default
    degree; the reference agrees with itself at 50 digits, and loopint with it."""
    ref = pp.triangle_d4(3.0, 3.0, 2.997, 1.0, 1.0, 1.0)
    assert abs(ref - pp.triangle_d4(3.0, 3.0, 2.997, 1.0, 1.0, 1.0, dps=50)) <= 1e-14 * abs(ref)
    tri = loopint.Diagram.from_graph(**pp.DIAGRAMS["triangle"])
    r = loopint.compute(tri, {"q1": 3.0, "q2": 3.0, "q3": 2.997, "ma": 1.0, "mb": 1.0,
                              "mc": 1.0}, rtol=1e-8)
    assert r.converged and abs(r.value - ref) <= 1e-8 * abs(ref)


@pytest.mark.parametrize("s,P", [(-3.0, 0.5), (3.0, 0.7), (5.0, 2.0), (7.0, 3.0)])
def test_photon_vertex_1d_against_the_triangle_1d(s, P):
    """The vertex with a massless exchange by its own 1-D reduction (radial variable of the
    two massive lines) and by the triangle's (inner variable closed form) agree away from
    P = m^2, where the triangle's inner integral meets a logarithm of zero."""
    ref = pp.triangle_d4(s, P, P, 1.0, 0.0, 1.0)
    assert abs(pp.vertex_photon_d4(s, P, 1.0) - ref) <= 1e-14 * abs(ref)


def test_sunrise_dispersion_against_bessel():
    """Below threshold the dispersive sunrise equals the position-space Bessel integral and
    the reference of diagrams/sunrise_2L_D2.toml."""
    v = pp.sunrise_d2(4.0, 1.0, 2.0, 3.0)
    assert abs(v - complex(-0.670801674531826207390456912525)) <= 1e-13
    for s in (30.0, 35.9):
        assert abs(pp.sunrise_d2(s, 1.0, 2.0, 3.0) - pp.sunrise_d2_bessel(s, 1.0, 2.0, 3.0)) \
            <= 1e-12


@pytest.mark.parametrize("point_id", [p["id"] for p in pp.POINTS
                                      if p["reference"] != "pysecdec"])
def test_mpmath_references_agree_with_pysecdec(point_id):
    """Where both exist the two references agree within pySecDec's error (3 sigma)."""
    p = pp.POINTS_BY_ID[point_id]
    e = psd_data()["points"][point_id]
    v = pp.closed_reference(p)
    assert abs(complex(*e["value"]) - v) <= 3 * np.hypot(*e["error"]) + MPMATH_REL * abs(v)


@pytest.mark.parametrize("point_id", [p["id"] for p in pp.POINTS
                                      if p["loops"] == 1 or p["diagram"] == "sunrise_2L"])
def test_pysecdec_unit_systems_agree(point_id):
    """pySecDec's own two runs scale as lambda**(L*D - 2*nu) (the two-loop vertices were
    run in m = 1 units only).  A floor of 1e-12 relative: pySecDec's estimates leave out
    rounding, which near a threshold in GeV units is larger (B0D2_near: 3e-14 relative
    apart at reported errors of 5e-16)."""
    p = pp.POINTS_BY_ID[point_id]
    e = psd_data()["points"][point_id]
    assert e["mass_dimension"] == pp.mass_dimension(p) and e["lambda"] == pp.LAMBDA
    sc = pp.LAMBDA ** pp.mass_dimension(p)
    a, b = complex(*e["value"]), complex(*e["value_GeV"]) / sc
    assert abs(a - b) <= 3 * (np.hypot(*e["error"]) + np.hypot(*e["error_GeV"]) / sc) \
        + 1e-12 * abs(a)


def test_cold_benchmark_runs_a_point_in_a_fresh_process():
    """``loopint.bench.physical_cases --cold``: a point computed in a process of its own
    with an empty compilation cache; its row reports the process's wall time with the
    import and the compilation inside it, and the value against the point's reference."""
    from loopint.bench import physical_cases
    rows = physical_cases.run_cold(quick=True, only="B0D2_near")
    assert len(rows) == 1
    row = rows[0]
    assert row["converged"] and row["rel_true_error"] <= 1e-4
    assert 0 < row["import"] < row["wall"] and 0 < row["compiling"] < row["wall"]
    assert row["compiled_ahead"] == 0.0          # off on a CPU
