"""Endpoint singularities in the iterated engine: QUADPACK QAGS-style ε-extrapolation toward
the ends of every 1-D range (loopint.engines.endpoint, loopint.engines.iterated).

References are independent: closed forms (products of 1-D integrals, Dirichlet integrals over
the simplex and their derivatives for logarithms, evaluated with mpmath) and mpmath's
tanh-sinh quadrature for 1-D integrals.  Honesty: a converged result's true error is at most
its reported error, which meets the requested tolerance.
"""

import math

import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest

import loopint  # noqa: F401  (float64)
from extrapolation import epsilon_table, wynn_epsilon
from loopint.engines import base, iterated
from loopint.engines.base import Box, Simplex
from loopint.engines.endpoint import HISTORY, epsilon_append
from loopint.engines.iterated import Iterated

mp.mp.dps = 30

# The three families of integrable endpoint singularities: g(t), its antiderivative's value
# ∫_0^1 g, and ∫_0^1 t g(t) (for the 2-D mixing term).
FAMILIES = {
    "x^-1/2": (lambda t: 1 / jnp.sqrt(t), lambda a: mp.power(a, -0.5)),
    "log x": (jnp.log, mp.log),
    "x^-0.9": (lambda t: t ** -0.9, lambda a: mp.power(a, -0.9)),
}


def check(r, exact, rtol):
    """Converged, tolerance met, and the reported error bounds the true error."""
    assert r.converged and r.status == base.CONVERGED, r
    assert abs(r.value - exact) <= r.error, (r.value, exact, r.error)
    assert r.error <= rtol * abs(r.value)


def quad(g, h=lambda t: 1, L=1):
    """∫_0^L g(t) h(t) dt for g singular at 0, after t = L u^10 (smooth for the families)."""
    return float(mp.quad(lambda u: g(L * u**10) * h(L * u**10) * 10 * L * u**9, [0, 1]))


# --------------------------------------------------------------------------------------------
# The vectorized ε-algorithm against the extrapolation package
# --------------------------------------------------------------------------------------------

def run_table(s, K=5):
    """epsilon_append on the sequence ``s`` term by term, as the engine uses it (state on the
    origin of the newest term).  Returns per term ``(value, error, usable, diagonal)`` on the
    sequence's own origin."""
    prev = jnp.full(K, jnp.nan)
    cur = jnp.full(K, jnp.nan).at[0].set(0.0)
    hist, nh = jnp.zeros(HISTORY), jnp.asarray(0)
    scale = jnp.asarray(np.max(np.abs(s)))
    out = []
    for m in range(1, s.size):
        prev, cur, hist, nh, value, error, usable = epsilon_append(
            prev, cur, hist, nh, jnp.asarray(s[m] - s[m - 1]), scale)
        out.append((float(value) + s[m], float(error), bool(usable), np.asarray(cur) + s[m]))
    return out


def test_epsilon_table_and_results_match_the_extrapolation_package():
    n = np.arange(16)
    s = 1.0 + 0.7 * 0.9 ** n - 0.3 * 0.45 ** n + 0.1 * 0.2 ** n
    out = run_table(s)
    for m in range(3, 10):              # up to 2K - 1 terms: the package's table, unabridged
        value, _, _, diagonal = out[m - 2]
        table = epsilon_table(s[:m])
        for k in range(min(5, (m + 1) // 2)):      # ε_2k ending at the newest term
            assert diagonal[k] == pytest.approx(table[2 * k, m - 1 - 2 * k], rel=1e-12)
        assert value == pytest.approx(wynn_epsilon(s[:m]).value, rel=1e-12)
    for value, error, usable, _ in out:
        assert not usable or abs(value - 1.0) <= error
    assert out[-1][2] and abs(out[-1][0] - 1.0) < 1e-12


def test_epsilon_limit_is_exact_for_geometric_sequences_and_needs_history():
    s = 3.0 - 2.0 * 2.0 ** (-0.1 * np.arange(8))          # x^(-0.9): ratio 2^(-0.1)
    out = run_table(s)
    # no error estimate before three earlier results (DQELG): from the sixth term on
    assert not any(u for _, _, u, _ in out[:4]) and not np.isfinite(out[0][1])
    for value, error, usable, _ in out[4:]:
        assert usable and value == pytest.approx(3.0, rel=1e-13) and error < 1e-12


# --------------------------------------------------------------------------------------------
# One family per test, 1-D, boxes and the simplex
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", list(FAMILIES))
def test_1d_both_ends_with_a_smooth_factor(family):
    """g(x) e^x on [0, 1] (singular at the lower end) and g(2 - x) cos x on [0, 2] (upper);
    fewer evaluations than plain bisection."""
    g, gm = FAMILIES[family]
    r = Iterated().integrate(lambda x: g(x[:, 0]) * jnp.exp(x[:, 0]), Box.cube(1), rtol=1e-10)
    check(r, quad(gm, mp.exp), 1e-10)
    plain = Iterated(endpoint_terms=0).integrate(lambda x: g(x[:, 0]) * jnp.exp(x[:, 0]),
                                                 Box.cube(1), rtol=1e-10)
    assert r.evaluations < plain.evaluations
    # upper end: 2 - x loses digits near x = 2 (rounding of x), so a looser tolerance
    r = Iterated().integrate(lambda x: g(2 - x[:, 0]) * jnp.cos(x[:, 0]), Box([0.0], [2.0]),
                             rtol=1e-8)
    check(r, quad(gm, lambda s: mp.cos(2 - s), 2), 1e-8)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_2d_box(family):
    """g(x1) g(x2/2) (1 + x1 x2) on [0, 1] x [0, 2]: products of 1-D integrals."""
    g, gm = FAMILIES[family]
    i0 = quad(gm)
    i1 = quad(gm, lambda t: t)
    exact = i0 * 2 * i0 + i1 * 4 * i1            # ∫_0^2 g(y/2) dy = 2 i0, ∫ y g(y/2) = 4 i1
    r = Iterated().integrate(lambda x: g(x[:, 0]) * g(x[:, 1] / 2) * (1 + x[:, 0] * x[:, 1]),
                             Box([0.0, 0.0], [1.0, 2.0]), rtol=1e-9)
    check(r, exact, 1e-9)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_3d_cube(family):
    g, gm = FAMILIES[family]
    exact = quad(gm) ** 3
    r = Iterated().integrate(lambda x: g(x[:, 0]) * g(x[:, 1]) * g(x[:, 2]), Box.cube(3),
                             rtol=1e-8)
    check(r, exact, 1e-8)


def dirichlet(a):
    """∫_simplex ∏ x_i^(a_i - 1) = ∏ Γ(a_i) / Γ(1 + Σ a_i)."""
    return mp.fprod(mp.gamma(x) for x in a) / mp.gamma(1 + mp.fsum(a))


# x^-1/2: test_3d_simplex_inverse_square_roots_to_1e_8 below, the same integrand at 1e-8
@pytest.mark.parametrize("family,exact", [
    ("x^-0.9", lambda: dirichlet([0.1] * 3)),
    # ∏ log x_i: the mixed third derivative of the Dirichlet integral at a = (1, 1, 1)
    ("log x", lambda: mp.diff(lambda a, b, c: dirichlet([a, b, c]), (1, 1, 1), (1, 1, 1))),
])
def test_3d_simplex(family, exact):
    g, _ = FAMILIES[family]
    exact = float(exact())
    r = Iterated().integrate(lambda x: g(x[:, 0]) * g(x[:, 1]) * g(x[:, 2]), Simplex(3),
                             rtol=1e-7)
    check(r, exact, 1e-7)


def test_3d_simplex_inverse_square_roots_to_1e_8():
    """The issue's case: (x1 x2 x3)^(-1/2) over the 3-simplex, Γ(1/2)^3 / Γ(5/2) = 4π/3."""
    exact = float(dirichlet([0.5] * 3))
    assert exact == pytest.approx(4 * math.pi / 3, rel=1e-15)
    r = Iterated().integrate(lambda x: 1 / jnp.sqrt(x[:, 0] * x[:, 1] * x[:, 2]), Simplex(3),
                             rtol=1e-8)
    check(r, exact, 1e-8)


# --------------------------------------------------------------------------------------------
# Smooth integrands unchanged, honest failure, options, storage
# --------------------------------------------------------------------------------------------

def test_smooth_integrands_are_unchanged():
    """No endpoint interval is bisected often enough for the extrapolation to be used: the
    same numbers as plain bisection, bit for bit."""
    def f(x):
        return jnp.exp(x[:, 0] - 2 * x[:, 1] + x[:, 2]) * jnp.cos(3 * x[:, 0] * x[:, 2])
    for domain in (Box.cube(3), Simplex(3)):
        a = Iterated().integrate(f, domain, rtol=1e-10)
        b = Iterated(endpoint_terms=0).integrate(f, domain, rtol=1e-10)
        assert (a.value, a.error, a.evaluations) == (b.value, b.error, b.evaluations)


@pytest.mark.parametrize("power", [-1.0, -1.1])
def test_non_integrable_singularity_is_not_converged(power):
    """x^-1 and x^-1.1 on [0, 1] diverge: no limit, and the run must say so (for x^-1.1 the
    ε-algorithm's anti-limit, -10, must not be taken)."""
    r = Iterated().integrate(lambda x: x[:, 0] ** power, Box.cube(1), rtol=1e-6)
    assert not r.converged and r.value > 100
    assert base.Status.of(r.status) in (base.Status.ROUNDOFF, base.Status.MEMORY_LIMIT)


def test_slowly_convergent_power_is_extrapolated():
    """x^-0.99: each bisection gains 2^0.01; the extrapolation still finds 100."""
    r = Iterated().integrate(lambda x: x[:, 0] ** -0.99, Box.cube(1), rtol=1e-8)
    check(r, 100.0, 1e-8)


def test_complex_and_vector_components_each_extrapolated():
    f = lambda x: jnp.stack([x[:, 0] ** -0.9, 1j * jnp.log(x[:, 0])], axis=1)  # noqa: E731
    r = Iterated().integrate(f, Box.cube(1), rtol=1e-10)
    assert r.converged
    v, e = np.asarray(r.value), np.asarray(r.error)
    assert abs(v[0].real - 10) <= e[0].real and abs(v[1].imag + 1) <= e[1].imag
    assert np.all(np.abs(v - np.array([10, -1j])) <= 1e-10 * np.abs(v))


def test_small_buffers_evict_with_extrapolation():
    """Storage for a few intervals per prefix: prefixes are evicted and redone, and the
    extrapolation state travels with their intervals."""
    def f(x):
        return jnp.cos(20 * x[:, 0]) ** 2 / jnp.sqrt(x[:, 1] * (1 - x[:, 0] - x[:, 1]))
    exact = float(mp.quad(lambda t: mp.cos(20 * t) ** 2 * mp.pi, [0, 1]))
    small = Iterated(memory_limit=256 * iterated.bytes_per_point(1, 2),
                     max_intervals=16).integrate(f, Simplex(2), rtol=1e-8)
    check(small, exact, 1e-8)
    assert small.info["evicted"][1] > 0
    big = Iterated().integrate(f, Simplex(2), rtol=1e-8)
    assert small.value == pytest.approx(big.value, rel=1e-12)


def test_accelerator_policy_with_extrapolation():
    """Fused innermost steps, growing buffers and nsplit = 4 (the accelerator defaults) carry
    the tables too: the same answer, to the tolerance, as the CPU policy."""
    def f(x):
        return x[:, 0] ** -0.9 * jnp.log(x[:, 1]) * jnp.exp(x[:, 0] * x[:, 1])
    exact = float(mp.quad(lambda y: mp.quad(lambda u: 10 * mp.exp(u**10 * y), [0, 1])
                          * mp.log(y), [0, 1]))
    cpu = Iterated().integrate(f, Box.cube(2), rtol=1e-9)
    check(cpu, exact, 1e-9)
    for nsplit in (2, 4):
        acc = Iterated(fused=True, grow_only=True, materialize=False,
                       nsplit=nsplit).integrate(f, Box.cube(2), rtol=1e-9)
        check(acc, exact, 1e-9)


def test_endpoint_terms_option():
    with pytest.raises(ValueError, match="endpoint_terms"):
        Iterated(endpoint_terms=2).integrate(lambda x: x[:, 0], Box.cube(1))
