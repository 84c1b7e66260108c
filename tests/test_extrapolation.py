"""Tests of the standalone `extrapolation` package against independent references.

References are exact limits (computed with mpmath where they are not rational) and mpmath's
own epsilon table (`mpmath.shanks`).  "Honest" means: the true error is at most 3 times the
reported error, and the reported error is not absurdly large (at most 1e4 times the true error,
or below a stated floor where the true error is at round-off level).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import extrapolation as ex
from extrapolation.result import NO_ACCELERATION, NONFINITE, STATUSES, TOO_FEW_TERMS



@pytest.fixture(autouse=True)
def _forty_digits():
    """The references here need 40 digits, whatever other test modules set at import."""
    with mpmath.workdps(40):
        yield


DELTA = ex.geometric_sequence(1.0, 25)          # delta_j = 1.2**-j, the DCM sequence
L_REAL = 0.7
L_COMPLEX = 0.3 - 0.7j


def assert_honest(result, exact, floor=1e-12):
    true = abs(result.value - exact)
    assert true <= 3 * result.error, (true, result.error)
    assert result.error <= max(1e4 * true, floor), (true, result.error)


def partial_sums(term, n):
    return np.cumsum([term(k) for k in range(n)])


# δ-expansions I(δ) ~ L + Σ a_l φ_l(δ): the sequence, its limit and the right Richardson basis.
EXPANSIONS = {
    "delta, delta**2": (L_REAL + 0.3 * DELTA - 0.5 * DELTA**2, L_REAL, ["delta", "delta**2"]),
    "delta*log(delta), delta": (L_REAL + 0.3 * DELTA * np.log(DELTA) - 0.5 * DELTA, L_REAL,
                                ["delta*log(delta)", "delta"]),
    "four log terms": (L_REAL + 0.3 * DELTA * np.log(DELTA) - 0.5 * DELTA
                       + 0.2 * DELTA**2 * np.log(DELTA) + 0.1 * DELTA**2, L_REAL,
                       ["delta*log(delta)", "delta", "delta**2*log(delta)", "delta**2"]),
    "complex": (L_COMPLEX + (0.2 + 1j) * DELTA + (-0.5 + 0.3j) * DELTA**2 * np.log(DELTA),
                L_COMPLEX, ["delta", "delta**2*log(delta)"]),
}


# --- alternating series ------------------------------------------------------------------------

@pytest.mark.parametrize("name, term, exact", [
    ("log 2", lambda k: (-1) ** k / (k + 1), mpmath.log(2)),
    ("pi/4", lambda k: (-1) ** k / (2 * k + 1), mpmath.pi / 4),
])
@pytest.mark.parametrize("method", [ex.wynn_epsilon, ex.aitken_delta2])
def test_alternating_series_to_1e_12_from_20_terms(name, term, exact, method):
    s = partial_sums(term, 20)
    r = method(s)
    assert abs(r.value - float(exact)) <= 1e-12
    assert r.converged and r.status == "converged"
    assert_honest(r, float(exact))


# --- sequences with known delta-expansions -----------------------------------------------------

@pytest.mark.parametrize("name", list(EXPANSIONS))
def test_wynn_on_delta_expansions(name):
    s, exact, _ = EXPANSIONS[name]
    r = ex.wynn_epsilon(s)
    assert abs(r.value - exact) <= 1e-12
    assert r.converged
    assert_honest(r, exact)


@pytest.mark.parametrize("name", list(EXPANSIONS))
@pytest.mark.parametrize("n", [None, 10])
def test_richardson_with_the_right_basis(name, n):
    s, exact, terms = EXPANSIONS[name]
    r = ex.richardson(DELTA[:n], s[:n], terms)
    assert abs(r.value - exact) <= 1e-12
    assert r.converged and r.order == len(terms)
    assert_honest(r, exact)


def test_richardson_with_a_missing_term_is_not_converged_and_honest():
    # The delta**2 term is not in the basis: the fit is biased and must say so.
    s = L_REAL + 0.3 * DELTA - 0.5 * DELTA**2
    for n in (8, 25):
        r = ex.richardson(DELTA[:n], s[:n], ["delta"])
        assert not r.converged
        assert abs(r.value - L_REAL) <= 3 * r.error


def test_richardson_propagates_input_errors_linearly():
    s, exact, terms = EXPANSIONS["delta, delta**2"]
    r0 = ex.richardson(DELTA, s, terms)
    r1 = ex.richardson(DELTA, s, terms, errors=1e-9)
    # value = sum_j c_j s_j, so the propagated error is exactly amplification * sigma.
    assert r1.error - r0.error == pytest.approx(1e-9 * r1.amplification, rel=1e-6)
    assert r1.error >= 1e-9 and not ex.richardson(DELTA, s, terms, errors=1e-9, rtol=1e-10,
                                                  atol=0.0).converged


def test_complex_sequence_same_as_real_and_imaginary_parts():
    s, exact, _ = EXPANSIONS["complex"]
    rc = ex.wynn_epsilon(s)
    re, im = ex.wynn_epsilon(s.real), ex.wynn_epsilon(s.imag)
    assert isinstance(rc.value, complex)
    assert abs(rc.value - exact) <= 1e-12
    assert abs(complex(re.value, im.value) - exact) <= 1e-12
    assert re.converged and im.converged and rc.converged


def test_regulated_integral_like_the_dcm_driver():
    # I(delta) = int_0^1 x dx / (x - 1/2 - i delta) = 1 + (1/2 + i delta) log((1/2 - i delta) /
    # (-1/2 - i delta)), a propagator pole regulated by i*delta; I(0+) = 1 + i pi/2.
    exact = 1 + 0.5j * math.pi
    delta = ex.geometric_sequence(0.25, 25)
    z = 0.5 + 1j * delta
    values = 1 + z * np.log((0.5 - 1j * delta) / (-0.5 - 1j * delta))
    # As the loopint driver does: real and imaginary parts as two sequences of one batch.
    r = ex.wynn_epsilon(np.column_stack([values.real, values.imag]), atol=1e-10)
    assert np.all(r.converged)
    assert abs(complex(*r.value) - exact) <= 1e-11
    assert np.all(np.abs(r.value - [exact.real, exact.imag]) <= 3 * r.error)
    # Directly in complex arithmetic: as accurate; here the chosen element has a larger
    # round-off amplification, so the (honest) error estimate is larger.
    rc = ex.wynn_epsilon(values, atol=1e-10)
    assert abs(rc.value - exact) <= 1e-11 and abs(rc.value - exact) <= rc.error


# --- logarithmic convergence: epsilon does not accelerate, and must say so ---------------------

@pytest.mark.parametrize("method", [ex.wynn_epsilon, ex.aitken_delta2])
@pytest.mark.parametrize("p, n", [(2, 20), (2, 40), (1.5, 30)])
def test_logarithmic_sequence_is_not_converged(method, p, n):
    s = partial_sums(lambda k: 1.0 / (k + 1) ** p, n)
    exact = float(mpmath.zeta(p))
    r = method(s)
    assert not r.converged
    assert abs(r.value - exact) <= r.error            # honest: the error covers the truth
    if method is ex.wynn_epsilon:
        assert r.status == NO_ACCELERATION


def test_logarithmic_sequence_loose_tolerance_is_honest_at_every_step():
    exact = math.pi**2 / 6
    w = ex.WynnEpsilon(rtol=1e-2)
    for x in partial_sums(lambda k: 1.0 / (k + 1) ** 2, 40):
        r = w.append(x)
        assert abs(r.value - exact) <= r.error
        if r.converged:
            assert abs(r.value - exact) <= 1e-2 * abs(r.value)


# --- agreement with mpmath.shanks -------------------------------------------------------------

SHANKS_CASES = {
    "log 2": partial_sums(lambda k: (-1) ** k / (k + 1), 11),
    "two geometric components": np.array([1.0 + 0.6**j - 0.5 * (-0.8) ** j for j in range(11)]),
    "delta-sequence": (L_REAL + 0.3 * DELTA - 0.5 * DELTA**2 * np.log(DELTA) + DELTA**3)[:9],
}


@pytest.mark.parametrize("name", list(SHANKS_CASES))
def test_epsilon_table_matches_mpmath_shanks(name):
    s = SHANKS_CASES[name]
    n = s.size
    table = mpmath.shanks([mpmath.mpf(x) for x in s])    # row i: s_0..s_(i+1); T[i][j] = eps_(j+1)
    mine = ex.epsilon_table(s)
    checked = 0
    for i, row in enumerate(table):
        for j in range(1, len(row), 2):                   # even epsilon columns only
            k, m = j + 1, i - j
            ref = float(row[j])
            # mpmath works on the same float64 terms in 40 digits; our float64 table may differ
            # by the round-off it propagates, sum_i |d e / d s_i| eps |s_i|, itself <= 1e-12 here
            # except for high columns of the delta-sequence (amplification ~1e6).
            g = ex.shanks_gradient(s[m : m + k + 1])
            roundoff = np.nansum(np.abs(g) * np.abs(s[m : m + k + 1])) * np.finfo(float).eps
            assert abs(mine[k, m] - ref) <= 1e-12 * abs(ref) + 4 * roundoff, (k, m)
            checked += 1
    assert checked >= (n // 2) ** 2 // 2
    # The incremental (condensed, cross-rule) table has the same newest diagonal, except that
    # it stops at a column that has converged to machine precision (DQELG).
    w = ex.WynnEpsilon()
    for x in s:
        w.append(x)
    last = [float(table[-1][j]) for j in range(1, len(table[-1]), 2)]
    kept = w.diagonal[1:]
    assert kept.size == len(last) or name == "two geometric components"
    assert kept.size >= 2
    # Same elements by another recursion (cross rule): agreement to round-off as above.
    tol = 1e-12 if name != "delta-sequence" else 1e-9
    np.testing.assert_allclose(kept, last[: kept.size], rtol=tol)


def test_shanks_gradient_matches_high_precision_finite_differences():
    s = SHANKS_CASES["delta-sequence"][:5]          # e_2: five terms
    g = ex.shanks_gradient(s)
    assert g.sum() == pytest.approx(1.0, rel=1e-10)   # a constant shift moves the limit by as much
    h = mpmath.mpf("1e-25")
    for i in range(5):
        up = [mpmath.mpf(x) for x in s]
        down = list(up)
        up[i] += h
        down[i] -= h
        fd = (mpmath.shanks(up)[-1][-1] - mpmath.shanks(down)[-1][-1]) / (2 * h)
        assert g[i] == pytest.approx(float(fd), rel=1e-8)


# --- batch and incremental interfaces ---------------------------------------------------------

def _batch_columns():
    return np.column_stack([partial_sums(lambda k: (-1) ** k / (k + 1), 25),
                            EXPANSIONS["delta*log(delta), delta"][0],
                            partial_sums(lambda k: 1.0 / (k + 1) ** 2, 25)])


def _same(a, b, rtol=0.0):
    for f in ("value", "error", "amplification"):
        # an error estimate at round-off level (1e-15 of the value) changes with the order of
        # summation: compare it to a few ulp of the value, not relative to itself
        atol = 8 * np.finfo(float).eps * np.abs(a.value) if (f == "error" and rtol) else 0
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=rtol, atol=atol, err_msg=f)
    for f in ("converged", "status", "n_terms", "order"):
        assert np.array_equal(np.asarray(getattr(a, f)), np.asarray(getattr(b, f))), f


@pytest.mark.parametrize("method, rtol", [
    (ex.wynn_epsilon, 0.0),
    (ex.aitken_delta2, 0.0),
    # one matrix product for all columns: equal up to summation order
    (lambda s: ex.richardson(DELTA, s, ["delta*log(delta)", "delta"]), 1e-12),
])
def test_batch_columns_equal_separate_calls(method, rtol):
    seq = _batch_columns()
    batch = method(seq)
    assert np.shape(batch.value) == (3,)
    for i in range(3):
        single = method(seq[:, i])
        _same(ex.ExtrapolationResult(**{f: getattr(batch, f)[i]
                                        for f in batch.__dataclass_fields__}), single, rtol)


def test_incremental_equals_batch():
    seq = _batch_columns()
    w_all = ex.WynnEpsilon()
    w_one = ex.WynnEpsilon()
    for j, row in enumerate(seq):
        r_all = w_all.append(row)
        r_one = w_one.append(row[1])
        _same(r_all, ex.wynn_epsilon(seq[: j + 1]))
        _same(r_one, ex.wynn_epsilon(seq[: j + 1, 1]))
    assert w_all.n_terms == 25 and w_all.result is r_all


# --- noisy terms -------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(10))
def test_noise_with_given_errors_is_never_hidden(seed):
    noise = 1e-10
    rng = np.random.default_rng(seed)
    s = EXPANSIONS["delta, delta**2"][0] + noise * rng.standard_normal(DELTA.size)
    r = ex.wynn_epsilon(s, errors=noise, rtol=1e-12)
    # Sum of the gradient is 1, so the propagated part alone is >= noise: guaranteed.
    assert r.error >= noise
    assert abs(r.value - L_REAL) <= r.error
    assert not r.converged
    ra = ex.aitken_delta2(s, errors=noise)
    assert ra.error >= noise and abs(ra.value - L_REAL) <= ra.error


def test_noise_without_given_errors_is_seen_in_the_spread():
    # Without `errors` the noise is only seen through the scatter of successive estimates
    # (as in QUADPACK); measured: below the noise in 0 of 300 seeds with 25 terms.
    noise = 1e-10
    below = 0
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        s = EXPANSIONS["delta, delta**2"][0] + noise * rng.standard_normal(DELTA.size)
        r = ex.wynn_epsilon(s, rtol=1e-12)
        below += r.error < noise
        assert not r.converged
        assert abs(r.value - L_REAL) <= 10 * r.error
    assert below <= 1


# --- edge cases ----------------------------------------------------------------------------------

def test_few_terms_constant_and_nonfinite():
    assert ex.wynn_epsilon([1.0, 2.0]).status == TOO_FEW_TERMS
    assert not ex.wynn_epsilon([1.0, 0.5, 0.75, 0.625]).converged
    r = ex.wynn_epsilon(np.full(5, 2.5))
    assert r.converged and r.value == 2.5 and r.error <= 1e-14
    w = ex.WynnEpsilon()
    for x in (1.0, 0.5, math.nan, 0.6):
        r = w.append(x)
    assert r.status == NONFINITE and math.isnan(r.value) and not r.converged
    assert ex.aitken_delta2([1.0, math.inf, 0.5, 0.6, 0.7, 0.8]).status == NONFINITE
    for r in (ex.wynn_epsilon(_batch_columns()), ex.aitken_delta2(_batch_columns())):
        assert set(r.status) <= set(STATUSES)


def test_table_limit_keeps_working_on_long_sequences():
    # 120 terms of a slowly converging geometric sequence: the table keeps at most limexp terms.
    s = 2.0 + np.cumsum(0.97 ** np.arange(120))
    exact = 2.0 + 1.0 / (1.0 - 0.97)
    w = ex.WynnEpsilon(limexp=20)
    for x in s:
        r = w.append(x)
        assert w.diagonal.size <= 10
    assert r.converged and abs(r.value - exact) <= 1e-10 * exact


def test_basis_specs_are_parsed_not_evaluated():
    from extrapolation.richardson import parse_term
    assert parse_term("delta") == (1.0, 0)
    assert parse_term("delta**2") == (2.0, 0)
    assert parse_term("delta * log(delta)") == (1.0, 1)
    assert parse_term("delta**2*log(delta)**2") == (2.0, 2)
    assert parse_term("sqrt(delta)") == (0.5, 0)
    assert parse_term("delta**(3/2)*log(delta)") == (1.5, 1)
    for bad in ("log(delta)", "delta**-1", "exp(delta)", "__import__('os').system('ls')",
                "delta*log(x)"):
        with pytest.raises(ValueError):
            parse_term(bad)
    with pytest.raises(ValueError):
        ex.richardson(DELTA, DELTA, ["delta**0"])
    d = DELTA[:6]
    # A callable and a (p, m) pair are the same basis function as the string.
    r1 = ex.richardson(d, 1 + d * np.log(d), ["delta*log(delta)"])
    r2 = ex.richardson(d, 1 + d * np.log(d), [(1, 1)])
    r3 = ex.richardson(d, 1 + d * np.log(d), [lambda x: x * np.log(x)])
    assert r1.value == r2.value == pytest.approx(r3.value, abs=1e-15)


def test_geometric_sequence():
    d = ex.geometric_sequence(0.5, 4)
    np.testing.assert_allclose(d, 0.5 * 1.2 ** -np.arange(4.0), rtol=0)
    np.testing.assert_allclose(ex.geometric_sequence(1.0, 3, q=2.0), [1.0, 0.5, 0.25])
    with pytest.raises(ValueError):
        ex.geometric_sequence(1.0, 3, q=1.0)


# --- rational extrapolation ----------------------------------------------------------------------

def test_rational_is_exact_on_rational_functions():
    """(1 + 2d) / (1 + d + d^2): degrees (1, 2), exact from 4 points; more points change only
    round-off.  Complex values and a batch of columns give the same as one at a time."""
    d = DELTA[:10]
    f = (1.0 + 2 * d) / (1.0 + d + d**2)
    r = ex.rational(d, f)
    assert r.converged and r.status == "converged"
    assert abs(r.value - 1.0) <= 1e-12 and r.error <= 1e-11 and r.order == 9
    g = L_COMPLEX + (0.5 - 2j) * d / (1 + 0.3j * d)
    rc = ex.rational(d, g)
    assert abs(rc.value - L_COMPLEX) <= 1e-12 and rc.converged
    batch = ex.rational(d, np.column_stack([f, g]))
    assert batch.value.shape == (2,) and np.allclose(batch.value, [r.value, rc.value], atol=1e-15)


def test_rational_beats_powers_near_imaginary_axis_singularities():
    """L + c (sqrt(d^2 + r^2) - r): analytic at 0, branch points at +-i r, r = 0.3 within the
    sampled range [0.03, 1] (a regulated loop integral's I(delta) has its singularities on the
    imaginary axis).  The rational fit is accurate to 1e-10 and honest; the power series of
    the same data (Richardson with delta..delta^p, the best p) is not even at 1e-6."""
    d = DELTA[:20]
    f = L_REAL + 0.4 * (np.hypot(d, 0.3) - 0.3)
    r = ex.rational(d, f, rtol=1e-9)
    assert r.converged and abs(r.value - L_REAL) <= 1e-10
    assert_honest(r, L_REAL, floor=1e-11)
    best = min(abs(ex.richardson(d, f, [f"delta**{k}" for k in range(1, p + 1)]).value - L_REAL)
               for p in range(1, 12))
    assert best > 1e-6


def test_rational_error_is_honest_and_propagates_term_errors():
    """Branch points closer to 0 than the data (r = 0.005): not converged, honest.  Term
    errors of 1e-9 reach the error at least once (the weights sum to one)."""
    d = DELTA[:16]
    f = L_REAL + 0.4 * (np.hypot(d, 0.005) - 0.005)
    r = ex.rational(d, f, rtol=1e-8)
    assert not r.converged and r.status == "tolerance_not_met"
    assert abs(r.value - L_REAL) <= r.error
    g = (1.0 + 2 * d) / (1.0 + d + d**2)
    r0, r1 = ex.rational(d, g), ex.rational(d, g, errors=1e-9)
    assert r1.error >= 1e-9 > r0.error and r1.amplification >= 1.0
    assert not ex.rational(d, g, errors=1e-9, rtol=1e-10).converged


def test_rational_too_few_terms_breakdown_and_bad_input():
    d = DELTA[:4]
    r = ex.rational(d, 1.0 + d)
    assert r.status == TOO_FEW_TERMS and not r.converged and r.error == math.inf
    assert abs(r.value - 1.0) <= 1e-14           # the value is still the interpolant's
    d = DELTA[:8]
    bad = ex.rational(d, np.where(np.arange(8) == 3, np.nan, 1.0 + d))
    assert bad.status == NONFINITE and math.isnan(bad.value)
    const = ex.rational(d, np.full(8, 2.5))
    assert const.converged and const.value == 2.5
    with pytest.raises(ValueError, match="distinct"):
        ex.rational([0.1, 0.1, 0.2, 0.3, 0.4], np.ones(5))
    with pytest.raises(ValueError, match="positive"):
        ex.rational([-0.1, 0.2, 0.3, 0.4, 0.5], np.ones(5))


# ------------------------------------------------------------------ extrapolation.choice
def test_each_extrapolation_wins_where_its_model_holds():
    """Rational in delta (a pole at delta = -2), and analytic at 0 with branch points at
    +-0.2i inside the sampled range (as a loop integral's I(delta), whose singularities sit on
    the imaginary axis): the rational fit meets 1e-8 from 16 terms and is chosen.  A sum of
    geometric sequences in j (delta^(1/2) and delta^2): the epsilon algorithm is exact there
    and is chosen.  Branch points closer to 0 than the deltas (+-0.02i): not converged, and
    the error still bounds the true one."""
    d = ex.geometric_sequence(0.3, 16)             # delta in [0.019, 0.3]
    errs = np.full((16, 1), 1e-13 * (1 + 1j))
    limit = 1.5 + 2j
    for r in (None, 0.2):
        f = limit + (0.7 - 0.2j) * (d / (1 + 0.5 * d) if r is None else np.hypot(d, r) - r)
        out = ex.extrapolate(f[:, None], errs, rtol=1e-8, atol=0.0, deltas=d)
        assert out["converged"][0], (r, out)
        assert out["method"][0].startswith("re: rational") and "im: rational" in out["method"][0]
        assert abs(out["value"][0] - limit) <= 1e-8 * abs(limit)
        assert abs(out["value"][0] - limit) <= abs(out["error"][0])
    rough = 1.0 + 0.3 * np.sqrt(d) + d ** 2
    out = ex.extrapolate(rough[:, None] + 0j, errs, rtol=1e-8, atol=0.0, deltas=d)
    assert out["converged"][0] and out["method"][0].startswith("re: wynn"), out
    assert abs(out["value"][0] - 1.0) <= 1e-10
    near = limit + (0.7 - 0.2j) * (np.hypot(d, 0.02) - 0.02)
    out = ex.extrapolate(near[:, None], errs, rtol=1e-8, atol=0.0, deltas=d)
    assert not out["converged"][0]
    assert abs(out["value"][0].real - limit.real) <= abs(out["error"][0].real)
    assert abs(out["value"][0].imag - limit.imag) <= abs(out["error"][0].imag)


def test_rational_windows_leave_out_a_noisy_smallest_delta():
    """The smallest deltas are the hardest integrals: a last term with a large (honest)
    error is left out by a window of the rational fit instead of spoiling every fit."""
    d = ex.geometric_sequence(0.3, 16)
    limit = 1.5
    f = limit + 0.7 * d / (1 + 0.5 * d)
    sigma = np.full(16, 1e-13)
    f[-1] += 3e-6
    sigma[-1] = 5e-6
    value, error, label = ex.rational_windows(d, f[:, None], sigma[:, None])
    assert abs(value[0] - limit) <= error[0] <= 1e-8, (value, error, label)
    assert ":" in str(label[0]) and str(label[0]).endswith(":15")
