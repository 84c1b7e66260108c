"""Dimensional regularization: the Laurent series in eps of a divergent loop integral.

With D = D0 + d1 eps and powers nu_j = n_j + c_j eps (:data:`loopint.diagram.EPS`), the
parametric integral of :mod:`loopint.diagram`,

    I(eps) = P(eps) int delta(1 - sum x) prod_j x_j^(nu_j - 1) U^a / (F - i0)^b,
    a = nu - (L+1) D/2 = a0 + a1 eps,   b = nu - L D/2 = b0 + b1 eps,

is a Laurent series I = sum_{j >= -2L} c_j eps^j.  The method is that of SecDec and pySecDec
(Binoth & Heinrich, Nucl. Phys. B 585 (2000) 741; Borowka et al., Comput. Phys. Commun. 222
(2018) 313), with the eps expansion done numerically, point by point, instead of
symbolically:

1. Sector decomposition (:mod:`loopint.sectors`) of U and F: in sector s the cube coordinates
   t (x = t^A, Jacobian t^J) give U = t^u U~(t), F = t^f F~(t) with U~, F~ polynomials with a
   nonzero constant term, and the integrand is

       prod_i t_i^(E_i + B_i eps) * U~^a F~^(-b),

   E_i and B_i from power counting (:func:`loopint.sectors.sector_exponents` at eps = 0 and
   its eps part).  U~ and F~ are evaluated from their own exponents (E A - u per sector,
   exact at t = 0), one traced body scanned over all sectors.
2. Subtraction at the faces.  A coordinate with E_i = -1 carries a pole: with G the rest,

       int_0^1 t^(-1 + B eps) G(t) dt = G(0)/(B eps) + int_0^1 t^(-1 + B eps) (G(t) - G(0)) dt,

   and one with -1 < E_i < 0 an integrable singularity, treated alike (G(0)/(E + 1 + B eps),
   no pole): the product over a sector's singular coordinates is a sum over the subsets T
   put on their faces (:meth:`SeriesIntegrand._evaluate`).  E_i = -1 with B_i = 0 is a
   divergence that eps does not regulate (refused); E_i < -1 would need higher Taylor terms
   of the subtraction and is refused with a clear message.
3. Expansion in eps at each point: every factor is a closed-form series, t^(B eps) =
   exp(B eps log t), U~^(a1 eps) F~^(-b1 eps) = exp(eps (a1 log U~ - b1 log(F~ - i0))),
   1/(B eps) and 1/(E + 1 + B eps); their truncated products give the Taylor coefficients of
   the subtracted integrand, all orders as components of one vector integrand that the
   engines integrate together.  The prefactor P(eps) = (-1)^nu Gamma(b)/prod Gamma(nu_j) is
   expanded exactly (sympy) and multiplied in afterwards, with the errors propagated.
4. Physical kinematics (F~ changes sign): the sector coordinates are moved into the complex
   plane, z_k = t_k - i lam t_k (1 - t_k) dF~/dt_k (pySecDec's deformation, Borowka et al.
   2018, section 2.4), before the subtraction: with r_k = z_k / t_k = 1 - i lam (1 - t_k)
   dF~/dt_k (Re r_k = 1), the sector integrand becomes prod t_k^(E_k + B_k eps) times
   G~(t) = prod r_k^(E_k + B_k eps) U~(z)^a F~(z)^(-b) det(dz/dt), regular at t = 0, and the
   face subtraction applies to G~ unchanged.  The endpoints t_k = 0, 1 stay in place, so by
   Cauchy's theorem the integral is unchanged while Im F~(z) <= 0 (checked at every point:
   a violation gives NaN, which the engines report).  Each sector is its own integral, so
   each has its own lam (:func:`_deformation_lambda`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np
import sympy

from . import engines
from . import precision as _precision
from .contour import CROSS_CHECK_SIGMAS, det_identity_minus_i
from .derivatives import Derivative, blocks, request, split, supports_for, with_derivatives
from .diagram import EPS, Diagram
from .errors import DiagramError, SpecError
from .io import jsonable
from .lower import evaluate_expr, kinematics_array, kronecker_points, poly_code
from .region import classify_points, one_loop_landau_points, pinch_tolerance
from .plan import engine_domain, integrand, make_engine, point_text, reduced, support_groups
from .result import Result, device_name, points_status
from .sectors import DecompositionError, decompose, monomial_maps, sector_exponents

# Singular coordinates are clamped at this value (float64; float32 below): the subtracted
# integrand is bounded, so the change is O(t_c) relative, while the cancellation between a
# point and its face value keeps its noise (unit round-off / t) far below the tolerance.
_T_SUBTRACT = {"float64": 1e-12, "float32": 1e-5}
_T_MIN = {"float64": 1e-30, "float32": 1e-15}

# Tolerance of a coefficient: max(rtol |c_j|, ATOL_FRACTION rtol max_i |c_i|) per kinematic
# point, so that a coefficient that vanishes (or nearly) does not demand an impossible relative
# accuracy; max_i |c_i| comes from a pilot sample.
ATOL_FRACTION = 1e-3


def split_eps(v) -> tuple[Fraction, Fraction]:
    """(a, b) of a + b eps (exact rationals)."""
    p = sympy.Poly(sympy.expand(sympy.sympify(v)), EPS)
    coeffs = dict(zip([m[0] for m in p.monoms()], p.coeffs()))
    return Fraction(str(coeffs.get(0, 0))), Fraction(str(coeffs.get(1, 0)))


def prefactor_series(diagram: Diagram, convention: str, hi: int) -> tuple[int, np.ndarray]:
    """The prefactor's Laurent series up to eps^hi: ``(lo, coeffs)`` with ``coeffs[k]`` the
    coefficient of eps^(lo + k) (empty when hi < lo).  (-1)^nu is exp(i pi nu) when nu
    depends on eps."""
    if convention == "none":
        lo, c = 0, np.ones(1, complex)
    else:
        nu = sympy.expand(diagram.nu)
        sign = sympy.Integer(-1) ** nu if nu.is_Integer else sympy.exp(sympy.I * sympy.pi * nu)
        expr = sign * sympy.gamma(diagram.F_exponent) / sympy.Mul(*[sympy.gamma(p) for p in diagram.powers])
        ser = sympy.expand(sympy.series(expr, EPS, 0, max(hi, 0) + 1).removeO())
        lo = min(_order(term) for term in sympy.Add.make_args(ser)) if ser != 0 else 0
        c = np.array([complex(sympy.N(ser.coeff(EPS, j), 30)) for j in range(lo, hi + 1)],
                     dtype=complex)
    return lo, c


def _order(term) -> int:
    """The power of eps in one term of an expanded series."""
    _, e = term.as_coeff_exponent(EPS)
    return int(e)


@dataclass
class _Slots:
    index: np.ndarray    # [S, k] coordinate of each singular slot
    valid: np.ndarray    # [S, k]
    kmax: int


class SeriesIntegrand:
    """The eps-expanded, subtracted sector integrand of a regulated diagram.

    ``hi``: highest order of eps of the bare parametric integral wanted.  Components: orders
    ``lo .. hi`` (``lo`` = -(the most poles of one sector)), point-major:
    ``values[n, k * M + m]`` is order ``lo + m`` of kinematic point k (M = hi - lo + 1).
    """

    def __init__(self, diagram: Diagram, hi: int, precision: str = "float64"):
        self.diagram = diagram
        self.precision = precision
        self.rdtype = _precision.real_dtype(precision)
        self.cdtype = _precision.complex_dtype(precision)
        self.xs = tuple(diagram.variables)
        self.N = len(self.xs)
        self.ndim = self.N - 1
        if self.ndim < 1:
            raise DiagramError("a one-propagator integral has no integration variables "
                               "(a tadpole is a Gamma function: nothing to integrate)", "diagram")
        self.symbols = tuple(diagram.kinematic_symbols)
        self._sym_objs = tuple(sympy.Symbol(s, real=True) for s in self.symbols)
        self.a0, self.a1 = split_eps(diagram.U_exponent)
        self.b0, self.b1 = split_eps(diagram.F_exponent)
        pw = [split_eps(p) for p in diagram.powers]
        self._codeU = poly_code(diagram.U, self.xs)
        self._codeF = poly_code(diagram.F, self.xs)
        EU = self._codeU.exponents.astype(np.int64)
        EF = self._codeF.exponents.astype(np.int64)
        try:
            self.sectors = decompose([EU, EF])
        except DecompositionError as e:
            raise DiagramError(f"{e}; loopint cannot expand this diagram in eps", "diagram") from None
        A, J = monomial_maps(self.sectors, self.N)
        E, u, f = sector_exponents([EU, EF], A, J, [p[0] for p in pw], self.a0, self.b0)
        B, _, _ = sector_exponents([EU, EF], A, np.zeros_like(J), [p[1] + 1 for p in pw],
                                   self.a1, self.b1)
        self._check_exponents(E, B)
        self.E = E.astype(float)
        self.B = B.astype(float)
        pole = np.vectorize(lambda e: e == -1)(E).astype(bool)
        singular = (self.E < 0)
        self.poles = int(pole.sum(axis=1).max()) if pole.size else 0
        self.hi = int(hi)
        self.lo = -self.poles
        self.M = self.hi - self.lo + 1
        self.slots = self._slot_table(singular)
        # U~ and F~ in each sector: exponents E A - (order of vanishing)
        self.TU = np.einsum("tj,sji->sti", EU, A) - u[:, None, :]
        self.TF = np.einsum("tj,sji->sti", EF, A) - f[:, None, :]
        self.emax = int(max(self.TU.max(), self.TF.max(), 2))
        counts = self.slots.valid.sum(axis=1)
        self._groups = [(int(k), np.nonzero(counts == k)[0]) for k in np.unique(counts)]

    # ------------------------------------------------------------------ set-up
    def _check_exponents(self, E, B) -> None:
        bad = [(s, i) for s in range(E.shape[0]) for i in range(E.shape[1])
               if E[s, i] <= -1 and (E[s, i] < -1 or B[s, i] == 0)]
        if not bad:
            return
        s, i = bad[0]
        if E[s, i] == -1:
            raise DiagramError(
                f"divergence not regulated by eps: in sector {s} the integrand behaves as "
                f"t_{i + 1}^-1 with no eps in the exponent (give the dimension or a power an "
                "eps dependence that reaches this singularity)", "dimension")
        raise DiagramError(
            f"sector {s}: the integrand behaves as t_{i + 1}^({E[s, i]} + {B[s, i]} eps), a "
            "singularity of degree above logarithmic; its subtraction needs Taylor terms "
            "beyond the first, which loopint does not implement yet (raise the powers' or the "
            "dimension's value at eps = 0, or split the integral)", "dimension")

    @staticmethod
    def _slot_table(singular: np.ndarray) -> _Slots:
        S = singular.shape[0]
        kmax = int(singular.sum(axis=1).max()) if S else 0
        index = np.zeros((S, max(kmax, 1)), np.int64)
        valid = np.zeros((S, max(kmax, 1)), bool)
        for s in range(S):
            cols = np.nonzero(singular[s])[0]
            index[s, :len(cols)] = cols
            valid[s, :len(cols)] = True
        return _Slots(index, valid, kmax)

    # ------------------------------------------------------------------ kinematics
    def kinematics_array(self, kinematics: Mapping[str, object]) -> np.ndarray:
        return kinematics_array(self.symbols, kinematics)

    def U_coefficients(self, kin) -> np.ndarray:
        return _coefficients(self._codeU, self._sym_objs, kin)

    def F_coefficients(self, kin) -> np.ndarray:
        return _coefficients(self._codeF, self._sym_objs, kin)

    @property
    def U_exponents(self) -> np.ndarray:
        return self._codeU.exponents

    @property
    def F_exponents(self) -> np.ndarray:
        return self._codeF.exponents

    def _kin_coefficients(self, code, kin):
        """Coefficients [K, T] as traced JAX arrays."""
        env = {s: kin[:, i] for i, s in enumerate(self._sym_objs)}
        cache: dict = {}
        K = kin.shape[0]
        cols = [jnp.broadcast_to(jnp.asarray(evaluate_expr(c, env, cache), self.rdtype), (K,))
                for c in code.coefficients]
        return jnp.stack(cols, axis=1)

    # ------------------------------------------------------------------ evaluation
    def bind(self, kin: np.ndarray, mode: str, lam=0.0, per_sector: bool = False):
        """``f(u) -> [n, K*M]`` for the engines (a pytree: new kinematics or lam never
        recompile).  ``mode``: 'real' (F > 0), 'complex' (F <= 0, or a check) or 'deform';
        ``lam``: the deformation strength, one for all sectors or one per sector [S].
        ``per_sector``: ``f(u) -> [S, n, K*M]``, each sector's contribution apart (the
        deformation's pilot)."""
        fn = {"real": self._real, "complex": self._complex, "deform": self._deform}[mode]
        if per_sector:
            fn = {"real": self._real_s, "complex": self._complex_s, "deform": self._deform_s}[mode]
        lam = np.broadcast_to(np.asarray(lam, float), (len(self.sectors),))
        return jax.tree_util.Partial(fn, jnp.asarray(kin, self.rdtype),
                                     jnp.asarray(lam, self.rdtype))

    def _real(self, kin, lam, u):
        return self._evaluate(kin, lam, u, mode="real")

    def _complex(self, kin, lam, u):
        return self._evaluate(kin, lam, u, mode="complex")

    def _deform(self, kin, lam, u):
        return self._evaluate(kin, lam, u, mode="deform")

    def _real_s(self, kin, lam, u):
        return self._evaluate(kin, lam, u, mode="real", per_sector=True)

    def _complex_s(self, kin, lam, u):
        return self._evaluate(kin, lam, u, mode="complex", per_sector=True)

    def _deform_s(self, kin, lam, u):
        return self._evaluate(kin, lam, u, mode="deform", per_sector=True)

    def _evaluate(self, kin, lam, u, mode: str = "real", per_sector: bool = False):
        kin = jnp.asarray(kin, self.rdtype)
        u = jnp.asarray(u, self.rdtype)
        n, d, K = u.shape[0], self.ndim, kin.shape[0]
        cU = self._kin_coefficients(self._codeU, kin)              # [K, TU]
        cF = self._kin_coefficients(self._codeF, kin)
        real = mode == "real"
        dtype = self.rdtype if real else self.cdtype
        tc = _T_SUBTRACT.get(self.precision, 1e-12)
        tmin = _T_MIN.get(self.precision, 1e-30)
        a0, a1, b0, b1 = (float(v) for v in (self.a0, self.a1, self.b0, self.b1))

        def make_sector(kmax):
            H = self.hi + kmax          # Taylor orders needed before the eps^-|T| shifts

            def sector(total, data):
                TU, TF, E, B, idx, valid, lam_s = data
                hot = (idx[:, None] == jnp.arange(d)[None, :]) & valid[:, None]  # [k, d]
                singular = jnp.any(hot, axis=0)
                ts = jnp.maximum(u, jnp.where(singular, tc, tmin)[None, :])      # [n, d]
                logt = jnp.log(ts)
                tpow = ts ** E[None, :]
                part = jnp.zeros((n, K, self.M), dtype)
                for Tbits in range(1 << kmax):
                    on = [(Tbits >> j) & 1 == 1 for j in range(kmax)]
                    on_arr = jnp.asarray(on + [False] * (idx.shape[0] - kmax), bool)
                    face = jnp.any(hot & on_arr[:, None], axis=0)               # [d]
                    tT = jnp.where(face[None, :], 0.0, ts)
                    base, L = self._regular(tT, cU, cF, TU, TF, E, B, lam_s, mode, a0, a1, b0,
                                            b1)
                    # the monomial factors of the coordinates not on a face
                    mono = jnp.prod(jnp.where(face[None, :], 1.0, tpow), axis=1)  # [n]
                    Lt = jnp.sum(jnp.where(face[None, :], 0.0, B[None, :] * logt), axis=1)
                    series = _exp_series(L + Lt[:, None], H, base * mono[:, None])
                    for j in range(kmax):
                        if on[j]:
                            q = self._face_factor(ts[:, idx[j]], E[idx[j]], B[idx[j]], H)
                            series = _mul_series(series, [c[:, None] for c in q], H)
                    shift = sum(on)
                    out = []
                    for m in range(self.M):
                        k = self.lo + m + shift
                        out.append(series[k] if 0 <= k <= H else jnp.zeros((n, K), dtype))
                    part = part + jnp.stack(out, axis=2)                          # [n, K, M]
                return total + part, (part.reshape(n, K * self.M) if per_sector else None)
            return sector

        # sectors grouped by their number of singular coordinates k: each group scans one
        # traced body with 2^k face terms (the program does not grow with the sectors)
        total = jnp.zeros((n, K, self.M), dtype)
        parts = []
        for k, rows in self._groups:
            width = max(k, 1)
            data = (jnp.asarray(self.TU[rows], jnp.int32), jnp.asarray(self.TF[rows], jnp.int32),
                    jnp.asarray(self.E[rows], self.rdtype), jnp.asarray(self.B[rows], self.rdtype),
                    jnp.asarray(self.slots.index[rows, :width], jnp.int32),
                    jnp.asarray(self.slots.valid[rows, :width]), lam[rows])
            total, ys = jax.lax.scan(make_sector(k), total, data)
            parts.append(ys)
        if per_sector:       # back into the order of the sectors
            order = np.argsort(np.concatenate([rows for _, rows in self._groups]))
            return jnp.concatenate(parts, axis=0)[order]
        return total.reshape(n, K * self.M)

    @staticmethod
    def _face_factor(t, E, B, H):
        """eps times the factor of a coordinate put on its face, 1/(E + 1 + B eps) - t^(E + B
        eps), as Taylor coefficients 0..H ([n] each).  For E = -1 its constant term is 1/B
        (the pole); otherwise 0 (no pole: the eps it carries is removed by the caller's
        shift)."""
        pole = E == -1.0
        Bsafe = jnp.where(B == 0, 1.0, B)
        Ep1 = jnp.where(pole, 1.0, E + 1.0)
        tE = t ** E
        lt = B * jnp.log(t)
        out = [jnp.where(pole, 1.0 / Bsafe, 0.0) * jnp.ones_like(t)]
        term = tE                     # t^E (B log t)^k / k!, k = m - 1
        for m in range(1, H + 1):
            k = m - 1
            if k > 0:
                term = term * lt / k
            geo = (1.0 / Ep1) * (-B / Ep1) ** k                  # 1/(E+1+B eps), order k
            out.append(jnp.where(pole, 0.0, geo) - term)
        return out

    def _regular(self, t, cU, cF, TU, TF, E, B, lam, mode, a0, a1, b0, b1):
        """The regular factor at cube points t ([n, d], faces already zero): its eps^0 part
        ``base[n, K]`` and the exponent ``L[n, K]`` with factor = base * exp(eps L)."""
        if mode == "deform":
            # the contour is held fixed under derivatives in the kinematics (the integral
            # does not depend on it: loopint.derivatives)
            z, r, jac, ok = self._deformation(t, jax.lax.stop_gradient(cF), TF, lam)
            mU = _monomials(z, TU, self.emax)                   # [n, TU] complex
            mF = _monomials(z, TF, self.emax)
            Ut = mU @ cU.T.astype(mU.dtype)                     # [n, K]
            Ft = mF @ cF.T.astype(mF.dtype)
            logU = jnp.log(Ut)
            logF = _log_minus_i0(Ft)
            logr = jnp.log(r)                                   # [n, d], Re r = 1
            base = jnp.exp(a0 * logU - b0 * logF + jnp.sum(E[None, :] * logr, axis=1)[:, None])
            base = base * jac[:, None]
            L = a1 * logU - b1 * logF + jnp.sum(B[None, :] * logr, axis=1)[:, None]
            bad = (~ok[:, None]) | (jnp.imag(Ft) > 1e-10 * jnp.abs(Ft)) | (jnp.real(Ut) <= 0)
            return jnp.where(bad, jnp.nan, base), L
        mU = _monomials(t, TU, self.emax)
        mF = _monomials(t, TF, self.emax)
        Ut = mU @ cU.T
        Ft = mF @ cF.T
        logU = jnp.log(Ut)
        if mode == "real":
            logF = jnp.log(Ft)
        else:
            logF = _log_minus_i0(jax.lax.complex(Ft, jnp.zeros_like(Ft)))
        base = jnp.exp(a0 * logU - b0 * logF)
        L = a1 * logU - b1 * logF
        return base, L

    def _deformation(self, t, cF, TF, lam):
        """z = t - i lam t (1 - t) dF~/dt (one kinematic point: cF[1, T]), r = z/t, and the
        Jacobian det(dz/dt); ``ok`` is False where the inputs are not finite."""
        d = self.ndim
        c = cF[0]
        table = _power_table(t, self.emax)                               # [d, e+1, n]
        # dF~/dt_k and d2F~/dt_k dt_j from the exponents: exact polynomials, no division
        g = []
        for k in range(d):
            ek = jnp.zeros(d, jnp.int32).at[k].set(1)
            g.append(_deriv_sum(table, TF, c, ek, self.emax))
        Hm = {}
        for k in range(d):
            for j in range(k + 1):
                ekj = jnp.zeros(d, jnp.int32).at[k].add(1).at[j].add(1)
                Hm[k, j] = _deriv_sum(table, TF, c, ekj, self.emax)
        w = t * (1.0 - t)                                                  # [n, d]
        r = [jax.lax.complex(jnp.ones_like(g[k]), -lam * (1.0 - t[:, k]) * g[k]) for k in range(d)]
        z = jnp.stack([t[:, k] * r[k] for k in range(d)], axis=1)
        # dz_k/dt_j = delta_kj - i lam M_kj, M_kj = delta_kj (1 - 2 t_k) g_k + w_k H_kj
        Mx = [[w[:, k] * Hm[max(k, j), min(k, j)] + ((1.0 - 2.0 * t[:, k]) * g[k] if j == k else 0.0)
               for j in range(d)] for k in range(d)]
        jac = det_identity_minus_i(Mx, lam)
        ok = jnp.all(jnp.isfinite(t), axis=1)
        return z, jnp.stack(r, axis=1), jac, ok


def _power_table(t, emax):
    """[d, emax+1, n]: t_i^k, exact products (0^0 = 1)."""
    cols = []
    for i in range(t.shape[1]):
        p = [jnp.ones_like(t[:, i]), t[:, i]]
        for _ in range(2, emax + 1):
            p.append(p[-1] * t[:, i])
        cols.append(jnp.stack(p, axis=0))
    return jnp.stack(cols, axis=0)


def _monomials(t, T, emax):
    """prod_i t_i^T[m, i] for every monomial m: [n, M] (t real or complex)."""
    table = _power_table(t, emax)                                         # [d, e+1, n]
    d = t.shape[1]
    picked = table[jnp.arange(d)[None, :], T]                             # [M, d, n]
    return jnp.prod(picked, axis=1).T


def _deriv_sum(table, T, c, shift, emax):
    """sum_m c_m d^shift t^T[m] at the points of ``table`` (a mixed partial derivative of the
    polynomial sum_m c_m t^T[m]): falling factorials times lowered exponents, [n]."""
    d = T.shape[1]
    factor = jnp.ones(T.shape[0], table.dtype)
    for i in range(d):
        for q in range(2):
            factor = factor * jnp.where(shift[i] > q, (T[:, i] - q).astype(table.dtype), 1.0)
    lowered = jnp.clip(T - shift[None, :], 0, emax)
    picked = table[jnp.arange(d)[None, :], lowered]                       # [M, d, n]
    mono = jnp.prod(picked, axis=1)                                       # [M, n]
    return jnp.einsum("m,mn->n", c * factor, mono)


def _log_minus_i0(z):
    """log(z - i0): the principal branch, with arg = -pi on the negative real axis."""
    re, im = jnp.real(z), jnp.imag(z)
    arg = jnp.arctan2(im, re)
    arg = jnp.where((im == 0) & (re < 0), -jnp.pi, arg)
    return jax.lax.complex(0.5 * jnp.log(re * re + im * im), arg)


def _exp_series(L, H, base):
    """base * exp(eps L) as Taylor coefficients 0..H."""
    out = [base]
    for m in range(1, H + 1):
        out.append(out[-1] * L / m)
    return out


def _mul_series(a, b, H):
    """Truncated Cauchy product of two Taylor series (lists of arrays) up to order H."""
    out = []
    for m in range(H + 1):
        acc = a[m] * b[0]
        for i in range(m):
            acc = acc + a[i] * b[m - i]
        out.append(acc)
    return out


def _coefficients(code, sym_objs, kin) -> np.ndarray:
    kin = np.asarray(kin, dtype=np.float64)
    env = {s: kin[:, i] for i, s in enumerate(sym_objs)}
    cache: dict = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        cols = [np.broadcast_to(np.asarray(evaluate_expr(c, env, cache), dtype=np.float64),
                                (kin.shape[0],)) for c in code.coefficients]
    return np.stack(cols, axis=1)


# ---------------------------------------------------------------------------- the driver
PILOT_POINTS = 4096
LAMBDA_FACTORS = (16.0, 8.0, 4.0, 2.0, 1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125)
LAMBDA_RETRIES = 2
CROSS_CHECK_LAMBDA_RATIO = 0.5     # the second contour of ``cross_check``
_SERIES: dict = {}


@jax.jit
def _apply(f, u):
    return f(u)


def series_integrand(diagram: Diagram, hi: int, precision: str = "float64") -> SeriesIntegrand:
    """A :class:`SeriesIntegrand`, reused for the same polynomials, exponents and order (its
    jitted engine kernels are then reused too)."""
    key = (sympy.srepr(diagram.U), sympy.srepr(diagram.F),
           tuple(sympy.srepr(v) for v in diagram.variables),
           tuple(sympy.srepr(v) for v in diagram.powers), sympy.srepr(diagram.dimension),
           diagram.loops, int(hi), precision)
    if key not in _SERIES:
        if len(_SERIES) >= 16:
            _SERIES.pop(next(iter(_SERIES)))
        _SERIES[key] = SeriesIntegrand(diagram, hi, precision)
    return _SERIES[key]


def _pilot(si: SeriesIntegrand, f) -> np.ndarray:
    pts = jnp.asarray(kronecker_points(PILOT_POINTS, si.ndim), si.rdtype)
    return np.asarray(_apply(f, pts))


def _deformation_lambda(si: SeriesIntegrand, kin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Deformation strengths for one kinematic point, one per sector.  The candidates of
    sector s are lam = c / g_s, c = 16 .. 1/32, with g_s = max_k sum_m |c_m| deg_k(m) over the
    monomials of that sector's F~ (a bound of |dF~/dt_k| on the cube).  The pilot sample gives
    every sector's contribution apart; a candidate is eligible for a sector when its values
    there are finite (the deformation holds: Im F~(z) <= 0) for it and for the next larger
    one, and each sector takes its eligible candidate of smallest sample variance.  The
    sectors add, so the variance of the sum (what cubature and QMC pay for) is least when each
    sector's is; the orders' variances are weighed by the size of the total's coefficients.
    One strength for all sectors would be a compromise: sectors whose F~ has small gradients
    near its zeros want a strong deformation, others a weak one (their variance grows 10-100
    times away from their best).  Returns the strengths and the pilot sample of the whole
    integrand with them (None where no candidate holds)."""
    c = np.abs(si.F_coefficients(kin)[0])
    g = np.einsum("m,smk->sk", c, si.TF.astype(float)).max(axis=1)          # [S]
    lam0 = 1.0 / np.where(g > 0, g, 1.0)
    S, nf = len(si.sectors), len(LAMBDA_FACTORS)
    ok = np.zeros((S, nf), bool)
    var = np.full((S, nf, si.M), np.inf)
    means = []
    for i, fac in enumerate(LAMBDA_FACTORS):
        vals = _pilot(si, si.bind(kin, "deform", fac * lam0, per_sector=True))   # [S, n, M]
        ok[:, i] = np.all(np.isfinite(vals), axis=(1, 2))
        var[:, i] = vals.real.var(axis=1) + vals.imag.var(axis=1)
        if ok[:, i].all():
            means.append(np.abs(vals.mean(axis=1).sum(axis=0)))
    scale = np.median(np.array(means), axis=0) if means else np.ones(si.M)
    scale = np.maximum(scale, 1e-3 * max(float(scale.max()), 1e-300))
    cost = np.sum(np.where(np.isfinite(var), var, np.inf) / scale ** 2, axis=2)  # [S, nf]
    choice = np.empty(S, int)
    for s in range(S):
        eligible = [i for i in range(1, nf) if ok[s, i] and ok[s, i - 1]]
        valid = [i for i in range(nf) if ok[s, i]]
        choice[s] = min(eligible, key=lambda i: cost[s, i]) if eligible else \
            (valid[0] if valid else nf - 1)
    lam = np.array([LAMBDA_FACTORS[i] for i in choice]) * lam0
    if not np.all(ok[np.arange(S), choice]):      # no candidate holds: weaker than all
        lam = np.where(ok[np.arange(S), choice], lam, lam / 4)
        return lam, None
    # the whole integrand's sample at the chosen strengths: the same compiled function once
    # more (keeping every candidate's [S, n, M] sample instead would hold S * 10 of them)
    pilot = _pilot(si, si.bind(kin, "deform", lam, per_sector=True)).sum(axis=0)
    return lam, pilot


def _choose_method(s, ndim: int) -> str:
    """``s.method``, or for ``auto`` :func:`loopint.engines.choose_method` of a ``"series"``
    integrand (the subtracted sector integrands have logarithms at the faces)."""
    if s.method != "auto":
        return s.method
    return engines.choose_method(ndim, "series")


def _run(si: SeriesIntegrand, kin: np.ndarray, mode: str, s, lam=0.0, pilot=None,
         req=None) -> dict:
    """Integrate the bare series at the points ``kin`` (all of one region kind); ``pilot``:
    the integrand's pilot sample if the caller has it; ``req``: the derivatives to integrate
    with it (:mod:`loopint.derivatives`): the values and errors are ``[blocks, K, M]``
    (``[1, K, M]`` without derivatives)."""
    f, w = with_derivatives(req, si.bind(kin, mode, lam))
    K = kin.shape[0]
    B = blocks(req)
    atol = s.atol
    if atol <= 0:
        if req is not None or pilot is None:
            pilot = _pilot(si, f)
        # per point the largest coefficient of the value and of its (weighted) derivatives
        mean = np.abs(np.nan_to_num(pilot).mean(axis=0)).reshape(B, K, si.M)
        scale = float(np.min(mean.max(axis=(0, 2))))
        atol = max(s.rtol * ATOL_FRACTION * scale, 1e-300)
    method = _choose_method(s, si.ndim)
    engine = make_engine(method, s, si.ndim, stop_on_nonfinite=(mode == "deform"))
    r = engine.integrate(f, engine_domain(method, "decomposed", si.ndim), rtol=s.rtol, atol=atol,
                         max_evals=int(s.max_evals))
    value, error = split(r.value, B, K, w), split(r.error, B, K, w)
    if si.poles:
        error = _with_subtraction_bias(value, error, s.precision)
    return {"value": value, "error": error, "converged": bool(r.converged), "status": r.status,
            "evaluations": int(r.evaluations), "method": method, "atol": atol}


def _run_deformed(si: SeriesIntegrand, kin: np.ndarray, s, lam: np.ndarray, pilot=None,
                  req=None) -> tuple[dict, np.ndarray]:
    """:func:`_run` on the deformed contour with the strengths ``lam``, each a quarter as
    strong again (at most LAMBDA_RETRIES times, with ``contour_lambda = "auto"``) while the
    run meets NaN values; the outcome (``evaluations``: of every try) and the strengths of its
    last try."""
    spent = 0
    for _ in range(LAMBDA_RETRIES + 1):
        out = _run(si, kin, "deform", s, lam, pilot, req)
        pilot = None
        spent += out["evaluations"]
        if out["converged"] or "NaN" not in out["status"] or s.contour_lambda != "auto":
            break
        lam = lam * 0.25
    return dict(out, evaluations=spent), lam


def _with_subtraction_bias(value: np.ndarray, error: np.ndarray, precision: str) -> np.ndarray:
    """The errors ``[B, K, M]`` of a subtracted series raised to the bias of its clamp.

    The subtraction clamps its singular coordinates at t_c (:data:`_T_SUBTRACT`), which the
    engines' estimates do not see.  The coefficient m orders above the leading pole carries up
    to m powers of log t; on [0, t_c] the clamp replaces log^m t by log^m t_c, which moves the
    integral by about t_c m |log t_c|^(m-1)/m! of the integrand's size.  Each error (real and
    imaginary part, where the part is not zero) is at least that times the largest
    coefficient of its block and point (the one-off-shell massless triangle at s = -2,
    integrated to 1e-13: c_0 and c_1, m = 2 and 3, off by 1.0e-12 and 2.6e-11 with a largest
    coefficient of 1, against bounds of 2.8e-11 and 3.8e-10)."""
    tc = _T_SUBTRACT.get(precision, 1e-12)
    log_tc = abs(math.log(tc))
    orders = np.arange(value.shape[2])
    bias = np.array([tc * max(1.0, m * log_tc ** (m - 1) / math.factorial(m)) for m in orders])
    return _at_least(value, error, bias[None, None, :] * np.abs(value).max(axis=2, keepdims=True))


def _at_least(value: np.ndarray, error: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """``error`` with its real and imaginary parts raised to ``floor`` where the matching part
    of ``value`` is not zero (an exact zero, e.g. the imaginary part at a Euclidean point,
    keeps its zero error)."""
    with np.errstate(invalid="ignore"):
        return (np.where(value.real != 0, np.maximum(error.real, floor), error.real)
                + 1j * np.where(value.imag != 0, np.maximum(error.imag, floor), error.imag))


def _contour_cross_check(si: SeriesIntegrand, kin: np.ndarray, s, lam: np.ndarray,
                         out: dict, req=None) -> tuple[dict, dict]:
    """``cross_check`` at a physical point: the series again on a second contour, every
    sector's deformation half as strong.  By Cauchy's theorem both contours give the same
    coefficients; a difference of more than CROSS_CHECK_SIGMAS combined errors in any of them
    means that one of the contours is not valid (status ``methods disagree``); the
    derivatives (``req``) are compared too."""
    other = _run(si, kin, "deform", s, lam * CROSS_CHECK_LAMBDA_RATIO, req=req)
    diff = out["value"] - other["value"]
    sig = np.hypot(np.abs(out["error"]), np.abs(other["error"]))
    n = np.where(sig > 0, np.abs(diff) / np.where(sig > 0, sig, 1.0),
                 np.where(diff == 0, 0.0, np.inf))
    worst = float(np.max(n))
    check = {"lambda_ratio": CROSS_CHECK_LAMBDA_RATIO, "sigmas": worst,
             "largest_difference": float(np.max(np.abs(diff[0]))),     # of the value
             "evaluations": other["evaluations"]}
    out = dict(out)
    if not (out["converged"] and other["converged"]):     # a lower bound is no sigma
        out["converged"] = False
        out["status"] = ("cross-check incomplete: contour " + out["status"] +
                         "; second contour " + other["status"])
    elif worst > CROSS_CHECK_SIGMAS:
        out["converged"] = False
        out["status"] = (f"methods disagree: the contours lambda and lambda * "
                         f"{CROSS_CHECK_LAMBDA_RATIO:g} differ by {worst:.3g} combined errors "
                         f"(|difference| {check['largest_difference']:.3g})")
    return out, check


ROUNDOFF_ULPS = 4
"""The round-off floor of a Laurent coefficient's error, in units of the last place of the sum
of its terms' moduli (:func:`_times_prefactor`)."""


def _times_prefactor(pre_lo: int, pre: np.ndarray, lo: int, bare: np.ndarray, err: np.ndarray,
                     hi: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The product of the prefactor series and the bare series ([K, M] values and errors)
    up to eps^hi: (values [K, J], errors [K, J], first order).  Errors add in absolute value
    (the bare coefficients' errors are correlated: one integration), and never fall below
    the round-off of the sum, ``ROUNDOFF_ULPS`` units in the last place of the sum of its
    terms' moduli (a bare error estimate can be far below the float64 resolution of its
    value: a polynomial sector integrand is integrated exactly by the rule)."""
    first = pre_lo + lo
    J = hi - first + 1
    K = bare.shape[0]
    val = np.zeros((K, J), complex)
    er = np.zeros((K, J), complex)
    size = np.zeros((K, J))
    for j in range(J):
        for ip, p in enumerate(pre):
            mb = j - ip
            if 0 <= mb < bare.shape[1]:
                val[:, j] += p * bare[:, mb]
                er_re = abs(p.real) * err[:, mb].real + abs(p.imag) * err[:, mb].imag
                er_im = abs(p.real) * err[:, mb].imag + abs(p.imag) * err[:, mb].real
                er[:, j] += er_re + 1j * er_im
                size[:, j] += abs(p) * np.abs(bare[:, mb])
    return val, _at_least(val, er, ROUNDOFF_ULPS * np.finfo(np.float64).eps * size), first


TOLERANCE_RETRIES = 2
"""Integrations of the bare series again, to a tighter tolerance, when a Laurent coefficient
(the product with the prefactor) misses its tolerance (:func:`coefficient_excess`)."""


def coefficient_tolerances(val: np.ndarray, s) -> np.ndarray:
    """The tolerance of each Laurent coefficient ``val`` ([K, J]): max(atol, rtol |c_j|,
    ATOL_FRACTION rtol max_i |c_i|) per point."""
    mag = np.abs(val)
    return np.maximum(s.rtol * np.maximum(mag, ATOL_FRACTION * mag.max(axis=1, keepdims=True)),
                      s.atol)


def coefficient_excess(val: np.ndarray, err: np.ndarray, first: int, s) -> tuple[float, str]:
    """The largest ratio, over the points and orders of the coefficients ``val`` ([K, J],
    from eps^first) with errors ``err``, of an error (real or imaginary part) to the
    coefficient's tolerance (:func:`coefficient_tolerances`), and a sentence naming the worst
    coefficient (empty when every one is met)."""
    tol = coefficient_tolerances(val, s)
    worst = np.maximum(np.abs(err.real), np.abs(err.imag))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(tol > 0, worst / np.where(tol > 0, tol, 1.0),
                         np.where(worst > 0, np.inf, 0.0))
    k, j = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    excess = float(ratio[k, j])
    if excess <= 1.0:
        return excess, ""
    return excess, (f"the coefficient of eps^{first + j} has error {worst[k, j]:.3g} above its "
                    f"tolerance {tol[k, j]:.3g} (the prefactor's product cancels it below "
                    "its terms)")


def _series_group(diagram: Diagram, kin: np.ndarray, s, order: int, req=None) -> dict:
    """Every point of ``kin`` shares the supports of U and F (the caller grouped them).
    Values and errors ``[blocks, K, J]``: the coefficients, then their derivatives (``req``)."""
    pre_lo, _ = prefactor_series(diagram, s.prefactor, order)
    si = series_integrand(diagram, order - pre_lo, s.precision)
    first = pre_lo + si.lo
    if order < first:
        raise DiagramError(
            f"eps_order = {order} is below the leading pole: the series starts at "
            f"eps^{first} (give eps_order >= {first})", "regulator.eps_order")
    _, pre = prefactor_series(diagram, s.prefactor, order - si.lo)
    K = kin.shape[0]
    B = blocks(req)
    F_coefs = si.F_coefficients(kin)
    regions = classify_points(si.F_exponents, F_coefs)
    bare = np.zeros((B, K, si.M), complex)
    berr = np.zeros((B, K, si.M), complex)
    ok = np.zeros(K, bool)
    status = [""] * K
    # points on a one-loop Landau singularity (a massive normal threshold, which eps does
    # not regulate) are not integrated: coefficients NaN, the status says why
    at0 = {EPS: 0}
    tolerance = pinch_tolerance(float(sympy.sympify(diagram.dimension).subs(at0)),
                                [float(sympy.sympify(p).subs(at0)) for p in diagram.powers],
                                s.rtol)
    landau = one_loop_landau_points(diagram.loops, diagram.variables, si.F_exponents, F_coefs,
                                    tolerance)
    for k, why in landau.items():
        bare[:, k] = berr[:, k] = complex(np.nan, np.nan)
        status[k] = why
    methods, lams, evaluations, checks = set(), {}, 0, {}
    todo = [k for k in range(K) if k not in landau]
    batches = [("real", [k for k in todo if regions[k].kind == "euclidean"]),
               ("complex", [k for k in todo if regions[k].kind == "negative"])]
    batches += [("deform", [k]) for k in todo if regions[k].kind == "physical"]
    for mode, idx in batches:
        if not idx:
            continue
        lam = pilot = None
        if mode == "deform":
            if s.contour_lambda == "auto":
                lam, pilot = _deformation_lambda(si, kin[idx])
            else:
                lam = np.full(len(si.sectors), float(s.contour_lambda))
        # the engine meets the tolerance on the bare series; the prefactor's product can
        # cancel a coefficient below its terms, so the products are checked and the bare
        # series integrated again to a tighter tolerance where they fall short
        s_run, spent = s, 0
        for attempt in range(TOLERANCE_RETRIES + 1):
            if mode == "deform":
                out, lam = _run_deformed(si, kin[idx], s_run, lam, pilot, req)
                pilot = None
            else:
                out = _run(si, kin[idx], mode, s_run, req=req)
            spent += out["evaluations"]
            if not out["converged"]:
                break
            products = _times_prefactor(pre_lo, pre, si.lo, out["value"][0], out["error"][0],
                                        order)
            excess, why = coefficient_excess(*products, s)
            if excess <= 1.0:
                break
            if attempt == TOLERANCE_RETRIES or spent >= s.max_evals:
                out["converged"] = False
                kind = (engines.base.MAX_EVALS if spent >= s.max_evals
                        else "tolerance not met")
                out["status"] = (f"{kind}: {why}, with every coefficient of the bare series "
                                 f"integrated to {s_run.atol or s_run.rtol:.3g} "
                                 f"({spent} evaluations)")
                break
            # an error e on every bare coefficient gives at most e sum_i |p_i| on a product:
            # the bare series again, to an absolute tolerance that meets the smallest one
            bound = float(np.min(coefficient_tolerances(products[0], s)))
            bound /= 2.0 ** (attempt + 1) * max(float(np.sum(np.abs(pre))), 1.0)
            s_run = dataclasses.replace(s_run, rtol=0.0, atol=max(bound, 1e-300),
                                        max_evals=s.max_evals - spent)
        evaluations += spent
        if mode == "deform":
            lams[int(idx[0])] = [float(v) for v in lam]
            if s.cross_check:
                out, checks[int(idx[0])] = _contour_cross_check(si, kin[idx], s_run, lam, out,
                                                                req)
                evaluations += checks[int(idx[0])]["evaluations"]
        methods.add(out["method"])
        bare[:, idx], berr[:, idx] = out["value"], out["error"]
        ok[idx] = out["converged"]
        for k in idx:
            status[k] = out["status"]
    parts = [_times_prefactor(pre_lo, pre, si.lo, bare[b], berr[b], order) for b in range(B)]
    val = np.stack([p[0] for p in parts])
    err = np.stack([p[1] for p in parts])
    first = parts[0][2]
    return {"value": val, "error": err, "first": first, "converged": ok, "status": status,
            "region": [r.kind for r in regions], "methods": methods, "evaluations": evaluations,
            "info": {"sectors": len(si.sectors), "sector_poles": si.poles,
                     "prefactor_leading_order": pre_lo, "lambda": lams,
                     "variables": si.ndim, **({"cross_check": checks} if s.cross_check else {})}}


def _without_derivatives(part: dict, blocks: int, why: str) -> dict:
    """A group of a batch whose derivatives cannot be taken (``why``): its coefficients, the
    derivatives NaN, every point not converged."""
    pad = np.full((blocks - 1,) + part["value"].shape[1:], np.nan + 0j)
    return dict(part, value=np.concatenate([part["value"], pad]),
                error=np.concatenate([part["error"], pad]),
                converged=np.zeros_like(part["converged"]),
                status=[why] * len(part["status"]))


def compute_series(problem, s, progress, t_start: float):
    """:func:`loopint.compute` for a regulated diagram: the Laurent coefficients."""
    diagram = problem.diagram
    batched = any(np.ndim(v) for v in problem.kinematics.values())
    order = 0 if s.eps_order is None else s.eps_order
    if diagram.tadpole_masses() is not None:
        return _assemble_series(problem, s, [(np.arange(problem.n_points),
                                              _tadpole_group(diagram, problem, s, order))],
                                order, batched, None, progress, t_start)
    probe = integrand(diagram, "simplex", "none", "float64")
    kin = probe.kinematics_array(problem.kinematics)
    req = request(s.derivatives, s.derivative_order, probe.symbols)
    B = blocks(req)
    parts = []
    for keep_U, keep_F, idx in support_groups(probe, kin):
        keep_U, keep_F, why = supports_for(probe, keep_U, keep_F, kin[idx], req, point_text)
        if why is not None and not batched:
            raise SpecError(why)
        red = reduced(diagram, probe, keep_U, keep_F, kin[idx])
        part = _series_group(red, kin[idx], s, order, None if why else req)
        parts.append((idx, part if why is None else _without_derivatives(part, B, why)))
    return _assemble_series(problem, s, parts, order, batched, req, progress, t_start)


def _tadpole_gammas(diagram: Diagram):
    """For a product of tadpoles (:meth:`Diagram.tadpole_masses`): the Gamma functions of its
    closed form over pySecDec's prefactor, prod_i Gamma(nu_i - D/2) / Gamma(nu - L D/2) (the
    signs (-1)^nu cancel), and the leading order of their series in eps (below 0 for several
    loops: each factor has its pole, the prefactor one)."""
    half_d = sympy.expand(diagram.dimension / 2)
    gammas = (sympy.Mul(*[sympy.gamma(sympy.expand(nu) - half_d) for nu in diagram.powers])
              / sympy.gamma(diagram.F_exponent))
    return gammas, _order(sympy.expand(gammas.as_leading_term(EPS)))


def _tadpole_group(diagram: Diagram, problem, s, order: int) -> dict:
    """A product of one-propagator loops (tadpoles, :meth:`Diagram.tadpole_masses`; one
    propagator alone included) in closed form, as :func:`_series_group` returns a group:
    prod_i (-1)^nu_i Gamma(nu_i - D/2)/Gamma(nu_i) (m_i^2 - i0)^(D/2 - nu_i), divided by the
    prefactor's (pySecDec's) expression for the bare parametric integral and expanded in eps
    (for one propagator, U(1)^a (F(1) - i0)^(-b): the delta function leaves x = 1).  Exact up
    to round-off (error: the floor of :func:`_times_prefactor`)."""
    if s.derivatives:
        raise DiagramError("derivatives of a product of one-propagator integrals (tadpoles) "
                           "are not available: differentiate its closed form", "derivatives")
    masses = diagram.tadpole_masses()
    syms = tuple(diagram.kinematic_symbols)
    kin = kinematics_array(syms, problem.kinematics)
    K = kin.shape[0]
    by_name = {str(v): v for m in masses for v in m.free_symbols}
    half_d = sympy.expand(diagram.dimension / 2)
    nus = [sympy.expand(p) for p in diagram.powers]
    gammas, lo = _tadpole_gammas(diagram)
    pre_lo, pre = prefactor_series(diagram, s.prefactor, order - lo)
    if order < pre_lo + lo:
        raise DiagramError(f"eps_order = {order} is below the leading pole: the series starts "
                           f"at eps^{pre_lo + lo} (give eps_order >= {pre_lo + lo})",
                           "regulator.eps_order")
    M = order - pre_lo - lo + 1
    gser = sympy.expand(sympy.series(gammas, EPS, 0, lo + M).removeO())
    g = np.array([complex(sympy.N(gser.coeff(EPS, lo + j), 30)) for j in range(M)])
    # (m_i^2 - i0)^(D/2 - nu_i) = exp(sum_i (c_i + d_i eps) log(m_i^2 - i0)): D/2 - nu_i is
    # linear in eps (the powers are)
    lin = [sympy.Poly(half_d - nu, EPS) for nu in nus]
    if any(q.degree() > 1 for q in lin):
        raise DiagramError("powers of a product of tadpoles must be linear in eps", "powers")
    c0 = np.array([complex(q.coeff_monomial(1)) for q in lin])
    c1 = np.array([complex(q.coeff_monomial(EPS)) for q in lin])
    bare = np.zeros((K, M), complex)
    region, status = [], ["converged"] * K
    for k in range(K):
        at = {by_name[n]: sympy.Float(kin[k, i], 30) for i, n in enumerate(syms)
              if n in by_name}
        msq = [complex(m.subs(at)) for m in masses]
        region.append("euclidean" if all(m.real >= 0 for m in msq) else "negative")
        if any(m == 0 for m in msq):
            bare[k] = np.nan
            status[k] = ("scaleless at this point (a massless tadpole): zero in dimensional "
                         "regularization, not computed (value NaN)")
            continue
        # (-1)^nu of the closed form and of the prefactor cancel
        logs = np.array([np.log(abs(m)) - (1j * np.pi if m.real < 0 else 0) for m in msq])
        a, b = complex(c0 @ logs), complex(c1 @ logs)
        e = np.exp(a) * np.array([b ** n / math.factorial(n) for n in range(M)])
        bare[k] = [sum(g[i] * e[j - i] for i in range(j + 1)) for j in range(M)]
    val, err, first = _times_prefactor(pre_lo, pre, lo, bare, np.zeros_like(bare), order)
    return {"value": val[None], "error": err[None], "first": first,
            "converged": np.array([st == "converged" for st in status]), "status": status,
            "region": region, "methods": {"closed form"}, "evaluations": 0,
            "info": {"sectors": 0, "sector_poles": 0, "prefactor_leading_order": pre_lo,
                     "lambda": {}, "variables": 0}}


def _assemble_series(problem, s, parts: list, order: int, batched: bool, req, progress,
                     t_start: float):
    """The Result of a regulated integral from its groups of points (``parts``: ``[(indices,
    group)]``, each group as :func:`_series_group` returns it)."""
    diagram = problem.diagram
    K = problem.n_points
    B = blocks(req)
    first = min(p["first"] for _, p in parts)
    J = order - first + 1
    val = np.zeros((B, K, J), complex)
    err = np.zeros((B, K, J), complex)
    ok = np.zeros(K, bool)
    status, region = [""] * K, [""] * K
    methods, evaluations, info = set(), 0, []
    for idx, p in parts:
        off = p["first"] - first
        val[:, idx, off:] = p["value"]
        err[:, idx, off:] = p["error"]
        ok[idx] = p["converged"]
        for i, k in enumerate(idx):
            status[k] = p["status"][i]
            region[k] = p["region"][i]
        methods |= p["methods"]
        evaluations += p["evaluations"]
        info.append({"points": [int(k) for k in idx], **p["info"]})
    converged = bool(np.all(ok))
    st = points_status(ok, [x for x, y in zip(status, ok) if not y], batched)
    pick = (lambda a: a) if batched else (lambda a: complex(a[0]))
    main = min(0, order)
    series = [({first + j: pick(val[b, :, j]) for j in range(J)},
               {first + j: pick(err[b, :, j]) for j in range(J)}) for b in range(B)]
    coefficients, errors = series[0]
    derivatives = None if req is None else {
        label: Derivative(c[main], e[main], c, e) for label, (c, e) in zip(req.labels, series[1:])}
    seconds = time.perf_counter() - t_start
    if progress:
        progress({"stage": "series", "value": val[0, :, main - first],
                  "error": err[0, :, main - first], "evaluations": evaluations,
                  "seconds": seconds})
    return Result(
        value=coefficients[main], error=errors[main], converged=converged, status=st,
        method="+".join(sorted(methods)), prefactor=s.prefactor, delta=[],
        evaluations=int(evaluations), seconds=seconds, device=device_name(),
        diagram=diagram.name, kinematics={k: jsonable(v) for k, v in problem.kinematics.items()},
        settings=s.to_dict(), region=region if batched else region[0],
        info={"series": info if batched else info[0], "eps_order": order,
              "point_converged": ok.tolist() if batched else None,
              "point_status": list(status) if batched else None, "seconds_this_run": seconds,
              **({"cross_check": "nothing to cross-check: no physical point (F has one sign "
                                 "on the integration domain at every point)"}
                 if s.cross_check and not any(i.get("cross_check") for i in info) else {})},
        coefficients=coefficients, coefficient_errors=errors, derivatives=derivatives)


def _reduced_at(diagram: Diagram, kinematics) -> tuple[Diagram, np.ndarray | None]:
    """The diagram with the monomials that vanish at a single kinematic point dropped, and
    that point as ``kin[1, s]`` (None without kinematics: generic supports)."""
    if kinematics is None:
        return diagram, None
    probe = integrand(diagram, "simplex", "none", "float64")
    kin = probe.kinematics_array(kinematics)
    keep_U, keep_F, _ = support_groups(probe, kin)[0]
    return reduced(diagram, probe, keep_U, keep_F, kin), kin


def structure(diagram: Diagram, kinematics: Mapping[str, float] | None = None,
              eps_order: int = 0, convention: str = "pysecdec") -> str:
    """The pole structure of a regulated integral (``loopint show``): the sectors, the
    variables whose blow-ups carry poles, and the leading pole of the series."""
    if diagram.tadpole_masses() is not None:
        _, lo = _tadpole_gammas(diagram)
        pre_lo, _ = prefactor_series(diagram, convention, eps_order - lo)
        return (f"leading pole eps^{pre_lo + lo} ({diagram.N} one-propagator loop"
                f"{'s' if diagram.N > 1 else ''}: a closed form)")
    red, kin = _reduced_at(diagram, kinematics)
    pre_lo, _ = prefactor_series(red, convention, eps_order)
    si = series_integrand(red, eps_order - pre_lo)
    poles = np.vectorize(lambda e: e == -1.0)(si.E)
    per = poles.sum(axis=1)
    lines = [f"leading pole eps^{pre_lo + si.lo} at most (prefactor from eps^{pre_lo}, the "
             f"parametric integral from eps^{si.lo})",
             f"{len(si.sectors)} sectors of {si.ndim} variables; sectors with 0, 1, 2, ... "
             f"poles: {np.bincount(per).tolist()}"]
    if kin is None:
        lines.append("(generic kinematics: a point whose masses or legs vanish can have more)")
    return "\n".join(lines)
