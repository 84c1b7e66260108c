"""Iterated adaptive Gauss–Kronrod integration (loopint.engines.iterated).

Every value is checked against an independent reference: closed forms (Dirichlet integrals
over the simplex, integrals of g(x1+…+xd) reduced to 1-D with the density of the sum, the
Genz suite of loopint.testfunctions, C0 at fixed δ by 1-D mpmath quadrature after the inner
integral done analytically) or scipy's QUADPACK (``scipy.integrate.nquad``).

Honesty: whenever a result says converged, its true error is at most its reported error
(factor 1), and the reported error meets the requested tolerance.
"""

import math

import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest
import scipy.integrate

import loopint  # noqa: F401  (float64)
from loopint.engines import base, iterated
from loopint.engines.base import Box, Simplex, as_domain
from loopint.engines.iterated import Iterated, Limits
from loopint.engines.rules.gauss_kronrod import GK15, GK21, GK31
from loopint.testfunctions import f4, genz_suite

CASES = {c.name: c for c in genz_suite()}


def check(r, exact, rtol, atol=0.0):
    """Converged, tolerance met, and the reported error bounds the true error."""
    assert r.converged and r.status == base.CONVERGED, r
    v = np.asarray(r.value)
    e = np.asarray(r.error)
    ex = np.asarray(exact)
    if np.iscomplexobj(v):
        true_re, true_im = np.abs(v.real - ex.real), np.abs(v.imag - ex.imag)
        assert np.all(true_re <= e.real) and np.all(true_im <= e.imag), (v, e, ex)
        assert np.all(np.hypot(e.real, e.imag) <= np.maximum(atol, rtol * np.abs(v)))
    else:
        assert np.all(np.abs(v - ex) <= e), (v, e, ex, np.abs(v - ex))
        assert np.all(e <= np.maximum(atol, rtol * np.abs(v)))
    assert np.all(np.abs(v - ex) <= np.maximum(atol, rtol * np.abs(ex)) * (1 + 1e-12))


def sum_on_cube(g, d: int):
    """∫_{[0,1]^d} g(x1+…+xd) = ∫_0^d g(t) p_d(t) dt, p_d the Irwin–Hall density (d = 2, 3)."""
    mp.mp.dps = 30
    if d == 2:
        pieces = [lambda t: t, lambda t: 2 - t]
    else:
        pieces = [lambda t: t**2 / 2, lambda t: (-2 * t**2 + 6 * t - 3) / 2,
                  lambda t: (3 - t) ** 2 / 2]
    return float(sum(mp.quad(lambda t, p=p: g(t) * p(t), [k, k + 1])
                     for k, p in enumerate(pieces)))


def dirichlet(*a):
    """∫_simplex ∏ x_i^(a_i - 1) (1 - Σx)^(a_{d+1} - 1) = ∏ Γ(a_i) / Γ(Σ a_i)."""
    mp.mp.dps = 30
    return float(mp.fprod(mp.gamma(x) for x in a) / mp.gamma(mp.fsum(a)))


# --------------------------------------------------------------------------------------------
# Smooth and singular integrands, cube and simplex, 1-4 dimensions
# --------------------------------------------------------------------------------------------

def test_1d_endpoint_singularity_and_box():
    r = Iterated().integrate(lambda x: 1 / jnp.sqrt(x[:, 0]), Box.cube(1), rtol=1e-8)
    check(r, 2.0, 1e-8)
    r = Iterated().integrate(lambda x: 1 / jnp.sqrt(x[:, 0]), Box([0.0], [4.0]), rtol=1e-8)
    check(r, 4.0, 1e-8)
    assert r.method == "iterated" and r.info["rules"] == ["gk21"]
    # cutting refined intervals in 4 halves the number of steps at an endpoint singularity
    r4 = Iterated(nsplit=4).integrate(lambda x: 1 / jnp.sqrt(x[:, 0]), Box([0.0], [4.0]),
                                      rtol=1e-8)
    check(r4, 4.0, 1e-8)
    # (plain bisection: with the endpoint extrapolation both take the few steps the
    # ε-algorithm needs, tests/test_iterated_endpoints.py)
    r = Iterated(endpoint_terms=0).integrate(lambda x: 1 / jnp.sqrt(x[:, 0]),
                                             Box([0.0], [4.0]), rtol=1e-8)
    check(r, 4.0, 1e-8)
    r4 = Iterated(nsplit=4, endpoint_terms=0).integrate(lambda x: 1 / jnp.sqrt(x[:, 0]),
                                                        Box([0.0], [4.0]), rtol=1e-8)
    check(r4, 4.0, 1e-8)
    assert 2 * r4.info["steps"][0] <= r.info["steps"][0] + 2


@pytest.mark.parametrize("domain,exact", [
    ("simplex", -0.25),                                   # ∫_0^1 t log t dt
    ("cube", None),                                       # Irwin–Hall
])
def test_2d_log_singularity(domain, exact):
    if exact is None:
        exact = sum_on_cube(mp.log, 2)
        assert exact == pytest.approx(2 * math.log(2) - 1.5, rel=1e-14)
    r = Iterated().integrate(lambda x: jnp.log(x[:, 0] + x[:, 1]), as_domain(domain, 2),
                             rtol=1e-8)
    check(r, exact, 1e-8)


def test_3d_simplex_smooth_vs_scipy_nquad():
    def g(x1, x2, x3):
        return math.exp(x1 - 2 * x2 + x3) * math.cos(3 * x1 * x3) + 1 / (1 + x1 + x2 + x3)

    # nquad integrates the first argument innermost: order (x3, x2, x1) with variable limits
    ref = scipy.integrate.nquad(lambda x3, x2, x1: g(x1, x2, x3),
                                [lambda x2, x1: [0, 1 - x1 - x2], lambda x1: [0, 1 - x1], [0, 1]],
                                opts={"epsabs": 0, "epsrel": 1e-13})[0]

    def f(x):
        x1, x2, x3 = x[:, 0], x[:, 1], x[:, 2]
        return jnp.exp(x1 - 2 * x2 + x3) * jnp.cos(3 * x1 * x3) + 1 / (1 + x1 + x2 + x3)

    r = Iterated().integrate(f, Simplex(3), rtol=1e-10)
    check(r, ref, 1e-10)


def test_3d_cube_corner_singularity():
    exact = sum_on_cube(lambda t: 1 / mp.sqrt(t), 3)
    r = Iterated().integrate(lambda x: 1 / jnp.sqrt(jnp.sum(x, axis=1)), Box.cube(3), rtol=1e-8)
    check(r, exact, 1e-8)


def test_4d_simplex_singular_outer_direction():
    """x1^(-1/2) x2 (1 - Σx) over the 4-simplex: Dirichlet(1/2, 2, 1, 1, 2)."""
    exact = dirichlet(0.5, 2, 1, 1, 2)
    r = Iterated().integrate(lambda x: x[:, 1] * (1 - jnp.sum(x, axis=1)) / jnp.sqrt(x[:, 0]),
                             Simplex(4), rtol=1e-8)
    check(r, exact, 1e-8)
    assert r.info["domain"] == "simplex" and r.info["rules"] == ["gk21", "gk15", "gk15", "gk15"]


@pytest.mark.parametrize("nsplit", [2, 4])     # 4: the default on accelerators
def test_4d_simplex_log_corner(nsplit):
    """log(x1+…+x4) over the 4-simplex: ∫_0^1 log t · t³/3! dt = -1/96."""
    r = Iterated(nsplit=nsplit).integrate(lambda x: jnp.log(jnp.sum(x, axis=1)), Simplex(4),
                                          rtol=1e-7)
    check(r, -1 / 96, 1e-7)
    assert r.info["nsplit"] == nsplit


# --------------------------------------------------------------------------------------------
# The Genz suite (seed 001 §4.1).  On a 2-core CPU: f3 in 3-D and 5-D and f5 in
# 5-D to 1e-8; the narrow peak f4 in 3-D to 1e-8 (f4 in 5-D needs ~1e9 points with
# iterated GK: a GPU benchmark case, loopint.bench.iterated_cases).
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kw", [
    ("f3_3d", {}),
    ("f3_5d", {}),
    # kinks at x_i = 1/2: start from [0,½], [½,1]; every 1-D integral then needs these two
    # intervals at any tolerance, so the pilot run of "auto" would double the cost
    ("f5_5d", {"initial_intervals": 2, "inner_tolerance": "relative"}),
])
def test_genz_suite(name, kw):
    case = CASES[name]
    r = Iterated(**kw).integrate(case.f, Box.cube(case.ndim), rtol=1e-8)
    check(r, case.exact, 1e-8)


def test_genz_f4_3d_peak():
    mp.mp.dps = 30
    exact = float((mp.sqrt(mp.pi) / 25 * mp.erf(mp.mpf(25) / 2)) ** 3)
    r = Iterated().integrate(f4, Box.cube(3), rtol=1e-8)
    check(r, exact, 1e-8)


# --------------------------------------------------------------------------------------------
# A regulated one-loop integrand: C0(0, 0, s; m, m, m) above threshold at fixed δ
# --------------------------------------------------------------------------------------------

S, M2 = 10.0, 1.0   # s = 10 m², dimensionless


def c0_integrand(x, deltas):
    """-1/(F - iδU), U = 1 on the simplex, F = -s x1 x3 + m², x3 = 1 - x1 - x2 (pySecDec
    normalization for N = 3, L = 1, D = 4: (-1)^3 Γ(1) ∫ δ(1-Σx) U^-1 F^-1)."""
    x1, x2 = x[:, 0], x[:, 1]
    F = -S * x1 * (1 - x1 - x2) + M2
    return -1.0 / (F[:, None] - 1j * deltas[None, :])


def c0_reference(delta: float) -> complex:
    """The x2 integral in closed form, (log(m² - iδ) - log(A(x1)))/(s x1) with A(x1) = m² -
    s x1 (1-x1) - iδ (Im A < 0: the principal log is continuous), then 1-D mpmath."""
    mp.mp.dps = 30
    s, d = mp.mpf(S), mp.mpf(delta)

    def inner(x1):
        return (mp.log(M2 - 1j * d) - mp.log(M2 - s * x1 * (1 - x1) - 1j * d)) / (s * x1)

    r = mp.sqrt(1 - 4 * M2 / s)
    return complex(-mp.quad(inner, [0, (1 - r) / 2, (1 + r) / 2, 1], maxdegree=10))


def test_c0_reference_tends_to_closed_form():
    """Sanity of the reference: I(δ) -> C0 = [ln((1+β)/(1-β)) - iπ]²/(2s) as δ -> 0."""
    beta = math.sqrt(1 - 4 * M2 / S)
    closed = (math.log((1 + beta) / (1 - beta)) - 1j * math.pi) ** 2 / (2 * S)
    assert abs(closed - (-0.280591593189852816826 - 0.648247873678714906914j)) < 1e-15
    assert abs(c0_reference(1e-6) - closed) < 1e-4


def test_c0_regulated_scalar_delta():
    ref = c0_reference(1e-2)
    r = Iterated().integrate(lambda x: c0_integrand(x, jnp.asarray([1e-2]))[:, 0], Simplex(2),
                             rtol=1e-8)
    assert isinstance(r.value, complex) and isinstance(r.error, complex)
    check(r, ref, 1e-8)


def test_c0_regulated_vector_of_deltas():
    deltas = np.array([1e-1, 1e-2, 1e-3])
    refs = np.array([c0_reference(d) for d in deltas])
    r = Iterated(args=(jnp.asarray(deltas),)).integrate(c0_integrand, Simplex(2), rtol=1e-8)
    assert r.value.shape == (3,) and np.iscomplexobj(r.value)
    check(r, refs, 1e-8)
    # new δ values through ``args``: same compiled kernels, new numbers
    r2 = Iterated(args=(jnp.asarray(deltas[::-1]),)).integrate(c0_integrand, Simplex(2),
                                                                rtol=1e-6)
    check(r2, refs[::-1], 1e-6)


# --------------------------------------------------------------------------------------------
# Error accounting, limits and statuses
# --------------------------------------------------------------------------------------------

def test_cancelling_inner_integrals_fall_back_to_absolute_tolerances():
    """F(x1) = cos(6πx1)(1 - e^{-1/w}) + 1e-3 changes sign: Σ w|F| is 600 times |I|.
    Relative inner tolerances cannot deliver rtol·|I| (the relative scheme says so); "auto"
    detects it and reruns with absolute inner tolerances."""
    def f(x):
        w = 0.01 + 0.1 * x[:, 0]
        return jnp.cos(6 * np.pi * x[:, 0]) * jnp.exp(-x[:, 1] / w) / w + 1e-3

    mp.mp.dps = 30
    exact = float(mp.quad(lambda t: mp.cos(6 * mp.pi * t) * (1 - mp.exp(-1 / (0.01 + 0.1 * t))),
                          [k / 6 for k in range(7)]) + mp.mpf("1e-3"))
    rel = Iterated(inner_tolerance="relative").integrate(f, Box.cube(2), rtol=1e-6)
    assert not rel.converged and rel.status.startswith(base.ROUNDOFF), rel.status
    assert "inner integrals" in rel.status and "inner" in rel.info["flags"]
    assert abs(rel.value - exact) <= rel.error
    r = Iterated().integrate(f, Box.cube(2), rtol=1e-6)
    check(r, exact, 1e-6)
    # crude estimate, pilot, then absolute (the pilot is inner-limited already), or
    # crude, pilot, mixed, absolute
    assert r.info["inner_tolerance"] == "absolute" and r.info["runs"] in (3, 4)


@pytest.mark.parametrize("mode", ["relative", "absolute", "mixed"])
def test_inner_tolerance_modes_and_factor(mode):
    exact = dirichlet(2, 1, 3, 1) * 2      # ∫ 2 x1 x3² over the 3-simplex
    f = (lambda x: 2 * x[:, 0] * x[:, 2] ** 2 + 0 * x[:, 1])
    r = Iterated(inner_tolerance=mode, inner_factor=0.1).integrate(f, Simplex(3), rtol=1e-9)
    check(r, exact, 1e-9)
    assert r.info["inner_factors"] == [0.1, 0.1]
    assert r.info["inner_tolerance"] == mode


def test_even_split_of_the_tolerance():
    r = Iterated(scale=(1 - math.exp(-1)) ** 4).integrate(
        lambda x: jnp.exp(-jnp.sum(x, axis=1)), Box.cube(4), rtol=1e-6)
    check(r, (1 - math.exp(-1)) ** 4, 1e-6)
    assert r.info["inner_factors"] == pytest.approx([3 / 4, 2 / 3, 1 / 2])
    assert r.info["pilot"] is None and r.info["runs"] == 1


def test_custom_variable_limits_quarter_disk():
    """x2 ∈ [0, sqrt(1 - x1²)]: area π/4; the upper limit has a square-root endpoint."""
    lim = Limits.from_bounds([0.0, 0.0], [1.0, lambda p: jnp.sqrt(1 - p[:, 0] ** 2)],
                             name="quarter disk")
    r = Iterated().integrate(lambda x: jnp.ones(x.shape[0]), lim, rtol=1e-9)
    check(r, math.pi / 4, 1e-9)
    assert r.info["domain"] == "quarter disk"


def test_box_and_rules():
    """∫_{[-1,2]×[0,3]} x1² e^{-x2}: box limits, GK31 in every direction."""
    exact = 3.0 * (1 - math.exp(-3))
    r = Iterated(rules="gk31").integrate(lambda x: x[:, 0] ** 2 * jnp.exp(-x[:, 1]),
                                         Box([-1, 0], [2, 3]), rtol=1e-12)
    check(r, exact, 1e-12)
    assert r.info["rules"] == ["gk31", "gk31"]
    # loopint.integrate: a domain as (lower, upper), options as keywords
    r = loopint.integrate(lambda x: x[:, 0] ** 2 * jnp.exp(-x[:, 1]), 2, method="iterated",
                          domain=([-1, 0], [2, 3]), rules=[GK15, GK21], rtol=1e-12)
    check(r, exact, 1e-12)
    assert r.evaluations == 15 + 15 * 21 * 2 or r.evaluations > 0


def test_real_vector_integrand_components_meet_their_own_tolerance():
    """Components of very different size: each meets rtol relative to itself."""
    def f(x):
        return jnp.stack([jnp.exp(x[:, 0] + x[:, 1]), 1e-6 * jnp.cos(7 * x[:, 0] * x[:, 1])], 1)

    mp.mp.dps = 30
    e2 = float(1e-6 * mp.quad(lambda a: mp.sin(7 * a) / (7 * a), [0, 1]))
    r = Iterated().integrate(f, Box.cube(2), rtol=1e-9)
    check(r, np.array([(math.e - 1) ** 2, e2]), 1e-9)


def test_fused_innermost_step_gives_the_same_result():
    f = CASES["f3_3d"].f
    a = Iterated(fused=False).integrate(f, Box.cube(3), rtol=1e-8)
    b = Iterated(fused=True).integrate(f, Box.cube(3), rtol=1e-8)
    assert a.value == pytest.approx(b.value, rel=1e-14) and a.evaluations == b.evaluations
    check(b, CASES["f3_3d"].exact, 1e-8)


def test_accelerator_buffer_policy_gives_the_same_result(monkeypatch):
    """On accelerators buffers only grow within a call, fused batches are padded to 1/16
    of the buffer (fewer compiled shapes) and the integrand values are not materialized before
    the rule's sums; forced on the CPU, with batches padded to the whole buffer, the steps and
    evaluation counts are those of the default policy and the numbers agree to rounding, with
    evicted prefixes too."""
    def f(x):       # complex vector integrand; exact: Dirichlet integrals
        r = jnp.maximum(1 - x[:, 0] - x[:, 1], 0)
        return jnp.stack([jnp.sqrt(r), 1j * r ** 1.5], axis=1)
    exact = np.array([dirichlet(1, 1, 1.5), 1j * dirichlet(1, 1, 2.5)])
    padded = []
    refine = iterated._k_refine_f

    def spy(st, split, keep, P, n_keep, n_new, fn, **kw):
        padded.append(kw["new_size"] > iterated._bucket(
            int(n_new), iterated._CPU_BUCKET_BASE, iterated._CPU_CLASSES[0]))
        return refine(st, split, keep, P, n_keep, n_new, fn, **kw)

    monkeypatch.setattr(iterated, "_k_refine_f", spy)
    # small buffers: prefixes evicted (unfused steps); larger ones: fused, padded steps.
    # memory_limit for exactly max_points points per call (4 real components, 2 variables).
    for max_points in (256, 4096):
        out = []
        for grow in (False, True):
            padded.clear()
            # (plain bisection toward the square-root edge, endpoint_terms=0, needs many
            # intervals: the storage fills up)
            engine = Iterated(fused=True, memory_limit=max_points * iterated.bytes_per_point(4, 2),
                              max_intervals=16, grow_only=grow, materialize=not grow,
                              fused_min_fraction=1, endpoint_terms=0)
            out.append(engine.integrate(f, Simplex(2), rtol=1e-6))
            assert out[-1].info["max_points"] == max_points
        a, b = out
        # the same intervals; sums over buffers of other sizes may round differently
        np.testing.assert_allclose(a.value, b.value, rtol=1e-13)
        np.testing.assert_allclose(a.error, b.error, rtol=1e-12)
        assert (a.evaluations, a.info["steps"], a.info["evicted"]) == (
            b.evaluations, b.info["steps"], b.info["evicted"])
        check(b, exact, 1e-6)
        assert b.info["evicted"][1] > 0 if max_points == 256 else any(padded)


def test_small_buffers_evict_and_redo_prefixes():
    """Storage for a few intervals per prefix only: prefixes wait or are evicted and redone
    in smaller batches, the answer is unchanged."""
    f = lambda x: jnp.sqrt(jnp.maximum(1 - x[:, 0] - x[:, 1], 0))  # noqa: E731
    exact = dirichlet(1, 1, 1.5)
    # memory_limit for 256 points per call (1 real component, 2 variables)
    # (plain bisection toward the square-root edge, endpoint_terms=0, needs many intervals;
    # tests/test_iterated_endpoints.py evicts with the extrapolation on)
    small = Iterated(memory_limit=256 * iterated.bytes_per_point(1, 2),
                     max_intervals=32, endpoint_terms=0).integrate(f, Simplex(2), rtol=1e-7)
    check(small, exact, 1e-7)
    assert small.info["evicted"][1] > 0
    big = Iterated(endpoint_terms=0).integrate(f, Simplex(2), rtol=1e-7)
    assert big.info["evicted"] == [0, 0]
    assert small.value == pytest.approx(big.value, rel=1e-13)


def test_nonfinite_values_are_counted_and_not_converged():
    f = lambda x: jnp.where(x[:, 0] > 0.75, jnp.nan, 1.0)  # noqa: E731
    r = Iterated().integrate(f, Box.cube(1), rtol=1e-6)
    assert not r.converged and r.status.startswith(base.NONFINITE)
    assert r.info["nonfinite"] > 0 and "nonfinite" in r.info["flags"]
    assert np.isfinite(r.value)


def test_max_evals_stops_with_best_estimate():
    f = lambda x: 1 / jnp.sqrt(x[:, 0] + x[:, 1])  # noqa: E731
    r = Iterated().integrate(f, Box.cube(2), rtol=1e-12, max_evals=20_000)
    assert not r.converged and r.status.startswith(base.MAX_EVALS), r.status
    exact = sum_on_cube(lambda t: 1 / mp.sqrt(t), 2)
    assert abs(r.value - exact) <= r.error
    assert r.evaluations < 200_000


def test_interval_limit_is_a_memory_limit():
    r = Iterated(max_intervals=4, inner_tolerance="relative").integrate(
        lambda x: 1 / jnp.sqrt(x[:, 0]), Box.cube(1), rtol=1e-12)
    assert not r.converged and r.status.startswith(base.MEMORY_LIMIT), r.status
    assert abs(r.value - 2.0) <= r.error


def test_float32():
    """float32: QUADPACK's round-off floor is 50 ε ≈ 6e-6 per interval, so 1e-4 is reachable
    and 1e-6 is refused honestly."""
    def f(x):
        return jnp.exp(x[:, 0] * x[:, 1])

    exact = scipy.integrate.dblquad(lambda b, a: math.exp(a * b), 0, 1, 0, lambda a: 1 - a,
                                    epsabs=0, epsrel=1e-12)[0]
    r = Iterated(precision="float32").integrate(f, Simplex(2), rtol=1e-4)
    assert isinstance(r.value, float)
    check(r, exact, 1e-4)
    r = Iterated(precision="float32").integrate(f, Simplex(2), rtol=1e-6)
    assert not r.converged and r.status.startswith(base.ROUNDOFF), r.status
    assert abs(r.value - exact) <= r.error


def test_result_contract():
    r = Iterated().integrate(lambda x: x[:, 0], Box.cube(1), rtol=1e-6)
    assert isinstance(r.value, float) and isinstance(r.error, float)
    d = r.to_dict()
    assert d["method"] == "iterated" and d["converged"] is True
    assert r.seconds > 0 and r.evaluations >= 21


@pytest.mark.parametrize("kw,msg", [
    (dict(domain="ball"), "domain"),
    (dict(domain=([0, 0], [1, 0])), "upper > lower"),
    (dict(rules=["gk15"]), "one rule per dimension"),
    (dict(rules="gk99"), "unknown"),
    (dict(rtol=0, atol=0), "not both zero"),
    (dict(initial_intervals=3), "power of two"),
    (dict(inner_tolerance="exact"), "inner_tolerance"),
    (dict(inner_factor=1.5), "inner_factor"),
])
def test_bad_arguments(kw, msg):
    with pytest.raises(ValueError, match=msg):
        loopint.integrate(lambda x: x[:, 0], 2, method="iterated", **kw)


def test_rules_are_the_seeds_defaults():
    assert iterated.default_rules(3) == (GK21, GK15, GK15)
    assert GK31.n_points == 31


def test_bad_domain_for_the_engine():
    with pytest.raises(TypeError, match="Box, a Simplex or Limits"):
        Iterated().integrate(lambda x: x[:, 0], "cube")


def test_memory_limit_sets_the_batch():
    """None: 2^16 points per call on a CPU; bytes: one ``bytes_per_point`` per point."""
    import jax
    if jax.default_backend() == "cpu":
        assert iterated.max_points(None, 1, 2) == 2**16
    assert iterated.max_points(1000 * iterated.bytes_per_point(3, 2), 3, 2) == 1000
    assert iterated.max_points(1, 1, 1) == 1


def test_profile_option_times_the_kernels():
    r = Iterated(profile=True).integrate(lambda x: jnp.exp(x[:, 0] * x[:, 1]), Simplex(2),
                                         rtol=1e-6)
    assert r.converged and "select" in r.info["profile"]
    calls, seconds = r.info["profile"]["select"]
    assert calls >= 1 and seconds >= 0
    assert "profile" not in Iterated().integrate(lambda x: x[:, 0], Box.cube(1)).info
