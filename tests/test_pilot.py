"""method="auto" from three dimensions: short runs of the lattice and of cubature pick the engine
(loopint.engines.Pilot).

References: closed forms (products of one-dimensional integrals; the two-loop ladder triangle
as Usyukina and Davydychev's Phi^(2), evaluated with mpmath in tests/derivative_points.py).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import mpmath
import numpy as np
import pytest

import loopint
from loopint import engines
from loopint.bench.pilot_cases import LADDER_TRIANGLE
from loopint.engines import Box, IntegrationResult
from loopint.engines.pilot import MIN_PILOT_EVALS, projected_evaluations
from loopint.plan import PILOT_CANDIDATES

from derivative_points import ladder_phi

PILOT = engines.Pilot(tuple(engines.get(m) for m in PILOT_CANDIDATES))

def _result(method, value, error, evaluations, converged=False, info=None):
    return IntegrationResult(value, error, converged, "converged" if converged else
                             "max_evals: test", evaluations, 0.0, method, info or {})


def test_a_lattice_projection_follows_the_rate_of_its_levels():
    # errors falling as n^-2 from 1e-2 at n = 1000 (8 shifts): to rtol 1e-8 at value 1 the
    # excess at n = 4000 is 10^6 / 16, met at n = 4000 * 250 = 10^6, about 2 q n in all.
    history = [(n, 8, 1.0, 1e-2 * (1000 / n) ** 2) for n in (1000, 2000, 4000)]
    r = _result("qmc", 1.0, history[-1][3], 8 * 7000, info={"history": history})
    assert projected_evaluations(r, 1e-8, 0.0) == pytest.approx(2 * 8 * 1e6, rel=1e-9)


def test_a_cubature_projection_follows_its_trace():
    # local excess falling as N^-1: 100 at 1e4 evaluations, 25 at 4e4 -> met at 1e6
    trace = [(10_000, 100.0), (20_000, 50.0)]
    r = _result("cubature", 2.0, 25 * 2e-6, 40_000,
                info={"trace": trace, "local_error": 25 * 2e-6})
    assert projected_evaluations(r, 1e-6, 0.0) == pytest.approx(1e6, rel=1e-9)


def test_projections_of_converged_and_broken_runs():
    assert projected_evaluations(_result("qmc", 1.0, 1e-9, 1234, converged=True), 1e-6,
                                 0.0) == 1234
    broken = _result("qmc", 1.0, math.nan, 1234, info={"history": [(1, 8, 1.0, math.nan)]})
    assert projected_evaluations(broken, 1e-6, 0.0) == math.inf
    assert projected_evaluations(_result("mc", 1.0, 1.0, 10), 1e-6, 0.0) == math.inf


def test_cubature_records_its_trace_as_evaluations_double():
    r = engines.get("cubature").integrate(lambda x: jnp.exp(-50 * ((x - 0.4) ** 2).sum(1)),
                                          Box.cube(3), rtol=1e-12, max_evals=200_000)
    trace = r.info["trace"]
    n = [t[0] for t in trace]
    assert len(trace) >= 3 and all(b >= 2 * a for a, b in zip(n, n[1:]))
    assert trace[-1][1] < trace[0][1]


def test_a_smooth_integrand_stays_on_the_lattice():
    exact = (2 * math.sin(0.5)) ** 3 * math.cos(1.5)        # int over [0,1]^3 cos(x1+x2+x3)
    r = PILOT.integrate(lambda x: jnp.cos(x.sum(1)), Box.cube(3), rtol=1e-8)
    assert r.method == "qmc" and r.converged
    assert [p["method"] for p in r.info["pilot"]] == ["qmc"]
    assert r.evaluations == r.info["pilot"][0]["evaluations"]
    assert abs(r.value - exact) <= max(1e-8 * abs(exact), 3 * r.error)


def test_a_narrow_peak_goes_to_cubature():
    # prod_j a / ((x_j - 0.3)^2 + a^2): a lattice's error stalls, bisection resolves the peak
    a = 1e-3
    exact = (math.atan(0.7 / a) + math.atan(0.3 / a)) ** 3
    r = PILOT.integrate(lambda x: jnp.prod(a / ((x - 0.3) ** 2 + a * a), axis=1), Box.cube(3),
                        rtol=1e-5, max_evals=3e7)
    assert r.method == "cubature" and r.converged
    pilots = r.info["pilot"]
    assert [p["method"] for p in pilots] == ["qmc", "cubature"]
    assert pilots[1]["projected_evaluations"] < pilots[0]["projected_evaluations"]
    assert r.evaluations > sum(p["evaluations"] for p in pilots)
    assert abs(r.value - exact) <= min(1e-5 * exact, 3 * r.error)


@pytest.mark.parametrize("max_evals", [2000, 8 * MIN_PILOT_EVALS - 1])
def test_a_small_budget_runs_the_last_candidate_alone(max_evals):
    # below one lattice level (8 shifts x 1021 points) too
    r = PILOT.integrate(lambda x: jnp.cos(x.sum(1)), Box.cube(3), rtol=1e-6,
                        max_evals=max_evals)
    assert r.method == "cubature" and "pilot" not in r.info
    assert r.evaluations <= max_evals


@pytest.mark.parametrize("scale", [1.0, 91.1876 ** 2])
def test_two_loop_ladder_triangle_by_default(scale):
    # the massless two-loop ladder triangle of the benchmark, p_i^2 = -P_i (5-D, Euclidean):
    # Phi^(2)(P1/P3, P2/P3) / P3^2 in the pySecDec normalization; the lattice converges
    # within its pilot run
    d = loopint.Diagram.from_graph(**LADDER_TRIANGLE)
    P = {"P1": 3.0 * scale, "P2": 5.0 * scale, "P3": scale}
    with mpmath.workdps(30):
        exact = float(mpmath.re(ladder_phi(2, mpmath.mpf(3), mpmath.mpf(5)))) / scale ** 2
    r = loopint.compute(d, P, rtol=1e-6)
    assert r.converged and r.method == "qmc"
    assert r.info["direct"]["engine_info"]["pilot"][0]["method"] == "qmc"
    err = abs(complex(r.value) - exact)
    assert err <= 1e-6 * abs(exact) and err <= 3 * abs(complex(r.error))
    assert np.isfinite(r.error)
