"""The lowered JAX integrand (loopint/lower.py, loopint/maps.py; DESIGN section 3).

References, independent of the code under test:
  * mpmath at 30 digits of the bare integrand of DESIGN 4.1 / seed 000 eq. (4.1),
        g(x) = prod x_j^(nu_j - 1) U^a / (F - i delta U)^b     on the simplex,
    with U, F from the diagram (tested separately in test_diagram.py), the maps written here
    from their definitions (sequential map of seed 000 appendix C with its triangular
    Jacobian; Cheng-Wu sectors via homogeneity, f(x) = S^-N g(x / S); the simplex itself) and
    the boundary transforms written from their formulas (Sidi: phi = t - sin(2 pi t)/(2 pi),
    phi' = 2 sin^2(pi t); Korobov r = 3: phi = t^4 (35 - 84 t + 70 t^2 - 20 t^3),
    phi' = 140 t^3 (1-t)^3; baker: phi = 1 - |2t - 1|, weight 1);
  * the seed's own CUDA integrand for Table 5.1 (loopint.testfunctions.table51);
  * the Dirichlet integral int_simplex prod x_i^a_i = prod a_i! / (sum a_i + N - 1)!;
  * REFERENCES.md closed forms (C0 below threshold) and the sunrise Bessel reference.
The value-by-value comparisons run with jax.disable_jit() (op-by-op, the same code as the
jitted function, without one XLA compilation per case); the jitted path is compared with
them separately.
"""

from __future__ import annotations

import math
import zlib
from fractions import Fraction
from pathlib import Path

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import sympy

from loopint.diagram import Diagram
from loopint import lower
from loopint.lower import Integrand
from loopint.maps import simplex_from_cube, simplex_volume
from loopint.problem import load
from loopint.testfunctions import table51

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "diagrams").glob("*.toml"))
NAMES = [f.stem for f in FILES]
COMBOS = [(d, t) for d in ("sequential", "sectors") for t in ("none", "sidi2", "korobov3", "baker")]
COMBOS.append(("simplex", "none"))
DELTAS = np.array([0.3, 0.02])
RTOL = 1e-12          # float64 integrand against the 30-digit reference, per value
MARGIN = 0.01         # points stay this far from the cube faces (see test_near_face_accuracy)

mpmath.mp.dps = 30
MP = mpmath.mpf
PHI = {
    "none": (lambda t: t, lambda t: MP(1)),
    "sidi2": (lambda t: t - mpmath.sin(2 * mpmath.pi * t) / (2 * mpmath.pi),
              lambda t: 2 * mpmath.sin(mpmath.pi * t) ** 2),
    "korobov3": (lambda t: t**4 * (35 - 84 * t + 70 * t**2 - 20 * t**3),
                 lambda t: 140 * t**3 * (1 - t) ** 3),
    "baker": (lambda t: 1 - abs(2 * t - 1), lambda t: MP(1)),
}


def _q(r):
    r = sympy.Rational(r)
    return MP(int(r.p)) / int(r.q)


class Reference:
    """30-digit evaluation of the bare integrand of a diagram at one kinematic point."""

    def __init__(self, diagram: Diagram, kinematics):
        xs = list(diagram.variables)
        ks = [sympy.Symbol(s, real=True) for s in diagram.kinematic_symbols]
        self.N = len(xs)
        self._U = sympy.lambdify(xs + ks, diagram.U, "mpmath")
        self._F = sympy.lambdify(xs + ks, diagram.F, "mpmath")
        self.kin = [MP(float(kinematics[s])) for s in diagram.kinematic_symbols]
        self.a, self.b = _q(diagram.U_exponent), _q(diagram.F_exponent)
        self.nu1 = [_q(p - 1) for p in diagram.powers]

    def on_simplex(self, x, deltas, real):
        """g(x) for each delta (complex, principal branch; Im(F - i delta U) < 0) or real."""
        U, F = self._U(*x, *self.kin), self._F(*x, *self.kin)
        mono = mpmath.fprod(xi**e for xi, e in zip(x, self.nu1))
        if real:
            return [mono * U**self.a / F**self.b]
        return [mono * U**self.a * mpmath.power(mpmath.mpc(F, -d * U), -self.b) for d in deltas]

    def at(self, domain, transform, u, deltas, real=False):
        phi, dphi = PHI[transform]
        u = [MP(float(v)) for v in u]
        w, t = (mpmath.fprod(dphi(v) for v in u), [phi(v) for v in u]) if domain != "simplex" \
            else (MP(1), u)
        if domain == "sequential":
            x, jac = [], MP(1)
            for k in range(self.N - 1):
                rem = 1 - sum(x, MP(0))
                x.append(rem * t[k])
                if k < self.N - 2:
                    jac *= 1 - sum(x, MP(0))     # d x_{k+1} / d u_{k+1} = 1 - x_1 - ... - x_k
            x.append(1 - sum(x, MP(0)))
            return [v * jac * w for v in self.on_simplex(x, deltas, real)]
        if domain == "simplex":
            x = list(t) + [1 - sum(t, MP(0))]
            return [v * w for v in self.on_simplex(x, deltas, real)]
        total = None                                  # sectors: x_l = 1, homogeneity -N
        for l in range(self.N):
            x = t[:l] + [MP(1)] + t[l:]
            S = sum(x, MP(0))
            vals = [S ** (-self.N) * v for v in self.on_simplex([v / S for v in x], deltas, real)]
            total = vals if total is None else [a + b for a, b in zip(total, vals)]
        return [v * w for v in total]


@pytest.fixture(scope="module")
def problems():
    out = {}
    for f in FILES:
        p = load(f)
        out[f.stem] = (p, Reference(p.diagram, p.kinematics), p.diagram.region(p.kinematics).kind)
    return out


def _points(ig, n, seed, margin=MARGIN):
    rng = np.random.default_rng(seed)
    u = margin + (1 - 2 * margin) * rng.random((n, ig.ndim))
    if ig.domain == "simplex":                       # inside the simplex, away from its faces
        u = rng.dirichlet(np.ones(ig.ndim + 1), size=n)[:, :-1] * (1 - 2 * margin) + margin / ig.ndim
    return u


def _rel(a, b):
    return abs(complex(a) - complex(b)) / abs(complex(b))


# --------------------------------------------------------------------------- value by value
@pytest.mark.parametrize("domain, transform", COMBOS)
@pytest.mark.parametrize("name", NAMES)
def test_lowered_integrand_equals_mpmath(problems, name, domain, transform):
    """Every diagram x every domain x every transform, complex (delta = 0.3, 0.02) and, at
    Euclidean points, real with delta = 0 (real_call): relative error <= 1e-12 at 3 random
    points (at least MARGIN from the faces)."""
    p, ref, kind = problems[name]
    ig = Integrand(p.diagram, domain=domain, transform=transform)
    kin = ig.kinematics_array(p.kinematics)
    u = _points(ig, 3, zlib.crc32(f"{name}{domain}{transform}".encode()))
    with jax.disable_jit():
        vc = np.asarray(ig.call(kin, DELTAS, u))
        # one delta and one kinematic point take the rank-1 ("flat") path of the lowering
        v1 = np.asarray(ig.call(kin, DELTAS[1:], u))
        vr = np.asarray(ig.real_call(kin, np.zeros(1), u)) if kind == "euclidean" else None
    assert vc.shape == (3, 2) and vc.dtype == np.complex128
    assert v1.shape == (3, 1) and v1.dtype == np.complex128
    assert np.all(np.isfinite(vc))                     # interior points: always finite
    for i in range(3):
        for r, want in enumerate(ref.at(domain, transform, u[i], DELTAS)):
            assert _rel(vc[i, r], want) <= RTOL, (i, r, vc[i, r], want)
            if r == 1:
                assert _rel(v1[i, 0], want) <= RTOL, (i, v1[i, 0], want)
        if vr is not None:
            (want,) = ref.at(domain, transform, u[i], DELTAS, real=True)
            assert vr.dtype == np.float64
            assert _rel(vr[i, 0], want) <= RTOL


@pytest.mark.parametrize("name", ["table51_2L", "ladder_vertex_2L_k1", "pentagon_ggttH"])
def test_jitted_equals_eager(problems, name):
    """The compiled function gives the values checked above (XLA fusion may reorder
    floating-point operations: agreement to 1e-13 relative)."""
    p, ref, kind = problems[name]
    ig = Integrand(p.diagram)
    kin = ig.kinematics_array(p.kinematics)
    u = _points(ig, 3, 7)
    jitted = np.asarray(ig(u, kin, DELTAS))
    with jax.disable_jit():
        eager = np.asarray(ig(u, kin, DELTAS))
    np.testing.assert_allclose(jitted, eager, rtol=1e-13)
    if kind == "euclidean":
        rj = np.asarray(ig.real_call(kin, np.zeros(1), u))
        # delta = 0 in the complex path gives the real value with a zero imaginary part
        c0 = np.asarray(ig(u, kin, np.zeros(1)))
        np.testing.assert_allclose(c0.real, rj, rtol=1e-13)
        assert np.all(c0.imag == 0)


def test_jitted_domains_and_transforms():
    """All domains and transforms compiled, on the cheap triangle above threshold."""
    p = load(ROOT / "diagrams" / "triangle_above_threshold.toml")
    ref = Reference(p.diagram, p.kinematics)
    for domain, transform in COMBOS:
        ig = Integrand(p.diagram, domain=domain, transform=transform)
        u = _points(ig, 4, 11)
        v = np.asarray(ig(u, ig.kinematics_array(p.kinematics), DELTAS))
        for i in range(4):
            for r, want in enumerate(ref.at(domain, transform, u[i], DELTAS)):
                assert _rel(v[i, r], want) <= RTOL, (domain, transform)


def test_non_integer_exponent_branch():
    """D = 3 (b = 3/2): the complex power must be the principal branch of (F - i delta U)^-b
    (delta > 0) and, at delta = 0 with F < 0, |F|^-b exp(i pi b) (the +i0 of the propagators)."""
    tri = load(ROOT / "diagrams" / "triangle_above_threshold.toml")
    d3 = Diagram.from_graph([["m", [1, 2]], ["m", [2, 3]], ["m", [3, 1]]],
                            [["p1", 1], ["p2", 2], ["p3", 3]],
                            {"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"}, dimension=3)
    assert d3.F_exponent == sympy.Rational(3, 2)
    ref = Reference(d3, tri.kinematics)
    ig = Integrand(d3, domain="simplex")
    u = _points(ig, 3, 3)
    v = np.asarray(ig(u, ig.kinematics_array(tri.kinematics), DELTAS))
    for i in range(3):
        for r, want in enumerate(ref.at("simplex", "none", u[i], DELTAS)):
            assert _rel(v[i, r], want) <= RTOL
    # F < 0 everywhere (massless, all p^2 > 0): delta = 0 directly, with the i0 phase
    neg = Diagram.from_graph([["0", [3, 1]], ["0", [1, 2]], ["0", [2, 3]]],
                             [["p1", 1], ["p2", 2], ["p3", 3]],
                             {"p1*p1": "P1", "p2*p2": "P2", "p1*p2": "(P3 - P1 - P2)/2"},
                             dimension=3)
    kin = {"P1": 0.3, "P2": 0.5, "P3": 1.0}
    assert neg.region(kin).kind == "negative"
    ig = Integrand(neg, domain="simplex")
    ref = Reference(neg, kin)
    v = np.asarray(ig(u, ig.kinematics_array(kin), np.zeros(1)))
    for i in range(3):
        x = [MP(float(c)) for c in u[i]]
        x.append(1 - sum(x))
        U, F = ref._U(*x, *ref.kin), ref._F(*x, *ref.kin)
        assert F < 0
        want = U ** ref.a * abs(F) ** (-ref.b) * mpmath.expj(mpmath.pi * ref.b)
        assert _rel(v[i, 0], want) <= RTOL


@pytest.mark.parametrize("b", [1, 2, 3, 4])
def test_integer_complex_powers_in_real_arithmetic(b):
    """z**(-b) for integer b is formed as (conj(z)/|z|^2)**b: within a few ulps of mpmath's
    value for |z| from 1e-150 to 1e150 (as far as z**(-b) is a normal float), all quadrants,
    Im z = 0 (delta = 0) included."""
    rng = np.random.default_rng(7)
    top = min(150, 300 // b)
    mod = 10.0 ** rng.uniform(-top, top, 400)
    arg = rng.uniform(-np.pi, np.pi, 400)
    z = np.concatenate([mod * np.exp(1j * arg), [-2.0 + 0j, 3.0 + 0j, 1e-30j, -1e30 - 0j]])
    got = np.asarray(lower.power_complex(jnp.asarray(z), sympy.Integer(b)))
    ref = np.array([complex(mpmath.mpc(complex(v)) ** (-b)) for v in z])
    np.testing.assert_allclose(got, ref, rtol=8 * b * np.finfo(float).eps, atol=0)


def test_near_face_accuracy():
    """Points 1e-9 from the faces u_k = 1 of the sequential map: the remainders
    1 - x_1 - ... - x_k (and the Jacobian, their product) keep full relative accuracy for the
    identity, Korobov and baker transforms (1e-12 relative against mpmath).  (Sidi's phi is
    left out: periodize.sidi evaluates t - sin(2 pi t)/(2 pi) by cancellation, relative error
    ~1e-16/(2 pi^2 t^2/3) for small t, hence MARGIN in the random tests.)"""
    p = load(ROOT / "diagrams" / "triangle_below_threshold.toml")
    ref = Reference(p.diagram, p.kinematics)
    u = np.array([[1 - 1e-9, 0.3], [0.4, 1 - 1e-9], [1 - 1e-6, 1 - 1e-7]])
    for transform in ("none", "korobov3", "baker"):
        ig = Integrand(p.diagram, domain="sequential", transform=transform)
        with jax.disable_jit():
            v = np.asarray(ig.real_call(ig.kinematics_array(p.kinematics), np.zeros(1), u))
        for i in range(len(u)):
            with mpmath.workdps(80):      # 1 - phi(1 - 1e-9) ~ 1e-35 for Korobov: 30 digits are not enough
                (want,) = ref.at("sequential", transform, u[i], DELTAS, real=True)
            assert _rel(v[i, 0], want) <= RTOL, (transform, u[i])


# --------------------------------------------------------------------------- layout, retracing
def test_batched_layout():
    """K = 3 kinematic points x R = 2 deltas: column k*R + r is point k with delta r."""
    p = load(ROOT / "diagrams" / "triangle_above_threshold.toml")
    ig = Integrand(p.diagram)
    s_values = np.array([10.0, 3.0, -2.0])
    kin = ig.kinematics_array({"s": s_values, "m": 1.0})
    assert kin.shape == (3, 2) and ig.symbols == ("m", "s")
    u = _points(ig, 3, 1)
    deltas = np.array([0.5, 0.05])
    with jax.disable_jit():
        v = np.asarray(ig(u, kin, deltas))
        assert v.shape == (3, 6)
        for k, s in enumerate(s_values):
            single = np.asarray(ig(u, ig.kinematics_array({"s": s, "m": 1.0}), deltas))
            for r in range(2):
                np.testing.assert_allclose(v[:, k * 2 + r], single[:, r], rtol=1e-15)
            one = np.asarray(ig(u, ig.kinematics_array({"s": s, "m": 1.0}), deltas[1:]))
            np.testing.assert_allclose(v[:, k * 2 + 1], one[:, 0], rtol=1e-15)


def test_new_kinematics_or_delta_does_not_retrace():
    """A side-effect counter inside the traced function counts traces: one per shape."""
    p = load(ROOT / "diagrams" / "triangle_above_threshold.toml")
    ig = Integrand(p.diagram, domain="sectors")
    traces = []
    inner = ig._at

    def counting(*args, **kw):
        traces.append(1)                       # runs only while tracing
        return inner(*args, **kw)

    ig._at = counting
    u = _points(ig, 8, 2)
    outs = []
    for s, m, d in [(10.0, 1.0, 0.3), (3.0, 0.5, 0.01), (-7.0, 2.0, 1e-4), (50.0, 0.1, 0.0)]:
        outs.append(np.asarray(ig(u, ig.kinematics_array({"s": s, "m": m}), np.array([d]))))
    assert len(traces) == ig.N                 # one trace (N sector calls inside it)
    assert ig.call._cache_size() == 1
    assert not np.allclose(outs[0], outs[1])   # the new values were used
    # bind(): the Partial is a pytree, so an engine's jitted step does not retrace either
    step = jax.jit(lambda f, x: jnp.sum(f(x), axis=0))
    traces.clear()
    r1 = step(ig.bind({"s": 10.0, "m": 1.0}, [0.3]), u)
    r2 = step(ig.bind({"s": 3.0, "m": 0.5}, [0.01]), u)
    assert len(traces) == ig.N and step._cache_size() == 1
    np.testing.assert_allclose(r1, outs[0].sum(axis=0), rtol=1e-13)
    np.testing.assert_allclose(r2, outs[1].sum(axis=0), rtol=1e-13)


def test_polynomials_match_sympy():
    """Integrand.polynomials (U, F at simplex points) against 30-digit mpmath of the sympy U, F:
    U to 1e-14 relative; F, which changes sign at this physical point, to 1e-13 absolute
    (|coefficients| <= 2 m_t^2 = 2, so that is a few ulps of its terms)."""
    p = load(ROOT / "diagrams" / "ladder_vertex_2L_k5.toml")
    ig = Integrand(p.diagram)
    ref = Reference(p.diagram, p.kinematics)
    x = np.random.default_rng(4).dirichlet(np.ones(ig.N), size=4)
    with jax.disable_jit():
        U, F = (np.asarray(a) for a in ig.polynomials(x, ig.kinematics_array(p.kinematics)))
    assert U.shape == F.shape == (4, 1)
    for i in range(4):
        xm = [MP(float(c)) for c in x[i]]
        assert _rel(U[i, 0], ref._U(*xm, *ref.kin)) <= 1e-14
        assert abs(F[i, 0] - float(ref._F(*xm, *ref.kin))) <= 1e-13


def test_argument_checks():
    d = load(ROOT / "diagrams" / "triangle_below_threshold.toml").diagram
    with pytest.raises(ValueError, match="domain"):
        Integrand(d, domain="cube")
    with pytest.raises(ValueError, match="cube domains"):
        Integrand(d, domain="simplex", transform="sidi2")
    with pytest.raises(ValueError, match="unknown periodization"):
        Integrand(d, transform="tanh")
    with pytest.raises(KeyError, match="missing"):
        Integrand(d).kinematics_array({"s": 1.0})


# --------------------------------------------------------------------------- Table 5.1
def test_table51_integrand_is_the_seeds():
    """2 x (our bare integrand, sequential map, delta = 0) equals the seed's CUDA function
    (testfunctions.table51, Gamma(3) = 2 included).  Both against mpmath (30 digits): ours to
    1e-12; the seed's float64 formula (x7 and the Jacobian formed by subtraction) to 1e-11."""
    p = load(ROOT / "diagrams" / "table51_2L.toml")
    ig = Integrand(p.diagram)
    ref = Reference(p.diagram, p.kinematics)
    u = _points(ig, 16, 51)
    kin = ig.kinematics_array(p.kinematics)
    ours = 2 * np.asarray(ig.real_call(kin, np.zeros(1), u))[:, 0]
    seed = np.asarray(table51(jnp.asarray(u)))
    for i in range(len(u)):
        (want,) = ref.at("sequential", "none", u[i], DELTAS, real=True)
        assert _rel(ours[i], 2 * want) <= RTOL
        assert _rel(seed[i], 2 * want) <= 1e-11
    np.testing.assert_allclose(ours, seed, rtol=1e-11)


# --------------------------------------------------------------------------- integrals
def _gl(order, panels=2):
    """Composite Gauss-Legendre on [0, 1] (panels split at 1/2 for the baker's kink)."""
    t, w = np.polynomial.legendre.leggauss(order)
    nodes, weights = [], []
    for k in range(panels):
        nodes.append((k + (t + 1) / 2) / panels)
        weights.append(w / (2 * panels))
    return np.concatenate(nodes), np.concatenate(weights)


def _tensor(order, dim):
    x, w = _gl(order)
    grids = np.meshgrid(*([x] * dim), indexing="ij")
    wts = np.meshgrid(*([w] * dim), indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1), np.prod([g.ravel() for g in wts], axis=0)


@pytest.mark.parametrize("powers", [[3, 2, 1], [2, 1, 3, 1]])
def test_maps_and_transforms_preserve_a_dirichlet_integral(powers):
    """U = sum x, F = (sum x)^2, loops = 1, D = 4: the integrand is prod x^(nu_j - 1) on the
    simplex, whose integral is prod (nu_j - 1)! / (nu - 1)! (Dirichlet).  Each domain map and
    boundary transform, integrated with a tensor Gauss-Legendre rule (2 panels x 16 nodes per
    axis; 2 x 8 for the 4-variable case, domains only), reproduces it to 1e-12 relative."""
    N = len(powers)
    xs = [f"x{j}" for j in range(1, N + 1)]
    S = "+".join(xs)
    d = Diagram.from_polynomials(S, f"({S})**2", xs, loops=1, dimension=4, powers=powers)
    exact = Fraction(math.prod(math.factorial(p - 1) for p in powers), math.factorial(sum(powers) - 1))
    u, w = _tensor(16 if N == 3 else 8, N - 1)
    kin = np.zeros((1, 0))
    for domain, transform in COMBOS:
        if N == 4 and transform != "none":
            continue                                  # the 3-variable case covers them
        ig = Integrand(d, domain=domain, transform=transform)
        if domain == "simplex":                       # collapsed coordinates, written here
            x1 = u[:, 0]
            pts = [x1]
            jac = np.ones(len(u))
            rem = 1 - x1
            for k in range(1, N - 1):
                jac = jac * rem
                pts.append(rem * u[:, k])
                rem = rem - pts[-1]
            v, weight = np.stack(pts, axis=1), w * jac
        else:
            v, weight = u, w
        f = np.asarray(ig.real_call(kin, np.zeros(1), v))[:, 0]    # jitted: large batch
        got = float(f @ weight)
        assert abs(got - float(exact)) <= 1e-12 * float(exact), (domain, transform, got, exact)


def test_simplex_map_volume():
    """The sequential map's Jacobian integrates to |S_d| = 1/d! (Gauss-Legendre, exact)."""
    for dim in (2, 3, 5):
        u, w = _tensor(6, dim)
        _, jac = jax.jit(simplex_from_cube)(jnp.asarray(u))
        assert abs(float(np.asarray(jac) @ w) - simplex_volume(dim)) <= 1e-14


@pytest.mark.parametrize("domain", ["sequential", "sectors"])
def test_integral_times_prefactor_is_the_reference(problems, domain):
    """End to end through the lowering: prefactor x int(lowered integrand) with tensor
    Gauss-Legendre (2 x 24 nodes per axis; the integrand is smooth: F >= m^2 (1 - s/4m^2) > 0
    and U = 1) equals C0 = -(2/s) arcsin^2(sqrt(s/4m^2)) (REFERENCES.md, recomputed in
    mpmath) to 1e-12 relative."""
    name = "triangle_below_threshold"
    p, _, _ = problems[name]
    ig = Integrand(p.diagram, domain=domain)
    u, w = _tensor(24, ig.ndim)
    f = np.asarray(ig.real_call(ig.kinematics_array(p.kinematics), np.zeros(1), u))[:, 0]
    value = float(p.diagram.prefactor()) * float(f @ w)
    s, m = MP(p.kinematics["s"]), MP(p.kinematics["m"])
    want = float(-(2 / s) * mpmath.asin(mpmath.sqrt(s / (4 * m**2))) ** 2)
    assert abs(value - want) <= 1e-12 * abs(want), (value, want)


# --------------------------------------------------------------------------- boundary values
def test_values_at_the_simplex_vertices_are_not_silently_finite():
    """Record what the integrand returns exactly on the boundary (engines use open rules and
    count non-finite values):
      * massless triangle, delta = 0: F = 0 at the vertices -> +inf at u = (0, 0)
        (x = (0, 0, 1)), NaN at u = (1, 1/2) (x = (1, 0, 0), Jacobian 0 times inf);
        with delta > 0 the regulated value there is finite: U^-1 (-i delta U)^-1 = i/delta;
      * massive triangle: F = m^2 > 0 at the vertices: finite (1 at x = (0, 0, 1));
      * Table 5.1: U = F = 0 at x = (0, ..., 0, 1): NaN (0/0), where the seed's code returns 0;
      * interior points: finite everywhere."""
    massless = load(ROOT / "diagrams" / "triangle_massless_offshell.toml")
    ig = Integrand(massless.diagram)
    kin = ig.kinematics_array(massless.kinematics)
    u = np.array([[0.0, 0.0], [1.0, 0.5], [0.3, 0.6]])
    with jax.disable_jit():
        r = np.asarray(ig.real_call(kin, np.zeros(1), u))[:, 0]
        c = np.asarray(ig(u, kin, np.array([0.1])))[:, 0]
    assert r[0] == np.inf and np.isnan(r[1]) and np.isfinite(r[2])
    assert c[0] == pytest.approx(10j, rel=1e-14) and np.isfinite(c[2])

    massive = load(ROOT / "diagrams" / "triangle_below_threshold.toml")
    ig = Integrand(massive.diagram)
    with jax.disable_jit():
        r = np.asarray(ig.real_call(ig.kinematics_array(massive.kinematics), np.zeros(1), u))[:, 0]
    assert r[0] == pytest.approx(1.0, rel=1e-15) and np.all(np.isfinite(r))

    t51 = load(ROOT / "diagrams" / "table51_2L.toml")
    ig = Integrand(t51.diagram)
    v = np.zeros((3, 6))
    v[1:] = _points(ig, 2, 9)
    with jax.disable_jit():
        r = np.asarray(ig.real_call(np.zeros((1, 0)), np.zeros(1), v))[:, 0]
    assert np.isnan(r[0]) and np.isfinite(r[1])
    assert float(table51(jnp.asarray(v[:1]))[0]) == 0.0
