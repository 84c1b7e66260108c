"""Genz–Malik cubature rules as data: nodes, weights, error estimates and split axes.

Default rule: degree 7 with an embedded degree-5 rule (:func:`genz_malik`).  Optional:
the degree-9 rule with four null rules of DCUHRE / Cuba's Cuhre / the PAGANI code
(:func:`genz_malik9`, ``rule="dcuhre9"`` in the engines; see :class:`GenzMalik9Rule`).

Rule (Genz & Malik 1980, "An adaptive algorithm for numerical integration over an
n-dimensional rectangular region", J. Comput. Appl. Math. 6, 295–302).  On the cube
``[-1, 1]^n`` the degree-7 rule uses five fully symmetric generators

    G1 = (0, ..., 0)                      1 point
    G2 = (±λ2, 0, ..., 0)                 2n points        λ2 = sqrt(9/70)
    G3 = (±λ3, 0, ..., 0)                 2n points        λ3 = sqrt(9/10)
    G4 = (±λ4, ±λ4, 0, ..., 0)            2n(n-1) points   λ4 = sqrt(9/10)
    G5 = (±λ5, ..., ±λ5)                  2^n points       λ5 = sqrt(9/19)

so ``N(n) = 2^n + 2n^2 + 2n + 1`` points.  Weights relative to the volume (they sum to 1):

    degree 7:  w1 = (12824 - 9120 n + 400 n^2)/19683, w2 = 980/6561,
               w3 = (1820 - 400 n)/19683, w4 = 200/19683, w5 = 6859/(19683 · 2^n)
    degree 5:  w1 = (729 - 950 n + 50 n^2)/729, w2 = 245/486,
               w3 = (265 - 100 n)/1458, w4 = 25/729, w5 = 0

The degree-5 rule reuses the points of G1–G4, so the basic error estimate
``|I7 - I5|`` costs nothing extra.  It is a (usually pessimistic) estimate of the error of
``I7``; the two-level refinement below sharpens it.

Split axis (Genz & Malik 1980, section 3): the axis ``i`` with the largest fourth divided
difference

    D_i = | f(c+λ2 h_i e_i) + f(c-λ2 h_i e_i) - 2 f(c)
            - (λ2/λ3)^2 [f(c+λ3 h_i e_i) + f(c-λ3 h_i e_i) - 2 f(c)] |,

which cancels the second derivative and measures the fourth along that axis; these values
are already part of the rule.  When every ``D_i`` is at round-off level the longest axis is
split (as Cuhre/DCUHRE do).  For vector integrands ``D_i`` is summed over the components,
each weighted by the inverse of its tolerance target
(:func:`~loopint.engines.regions.component_weights`), so the axis
that matters most for the component furthest from its tolerance wins.

Two-level error (Berntsen, Espelid & Genz 1991, ACM TOMS 17, 437–451, as used in Cuhre and
in seed 001 section 3.2): when a parent ``P`` is bisected into siblings ``L, R``,

    δ = |I_L + I_R - I_P| / 4,     c = 1 + 2 δ / (E_L + E_R),
    E_L ← c·E_L + δ,               E_R ← c·E_R + δ,

so a feature that the parent's rule saw but the children's rules miss still shows in the
children's errors (:func:`two_level_error`).

Everything here is a pure function of arrays: :func:`apply_rule` evaluates a rule on a batch
of regions with one integrand call on all ``R·N`` points, and :func:`two_level_error` refines
the errors of bisected regions.  The region buffers that the cubature and PAGANI engines
apply them to are in :mod:`loopint.engines.regions`.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


LAMBDA2 = math.sqrt(9 / 70)
LAMBDA3 = math.sqrt(9 / 10)
LAMBDA4 = math.sqrt(9 / 10)
LAMBDA5 = math.sqrt(9 / 19)
FOURTH_DIFF_RATIO = LAMBDA2**2 / LAMBDA3**2   # = 1/7, (inner/outer axial generator)^2


def n_points(ndim: int) -> int:
    """Points of the degree-7 rule in ``ndim`` dimensions: ``2^n + 2n^2 + 2n + 1``."""
    return 2**ndim + 2 * ndim**2 + 2 * ndim + 1


@dataclasses.dataclass(frozen=True, eq=False)
class GenzMalikRule:
    """Nodes and weights of the Genz–Malik 7/5 pair on ``[-1, 1]^n`` (numpy, float64).

    Attributes:
        ndim: dimension ``n``.
        nodes: ``(N, n)`` generator points; the first ``4n + 1`` rows are the centre, then
            ``+λ2 e_i``, ``-λ2 e_i``, ``+λ3 e_i``, ``-λ3 e_i`` (``i = 0..n-1``), which the
            fourth differences use.
        weights7: ``(N,)`` degree-7 weights relative to the volume (sum 1).
        weights5: ``(N,)`` embedded degree-5 weights (zero on G5; sum 1).
    """

    ndim: int
    nodes: np.ndarray
    weights7: np.ndarray
    weights5: np.ndarray
    name = "genz_malik"
    degree = 7

    @property
    def n_points(self) -> int:
        return self.nodes.shape[0]

    @property
    def fourth_difference(self) -> tuple[int, int, float]:
        """``(inner, outer, r)``: axial generator sets used by the fourth difference.

        Axial set ``k`` occupies rows ``1 + 2kn + i`` (``+λ e_i``) and ``1 + (2k+1)n + i``
        (``-λ e_i``); ``r = (λ_inner/λ_outer)^2``.  Here λ2 (set 0) and λ3 (set 1).
        """
        return 0, 1, FOURTH_DIFF_RATIO

    def estimate(self, vals: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Average and error per unit volume from values ``(R, N, M)``: ``(I7, |I7 - I5|)``."""
        w7 = jnp.asarray(self.weights7, vals.dtype)[None, :, None]
        dw = jnp.asarray(self.weights7 - self.weights5, vals.dtype)[None, :, None]
        return jnp.sum(vals * w7, axis=1), jnp.abs(jnp.sum(vals * dw, axis=1))

    def integrate(self, f: Callable[[np.ndarray], np.ndarray], lower, upper) -> tuple[float, float]:
        """Apply both rules to one box with a numpy/JAX ``f(x[N, n]) -> [N]``: ``(I7, I5)``."""
        lo, hi = np.asarray(lower, float), np.asarray(upper, float)
        c, h = (hi + lo) / 2, (hi - lo) / 2
        vals = np.asarray(f(c + h * self.nodes), dtype=float)
        vol = float(np.prod(hi - lo))
        return vol * float(self.weights7 @ vals), vol * float(self.weights5 @ vals)


@functools.lru_cache(maxsize=None)
def genz_malik(ndim: int) -> GenzMalikRule:
    """Build the Genz–Malik 7/5 rule for ``ndim >= 1`` (cached; arrays are read-only).

    ``ndim = 1`` gives a valid 7-point degree-7 rule too (the G4 generator is empty), though
    Gauss–Kronrod is the better choice in one dimension.
    """
    n = int(ndim)
    if n < 1:
        raise ValueError(f"ndim must be >= 1, got {ndim}")
    eye = np.eye(n)
    rows = [np.zeros((1, n)),
            LAMBDA2 * eye, -LAMBDA2 * eye,
            LAMBDA3 * eye, -LAMBDA3 * eye]
    pairs = []
    for i, j in itertools.combinations(range(n), 2):
        for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            p = np.zeros(n)
            p[i], p[j] = si * LAMBDA4, sj * LAMBDA4
            pairs.append(p)
    rows.append(np.array(pairs).reshape(-1, n))
    rows.append(LAMBDA5 * np.array(list(itertools.product((1.0, -1.0), repeat=n))))
    nodes = np.concatenate(rows, axis=0)

    counts = (1, 2 * n, 2 * n, 2 * n * (n - 1), 2**n)
    w7 = ((12824 - 9120 * n + 400 * n**2) / 19683, 980 / 6561, (1820 - 400 * n) / 19683,
          200 / 19683, 6859 / 19683 / 2**n)
    w5 = ((729 - 950 * n + 50 * n**2) / 729, 245 / 486, (265 - 100 * n) / 1458, 25 / 729, 0.0)
    weights7 = np.concatenate([np.full(c, w) for c, w in zip(counts, w7)])
    weights5 = np.concatenate([np.full(c, w) for c, w in zip(counts, w5)])
    assert nodes.shape[0] == n_points(n) == weights7.size
    for a in (nodes, weights7, weights5):
        a.setflags(write=False)
    return GenzMalikRule(ndim=n, nodes=nodes, weights7=weights7, weights5=weights5)


# ---------------------------------------------------------------------------------------
# Degree-9 rule with null rules (optional)

# Generators in units of the full width (points at centre ± g·width), from Genz & Malik
# (1983) as tabulated for DCUHRE (Berntsen, Espelid & Genz 1991, key 3) and Cuba's Cuhre.
_G9 = (0.4779536579022695061928604197171830064732, 0.2030285873691198677998034402373279133258,
       0.4476273546261781288207704806530998539285, 0.125,
       0.3430378987808781457001426145164678603407)


def _weights9(n: int) -> np.ndarray:
    """``(9, 5)`` weights per generator set: basic degree-9 rule, then null rules of degree
    7, 7, 5, 3 (DCUHRE's D09HRE constants, as polynomials in ``n``)."""
    p = n * (n * (n * -.002361170967785511788400941242259231309691
                  + .1141539002385732526821323741697655347686)
             - .6383392007670238909386026193674701393074) + .7484998850468520800423030047583803945205
    q = n * (n * (n * -.001432401703339912514196154599769007103671
                  + .05747150786448972594860897296200006759892)
             - .1422510457143424323449521620935950679394) + .06287502873828697998942424881040490136987
    s = n * (n * .003541756451678267682601411863388846964536
             - .07260936739589367960492815865074633743652) + .1055749162521899101218622863269817454540
    t = n * (n * .002148602555009868771294231899653510655506
             - .03226856389295394999786630399875134318006) + .01063678399023121748083624225818915724455
    u = -.04508628929435784075980562738240804429658 * n + .2141588352435279340097929526588394300172
    v = -.02735154652654564472203690086290223507436 * n + .05494106704871123410060080562462135546101
    w = .01553241727660705326386197156586357005224 - .003541756451678267682601411863388846964536 * n
    x = .003532809960709087023561817517751309380604 - .002148602555009868771294231899653510655506 * n
    c = 2.0**-n
    return np.array([
        [p, q, .2545911332489590890011611142429070613156 * n - q,
         n * (-1.207328566678236261002219995185143356737 * n + .8956736576416067650809467826488567200939) - 1 + p,
         -.3647935698604914666100134551377381205297 * n + 1 - p],
        [s, t, .01468910249614349017540783437728097691502 - t,
         .5113470834646759143109387357149329909126 * n + .4597644812080634464633352781605214342691 + s,
         .1823967849302457333050067275688690602649 - s],
        [u, v, .1193759620257077529708962121565290178730 - v,
         .6508951939192025059314756320878023215278 * n + .1474493982943446016775696826942585013243, -u],
        [.05769338449097348357291272840392627722165, .03499962660214358382244159694487155861542,
         -.05769338449097348357291272840392627722165, -1.386862771927828143599782668709014266770,
         -.05769338449097348357291272840392627722165],
        [0, 0, -.2386668732575008878964134721962088068396, 0, 0],
        [w, x, -x, .09231719987444221619017126187763868745587 + w, -w],
        [.02254314464717892037990281369120402214829, .01367577326327282236101845043145111753718,
         -.01367577326327282236101845043145111753718, -.3254475969596012529657378160439011607639,
         -.02254314464717892037990281369120402214829],
        [.001770878225839133841300705931694423482268, .001074301277504934385647115949826755327753,
         -.001074301277504934385647115949826755327753, .001770878225839133841300705931694423482268,
         -.001770878225839133841300705931694423482268],
        [.2515001149531479199576969952416196054795 * c, -.06287502873828697998942424881040490136987 * c,
         .06287502873828697998942424881040490136987 * c, .2515001149531479199576969952416196054795 * c,
         -.2515001149531479199576969952416196054795 * c]])


ERROR_COEFFICIENTS = (5.0, 1.0, 5.0)    # DCUHRE/Cuba: ratio test, asymptotic and safe factors


@dataclasses.dataclass(frozen=True, eq=False)
class GenzMalik9Rule:
    """Degree-9 fully symmetric rule with four null rules (Genz & Malik 1983; DCUHRE).

    Points (``N = 1 + 8n + 6n(n-1) + 4n(n-1)(n-2)/3 + 2^n``): the centre, four axial
    generators ``±a_k e_i``, ``(±a1, ±a1)`` and ``(±a1, ±a2)`` pairs, ``(±a1, ±a1, ±a1)``
    triples and the ``2^n`` corners ``(±a5, ..., ±a5)``.  The basic rule integrates all
    monomials of degree <= 9 exactly; null rules 1–4 (degrees 7, 7, 5, 3) integrate them to 0.

    Error (Berntsen, Espelid & Genz 1991, DCUHRE's DRLHRE; as in Cuba's Cuhre and PAGANI):
    for each pair of successive null rules, the normalised null rule of largest value in
    their span, ``N_k``; if ``5 N_1 <= N_2`` and ``5 N_2 <= N_3`` (the null-rule values fall
    off as for an integrand in its asymptotic range) the error is ``N_1``, else
    ``5·max(N_1, N_2, N_3)``.  It is the standard choice of Cuhre and of seed 001.
    """

    ndim: int
    nodes: np.ndarray        # (N, n) on [-1, 1]^n
    sets: np.ndarray         # (N,) generator set of each point
    set_weights: np.ndarray  # (9, 5)
    scale: np.ndarray        # (9, 3) null-rule combinations, set s eliminated
    norm: np.ndarray         # (9, 3) their inverse 1-norms
    name = "dcuhre9"
    degree = 9

    @property
    def n_points(self) -> int:
        return self.nodes.shape[0]

    @property
    def weights(self) -> np.ndarray:
        """``(N, 5)`` point weights (basic rule, null rules 1-4)."""
        return self.set_weights[self.sets]

    @property
    def fourth_difference(self) -> tuple[int, int, float]:
        """Axial generators ``a2`` (inner, set 2) and ``a1`` (outer, set 1), ``r = (a2/a1)^2``."""
        return 1, 0, (_G9[1] / _G9[0]) ** 2

    def estimate(self, vals: jax.Array) -> tuple[jax.Array, jax.Array]:
        w = jnp.asarray(self.weights, vals.dtype)                  # (N, 5)
        sums = jnp.sum(vals[:, :, None, :] * w[None, :, :, None], axis=1)   # (R, 5, M)
        scale = jnp.asarray(self.scale, vals.dtype)
        norm = jnp.asarray(self.norm, vals.dtype)
        nulls = []
        for k in range(1, 4):
            comb = jnp.abs(sums[:, k + 1, None, :] + scale[None, :, k - 1, None] * sums[:, k, None, :])
            nulls.append(jnp.max(comb * norm[None, :, k - 1, None], axis=1))   # (R, M)
        n1, n2, n3 = nulls
        c_ratio, c_asym, c_safe = ERROR_COEFFICIENTS
        asymptotic = (c_ratio * n1 <= n2) & (c_ratio * n2 <= n3)
        error = jnp.where(asymptotic, c_asym * n1, c_safe * jnp.maximum(n1, jnp.maximum(n2, n3)))
        return sums[:, 0, :], error

    def integrate(self, f: Callable[[np.ndarray], np.ndarray], lower, upper) -> float:
        """The basic degree-9 rule on one box with a numpy ``f(x[N, n]) -> [N]``."""
        lo, hi = np.asarray(lower, float), np.asarray(upper, float)
        vals = np.asarray(f((hi + lo) / 2 + (hi - lo) / 2 * self.nodes), dtype=float)
        return float(np.prod(hi - lo)) * float(self.weights[:, 0] @ vals)


def n_points9(ndim: int) -> int:
    """Points of the degree-9 rule: ``1 + 8n + 6n(n-1) + 4n(n-1)(n-2)/3 + 2^n``."""
    n = ndim
    return 1 + 8 * n + 6 * n * (n - 1) + 4 * n * (n - 1) * (n - 2) // 3 + 2**n


@functools.lru_cache(maxsize=None)
def genz_malik9(ndim: int) -> GenzMalik9Rule:
    """Build the degree-9 rule with null rules for ``ndim >= 2`` (cached)."""
    n = int(ndim)
    if n < 2:
        raise ValueError(f"the degree-9 rule needs ndim >= 2, got {ndim}")
    a1, a2, a3, a4, a5 = (2 * g for g in _G9)          # [-1, 1]^n units
    rows, sets = [np.zeros((1, n))], [0]
    for k, a in enumerate((a1, a2, a3, a4), start=1):
        rows += [a * np.eye(n), -a * np.eye(n)]
        sets += [k] * 2 * n
    signs2 = list(itertools.product((1.0, -1.0), repeat=2))
    for (i, j), (si, sj) in itertools.product(itertools.combinations(range(n), 2), signs2):
        p = np.zeros(n)
        p[i], p[j] = si * a1, sj * a1
        rows.append(p[None])
        sets.append(5)
    for (i, j), (si, sj) in itertools.product(itertools.permutations(range(n), 2), signs2):
        p = np.zeros(n)
        p[i], p[j] = si * a1, sj * a2
        rows.append(p[None])
        sets.append(6)
    for idx in itertools.combinations(range(n), 3):
        for sg in itertools.product((1.0, -1.0), repeat=3):
            p = np.zeros(n)
            p[list(idx)] = np.array(sg) * a1
            rows.append(p[None])
            sets.append(7)
    rows.append(a5 * np.array(list(itertools.product((1.0, -1.0), repeat=n))))
    sets += [8] * 2**n
    nodes = np.concatenate(rows, axis=0)
    sets = np.array(sets)
    assert nodes.shape[0] == sets.size == n_points9(n)
    weights = _weights9(n)
    counts = np.bincount(sets, minlength=9)
    scale = np.zeros((9, 3))
    norm = np.zeros((9, 3))
    for s in range(9):
        for k in range(1, 4):
            sc = -weights[s, k + 1] / weights[s, k] if weights[s, k] != 0 else 100.0
            scale[s, k - 1] = sc
            norm[s, k - 1] = 1 / np.sum(counts * np.abs(weights[:, k + 1] + sc * weights[:, k]))
    for a in (nodes, sets, weights, scale, norm):
        a.setflags(write=False)
    return GenzMalik9Rule(ndim=n, nodes=nodes, sets=sets, set_weights=weights, scale=scale,
                          norm=norm)


RULES = {"genz_malik": genz_malik, "dcuhre9": genz_malik9}
"""Rule families by name: the Genz–Malik 7/5 pair (default) and the degree-9 rule."""


def make_rule(name: str, ndim: int):
    """The rule ``name`` (a key of :data:`RULES`) in ``ndim`` dimensions."""
    try:
        return RULES[name](ndim)
    except KeyError:
        raise ValueError(f"rule must be one of {sorted(RULES)}, got {name!r}") from None


class RegionEstimates(NamedTuple):
    """Rule output for a batch of ``R`` regions (``M`` real integrand components)."""

    value: jax.Array       # (R, M) basic-rule estimates (degree 7, or 9)
    error: jax.Array       # (R, M) error estimates (|I7 - I5|, or the null-rule estimate)
    split_axis: jax.Array  # (R,) int32, fourth-difference choice
    nonfinite: jax.Array   # () int32, points with a NaN/inf component among valid regions


def apply_rule(fn: Callable, rule, centers: jax.Array, halfwidths: jax.Array,
               valid: jax.Array, component_weights: jax.Array) -> RegionEstimates:
    """Evaluate a rule (:class:`GenzMalikRule` or :class:`GenzMalik9Rule`) on ``R`` boxes
    ``centers ± halfwidths`` with one call of ``fn``.

    ``fn`` maps ``(R·N, n)`` points to ``(R·N, M)`` real values (a
    :class:`~loopint.engines.base.NormalizedIntegrand` ``fn``).  Invalid (padding) regions
    contribute zeros and are not counted.  Non-finite values are counted and replaced by 0.
    Traceable; the engines call it under ``jit``.
    """
    dtype = centers.dtype
    r, n = centers.shape
    nodes = jnp.asarray(rule.nodes, dtype)
    npts = nodes.shape[0]
    # Padding rows are moved to the first region's centre with zero width, so the integrand
    # is never called at points outside the regions being integrated.
    centers = jnp.where(valid[:, None], centers, centers[:1])
    halfwidths = jnp.where(valid[:, None], halfwidths, jnp.zeros((), dtype))
    pts = centers[:, None, :] + halfwidths[:, None, :] * nodes[None, :, :]
    vals = fn(pts.reshape(r * npts, n))
    m = vals.shape[1]
    vals = vals.reshape(r, npts, m)
    finite = jnp.isfinite(vals)
    bad_point = jnp.logical_not(jnp.all(finite, axis=2)) & valid[:, None]
    nonfinite = jnp.sum(bad_point, dtype=jnp.int32)
    vals = jnp.where(finite & valid[:, None, None], vals, jnp.zeros((), dtype))

    # Weighted sums as multiply + reduce rather than dot products: they fuse with the
    # integrand on every backend and compile much faster than XLA's CPU dot kernels.
    vol = jnp.prod(2 * halfwidths, axis=1)[:, None]
    average, err = rule.estimate(vals)
    value = vol * average
    error = vol * err

    inner, outer, ratio = rule.fourth_difference
    f0 = vals[:, 0, :]                                     # (R, M)
    fpi = vals[:, 1 + 2 * inner * n:1 + (2 * inner + 1) * n, :]
    fmi = vals[:, 1 + (2 * inner + 1) * n:1 + (2 * inner + 2) * n, :]
    fpo = vals[:, 1 + 2 * outer * n:1 + (2 * outer + 1) * n, :]
    fmo = vals[:, 1 + (2 * outer + 1) * n:1 + (2 * outer + 2) * n, :]
    # |f(+λi) + f(-λi) - 2 f0 - r (f(+λo) + f(-λo) - 2 f0)|, r = (λi/λo)^2 (Genz & Malik 1980).
    diff4 = jnp.abs(fpi + fmi - 2 * (1 - ratio) * f0[:, None, :] - ratio * (fpo + fmo))
    cw = component_weights.astype(dtype)
    score = jnp.sum(diff4 * cw[None, None, :], axis=2)     # (R, n)
    scale = jnp.sum(jnp.abs(f0) * cw[None, :], axis=1)
    noise = 64 * jnp.finfo(dtype).eps * scale
    flat = jnp.max(score, axis=1) <= noise
    longest = jnp.argmax(halfwidths, axis=1)
    axis = jnp.where(flat, longest, jnp.argmax(score, axis=1)).astype(jnp.int32)
    return RegionEstimates(value, error, axis, nonfinite)


def two_level_error(value_self: jax.Array, error_self: jax.Array, value_sibling: jax.Array,
                    error_sibling: jax.Array, value_parent: jax.Array) -> jax.Array:
    """Berntsen–Espelid–Genz two-level error of one child of a bisected parent (elementwise).

    ``δ = |I_self + I_sibling - I_parent| / 4``; ``E ← E·(1 + 2δ/(E_self + E_sibling)) + δ``
    (the factor is skipped when both children report zero error).
    """
    delta = jnp.abs(value_self + value_sibling - value_parent) / 4
    total = error_self + error_sibling
    safe = jnp.where(total > 0, total, 1)
    factor = jnp.where(total > 0, 1 + 2 * delta / safe, 1)
    return error_self * factor + delta
