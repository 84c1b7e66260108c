"""Contour deformation (``contour = "deform"``): the physical region at delta = 0 on a deformed
contour in the primary or the decomposed sectors, a second method beside the delta sequence.

Checked against closed forms (C0 above threshold), against the undeformed integral where no
deformation is needed (Euclidean points, 2 and 3 dimensions: the Jacobian determinant), for
independence of the deformation strength, for an invalid deformation being reported, and, on
pySecDec's elliptic two-loop box, for the decomposed sectors and the lattice pilot that the
default uses (against pySecDec's value).
"""

import os

import numpy as np
import pytest

import loopint
from loopint.contour import ContourIntegrand as Integrand
from loopint.engines.cubature import Cubature
from loopint.problem import load

HERE = os.path.dirname(__file__)
DIAGRAMS = os.path.join(HERE, "..", "diagrams")


def _cube(f, ndim, rtol):
    return Cubature().integrate_box(f, np.zeros(ndim), np.ones(ndim), rtol=rtol, max_evals=10**8)


def test_c0_above_threshold_matches_closed_form():
    p = load(os.path.join(DIAGRAMS, "triangle_above_threshold.toml"))
    r = loopint.compute(p, contour="deform", rtol=1e-9)
    ref = p.reference.value
    assert r.converged and r.region == "physical" and r.table == []
    assert r.info["regulated"]["contour"] == "deform"
    diff = r.value - ref
    assert abs(diff) <= 1e-9 * abs(ref)
    # honest: each part's true error within 3x its estimate (plus round-off)
    assert abs(diff.real) <= 3 * r.error.real + 1e-14
    assert abs(diff.imag) <= 3 * r.error.imag + 1e-14


def test_result_does_not_depend_on_lambda():
    p = load(os.path.join(DIAGRAMS, "triangle_above_threshold.toml"))
    ig = Integrand(p.diagram, domain="sectors")
    lam = ig.deformation_lambda(p.kinematics)
    assert 0 < lam <= 1
    vals = []
    for scale in (1.0, 0.3):
        r = _cube(ig.bind_deformed(p.kinematics, scale * lam), ig.ndim, 1e-9)
        assert r.converged
        vals.append(complex(np.asarray(r.value).reshape(-1)[0]))
    assert abs(vals[0] - vals[1]) <= 1e-8 * abs(vals[0])


def test_local_strength_jacobian_is_the_derivative_of_the_map():
    """The deformed map z_k = x_k (1 - i Lam(x) dV/dx_k) with the local strength: the
    determinant the integrand uses (with dLam's rank-one term, eliminated without pivoting)
    equals det(dz/dx) by automatic differentiation, at points where the strength grows
    (near the corner of the off-shell vertex, where the gradient of V is ~1e-6) and where it
    is lam."""
    import jax
    import jax.numpy as jnp

    from loopint.contour import det_identity_minus_i, local_strength
    tri = loopint.Diagram.from_graph(
        internal_lines=[["m", [1, 2]], ["0", [2, 3]], ["m", [3, 1]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
        scalar_products={"p1*p1": "s", "p2*p2": "P", "p1*p2": "-s/2"})
    ig = Integrand(tri, domain="sectors")
    kin = jnp.asarray(ig._kin({"s": -3.0, "P": 1.000001, "m": 1.0}))
    lam = 0.1
    N = ig.N

    def z_of(x):
        cols = [x[None, k] for k in range(N)]
        v, H, U, Uk = ig._deformation_terms(cols, kin)
        L, _ = local_strength(cols, v, H, U, Uk, lam, jnp.float64)
        return jnp.stack([x[k] * (1 - 1j * L[0] * v[k][0]) for k in range(N)])

    boosts = []
    for x in ([3e-7, 1.0, 4e-7], [2e-6, 1.0, 1e-6], [0.3, 0.5, 1.0], [1.0, 0.2, 0.7]):
        x = jnp.asarray(x)
        cols = [x[None, k] for k in range(N)]
        v, H, U, Uk = ig._deformation_terms(cols, kin)
        L, dL = local_strength(cols, v, H, U, Uk, lam, jnp.float64)
        assert abs(float(sum(x[k] * dL[k][0] for k in range(N)))) <= 1e-10 * float(
            sum(abs(x[k] * dL[k][0]) for k in range(N))) + 1e-300     # Euler: degree 0
        A = [[L * (x[k] * H[max(k, j), min(k, j)] + (v[k] if j == k else 0.0))
              + x[k] * v[k] * dL[j] for j in range(N)] for k in range(N)]
        det = complex(det_identity_minus_i(A, 1.0)[0])
        jac = jax.jacfwd(lambda y: jnp.real(z_of(y)))(x) + 1j * jax.jacfwd(
            lambda y: jnp.imag(z_of(y)))(x)
        assert abs(det - complex(np.linalg.det(np.asarray(jac)))) <= 1e-12 * abs(det)
        boosts.append(float(L[0]) / lam)
    # near the corner Lam ~ kappa/g; elsewhere lam g > 2 kappa and Lam within 2 % of lam
    assert min(boosts[:2]) > 1e4 and max(boosts[2:]) < 1.02


def test_a_batch_with_a_flat_point_evaluates_every_point_as_alone():
    """The local strength's kernel is taken for the batch when one point needs it (the
    off-shell vertex near its corner); the other point then runs with kappa = 0, i.e. its
    fixed strength, and every point's values equal its values alone."""
    from loopint.lower import kronecker_points
    tri = loopint.Diagram.from_graph(
        internal_lines=[["ma", [1, 2]], ["mb", [2, 3]], ["mc", [3, 1]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
        scalar_products={"p1*p1": "q1", "p2*p2": "q2", "p1*p2": "(q3 - q1 - q2)/2"})
    ig = Integrand(tri, domain="sectors")
    u = kronecker_points(64, ig.ndim)
    flat = {"q1": -3.0, "q2": 1.000001, "q3": 1.000001, "ma": 1.0, "mb": 0.0, "mc": 1.0}
    other = {"q1": 3.0, "q2": 1.0, "q3": -2.0, "ma": 1.0, "mb": 2.0, "mc": 0.5}
    assert ig._flat_at_a_corner(ig._kin({k: [flat[k], other[k]] for k in flat}),
                                np.array([0.06, 0.16])).tolist() == [True, False]
    both = np.asarray(ig.bind_deformed({k: [flat[k], other[k]] for k in flat}, [0.06, 0.16])(u))
    for k, (kin, lam) in enumerate(((flat, 0.06), (other, 0.16))):
        alone = np.asarray(ig.bind_deformed(kin, lam)(u))[:, 0]
        np.testing.assert_allclose(both[:, k], alone, rtol=1e-13)


def test_unpivoted_elimination_with_the_rank_one_term_is_accurate():
    """dLam's rank-one term takes the Jacobian out of the class whose unpivoted elimination is
    provably stable (det_identity_minus_i): against numpy's pivoted LU at points uniform and
    log-uniform towards the faces (to 1e-9) of every sector, at the pilot's strength and four
    times it, the determinants agree to 1e-13, on the pentagon gamma gamma -> t tbar H and on
    the off-shell vertex with a massless exchange, where the strength grows by more than 10^4
    near the corner (so the rank-one term is exercised)."""
    import jax.numpy as jnp

    from loopint.contour import det_identity_minus_i, local_strength
    vertex = loopint.Diagram.from_graph(
        internal_lines=[["m", [1, 2]], ["0", [2, 3]], ["m", [3, 1]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
        scalar_products={"p1*p1": "s", "p2*p2": "P", "p1*p2": "-s/2"})
    pent = load(os.path.join(DIAGRAMS, "pentagon_ggttH.toml"))
    rng = np.random.default_rng(0)
    for d, kin, grows in ((pent.diagram, pent.kinematics, False),
                          (vertex, {"s": -3.0, "P": 1.000001, "m": 1.0}, True)):
        ig = Integrand(d, domain="sectors")
        kk = jnp.asarray(np.asarray(ig._kin(kin), np.float64))
        t = jnp.asarray(np.concatenate([rng.random((2000, ig.ndim)),
                                        10 ** (-9 * rng.random((2000, ig.ndim)))]))
        N, lam0 = ig.N, ig.deformation_lambda(kin)
        boost = 0.0
        for lam in (lam0, 4 * lam0):
            for idx in np.asarray(ig._sector_index()):
                x = ig._sector_columns(t, jnp.asarray(idx))
                v, H, U, Uk = ig._deformation_terms(x, kk)
                L, dL = local_strength(x, v, H, U, Uk, lam, jnp.float64)
                boost = max(boost, float(np.max(np.asarray(L) / lam)))
                A = [[L * (x[k] * H[max(k, j), min(k, j)] + (v[k] if j == k else 0.0))
                      + x[k] * v[k] * dL[j] for j in range(N)] for k in range(N)]
                det = np.asarray(det_identity_minus_i(A, 1.0))
                M = np.eye(N) - 1j * np.stack([np.stack([np.asarray(A[k][j]) for j in range(N)],
                                                        -1) for k in range(N)], -2)
                ref = np.linalg.det(M)
                assert np.all(np.abs(det - ref) <= 1e-13 * np.abs(ref))
        assert (boost > 1e4) == grows, boost


@pytest.mark.parametrize("fname", ["triangle_below_threshold.toml", "box_massless_offshell.toml"])
def test_deformation_leaves_euclidean_integrals_unchanged(fname):
    """Where F > 0 no deformation is needed, but any valid one must give the same number:
    checks the complex Jacobian det(dz/dt) (2x2 and 3x3) and the complex U, F."""
    p = load(os.path.join(DIAGRAMS, fname))
    ig = Integrand(p.diagram, domain="sectors")
    kin = ig.kinematics_array(p.kinematics)
    plain = _cube(ig.bind(kin, [0.0]), ig.ndim, 1e-9)
    deformed = _cube(ig.bind_deformed(kin, 0.5 * ig.deformation_lambda(kin)), ig.ndim, 1e-9)
    assert plain.converged and deformed.converged
    a = complex(np.asarray(plain.value).reshape(-1)[0])
    b = complex(np.asarray(deformed.value).reshape(-1)[0])
    assert abs(a - b) <= 1e-8 * abs(a)


def test_wrong_direction_is_reported_not_converged():
    """lam < 0 moves the contour to Im F > 0 (the wrong side of the pole): NaN points,
    counted by the engine, never a converged number."""
    p = load(os.path.join(DIAGRAMS, "triangle_above_threshold.toml"))
    ig = Integrand(p.diagram, domain="sectors")
    r = _cube(ig.bind_deformed(p.kinematics, -0.3), ig.ndim, 1e-6)
    assert not r.converged
    assert "nonfinite" in r.status


def test_refusals():
    p = load(os.path.join(DIAGRAMS, "triangle_above_threshold.toml"))
    with pytest.raises(ValueError, match="sectors"):
        Integrand(p.diagram, domain="sequential").bind_deformed(p.kinematics, 0.1)
    with pytest.raises(ValueError, match="cube engine"):
        loopint.compute(p, contour="deform", method="iterated")


def test_cli_contour(capsys):
    from loopint.cli import main
    f = os.path.join(DIAGRAMS, "triangle_above_threshold.toml")
    assert main(["compute", f, "--contour", "deform", "--method", "iterated", "--quiet"]) == 2
    assert "cube engine" in capsys.readouterr().err
    assert main(["compute", f, "--contour", "deform", "--rtol", "1e-8", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "converged" in out and "cubature" in out


def _sunrise(s):
    p = load(os.path.join(DIAGRAMS, "sunrise_2L_D2.toml"))
    return p, dict(p.kinematics, s=s)


def test_two_loop_deformation_below_threshold_matches_bessel_reference():
    """Two loops (U quadratic, V = F/U): the deformed contour of a Euclidean sunrise point
    (forced, lam = auto) reproduces the 30-digit position-space value."""
    p, kin = _sunrise(4.0)
    ig = Integrand(p.diagram, domain="sectors")
    lam = ig.deformation_lambda(kin)
    r = _cube(ig.bind_deformed(kin, lam), ig.ndim, 1e-10)
    plain = _cube(ig.bind(ig.kinematics_array(kin), [0.0]), ig.ndim, 1e-10)
    assert r.converged and plain.converged
    v = complex(np.asarray(r.value).reshape(-1)[0])
    w = complex(np.asarray(plain.value).reshape(-1)[0])
    assert abs(v - w) <= 1e-9 * abs(w)
    # the undeformed integral, with the prefactor, is the position-space reference
    out = loopint.compute(p, kin, method="cubature", rtol=1e-10)
    assert abs(out.value / w * v - p.reference.value) <= 2e-9 * abs(p.reference.value)


def test_two_loop_above_threshold_independent_of_lambda_and_matches_delta_limit():
    """The sunrise above its threshold (s = 50 > (m1+m2+m3)^2 = 36): the deformed contour at
    two strengths agrees to 1e-9, with honest errors, and with the delta -> 0 limit of the
    regulated integrals I(delta) (the DCM's integrand, iterated engine) to 1e-7."""
    p, kin = _sunrise(50.0)
    ig = Integrand(p.diagram, domain="sectors")
    lam = ig.deformation_lambda(kin)
    vals = []
    for scale in (1.0, 0.5):
        r = loopint.compute(p, kin, contour="deform", contour_lambda=scale * lam, rtol=1e-9)
        assert r.converged and r.region == "physical"
        vals.append(r)
    a, b = vals
    assert abs(a.value - b.value) <= 1e-9 * abs(a.value)
    assert abs((a.value - b.value).real) <= 3 * (a.error.real + b.error.real) + 1e-14
    assert abs((a.value - b.value).imag) <= 3 * (a.error.imag + b.error.imag) + 1e-14
    assert a.value.imag < 0          # the -i0 side: Im of the bare sunrise in D = 2
    # the delta-regulated integrals: no pinch, so I(delta) is analytic at delta = 0 (the
    # contour deformation's own argument) and a quadratic through three small deltas,
    # evaluated at 0, is the limit up to O(delta^3)
    reg = loopint.compute(p, kin, delta=1e-2, delta_q=2.0, delta_terms=3, delta_min_terms=3,
                          rtol=1e-9)
    ds = np.array([row["delta"] for row in reg.table[:3]])
    vs = np.array([complex(np.asarray(row["value"]).reshape(-1)[0]) for row in reg.table[:3]])
    limit = sum(vs[i] * np.prod([ds[j] / (ds[j] - ds[i]) for j in range(3) if j != i])
                for i in range(3))
    assert abs(limit - a.value) <= 1e-7 * abs(a.value)         # measured 9e-9
    print("quadratic limit - contour:", limit - a.value, " smallest delta - contour:", vs[-1] - a.value)
    assert abs(vs[-1] - a.value) > 1e-4 * abs(a.value)        # the fit did the work


def test_several_points_each_on_its_own_contour():
    """A batch of points with one strength each evaluates every point as it would alone."""
    from loopint.lower import kronecker_points
    p = load(os.path.join(DIAGRAMS, "triangle_above_threshold.toml"))
    ig = Integrand(p.diagram, domain="sectors")
    u = kronecker_points(64, ig.ndim)
    both = np.asarray(ig.bind_deformed({"s": [10.0, 12.0], "m": 1.0}, [0.1, 0.2])(u))
    assert both.shape == (64, 2)
    for k, (s, lam) in enumerate(((10.0, 0.1), (12.0, 0.2))):
        alone = np.asarray(ig.bind_deformed({"s": s, "m": 1.0}, lam)(u))[:, 0]
        np.testing.assert_allclose(both[:, k], alone, rtol=1e-13)
    lams = ig.deformation_lambdas(np.array([[1.0, 10.0], [1.0, 12.0]]))
    assert lams[0] == ig.deformation_lambda(np.array([[1.0, 10.0]]))


def test_a_physical_scan_is_batched_and_a_hard_point_gets_a_larger_budget(monkeypatch):
    """Cheap physical points after the first are one vector integrand; the point just above
    threshold (s = 4.0001) does not meet the tolerance in the batch's budget and is batched
    again with BATCH_BUDGET times that budget (no run of its own): every point against the
    closed form within 3 errors, and far fewer evaluations than one run per point."""
    from loopint import contour
    from physical_points import c0_equal
    p = load(os.path.join(DIAGRAMS, "triangle_above_threshold.toml"))
    s = np.array([10.0, 4.5, 6.0, 8.0, 12.0, 20.0, 30.0, 4.0001])
    calls = []
    one, batch = contour._ContourPoints.one, contour._ContourPoints.batch

    def spy_one(self, stage, kin, i, *a, **k):
        one(self, stage, kin, i, *a, **k)
        calls.append(("one", i))

    def spy_batch(self, stage, kin, idx, lam, derivatives, budget):
        batch(self, stage, kin, idx, lam, derivatives, budget)
        calls.append(("batch", list(idx), budget, [bool(self.conv[i]) for i in idx]))

    monkeypatch.setattr(contour._ContourPoints, "one", spy_one)
    monkeypatch.setattr(contour._ContourPoints, "batch", spy_batch)
    r = loopint.compute(p, {"s": s, "m": 1.0}, rtol=1e-6, contour="deform")
    ref = np.array([c0_equal(x, 1.0) for x in s])
    assert np.all(r.info["point_converged"])
    assert np.all(np.abs(r.value - ref) <= 3 * np.abs(r.error))
    assert [c[0] for c in calls] == ["one", "batch", "batch"]
    (_, first, budget, conv), (_, second, budget2, conv2) = calls[1], calls[2]
    assert first == list(range(1, 8)) and conv == [True] * 6 + [False]
    assert second == [7] and conv2 == [True] and budget2 == int(budget * contour.BATCH_BUDGET)
    single = sum(loopint.compute(p, {"s": x, "m": 1.0}, rtol=1e-6, contour="deform").evaluations
                 for x in s[:-1])
    batched = loopint.compute(p, {"s": s[:-1], "m": 1.0}, rtol=1e-6, contour="deform")
    assert batched.converged and batched.evaluations < single / 2


def test_expensive_scan_points_start_at_their_neighbours_level(monkeypatch):
    """Two-loop physical points too expensive to batch (here: every point, by a batching
    bound of 0 evaluations) run one by one, each later one starting its QMC ladder at a
    quarter of the previous point's last level: the later run has fewer levels, and each
    value agrees with the point computed alone within their estimates."""
    from loopint import contour
    monkeypatch.setattr(contour, "BATCH_MAX_EVALS", 0)
    p = load(os.path.join(DIAGRAMS, "ladder_vertex_2L_k1.toml"))
    fixed = {"mt": 1.0, "mZ": p.kinematics["mZ"]}
    ks = [5.0, 5.3]
    levels = []
    one = contour._ContourPoints.one

    def spy(self, stage, kin, i, *a, **k):
        one(self, stage, kin, i, *a, **k)
        levels.append((k.get("n_start"), self.levels[i]))

    contour._ContourPoints.one = spy
    try:
        r = loopint.compute(p, {**fixed, "k2": ks}, rtol=1e-3)
    finally:
        contour._ContourPoints.one = one
    assert r.converged and levels[0][0] is None and levels[1][0] == levels[0][1] // 4
    alone = [loopint.compute(p, {**fixed, "k2": k}, rtol=1e-3) for k in ks]
    assert r.evaluations < sum(a.evaluations for a in alone)
    for v, e, a in zip(r.value, r.error, alone):
        assert abs(v - a.value) <= 3 * (abs(e) + abs(a.error))


# ----------------------------------------------------------- the contour on decomposed sectors
def _elliptic():
    """pySecDec's elliptic two-loop box at s = 90 (the physical test set's point) and its
    reference (pySecDec 1.6.6, epsrel 1e-8)."""
    import sys
    sys.path.insert(0, HERE)
    import physical_points as pp
    p = pp.POINTS_BY_ID["elliptic2L_s90"]
    d = loopint.Diagram.from_graph(**pp.DIAGRAMS[p["diagram"]], dimension=p["dimension"])
    ref, ref_err, _ = pp.reference(p)
    return d, p["kinematics"], ref, ref_err


def _qmc(f, ndim, points, periodize="korobov3"):
    from loopint.engines.base import Box
    from loopint.engines.qmc import QuasiMonteCarlo
    e = QuasiMonteCarlo(lattice="embedded", periodize=periodize, boundary_check=False,
                        stop_on_nonfinite=True, max_log2=int(np.log2(points)))
    return e.integrate(f, Box.cube(ndim), rtol=1e-14, max_evals=8 * (2 * points))


def test_decomposed_sectors_carry_the_same_contour_and_smooth_it():
    """The same contour seen through the 22 decomposed sectors of the elliptic box instead of
    its 6 primary charts: both integrals equal pySecDec's value (Cauchy: one contour, two
    parametrizations), and a lattice rule of 2^16 points is far more accurate on the
    decomposed sectors, where the deformed integrand is smooth (the reason the contour uses
    them).  Each error estimate is honest."""
    d, kin, ref, ref_err = _elliptic()
    prim = Integrand(d, domain="sectors")
    dec = Integrand(d, domain="decomposed")
    assert len(dec.sectors) > prim.N
    lam = prim.deformation_lambda(kin)
    x = np.random.default_rng(3).random((64, prim.ndim))
    assert np.all(np.isfinite(np.asarray(dec.bind_deformed(kin, lam)(x))))
    errors = {}
    for name, ig in (("primary", prim), ("decomposed", dec)):
        r = _qmc(ig.bind_deformed(kin, lam), ig.ndim, 2**16)
        assert r.info["nonfinite"] == 0
        v, e = complex(r.value[0]), complex(r.error[0])
        assert abs(v.real - ref.real) <= 3 * e.real + 3 * ref_err, name
        assert abs(v.imag - ref.imag) <= 3 * e.imag + 3 * ref_err, name
        errors[name] = abs(v - ref)
    assert errors["decomposed"] < errors["primary"] / 10
    assert errors["decomposed"] < 1e-4 * abs(ref)


def test_decomposed_maps_by_product_or_by_sum_agree(monkeypatch):
    """The sectors' maps contracted as a matrix product (CPU) or as a summed elementwise
    product (GPU) give the same deformed integrand to rounding."""
    from loopint import contour
    d, kin, _, _ = _elliptic()
    x = np.random.default_rng(5).random((256, Integrand(d, domain="decomposed").ndim))
    values = {}
    for by_product in (True, False):
        monkeypatch.setattr(contour, "_contract_by_product", lambda b=by_product: b)
        dec = Integrand(d, domain="decomposed")
        lam = Integrand(d, domain="sectors").deformation_lambda(kin)
        values[by_product] = np.asarray(dec.bind_deformed(kin, lam)(x))
    assert np.all(np.isfinite(values[True]))
    np.testing.assert_allclose(values[False], values[True], rtol=1e-11,
                               atol=1e-13 * np.max(np.abs(values[True])))


def test_lattice_pilot_prefers_the_smooth_contour():
    """On the decomposed sectors of the elliptic box the smallest pilot variance is at a
    strength where the lattice rule stalls; the lattice pilot (the error of a small
    randomized lattice rule, :class:`loopint.contour.LatticePilot`) picks a stronger
    deformation, on which 2^20 lattice points are at least 10 times more accurate."""
    import jax

    from loopint.contour import LatticePilot
    d, kin, ref, _ = _elliptic()
    dec = Integrand(d, domain="decomposed")
    by_variance = dec.deformation_lambda(kin)
    by_lattice = dec.deformation_lambda(kin, pilot=LatticePilot("korobov3"))
    assert by_lattice > by_variance
    # the rule of 2^20 lattice points under the pilot's 8 shifts, evaluated directly
    rule = LatticePilot("korobov3", points=2**20)
    x, w = LatticePilot.nodes.__wrapped__(rule, dec.ndim)     # not kept in the pilot's cache
    err = {}
    for lam in (by_variance, by_lattice):
        f = jax.jit(dec.bind_deformed(kin, lam))
        total = sum(complex(np.sum(np.asarray(f(x[i:i + 2**17]))[:, 0] * w[i:i + 2**17]))
                    for i in range(0, len(x), 2**17))
        err[lam] = abs(total / len(x) - ref)
    assert err[by_lattice] < err[by_variance] / 10
    # the batched pilot (one call per candidate for several points) agrees point by point
    pts = np.repeat(dec.kinematics_array(kin), 2, axis=0)
    batch = dec.deformation_lambdas(pts, 4096, LatticePilot("korobov3"))
    np.testing.assert_allclose(batch, by_lattice, rtol=1e-12)


def test_compute_takes_the_decomposed_contour_for_two_loops():
    """By default a two-loop physical point is integrated on the contour over the decomposed
    sectors (reported as ``domain_contour``), converges, and is honest against pySecDec."""
    d, kin, ref, ref_err = _elliptic()
    r = loopint.compute(d, kin, rtol=1e-4)
    assert r.converged and r.info["regulated"]["point_method"] == ["contour"]
    assert r.info["regulated"]["domain_contour"] == "decomposed"
    v, e = complex(r.value), complex(r.error)
    assert abs(v.real - ref.real) <= 3 * e.real + 3 * ref_err
    assert abs(v.imag - ref.imag) <= 3 * e.imag + 3 * ref_err
    with pytest.raises(ValueError, match="domains"):
        Integrand(d, domain="simplex").bind_deformed(kin, 0.1)
