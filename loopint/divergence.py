"""Does the Feynman-parameter integral converge?  Power counting on the Newton polytope.

The parametric integral of a diagram (pySecDec's normalization, :mod:`loopint.diagram`),

    int delta(1 - sum x) prod_j x_j^(nu_j - 1) U^a / F^b,   a = nu - (L+1) D/2,  b = nu - L D/2,

can diverge even where Gamma(b) is finite: at a UV-divergent subgraph (its parameters -> 0
make U vanish) and where massless lines meet on-shell legs (F vanishes on a face of the
simplex: soft and collinear singularities).  After iterated sector decomposition of U and F
(:mod:`loopint.sectors`) the integrand of every sector is prod_i t_i^e_i times a function that
is regular at t = 0, and for Euclidean kinematics bounded away from zero on the whole cube,
so the integral converges if and only if every e_i > -1 (:func:`loopint.sectors.sector_exponents`).
The exponent of a sector variable depends only on its direction w (the column of the sector's
monomial map), e = psi(w) - 1 with psi piecewise linear on the normal fan of the Newton
polytope of U and F, so it suffices to test the facet normals of that polytope
(:func:`analyze_supports`); this needs no decomposition, which for some polynomials does not
terminate.  Only the supports (which monomials are present) enter: a coefficient that
vanishes at the kinematic point (a mass set to 0, an on-shell leg given by numbers) leaves
its monomial out.

Divergences of this kind do not depend on the sign of F away from thresholds, so a physical
point is judged by the supports of its U and F, i.e. by its Euclidean continuation.

Classification of a divergent face t_i -> 0, on which the parameters x_S -> 0 and x_C stay
finite: with u and f the orders of vanishing of U and F there,

    e = e_UV - b (f - u),   e_UV = sum_j (nu_j - 1) A_ji + J_i + (a - b) u,

e_UV is the count of a UV subgraph (F vanishes like U: F = U_S F_{G/S} + ...).  If e_UV <= -1
the face is a UV subdivergence of the lines S; otherwise the extra vanishing of F makes it
infrared: ``soft`` when a single line stays finite (its momentum can be soft), ``collinear``
otherwise.  Several log-divergent facets through one vertex of the polytope overlap in one
sector (soft-collinear: up to 1/eps^k in dimensional regularization, k =
:attr:`Verdict.pole_order`).

A face with -1 < e < 0 is an integrable singularity (e.g. D = 3.9 and a UV-divergent
subloop): the engines' error estimates cannot be trusted on such an integrand, so the
lowering subtracts it in the sectors (:class:`loopint.lower.Integrand`, domain
``"decomposed"``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np
import sympy

from . import cache as cache_mod
from .diagram import Diagram
from .errors import DiagramError

# A coefficient of U or F counts as absent at a kinematic point when it is this small against
# the sum of the moduli of its own terms in the kinematic symbols (:func:`coefficient_scale`):
# an on-shell leg or a zero mass given as floating-point numbers (p1*p1 - m**2 at p1*p1 = m**2)
# cancels to round-off of those terms, not to an exact zero.  A coefficient that is small
# without cancelling (the square of a light mass, m = 1e-7 beside masses of order 1) is not
# round-off: it keeps the monomial, whose boundary behaviour decides convergence.
ZERO_COEFFICIENT = 1e-12

# Part of the key of the facet records in the cache folder (:func:`facet_normals`): a change to
# how the normals are computed changes it, so that no record of an earlier computation is read.
FACET_RECORD_VERSION = 1


@dataclass(frozen=True)
class Face:
    """A facet of the Newton polytope of U and F, i.e. a direction in which the Feynman
    parameters ``vanishing`` go to zero (as t^weights) while those in ``finite`` stay finite;
    a sector of the decomposition along it has the integrand t^exponent times a regular
    function."""

    facet: int
    exponent: float
    kind: str                    # "UV", "soft" or "collinear"
    vanishing: tuple
    finite: tuple
    weights: tuple

    def describe(self) -> str:
        what = {"UV": "UV subdivergence", "soft": "soft (IR) singularity",
                "collinear": "collinear (IR) singularity"}[self.kind]
        rates = "" if set(self.weights) == {1} else \
            " (rates " + ", ".join(f"{n}~t^{w}" for n, w in zip(self.vanishing, self.weights)) + ")"
        return (f"{what} where {', '.join(self.vanishing)} -> 0{rates} with "
                f"{', '.join(self.finite)} finite: integrand ~ t^{_fmt(self.exponent)}")


@dataclass(frozen=True)
class Verdict:
    """Whether a parametric integral converges, and why not.

    convergent: every sector exponent > -1.
    divergent_faces: the faces with exponent <= -1 (one per distinct set of vanishing
        parameters and kind).
    singular_faces: the faces with -1 < exponent < 0 (integrable, mapped away before
        integrating).
    pole_order: the largest number of divergent facets through one vertex of the polytope,
        i.e. overlapping in one sector (0 when convergent).
    facets: number of facets of the Newton polytope of U and F.
    vanishing_coefficients: monomials of F (or U) whose coefficients vanish at the point
        although the diagram's polynomial has them (on-shell legs, zero masses given as numbers).
    """

    convergent: bool
    divergent_faces: tuple
    singular_faces: tuple
    pole_order: int
    facets: int
    dimension: str
    vanishing_coefficients: tuple = ()

    @property
    def kinds(self) -> frozenset:
        return frozenset(f.kind for f in self.divergent_faces)

    def summary(self) -> str:
        """A few lines for ``loopint show`` and error messages."""
        if self.convergent:
            head = (f"convergent at D = {self.dimension} (all {self.facets} facets of the Newton "
                    "polytope of U and F give exponents > -1)")
            if self.singular_faces:
                head += ("; integrable boundary singularities, subtracted before integrating "
                         "(domain 'decomposed'):")
                return "\n".join([head] + ["  " + f.describe() for f in self.singular_faces[:6]])
            return head
        kinds = ", ".join(sorted(self.kinds))
        head = (f"divergent at D = {self.dimension}: {kinds}"
                + (f"; overlapping singularities, up to 1/eps^{self.pole_order} in dimensional "
                   "regularization" if self.pole_order > 1 else ""))
        lines = [head] + ["  " + f.describe() for f in self.divergent_faces[:8]]
        if len(self.divergent_faces) > 8:
            lines.append(f"  ... {len(self.divergent_faces) - 8} more faces")
        if self.vanishing_coefficients:
            lines.append("  coefficients of F that vanish at this point (massless lines, on-shell "
                         "legs): " + ", ".join(self.vanishing_coefficients[:6]))
        return "\n".join(lines)


def _fmt(e: float) -> str:
    return f"{e:.6g}"


def facet_normals(points: np.ndarray) -> list[tuple]:
    """Inner normals of the facets of the Newton polytope of homogeneous polynomials: the
    primitive integer vectors w (min_j w_j = 0) of the faces {m : m.w minimal} of conv(points)
    that have codimension one.  ``points[T, N]`` are exponent vectors of one total degree, so
    the polytope lies in a hyperplane; its facets are found (qhull, via scipy) in the first N-1
    coordinates and lifted back with w_N = 0.

    The normals depend on the point set alone, so they are kept in the loopint cache folder
    (:mod:`loopint.cache`, ``polytopes/``, one JSON record per point set): a later process that
    analyses the same diagram, at any kinematics with the same vanishing coefficients, neither
    imports scipy's spatial module nor runs qhull.  A record is used only if it names the same
    point set and holds integer vectors of its dimension."""
    P = np.unique(np.asarray(points, dtype=np.int64), axis=0)
    N = P.shape[1]
    key = hashlib.sha1(f"{FACET_RECORD_VERSION}:{P.shape}:".encode() + P.tobytes()).hexdigest()
    path = cache_mod.record_path("polytopes", f"{key}.json")
    stored = cache_mod.read_json(path)
    if _valid_record(stored, key, N):
        return [tuple(w) for w in stored["normals"]]
    out = _facet_normals(P)
    cache_mod.write_json(path, {"points": key, "normals": [list(w) for w in out]})
    return out


def _valid_record(stored, key: str, N: int) -> bool:
    """Whether ``stored`` is a facet record (:func:`facet_normals`) of the point set ``key``."""
    if not isinstance(stored, dict) or stored.get("points") != key:
        return False
    normals = stored.get("normals")
    return (isinstance(normals, list) and len(normals) > 0
            and all(isinstance(w, list) and len(w) == N
                    and all(type(x) is int for x in w) for w in normals))


def _facet_normals(P: np.ndarray) -> list[tuple]:
    """:func:`facet_normals` of the distinct points ``P``, computed."""
    N = P.shape[1]
    Y = P[:, :N - 1]
    if N == 2:
        raw = [np.array([1.0]), np.array([-1.0])]
    else:
        from scipy.spatial import ConvexHull
        hull = ConvexHull(Y.astype(float))
        raw = [-eq[:-1] for eq in hull.equations]
    out = set()
    for n in raw:
        w = _primitive(np.concatenate([n, [0.0]]))
        vals = P @ np.asarray(w)
        lo = vals.min()
        on = P[vals == lo]
        # an exact facet: its points span N-2 dimensions in the projected coordinates
        if len(on) >= N - 1 and (N == 2 or np.linalg.matrix_rank(on[1:, :N - 1] - on[0, :N - 1])
                                 == N - 2):
            out.add(w)
    return sorted(out)


def _primitive(v: np.ndarray) -> tuple:
    """The primitive integer vector along a rational direction given in floating point,
    shifted (by multiples of (1, ..., 1), which leaves every projective quantity unchanged)
    so that its smallest entry is 0."""
    v = v - v.min()
    v = v / np.max(np.abs(v))
    fr = [Fraction(float(x)).limit_denominator(10**6) for x in v]
    den = int(np.lcm.reduce([f.denominator for f in fr]))
    ints = [int(f * den) for f in fr]
    g = int(np.gcd.reduce([abs(i) for i in ints if i])) or 1
    return tuple(i // g for i in ints)


def analyze_supports(U_support: np.ndarray, F_support: np.ndarray, powers: Sequence, a, b,
                     names: Sequence[str], dimension: str = "?") -> Verdict:
    """:func:`analyze` on the supports (exponent arrays ``[T, N]`` of the monomials present) of
    U and F, the powers nu_j and the exponents a (of U) and b (of 1/F).

    Method: along a direction x_j ~ lambda^(w_j), lambda -> 0, the integrand scales as
    lambda^(psi(w) - 1) per unit of d(log lambda)... precisely, in a sector whose map has the
    primitive column w, the exponent of its variable is e = psi(w) - 1 with

        psi(w) = sum_j nu_j w_j + a min_{m in U} m.w - b min_{m in F} m.w.

    psi is linear on the cones of the normal fan of Newt(U) + Newt(F) and every sector of an
    iterated decomposition lies in one of them, so the integral converges iff psi > 0 on the
    rays of that fan: the inner facet normals of the Minkowski sum (:func:`facet_normals`;
    the tropical form of the criterion of Berkesch, Forsgard & Passare, Michigan Math. J. 63
    (2014) 101, for Feynman integrals Schultka, arXiv:1806.01086).  This terminates for every
    pair of polynomials (iterated blow-up strategies can cycle).
    """
    EU = np.asarray(U_support, dtype=np.int64)
    EF = np.asarray(F_support, dtype=np.int64)
    N = EU.shape[1]
    if N == 1:
        return Verdict(True, (), (), 0, 1, dimension)
    nu = [Fraction(str(p)) for p in powers]
    fa, fb = Fraction(str(a)), Fraction(str(b))
    P = np.unique((EU[:, None, :] + EF[None, :, :]).reshape(-1, N), axis=0)
    normals = facet_normals(P)
    divergent, singular = [], []
    for k, w in enumerate(normals):
        wv = np.asarray(w, dtype=np.int64)
        u = int((EU @ wv).min())
        f = int((EF @ wv).min())
        nu_w = sum((n * int(x) for n, x in zip(nu, w)), Fraction(0))
        e = nu_w + fa * u - fb * f - 1
        if e >= 0:
            continue
        # UV when the count with U's vanishing alone (F = U_S F_{G/S}: f = u) is as singular
        # as the face (for a divergent face: itself divergent)
        e_uv = nu_w + (fa - fb) * u - 1
        vanishing = tuple(names[j] for j in range(N) if w[j] > 0)
        finite = tuple(names[j] for j in range(N) if w[j] == 0)
        kind = "UV" if e_uv <= max(e, -1) else ("soft" if len(finite) == 1 else "collinear")
        face = Face(k, float(e), kind, vanishing, finite,
                    tuple(int(w[j]) for j in range(N) if w[j] > 0))
        (divergent if e <= -1 else singular).append(face)
    # overlapping divergences: divergent facets through one vertex of the polytope
    pole_order = 0
    if divergent:
        div_w = np.array([[int(x) for x in normals[fc.facet]] for fc in divergent])
        vals = P @ div_w.T                                  # [points, divergent facets]
        on = vals == vals.min(axis=0, keepdims=True)
        pole_order = int(min(on.sum(axis=1).max(), N - 1))
    order = lambda fs: tuple(sorted(fs, key=lambda fc: (fc.exponent, len(fc.vanishing),
                                                         fc.vanishing)))
    return Verdict(not divergent, order(divergent), order(singular), pole_order,
                   len(normals), dimension)


def point_supports(diagram: Diagram, kinematics: Mapping[str, float] | None = None):
    """Exponent arrays of the monomials of U and F whose coefficients do not vanish at the
    kinematic point (all of them without a point), and the names of the monomials of F that
    vanish there."""
    xs = diagram.variables
    values = {sympy.Symbol(k, real=True): sympy.nsimplify(float(v), rational=True)
              for k, v in (kinematics or {}).items()
              if k in diagram.kinematic_symbols and np.ndim(v) == 0}
    out, dropped = [], []
    for label, P in (("U", diagram.U), ("F", diagram.F)):
        terms = sympy.Poly(P, *xs).terms()
        expo = np.array([m for m, _ in terms], dtype=np.int64)
        if values and terms:
            with np.errstate(all="ignore"):
                coef = np.array([_number(c.xreplace(values), label) for _, c in terms])
                scale = np.array([coefficient_scale(c, values, label) for _, c in terms])
            keep = np.abs(coef) > ZERO_COEFFICIENT * scale
            if not np.any(keep):
                raise DiagramError(f"{label} vanishes identically at this kinematic point",
                                   "kinematics")
            dropped += [f"{label}:{_monomial(m, xs)}" for m, k in zip(expo, keep) if not k]
            expo = expo[keep]
        out.append(expo)
    return out[0], out[1], tuple(dropped)


def coefficient_scale(c, values, label: str) -> float:
    """The sum of the moduli of the terms of ``c`` (a coefficient of U or F, a polynomial in
    the kinematic symbols) at the point ``values``: the size of the numbers that cancel where
    ``c`` vanishes (:data:`ZERO_COEFFICIENT`)."""
    return sum(abs(_number(t.xreplace(values), label))
               for t in sympy.Add.make_args(sympy.expand(c)))


def _number(c, label: str) -> float:
    try:
        v = float(c)
    except (TypeError, ValueError):
        raise DiagramError(f"{label}: a coefficient depends on symbols without values "
                           f"({c})", "kinematics") from None
    if not np.isfinite(v):
        raise DiagramError(f"{label}: a coefficient is not finite at this kinematic point "
                           "(division by zero in a scalar product or mass?)", "kinematics")
    return v


def _monomial(m, xs) -> str:
    return "*".join(f"{x}" + (f"^{k}" if k > 1 else "") for x, k in zip(xs, m) if k) or "1"


def analyze(diagram: Diagram, kinematics: Mapping[str, float] | None = None) -> Verdict:
    """Decide whether the parametric integral of ``diagram`` converges at the kinematic point.

    Without ``kinematics`` every monomial of U and F counts (generic kinematics).  Returns a
    :class:`Verdict`; :func:`loopint.compute` refuses a divergent one with
    :func:`divergence_message`.
    """
    EU, EF, dropped = point_supports(diagram, kinematics)
    v = analyze_supports(EU, EF, diagram.powers, diagram.U_exponent, diagram.F_exponent,
                         [str(x) for x in diagram.variables], str(diagram.dimension))
    return v if not dropped else Verdict(**{**v.__dict__, "vanishing_coefficients": dropped})


def divergence_message(verdict: Verdict) -> str:
    """The error for a divergent integral: kind, faces, exponents and what to do."""
    return (verdict.summary() + "\nThe Feynman-parameter integral does not exist at this "
            "dimension and these propagator powers; give dimension = \"4 - 2*eps\" (the "
            "dimension with eps) for its Laurent series in eps, computed by sector "
            "decomposition (README \"Divergent integrals\"). At a non-integer dimension the "
            "integral may be finite: `loopint show` prints the exponents.")
