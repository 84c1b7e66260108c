"""Lowering: a :class:`~loopint.diagram.Diagram` to one jitted, batched JAX integrand.

The parametric integral in pySecDec's normalization (:mod:`loopint.diagram`; the prefactor
excluded: the driver applies it),

    I(delta) = int_{x >= 0} delta(1 - sum x) prod_j x_j^(nu_j - 1) U^a / (F - i delta U S)^b,
    a = nu - (L+1) D/2,  b = nu - L D/2,  S = sum_j x_j,

is turned into ``f(u[n, d], kin[K, s], delta[R]) -> values[n, K*R]`` over a cube or simplex
of dimension d = N - 1.  Kinematics (K points, s symbols) and regulators (R values) are runtime
arrays: a new point or delta never recompiles, and all K*R components share one evaluation of
the monomials of U and F.  Component ``k*R + r`` belongs to kinematic point k and delta r.

S = 1 on the simplex, so the regulator is the seeds' F - i delta U there; the factor S makes
F - i delta U S homogeneous of degree L+1, which keeps the projective (primary-sector) split
exact.

Code generation: U and F are expanded, their monomials in x shared through sympy's common
subexpression elimination, and their coefficients (polynomials in the kinematic symbols)
evaluated once per kinematic point.  The sympy trees are walked at trace time into jax.numpy
operations (no string code, no exec), and XLA fuses the straight-line result into one kernel.

Domains (``domain=``):
  * ``"sequential"``: the map of seed 000 appendix C, x_1 = u_1, x_k = (1 - x_1 - ... -
    x_{k-1}) u_k, x_N = 1 - sum; Jacobian prod_{k=1}^{N-2} (1 - x_1 - ... - x_k).
  * ``"sectors"``: the primary-sector (Cheng-Wu) split: I = sum_l int_{[0,1]^{N-1}} f|_{x_l = 1},
    exact because the integrand is homogeneous of degree -N; evaluated as one cube integrand.
  * ``"decomposed"``: the primary sectors split further by iterated sector decomposition of
    U and F (:mod:`loopint.sectors`), so that the integrand is bounded at the boundary (the
    singularities where U vanishes, at subloops of multi-loop diagrams, are blown up);
    evaluated as one cube integrand, a scan over the sectors.
  * ``"simplex"``: x_1..x_{N-1} are the simplex coordinates themselves (sum <= 1), x_N = 1 - sum,
    Jacobian 1: for the iterated engine, which integrates with variable limits.
The deformed contour (a second method for the physical region, over the primary or the
decomposed sectors) is :class:`loopint.contour.ContourIntegrand`, an Integrand that can also be
bound there.

Boundary transformations (``transform=``, cube domains only): ``"none"``, ``"sidi<m>"``,
``"korobov<r>"``, ``"baker"`` (see :mod:`loopint.engines.periodize`), applied per axis with
their Jacobian before the domain map.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import sympy

from . import precision as _precision
from .diagram import Diagram
from .errors import DiagramError
from .engines import periodize
from .maps import simplex_columns_from_cube

DOMAINS = ("sequential", "sectors", "decomposed", "simplex")

# Cube coordinates are clamped to at least this in the decomposed domain (per precision), so
# that the products t^A stay far from underflow: |F|^2 of a monomial t^m of degree m <= 7
# stays a normal number.  The integrand is bounded there, so the change is below the
# clamped measure (1e-20 resp. 1e-6 per face) times its size.
_T_MIN = {"float64": 1e-20, "float32": 1e-6}


# Singular coordinates of the decomposed domain (sector exponent -1 < e < 0) are clamped at
# this value instead, per precision: their subtracted integrand is bounded, so the change is
# O(t_c) relative, and the cancellation between the subtraction terms stays above round-off
# (its noise is t^e times the unit round-off).
_T_SUBTRACT = {"float64": 1e-12, "float32": 1e-5}


def _subtraction_table(e: np.ndarray) -> dict | None:
    """Per sector the singular coordinates (-1 < e < 0) as padded slots: ``index[S, k]``,
    ``valid[S, k]`` and ``exponent[S, k]`` (k = the most of one sector); None if none."""
    singular = (e < 0) & (e > -1)
    if not np.any(singular):
        return None
    kmax = int(singular.sum(axis=1).max())
    S = e.shape[0]
    index = np.zeros((S, kmax), np.int64)
    valid = np.zeros((S, kmax), bool)
    expo = np.full((S, kmax), -0.5)
    for s in range(S):
        cols = np.nonzero(singular[s])[0]
        index[s, :len(cols)] = cols
        valid[s, :len(cols)] = True
        expo[s, :len(cols)] = e[s, cols]
    return {"index": index, "valid": valid, "exponent": expo}


def evaluate_expr(expr, env: dict, cache: dict):
    """Evaluate a sympy expression tree with jax.numpy on the arrays in ``env``."""
    key = expr
    if key in cache:
        return cache[key]
    if expr.is_Symbol:
        out = env[expr]
    elif expr.is_Integer or expr.is_Rational or expr.is_Float:
        out = float(expr)
    elif expr.is_Add:
        terms = [evaluate_expr(a, env, cache) for a in expr.args]
        out = terms[0]
        for t in terms[1:]:
            out = out + t
    elif expr.is_Mul:
        factors = [evaluate_expr(a, env, cache) for a in expr.args]
        out = factors[0]
        for t in factors[1:]:
            out = out * t
    elif expr.is_Pow:
        base = evaluate_expr(expr.base, env, cache)
        e = expr.exp
        if e.is_Integer and 0 < int(e) <= 16:
            out = ipow(base, int(e))
        elif e.is_Integer and -16 <= int(e) < 0:
            out = 1.0 / ipow(base, -int(e))
        elif e == sympy.Rational(1, 2):
            out = jnp.sqrt(base)
        else:
            out = base ** float(e)
    else:
        raise TypeError(f"cannot lower {type(expr).__name__}: {expr}")
    cache[key] = out
    return out


def ipow(b, k: int):
    """b**k by repeated squaring (exact op count, fuses well)."""
    result = None
    while k:
        if k & 1:
            result = b if result is None else result * b
        k >>= 1
        if k:
            b = b * b
    return result


@dataclass(frozen=True)
class PolyCode:
    """A polynomial in x with kinematic coefficients, in two views.

    * monomial view (for classification): ``exponents[T, N]`` and one sympy coefficient (in the
      kinematic symbols) per monomial, with its additive terms (``coefficient_terms``);
    * evaluation view: P = sum_g kappa_g(kin) P_g(x), with kappa_g the distinct monomials in the
      kinematic symbols and P_g(x) in Horner form, so that each P_g costs few multiplications and
      all share subexpressions (CSE across U and F, done by :class:`Integrand`).
    """

    exponents: np.ndarray
    coefficients: tuple
    kin_monomials: tuple
    horner: tuple
    coefficient_terms: tuple


def poly_code(P: sympy.Expr, xs: Sequence[sympy.Symbol]) -> PolyCode:
    poly = sympy.Poly(sympy.expand(P), *xs)
    expo, coefs, terms = [], [], []
    groups: dict = {}
    for m, c in poly.terms():
        expo.append(m)
        coefs.append(c)
        terms.append(sympy.Add.make_args(sympy.expand(c)))
        xmono = sympy.Mul(*[x**k for x, k in zip(xs, m)])
        for term in terms[-1]:
            num, kpart = term.as_coeff_Mul()
            groups[kpart] = groups.get(kpart, 0) + num * xmono
    keys = list(groups)
    hs = tuple(sympy.horner(groups[k], *xs) if len(xs) else groups[k] for k in keys)
    return PolyCode(np.array(expo, dtype=float), tuple(coefs), tuple(keys), hs, tuple(terms))


class PolySet:
    """Several polynomials in x with kinematic coefficients, generated together.

    Each polynomial is split by :func:`poly_code` into kinematic monomials times Horner
    forms in x, and one sympy CSE runs over all the Horner forms, so that the set shares its
    monomials in x (U and F; or U, F and their derivatives for the contour deformation).
    Calling it on N columns ``[n]`` (real or complex) and ``kin[K, s]`` returns one ``[n, K]``
    array per polynomial.
    """

    def __init__(self, polys: Sequence[sympy.Expr], xs: Sequence[sympy.Symbol],
                 kin_symbols: Sequence[sympy.Symbol]):
        self.xs = tuple(xs)
        self.kin_symbols = tuple(kin_symbols)
        self.codes = tuple(poly_code(P, self.xs) for P in polys)
        flat = [h for c in self.codes for h in c.horner]
        repl, reduced = sympy.cse(flat, symbols=sympy.numbered_symbols("_cse"),
                                  optimizations="basic")
        self.repl = tuple(repl)
        exprs, i = [], 0
        for c in self.codes:
            exprs.append(tuple(reduced[i:i + len(c.horner)]))
            i += len(c.horner)
        self.exprs = tuple(exprs)

    def __call__(self, cols, kin, rdtype, flat: bool = False):
        """``flat`` (one kinematic point, K = 1): return ``[n]`` arrays instead of ``[n, 1]``.
        Keeping the whole chain rank 1 lets XLA fuse it with the random numbers and the sum
        of an engine; a rank change in the middle makes it materialize intermediates."""
        env = dict(zip(self.xs, cols))
        cache: dict = {}
        for sym, sub in self.repl:
            env[sym] = evaluate_expr(sub, env, cache)
        kenv = {s: kin[:, i] for i, s in enumerate(self.kin_symbols)}
        kcache: dict = {}
        K = kin.shape[0]
        out = []
        for code, exprs in zip(self.codes, self.exprs):
            total = None
            for kappa, e in zip(code.kin_monomials, exprs):
                p = evaluate_expr(e, env, cache)
                k = jnp.broadcast_to(jnp.asarray(evaluate_expr(kappa, kenv, kcache), rdtype), (K,))
                if flat:
                    term = p if kappa == 1 else p * k[0]
                else:
                    term = (p[:, None] if jnp.ndim(p) else p) * k[None, :]
                total = term if total is None else total + term
            if total is None:                      # the zero polynomial
                total = jnp.zeros((jnp.shape(cols[0])[0],) + (() if flat else (K,)), rdtype)
            elif flat and jnp.ndim(total) == 0:    # a constant polynomial
                total = jnp.full(jnp.shape(cols[0])[:1], total, rdtype)
            out.append(total)
        return out


class Integrand:
    """A lowered diagram: the bare regulated parametric integrand as a JAX function.

    Args:
        diagram: the :class:`Diagram`.
        domain: ``"sequential"`` (default), ``"sectors"``, ``"decomposed"`` or ``"simplex"``
            (see module doc).
        transform: boundary transformation name for cube domains (default ``"none"``).
        precision: ``"float64"`` (default; complex128) or ``"float32"`` (complex64).

    Call ``integrand(u, kin, delta)`` with ``u[n, N-1]``, ``kin[K, len(symbols)]`` (columns in
    the order of :attr:`symbols`) and ``delta[R]``; it returns ``[n, K*R]`` complex values, or
    real ones from :meth:`real_call` (valid when every delta is 0 and F > 0).
    """

    def __init__(self, diagram: Diagram, *, domain: str = "sequential", transform: str = "none",
                 precision: str = "float64"):
        if domain not in DOMAINS:
            raise ValueError(f"domain must be one of {DOMAINS}, got {domain!r}")
        if domain == "simplex" and transform not in ("none", None):
            raise ValueError("boundary transforms apply to cube domains, not to 'simplex'")
        self.diagram = diagram
        self.domain = domain
        self.transform = periodize.get(transform or "none")
        self.precision = precision
        self.rdtype = _precision.real_dtype(precision)
        self.cdtype = _precision.complex_dtype(precision)
        self.xs = tuple(diagram.variables)
        self.N = len(self.xs)
        self.ndim = self.N - 1
        if self.ndim < 1:
            key = {"graph": "internal_lines", "propagators": "propagators"}.get(diagram.form, "U")
            raise DiagramError(
                "one propagator (a tadpole): its Feynman-parameter integral has no variables "
                "to integrate; its closed form in this normalization is (-1)^nu "
                "Gamma(nu - D/2)/Gamma(nu) (m^2)^(D/2 - nu), which loopint evaluates as a "
                "Laurent series in eps (give dimension = \"4 - 2*eps\")", key)
        self.symbols = tuple(diagram.kinematic_symbols)
        self._sym_objs = tuple(sympy.Symbol(s, real=True) for s in self.symbols)
        self.a = sympy.nsimplify(diagram.U_exponent)
        self.b = sympy.nsimplify(diagram.F_exponent)
        self._UFset = PolySet([diagram.U, diagram.F], self.xs, self._sym_objs)
        self._U, self._F = self._UFset.codes
        self._nu_minus_1 = tuple(sympy.nsimplify(p - 1) for p in diagram.powers)
        self.sectors = None
        if domain == "decomposed":
            from .sectors import decompose, monomial_maps, sector_exponents
            supports = [self._U.exponents, self._F.exponents]
            self.sectors = decompose(supports)
            self._maps = monomial_maps(self.sectors, self.N)
            e, _, _ = sector_exponents(supports, *self._maps, diagram.powers, self.a, self.b)
            self.sector_exponents = e.astype(float)
            self._subtractions = _subtraction_table(self.sector_exponents)
        self.call = jax.jit(self._evaluate)
        self.real_call = jax.jit(partial(self._evaluate, real=True))

    # ------------------------------------------------------------------ pieces
    def kinematics_array(self, kinematics: Mapping[str, object]) -> np.ndarray:
        """``kin[K, s]`` from a mapping of symbol -> number or 1-D array (broadcast to K)."""
        return kinematics_array(self.symbols, kinematics)

    def _kin(self, kinematics) -> np.ndarray:
        """``kin[K, s]`` as given, or from a mapping (:meth:`kinematics_array`)."""
        if isinstance(kinematics, np.ndarray):
            return kinematics
        return self.kinematics_array(kinematics)

    def F_coefficients(self, kin) -> np.ndarray:
        """Coefficients of F's monomials (``F_exponents``) at each kinematic point: [K, T]."""
        return self._coefficients(self._F, kin)

    def U_coefficients(self, kin) -> np.ndarray:
        """Coefficients of U's monomials (``U_exponents``) at each kinematic point: [K, T]."""
        return self._coefficients(self._U, kin)

    def coefficient_scales(self, which: str, kin) -> np.ndarray:
        """Per kinematic point and monomial of ``which`` ("U" or "F"), the sum of the moduli
        of the terms of its coefficient in the kinematic symbols: [K, T], the size against
        which a coefficient that cancels to round-off is told from a small one
        (:data:`loopint.divergence.ZERO_COEFFICIENT`)."""
        code = self._U if which == "U" else self._F
        kin = np.asarray(kin, dtype=np.float64)
        env = {s: kin[:, i] for i, s in enumerate(self._sym_objs)}
        cache: dict = {}
        with np.errstate(divide="ignore", invalid="ignore"):
            cols = [sum(np.abs(np.broadcast_to(np.asarray(evaluate_expr(t, env, cache),
                                                          dtype=np.float64), (kin.shape[0],)))
                        for t in terms)
                    for terms in code.coefficient_terms]
        return np.stack(cols, axis=1)

    def _coefficients(self, code: PolyCode, kin) -> np.ndarray:
        kin = np.asarray(kin, dtype=np.float64)
        env = {s: kin[:, i] for i, s in enumerate(self._sym_objs)}
        cache: dict = {}
        with np.errstate(divide="ignore", invalid="ignore"):   # reported by the callers
            cols = [np.broadcast_to(np.asarray(evaluate_expr(c, env, cache), dtype=np.float64),
                                    (kin.shape[0],)) for c in code.coefficients]
        return np.stack(cols, axis=1)

    @property
    def F_exponents(self) -> np.ndarray:
        return self._F.exponents

    @property
    def U_exponents(self) -> np.ndarray:
        return self._U.exponents

    def _UF(self, cols, kin, flat: bool = False):
        """U and F at points given as N columns ``[n]`` for kinematic points kin[K, s]: [n, K]
        each (``flat``, for K = 1: [n] each)."""
        return self._UFset(cols, kin, self.rdtype, flat)

    def _transform(self, u):
        """Boundary transformation of cube coordinates: (t, weight or None)."""
        if self.domain == "simplex" or self.transform.name == "none":
            return u, None
        t, w = self.transform.apply(u)
        # the baker's map is measure preserving: its Jacobian is 1 (no weight to multiply)
        return t, (None if self.transform.name == "baker" else w)

    def _complement(self, u):
        """1 - phi(u) without cancellation near u = 1 (for the sequential map's remainders).

        Sidi's and Korobov's transforms are symmetric, phi(1 - u) = 1 - phi(u), and evaluate
        phi on the nearer half, so phi(1 - u) keeps full relative accuracy; for the baker's
        map 1 - phi(u) = |2u - 1|.  Unknown transforms fall back to the subtraction.
        """
        name = self.transform.name
        if name == "none":
            return None       # the map forms 1 - u column by column
        if name == "baker":
            return jnp.abs(2.0 * u - 1.0)
        if name.startswith(("sidi", "korobov")):
            return self.transform.phi(1.0 - u)
        return None

    def to_simplex(self, u):
        """Map cube/simplex coordinates ``u[n, N-1]`` to ``(x[n, N], weight[n])``."""
        cols, jac = self._columns(jnp.asarray(u, self.rdtype))
        return jnp.stack(cols, axis=1), jac

    def _columns(self, u):
        """The N simplex coordinates as a list of [n] arrays, and the weight [n]."""
        t, w = self._transform(u)
        if self.domain == "sequential":
            cols, jac = simplex_columns_from_cube(t, self._complement(u))
        elif self.domain == "simplex":
            cols = [t[:, i] for i in range(self.ndim)]
            last = 1.0 - cols[0]
            for c in cols[1:]:
                last = last - c
            cols.append(last)
            jac = None
        else:  # sectors: handled in _evaluate (one evaluation per sector and point)
            raise RuntimeError(f"to_simplex is not defined for the {self.domain} domain")
        if w is not None:
            jac = w if jac is None else jac * w
        if jac is None:
            jac = jnp.ones(t.shape[:1], self.rdtype)
        return cols, jac

    def _at(self, cols, kin, delta, real: bool, weight=None):
        """Bare integrand at points given as N columns (any scale for sectors) -> [n, K*R].

        ``weight[n]`` (Jacobian of the map, optional) multiplies the real prefactor
        ``x^(nu-1) U^a`` before the delta axis is formed, so that the tail stays one cheap
        elementwise chain that XLA fuses with the polynomials.
        """
        # one kinematic point and one delta: the whole chain on [n] arrays, [n, 1] at the very
        # end (see PolySet: a rank change in the middle costs the fusion)
        R = delta.shape[0]
        flat = kin.shape[0] == 1 and R == 1
        U, F = self._UF(cols, kin, flat)                                   # [n, K] or [n]
        scale = self._x_powers(cols, weight)
        a, b = self.a, self.b
        Ua = power_real(U, a)
        if scale is not None:
            Ua = Ua * (scale if flat else scale[:, None])
        if flat:
            if real:
                return (Ua / power_real(F, b))[:, None]
            z = jax.lax.complex(F, -(delta[0] * U * sum(cols[1:], cols[0])))
            return (Ua * power_complex(z, b))[:, None]
        if real:
            val = Ua / power_real(F, b)                                    # [n, K]
            if R == 1:
                return val
            return jnp.broadcast_to(val[:, :, None], val.shape + (R,)).reshape(val.shape[0], -1)
        S = sum(cols[1:], cols[0])
        im = -(delta[None, None, :] * U[:, :, None] * jnp.reshape(S, (-1, 1, 1)))
        z = jax.lax.complex(jnp.broadcast_to(F[:, :, None], im.shape), im)
        val = Ua[:, :, None] * power_complex(z, b)
        return val.reshape(val.shape[0], -1)

    def _x_powers(self, cols, scale=None):
        """``scale`` times prod_j x_j^(nu_j - 1) over the columns (real or complex); None when
        both are trivial (unit powers, no scale)."""
        for j, e in enumerate(self._nu_minus_1):
            if e != 0:
                f = ipow(cols[j], int(e)) if e.is_Integer and e > 0 else cols[j] ** float(e)
                scale = f if scale is None else scale * f
        return scale

    def _evaluate(self, kin, delta, u, real: bool = False):
        kin = jnp.asarray(kin, self.rdtype)
        delta = jnp.asarray(delta, self.rdtype)
        u = jnp.asarray(u, self.rdtype)
        if self.domain == "sectors":
            t, w = self._transform(u)
            total = None
            for l in range(self.N):
                cols = [t[:, i] for i in range(self.ndim)]
                cols.insert(l, jnp.ones(t.shape[:1], self.rdtype))
                v = self._at(cols, kin, delta, real, w)
                total = v if total is None else total + v
            return total
        if self.domain == "decomposed":
            return self._decomposed(u, kin, delta, real)
        cols, jac = self._columns(u)
        return self._at(cols, kin, delta, real, jac)

    def _decomposed(self, u, kin, delta, real: bool):
        """Sum over the sectors of :mod:`loopint.sectors` at cube points ``u``: one traced
        body scanned over the sectors (the program does not grow with their number), each
        a monomial map x = t^A with Jacobian t^J.  The powers t_i^k (k <= the largest
        exponent) are formed once per point and picked per sector with selects: exact
        products, no exp/log.

        Sectors whose integrand behaves as t_i^e G(t) with -1 < e < 0 (integrable
        singularities: non-integer D or powers, :mod:`loopint.divergence`) are integrated
        after subtraction at the face, one factor per singular coordinate:

            int_0^1 t^e G(t) dt = int_0^1 [t^e (G(t) - G(0)) + G(0) / (1 + e)] dt,

        whose integrand is bounded (like t^(1+e) at the face).  With f = t^e G the sector
        integrand as evaluated, the term of a set T of coordinates put on their faces is
        f(t; t_T = t_c) prod_{i in T} (1/(1 + e_i) - t_i^e_i) t_c^(-e_i); the sum over all
        subsets T of the sector's singular coordinates is the subtracted integrand.  A map
        t = v^(1/(1+e)) would also remove t^e, but squeezes the integrand's variation into a
        layer of width ~1/p at v = 1 (p = 2000 at D = 3.999) that the rules' nodes can miss
        altogether.  The singular coordinates are clamped at t_c = :data:`_T_SUBTRACT` (the
        terms cancel exactly below it; the change of the integral is O(t_c) relative)."""
        t, w = self._transform(u)
        tmin = _T_MIN.get(self.precision, 1e-20)
        A, J = self._maps
        emax = int(max(A.max(), J.max(), 1))
        d, n = self.ndim, t.shape[0]
        one = jnp.ones((n,), self.rdtype)
        sub = self._subtractions

        def power_table(t):
            table = []
            for i in range(d):
                p = [one, t[:, i]]
                for _ in range(2, emax + 1):
                    p.append(p[-1] * t[:, i])
                table.append(p)
            return table

        def prod_over(table, row):
            out = None
            for i in range(d):
                f = table[i][emax]
                for k in range(emax - 1, -1, -1):
                    f = jnp.where(row[i] == k, table[i][k], f)
                out = f if out is None else out * f
            return out

        def evaluate(table, As, Js):
            cols = [prod_over(table, As[j]) for j in range(self.N)]
            jac = prod_over(table, Js)
            if w is not None:
                jac = jac * w
            return self._at(cols, kin, delta, real, jac)

        if sub is None:
            shared = power_table(jnp.maximum(t, tmin))

            def sector(total, maps):
                As, Js = maps
                return total + evaluate(shared, As, Js), None
        else:
            tc = _T_SUBTRACT.get(self.precision, 1e-12)
            kmax = sub["index"].shape[1]

            def sector(total, maps):
                As, Js, idx, valid, e = maps
                # one-hot [kmax, d]: which coordinate the j-th singular slot of this sector is
                hot = (idx[:, None] == jnp.arange(d)[None, :]) & valid[:, None]
                ts = jnp.maximum(t, jnp.where(jnp.any(hot, axis=0), tc, tmin)[None, :])
                tj = ts[:, idx]                                      # [n, kmax]
                factor = (1.0 / (1.0 + e))[None, :] - tj ** e[None, :]
                factor = factor * (tc ** -e)[None, :]
                for T in range(1 << kmax):
                    on = [(T >> j) & 1 == 1 for j in range(kmax)]
                    face = jnp.any(hot & jnp.asarray(on)[:, None], axis=0)      # [d]
                    term = evaluate(power_table(jnp.where(face[None, :], tc, ts)), As, Js)
                    weight = one
                    for j in range(kmax):
                        if on[j]:
                            weight = weight * factor[:, j]
                    used = jnp.all(valid | ~jnp.asarray(on))    # T within this sector's slots
                    term = term * weight[:, None]
                    total = total + jnp.where(used, term, 0.0)
                return total, None

        R, K = delta.shape[0], kin.shape[0]
        init = jnp.zeros((n, K * R), self.rdtype if real else self.cdtype)
        maps = (jnp.asarray(A, jnp.int32), jnp.asarray(J, jnp.int32))
        if sub is not None:
            maps = maps + (jnp.asarray(sub["index"], jnp.int32), jnp.asarray(sub["valid"]),
                           jnp.asarray(sub["exponent"], self.rdtype))
        total, _ = jax.lax.scan(sector, init, maps)
        return total

    def polynomials(self, x, kin):
        """U and F at simplex points ``x[n, N]`` for kinematic points ``kin[K, s]``: two [n, K]."""
        x = jnp.asarray(x, self.rdtype)
        kin = jnp.asarray(kin, self.rdtype)
        return self._UF([x[:, j] for j in range(x.shape[1])], kin)

    def __call__(self, u, kin, delta):
        return self.call(kin, delta, u)

    def bind(self, kinematics: Mapping[str, object] | np.ndarray, deltas: Sequence[float] = (0.0,),
             real: bool = False):
        """A one-argument integrand ``f(u) -> [n, K*R]`` for the engines.

        Returned as a :class:`jax.tree_util.Partial`, a pytree whose arrays are leaves, so an
        engine that passes it into a jitted step as an argument does not recompile for new
        kinematics or deltas.
        """
        kin = self._kin(kinematics)
        d = np.asarray(deltas, dtype=np.float64).reshape(-1)
        fn = self._real_eval if real else self._complex_eval
        return jax.tree_util.Partial(fn, jnp.asarray(kin, self.rdtype), jnp.asarray(d, self.rdtype))

    def _real_eval(self, kin, delta, u):
        return self._evaluate(kin, delta, u, real=True)

    def _complex_eval(self, kin, delta, u):
        return self._evaluate(kin, delta, u, real=False)


def kinematics_array(symbols: Sequence[str], kinematics: Mapping[str, object]) -> np.ndarray:
    """``kin[K, s]`` (columns in the order of ``symbols``) from a mapping of symbol -> number
    or 1-D array (broadcast to K)."""
    missing = [s for s in symbols if s not in kinematics]
    if missing:
        raise KeyError(f"missing kinematic value(s) for {missing}")
    cols = [np.atleast_1d(np.asarray(kinematics[s], dtype=np.float64)) for s in symbols]
    K = max([len(c) for c in cols] + [1])
    cols = [np.broadcast_to(c, (K,)) for c in cols]
    return np.stack(cols, axis=1) if cols else np.zeros((K, 0))


def kronecker_points(n: int, d: int) -> np.ndarray:
    """A deterministic, well spread pilot sample of the unit cube: ``[n, d]`` points of the
    Kronecker sequence (g + 1/2) sqrt(p) mod 1 over the first d primes p (d <= 16)."""
    g = np.arange(n, dtype=np.float64)
    primes = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53)
    return np.stack([np.mod((g + 0.5) * np.mod(np.sqrt(q), 1.0), 1.0) for q in primes[:d]],
                    axis=1)


def power_real(v, e):
    """v**e for real v > 0 and a rational exponent, exact integer powers where possible; for
    complex v (U on a deformed contour, near the positive axis) the principal branch."""
    e = sympy.nsimplify(e)
    if e == 0:
        return jnp.ones_like(v)
    if e.is_Integer:
        k = int(e)
        return ipow(v, k) if k > 0 else 1.0 / ipow(v, -k)
    if e == sympy.Rational(1, 2):
        return jnp.sqrt(v)
    if e == -sympy.Rational(1, 2):
        return 1.0 / jnp.sqrt(v) if jnp.iscomplexobj(v) else jax.lax.rsqrt(v)
    return v ** float(e)


def power_complex(z, b):
    """z**(-b) on the branch of (F - i0)^(-b): arg z in [-pi, 0] (Im z <= 0)."""
    b = sympy.nsimplify(b)
    if b == 0:
        return jnp.ones_like(z)
    if b.is_Integer:
        k = int(b)
        if k < 0:
            return ipow(z, -k)
        # 1/z as conj(z)/|z|^2 in real arithmetic, then its k-th power: one real division per
        # value where XLA's complex division takes several plus the overflow guards of
        # Smith's algorithm.  Exact to rounding while |z|^2 is a normal number: 1e-154 < |z| <
        # 1e154 in float64 (1e-19 to 1e19 in float32), far outside the values of F in any
        # units of mass used in practice.
        re, im = jnp.real(z), jnp.imag(z)
        s = 1.0 / (re * re + im * im)
        return ipow(jax.lax.complex(re * s, -im * s), k)
    # general b: exp(-b (log|z| + i arg z)), with arg = -pi on the negative real axis even when
    # the imaginary part is exactly zero (delta = 0): the +i0 of the propagators.
    re, im = jnp.real(z), jnp.imag(z)
    arg = jnp.arctan2(im, re)
    arg = jnp.where((im == 0) & (re < 0), -jnp.pi, arg)
    logmod = 0.5 * jnp.log(re * re + im * im)
    fb = float(b)
    return jnp.exp(-fb * logmod) * jax.lax.complex(jnp.cos(-fb * arg), jnp.sin(-fb * arg))
