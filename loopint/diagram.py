"""Diagrams: from a graph, a list of propagators or explicit polynomials to U, F and exponents.

Conventions (pySecDec's, README "Conventions"): for L loops, N propagators with powers nu_j
(nu = sum nu_j) in D dimensions, Minkowski metric,

    I = int prod_l d^D k_l / (i pi^{D/2}) prod_j (q_j^2 - m_j^2 + i0)^{-nu_j}
      = (-1)^nu Gamma(nu - L D/2) / prod_j Gamma(nu_j)
        * int delta(1 - sum x) prod_j x_j^{nu_j - 1} U^{nu - (L+1) D/2} / (F - i0)^{nu - L D/2}.

U and F follow from the quadratic form of the momenta: writing
``sum_j x_j (q_j^2 - m_j^2) = k^T M k + 2 k.Q + J`` with ``k`` the loop momenta,

    U = det M,      F = Q^T adj(M) Q - U J,

so that F = -sum(2-forest invariants) prod x + U sum_j x_j m_j^2 and F > 0 for Euclidean
kinematics (Bogner & Weinzierl, Int. J. Mod. Phys. A25 (2010) 2585, section 2).  The graph
form routes momenta through a spanning tree and uses the same formula.  A propagator power of
0 removes the line (x_j -> 0 in U and F, i.e. the edge is contracted).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import sympy

from .errors import DiagramError
from .region import Region, classify_F
from .spec.expr import ExpressionError, is_identifier, parse_expression


# Size limits that keep hostile or absurd input cheap: the symbolic U = det M and F grow
# combinatorially (U has up to C(N, L) terms, F about N times more), and sympy needs about a
# millisecond per term.  A 5-loop ladder (16 lines) is inside; a 64-line banana is not.
MAX_LOOPS = 6
MAX_POLY_TERMS = 100_000

# The dimensional (and analytic) regulator: ``dimension = "4 - 2*eps"`` and propagator powers
# ``a + b*eps`` give a Laurent series in eps (:mod:`loopint.dimreg`).
EPS = sympy.Symbol("eps")


class _AutoSymbols(dict):
    """Symbol table for the Python API: any valid identifier is declared on first use."""

    def __init__(self, reserved: Mapping[str, sympy.Symbol] = ()):  # type: ignore[assignment]
        super().__init__(reserved)

    def __contains__(self, name):  # noqa: D401
        if not dict.__contains__(self, name) and is_identifier(name):
            self[name] = sympy.Symbol(name, real=True)
        return dict.__contains__(self, name)


def _parse(text, symbols, key: str):
    try:
        return parse_expression(text, symbols)
    except ExpressionError as e:
        raise DiagramError(f"{key}: {e}", key) from None


@dataclass(frozen=True)
class _QuadraticPiece:
    """One propagator x_j (q_j^2 - m_j^2) as A (LxL), B (L x E) and J (scalar, kinematics)."""

    A: sympy.Matrix
    B: sympy.Matrix
    J: sympy.Expr


@dataclass
class Diagram:
    """A scalar Feynman integral in Feynman-parameter form.

    Attributes:
        name: label.
        loops: L.
        dimension: D (a sympy number, or a + b*eps with the regulator :data:`EPS`).
        variables: Feynman parameters of the kept lines, in order (sympy symbols x1, x2, ...).
        powers: propagator powers nu_j of the kept lines (sympy numbers, or a + b*eps).
        U, F: Symanzik polynomials (sympy), in ``variables`` and the kinematic symbols.
        kinematic_symbols: names of the symbols (masses, invariants) that U and F depend on.
        mass_symbols: names that the graph form used as masses (checked to be >= 0).
        form: 'graph', 'propagators' or 'polynomials'.
    """

    name: str
    loops: int
    dimension: sympy.Expr
    variables: tuple
    powers: tuple
    U: sympy.Expr
    F: sympy.Expr
    kinematic_symbols: tuple
    mass_symbols: tuple = ()
    form: str = "polynomials"
    propagators: tuple = ()
    info: dict = field(default_factory=dict)

    # ---------------------------------------------------------------- derived quantities
    @property
    def regulated(self) -> bool:
        """True when D or a power depends on eps: the integral is a Laurent series in eps."""
        return any(EPS in sympy.sympify(v).free_symbols for v in (self.dimension,) + tuple(self.powers))

    @property
    def N(self) -> int:
        """Number of (kept) propagators."""
        return len(self.variables)

    @property
    def nu(self):
        return sympy.Add(*self.powers)

    @property
    def U_exponent(self):
        """nu - (L+1) D / 2: the power of U in the numerator."""
        return sympy.expand(sympy.nsimplify(self.nu - (self.loops + 1) * self.dimension / 2))

    @property
    def F_exponent(self):
        """nu - L D / 2: the power of (F - i0) in the denominator."""
        return sympy.expand(sympy.nsimplify(self.nu - self.loops * self.dimension / 2))

    def prefactor(self, convention: str = "pysecdec"):
        """The constant in front of the parametric integral.

        'pysecdec': (-1)^nu Gamma(nu - L D/2) / prod Gamma(nu_j) (the module docstring);
        'none': 1 (the bare parametric integral, as in the seeds).
        """
        if convention == "none":
            return sympy.Integer(1)
        if convention != "pysecdec":
            raise ValueError(f"prefactor must be 'pysecdec' or 'none', got {convention!r}")
        den = sympy.Mul(*[sympy.gamma(p) for p in self.powers])
        return sympy.simplify(sympy.Integer(-1) ** self.nu * sympy.gamma(self.F_exponent) / den)

    def tadpole_masses(self) -> list | None:
        """For a product of one-propagator loops (tadpoles: as many lines as loops and
        U = x_1 ... x_N, each loop momentum in one propagator alone), the squared mass of
        each factor, F / U = sum_i m_i^2 x_i: ``[m_1^2, ...]`` as sympy expressions of the
        kinematic symbols.  None for any other diagram.  Such an integral is a product of
        Gamma functions, prod_i (-1)^nu_i Gamma(nu_i - D/2) / Gamma(nu_i) (m_i^2)^(D/2 - nu_i)
        in this normalization (each loop's measure d^Dk / (i pi^(D/2)))."""
        xs = list(self.variables)
        if not xs or self.N != self.loops or sympy.expand(self.U - sympy.Mul(*xs)) != 0:
            return None
        ratio = sympy.cancel(self.F / self.U)
        masses = [sympy.expand(ratio).coeff(x) for x in xs]
        if sympy.expand(ratio - sum(m * x for m, x in zip(masses, xs))) != 0:
            return None
        return masses

    def integrand(self):
        """prod x^(nu-1) U^a / F^b as a sympy expression (for inspection and tests)."""
        mono = sympy.Mul(*[x ** (p - 1) for x, p in zip(self.variables, self.powers)])
        return mono * self.U ** self.U_exponent / self.F ** self.F_exponent

    def _repr_latex_(self) -> str:
        return (rf"$\text{{{self.name}}}:\ L={self.loops},\ N={self.N},\ D={sympy.latex(self.dimension)}"
                rf"\\ \mathcal{{U}} = {sympy.latex(self.U)}\\ \mathcal{{F}} = {sympy.latex(self.F)}$")

    def __repr__(self) -> str:
        return (f"Diagram({self.name!r}, L={self.loops}, N={self.N}, D={self.dimension}, "
                f"powers={list(self.powers)}, U={self.U}, F={self.F})")

    # ---------------------------------------------------------------- checks
    def check_computable(self) -> None:
        """Refuse integrals this package cannot compute: scaleless, overall UV pole.

        Scalelessness is tested first: such an integral is 0 in dimensional regularization
        whatever Gamma(nu - L D/2) does (e.g. the massless on-shell bubble in D = 4).
        """
        if self.U == 0:
            raise DiagramError("U vanishes identically: the integral is scaleless", "powers")
        if is_scaleless(self.U, self.F, self.variables):
            raise DiagramError(
                "scaleless integral: the Newton polytope of U + F is degenerate "
                "(it vanishes in dimensional regularization); nothing to compute")
        if self.N > 1 and not self.regulated and self.tadpole_masses() is not None:
            key = {"graph": "internal_lines", "propagators": "propagators"}.get(self.form, "U")
            raise DiagramError(
                f"a product of {self.N} one-propagator loops (tadpoles): its parametric "
                "integral factorizes into Gamma functions, prod_i (-1)^nu_i Gamma(nu_i - D/2)/"
                "Gamma(nu_i) (m_i^2)^(D/2 - nu_i) in this normalization, which loopint "
                "evaluates as a Laurent series in eps (give dimension = \"4 - 2*eps\")", key)
        b = self.F_exponent
        if b.is_Integer and b <= 0:
            raise DiagramError(
                f"overall UV divergence: Gamma(nu - L*D/2) = Gamma({b}) has a pole "
                f"(nu={self.nu}, L={self.loops}, D={self.dimension}); give dimension = "
                "\"4 - 2*eps\" for its Laurent series in eps", "dimension")

    def substitute(self, values: Mapping[str, float]):
        """(U, F) with the kinematic symbols replaced by numbers (exact rationals for floats)."""
        subs = {sympy.Symbol(k, real=True): sympy.nsimplify(float(v), rational=True)
                if isinstance(v, float) else v for k, v in values.items()}
        return sympy.expand(self.U.subs(subs)), sympy.expand(self.F.subs(subs))

    def region(self, values: Mapping[str, float]) -> Region:
        """Classify a kinematic point: is F of one sign on the simplex (see
        :func:`loopint.region.classify_F`)."""
        U, F = self.substitute(values)
        if is_scaleless(U, F, self.variables):
            raise DiagramError("scaleless integral at this kinematic point (Newton polytope of "
                               "U + F is degenerate)", "kinematics")
        return classify_F(F, self.variables)

    # ---------------------------------------------------------------- constructors
    @classmethod
    def from_graph(cls, internal_lines: Sequence, external_lines: Sequence = (),
                   scalar_products: Mapping[str, Any] | None = None, *, dimension=4,
                   powers: Sequence | None = None, eliminate: str | None = None,
                   name: str = "diagram", symbols: Mapping[str, sympy.Symbol] | None = None
                   ) -> "Diagram":
        """Build from a graph: ``internal_lines = [[mass, [v1, v2]], ...]`` and
        ``external_lines = [[momentum, vertex], ...]`` (all incoming, summing to zero).

        Masses are masses (not squared), ``"0"`` for massless.  The last external momentum (or
        ``eliminate``) is replaced by minus the sum of the others; ``scalar_products`` must give
        every product of the remaining ones, e.g. ``{"p1*p1": "0", "p1*p2": "s/2"}``.
        """
        syms = _AutoSymbols() if symbols is None else symbols
        lines = _check_list(internal_lines, "internal_lines")
        if not lines:
            raise DiagramError("internal_lines: no internal lines", "internal_lines")
        masses, edges = [], []
        for i, line in enumerate(lines):
            key = f"internal_lines[{i}]"
            if not (isinstance(line, (list, tuple)) and len(line) == 2
                    and isinstance(line[1], (list, tuple)) and len(line[1]) == 2):
                raise DiagramError(f"{key}: expected [mass, [vertex, vertex]], got {line!r}", key)
            for v in line[1]:
                if not isinstance(v, (int, str)) or isinstance(v, bool):
                    raise DiagramError(f"{key}: vertex {v!r} must be an integer or a name", key)
            masses.append(_parse(line[0], syms, f"{key} mass"))
            edges.append((line[1][0], line[1][1]))
        vertices = list(dict.fromkeys(v for e in edges for v in e))
        vindex = {v: i for i, v in enumerate(vertices)}

        ext = _check_list(external_lines, "external_lines")
        ext_names, ext_vertex = [], []
        for i, leg in enumerate(ext):
            key = f"external_lines[{i}]"
            if not (isinstance(leg, (list, tuple)) and len(leg) == 2 and isinstance(leg[0], str)):
                raise DiagramError(f"{key}: expected [momentum, vertex], got {leg!r}", key)
            if not is_identifier(leg[0]):
                raise DiagramError(f"{key}: {leg[0]!r} is not a valid momentum name", key)
            if leg[0] in ext_names:
                raise DiagramError(f"{key}: momentum {leg[0]!r} appears twice", key)
            if not isinstance(leg[1], (int, str)) or isinstance(leg[1], bool):
                raise DiagramError(f"{key}: vertex {leg[1]!r} must be an integer or a name", key)
            if leg[1] not in vindex:
                raise DiagramError(
                    f"{key}: vertex {leg[1]!r} does not exist (no internal line touches it; "
                    f"vertices are {vertices})", key)
            ext_names.append(leg[0])
            ext_vertex.append(vindex[leg[1]])

        n_lines = len(edges)
        pw = _powers(powers, n_lines)
        routing = _route_momenta(edges, len(vertices), ext_vertex)
        L = routing["loops"]
        independent, gram = _external_basis(ext_names, eliminate, scalar_products, syms)
        pieces, props = [], []
        elim_idx = ext_names.index(independent["eliminated"]) if independent["eliminated"] else None
        indep_idx = [ext_names.index(p) for p in independent["names"]]
        for j in range(n_lines):
            a = routing["loop"][j]
            c_all = routing["ext"][j]
            c = [c_all[i] - (c_all[elim_idx] if elim_idx is not None else 0) for i in indep_idx]
            a_vec = sympy.Matrix(a)
            c_vec = sympy.Matrix(c) if c else sympy.zeros(0, 1)
            m2 = masses[j] ** 2
            A = a_vec * a_vec.T
            B = a_vec * c_vec.T if c else sympy.zeros(L, 0)
            J = (c_vec.T * gram * c_vec)[0, 0] - m2 if c else -m2
            pieces.append(_QuadraticPiece(A, B, sympy.expand(J)))
            props.append(_momentum_string(a, c, independent["names"], masses[j]))
        mass_syms = tuple(sorted({str(m) for m in masses if isinstance(m, sympy.Symbol)}))
        return _assemble(name, L, dimension, pieces, pw, gram, syms, form="graph",
                         mass_symbols=mass_syms, propagators=tuple(props))

    @classmethod
    def from_propagators(cls, loop_momenta: Sequence[str], propagators: Sequence[str],
                         external_momenta: Sequence[str] | None = None,
                         scalar_products: Mapping[str, Any] | None = None, *, dimension=4,
                         powers: Sequence | None = None, name: str = "diagram",
                         symbols: Mapping[str, sympy.Symbol] | None = None) -> "Diagram":
        """Build from propagators written as ``"(k1 + p1)**2 - m**2"`` (pySecDec's form).

        ``external_momenta`` are the independent external momenta (default: those named in
        ``scalar_products``); products of momenta in the propagators are scalar products.
        """
        syms = _AutoSymbols() if symbols is None else dict(symbols)
        loops = _check_names(loop_momenta, "loop_momenta")
        if not loops:
            raise DiagramError("loop_momenta: at least one loop momentum is needed", "loop_momenta")
        sp = dict(scalar_products or {})
        if external_momenta is None:
            external_momenta = sorted({n for k in sp for n in _split_product(k, "scalar_products")})
        exts = _check_names(external_momenta, "external_momenta")
        for n in loops + exts:
            if isinstance(syms, _AutoSymbols) or n not in syms:
                dict.__setitem__(syms, n, sympy.Symbol(n, real=True)) if isinstance(syms, _AutoSymbols) \
                    else syms.__setitem__(n, sympy.Symbol(n, real=True))
        indep, gram = _external_basis(exts, None, sp, syms, all_independent=True)
        ksyms = [syms[n] for n in loops]
        psyms = [syms[n] for n in exts]
        props = _check_list(propagators, "propagators")
        if not props:
            raise DiagramError("propagators: empty list", "propagators")
        pw = _powers(powers, len(props))
        pieces = []
        L, E = len(ksyms), len(psyms)
        for j, text in enumerate(props):
            key = f"propagators[{j}]"
            expr = sympy.expand(_parse(text, syms, key))
            poly = sympy.Poly(expr, *ksyms, *psyms)
            A, B, J = sympy.zeros(L, L), sympy.zeros(L, E), sympy.Integer(0)
            for monom, coeff in poly.terms():
                kdeg, pdeg = monom[:L], monom[L:]
                if any(c != 0 and c.free_symbols & set(ksyms + psyms) for c in [coeff]):
                    raise DiagramError(f"{key}: coefficient depends on a momentum", key)
                tk, tp = sum(kdeg), sum(pdeg)
                if tk + tp not in (0, 2):
                    raise DiagramError(
                        f"{key}: {text!r} is not quadratic in the momenta (term of degree {tk + tp})", key)
                if tk == 2:
                    idx = [i for i, d in enumerate(kdeg) for _ in range(d)]
                    if idx[0] == idx[1]:
                        A[idx[0], idx[0]] += coeff
                    else:
                        A[idx[0], idx[1]] += coeff / 2
                        A[idx[1], idx[0]] += coeff / 2
                elif tk == 1:
                    l = kdeg.index(1)
                    e = pdeg.index(1)
                    B[l, e] += coeff / 2
                elif tp == 2:
                    idx = [i for i, d in enumerate(pdeg) for _ in range(d)]
                    J += coeff * gram[idx[0], idx[1]]
                else:
                    J += coeff
            if A == sympy.zeros(L, L) and B == sympy.zeros(L, E):
                raise DiagramError(f"{key}: {text!r} does not depend on any loop momentum", key)
            pieces.append(_QuadraticPiece(A, B, sympy.expand(J)))
        return _assemble(name, L, dimension, pieces, pw, gram, syms, form="propagators",
                         propagators=tuple(str(p) for p in props))

    @classmethod
    def from_polynomials(cls, U: str, F: str, variables: Sequence[str], loops: int, *,
                         dimension=4, powers: Sequence | None = None, name: str = "diagram",
                         symbols: Mapping[str, sympy.Symbol] | None = None) -> "Diagram":
        """Build from explicit U (= C) and F (= D) polynomials, as printed in the seeds."""
        names = _check_names(variables, "variables")
        if not names:
            raise DiagramError("variables: empty list", "variables")
        syms = _AutoSymbols() if symbols is None else dict(symbols)
        xs = []
        for n in names:
            s = sympy.Symbol(n, real=True)
            if isinstance(syms, _AutoSymbols):
                dict.__setitem__(syms, n, s)
            else:
                syms[n] = s
            xs.append(s)
        if not isinstance(loops, int) or isinstance(loops, bool) or loops < 1:
            raise DiagramError(f"loops: must be a positive integer, got {loops!r}", "loops")
        Ue = sympy.expand(_parse(U, syms, "U"))
        Fe = sympy.expand(_parse(F, syms, "F"))
        for label, P, deg in (("U", Ue, loops), ("F", Fe, loops + 1)):
            if P == 0:
                raise DiagramError(f"{label}: the polynomial is zero", label)
            try:
                poly = sympy.Poly(P, *xs)
            except sympy.PolynomialError:
                raise DiagramError(f"{label}: not a polynomial in the variables {names}", label) from None
            degs = {sum(m) for m in poly.monoms()}
            if degs != {deg}:
                raise DiagramError(
                    f"{label}: must be homogeneous of degree {deg} in {names} (loops = {loops}); "
                    f"found degrees {sorted(degs)}", label)
        pw = _powers(powers, len(xs))
        kin = sorted(str(s) for s in (Ue.free_symbols | Fe.free_symbols) - set(xs))
        return _finish(name, loops, dimension, xs, pw, Ue, Fe, kin, form="polynomials")


# -------------------------------------------------------------------- assembly helpers
def _assemble(name, L, dimension, pieces, pw, gram, syms, *, form, mass_symbols=(), propagators=()):
    n = len(pieces)
    bound = math.comb(n, L) * n
    if L > MAX_LOOPS or bound > MAX_POLY_TERMS:
        key = "internal_lines" if form == "graph" else "propagators"
        raise DiagramError(
            f"{key}: too large to expand symbolically ({L} loops, {n} lines: U and F could have "
            f"about {bound} terms; at most {MAX_LOOPS} loops and {MAX_POLY_TERMS} terms are "
            "supported)", key)
    xs = [sympy.Symbol(f"x{j + 1}", real=True) for j in range(n)]
    M = sympy.zeros(L, L)
    E = pieces[0].B.shape[1]
    Q = sympy.zeros(L, E)
    J = sympy.Integer(0)
    for x, p in zip(xs, pieces):
        M += x * p.A
        Q += x * p.B
        J += x * p.J
    U = sympy.expand(M.det(method="berkowitz")) if L > 1 else sympy.expand(M[0, 0])
    adj = M.adjugate() if L > 1 else sympy.Matrix([[1]])
    # F = sum_{l,l'} adj_{ll'} Q_l . Q_l'  - U J   (Q_l . Q_l' = Q_l^T G Q_l')
    quad = sympy.Integer(0)
    if E:
        QG = Q * gram
        for l in range(L):
            for lp in range(L):
                if adj[l, lp] != 0:
                    quad += adj[l, lp] * (QG[l, :] * Q[lp, :].T)[0, 0]
    F = sympy.expand(quad - U * J)
    kin = sorted(str(s) for s in (U.free_symbols | F.free_symbols) - set(xs))
    return _finish(name, L, dimension, xs, pw, U, F, kin, form=form, mass_symbols=mass_symbols,
                   propagators=propagators)


def regulator_linear(text, key: str, label: str | None = None):
    """``a + b*eps`` (a, b rational) from a number or an expression string in the symbol
    ``eps``; DiagramError with ``key`` otherwise (its message starts with ``label``, default
    the key)."""
    label = label or key
    if isinstance(text, bool) or not isinstance(text, (int, float, str, sympy.Expr)):
        raise DiagramError(f"{label}: must be a number or an expression in eps, got {text!r}", key)
    try:
        if isinstance(text, str):
            v = sympy.expand(parse_expression(text, {"eps": EPS}))
        else:
            v = sympy.nsimplify(text, rational=True)
    except (ExpressionError, TypeError, ValueError) as e:
        raise DiagramError(f"{label}: {e} (allowed: numbers and the regulator eps)", key) from None
    if not v.free_symbols <= {EPS}:
        raise DiagramError(f"{label}: {text!r} has symbols other than eps", key)
    p = sympy.Poly(v, EPS)
    if p.degree() > 1 or not all(c.is_Rational for c in p.all_coeffs()):
        raise DiagramError(f"{label}: must be a + b*eps with rational a, b, got {text!r}", key)
    return v


def _finish(name, L, dimension, xs, pw, U, F, kin, *, form, mass_symbols=(), propagators=()):
    D = regulator_linear(dimension, "dimension")
    if D.subs(EPS, 0) <= 0:
        raise DiagramError(f"dimension: must be positive, got {dimension!r}", "dimension")
    keep = [j for j, p in enumerate(pw) if p != 0]
    drop = {xs[j]: 0 for j, p in enumerate(pw) if p == 0}
    if not keep:
        raise DiagramError("powers: every line has power 0", "powers")
    if drop:
        U = sympy.expand(U.subs(drop))
        F = sympy.expand(F.subs(drop))
    vars_kept = tuple(xs[j] for j in keep)
    props = tuple(propagators[j] for j in keep) if propagators else ()
    d = Diagram(name=name, loops=L, dimension=D, variables=vars_kept,
                powers=tuple(pw[j] for j in keep), U=U, F=F,
                kinematic_symbols=tuple(sorted(set(kin) & {str(s) for s in (U.free_symbols | F.free_symbols)})),
                mass_symbols=tuple(mass_symbols), form=form, propagators=props)
    d.check_computable()
    return d


def _check_list(v, key):
    if not isinstance(v, (list, tuple)):
        raise DiagramError(f"{key}: expected a list, got {type(v).__name__}", key)
    if len(v) > 64:
        raise DiagramError(f"{key}: {len(v)} entries; at most 64 are supported", key)
    return list(v)


def _check_names(v, key):
    names = _check_list(v, key)
    for n in names:
        if not is_identifier(n):
            raise DiagramError(f"{key}: {n!r} is not a valid name", key)
    if len(set(names)) != len(names):
        raise DiagramError(f"{key}: repeated names in {names}", key)
    return names


def _powers(powers, n):
    if powers is None:
        return [sympy.Integer(1)] * n
    pw = _check_list(powers, "powers")
    if len(pw) != n:
        raise DiagramError(f"powers: {len(pw)} entries for {n} lines", "powers")
    out = []
    for i, p in enumerate(pw):
        if isinstance(p, bool) or not isinstance(p, (int, float, str)):
            raise DiagramError(f"powers[{i}]: must be a number, got {p!r}", "powers")
        v = regulator_linear(p, "powers", f"powers[{i}]")
        if v.subs(EPS, 0) < 0 or (v.subs(EPS, 0) == 0 and v != 0):
            raise DiagramError(
                f"powers[{i}]: negative power {v} (or zero at eps = 0; numerators are not "
                "supported; 0 drops the line)", "powers")
        out.append(v)
    return out


def _split_product(key: str, where: str) -> tuple[str, str]:
    parts = [s.strip() for s in str(key).split("*")]
    if len(parts) != 2 or not all(is_identifier(p) for p in parts):
        raise DiagramError(f"{where}: key {key!r} must read 'p1*p2'", where)
    return parts[0], parts[1]


def _external_basis(names, eliminate, scalar_products, syms, all_independent=False):
    """Independent external momenta and their Gram matrix G_ij = p_i . p_j (sympy)."""
    names = list(names)
    sp = dict(scalar_products or {})
    if all_independent:
        elim = None
        indep = names
    elif not names:
        elim, indep = None, []
    else:
        elim = eliminate if eliminate is not None else names[-1]
        if elim not in names:
            raise DiagramError(f"eliminate: {elim!r} is not an external momentum ({names})", "eliminate")
        indep = [n for n in names if n != elim]
    given = {}
    for k, v in sp.items():
        a, b = _split_product(k, "scalar_products")
        for n in (a, b):
            if n not in indep:
                what = "the eliminated momentum" if n == elim else "not an independent external momentum"
                raise DiagramError(
                    f"scalar_products: surplus key {k!r}: {n!r} is {what} (independent: {indep})",
                    "scalar_products")
        pair = tuple(sorted((indep.index(a), indep.index(b))))
        if pair in given:
            raise DiagramError(f"scalar_products: product {k!r} given twice", "scalar_products")
        given[pair] = _parse(v, syms, f"scalar_products.{k!r}")
    G = sympy.zeros(len(indep), len(indep))
    missing = []
    for i in range(len(indep)):
        for j in range(i, len(indep)):
            if (i, j) not in given:
                missing.append(f"{indep[i]}*{indep[j]}")
                continue
            G[i, j] = G[j, i] = given[(i, j)]
    if missing:
        raise DiagramError(f"scalar_products: missing {', '.join(repr(m) for m in missing)} "
                           f"(every product of the independent momenta {indep} is needed)",
                           "scalar_products")
    return {"names": indep, "eliminated": elim}, G


def _route_momenta(edges, n_vertices, ext_vertex):
    """Momentum routing through a spanning tree.

    Returns, per line j, the integer coefficients of q_j in the loop momenta (chords) and in the
    external momenta (all of them, before elimination).  Lines are oriented v1 -> v2; external
    momenta flow in.  Conservation at vertex v: sum_in q - sum_out q + sum_ext p = 0.
    """
    adj = [[] for _ in range(n_vertices)]
    # vertices are indexed in order of first appearance; rebuild index from the edges
    order = list(dict.fromkeys(v for e in edges for v in e))
    idx = {v: i for i, v in enumerate(order)}
    E = [(idx[a], idx[b]) for a, b in edges]
    for j, (a, b) in enumerate(E):
        if a != b:
            adj[a].append(j)
            adj[b].append(j)
    seen, tree = {0}, set()
    queue = deque([0])
    while queue:
        v = queue.popleft()
        for j in adj[v]:
            a, b = E[j]
            w = b if a == v else a
            if w not in seen:
                seen.add(w)
                tree.add(j)
                queue.append(w)
    if len(seen) != n_vertices:
        missing = [order[i] for i in range(n_vertices) if i not in seen]
        raise DiagramError(f"internal_lines: the graph is disconnected (vertices {missing} are not "
                           f"connected to {order[0]!r})", "internal_lines")
    chords = [j for j in range(len(E)) if j not in tree]
    L = len(chords)
    if L == 0:
        raise DiagramError("internal_lines: the graph has no loop (it is a tree)", "internal_lines")
    n_ext = len(ext_vertex)
    loop = {j: [0] * L for j in range(len(E))}
    ext = {j: [0] * n_ext for j in range(len(E))}
    for l, j in enumerate(chords):
        loop[j][l] = 1
    known = set(chords)
    tdeg = [0] * n_vertices
    for j in tree:
        a, b = E[j]
        tdeg[a] += 1
        tdeg[b] += 1
    leaves = deque(v for v in range(1, n_vertices) if tdeg[v] == 1)
    removed = set()
    while leaves:
        v = leaves.popleft()
        if v in removed:
            continue
        (e,) = [j for j in adj[v] if j in tree and j not in known]
        rest_l, rest_e = [0] * L, [0] * n_ext
        for j in adj[v]:
            if j == e:
                continue
            s = 1 if E[j][1] == v else -1
            rest_l = [r + s * q for r, q in zip(rest_l, loop[j])]
            rest_e = [r + s * q for r, q in zip(rest_e, ext[j])]
        for i, ev in enumerate(ext_vertex):
            if ev == v:
                rest_e[i] += 1
        s_e = 1 if E[e][1] == v else -1
        loop[e] = [-s_e * r for r in rest_l]
        ext[e] = [-s_e * r for r in rest_e]
        known.add(e)
        removed.add(v)
        a, b = E[e]
        w = b if a == v else a
        tdeg[w] -= 1
        if w != 0 and tdeg[w] == 1:
            leaves.append(w)
    return {"loops": L, "loop": [loop[j] for j in range(len(E))], "ext": [ext[j] for j in range(len(E))]}


def _momentum_string(a, c, names, mass):
    terms = []
    for l, v in enumerate(a):
        if v:
            terms.append(f"{'+' if v > 0 else '-'}{'' if abs(v) == 1 else abs(v)}k{l + 1}")
    for n, v in zip(names, c):
        if v:
            terms.append(f"{'+' if v > 0 else '-'}{'' if abs(v) == 1 else abs(v)}{n}")
    q = "".join(terms).lstrip("+") or "0"
    return f"({q})**2 - ({mass})**2"


# -------------------------------------------------------------------- analysis
def is_scaleless(U, F, xs) -> bool:
    """Lee-Pomeransky criterion: scaleless iff the Newton polytope of U + F has dimension < N.

    (Lee & Pomeransky, JHEP 11 (2013) 165.)  Kinematic symbols count as generic (non-zero)
    coefficients; substitute numbers first to test one kinematic point.
    """
    G = sympy.expand(U + F)
    if G == 0:
        return True
    pts = np.array(sympy.Poly(G, *xs).monoms(), dtype=float)
    if len(pts) < 2:
        return len(xs) > 0
    diffs = pts[1:] - pts[0]
    return int(np.linalg.matrix_rank(diffs)) < len(xs)
