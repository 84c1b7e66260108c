"""Gauss–Kronrod pairs and QUADPACK's local error estimate
(loopint.engines.rules.gauss_kronrod).

References: exact monomial moments on [-1, 1]; an independent 80-digit mpmath construction of
the pairs (``kronrod_extension``); digits printed in QUADPACK's DQK15/DQK21/DQK31 (Piessens et
al. 1983, quoting L. W. Fullerton's 80-digit tables); scipy's QUADPACK (DQAGSE with
``limit=1`` returns DQK21's result and error for one interval).
"""

import functools
import warnings

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate

import loopint  # noqa: F401  (float64)
from loopint.engines.rules.gauss_kronrod import (GK15, GK21, GK31, get_rule, kronrod_extension,
                                                 qk_estimate, quadpack_error)

RULES = [GK15, GK21, GK31]


@functools.lru_cache(maxsize=None)
def _construction(r: int):
    """The 50-digit mpmath construction, shared by the tests that need it."""
    return kronrod_extension(r, dps=50)


def _moment(k: int) -> float:
    return 2.0 / (k + 1) if k % 2 == 0 else 0.0


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_degrees(rule):
    """Gauss exact to degree 2r-1, Kronrod to 3r+1 (r even) / 3r+2 (r odd); not one more."""
    r = rule.gauss_points
    assert rule.n_points == 2 * r + 1 and rule.gauss_degree == 2 * r - 1
    assert rule.kronrod_degree == (3 * r + 2 if r % 2 else 3 * r + 1)
    x = rule.nodes
    for k in range(rule.kronrod_degree + 1):
        assert abs(np.dot(rule.kronrod_weights, x**k) - _moment(k)) < 4e-16, k
    for k in range(rule.gauss_degree + 1):
        assert abs(np.dot(rule.gauss_weights, x**k) - _moment(k)) < 4e-16, k


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_degrees_are_sharp(rule):
    """The next even monomial is not exact (checked at 50 digits: for GK31 the Kronrod
    defect at degree 48 is 5e-17, below double resolution)."""
    import mpmath as mp
    nodes, wk, wg = _construction(rule.gauss_points)
    kg = rule.gauss_degree + 1
    kk = rule.kronrod_degree + 1 + (rule.kronrod_degree + 1) % 2
    with mp.workdps(50):
        dg = mp.fsum(w * t**kg for w, t in zip(wg, nodes)) - mp.mpf(2) / (kg + 1)
        dk = mp.fsum(w * t**kk for w, t in zip(wk, nodes)) - mp.mpf(2) / (kk + 1)
        assert abs(dg) > 1e-12 and abs(dk) > 1e-20


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_structure(rule):
    x, wk, wg = rule.nodes, rule.kronrod_weights, rule.gauss_weights
    assert np.all(np.diff(x) > 0) and np.all(np.abs(x) < 1)
    np.testing.assert_array_equal(x, -x[::-1])
    np.testing.assert_array_equal(wk, wk[::-1])
    assert np.all(wk > 0)
    gauss = wg != 0
    assert gauss.sum() == rule.gauss_points and np.all(wg[gauss] > 0)
    # Gauss nodes are every other Kronrod node (interlacing, QUADPACK's xgk(2), xgk(4), ...)
    assert np.array_equal(np.flatnonzero(gauss), np.arange(1, rule.n_points, 2))


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_tables_match_independent_construction(rule):
    nodes, wk, wg = _construction(rule.gauss_points)
    np.testing.assert_allclose([float(v) for v in nodes], rule.nodes, rtol=0, atol=2e-16)
    np.testing.assert_allclose([float(v) for v in wk], rule.kronrod_weights, rtol=0, atol=2e-17)
    np.testing.assert_allclose([float(v) for v in wg], rule.gauss_weights, rtol=0, atol=2e-17)


def test_tables_match_quadpack_digits():
    """A few entries as printed in QUADPACK (dqk15.f, dqk21.f, dqk31.f data statements)."""
    assert GK15.nodes[-1] == float("0.991455371120812639206854697526329")
    assert GK15.kronrod_weights[7] == float("0.209482141084727828012999174891714")
    assert GK15.gauss_weights[7] == float("0.417959183673469387755102040816327")
    assert GK21.nodes[-1] == float("0.995657163025808080735527280689003")
    assert GK21.kronrod_weights[10] == float("0.149445554002916905664936468389821")
    assert GK21.gauss_weights[-2] == float("0.066671344308688137593568809893332")
    assert GK31.nodes[-1] == float("0.998002298693397060285172840152271")
    assert GK31.kronrod_weights[15] == float("0.101330007014791549017374792767493")
    assert GK31.gauss_weights[15] == float("0.202578241925561272880620199967519")


def test_get_rule():
    assert get_rule("GK21") is GK21 and get_rule(GK15) is GK15
    with pytest.raises(ValueError, match="unknown"):
        get_rule("gk17")


def _quadpack_dqk21(f, a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res, err = scipy.integrate.quad(f, a, b, limit=1, epsabs=0, epsrel=1e-13)[:2]
    return res, err


@pytest.mark.parametrize("f,a,b", [
    (np.exp, 0.0, 1.0),
    (lambda t: 1 / np.sqrt(t), 0.0, 1.0),
    (lambda t: np.cos(30 * t), -1.0, 2.0),
    (lambda t: np.log(t), 0.0, 0.5),
    (lambda t: 1 / (1e-2 + (t - 0.3) ** 2), 0.0, 1.0),
])
def test_qk_estimate_matches_quadpack(f, a, b):
    """result and abserr of DQK21 (via scipy's DQAGSE, one interval) for several integrands."""
    ref_res, ref_err = _quadpack_dqk21(f, a, b)
    h = 0.5 * (b - a)
    x = 0.5 * (a + b) + h * GK21.nodes
    vals = jnp.asarray(f(x))[None, :, None]
    q = qk_estimate(vals, jnp.asarray([h]), GK21)
    assert abs(float(q.result[0, 0]) - ref_res) <= 1e-14 * max(1.0, abs(ref_res))
    assert float(q.error[0, 0]) == pytest.approx(ref_err, rel=1e-8, abs=1e-300)


def test_qk_estimate_vectorized_and_roundoff_guard():
    """Many intervals x components at once; a polynomial hits the 50 eps resabs floor."""
    a = np.array([0.0, 1.0, -2.0])
    b = np.array([1.0, 3.0, 0.5])
    h = 0.5 * (b - a)
    x = 0.5 * (a + b)[:, None] + h[:, None] * GK15.nodes[None, :]
    vals = np.stack([x**3, np.exp(x), np.sin(5 * x)], axis=-1)       # (3, 15, 3)
    q = qk_estimate(jnp.asarray(vals), jnp.asarray(h), GK15)
    exact = np.stack([(b**4 - a**4) / 4, np.exp(b) - np.exp(a),
                      (np.cos(5 * a) - np.cos(5 * b)) / 5], axis=-1)
    np.testing.assert_allclose(np.asarray(q.result), exact, rtol=1e-12, atol=1e-12)
    assert np.all(np.abs(np.asarray(q.result) - exact) <= np.asarray(q.error))
    eps = np.finfo(float).eps
    resabs = np.asarray(q.resabs)
    floor = 50 * eps * resabs
    # x^3 is integrated exactly: the error is the round-off floor and flagged as such
    np.testing.assert_allclose(np.asarray(q.error)[:, 0], floor[:, 0], rtol=1e-12)
    assert np.all(np.asarray(q.at_roundoff)[:, 0])
    assert np.all(np.asarray(q.error) >= floor * (1 - 1e-12))
    # |f - mean| <= |f| + |mean| gives resasc <= 2 resabs
    assert np.all(np.asarray(q.resasc) >= 0)
    assert np.all(np.asarray(q.resasc) <= 2 * resabs * (1 + 1e-12))


def test_quadpack_error_formula():
    err, ro = quadpack_error(jnp.asarray([1e-3, 0.0, 1e-20]), jnp.asarray([1.0, 1.0, 1.0]),
                             jnp.asarray([0.5, 0.5, 0.5]))
    eps = np.finfo(float).eps
    expected0 = 0.5 * min(1.0, (200 * 1e-3 / 0.5) ** 1.5)
    assert float(err[0]) == pytest.approx(expected0, rel=1e-14)
    assert float(err[1]) == pytest.approx(50 * eps, rel=1e-14) and bool(ro[1])
    assert float(err[2]) == pytest.approx(50 * eps, rel=1e-14) and bool(ro[2])
    assert not bool(ro[0])
