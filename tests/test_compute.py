"""The regulator driver and loopint.compute against closed forms.

C0(0,0,s;m,m,m): below threshold (delta = 0 path) to 1e-9 and above threshold (delta-sequence
+ Wynn epsilon or rational extrapolation in delta) to 1e-6 relative, real and
imaginary parts, with honest errors from near threshold to far above it; batched kinematics
equal single runs; an interrupted delta-run resumed from its checkpoint equals an
uninterrupted run.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import loopint
from loopint.compute import compute
from loopint.plan import integrand
from physical_points import c0_equal

TRIANGLE = dict(internal_lines=[["m", [1, 2]], ["m", [2, 3]], ["m", [3, 1]]],
                external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
                scalar_products={"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"})


def c0_exact(s: float, m: float = 1.0) -> complex:
    """C0(0,0,s;m,m,m) in pySecDec's normalization: its closed form, mpmath at 30 digits
    (:func:`physical_points.c0_equal`)."""
    return c0_equal(s, m)


def _lowerings(call):
    """``call()`` and the durations of the JAX lowerings (new compilations) it caused."""
    import jax
    lowered = []

    def listener(event, duration, **_):
        if event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
            lowered.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        return call(), lowered
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


@pytest.fixture(scope="module")
def triangle():
    return loopint.Diagram.from_graph(**TRIANGLE)


@pytest.mark.parametrize("s", [1.0, -3.0, 3.9])
def test_below_threshold_delta_zero(triangle, s):
    r = compute(triangle, {"s": s, "m": 1.0}, rtol=1e-10)
    exact = c0_exact(s)
    assert r.converged and r.status == "converged"
    assert r.delta == [] and r.table == []
    assert abs(r.value - exact) <= 1e-9 * abs(exact)
    # honest: true error within the reported one (times 3 for safety)
    assert abs(r.value - exact) <= 3 * abs(r.error) + 1e-15


def test_a_diagram_file_is_computed_from_its_path(tmp_path):
    path = tmp_path / "triangle.toml"
    path.write_text('[diagram]\ndimension = 4\n'
                    'internal_lines = [["m", [1, 2]], ["m", [2, 3]], ["m", [3, 1]]]\n'
                    'external_lines = [["p1", 1], ["p2", 2], ["p3", 3]]\n'
                    '[diagram.scalar_products]\n"p1*p1" = "0"\n"p2*p2" = "0"\n'
                    '"p1*p2" = "s/2"\n[kinematics]\ns = 3.0\nm = 1.0\n')
    by_path, by_str = compute(path, rtol=1e-8), compute(str(path), {"s": -1.0, "m": 1.0})
    assert by_path.converged and abs(by_path.value - c0_exact(3.0)) <= 1e-8 * abs(c0_exact(3.0))
    assert abs(by_str.value - c0_exact(-1.0)) <= 1e-6 * abs(c0_exact(-1.0))
    with pytest.raises(TypeError, match="Problem, a Diagram or the path"):
        compute(3.0)


def test_above_threshold_delta_sequence(triangle):
    exact = c0_exact(10.0)
    r = compute(triangle, {"s": 10.0, "m": 1.0}, rtol=1e-6, contour="none")
    assert r.converged, r.status
    assert r.table, "contour = 'none': a physical point must use the delta-sequence"
    assert abs(r.value.real - exact.real) <= 1e-6 * abs(exact)
    assert abs(r.value.imag - exact.imag) <= 1e-6 * abs(exact)
    assert abs(r.value.real - exact.real) <= 3 * abs(r.error.real) + 1e-12
    assert abs(r.value.imag - exact.imag) <= 3 * abs(r.error.imag) + 1e-12
    d = [row["delta"] for row in r.table]
    assert np.allclose(np.array(d[:-1]) / np.array(d[1:]), 1.2)


@pytest.mark.parametrize("s,converges", [(4.2, False), (4.5, True), (6.0, True), (20.0, True),
                                         (50.0, True)])
def test_delta_sequence_errors_are_honest(triangle, s, converges):
    """Close to threshold (s = 4.2 m², the singularity of I(delta) nearly at delta = 0) the
    20 deltas do not reach 1e-6 and the run says so; from s = 4.5 m² on, up to the sharp
    integrand far above threshold (50 m²), it meets 1e-6 with the rational fit.  The error
    bounds the true one throughout (measured: at most 0.3 of it)."""
    exact = c0_exact(s)
    r = compute(triangle, {"s": s, "m": 1.0}, rtol=1e-6, contour="none")
    assert r.converged == converges, r.status
    assert abs(r.value.real - exact.real) <= 3 * abs(r.error.real) + 1e-14
    assert abs(r.value.imag - exact.imag) <= 3 * abs(r.error.imag) + 1e-14
    if converges:
        assert abs(r.value - exact) <= 1e-6 * abs(exact)
    method = r.info["regulated"]["extrapolation"]["method"]
    assert len(method) == 1 and method[0].startswith("re: ")


def test_repeated_calls_reuse_the_lowered_integrand(triangle):
    """compute() keeps the lowered integrand of a diagram (keyed by its content), so a second
    call, even with a freshly built equal diagram, lowers no kernel (other kinematics would
    only add kernels for buffer shapes not met before)."""
    kin = {"s": 10.0, "m": 1.0}
    compute(triangle, kin, rtol=1e-4, contour="none")
    again = loopint.Diagram.from_graph(**TRIANGLE)
    r, lowered = _lowerings(lambda: compute(again, kin, rtol=1e-4, contour="none"))
    assert r.converged and abs(r.value - c0_exact(10.0)) <= 1e-4 * abs(c0_exact(10.0))
    assert lowered == []
    a = integrand(triangle, "simplex", "none", "float64")
    assert integrand(again, "simplex", "none", "float64") is a
    assert integrand(again, "sectors", "none", "float64") is not a


def test_batched_equals_single(triangle):
    s = np.array([-2.0, 0.5, 2.0, 3.5])
    rb = compute(triangle, {"s": s, "m": 1.0}, rtol=1e-9)
    assert rb.converged
    # several Euclidean points: one vector cubature; s = 2 m^2, where a coefficient of F
    # vanishes, is a support group of its own (one point: iterated)
    assert rb.method == "cubature+iterated" and len(rb.info["groups"]) == 2
    for i, si in enumerate(s):
        r1 = compute(triangle, {"s": float(si), "m": 1.0}, rtol=1e-9)
        assert r1.method == "iterated"
        assert abs(rb.value[i] - r1.value) <= 1e-9 * abs(r1.value)
        assert abs(rb.value[i] - c0_exact(si)) <= 1e-8 * abs(c0_exact(si))
        assert abs(rb.value[i] - c0_exact(si)) <= 3 * abs(rb.error[i])


def test_prefactor_none_is_bare(triangle):
    r = compute(triangle, {"s": 1.0, "m": 1.0}, rtol=1e-9, prefactor="none")
    assert r.prefactor == "none"
    assert abs(r.value + c0_exact(1.0)) <= 1e-8     # bare = -C0 for the triangle


def test_not_converged_is_reported(triangle):
    r = compute(triangle, {"s": 10.0, "m": 1.0}, rtol=1e-6, max_evals=200, contour="none")
    assert not r.converged
    assert r.status != "converged"


@pytest.mark.parametrize("first, then", [(None, None), (1, "all")])
def test_resume_equals_uninterrupted(triangle, tmp_path, first, then):
    """A stopped delta sequence resumes to the uninterrupted result; the checkpoint does
    not depend on ``devices`` (a run stopped with devices = 1 resumes with "all")."""
    kin = {"s": 10.0, "m": 1.0}
    kw = dict(rtol=1e-5, contour="none")
    full = compute(triangle, kin, devices=first, **kw)
    ck = tmp_path / "run.json.partial"

    class Stop(Exception):
        pass

    def stop_after_first(ev):
        if ev["stage"] == "delta":
            raise Stop

    with pytest.raises(Stop):
        compute(triangle, kin, checkpoint=str(ck), progress=stop_after_first, devices=first,
                **kw)
    saved = json.loads(ck.read_text())
    assert 0 < len(saved["rows"]) < len(full.table)
    resumed = compute(triangle, kin, checkpoint=str(ck), resume=True, devices=then, **kw)
    assert resumed.value == full.value
    assert resumed.error == full.error
    assert len(resumed.table) == len(full.table)


def test_resume_refuses_other_problem(triangle, tmp_path):
    ck = tmp_path / "c.partial"
    ck.write_text(json.dumps({"fingerprint": "0" * 16, "rows": []}))
    with pytest.raises(ValueError, match="checkpoint"):
        compute(triangle, {"s": 10.0, "m": 1.0}, rtol=1e-4, checkpoint=str(ck), resume=True,
                contour="none")


def test_which_delta_terms_may_enter_the_extrapolation():
    from loopint.delta_sequence import term_usable
    assert term_usable("converged", "iterated")
    assert term_usable("memory_limit: 13451001 regions", "cubature")
    assert term_usable("max_evals: stopped after 1e9 evaluations", "cubature")
    assert not term_usable("memory_limit: level 3 full", "iterated")
    assert not term_usable("nonfinite: integrand returned NaN/inf at 3 points", "cubature")


# ------------------------------------------------------------------ physical points by default
@pytest.mark.parametrize("s", [10.0, 4.5, 4.01, 4.0001, 50.0])
def test_physical_points_default_to_the_deformed_contour(triangle, s):
    """contour = "auto": the deformed contour, close to threshold too, with an honest error."""
    exact = c0_exact(s)
    r = compute(triangle, {"s": s, "m": 1.0}, rtol=1e-6)
    assert r.converged, r.status
    assert r.info["regulated"]["point_method"] == ["contour"]
    assert r.delta == [] and r.region == "physical"
    assert abs(r.value - exact) <= 1e-6 * abs(exact)
    assert abs(r.value.real - exact.real) <= 3 * abs(r.error.real) + 1e-15
    assert abs(r.value.imag - exact.imag) <= 3 * abs(r.error.imag) + 1e-15


def test_a_failed_contour_falls_back_to_the_delta_sequence(triangle):
    """A deformation far too strong (lambda given, so not shrunk) leaves Im V(z) > 0 at many
    points: the contour's run is not converged and the point goes to the delta sequence."""
    exact = c0_exact(10.0)
    r = compute(triangle, {"s": 10.0, "m": 1.0}, rtol=1e-6, contour_lambda=50.0)
    assert r.info["regulated"]["point_method"] == ["delta sequence"]
    assert r.converged, r.status
    assert r.table and abs(r.value - exact) <= 1e-6 * abs(exact)
    only = compute(triangle, {"s": 10.0, "m": 1.0}, rtol=1e-6, contour="deform",
                   contour_lambda=50.0)
    assert not only.converged and only.status.startswith("nonfinite")


def test_same_path_in_two_unit_systems(triangle):
    """C0 has mass dimension -2: at m = 150 and s = 10 m^2 the value is 150^-2 times that at
    m = 1; the contour takes the same path (lambda is relative to the scale of F/U) and the
    same evaluations."""
    a = compute(triangle, {"s": 10.0, "m": 1.0}, rtol=1e-6)
    b = compute(triangle, {"s": 10.0 * 150.0**2, "m": 150.0}, rtol=1e-6)
    assert a.converged and b.converged
    assert abs(b.value * 150.0**2 - a.value) <= 1e-9 * abs(a.value)
    assert abs(b.evaluations - a.evaluations) <= 0.1 * a.evaluations
    assert abs(abs(b.error) * 150.0**2 - abs(a.error)) <= 0.1 * abs(a.error)


def test_cross_check_runs_both_methods(triangle):
    r = compute(triangle, {"s": 10.0, "m": 1.0}, rtol=1e-6, cross_check=True)
    assert r.converged, r.status
    (check,) = r.info["regulated"]["cross_check_result"]
    assert check["sigmas"] < 5 and r.table
    exact = c0_exact(10.0)
    assert abs(check["contour"] - exact) <= 1e-6 * abs(exact)
    assert abs(check["delta_sequence"] - exact) <= 1e-6 * abs(exact)


def test_methods_that_disagree_are_never_converged():
    from loopint.contour import combine_physical
    c = {"value": np.array([1.0 + 1.0j]), "error": np.array([1e-8 + 1e-8j]),
         "converged": np.array([True]), "status": ["converged"]}
    d = {"value": np.array([1.0 + 1.001j]), "error": np.array([1e-8 + 1e-8j]),
         "converged": np.array([True]), "status": ["converged"], "points": np.array([0])}
    out = combine_physical(c, d, 1, cross_check=True)
    assert not out["converged"][0] and out["status"][0].startswith("methods disagree")
    agree = dict(d, value=np.array([1.0 + 1.0j + 2e-8]))
    out = combine_physical(c, agree, 1, cross_check=True)
    assert out["converged"][0] and out["cross_check"][0]["sigmas"] < 5
    # an unconverged delta sequence: its error is a lower bound, so far apart is incomplete
    failed = dict(d, value=np.array([15.0 + 11.0j]), converged=np.array([False]),
                  status=["extrapolation not converged: tolerance_not_met"])
    out = combine_physical(c, failed, 1, cross_check=True)
    assert not out["converged"][0] and out["cross_check"][0]["sigmas"] > 5
    assert out["status"][0] == ("cross-check incomplete: contour converged; delta sequence "
                                "extrapolation not converged: tolerance_not_met")


def test_cross_check_of_a_euclidean_point_says_there_is_nothing_to_compare(triangle):
    r = compute(triangle, {"s": 1.0, "m": 1.0}, rtol=1e-6, cross_check=True)
    assert r.converged and "nothing to cross-check" in r.info["cross_check"]


@pytest.mark.parametrize("kw, key", [
    (dict(contour="sometimes"), "contour"),
    (dict(cross_check="yes"), "cross_check"),
    (dict(cross_check=True, contour="none"), "cross_check"),
    (dict(contour_lambda=-1.0), "contour_lambda"),
    (dict(contour_lambda=0.0), "contour_lambda"),
])
def test_bad_physical_settings_name_the_key(triangle, kw, key):
    from loopint.problem import SpecError
    with pytest.raises(SpecError, match=key):
        compute(triangle, {"s": 10.0, "m": 1.0}, **kw)


@pytest.mark.parametrize("method", ["cubature", "qmc"])
def test_new_physical_points_reuse_the_compiled_contour(triangle, method):
    """The engines take the bound integrand's arrays (kinematics, lambda) as traced
    arguments: a new point on the deformed contour compiles nothing."""
    compute(triangle, {"s": 10.0, "m": 1.0}, rtol=1e-5, method=method)
    r, lowered = _lowerings(lambda: compute(triangle, {"s": 12.5, "m": 1.0}, rtol=1e-5,
                                            method=method))
    assert r.converged and r.info["regulated"]["point_method"] == ["contour"]
    assert abs(r.value - c0_exact(12.5)) <= 1e-5 * abs(c0_exact(12.5))
    assert lowered == []


def test_points_status_counts_all_points_once():
    """A batch assembled from shares (devices, support groups) carries one count of its own
    points and each share's causes without the share's count; distinct causes, sorted."""
    from loopint.result import points_status
    assert points_status([True, True], []) == "converged"
    ok = [True, False, False, True, False, True, False]
    shares = ["1 of 2 points not converged: max_evals: stopped after 1e9 evaluations",
              "2 of 3 points not converged: extrapolation not converged (re: a; im: b)",
              "max_evals: stopped after 1e9 evaluations"]
    assert points_status(ok, shares) == (
        "4 of 7 points not converged: extrapolation not converged (re: a; im: b); "
        "max_evals: stopped after 1e9 evaluations")


@pytest.mark.parametrize("unit", [1.0, 150.0])
def test_a_batch_of_very_different_scales_takes_a_delta_sequence_per_scale(triangle, unit):
    """The delta sequence starts at the scale of |F|/U; one sequence for a batch that holds
    s = 21.5 m^2 and s = 3100 m^2 started 16 times above the first point's scale, ended before
    reaching it and extrapolated to values 1e12 too small.  Points are grouped by octaves of
    4 in that scale, each group its own sequence: the points converge as they do alone, to
    the closed form within rtol, in two unit systems."""
    m = 1.3 * unit
    s = np.array([21.4785714285714, 108.95, 3100.0]) * unit ** 2
    r = compute(triangle, kinematics={"s": s, "m": m}, rtol=1e-6, contour="none")
    assert len(r.info["regulated"]["delta_groups"]) == 3
    for k in (0, 1):
        assert r.info["point_converged"][k], r.info["point_status"][k]
        want = c0_exact(s[k], m)
        assert abs(complex(r.value[k]) - want) <= 1e-6 * abs(want)
