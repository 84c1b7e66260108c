"""Globally adaptive Genz–Malik cubature (loopint.engines.cubature).

References: the closed-form values of ``loopint.testfunctions.genz_suite`` (seed 001 f1–f7)
and ``scipy.integrate.cubature`` (rule="genz-malik") as an independent code.
"""

import math

import jax.numpy as jnp
import numpy as np
import pytest

import loopint  # noqa: F401  (float64)
from loopint.engines import base, cubature
from loopint.engines.cubature import Cubature
from loopint.engines.regions import bytes_per_region
from loopint.testfunctions import f3, f4, genz_suite

CASES = {c.name: c for c in genz_suite()}

# (case, rtol, max_evals, must converge).  Cheap on a 2-core CPU; the expensive rows of the
# suite (8-D, f2, f6, high precision in 5-D) run with a small budget and are only checked
# for honesty (a converged answer must be right, a stop must say why).
SUITE = [
    ("f3_3d", 1e-3, 10**6, True),
    ("f3_3d", 1e-6, 10**6, True),
    ("f3_3d", 1e-8, 10**6, True),
    ("f3_3d", 1e-10, 10**7, True),
    ("f3_5d", 1e-3, 10**6, True),
    ("f4_5d", 1e-3, 3 * 10**6, True),
    ("f5_5d", 1e-3, 5 * 10**6, True),
    ("f6_6d", 1e-3, 7 * 10**4, False),   # discontinuous: budget-limited, honesty only
    ("f1_8d", 1e-3, 2 * 10**5, False),   # sign-changing, 8-D: honesty only
    ("f7_8d", 1e-3, 2 * 10**5, False),   # 8-D: honesty only
]


def _run(case, rtol, max_evals, **kw):
    return Cubature(**kw).integrate_box(case.f, np.zeros(case.ndim), np.ones(case.ndim),
                                        rtol=rtol, max_evals=max_evals)


@pytest.mark.parametrize("name,rtol,max_evals,must_converge", SUITE)
def test_genz_suite(name, rtol, max_evals, must_converge):
    case = CASES[name]
    r = _run(case, rtol, max_evals)
    true_rel = abs(r.value - case.exact) / abs(case.exact)
    assert np.isfinite(r.value) and r.error >= 0
    assert r.evaluations <= max_evals
    if r.converged:
        assert r.status == base.CONVERGED
        assert true_rel <= rtol, (name, rtol, true_rel, r)
        assert r.error <= rtol * abs(r.value)
    else:
        assert r.status.startswith(base.MAX_EVALS), r.status
    if must_converge:
        assert r.converged, r
    assert r.info["regions"] >= 1 and r.info["iterations"] >= 0


def _gauss_cos(x, xp=jnp):
    return xp.exp(-x[:, 0] ** 2 - 2 * x[:, 1] ** 2) * xp.cos(x[:, 0] * x[:, 2])


def _f3_numpy(x):
    return (1 + x @ np.arange(1.0, 4.0)) ** -4


def test_scipy_agreement():
    """Same tolerance, same rule family, independent code: scipy.integrate.cubature."""
    cub = pytest.importorskip("scipy.integrate").cubature
    for f, f_np, lo, hi, rtol in [
            (_gauss_cos, lambda x: _gauss_cos(x, np), [-1.0, 0.0, 0.5], [2.0, 1.5, 1.0], 1e-8),
            (f3, _f3_numpy, [0.0] * 3, [1.0] * 3, 1e-6)]:
        ref = cub(f_np, np.array(lo), np.array(hi), rule="genz-malik", rtol=rtol, atol=0)
        assert ref.status == "converged"
        r = Cubature().integrate_box(f, lo, hi, rtol=rtol)
        assert r.converged
        assert abs(r.value - ref.estimate) <= r.error + ref.error
        assert abs(r.value - ref.estimate) <= 2 * rtol * abs(ref.estimate)


def test_memory_limit_returns_honest_best_estimate():
    exact = CASES["f4_5d"].exact
    r = Cubature(memory_limit=4096 * bytes_per_region(5, 1)).integrate_box(f4, np.zeros(5), np.ones(5),
                                                                     rtol=1e-5, max_evals=10**8)
    assert not r.converged
    assert r.status.startswith(base.MEMORY_LIMIT), r.status
    assert np.isfinite(r.value) and np.isfinite(r.error)
    assert abs(r.value - exact) <= 3 * r.error
    assert r.info["regions"] <= 4096


def test_retiring_small_error_regions_frees_memory():
    """At the region limit, tail regions of the Gaussian are retired and the run converges."""
    exact = CASES["f4_5d"].exact
    r = Cubature(memory_limit=4096 * bytes_per_region(5, 1)).integrate_box(f4, np.zeros(5), np.ones(5),
                                                                     rtol=1e-3, max_evals=10**7)
    assert r.info["retired_regions"] > 0
    assert r.converged and abs(r.value - exact) <= 1e-3 * exact


def _second(x):
    return 1e3 * f3(x) + jnp.sin(x[:, 0])


def _vector(x):
    return jnp.stack([f3(x), _second(x)], axis=1)


def test_vector_and_complex_integrands_match_componentwise_runs():
    lo, hi = np.zeros(3), np.ones(3)
    rtol = 1e-6
    rv = Cubature().integrate_box(_vector, lo, hi, rtol=rtol)
    parts = [Cubature().integrate_box(g, lo, hi, rtol=rtol) for g in (f3, _second)]
    assert rv.converged and rv.value.shape == (2,) and rv.error.shape == (2,)
    for k, p in enumerate(parts):
        assert abs(rv.value[k] - p.value) <= rv.error[k] + p.error
        assert abs(rv.value[k] - p.value) <= 2 * rtol * abs(p.value)

    def fc(x):
        return f3(x) + 1j * jnp.cos(x[:, 0] + x[:, 1])

    rc = Cubature().integrate_box(fc, lo, hi, rtol=rtol)
    im_exact = 2 * math.cos(1) - math.cos(2) - 1       # ∫∫ cos(x+y) over [0,1]^2
    assert rc.converged and isinstance(rc.value, complex) and isinstance(rc.error, complex)
    assert abs(rc.value.real - parts[0].value) <= rc.error.real + parts[0].error
    assert abs(rc.value.imag - im_exact) <= rc.error.imag + 1e-15
    assert abs(rc.value - (CASES["f3_3d"].exact + 1j * im_exact)) <= rtol * abs(rc.value)


def test_nonfinite_values_are_counted_and_never_converged():
    r = Cubature().integrate_box(lambda x: jnp.where(x[:, 0] < 0.1, jnp.nan, f3(x)), np.zeros(3),
                                 np.ones(3), rtol=1e-4)
    assert not r.converged
    assert r.status.startswith(base.NONFINITE) and r.info["nonfinite"] > 0
    assert np.isfinite(r.value)


def _exp_linear(x):
    return jnp.exp(x[:, 0] + 2 * x[:, 1] - x[:, 2])


def test_float32_and_box_and_validation():
    r = Cubature(precision="float32").integrate_box(f3, np.zeros(3), np.ones(3), rtol=1e-4)
    assert r.converged
    assert abs(r.value - CASES["f3_3d"].exact) <= 1e-4 * CASES["f3_3d"].exact
    # A box: ∫ exp(x + 2y - z) over [-1, 0.5] x [0, 2] x [0, 1]
    r = Cubature().integrate_box(_exp_linear, [-1, 0, 0], [0.5, 2, 1], rtol=1e-9)
    exact = (math.exp(0.5) - math.exp(-1)) * (math.exp(4) - 1) / 2 * (1 - math.exp(-1))
    assert r.converged and abs(r.value - exact) <= 1e-9 * exact
    with pytest.raises(ValueError):
        Cubature().integrate_box(f3, [0, 0, 0], [1, 0, 1])
    with pytest.raises(ValueError):
        Cubature().integrate_box(f3, np.zeros(3), np.ones(3), rtol=-1)
    with pytest.raises(ValueError):
        Cubature().integrate_box(f3, np.zeros(3), np.ones(3), max_evals=10)


@pytest.mark.parametrize("name,rtol", [("f3_5d", 1e-6), ("f5_5d", 1e-4)])
def test_degree_9_rule(name, rtol):
    """The DCUHRE degree-9 rule reaches tolerances the 7/5 pair needs 10-40x more points for."""
    case = CASES[name]
    r = _run(case, rtol, 10**7, rule="dcuhre9")
    assert r.converged and r.info["rule"] == "dcuhre9"
    assert abs(r.value - case.exact) <= rtol * case.exact


# --- the global error estimate (signed degree-9 sweeps) --------------------------------

_A4 = np.array([2.1, 3.4, 1.7, 2.9])
_W4 = 0.37


def _osc4(x):
    """Genz's oscillatory family in 4-D: cos(2 pi w + a.x), closed form below."""
    return jnp.cos(2 * np.pi * _W4 + x @ jnp.asarray(_A4))


_OSC4 = float(np.real(np.exp(2j * np.pi * _W4) * np.prod((np.exp(1j * _A4) - 1) / (1j * _A4))))


@pytest.mark.parametrize("name,rtol", [("osc4", 1e-7), ("f3_5d", 1e-6), ("f4_5d", 1e-4),
                                       ("f5_5d", 1e-4)])
def test_global_estimate_is_honest_and_tight(name, rtol):
    """The signed sweep's error bounds the true error (smooth, peaked and kinked integrands)
    where the sum of local errors on the same partition overstates it by orders of
    magnitude; two sweeps agree before it is trusted.  Every due sweep is taken
    (``defer_sweeps=False``): at some of these tolerances the local estimate would converge
    sooner (test_sweeps_only_where_they_pay)."""
    f, ndim, exact = ((_osc4, 4, _OSC4) if name == "osc4" else
                      (CASES[name].f, CASES[name].ndim, CASES[name].exact))
    g = Cubature(error_estimate="global", defer_sweeps=False).integrate_box(
        f, np.zeros(ndim), np.ones(ndim), rtol=rtol, max_evals=10**8)
    assert g.converged and g.info["error_estimate"] == "global" and g.info["sweeps"] >= 2, g
    assert abs(g.value - exact) <= g.error, (g.value - exact, g.error)
    assert abs(g.value - exact) <= rtol * abs(exact)
    assert g.error <= g.info["local_error"] / 10
    assert g.info["sweep_evaluations"] < g.evaluations


@pytest.mark.parametrize("rtol,sweeps", [(1e-7, False), (1e-9, True)])
def test_sweeps_only_where_they_pay(rtol, sweeps, monkeypatch):
    """Osc4 in 4-D on the CPU: at rtol 1e-7 the local error's rate predicts convergence in
    fewer integrand points than two sweeps and their kernel's compilation cost, so the
    global run takes none and is the local run, point for point; at 1e-9 it sweeps and
    needs fewer points than the local run.  (An accelerator's compilation counts as more
    points; the CPU's figure is used on any device.)"""
    monkeypatch.setattr(cubature, "SWEEP_COMPILE_POINTS_ACCELERATOR",
                        cubature.SWEEP_COMPILE_POINTS["cpu"])
    g = Cubature(error_estimate="global").integrate_box(_osc4, np.zeros(4), np.ones(4),
                                                        rtol=rtol, max_evals=10**8)
    loc = Cubature(error_estimate="local").integrate_box(_osc4, np.zeros(4), np.ones(4),
                                                         rtol=rtol, max_evals=10**8)
    assert g.converged and loc.converged
    assert abs(g.value - _OSC4) <= min(g.error, rtol * abs(_OSC4))
    if sweeps:
        assert g.info["sweeps"] >= 2 and g.evaluations < loc.evaluations / 2
    else:
        assert g.info["sweeps"] == 0 and g.info["error_estimate"] == "local"
        assert (g.evaluations, g.value, g.error) == (loc.evaluations, loc.value, loc.error)


def test_global_estimate_is_cheaper_at_tight_tolerances():
    """f3 in 5-D to 1e-6: the local sum needs several times the evaluations of the global
    estimate (sweeps included); at loose tolerances the sweeps can cost more than they
    save."""
    case = CASES["f3_5d"]
    g = _run(case, 1e-6, 10**8, error_estimate="global")
    loc = _run(case, 1e-6, 10**8, error_estimate="local")
    assert g.converged and loc.converged
    assert 3 * g.evaluations < loc.evaluations
    assert loc.info["error_estimate"] == "local" and loc.info["sweeps"] == 0


def test_global_estimate_at_the_memory_limit():
    """Stopped by the region bound, the run reports the (smaller, honest) global estimate
    and says so.  The global error is never below the change of the degree-9 total since
    the previous sweep (module docstring), which here keeps it about 8 times below the local
    sum (the signed sum alone was over 10 times below it, and understated the true error on
    coarser partitions in 6-8 D, tests/test_generic_digits.py)."""
    exact = CASES["f4_5d"].exact
    small = 2**14 * bytes_per_region(5, 1)
    r = Cubature(memory_limit=small, error_estimate="global").integrate_box(
        f4, np.zeros(5), np.ones(5), rtol=1e-9, max_evals=10**8)
    loc = Cubature(memory_limit=small, error_estimate="local").integrate_box(
        f4, np.zeros(5), np.ones(5), rtol=1e-9, max_evals=10**8)
    assert not r.converged and r.status.startswith(base.MEMORY_LIMIT), r.status
    assert "global error estimate" in r.status and r.info["error_estimate"] == "global"
    assert abs(r.value - exact) <= r.error < loc.error / 5


def _model_sums(e7, r, exact=1.0):
    """``(S7, S9)`` of successive sweeps with degree-7 errors ``e7`` and ``err9 = r·err7``."""
    return [(np.array([exact + a]), np.array([exact + b * a])) for a, b in zip(e7, r)]


@pytest.mark.parametrize("e7, r, expected", [
    # errors of one sign, shrinking, ratio falling: at least the newest ratio (0.005)
    ([16e-6, 4e-6, 1e-6], [0.02, 0.01, 0.005], max(0.28 / 12, 0.035 / 3)),
    # a constant ratio is measured exactly
    ([16e-6, 4e-6, 1e-6], [0.01, 0.01, 0.01], 0.01),
    # degree-7 errors of both signs, or not shrinking: no ratio
    ([16e-6, -4e-6, 1e-6], [0.02, 0.01, 0.005], None),
    ([4e-6, 4e-6, 1e-6], [0.02, 0.01, 0.005], None),
    # a ratio growing under refinement (0.005, 0.01, 0.02): the changes would give 0.0067,
    # three times below the newest partition's; refused
    ([16e-6, 4e-6, 1e-6], [0.005, 0.01, 0.02], None),
    # the degree-9 rule not clearly better (ratios above GLOBAL_RATIO_MAX): no ratio
    ([16e-6, 4e-6, 1e-6], [0.4, 0.3, 0.2], None),
    # changes within round-off of the totals: no ratio
    ([16e-16, 4e-16, 1e-16], [0.02, 0.01, 0.005], None),
])
def test_degree9_ratio(e7, r, expected):
    """The ratio err9/err7 from three nested sweeps (loopint.engines.cubature module
    docstring): the ratio of the changes of the two totals, where the model holds, never
    below the newest partition's ratio; NaN where the sweeps do not show that regime."""
    sums = _model_sums(e7, r)
    floor = np.array([64 * np.finfo(float).eps])
    got = cubature._degree9_ratio(sums[:2], sums[2][1], sums[2][0], floor)
    if expected is None:
        assert np.isnan(got[0])
    else:
        assert got[0] == pytest.approx(expected, rel=1e-6) and got[0] >= r[-1]


def test_degree9_ratio_not_across_a_retirement():
    """Regions retired between the sweeps enter both totals at degree 7, so the changes mix
    partitions: no ratio is taken across them (the unscaled bound stands)."""
    sums = _model_sums([16e-6, 4e-6, 1e-6], [0.01] * 3)
    floor = np.array([1e-14])
    scaled, kept = cubature._Sweeps(points=1), cubature._Sweeps(points=1)
    for k, (s7, s9) in enumerate(sums):
        signed, rest = s9 - s7, np.zeros(1)
        scaled.record(s9, s7, signed, rest, floor, 10 * 4**k, np.ones(1))
        kept.record(s9, s7, signed, rest, floor, 10 * 4**k, np.ones(1),
                    retired=np.array([0.0 if k < 2 else 1e-3]))
    assert scaled.estimate[1][0] < kept.estimate[1][0]
    assert kept.estimate[1][0] == pytest.approx(2 * 0.99e-6, rel=1e-6)


def test_degree9_ratio_per_component():
    """Each component of a vector integrand gets its own ratio (or none)."""
    a, b = _model_sums([16e-6, 4e-6, 1e-6], [0.01] * 3), _model_sums([16e-6, -4e-6, 1e-6], [0.01] * 3)
    sums = [(np.concatenate([x[0], y[0]]), np.concatenate([x[1], y[1]])) for x, y in zip(a, b)]
    got = cubature._degree9_ratio(sums[:2], sums[2][1], sums[2][0], np.full(2, 1e-14))
    assert got[0] == pytest.approx(0.01) and np.isnan(got[1])


def _swept(errors, counts):
    """A :class:`cubature._Sweeps` after sweeps of ``counts`` regions whose estimates are
    ``errors`` (one component, value 1, each change within the error before)."""
    sw = cubature._Sweeps(points=1)
    for e, n in zip(errors, counts):
        value, z = np.ones(1), np.zeros(1)
        sw.record(value, value, np.array([e / cubature.GLOBAL_SAFETY]), z, z, n, np.ones(1))
    return sw


def test_the_global_estimate_is_carried_forward_at_its_own_rate():
    """Between sweeps of 10^4 and 5·10^4 regions the estimate fell 8-fold: the rate is
    ln 8 / ln 5, and a sweep of R regions is predicted at 1e-6·(R/5e4)^-rate."""
    sw = _swept([8e-6, 1e-6], [10**4, 5 * 10**4])
    rate = np.log(8) / np.log(5)
    assert sw.rate[0] == pytest.approx(rate)
    assert sw.predicted(10**5)[0] == pytest.approx(1e-6 * 2**-rate)
    # an estimate that did not fall gives no rate, and no prediction
    assert _swept([1e-6, 1e-6], [10**4, 5 * 10**4]).rate is None
    assert _swept([1e-6, 1e-6], [10**4, 5 * 10**4]).converges_at(lambda e: True) is None


@pytest.mark.parametrize("tolerance, expected", [
    (0.5e-6, 5e4 * 2**(np.log(5) / np.log(8))),   # inside [1.5, 4] times the last count
    (0.9e-6, 7.5e4),                               # met already at 1.5 times: sweep there
    (1e-8, None),                                  # beyond the fourfold count: no stop
])
def test_a_step_stops_where_the_sweep_is_predicted_to_converge(tolerance, expected):
    """:meth:`_Sweeps.converges_at`: the smallest live count (to 1 %) whose predicted global
    error meets the tolerance, between 1.5 and 4 times the last sweep's count."""
    sw = _swept([8e-6, 1e-6], [10**4, 5 * 10**4])
    got = sw.converges_at(lambda e: e[0] <= tolerance)
    if expected is None:
        assert got is None
    else:
        assert expected <= got <= 1.01 * expected
        assert sw.predicted(got)[0] <= tolerance


def test_the_rate_is_per_component_and_not_across_a_change_of_the_bound():
    """A component whose error is 0 or did not fall is predicted to stay as it is (rate 0),
    so that it does not switch the prediction off for the others; a component whose bound
    changed form between the sweeps (scaled by the degree-9 ratio in one only) gets no rate."""
    before, after = np.array([8e-6, 0.0, 1e-6, 8e-6]), np.array([1e-6, 0.0, 2e-6, 1e-6])
    comparable = np.array([True, True, True, False])
    rate = cubature._falling_rate((None, before), after, 10**4, 5 * 10**4, comparable)
    assert rate == pytest.approx([np.log(8) / np.log(5), 0, 0, 0])
    assert cubature._falling_rate((None, before), after, 10**4, 5 * 10**4,
                                  np.zeros(4, bool)) is None


def test_a_step_stops_at_the_predicted_count(monkeypatch):
    """Where the sweeps predict convergence at a live count within the next step, the step
    splits only as many regions as reach it (a prediction 5 regions ahead, f3 in 3-D)."""
    seen = []
    step = cubature._Run._step

    def watched(run, wanted):
        target = run.progress.regions + 5
        monkeypatch.setattr(cubature._Sweeps, "converges_at", lambda self, met: target)
        out = step(run, wanted)
        seen.append((run.progress.regions, target, wanted))
        return out

    monkeypatch.setattr(cubature._Run, "_step", watched)
    case = CASES["f3_3d"]
    _run(case, 1e-12, 10**5, error_estimate="global", defer_sweeps=False)
    # the last step is cut by the evaluation budget instead
    wide = [(got, target) for got, target, wanted in seen[:-1] if wanted > 5]
    assert wide and all(got == target for got, target in wide), seen


def test_global_estimate_of_the_degree9_total(monkeypatch):
    """f3 in 8-D to rtol 1e-6: the degree-7 bound of the sweeps stays 60-130 times above the
    true error of the degree-9 total; scaled by the measured ratio (from the third sweep) the
    run converges, honestly, where the unscaled bound stops at the same budget."""
    case, budget = CASES["f3_8d"], 3 * 10**8
    r = _run(case, 1e-6, budget, error_estimate="global", defer_sweeps=False)
    true = abs(r.value - case.exact)
    assert r.converged and r.info["error_estimate"] == "global" and r.info["sweeps"] >= 3, r.status
    assert true <= r.error <= 1e-6 * case.exact
    monkeypatch.setattr(cubature, "GLOBAL_RATIO_MAX", 0.0)   # the degree-7 bound alone
    u = _run(case, 1e-6, budget, error_estimate="global", defer_sweeps=False)
    assert not u.converged and u.error > 5 * r.error


def test_global_estimate_validation():
    with pytest.raises(ValueError, match="error_estimate"):
        Cubature(error_estimate="signed").integrate_box(f3, np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="ndim >= 2"):
        Cubature(error_estimate="global").integrate_box(lambda x: x[:, 0] ** 2, [0.0], [1.0])
    with pytest.raises(ValueError, match="genz_malik"):
        Cubature(rule="dcuhre9", error_estimate="global").integrate_box(f3, np.zeros(3),
                                                                        np.ones(3))


@pytest.mark.parametrize("f", [lambda x: np.cos(x.sum(1)),                  # NumPy, not jnp
                               lambda x: jnp.cos(x[:, 0]) if float(x[0, 0]) > 0 else x[:, 0]],
                         ids=["numpy", "python-branch"])
def test_untraceable_integrand_is_a_clear_type_error(f):
    """An integrand JAX cannot trace fails at once with a TypeError that says how to write
    it, not with a TracerArrayConversionError from deep inside the engine."""
    with pytest.raises(TypeError, match=r"jax\.numpy.*jnp\.cos\(x\.sum\(1\)\)"):
        loopint.integrate(f, ndim=4, method="cubature")


# ---------------------------------------------------------------------------------------
# Compilation ahead of need (loopint.engines.regions.AHEAD)


_GROWN_BUFFER = """
import json, threading
import jax, jax.numpy as jnp
from jax.tree_util import Partial
import loopint
from loopint.engines import base, regions
from loopint.engines.cubature import Cubature


def peak(a, x):   # height 1/a at (0.3, 0.3, 0.3): ~10^4-10^5 regions at tight tolerances
    return 1.0 / (a + jnp.sum((x - 0.3) ** 2, axis=1))


box = base.Box.cube(3)
first = Cubature(compile_ahead=True, error_estimate="local").integrate(
    Partial(peak, jnp.float64(1e-3)), box, rtol=1e-8, max_evals=2 * 10**6)
regions.AHEAD.join()
seen, caller = [], threading.get_ident()


def listener(event, duration, **_):
    if event.startswith("/jax/core/compile/") and threading.get_ident() == caller:
        seen.append(duration)


jax.monitoring.register_event_duration_secs_listener(listener)
second = Cubature(compile_ahead=True, error_estimate="local").integrate(
    Partial(peak, jnp.float64(1e-4)), box, rtol=1e-9, max_evals=6 * 10**6)
jax.monitoring.unregister_event_duration_listener(listener)
regions.AHEAD.join()
plain = Cubature(compile_ahead=False, error_estimate="local").integrate(
    Partial(peak, jnp.float64(1e-4)), box, rtol=1e-9, max_evals=6 * 10**6)
print(json.dumps({"capacities": [first.info["capacity"], second.info["capacity"]],
                  "own_compiles": sum(seen), "ahead": regions.COMPILE_AHEAD_FROM,
                  "step": regions.CAPACITY_STEP,
                  "second": [second.value, second.error, second.evaluations],
                  "plain": [plain.value, plain.error, plain.evaluations]}))
"""


def test_a_grown_buffer_finds_its_steps_compiled_ahead():
    """A run that reaches COMPILE_AHEAD_FROM rows has the next buffer size's steps compiled
    in the background; a later run that grows into that size (a smaller delta of a sequence:
    the same integrand with new bound arrays) compiles nothing on its own thread, and its
    numbers equal those of a run with compilation ahead switched off.  In a process of its
    own: XLA:CPU compiling in two threads of a process has corrupted it (a later segfault in
    the same pytest worker), which the CPU default (no compilation ahead) avoids."""
    import json
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=root)
    proc = subprocess.run([sys.executable, "-c", _GROWN_BUFFER], capture_output=True,
                          text=True, env=env, cwd=root, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["capacities"] == [out["ahead"], out["ahead"] * out["step"]]
    assert out["own_compiles"] == 0.0, "compile events on the run's own thread"
    assert out["plain"] == out["second"]


def test_compile_ahead_runs_each_key_once_and_survives_failures():
    import threading

    from loopint.engines.regions import CompileAhead

    ahead, calls, gate = CompileAhead(size=4, workers=1), [], threading.Event()
    ahead.submit("slow", lambda: (gate.wait(), calls.append("slow")))
    ahead.submit("slow", lambda: calls.append("again"))           # same key: not queued
    ahead.submit("bad", lambda: 1 / 0)                              # dropped, thread lives on
    ahead.submit("ok", lambda: calls.append("ok"))
    gate.set()
    ahead.wait("ok")
    assert calls == ["slow", "ok"]
    ahead.wait("missing")                                           # unknown key: no wait
    ahead.close()
    assert ahead.waited >= 0.0


def test_a_large_buffer_evaluated_chunk_by_chunk_equals_one_call():
    """Beyond eight chunks a buffer is evaluated chunk by chunk from the host (one compiled
    integrand kernel for every larger buffer); each region's estimates are bit for bit those
    of the single jitted call over the whole buffer."""
    from loopint.engines import regions

    f3d = CASES["f3_3d"]
    problem = regions.prepare(f3d.f, np.zeros(3), np.ones(3), rtol=1e-6, atol=0.0,
                              max_evals=10**9, precision="float64", rule="genz_malik",
                              memory_limit=2**16, default_regions=2**20)
    capacity = 4096
    chunk = problem.chunk(capacity)
    assert capacity > regions.CAPACITY_STEP * chunk       # the chunk-by-chunk path
    rng = np.random.default_rng(7)
    halfwidths = jnp.asarray(rng.uniform(0.01, 0.05, (capacity, 3)))
    centers = jnp.asarray(rng.uniform(0.05, 0.95, (capacity, 3)))
    weights = jnp.ones((1,))
    count = capacity - 3 * chunk // 2                     # a partly live last chunk
    by_chunk = problem.evaluate(centers, halfwidths, count, weights, capacity)
    one_call = regions.evaluate_buffer(centers, halfwidths, jnp.int32(count), weights,
                                       chunk=chunk, rule="genz_malik", **problem.kernel)
    for a, b in zip(by_chunk, one_call):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.any(np.asarray(by_chunk.value)[count:])


def test_wide_chunks_are_sized_by_the_memory_analysis_and_change_no_estimate(monkeypatch):
    """On an accelerator the buffers that the base bound of points per call limits are
    evaluated in chunks of up to ``wide_points`` points, as many as the device memory's share
    holds at the bytes per point of XLA's memory analysis, while the live rows fill them (then
    narrow chunks), and not for integrands of more bytes per point than
    ``WIDE_MAX_POINT_BYTES`` (costly points); each region's estimates are those
    of the narrow chunks to round-off (the compiled reductions of another shape may order
    their sums differently)."""
    import dataclasses

    from loopint.engines import regions

    f3d = CASES["f3_3d"]
    problem = regions.prepare(f3d.f, np.zeros(3), np.ones(3), rtol=1e-6, atol=0.0,
                              max_evals=10**9, precision="float64", rule="genz_malik",
                              memory_limit=None, default_regions=lambda _: 2**20)
    narrow = dataclasses.replace(problem, memory=regions.MemoryBounds(2**20, 2**10))
    wide = dataclasses.replace(problem, memory=regions.MemoryBounds(2**20, 2**10, None, 2**16))
    per_point = wide.point_bytes("genz_malik", 16)
    # coordinates, a value, the chunk's estimates; at most a few kB for this integrand
    assert 8 * (3 + 1) <= per_point < 4096
    capacity = 2**14
    memory = {"bytes": 2**40}
    monkeypatch.setattr(regions.base, "device_memory_limit", lambda device=None: memory["bytes"])
    assert narrow.wide_chunk(capacity, capacity) == narrow.chunk(capacity) == 16   # 2^10 / 33
    assert wide.chunk(capacity) == 16
    assert wide.wide_chunk(capacity, 1024) == 1024             # 2^16 points / 33
    assert wide.wide_chunk(capacity, 1023) == 16               # live rows short of one
    memory["bytes"] = int(2**13 * per_point / regions.CHUNK_MEMORY_SHARE) + 1
    assert wide.wide_points("genz_malik", 16) == 2**13         # the memory's share binds
    assert wide.wide_chunk(capacity, capacity) == 128          # 2^13 points / 33
    memory["bytes"] = 0                                        # no memory statistics
    assert wide.wide_points("genz_malik", 16) == 2**10
    memory["bytes"] = 2**40
    cheap = regions.WIDE_MAX_POINT_BYTES
    assert per_point <= cheap                                  # a cheap integrand: wide
    monkeypatch.setattr(regions, "WIDE_MAX_POINT_BYTES", per_point / 2)
    assert wide.wide_points("genz_malik", 16) == 2**10         # costly points: narrow
    assert wide.wide_chunk(capacity, capacity) == 16
    monkeypatch.setattr(regions, "WIDE_MAX_POINT_BYTES", cheap)
    memory["bytes"] = 2**40
    rng = np.random.default_rng(3)
    halfwidths = jnp.asarray(rng.uniform(0.01, 0.05, (capacity, 3)))
    centers = jnp.asarray(rng.uniform(0.05, 0.95, (capacity, 3)))
    count = capacity - 1000
    a = narrow.evaluate(centers, halfwidths, count, jnp.ones((1,)), capacity)
    b = wide.evaluate(centers, halfwidths, count, jnp.ones((1,)), capacity)
    np.testing.assert_allclose(np.asarray(b.value), np.asarray(a.value), rtol=1e-14, atol=0)
    # an error is a difference of two rules: its round-off is that of the value
    rounding = 64 * np.finfo(float).eps * np.abs(np.asarray(a.value)) + 1e-300
    assert np.all(np.abs(np.asarray(b.error) - np.asarray(a.error)) <= rounding)
    np.testing.assert_array_equal(np.asarray(b.split_axis), np.asarray(a.split_axis))
    assert int(b.nonfinite) == int(a.nonfinite) == 0


def test_a_backend_without_a_usable_memory_analysis_keeps_narrow_chunks(monkeypatch):
    """Where XLA's memory analysis is missing, fails or reports no bytes, the wide chunks
    fall back to the base bound of points per call."""
    import dataclasses
    import types

    from loopint.engines import regions

    def analysis(stats):
        compiled = types.SimpleNamespace(memory_analysis=lambda: stats)
        return types.SimpleNamespace(lower=lambda *a, **k: types.SimpleNamespace(
            compile=lambda: compiled))

    zero = types.SimpleNamespace(temp_size_in_bytes=0, output_size_in_bytes=0,
                                 argument_size_in_bytes=0)
    f3d = CASES["f3_3d"]
    monkeypatch.setattr(regions.base, "device_memory_limit", lambda device=None: 2**40)
    for stats in (zero, None):
        problem = regions.prepare(lambda x, k=id(stats): f3d.f(x), np.zeros(3), np.ones(3),
                                  rtol=1e-6, atol=0.0, max_evals=10**9, precision="float64",
                                  rule="genz_malik", memory_limit=None,
                                  default_regions=lambda _: 2**20)
        wide = dataclasses.replace(problem,
                                   memory=regions.MemoryBounds(2**20, 2**10, None, 2**16))
        monkeypatch.setattr(regions, "evaluate_chunk", analysis(stats))
        assert wide.point_bytes("genz_malik", 16) is None
        assert wide.wide_chunk(2**14, 2**14) == wide.chunk(2**14) == 16


def test_the_accelerator_ladder_of_buffer_sizes_gives_the_same_integral(monkeypatch):
    """Region buffers start at 512 rows and grow by 8 on a CPU, start at 32768 and grow by
    64 on an accelerator (fewer sizes to compile); only how many rows a buffer has differs,
    so both engines converge on either ladder to values within their estimates of each
    other."""
    from loopint.engines import regions
    from loopint.engines.pagani import Pagani

    runs = {}
    for first, step in ((regions.MIN_CAPACITY, regions.CAPACITY_STEP),
                        (regions.ACCELERATOR_MIN_CAPACITY, regions.ACCELERATOR_CAPACITY_STEP)):
        monkeypatch.setattr(regions, "capacity_step", lambda cpu, step=step: step)
        monkeypatch.setattr(regions, "min_capacity", lambda cpu, first=first: first)
        for engine, case, rtol in ((Cubature(error_estimate="local"), CASES["f4_5d"], 1e-5),
                                   (Pagani(), CASES["f3_5d"], 1e-8)):
            r = engine.integrate_box(case.f, np.zeros(5), np.ones(5), rtol=rtol)
            runs[step, type(engine).__name__] = r
            assert r.converged, r.status
            assert abs(r.value - case.exact) <= r.error <= rtol * abs(case.exact)
            cap, k = r.info["capacity"], 0
            while first * step ** k < cap:
                k += 1
            assert cap == first * step ** k
    assert runs[64, "Cubature"].info["capacity"] > runs[8, "Cubature"].info["capacity"]


def test_a_stopped_run_states_its_final_evaluations_and_error():
    """A run stopped by its budget may take one more sweep for the global estimate; the
    status quotes the evaluations and error of the result, not of the stop."""
    import re

    f = lambda x: jnp.cos(2 * jnp.pi * 40.7 * jnp.sum(x, axis=1)) + jnp.abs(x[:, 0] - 0.3)
    r = Cubature().integrate_box(f, np.zeros(3), np.ones(3), rtol=1e-10, max_evals=1000)
    assert not r.converged and r.status.startswith("max_evals")
    stated = re.search(r"stopped after (\S+) evaluations with error (\S+) >", r.status)
    assert float(stated.group(1)) == pytest.approx(r.evaluations, rel=1e-3)
    assert float(stated.group(2)) == pytest.approx(np.max(np.abs(r.error)), rel=1e-2)
