"""Symanzik polynomials, exponents, prefactor, refusals and region classification
(loopint/diagram.py; DESIGN 4.1).

References, all independent of the code under test:
  * hand-derived U and F (one-loop N-gons from the rule "lines i, j meeting at vertex v give
    p_v^2 x_i x_j"; sunrise; the seeds' printed polynomials: pentagon D of seed 000 section 4.5,
    ladder C and D of seed 000 eq. 4.5, cc and dd of the seed's Table 5.1 code, appendix C);
  * a spanning-tree / 2-forest enumeration written here (``enumerate_symanzik``):
        U = sum_{spanning trees T} prod_{e not in T} x_e,
        F = -sum_{2-forests (T1, T2)} (P_T1)^2 prod_{e not in F} x_e + U sum_e x_e m_e^2,
    with P_T1 the external momentum flowing into the component T1 (Bogner & Weinzierl,
    Int. J. Mod. Phys. A25 (2010) 2585, section 3); the code uses the matrix (Laplacian-free)
    formula U = det M, F = Q^T adj(M) Q - U J instead;
  * the momentum-space identity d/dm^2 (q^2 - m^2)^-1 = (q^2 - m^2)^-2 for the Gamma-prefactor
    of raised powers (mpmath quadrature, 20 digits);
  * dense random sampling of the simplex for the rule "never call a physical point Euclidean".
All polynomial comparisons are exact (sympy.expand of the difference is 0).
"""

from __future__ import annotations

import itertools
import os
import re
import time
import tomllib
from pathlib import Path

import mpmath
import numpy as np
import pytest
import sympy

from loopint.diagram import Diagram, is_scaleless
from loopint.errors import DiagramError
from loopint.region import Region, classify_coefficients, classify_F, classify_points
from loopint.problem import load
from loopint.testfunctions import table51_cc_dd

ROOT = Path(__file__).resolve().parents[1]


def sym(name):
    return sympy.Symbol(name, real=True)


def X(n):
    return [sym(f"x{j}") for j in range(1, n + 1)]


def same(a, b):
    return sympy.expand(a - b) == 0


# --------------------------------------------------------------------------- the enumeration
def enumerate_symanzik(lines, legs, scalar_products, eliminate=None):
    """U and F from spanning trees and spanning 2-forests (independent of loopint).

    ``lines = [(mass, (v1, v2)), ...]``, ``legs = [(momentum, vertex), ...]`` (incoming, summing
    to zero; ``eliminate`` or the last one is minus the sum of the others),
    ``scalar_products = {"p1*p2": "expr"}`` over the independent momenta (sympy-parsable,
    trusted test text).
    """
    names = [n for n, _ in legs]
    elim = eliminate or (names[-1] if names else None)
    indep = [n for n in names if n != elim]
    G = sympy.zeros(len(indep), len(indep))
    for k, v in scalar_products.items():
        a, b = (t.strip() for t in k.split("*"))
        i, j = indep.index(a), indep.index(b)
        G[i, j] = G[j, i] = sympy.sympify(v, locals={s: sym(s) for s in _names_in(v)})

    def mom(n):
        c = sympy.zeros(len(indep), 1)
        if n == elim:
            for i in range(len(indep)):
                c[i] = -1
        else:
            c[indep.index(n)] = 1
        return c

    verts = list(dict.fromkeys(v for _, e in lines for v in e))
    inflow = {v: sympy.zeros(len(indep), 1) for v in verts}
    for n, v in legs:
        inflow[v] += mom(n)
    xs = X(len(lines))
    masses = [sympy.sympify(m, locals={s: sym(s) for s in _names_in(m)}) for m, _ in lines]

    def components(subset):
        parent = {v: v for v in verts}

        def find(v):
            while parent[v] != v:
                v = parent[v]
            return v
        for j in subset:
            a, b = (find(w) for w in lines[j][1])
            if a == b:
                return None                      # a cycle (or a self-loop)
            parent[a] = b
        groups = {}
        for v in verts:
            groups.setdefault(find(v), []).append(v)
        return list(groups.values())

    E = range(len(lines))
    U = sympy.Integer(0)
    for T in itertools.combinations(E, len(verts) - 1):
        if components(T) is not None:
            U += sympy.Mul(*[xs[e] for e in E if e not in T])
    F0 = sympy.Integer(0)
    for T in itertools.combinations(E, len(verts) - 2):
        comps = components(T)
        if comps is None:
            continue
        assert len(comps) == 2
        P = sum((inflow[v] for v in comps[0]), sympy.zeros(len(indep), 1))
        F0 += (P.T * G * P)[0, 0] * sympy.Mul(*[xs[e] for e in E if e not in T])
    F = -F0 + U * sum(x * m**2 for x, m in zip(xs, masses))
    return sympy.expand(U), sympy.expand(F)


def _names_in(text):
    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", str(text))) - {"sqrt"}


# --------------------------------------------------------------------------- the graphs
TRIANGLE = dict(
    internal_lines=[["m1", [1, 2]], ["m2", [2, 3]], ["m3", [3, 1]]],
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
    scalar_products={"p1*p1": "s1", "p2*p2": "s2", "p1*p2": "(s3 - s1 - s2)/2"})
BOX = dict(
    internal_lines=[["m1", [4, 1]], ["m2", [1, 2]], ["m3", [2, 3]], ["m4", [3, 4]]],
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
    scalar_products={"p1*p1": "s1", "p2*p2": "s2", "p3*p3": "s3",
                     "p1*p2": "(s - s1 - s2)/2", "p2*p3": "(t - s2 - s3)/2",
                     "p1*p3": "(s4 - s - t + s2)/2"})
LADDER = dict(   # seed 000 eq. 4.5: lines 1, 2, 4, 5 top quarks, 3 and 6 Z rungs
    internal_lines=[["mt", ["V3", "Va"]], ["mt", ["V3", "Vb"]], ["mZ", ["Va", "Vb"]],
                    ["mt", ["Va", "V1"]], ["mt", ["Vb", "V2"]], ["mZ", ["V1", "V2"]]],
    external_lines=[["p1", "V1"], ["p2", "V2"], ["p3", "V3"]],
    scalar_products={"p1*p1": "P1", "p2*p2": "P2", "p1*p2": "(P3 - P1 - P2)/2"})
SUNRISE = dict(
    internal_lines=[["m1", [1, 2]], ["m2", [1, 2]], ["m3", [2, 1]]],
    external_lines=[["p", 1], ["q", 2]],
    scalar_products={"p*p": "s"})
DOUBLE_BOX = dict(   # planar massless double box, off-shell legs
    internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["0", [3, 4]], ["0", [4, 5]],
                    ["0", [5, 6]], ["0", [6, 1]], ["0", [2, 5]]],
    external_lines=[["p1", 1], ["p2", 3], ["p3", 4], ["p4", 6]],
    scalar_products={"p1*p1": "q1", "p2*p2": "q2", "p3*p3": "q3",
                     "p1*p2": "(s - q1 - q2)/2", "p2*p3": "(t - q2 - q3)/2",
                     "p1*p3": "(q4 - s - t + q2)/2"})
CROSSED_VERTEX = dict(   # non-planar two-loop vertex, all lines massive
    internal_lines=[["m", ["a", "c"]], ["m", ["c", "b"]], ["M", ["a", "d"]],
                    ["M", ["d", "b"]], ["m", ["c", "e"]], ["m", ["d", "e"]]],
    external_lines=[["k1", "a"], ["k2", "b"], ["k3", "e"]],
    scalar_products={"k1*k1": "s1", "k2*k2": "s2", "k1*k2": "(s3 - s1 - s2)/2"})
TADPOLE_ON_TRIANGLE = dict(   # a self-loop and string vertex labels in scrambled order
    internal_lines=[["mA", ["z", "a"]], ["mB", ["q", "z"]], ["mT", ["a", "a"]], ["mC", ["a", "q"]]],
    external_lines=[["p1", "q"], ["p2", "a"], ["p3", "z"]],
    scalar_products={"p1*p1": "u", "p2*p2": "v", "p1*p2": "w"})
PENTAGON_FILE = ROOT / "diagrams" / "pentagon_ggttH.toml"


def graph(spec, **kw):
    return Diagram.from_graph(spec["internal_lines"], spec["external_lines"],
                              spec["scalar_products"], **kw)


def enum(spec, **kw):
    return enumerate_symanzik([(m, tuple(e)) for m, e in spec["internal_lines"]],
                              [(n, v) for n, v in spec["external_lines"]],
                              spec["scalar_products"], **kw)


# --------------------------------------------------------------------------- 1. U and F by hand
def test_bubble_D2_by_hand():
    d = Diagram.from_graph([["m1", [1, 2]], ["m2", [2, 1]]], [["p", 1], ["q", 2]],
                           {"p*p": "s"}, dimension=2)
    x1, x2 = X(2)
    s, m1, m2 = sym("s"), sym("m1"), sym("m2")
    assert same(d.U, x1 + x2)
    assert same(d.F, -s * x1 * x2 + (x1 + x2) * (x1 * m1**2 + x2 * m2**2))
    assert (d.loops, d.N, d.dimension) == (1, 2, 2)


def test_triangle_by_hand():
    """Lines i, j meeting at vertex v carry p_v^2 x_i x_j; here p3^2 = s3 via the products."""
    d = graph(TRIANGLE)
    x1, x2, x3 = X(3)
    s1, s2, s3 = sym("s1"), sym("s2"), sym("s3")
    m = [sym(f"m{j}") for j in (1, 2, 3)]
    U = x1 + x2 + x3
    F = -(s2 * x1 * x2 + s3 * x2 * x3 + s1 * x3 * x1) + U * (x1 * m[0]**2 + x2 * m[1]**2 + x3 * m[2]**2)
    assert same(d.U, U) and same(d.F, F)


def test_box_by_hand_and_the_bundled_file():
    """Adjacent lines: p_v^2; opposite lines: s = (p1+p2)^2 for (x1, x3), t = (p2+p3)^2 for (x2, x4)."""
    d = graph(BOX)
    x1, x2, x3, x4 = X(4)
    s1, s2, s3, s4, s, t = (sym(n) for n in ("s1", "s2", "s3", "s4", "s", "t"))
    m = [sym(f"m{j}") for j in (1, 2, 3, 4)]
    U = x1 + x2 + x3 + x4
    F0 = s1 * x1 * x2 + s2 * x2 * x3 + s3 * x3 * x4 + s4 * x4 * x1 + s * x1 * x3 + t * x2 * x4
    assert same(d.U, U)
    assert same(d.F, -F0 + U * sum(x * mm**2 for x, mm in zip((x1, x2, x3, x4), m)))
    # the bundled massless off-shell box uses the same products with p_i^2 = p{i}sq
    f = load(ROOT / "diagrams" / "box_massless_offshell.toml").diagram
    ren = {sym("s1"): sym("p1sq"), sym("s2"): sym("p2sq"), sym("s3"): sym("p3sq"),
           sym("s4"): sym("p4sq")}
    assert same(f.F, -F0.subs(ren, simultaneous=True))


def test_pentagon_matches_seed_D():
    """Seed 000 section 4.5: D = sum x_j m_j^2 - x1x2 s1 - x2x3 s2 - x3x4 s3 - x4x5 s4 - x5x1 s5
    - x1x3 s12 - x2x4 s23 - x3x5 s34 - x4x1 s45 - x5x2 s51 (on the simplex; the mass term is
    multiplied by U = sum x to compare as homogeneous polynomials).  gamma gamma -> t tbar H:
    s1 = s2 = 0, s3 = s4 = mt^2, s5 = mH^2; masses (mt, mt, mt, mH, mt)."""
    d = load(PENTAGON_FILE).diagram
    x1, x2, x3, x4, x5 = xs = X(5)
    mt, mH = sym("mt"), sym("mH")
    s12, s23, s34, s45, s51 = (sym(n) for n in ("s12", "s23", "s34", "s45", "s51"))
    s1, s2, s3, s4, s5 = 0, 0, mt**2, mt**2, mH**2
    masses = (mt, mt, mt, mH, mt)
    D = (sum(xs) * sum(x * m**2 for x, m in zip(xs, masses))
         - x1 * x2 * s1 - x2 * x3 * s2 - x3 * x4 * s3 - x4 * x5 * s4 - x5 * x1 * s5
         - x1 * x3 * s12 - x2 * x4 * s23 - x3 * x5 * s34 - x4 * x1 * s45 - x5 * x2 * s51)
    assert same(d.U, sum(xs))
    assert same(d.F, D)


def _seed_ladder_D(p1sq, p2sq, p3sq, masses, printed=True):
    """Seed 000 eq. (4.5) as printed, on the simplex (x6 = 1 - x1 - ... - x5).

    The printed text has ``p_1 * 2`` in the C1 bracket, read as p_1^2 (the only reading that is
    a Lorentz scalar of the right dimension), and ``2 x1 x3 x4 p_2^2``; ``printed=False``
    replaces the latter by ``2 x1 x3 x4 p_1^2`` (see test_ladder_vertex_against_seed_eq_4_5).
    """
    x1, x2, x3, x4, x5 = X(5)
    x6 = 1 - x1 - x2 - x3 - x4 - x5
    m1, m2, m3, m4, m5, m6 = masses
    C = x3 * (1 - x1 - x2 - x3) + (x1 + x2) * (1 - x1 - x2)
    C1 = x1 + x2 + x3
    C2 = 1 - x1 - x2
    D = (-C * (x1 * (p1sq - m1**2) + x2 * (p2sq - m2**2) - x3 * m3**2 + x4 * (p1sq - m4**2)
               + x5 * (p2sq - m5**2) - x6 * m6**2)
         + C1 * (x5**2 * p2sq + x4**2 * p1sq - x4 * x5 * (p3sq - p1sq - p2sq))
         + C2 * (x2**2 * p2sq + x1**2 * p1sq - x1 * x2 * (p3sq - p1sq - p2sq))
         + 2 * x2 * x3 * x5 * p2sq + 2 * x1 * x3 * x4 * (p2sq if printed else p1sq)
         - x3 * (x2 * x4 + x1 * x5) * (p3sq - p1sq - p2sq))
    return sympy.expand(C), sympy.expand(D)


def test_ladder_vertex_against_seed_eq_4_5():
    """Two-loop ladder vertex, seed 000 eq. (4.5), with general p1^2, p2^2, p3^2.

    Finding (decided by the 2-forest enumeration, an independent derivation): the seed's
    ``2 x1 x3 x4 p_2^2`` is a typo for ``2 x1 x3 x4 p_1^2``; as printed, D differs from the true
    Symanzik F by 2 x1 x3 x4 (p2^2 - p1^2), which vanishes on the seed's own kinematics
    (p1^2 = p2^2 = m_t^2), so the seed's numbers are unaffected.  C is printed correctly.
    """
    P1, P2, P3, mt, mZ = (sym(n) for n in ("P1", "P2", "P3", "mt", "mZ"))
    masses = (mt, mt, mZ, mt, mt, mZ)
    d = graph(LADDER)
    U_enum, F_enum = enum(LADDER)
    assert same(d.U, U_enum) and same(d.F, F_enum)
    x1, x2, x3, x4, x5 = X(5)
    on_simplex = {sym("x6"): 1 - x1 - x2 - x3 - x4 - x5}
    C, D_corrected = _seed_ladder_D(P1, P2, P3, masses, printed=False)
    _, D_printed = _seed_ladder_D(P1, P2, P3, masses, printed=True)
    assert same(U_enum.subs(on_simplex), C)
    assert same(F_enum.subs(on_simplex), D_corrected)
    assert same(D_printed - F_enum.subs(on_simplex), 2 * x1 * x3 * x4 * (P2 - P1))
    # the bundled files: p1^2 = p2^2 = mt^2, p3^2 = k2; there the printed D is exact
    for name in ("ladder_vertex_2L_k1.toml", "ladder_vertex_2L_k5.toml"):
        f = load(ROOT / "diagrams" / name).diagram
        C_f, D_f = _seed_ladder_D(mt**2, mt**2, sym("k2"), masses, printed=True)
        assert same(f.U.subs(on_simplex), C_f)
        assert same(f.F.subs(on_simplex), D_f)


def _table51_cc_dd():
    """cc and dd of the seed's CUDA function on sympy symbols."""
    return table51_cc_dd(*X(7))


def test_table51_explicit_polynomials_reproduce_cc_dd():
    d = load(ROOT / "diagrams" / "table51_2L.toml").diagram
    cc, dd = _table51_cc_dd()
    assert d.form == "polynomials"
    assert same(d.U, cc) and same(d.F, dd)
    assert d.kinematic_symbols == ()
    # the same through the Python API
    d2 = Diagram.from_polynomials(str(cc), str(dd), [f"x{j}" for j in range(1, 8)], loops=2)
    assert same(d2.U, cc) and same(d2.F, dd)


def test_sunrise_by_hand():
    d = graph(SUNRISE, dimension=2)
    x1, x2, x3 = X(3)
    s = sym("s")
    U = x1 * x2 + x1 * x3 + x2 * x3
    F = -s * x1 * x2 * x3 + U * (x1 * sym("m1")**2 + x2 * sym("m2")**2 + x3 * sym("m3")**2)
    assert same(d.U, U) and same(d.F, F)
    f = load(ROOT / "diagrams" / "sunrise_2L_D2.toml").diagram
    assert same(f.U, U) and same(f.F, F)


# --------------------------------------------------------------------------- graph = propagators
PROPAGATOR_FORMS = {
    # name: (graph spec, loop momenta, propagators written by hand, independent momenta)
    "bubble": (dict(internal_lines=[["m1", [1, 2]], ["m2", [2, 1]]],
                    external_lines=[["p", 1], ["q", 2]], scalar_products={"p*p": "s"}),
               ["k"], ["k**2 - m1**2", "(k + p)**2 - m2**2"], ["p"]),
    "triangle": (TRIANGLE, ["k"], ["k**2 - m1**2", "(k + p2)**2 - m2**2", "(k - p1)**2 - m3**2"],
                 ["p1", "p2"]),
    "box": (BOX, ["k"], ["k**2 - m1**2", "(k + p1)**2 - m2**2", "(k + p1 + p2)**2 - m3**2",
                         "(k + p1 + p2 + p3)**2 - m4**2"], ["p1", "p2", "p3"]),
    "ladder": (LADDER, ["k1", "k2"], ["(k1 + p1)**2 - mt**2", "(k1 - p2)**2 - mt**2",
                                      "(k1 - k2)**2 - mZ**2", "(k2 + p1)**2 - mt**2",
                                      "(k2 - p2)**2 - mt**2", "k2**2 - mZ**2"], ["p1", "p2"]),
    "sunrise": (SUNRISE, ["k1", "k2"], ["k1**2 - m1**2", "k2**2 - m2**2",
                                        "(k1 + k2 + p)**2 - m3**2"], ["p"]),
    # k on line 6 (6 -> 1), l on line 2 (2 -> 3), momentum conservation at each vertex
    "double box": (DOUBLE_BOX, ["k", "l"], ["(k + p1)**2", "l**2", "(l + p2)**2",
                                            "(l + p2 + p3)**2", "(k + p1 + p2 + p3)**2", "k**2",
                                            "(k + p1 - l)**2"], ["p1", "p2", "p3"]),
}


@pytest.mark.parametrize("name", list(PROPAGATOR_FORMS))
def test_graph_form_equals_propagator_form(name):
    spec, loops, props, ext = PROPAGATOR_FORMS[name]
    dim = 2 if name in ("sunrise", "bubble") else 4
    g = graph(spec, dimension=dim)
    p = Diagram.from_propagators(loops, props, ext, spec["scalar_products"], dimension=dim)
    assert same(g.U, p.U) and same(g.F, p.F)
    assert (g.loops, g.N) == (p.loops, p.N)


def test_pentagon_graph_equals_propagators():
    t = tomllib.loads(PENTAGON_FILE.read_text())["diagram"]
    g = load(PENTAGON_FILE).diagram
    props = ["k**2 - mt**2", "(k + p1)**2 - mt**2", "(k + p1 + p2)**2 - mt**2",
             "(k + p1 + p2 + p3)**2 - mH**2", "(k + p1 + p2 + p3 + p4)**2 - mt**2"]
    p = Diagram.from_propagators(["k"], props, ["p1", "p2", "p3", "p4"], t["scalar_products"])
    assert same(g.U, p.U) and same(g.F, p.F)


# --------------------------------------------------------------------------- enumeration
@pytest.mark.parametrize("name, spec, eliminate, dimension", [
    ("bubble", dict(internal_lines=[["m1", [1, 2]], ["m2", [2, 1]]],
                    external_lines=[["p", 1], ["q", 2]], scalar_products={"p*p": "s"}), None, 2),
    ("triangle", TRIANGLE, None, 4),
    ("triangle, p1 eliminated", dict(TRIANGLE, scalar_products={
        "p2*p2": "s2", "p3*p3": "s3", "p2*p3": "(s1 - s2 - s3)/2"}), "p1", 4),
    ("box", BOX, None, 4),
    ("sunrise", SUNRISE, None, 2),
    ("ladder", LADDER, None, 4),
    ("double box", DOUBLE_BOX, None, 4),
    ("crossed vertex", CROSSED_VERTEX, None, 4),
    ("tadpole on a triangle", TADPOLE_ON_TRIANGLE, None, 3),
])
def test_matrix_formula_agrees_with_tree_and_forest_enumeration(name, spec, eliminate, dimension):
    d = graph(spec, dimension=dimension, eliminate=eliminate)
    U, F = enum(spec, eliminate=eliminate)
    assert same(d.U, U), name
    assert same(d.F, F), name


def test_pentagon_file_agrees_with_enumeration():
    t = tomllib.loads(PENTAGON_FILE.read_text())["diagram"]
    spec = dict(internal_lines=t["internal_lines"], external_lines=t["external_lines"],
                scalar_products=t["scalar_products"])
    d = load(PENTAGON_FILE).diagram
    U, F = enum(spec)
    assert same(d.U, U) and same(d.F, F)


# --------------------------------------------------------------------------- 2. exponents
@pytest.mark.parametrize("case, L, D, powers, a, b, pref", [
    # a = nu - (L+1) D/2, b = nu - L D/2, pref = (-1)^nu Gamma(b) / prod Gamma(nu_j)
    ("bubble", 1, 2, [1, 1], 0, 1, 1),
    ("bubble", 1, 2, [2, 1], 1, 2, -1),                  # (-1)^3 Gamma(2)/(Gamma(2) Gamma(1))
    ("bubble", 1, 2, [3, 1], 2, 3, 1),                   # Gamma(3)/Gamma(3)
    ("bubble", 1, 3, [1, 1], sympy.Rational(-1), sympy.Rational(1, 2), sympy.sqrt(sympy.pi)),
    ("triangle", 1, 4, [1, 1, 1], -1, 1, -1),
    ("triangle", 1, 4, [2, 1, 1], 0, 2, 1),
    ("triangle", 1, 6, [2, 1, 1], -2, 1, 1),             # Gamma(1)/Gamma(2)
    ("triangle", 1, 4, [3, 2, 1], 2, 4, 3),              # Gamma(4)/(Gamma(3) Gamma(2)) = 6/2
    ("box", 1, 4, [1, 1, 1, 1], 0, 2, 1),
    ("sunrise", 2, 2, [1, 1, 1], 0, 1, -1),
    ("sunrise", 2, 3, [1, 1, 1], None, None, None),     # b = 0: Gamma(0), refused
    ("ladder", 2, 4, [1] * 6, 0, 2, 1),
])
def test_exponents_and_prefactor(case, L, D, powers, a, b, pref):
    spec = {"bubble": dict(internal_lines=[["m1", [1, 2]], ["m2", [2, 1]]],
                           external_lines=[["p", 1], ["q", 2]], scalar_products={"p*p": "s"}),
            "triangle": TRIANGLE, "box": BOX, "sunrise": SUNRISE, "ladder": LADDER}[case]
    if pref is None:
        with pytest.raises(DiagramError, match="overall UV divergence") as e:
            graph(spec, dimension=D, powers=powers)
        assert e.value.key == "dimension"
        return
    d = graph(spec, dimension=D, powers=powers)
    assert d.loops == L
    assert d.U_exponent == a and d.F_exponent == b
    assert sympy.simplify(d.prefactor() - pref) == 0
    assert d.prefactor("none") == 1
    with pytest.raises(ValueError):
        d.prefactor("feynman")


def test_table51_and_pentagon_prefactors():
    """Table 5.1: nu = 7, L = 2, D = 4: U^1/F^3, prefactor (-1)^7 Gamma(3) = -2 (the seed's 2);
    pentagon: nu = 5, L = 1: U^1/F^3, prefactor (-1)^5 Gamma(3) = -2 (the seed's -2)."""
    for name in ("table51_2L.toml", "pentagon_ggttH.toml"):
        d = load(ROOT / "diagrams" / name).diagram
        assert (d.U_exponent, d.F_exponent, d.prefactor()) == (1, 3, -2)


def _bubble_D2(powers):
    return _bubble(powers, 2)


def test_raised_power_equals_mass_derivative():
    """(q^2 - m1^2)^-2 = d/d(m1^2) (q^2 - m1^2)^-1, so with the full normalization
    I(nu1 = 2) = dI(nu1 = 1)/d(m1^2).  Both sides from the code's U, F, exponents and prefactor,
    integrated with mpmath (20 digits) on the 1-simplex; tolerance 1e-12 relative."""
    mpmath.mp.dps = 20
    kin = {"s": mpmath.mpf(-1.3), "m2": mpmath.mpf("0.7")}

    def full(powers, m1sq):
        d = _bubble_D2(powers)
        x1, x2 = d.variables
        f = sympy.lambdify((x1, x2, sym("s"), sym("m1"), sym("m2")), d.integrand(), "mpmath")
        val = mpmath.quad(lambda x: f(x, 1 - x, kin["s"], mpmath.sqrt(m1sq), kin["m2"]), [0, 1])
        return complex(d.prefactor()) * val

    m1sq = mpmath.mpf("0.45")
    lhs = full([2, 1], m1sq)
    rhs = mpmath.diff(lambda m: full([1, 1], m), m1sq)
    assert abs(lhs - rhs) <= 1e-12 * abs(rhs)
    # and the second power on the other line: d/d(m2^2)
    d12 = _bubble_D2([1, 2])
    assert d12.F_exponent == 2 and d12.prefactor() == -1


def test_power_zero_contracts_the_line():
    """Triangle with nu3 = 0 (line 3-1 contracted: vertices 3 and 1 merge) is the bubble with
    p1 + p3 = -p2 flowing in at the merged vertex; nu1 = 0 likewise (variables renamed)."""
    tri = graph(TRIANGLE, dimension=2, powers=[1, 1, 0])
    bub = Diagram.from_graph([["m1", [1, 2]], ["m2", [2, 1]]], [["p1", 1], ["p2", 2], ["p3", 1]],
                             TRIANGLE["scalar_products"], dimension=2)
    assert tri.N == 2 and tri.variables == tuple(X(2))
    assert same(tri.U, bub.U) and same(tri.F, bub.F)
    assert (tri.U_exponent, tri.F_exponent, tri.prefactor()) == (0, 1, 1)

    tri1 = graph(TRIANGLE, dimension=2, powers=[0, 1, 1])          # line 1-2 contracted
    bub1 = Diagram.from_graph([["m2", [1, 3]], ["m3", [3, 1]]], [["p1", 1], ["p2", 1], ["p3", 3]],
                              TRIANGLE["scalar_products"], dimension=2)
    x1, x2, x3 = X(3)
    ren = {x1: x2, x2: x3}
    assert tri1.variables == (x2, x3)
    assert same(tri1.U, bub1.U.subs(ren, simultaneous=True))
    assert same(tri1.F, bub1.F.subs(ren, simultaneous=True))


def test_power_zero_on_a_self_loop_is_scaleless():
    """Removing the only propagator of a loop leaves int d^Dk 1 = 0: U vanishes."""
    with pytest.raises(DiagramError, match="U vanishes") as e:
        graph(TADPOLE_ON_TRIANGLE, dimension=3, powers=[1, 1, 0, 1])
    assert e.value.key == "powers"


# --------------------------------------------------------------------------- 4. refusals
MASSLESS_BUBBLE = dict(internal_lines=[["0", [1, 2]], ["0", [2, 1]]],
                       external_lines=[["p", 1], ["q", 2]])


@pytest.mark.parametrize("what, build, key, fragment", [
    ("bubble in D = 4", lambda: _bubble([1, 1], 4), "dimension", "overall UV divergence"),
    ("triangle in D = 6", lambda: graph(TRIANGLE, dimension=6), "dimension", "overall UV divergence"),
    ("massless bubble at p^2 = 0",
     lambda: Diagram.from_graph(**MASSLESS_BUBBLE, scalar_products={"p*p": "0"}, dimension=3),
     None, "scaleless"),
    ("massless tadpole", lambda: Diagram.from_graph([["0", [1, 1]]], dimension=3), None, "scaleless"),
    ("massless vacuum sunrise",
     lambda: Diagram.from_graph([["0", [1, 2]], ["0", [1, 2]], ["0", [1, 2]]], dimension=2),
     None, "scaleless"),
    ("disconnected graph",
     lambda: Diagram.from_graph([["m", [1, 2]], ["m", [2, 1]], ["m", [3, 4]], ["m", [4, 3]]],
                                dimension=2), "internal_lines", "disconnected"),
    ("tree graph", lambda: Diagram.from_graph([["m", [1, 2]]], [["p", 1], ["q", 2]], {"p*p": "s"}),
     "internal_lines", "no loop"),
    ("negative power", lambda: graph(TRIANGLE, powers=[1, -1, 1]), "powers", "negative power"),
    ("powers too short", lambda: graph(TRIANGLE, powers=[1, 1]), "powers", "2 entries for 3 lines"),
    ("powers too long", lambda: graph(TRIANGLE, powers=[1, 1, 1, 1]), "powers", "4 entries"),
    ("power not a number", lambda: graph(TRIANGLE, powers=[1, "a", 1]), "powers", "unknown symbol"),
    ("all powers zero", lambda: graph(TRIANGLE, powers=[0, 0, 0]), "powers", "power 0"),
    ("momentum used twice",
     lambda: Diagram.from_graph(TRIANGLE["internal_lines"], [["p1", 1], ["p2", 2], ["p1", 3]],
                                {"p1*p1": "0"}), "external_lines[2]", "appears twice"),
    ("product of the eliminated momentum",
     lambda: graph(dict(TRIANGLE, scalar_products={**TRIANGLE["scalar_products"], "p1*p3": "0"})),
     "scalar_products", "eliminated momentum"),
    ("product missing",
     lambda: graph(dict(TRIANGLE, scalar_products={"p1*p1": "0", "p2*p2": "0"})),
     "scalar_products", "missing 'p1*p2'"),
    ("product given twice",
     lambda: graph(dict(TRIANGLE, scalar_products={**TRIANGLE["scalar_products"], "p2*p1": "0"})),
     "scalar_products", "given twice"),
    ("leg on a missing vertex",
     lambda: Diagram.from_graph(TRIANGLE["internal_lines"], [["p1", 1], ["p2", 2], ["p3", 9]],
                                TRIANGLE["scalar_products"]), "external_lines[2]", "does not exist"),
    ("leg vertex not a label",
     lambda: Diagram.from_graph(TRIANGLE["internal_lines"], [["p1", 1], ["p2", 2], ["p3", [3]]],
                                TRIANGLE["scalar_products"]), "external_lines[2]", "must be an integer"),
    ("line without two vertices", lambda: Diagram.from_graph([["m", [1]]]), "internal_lines[0]",
     "expected [mass, [vertex, vertex]]"),
    ("non-quadratic propagator",
     lambda: Diagram.from_propagators(["k"], ["(k**2 - m**2)**2"], dimension=6), "propagators[0]",
     "not quadratic"),
    ("propagator without loop momentum",
     lambda: Diagram.from_propagators(["k"], ["k**2", "p**2 - m**2"], ["p"], {"p*p": "s"}),
     "propagators[1]", "does not depend on any loop momentum"),
    ("U of the wrong degree",
     lambda: Diagram.from_polynomials("x1*x2", "x1*x2*(x1+x2)", ["x1", "x2"], loops=1),
     "U", "homogeneous of degree 1"),
    ("F not homogeneous",
     lambda: Diagram.from_polynomials("x1+x2", "x1*x2 + x1", ["x1", "x2"], loops=1),
     "F", "homogeneous of degree 2"),
    ("64-line banana (63 loops)", lambda: Diagram.from_graph([["m", [1, 2]]] * 64, dimension=1),
     "internal_lines", "too large"),
    ("two loops, 64 massive lines",
     lambda: Diagram.from_graph([["m", [1, 2]]] * 3 + [["m", [2, 3]]] * 61, dimension=1),
     "internal_lines", "too large"),
    ("seven loops from propagators",
     lambda: Diagram.from_propagators([f"k{i}" for i in range(7)],
                                      [f"k{i}**2 - m**2" for i in range(7)] + ["(k0+k1+k2+k3+k4+k5+k6)**2"],
                                      dimension=1), "propagators", "too large"),
    ("loops not a positive integer",
     lambda: Diagram.from_polynomials("x1+x2", "x1*x2", ["x1", "x2"], loops=0), "loops", "positive"),
])
def test_refusals_name_the_key(what, build, key, fragment):
    """Each refusal is a DiagramError with the key, the reason, and comes quickly (< 2 s)."""
    t0 = time.perf_counter()
    with pytest.raises(DiagramError) as e:
        build()
    assert fragment in str(e.value), what
    assert e.value.key == key, what
    assert time.perf_counter() - t0 < 2.0, what


def _bubble(powers, dimension):
    return Diagram.from_graph([["m1", [1, 2]], ["m2", [2, 1]]], [["p", 1], ["q", 2]],
                              {"p*p": "s"}, dimension=dimension, powers=powers)



def test_finite_cases_are_not_refused():
    """The refusals are not over-eager: massive tadpole in D = 3 (Gamma(-1/2) finite), massless
    bubble off the light cone in D = 3, massless triangle off-shell in D = 4."""
    t = Diagram.from_graph([["m", [1, 1]]], dimension=3)
    assert (t.U, t.F_exponent) == (sym("x1"), sympy.Rational(-1, 2))
    Diagram.from_graph(**MASSLESS_BUBBLE, scalar_products={"p*p": "s"}, dimension=3)
    load(ROOT / "diagrams" / "triangle_massless_offshell.toml")


def test_scaleless_only_at_a_kinematic_point():
    """Massless bubble with p^2 = s: fine for s != 0, scaleless at s = 0 (region refuses)."""
    d = Diagram.from_graph(**MASSLESS_BUBBLE, scalar_products={"p*p": "s"}, dimension=3)
    assert d.region({"s": -1.0}).kind == "euclidean"
    with pytest.raises(DiagramError, match="scaleless"):
        d.region({"s": 0.0})


def test_is_scaleless_lee_pomeransky():
    x1, x2, x3 = X(3)
    assert is_scaleless(x1 + x2, 0 * x1, (x1, x2))                  # massless, p^2 = 0
    assert not is_scaleless(x1 + x2, 2 * x1 * x2, (x1, x2))          # p^2 != 0
    assert is_scaleless(x1, 0 * x1, (x1,))                           # massless tadpole
    assert not is_scaleless(x1, x1**2, (x1,))                        # massive tadpole
    assert is_scaleless(x1 * x2 + x2 * x3 + x1 * x3, 0 * x1, (x1, x2, x3))


# --------------------------------------------------------------------------- 3. regions
def _triangle_C0():
    return load(ROOT / "diagrams" / "triangle_below_threshold.toml").diagram


@pytest.mark.parametrize("s, kind, how", [
    (1.0, "euclidean", "all coefficients"),
    (-5.0, "euclidean", "all coefficients"),
    (3.9, "euclidean", "branch-and-bound"),
    (3.99, "euclidean", "branch-and-bound"),       # near threshold: F_min = 1 - 3.99/4 > 0
    (4.01, "physical", "F < 0 found"),
    (10.0, "physical", "F < 0 found"),
])
def test_triangle_C0_regions(s, kind, how):
    r = _triangle_C0().region({"s": s, "m": 1.0})
    assert r.kind == kind and how in r.method
    assert r.euclidean is (kind == "euclidean")


@pytest.mark.parametrize("name, kind", [
    ("box_massless_offshell.toml", "euclidean"),
    ("elliptic2L_euclidean.toml", "euclidean"),
    ("triangle_massless_offshell.toml", "euclidean"),
    ("ladder_vertex_2L_k1.toml", "euclidean"),
    ("sunrise_2L_D2.toml", "euclidean"),
    ("table51_2L.toml", "euclidean"),
    ("triangle_below_threshold.toml", "euclidean"),
    ("ladder_vertex_2L_k5.toml", "physical"),
    ("pentagon_ggttH.toml", "physical"),
    ("triangle_above_threshold.toml", "physical"),
])
def test_bundled_points(name, kind):
    p = load(ROOT / "diagrams" / name)
    assert p.diagram.region(p.kinematics).kind == kind


def test_negative_region():
    """Massless triangle with all p_i^2 > 0: F = -(sum of positive terms) < 0 inside."""
    d = load(ROOT / "diagrams" / "triangle_massless_offshell.toml").diagram
    r = d.region({"P1": -0.3, "P2": -0.5, "P3": -1.0})
    assert r.kind == "negative" and r.euclidean


def _simplex_sample(n_var, n, rng):
    pts = rng.dirichlet(np.ones(n_var), size=n)
    edges = []   # edges and vertices of the simplex, where thresholds touch first
    for i, j in itertools.combinations(range(n_var), 2):
        t = np.linspace(0, 1, 101)[:, None]
        e = np.zeros((101, n_var))
        e[:, i], e[:, j] = t[:, 0], 1 - t[:, 0]
        edges.append(e)
    return np.concatenate([pts] + edges)


@pytest.mark.parametrize("name", ["triangle", "box"])
def test_never_calls_a_physical_point_euclidean(name):
    """Random masses in [0, 2] and invariants in [-6, 12]: whenever the classifier says
    'euclidean', F >= 0 at 20000 random simplex points plus every edge (tolerance 1e-12 of the
    coefficient scale); whenever it says 'negative', F <= 0 there.  The test is not vacuous:
    both verdicts, and a branch-and-bound proof, occur among the points drawn."""
    rng = np.random.default_rng(20240 + len(name))
    spec = TRIANGLE if name == "triangle" else BOX
    d = graph(spec)
    xs = d.variables
    poly = sympy.Poly(d.F, *xs)
    expo = np.array(poly.monoms(), dtype=float)
    syms = [sym(s) for s in d.kinematic_symbols]
    coef_fn = sympy.lambdify(syms, list(poly.coeffs()), "numpy")
    pts = _simplex_sample(len(xs), 20000, rng)
    mono = np.prod(pts[:, None, :] ** expo[None, :, :], axis=2)
    seen = {"euclidean": 0, "negative": 0, "physical": 0, "bnb": 0}
    drawn = []
    for _ in range(150):
        kin = {}
        for s_ in d.kinematic_symbols:
            kin[s_] = rng.uniform(0, 2) if s_.startswith("m") else rng.uniform(-6, 12)
            if rng.random() < 0.15:
                kin[s_] = 0.0
        coef = np.array(coef_fn(*[kin[s_] for s_ in d.kinematic_symbols]), dtype=float)
        r = classify_coefficients(expo, coef)
        drawn.append((coef, r))
        seen[r.kind] += 1
        seen["bnb"] += "branch-and-bound" in r.method
        F = mono @ coef
        tol = 1e-12 * np.abs(coef).sum()
        if r.kind == "euclidean":
            assert F.min() >= -tol, (kin, r)
        elif r.kind == "negative":
            assert F.max() <= tol, (kin, r)
    assert seen["euclidean"] >= 5 and seen["physical"] >= 5 and seen["bnb"] >= 1, seen
    # all points at once (one branch-and-bound over every point's boxes): each point's
    # classification, evidence included, is the one it gets alone
    together = classify_points(expo, np.array([c for c, _ in drawn]))
    assert together == [r for _, r in drawn]


def test_classify_F_consistent_with_classify_coefficients():
    d = _triangle_C0()
    U, F = d.substitute({"s": 3.99, "m": 1.0})
    r = classify_F(F, d.variables)
    assert isinstance(r, Region) and r.kind == "euclidean"
    with pytest.raises(DiagramError, match="without values"):
        classify_F(d.F, d.variables)                 # symbols left: refused, not guessed


def test_a_zero_at_a_vertex_leaves_positivity_undecided_after_a_short_search():
    """F of two loops vanishes at the simplex's vertices (U has no pure powers), so the bound
    of every box at a vertex is negative once F has a negative coefficient: no proof can close
    and the point is physical after a search of VERTEX_ZERO_BOXES boxes, not after the full
    budget; where F < 0 somewhere the search finds it.  The ladder vertex of seed 000 at
    k^2 = 2.5 m_t^2 (coefficients of both signs, F >= 0 on a sample) and at 6 m_t^2."""
    from loopint import region
    from loopint.lower import Integrand
    p = load(ROOT / "diagrams" / "ladder_vertex_2L_k1.toml")
    probe = Integrand(p.diagram)
    kin = probe.kinematics_array({"mt": 1.0, "mZ": p.kinematics["mZ"], "k2": [2.5, 6.0]})
    coefs = probe.F_coefficients(kin)
    expo = probe.F_exponents
    assert np.any(coefs[0] < 0) and np.any(coefs[0] > 0)
    rng = np.random.default_rng(3)
    x = rng.dirichlet(np.ones(expo.shape[1]), 20000)
    assert (region._mono(x, expo) @ coefs[0]).min() >= 0
    N = expo.shape[1]
    corner = region._values(np.eye(N)[:1], expo, np.clip(coefs, 0, None), np.array([0])) - \
        region._values(np.ones((1, N)), expo, np.clip(-coefs, 0, None), np.array([0]))
    assert corner[0] < 0                          # the box {x_1 = 1} does not close
    at, above = classify_points(expo, coefs)
    assert at.kind == "physical" and "vanishes at the vertex" in at.method
    assert f"{region.VERTEX_ZERO_BOXES} boxes" in at.method
    assert above.kind == "physical" and above.method.startswith("F < 0 found")


def test_undecided_is_physical():
    """F = (x1 - x2)^2 touches 0 inside: cannot be proven positive; never 'euclidean'."""
    expo = np.array([[2, 0], [1, 1], [0, 2]], float)
    r = classify_coefficients(expo, np.array([1.0, -2.0, 1.0]), max_boxes=2000)
    assert r.kind == "physical" and "undecided" in r.method
    # the budget is per point: beside points decided at once, the undecided one stays so
    rows = np.array([[1.0, -2.0, 1.0], [1.0, 1.0, 1.0], [1.0, -3.0, 1.0], [1.0, -1.0, 1.0]])
    together = classify_points(expo, rows, 2000)
    assert together == [classify_coefficients(expo, c, 2000) for c in rows]
    assert [(r.kind, r.method.split(" ")[0]) for r in together] == [
        ("physical", "undecided:"), ("euclidean", "all"), ("physical", "F"), ("euclidean", "F")]


def test_branch_and_bound_monomials_are_exact_products():
    """The bound's monomials x^a at dyadic box corners (degree 3, the F of two loops): equal
    to the exact rational values, for every exponent pattern up to degree 3 in 4 variables."""
    from fractions import Fraction

    from loopint.region import _mono
    expo = np.array([a for a in itertools.product(range(4), repeat=4) if sum(a) <= 3], float)
    rng = np.random.default_rng(5)
    num = rng.integers(0, 1 << 12, (40, 4))
    x = num / float(1 << 12)
    got = _mono(x, expo)
    for b in range(len(x)):
        for t, a in enumerate(expo.astype(int)):
            exact = np.prod([Fraction(int(n), 1 << 12) ** int(k) for n, k in zip(num[b], a)])
            assert got[b, t] == float(exact)


def test_api_conveniences():
    d = graph(TRIANGLE)
    assert "U=" in repr(d) and d._repr_latex_().startswith("$")
    x1, x2, x3 = X(3)
    assert same(d.integrand(), (x1 + x2 + x3) ** -1 / d.F)
    U, F = d.substitute({"s1": 0.5, "s2": 0.0, "s3": 1.0, "m1": 1.0, "m2": 1.0, "m3": 1.0})
    assert F.free_symbols <= {x1, x2, x3}
    assert d.propagators[0].endswith("(m1)**2")
