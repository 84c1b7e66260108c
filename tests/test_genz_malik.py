"""Cubature rules as data: exactness, point count, split axis, two-level error.

References: monomials over [0,1]^n integrate to prod 1/(a_i + 1) (closed form); the 7/5
constants are those of Genz & Malik (1980), the degree-9 ones DCUHRE's (Genz & Malik 1983;
Berntsen, Espelid & Genz 1991).
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopint  # noqa: F401  (float64)
from loopint.engines import base
from loopint.engines.regions import evaluate_regions
from loopint.engines.rules.genz_malik import (apply_rule, genz_malik, genz_malik9, n_points,
                                              n_points9, two_level_error)


def _exponents(n: int, degree: int) -> np.ndarray:
    """All exponent vectors of total degree exactly ``degree`` in ``n`` variables."""
    rows = []
    for comb in itertools.combinations_with_replacement(range(n), degree):
        a = np.zeros(n, int)
        for c in comb:
            a[c] += 1
        rows.append(a)
    return np.array(rows).reshape(-1, n)


def _monomial_errors(n: int, degree: int, weights: np.ndarray) -> np.ndarray:
    """Relative errors of the rule with ``weights`` on every monomial of ``degree`` over [0,1]^n."""
    rule = genz_malik(n)
    x = (1 + rule.nodes) / 2                       # nodes mapped to [0,1]^n, all > 0
    a = _exponents(n, degree)
    vals = np.exp(a @ np.log(x).T)                 # (K, N) monomials at the nodes
    exact = np.prod(1.0 / (a + 1.0), axis=1)
    return np.abs(vals @ weights - exact) / exact


@pytest.mark.parametrize("n", range(1, 11))
def test_point_count_and_weights(n):
    rule = genz_malik(n)
    assert rule.n_points == n_points(n) == 2**n + 2 * n**2 + 2 * n + 1
    assert rule.nodes.shape == (rule.n_points, n)
    assert len({tuple(p) for p in np.round(rule.nodes, 14)}) == rule.n_points   # distinct
    assert np.all(np.abs(rule.nodes) < 1)
    assert math.isclose(rule.weights7.sum(), 1.0, rel_tol=1e-13)
    assert math.isclose(rule.weights5.sum(), 1.0, rel_tol=1e-13)


@pytest.mark.parametrize("n", range(2, 11))
def test_degree_7_rule_exact_up_to_7_not_8(n):
    w = genz_malik(n).weights7
    for degree in range(8):
        assert _monomial_errors(n, degree, w).max() < 1e-12, (n, degree)
    assert _monomial_errors(n, 8, w).max() > 1e-6


@pytest.mark.parametrize("n", range(2, 11))
def test_degree_5_rule_exact_up_to_5_not_6(n):
    w = genz_malik(n).weights5
    for degree in range(6):
        assert _monomial_errors(n, degree, w).max() < 1e-12, (n, degree)
    assert _monomial_errors(n, 6, w).max() > 1e-6


def test_integrate_on_a_box():
    rule = genz_malik(3)
    i7, i5 = rule.integrate(lambda x: np.exp(x.sum(axis=1)), [0, -1, 2], [1, 0, 2.5])
    exact = (math.e - 1) * (1 - math.exp(-1)) * (math.exp(2.5) - math.exp(2))
    assert abs(i7 - exact) < 1e-4 * exact and abs(i7 - exact) < abs(i5 - exact)


def _apply(f, centers, halfwidths, weights=None):
    n = base.normalize_integrand(f, centers.shape[1])
    c, h = jnp.asarray(centers, float), jnp.asarray(halfwidths, float)
    w = jnp.ones(n.n_components) if weights is None else jnp.asarray(weights)
    rule = genz_malik(c.shape[1])
    return jax.jit(lambda c, h, w: apply_rule(n.fn, rule, c, h, jnp.ones(c.shape[0], bool), w))(
        c, h, w)


def test_fourth_difference_picks_the_varying_axis():
    centers = np.full((4, 4), 0.5)
    halfwidths = np.full((4, 4), 0.5)
    for k in range(4):
        est = _apply(lambda x, k=k: jnp.exp(4 * x[:, k]), centers[:1], halfwidths[:1])
        assert int(est.split_axis[0]) == k
    # A quadratic has zero fourth differences: the longest axis is split.
    h = halfwidths[:1].copy()
    h[0, 2] = 0.7
    est = _apply(lambda x: 1 + x[:, 0] ** 2, centers[:1], h)
    assert int(est.split_axis[0]) == 2
    # Vector integrand: the component with the larger weight decides.
    f = lambda x: jnp.stack([jnp.exp(3 * x[:, 0]), jnp.exp(3 * x[:, 1])], axis=1)  # noqa: E731
    assert int(_apply(f, centers[:1], halfwidths[:1], [1.0, 1e-3]).split_axis[0]) == 0
    assert int(_apply(f, centers[:1], halfwidths[:1], [1e-3, 1.0]).split_axis[0]) == 1


def test_apply_rule_matches_numpy_rule_and_counts_nonfinite():
    rule = genz_malik(3)
    lo, hi = np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.9, 0.4])
    f = lambda x: jnp.cos(x.sum(axis=1))  # noqa: E731
    est = _apply(f, ((lo + hi) / 2)[None], ((hi - lo) / 2)[None])
    i7, i5 = rule.integrate(lambda x: np.cos(x.sum(axis=1)), lo, hi)
    assert float(est.value[0, 0]) == pytest.approx(i7, rel=1e-14)
    assert float(est.error[0, 0]) == pytest.approx(abs(i7 - i5), rel=1e-10)
    bad = _apply(lambda x: jnp.where(x[:, 0] > 0.3, jnp.inf, 1.0), ((lo + hi) / 2)[None],
                 ((hi - lo) / 2)[None])
    n_bad = int(np.sum((lo[0] + hi[0]) / 2 + (hi[0] - lo[0]) / 2 * rule.nodes[:, 0] > 0.3))
    assert int(bad.nonfinite) == n_bad > 0
    assert np.isfinite(float(bad.value[0, 0]))


def test_chunked_evaluation_equals_one_call():
    rng = np.random.default_rng(1)
    cap, n = 64, 3
    c = jnp.asarray(rng.uniform(0.2, 0.8, (cap, n)))
    h = jnp.asarray(rng.uniform(0.01, 0.2, (cap, n)))
    f = base.normalize_integrand(lambda x: jnp.exp(-x.sum(axis=1)), n)
    w = jnp.ones(1)
    rule = genz_malik(n)
    whole = jax.jit(lambda c, h: apply_rule(f.fn, rule, c, h, jnp.arange(cap) < 37, w))(c, h)
    chunked = jax.jit(lambda c, h: evaluate_regions(f.fn, rule, c, h, jnp.int32(37), w, 1, 8))(
        c, h)
    np.testing.assert_allclose(chunked.value, whole.value, rtol=1e-13, atol=0)
    # |I7 - I5| cancels: compare it on the scale of the value.
    scale = float(np.max(np.abs(whole.value)))
    np.testing.assert_allclose(chunked.error, whole.error, rtol=0, atol=1e-14 * scale)
    assert np.all(np.asarray(chunked.value[37:]) == 0)
    np.testing.assert_array_equal(chunked.split_axis[:37], whole.split_axis[:37])


def test_two_level_error_formula():
    # delta = |1.0 + 2.0 - 2.9| / 4 = 0.025; c = 1 + 2 * 0.025 / (0.01 + 0.03) = 2.25
    e = two_level_error(jnp.array(1.0), jnp.array(0.01), jnp.array(2.0), jnp.array(0.03),
                        jnp.array(2.9))
    assert float(e) == pytest.approx(0.01 * 2.25 + 0.025, rel=1e-14)
    # Children consistent with the parent keep their errors; zero errors stay finite.
    assert float(two_level_error(1.0, 0.2, 2.0, 0.1, 3.0)) == pytest.approx(0.2)
    assert float(two_level_error(1.0, 0.0, 2.0, 0.0, 3.4)) == pytest.approx(0.1)


# ---------------------------------------------------------------------------------------
# Degree-9 rule with null rules (DCUHRE constants)


@pytest.mark.parametrize("n", range(2, 7))
def test_degree_9_rule_and_its_null_rules(n):
    rule = genz_malik9(n)
    assert rule.n_points == n_points9(n) == len({tuple(p) for p in np.round(rule.nodes, 14)})
    w = rule.weights                                    # (N, 5): basic, null rules 1-4
    x = (1 + rule.nodes) / 2
    for degree in range(11):
        a = _exponents(n, degree)
        vals = np.exp(a @ np.log(x).T)
        exact = np.prod(1.0 / (a + 1.0), axis=1)
        rel = np.abs(vals @ w) / exact[:, None]
        basic = np.abs(vals @ w[:, 0] - exact) / exact
        assert (basic.max() < 1e-12) == (degree <= 9), (n, degree, basic.max())
        for k, null_degree in zip(range(1, 5), (7, 7, 5, 3)):
            assert (rel[:, k].max() < 1e-12) == (degree <= null_degree), (n, degree, k)


def test_degree_9_error_estimate_is_honest_on_a_smooth_integrand():
    f = lambda x: jnp.exp(-x.sum(axis=1)) * jnp.cos(x[:, 0])  # noqa: E731
    centers, halfwidths = np.full((1, 3), 0.5), np.full((1, 3), 0.5)
    n = base.normalize_integrand(f, 3)
    rule = genz_malik9(3)
    est = jax.jit(lambda c, h: apply_rule(n.fn, rule, c, h, jnp.ones(1, bool), jnp.ones(1)))(
        jnp.asarray(centers), jnp.asarray(halfwidths))
    exact = (1 - math.exp(-1)) ** 2 * (math.exp(-1) * (math.sin(1) - math.cos(1)) + 1) / 2
    assert abs(float(est.value[0, 0]) - exact) <= float(est.error[0, 0]) < 1e-4 * exact
