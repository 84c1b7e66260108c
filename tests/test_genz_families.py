"""The random-parameter Genz families of loopint/bench/genz_families.py.

References: each integrand written again here in NumPy from Genz's definitions (1984) and
integrated over the unit square and cube with ``scipy.integrate.nquad`` (adaptive QUADPACK,
breakpoints at the kinks and jumps), independent of the closed forms the benchmark evaluates
with mpmath.
"""

import numpy as np
import pytest
from scipy.integrate import nquad

from loopint.bench import genz_families as gf


def _numpy(name, a, u):
    d = len(a)
    if name == "oscillatory":
        return lambda *x: np.cos(2 * np.pi * u[0] + np.dot(a, x))
    if name == "product_peak":
        return lambda *x: np.prod(1.0 / (a**-2.0 + (np.array(x) - u) ** 2))
    if name == "corner_peak":
        return lambda *x: (1.0 + np.dot(a, x)) ** (-(d + 1))
    if name == "gaussian":
        return lambda *x: np.exp(-np.sum(a**2 * (np.array(x) - u) ** 2))
    if name == "c0":
        return lambda *x: np.exp(-np.sum(a * np.abs(np.array(x) - u)))
    return lambda *x: 0.0 if (x[0] > u[0] or x[1] > u[1]) else np.exp(np.dot(a, x))


# 3-D for the families that are not products of 1-D integrals (and the jump), 2-D for all
CLOSED_FORM_CASES = ([(name, 2) for name in gf.FAMILIES]
                     + [(name, 3) for name in ("oscillatory", "corner_peak", "discontinuous")])


@pytest.mark.parametrize("name, d", CLOSED_FORM_CASES)
def test_closed_forms(name, d):
    m = gf.family(name, d, draw=1)
    g = _numpy(name, m.a, m.u)
    x = np.random.default_rng(5).uniform(size=(7, d))
    assert np.allclose(np.asarray(m.f(x)), [g(*row) for row in x], rtol=1e-13, atol=0)
    kinked = name in ("c0", "discontinuous")
    opts = [dict({"limit": 200, "epsabs": 0, "epsrel": 1e-11},
                 **({"points": [m.u[i]]} if kinked else {})) for i in range(d)]
    value, _ = nquad(g, [(0.0, 1.0)] * d, opts=opts)
    assert m.exact == pytest.approx(value, rel=1e-8)


def test_draws_differ_and_repeat():
    """Seeded by (family, dimension, draw): the same member on every call, another per draw."""
    a, b, c = (gf.family("gaussian", 4, k) for k in (0, 0, 1))
    assert np.array_equal(a.u, b.u) and a.exact == b.exact and not np.array_equal(a.u, c.u)


def test_run_and_summary():
    """One run's row and the summary: a smooth member in 3-D converges honestly."""
    row = gf.run_one("gaussian", 3, 1e-8, 0, 10**7)
    assert row["converged"] and row["honest"] and row["true_error"] <= row["error"]
    s = gf.summary([row, dict(row, draw=1, honest=False)])
    assert s == [{"case": "gaussian, 3-D", "method": "cubature", "runs": 2, "converged": 2,
                  "honest": 1, "worst true/est": row["true_error"] / row["error"]}]
