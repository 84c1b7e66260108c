"""Cases and independent references for tests/test_divergence.py.

Nothing here uses loopint's analysis: it reads only a Diagram's data (U, F, variables,
powers, loops, dimension) and the kinematic values.

``newton_fan``: an independent power counting of the Feynman-parameter integral
    I ~ int delta(1 - sum x) prod x_j^(nu_j - 1) U^a F^(-b),  a = nu - (L+1) D/2,  b = nu - L D/2.
Near a boundary approached along a weight vector w (x_j ~ t^(w_j)), the integrand and the
measure go like t^(phi(w) - 1) dt with

    phi(w) = w.nu + a min_{alpha in supp U} w.alpha - b min_{beta in supp F} w.beta

(phi is invariant under w -> w + c(1, ..., 1) because U, F are homogeneous of degrees L, L+1).
phi is linear on each cone of the common refinement of the normal fans of Newt(U) and Newt(F),
i.e. of the normal fan of the Minkowski sum P = Newt(U) + Newt(F); it is positive everywhere
(modulo the lineality direction) iff it is positive on every ray of that fan, i.e. on the
inner facet normals of P.  So the integral converges iff phi(w) > 0 for every facet normal
of P (Nilsson & Passare, "Mellin transforms of multivariate rational functions", J. Funct.
Anal. 264 (2013) 24, for the one-polynomial case; Kaneko & Ueda, "A geometric method of sector
decomposition", Comput. Phys. Commun. 181 (2010) 1352, for the fan of U and F).  The criterion
needs the face polynomials not to vanish inside the positive orthant: it is exact when F has
coefficients of one sign at the point (Euclidean), which is how the tests use it.
The kinematic point's numbers are substituted first (exact rationals), so a coefficient that
cancels there (on-shell leg given numerically, a mass set to 0) is absent.

Kind of a divergent facet (phi <= 0), the rule of the issue: UV if the counting with F replaced
by U's order alone, w.nu - (D/2) min_U w.alpha, is already <= 0 (a subgraph with a loop
shrinks); otherwise soft if exactly one parameter stays finite (w_j = 0 for one j), else
collinear.  Pole order: the largest number of divergent facets through one vertex of P (the
number of log-divergent directions of one maximal cone: one sector of the geometric method).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import product
from typing import Mapping

import mpmath
import numpy as np
import sympy


# --------------------------------------------------------------------------- the fan
@dataclass(frozen=True)
class FanFace:
    w: tuple            # primitive integer weight vector, min entry 0
    phi: Fraction       # e + 1: the exponent of the sector variable plus one
    vanishing: tuple    # names with w_j > 0
    finite: tuple
    kind: str

    @property
    def exponent(self) -> float:
        return float(self.phi) - 1.0


@dataclass(frozen=True)
class FanVerdict:
    convergent: bool
    faces: tuple           # every facet direction with its phi
    divergent: tuple
    singular: tuple        # 0 < phi < 1
    kinds: frozenset
    pole_order: int
    one_sign: bool         # F has coefficients of one sign at the point: the criterion is exact


def _supports(expr, xs):
    poly = sympy.Poly(expr, *xs)
    pts, coefs = [], []
    for m, c in poly.terms():
        if c != 0:
            pts.append(m)
            coefs.append(c)
    return np.array(pts, dtype=np.int64), coefs


def _rat(v: float) -> Fraction:
    return Fraction(v).limit_denominator(1000)


def newton_fan(diagram, kinematics: Mapping[str, float] | None) -> FanVerdict:
    xs = list(diagram.variables)
    names = tuple(str(x) for x in xs)
    subs = {sympy.Symbol(k, real=True): sympy.nsimplify(float(v), rational=True)
            for k, v in (kinematics or {}).items()}
    U = sympy.expand(diagram.U.subs(subs))
    F = sympy.expand(diagram.F.subs(subs))
    eu, _ = _supports(U, xs)
    ef, cf = _supports(F, xs)
    one_sign = all(c > 0 for c in cf) or all(c < 0 for c in cf)
    nu = [Fraction(str(p)) for p in diagram.powers]
    D = Fraction(str(diagram.dimension))
    L = diagram.loops
    a = sum(nu) - (L + 1) * D / 2
    b = sum(nu) - L * D / 2
    N = len(xs)
    pts = np.unique(np.array([u + f for u, f in product(eu, ef)]), axis=0)

    # inner facet normals of P (P lies in the hyperplane sum = 2L + 1: drop the last coordinate)
    normals = []
    if N == 1:
        raise ValueError("one-parameter integral: nothing to count")
    if N == 2:
        normals = [np.array([1.0, 0.0]), np.array([0.0, 1.0])]
        vert_of = None
    else:
        from scipy.spatial import ConvexHull
        Y = pts[:, : N - 1].astype(float)
        hull = ConvexHull(Y)
        seen = set()
        for eq in hull.equations:
            w = np.concatenate([-eq[:-1], [0.0]])
            w = w - w.min()
            w = w / w[w > 1e-12].min()
            key = tuple(np.round(w, 6))
            if key not in seen:
                seen.add(key)
                normals.append(w)
    faces = []
    for w in normals:
        wr = [_rat(v) for v in w]
        den = np.lcm.reduce([f.denominator for f in wr])
        wi = [int(f * den) for f in wr]
        g = np.gcd.reduce([v for v in wi if v]) if any(wi) else 1
        wi = tuple(v // g for v in wi)
        minU = min(sum(wj * int(e) for wj, e in zip(wi, row)) for row in eu)
        minF = min(sum(wj * int(e) for wj, e in zip(wi, row)) for row in ef)
        wnu = sum(wj * n for wj, n in zip(wi, nu))
        phi = wnu + a * minU - b * minF
        vanishing = tuple(n for n, wj in zip(names, wi) if wj > 0)
        finite = tuple(n for n, wj in zip(names, wi) if wj == 0)
        if wnu - D / 2 * minU <= 0:
            kind = "UV"
        elif len(finite) == 1:
            kind = "soft"
        else:
            kind = "collinear"
        faces.append(FanFace(wi, phi, vanishing, finite, kind))
    divergent = tuple(f for f in faces if f.phi <= 0)
    singular = tuple(f for f in faces if 0 < f.phi < 1)
    # pole order: divergent facets through one vertex of P
    order = 0
    if divergent:
        for v in pts:
            cnt = 0
            for f in divergent:
                val = sum(wj * int(e) for wj, e in zip(f.w, v))
                best = min(sum(wj * int(e) for wj, e in zip(f.w, q)) for q in pts)
                cnt += val == best
            order = max(order, cnt)
    return FanVerdict(convergent=not divergent, faces=tuple(faces), divergent=divergent,
                      singular=singular, kinds=frozenset(f.kind for f in divergent),
                      pole_order=order, one_sign=one_sign)


# --------------------------------------------------------------------------- references
def simplex2(f, dps=15):
    """int over the 2-simplex {x1 + x2 + x3 = 1} of f(x1, x2, x3) dx1 dx2 (mpmath, nested
    tanh-sinh; integrable endpoint singularities are fine)."""
    mpmath.mp.dps = dps
    return mpmath.quad(lambda x1: mpmath.quad(lambda x2: f(x1, x2, 1 - x1 - x2), [0, 1 - x1]),
                       [0, 1])


def bubble_D(D, m1, m2, psq, dps=20):
    """One-loop bubble, pySecDec normalization (DESIGN 4.1), unit powers:
    (-1)^2 Gamma(2 - D/2) int_0^1 (x m1^2 + (1-x) m2^2 - x(1-x) p^2)^(D/2 - 2) dx."""
    mpmath.mp.dps = dps
    D = mpmath.mpf(D)
    g = mpmath.gamma(2 - D / 2)
    return g * mpmath.quad(lambda x: (x * m1 ** 2 + (1 - x) * m2 ** 2 - x * (1 - x) * psq)
                           ** (D / 2 - 2), [0, 1])


def triangle_D(D, F, powers=(1, 1, 1), dps=15):
    """One-loop triangle with U = x1 + x2 + x3 (= 1 on the simplex), pySecDec normalization:
    (-1)^nu Gamma(nu - D/2)/prod Gamma(nu_j) int_simplex prod x^(nu_j - 1) F^(D/2 - nu)."""
    mpmath.mp.dps = dps
    D = mpmath.mpf(D)
    nu = sum(powers)
    pre = (-1) ** nu * mpmath.gamma(nu - D / 2) / mpmath.fprod(mpmath.gamma(p) for p in powers)

    def f(x1, x2, x3):
        mono = x1 ** (powers[0] - 1) * x2 ** (powers[1] - 1) * x3 ** (powers[2] - 1)
        return mono * F(x1, x2, x3) ** (D / 2 - nu)

    return pre * simplex2(f, dps)


def phi1(x, y):
    """Usyukina & Davydychev, Phys. Lett. B 298 (1993) 363, eq. (12)-(14): the massless
    one-loop triangle in D = 4,
        int delta(1 - sum x) / (P1 x1 x2 + P2 x2 x3 + P3 x3 x1) = Phi1(P1/P3, P2/P3) / P3,
    Phi1(x, y) = (1/lambda) {2 [Li2(-rho x) + Li2(-rho y)] + ln(y/x) ln((1 + rho y)/(1 + rho x))
                             + ln(rho x) ln(rho y) + pi^2/3},
    lambda = sqrt((1 - x - y)^2 - 4 x y), rho = 2/(1 - x - y + lambda) (lambda^2 > 0 here)."""
    x, y = mpmath.mpf(x), mpmath.mpf(y)
    lam = mpmath.sqrt((1 - x - y) ** 2 - 4 * x * y)
    rho = 2 / (1 - x - y + lam)
    return (2 * (mpmath.polylog(2, -rho * x) + mpmath.polylog(2, -rho * y))
            + mpmath.log(y / x) * mpmath.log((1 + rho * y) / (1 + rho * x))
            + mpmath.log(rho * x) * mpmath.log(rho * y) + mpmath.pi ** 2 / 3) / lam


def box6_massless(S, T):
    """Massless one-loop box in D = 6 with light-like legs, Euclidean S = -s > 0, T = -t > 0,
    pySecDec normalization: (-1)^4 Gamma(1) int delta(1 - sum x) U^-2 / (S x1 x3 + T x2 x4)
      = [ln^2(S/T) + pi^2] / (2 (S + T))
    (Bern, Dixon & Kosower, Nucl. Phys. B 412 (1994) 751, the D = 6 box, finite)."""
    S, T = mpmath.mpf(S), mpmath.mpf(T)
    return (mpmath.log(S / T) ** 2 + mpmath.pi ** 2) / (2 * (S + T))
