"""Sector decomposition (loopint.sectors) and the decomposed domain of the lowering."""

import math

import jax
import numpy as np
import pytest
import sympy

from loopint import load
from loopint.engines.base import Box
from loopint.engines.iterated import Iterated
from loopint.lower import Integrand
from loopint.sectors import (_blowup, _resolved, decompose, decompose_polynomials,
                             monomial_maps)

jax.config.update("jax_enable_x64", True)


def _supports(diagram):
    return [np.array(sympy.Poly(sympy.expand(P), *diagram.variables).monoms())
            for P in (diagram.U, diagram.F)]


def test_decompose_polynomials_is_decompose_on_the_supports():
    d = load("diagrams/ladder_vertex_2L_k1.toml").diagram
    assert decompose_polynomials((d.U, d.F), d.variables) == decompose(_supports(d))


def test_every_sector_resolves_U_and_F_of_the_two_loop_ladder():
    d = load("diagrams/ladder_vertex_2L_k1.toml").diagram
    sup = _supports(d)
    secs = decompose(sup)
    N = len(d.variables)
    assert any(s.blowups for s in secs)      # the subloops need blow-ups
    assert {s.primary for s in secs} == set(range(N))
    for s in secs:
        keep = [j for j in range(N) if j != s.primary]
        Es = [E[:, keep] for E in sup]
        for k, S in s.blowups:
            Es = [_blowup(E, k, S) for E in Es]
        assert all(_resolved(E) for E in Es)


def test_a_one_loop_massive_diagram_needs_no_blowups():
    d = load("diagrams/pentagon_ggttH.toml").diagram
    secs = decompose(_supports(d))
    assert len(secs) == len(d.variables) and not any(s.blowups for s in secs)


def _sector_sum(supports, N, g, order=32):
    """sum over sectors of the tensor Gauss-Legendre rule on [0,1]^(N-1) of jac * g(x(t))."""
    A, J = monomial_maps(decompose(supports), N)
    xg, wg = np.polynomial.legendre.leggauss(order)
    xg, wg = (xg + 1) / 2, wg / 2
    grid = np.stack(np.meshgrid(*[xg] * (N - 1), indexing="ij"), -1).reshape(-1, N - 1)
    w = np.prod(np.stack(np.meshgrid(*[wg] * (N - 1), indexing="ij"), -1).reshape(-1, N - 1), 1)
    total = 0.0
    for s in range(A.shape[0]):
        x = np.prod(grid[:, None, :] ** A[s][None], axis=2)        # [n, N]
        jac = np.prod(grid ** J[s][None], axis=1)
        total += np.sum(w * jac * g(x))
    return total


@pytest.mark.parametrize("N", [3, 4])
def test_the_sectors_tile_the_projective_simplex(N):
    """For g homogeneous of degree -N, int delta(1 - sum x) g = sum over sectors of the cube
    integrals of jac * g(t^A): Dirichlet moments of the simplex.  In every sector the
    integrand is a smooth rational function, on which the Gauss rule converges
    geometrically."""
    xs = sympy.symbols(f"x1:{N + 1}")
    P = sum(xs[i] * xs[j] for i in range(N) for j in range(i + 1, N))   # massless-like F
    sup = [np.array(sympy.Poly(P, *xs).monoms())]
    assert any(s.blowups for s in decompose(sup))
    vol = _sector_sum(sup, N, lambda x: 1.0 / x.sum(1) ** N)
    assert vol == pytest.approx(1 / math.factorial(N - 1), rel=1e-12)
    mom = _sector_sum(sup, N, lambda x: np.prod(x, 1) / x.sum(1) ** (2 * N))
    assert mom == pytest.approx(1 / math.factorial(2 * N - 1), rel=1e-12)


def test_the_decomposed_integrand_is_bounded_at_the_subloop_singularity():
    """Near the face where the triangle subloop's parameters vanish the simplex integrand
    grows like 1/r^2; in the decomposed sectors it stays bounded."""
    p = load("diagrams/ladder_vertex_2L_k1.toml")
    kin = None
    rng = np.random.default_rng(1)
    peaks = {}
    for dom in ("sectors", "decomposed"):
        ig = Integrand(p.diagram, domain=dom)
        kin = ig.kinematics_array(p.kinematics)
        f = ig.bind(kin, [0.0], real=True)
        vals = []
        for r in (1e-2, 1e-4, 1e-6, 1e-8):
            u = rng.random((4096, ig.ndim))
            u[:, :3] *= r            # small t1..t3: near the faces of the cube
            vals.append(float(np.max(np.abs(np.asarray(f(u))))))
        peaks[dom] = vals
    assert peaks["sectors"][-1] > 1e6 * peaks["sectors"][0]
    assert max(peaks["decomposed"]) < 10 * peaks["decomposed"][0]


def test_iterated_over_decomposed_sectors_gives_the_two_loop_ladder():
    """k^2/m_t^2 = 1 (Euclidean) against pySecDec: 0.5688362392 +- 4e-8.
    Over the simplex the same call does not reach even 1e-3 in 3e8 evaluations."""
    p = load("diagrams/ladder_vertex_2L_k1.toml")
    ig = Integrand(p.diagram, domain="decomposed")
    f = ig.bind(ig.kinematics_array(p.kinematics), [0.0], real=True)
    r = Iterated(rules="gk21").integrate(f, Box.cube(ig.ndim), rtol=1e-6, max_evals=10**8)
    ref, ref_err = 0.5688362392, 4e-8
    assert r.converged
    err = float(np.asarray(r.error).reshape(-1)[0])
    assert err <= 1e-6 * ref
    assert abs(float(np.asarray(r.value).reshape(-1)[0]) - ref) <= 3 * err + ref_err


def test_compute_gives_the_elliptic_two_loop_box_at_a_euclidean_point():
    """diagrams/elliptic2L_euclidean.toml with the defaults but rtol 1e-6 against its analytic
    value (f^A_66 of arXiv:1609.06685 as quoted by pySecDec's example, without its
    normalization (-s/m^2)^(3/2)): converged, within 3 errors, and the error estimate within
    the tolerance.  pySecDec 1.6.6 at epsrel 1e-8 agrees with the reference to 3.7e-10
    (tools/pysecdec_side_by_side.py, README); with the normalization it is 0.247074199."""
    from loopint import compute
    p = load("diagrams/elliptic2L_euclidean.toml")
    ref = p.reference.value
    assert abs(ref * (4 / 3) ** 1.5 - 0.247074199140732131068066) < 1e-15
    r = compute(p, rtol=1e-6)
    assert r.converged and r.region == "euclidean"
    assert abs(r.error) <= 1e-6 * abs(ref)
    assert abs(r.value - ref) <= 3 * abs(r.error)


def test_compute_integrates_multi_loop_diagrams_over_the_decomposed_sectors():
    """The driver's automatic choices: blow-ups needed (two loops) -> the decomposed domain,
    and Genz-Malik cubature for the delta sequence; a one-loop massive diagram keeps the
    iterated engine over the simplex."""
    from loopint.plan import domain_for as _choose_domain, method_for as _choose_method
    from loopint.problem import Settings, SpecError

    s = Settings()
    ladder = load("diagrams/ladder_vertex_2L_k5.toml").diagram
    penta = load("diagrams/pentagon_ggttH.toml").diagram
    assert _choose_method(s, 5, regulated=True, diagram=ladder) == "cubature"
    assert _choose_domain(s, "cubature", ladder) == "decomposed"
    assert _choose_domain(s, "iterated", ladder) == "decomposed"
    assert _choose_method(s, 4, regulated=True, diagram=penta) == "iterated"
    assert _choose_domain(s, "iterated", penta) == "simplex"
    assert _choose_domain(s, "cubature", penta) == "sequential"
    with pytest.raises(SpecError, match="simplex or the decomposed sectors"):
        _choose_domain(s.updated(domain="sectors"), "iterated", ladder)


def test_default_max_regions_follows_the_device_memory():
    from loopint.engines import cubature

    class Dev:
        def __init__(self, platform, limit):
            self.platform, self._limit = platform, limit

        def memory_stats(self):
            if self._limit is None:
                raise RuntimeError("no statistics")
            return {"bytes_limit": self._limit}

    from loopint.engines.regions import bytes_per_region
    row6, row3 = bytes_per_region(6, 1), bytes_per_region(3, 1)     # 928 and 544 bytes
    h200 = int(0.75 * 139 * 2**30)
    assert cubature.default_max_regions(row6, Dev("cpu", 2**40)) == 2**22
    assert cubature.default_max_regions(row6, Dev("gpu", h200)) == 2**26
    assert cubature.default_max_regions(row3, Dev("gpu", h200)) == 2**27
    assert cubature.default_max_regions(row6, Dev("gpu", 8 * 2**30)) == 2**23   # small card
    assert cubature.default_max_regions(row6, Dev("gpu", 2**50)) == 2**27       # the cap
    assert cubature.default_max_regions(row6, Dev("gpu", None)) == 2**22
    wide = bytes_per_region(6, 2048)                  # a batch of 1024 complex points
    assert cubature.default_max_regions(wide, Dev("gpu", h200)) == 2**18
