"""Never a number for a divergent integral (loopint/divergence.py, loopint.compute's refusal).

(A) divergent integrals at integer D: ``analyze`` says not convergent, with the kind of each
    divergence (UV subdivergence, soft, collinear) derived here by hand (one comment line per
    case), and ``loopint.compute`` (and the CLI, exit status 2) refuses them with a
    DiagramError naming the kind and the Feynman parameters;
(B) convergent integrals with massless lines and/or on-shell legs: ``analyze`` finds no
    divergent face, and ``compute`` agrees with independent references (mpmath quadrature of
    the one-loop parametric integrals written here, the Usyukina-Davydychev function, the
    D = 6 massless box, the bundled files' references);
(C) the integrable boundary singularity t^e, -1 < e < 0, of a finite integral: the two-loop
    product of a massive bubble and a massive triangle sharing one vertex at D = 3.9, 3.99,
    exact value = product of the one-loop integrals in D dimensions (mpmath);
(D) every bundled diagram is convergent.

Independent power counting (tests/divergence_cases.py, ``newton_fan``): the facets of the
Newton polytope of U + F (Minkowski sum) with the issue's classification rule; the hand
derivations below are checked against it, and ``analyze`` against both.

Conventions (DESIGN 4.1): Minkowski metric, pySecDec normalization, F = -sum(2-forest
invariants) prod x + U sum x m^2; Euclidean = negative invariants, positive masses.  For one
loop, two lines i, j meeting at the vertex where momentum P enters give -P^2 x_i x_j in F.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import mpmath
import numpy as np
import pytest
import sympy

import loopint
from loopint.diagram import Diagram
from loopint.errors import DiagramError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from divergence_cases import (bubble_D, box6_massless, newton_fan, phi1,  # noqa: E402
                              simplex2, triangle_D)

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"UV", "soft", "collinear"}
# A divergent integral must be refused before any integration; if it is not, this bounds the
# time the (wrong) integration can take.
GUARD = dict(rtol=1e-3, max_evals=200_000)


@pytest.fixture(scope="module")
def dv():
    """The module under test (imported here so that the independent checks run without it)."""
    return importlib.import_module("loopint.divergence")


def X(*names):
    return [sympy.Symbol(n, real=True) for n in names]


def same(a, b):
    return sympy.expand(a - b) == 0


# =========================================================================== diagrams
# one-loop QED-like vertex: electron lines x1 (1-3), x2 (2-3) of mass m, photon x3 (1-2);
# legs p1 (vertex 1), p2 (vertex 2), p3 (vertex 3, p3^2 = t).
def qed_vertex():
    return Diagram.from_graph(
        internal_lines=[["m", [1, 3]], ["m", [2, 3]], ["0", [1, 2]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
        scalar_products={"p1*p1": "p1sq", "p2*p2": "p2sq", "p1*p2": "(t - p1sq - p2sq)/2"})


def qed_vertex_polynomials():
    # U and F of qed_vertex() at p1^2 = p2^2 = m^2, written by hand:
    # F = -(m^2 x1 x3 + m^2 x2 x3 + t x1 x2) + (x1 + x2 + x3) m^2 (x1 + x2)
    return Diagram.from_polynomials(U="x1 + x2 + x3", F="m**2*(x1 + x2)**2 - t*x1*x2",
                                    variables=["x1", "x2", "x3"], loops=1, dimension=4)


# one-loop box with one photon (propagator form): q1 = k (mass m), q2 = k + p2 (photon),
# q3 = k + p2 + p3 (mass m), q4 = k - p1 (mass M); legs p2, p3 next to the photon.
def photon_box(p2sq="m**2", p3sq="m**2"):
    return Diagram.from_propagators(
        loop_momenta=["k"],
        propagators=["k**2 - m**2", "(k + p2)**2", "(k + p2 + p3)**2 - m**2", "(k - p1)**2 - M**2"],
        external_momenta=["p1", "p2", "p3"],
        scalar_products={"p1*p1": "p1sq", "p2*p2": p2sq, "p3*p3": p3sq,
                         "p1*p2": f"(s - p1sq - ({p2sq}))/2",
                         "p2*p3": f"(t - ({p2sq}) - ({p3sq}))/2",
                         "p1*p3": f"(p4sq - s - t + ({p2sq}))/2"})


# massless triangle: x1 (3-1), x2 (1-2), x3 (2-3); F = -(p1^2 x1 x2 + p2^2 x2 x3 + p3^2 x1 x3)
TRI_LINES = [["0", [3, 1]], ["0", [1, 2]], ["0", [2, 3]]]
TRI_LEGS = [["p1", 1], ["p2", 2], ["p3", 3]]
TRI_SP = {"p1*p1": "p1sq", "p2*p2": "p2sq", "p1*p2": "(p3sq - p1sq - p2sq)/2"}


def triangle(masses=("0", "0", "0"), scalar_products=None, **kw):
    lines = [[m, e] for m, (_, e) in zip(masses, TRI_LINES)]
    return Diagram.from_graph(internal_lines=lines, external_lines=TRI_LEGS,
                              scalar_products=scalar_products or TRI_SP, **kw)


def massless_box_onshell_graph():
    return Diagram.from_graph(
        internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["0", [3, 4]], ["0", [4, 1]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
        scalar_products={"p1*p1": "0", "p2*p2": "0", "p3*p3": "0", "p1*p2": "s/2",
                         "p2*p3": "t/2", "p1*p3": "-(s + t)/2"})


def massless_box_onshell_propagators(dimension):
    # q1 = k, q2 = k + p1, q3 = k + p1 + p2, q4 = k + p1 + p2 + p3: F = -s x1 x3 - t x2 x4
    return Diagram.from_propagators(
        loop_momenta=["k"], propagators=["k**2", "(k + p1)**2", "(k + p1 + p2)**2",
                                         "(k + p1 + p2 + p3)**2"],
        external_momenta=["p1", "p2", "p3"],
        scalar_products={"p1*p1": "0", "p2*p2": "0", "p3*p3": "0", "p1*p2": "s/2",
                         "p2*p3": "t/2", "p1*p3": "-(s + t)/2"}, dimension=dimension)


def massive_box_graph():
    return Diagram.from_graph(
        internal_lines=[["m", [1, 2]], ["m", [2, 3]], ["m", [3, 4]], ["m", [4, 1]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
        scalar_products={"p1*p1": "psq", "p2*p2": "psq", "p3*p3": "psq",
                         "p1*p2": "(s - 2*psq)/2", "p2*p3": "(t - 2*psq)/2",
                         "p1*p3": "(2*psq - s - t)/2"})


# two-loop vertex, a massive bubble (x4, x5 between a and b) inserted in the line 3-1
def vertex_with_bubble():
    return Diagram.from_graph(
        internal_lines=[["m", [1, 2]], ["m", [2, 3]], ["m", [3, "a"]], ["m", ["a", "b"]],
                        ["m", ["a", "b"]], ["m", ["b", 1]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
        scalar_products={"p1*p1": "-Q", "p2*p2": "-Q", "p1*p2": "Q/2"})


# two-loop self-energy: a bubble (k1, k1 - k2) inserted in the line k2, which appears twice
# (power 2); the other line k2 + p.  nu = 5, L = 2, D = 4: Gamma(1), overall finite.
def selfenergy_with_bubble():
    return Diagram.from_propagators(
        loop_momenta=["k1", "k2"],
        propagators=["(k2 + p)**2 - m**2", "k2**2 - m**2", "k1**2 - m**2", "(k1 - k2)**2 - m**2"],
        external_momenta=["p"], scalar_products={"p*p": "psq"}, powers=[1, 2, 1, 1])


def sunrise(powers, dimension=4):
    return Diagram.from_propagators(
        loop_momenta=["k1", "k2"],
        propagators=["k1**2 - m1**2", "k2**2 - m2**2", "(k1 + k2 + p)**2 - m3**2"],
        external_momenta=["p"], scalar_products={"p*p": "psq"}, powers=powers,
        dimension=dimension)


# product of a massive bubble (x1, x2 between 1 and 2) and a massive triangle (x3: 1-3,
# x4: 3-4, x5: 4-1) sharing vertex 1; Euclidean legs p_i.p_j = -delta_ij (i, j = 1..3), so
# the bubble carries p2^2 = -1 and the triangle p3^2 = -1, p4^2 = (p1+p2+p3)^2 = -3 and
# (p1+p2)^2 = -2 at vertex 1.
FACT_SP = {"p1*p1": "-1", "p2*p2": "-1", "p3*p3": "-1", "p1*p2": "0", "p1*p3": "0",
           "p2*p3": "0"}


def bubble_times_triangle(dimension=4):
    return Diagram.from_graph(
        internal_lines=[["mb", [1, 2]], ["mb", [1, 2]], ["mt", [1, 3]], ["mt", [3, 4]],
                        ["mt", [4, 1]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
        scalar_products=FACT_SP, dimension=dimension)


FACT_UB, FACT_UT = "(x1 + x2)", "(x3 + x4 + x5)"
FACT_FB = "(x1*x2 + mb**2*(x1 + x2)**2)"
FACT_FT = "(x3*x4 + 3*x4*x5 + 2*x3*x5 + mt**2*(x3 + x4 + x5)**2)"


def bubble_times_triangle_polynomials(dimension=4):
    # one-vertex-reducible graph: U = U_b U_t, F = U_t F_b + U_b F_t (hand-written)
    return Diagram.from_polynomials(
        U=f"{FACT_UB}*{FACT_UT}", F=f"{FACT_UT}*{FACT_FB} + {FACT_UB}*{FACT_FT}",
        variables=["x1", "x2", "x3", "x4", "x5"], loops=2, dimension=dimension)


# bubble (x1, x2: 1-2, mass mb) times the QED vertex (electrons x3: 1-3, x4: 1-4, photon
# x5: 3-4) sharing vertex 1; legs p3, p4 on shell (m^2), p2 Euclidean, p1 eliminated.
def bubble_times_qed_vertex():
    return Diagram.from_graph(
        internal_lines=[["mb", [1, 2]], ["mb", [1, 2]], ["m", [1, 3]], ["m", [1, 4]],
                        ["0", [3, 4]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]], eliminate="p1",
        scalar_products={"p2*p2": "-1", "p3*p3": "m**2", "p4*p4": "m**2",
                         "p3*p4": "(t - 2*m**2)/2", "p2*p3": "0", "p2*p4": "0"})


# two-loop planar ladder vertex (lines as in diagrams/ladder_vertex_2L_k1.toml):
# 1 (V3-Va), 2 (V3-Vb) outer, 3 (Va-Vb) rung, 4 (Va-V1), 5 (Vb-V2) outer, 6 (V1-V2) rung
def ladder(outer, rung, scalar_products):
    return Diagram.from_graph(
        internal_lines=[[outer, ["V3", "Va"]], [outer, ["V3", "Vb"]], [rung, ["Va", "Vb"]],
                        [outer, ["Va", "V1"]], [outer, ["Vb", "V2"]], [rung, ["V1", "V2"]]],
        external_lines=[["p1", "V1"], ["p2", "V2"], ["p3", "V3"]],
        scalar_products=scalar_products)


# two-loop non-planar (crossed) vertex: Va and Vb both joined to V1, V2 and V3
def crossed_vertex():
    return Diagram.from_graph(
        internal_lines=[["m", ["V3", "Va"]], ["m", ["V3", "Vb"]], ["m", ["Va", "V1"]],
                        ["m", ["Vb", "V2"]], ["m", ["Va", "V2"]], ["m", ["Vb", "V1"]]],
        external_lines=[["p1", "V1"], ["p2", "V2"], ["p3", "V3"]],
        scalar_products={"p1*p1": "psq", "p2*p2": "psq", "p1*p2": "(s - 2*psq)/2"})


def crossed_vertex_lines(masses):
    return Diagram.from_graph(
        internal_lines=[[m, e] for m, e in zip(masses, [["V3", "Va"], ["V3", "Vb"], ["Va", "V1"],
                                                         ["Vb", "V2"], ["Va", "V2"], ["Vb", "V1"]])],
        external_lines=[["p1", "V1"], ["p2", "V2"], ["p3", "V3"]],
        scalar_products={"p1*p1": "psq", "p2*p2": "psq", "p1*p2": "(s - 2*psq)/2"})


# ladder with one massless rung, the rest massive (m; the other rung M), top legs on shell
def ladder_one_massless_rung(which):
    inner, outer = ("0", "M") if which == "inner" else ("M", "0")
    return ladder_masses(["m", "m", inner, "m", "m", outer],
                         {"p1*p1": "m**2", "p2*p2": "m**2", "p1*p2": "(k2 - 2*m**2)/2"})


def ladder_masses(masses, scalar_products):
    edges = [["V3", "Va"], ["V3", "Vb"], ["Va", "Vb"], ["Va", "V1"], ["Vb", "V2"], ["V1", "V2"]]
    return Diagram.from_graph(internal_lines=[[m, e] for m, e in zip(masses, edges)],
                              external_lines=[["p1", "V1"], ["p2", "V2"], ["p3", "V3"]],
                              scalar_products=scalar_products)


# massless planar double box: lines 1-2, 2-3, 3-4, 4-5, 5-6, 6-1 and the middle rung 2-5;
# legs p1 (1), p2 (3), p3 (4), p4 (6), all light-like
def double_box_massless():
    return Diagram.from_graph(
        internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["0", [3, 4]], ["0", [4, 5]],
                        ["0", [5, 6]], ["0", [6, 1]], ["0", [2, 5]]],
        external_lines=[["p1", 1], ["p2", 3], ["p3", 4], ["p4", 6]],
        scalar_products={"p1*p1": "0", "p2*p2": "0", "p3*p3": "0", "p1*p2": "s/2",
                         "p2*p3": "t/2", "p1*p3": "-(s + t)/2"})


def bubble(masses, dimension):
    return Diagram.from_graph(
        internal_lines=[[masses[0], [1, 2]], [masses[1], [1, 2]]],
        external_lines=[["p1", 1], ["p2", 2]], scalar_products={"p1*p1": "psq"},
        dimension=dimension)


def ladder_file_massless_rungs():
    return loopint.load(ROOT / "diagrams" / "ladder_vertex_2L_k1.toml").diagram


# =========================================================================== (A) divergent
@dataclass
class Div:
    id: str
    build: Callable[[], Diagram]
    kin: dict | None
    kinds: set                 # each must be among analyze(...).kinds
    forbid: set = field(default_factory=set)   # none of these may be among the kinds
    faces: tuple = ()          # vanishing sets each expected as some divergent face
    pole_order: int | None = None              # exact, where derived by hand
    min_pole_order: int = 1
    names_in_message: tuple = ()               # parameters the refusal must name


DIVERGENT = [
    # photon x3 between the on-shell legs p1^2 = p2^2 = m^2 (given numerically): F has no x3,
    # F = m^2 (x1+x2)^2 - t x1 x2; x1, x2 ~ t: measure t dt, U ~ 1, F^-1 ~ t^-2 -> dt/t, soft.
    Div("qed-vertex-soft-numeric-onshell", qed_vertex,
        {"p1sq": 1.0, "p2sq": 1.0, "t": -1.0, "m": 1.0}, {"soft"}, {"UV", "collinear"},
        faces=(("x1", "x2"),), pole_order=1, names_in_message=("x1", "x2")),
    # the same integrand given as explicit polynomials: the same face {x1, x2}, soft.
    Div("qed-vertex-soft-polynomials", qed_vertex_polynomials, {"t": -1.0, "m": 1.0},
        {"soft"}, {"UV", "collinear"}, faces=(("x1", "x2"),), pole_order=1,
        names_in_message=("x1", "x2")),
    # photon x2 with on-shell neighbours p2^2 = p3^2 = m^2: F loses x1 x2 and x2 x3; along
    # (x1, x3, x4) ~ (t, t, t^2), x2 ~ 1: measure t^4, F ~ t^2, F^-2 ~ t^-4 -> log, soft.
    Div("photon-box-soft", photon_box,
        {"m": 1.0, "M": 2.0, "p1sq": -1.0, "p4sq": -1.5, "s": -2.0, "t": -3.0},
        {"soft"}, {"UV", "collinear"}, faces=(("x1", "x3", "x4"),), pole_order=1,
        names_in_message=("x1", "x3", "x4")),
    # massless triangle, p1^2 = p2^2 = 0: F = -s x1 x3; x1 -> 0 alone: F ~ t, F^-1 -> dt/t,
    # (x2, x3 finite: collinear), x3 -> 0 likewise; both at once: the soft-collinear 1/eps^2.
    Div("massless-triangle-two-onshell-legs", lambda: triangle(
        scalar_products={"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"}), {"s": -1.0},
        {"collinear"}, {"UV"}, faces=(("x1",), ("x3",)), pole_order=2, min_pole_order=2),
    # massless box, all legs on shell: F = -s x1 x3 - t x2 x4; two adjacent lines -> 0:
    # measure t, F ~ t, F^-2 -> dt/t (collinear); soft-collinear corners: 1/eps^2.
    Div("massless-box-onshell", massless_box_onshell_graph, {"s": -1.0, "t": -2.0},
        {"collinear"}, {"UV"}, pole_order=2, min_pole_order=2),
    # the same box in propagator form (D = 4).
    Div("massless-box-onshell-propagators", lambda: massless_box_onshell_propagators(4),
        {"s": -3.0, "t": -1.0}, {"collinear"}, {"UV"}, pole_order=2, min_pole_order=2),
    # massless triangle with one light-like leg given numerically (p1sq = 0.0):
    # F = x3 (P2 x2 + P3 x1); x3 -> 0: F ~ t -> dt/t with x1, x2 finite: collinear, 1/eps.
    Div("massless-triangle-one-onshell-leg-numeric", triangle,
        {"p1sq": 0.0, "p2sq": -1.0, "p3sq": -2.0}, {"collinear"}, {"UV", "soft"},
        faces=(("x3",),), pole_order=1, names_in_message=("x3",)),
    # massive bubble (x4, x5) in a two-loop vertex, D = 4: x4, x5 ~ t: U ~ t, F ~ t,
    # a = 0, b = 2: t^(1 - 2) = dt/t: the bubble's log UV subdivergence (Gamma(2) finite).
    Div("vertex-with-bubble-insertion-UV", vertex_with_bubble, {"Q": 1.0, "m": 1.0},
        {"UV"}, {"soft", "collinear"}, faces=(("x4", "x5"),), pole_order=1,
        names_in_message=("x4", "x5")),
    # bubble (x3, x4) in a two-loop self-energy, line x2 with power 2: nu = 5, Gamma(1)
    # finite; x3, x4 ~ t: t^(1 + (-1) - 1) = dt/t, UV.
    Div("selfenergy-bubble-insertion-power2-UV", selfenergy_with_bubble,
        {"m": 1.0, "psq": -1.0}, {"UV"}, {"soft", "collinear"}, faces=(("x3", "x4"),),
        pole_order=1, names_in_message=("x3", "x4")),
    # sunrise with powers [3, 1, 1], D = 4: nu = 5, Gamma(1); the subloop x2, x3 (unit powers)
    # ~ t: U ~ t, F ~ t, a = -1, b = 1: t^(1 - 1 - 1) = dt/t, UV.
    Div("sunrise-powers-311-UV", lambda: sunrise([3, 1, 1]),
        {"m1": 1.0, "m2": 2.0, "m3": 3.0, "psq": -1.0}, {"UV"}, {"soft", "collinear"},
        faces=(("x2", "x3"),), pole_order=1, names_in_message=("x2", "x3")),
    # bubble x triangle sharing a vertex, D = 4: x1, x2 ~ t: U ~ t, F ~ t, a = -1, b = 1:
    # t^(1 - 1 - 1) = dt/t, the bubble's UV pole (triangle finite).
    Div("bubble-times-triangle-UV", bubble_times_triangle, {"mb": 1.0, "mt": 1.5},
        {"UV"}, {"soft", "collinear"}, faces=(("x1", "x2"),), pole_order=1,
        names_in_message=("x1", "x2")),
    # the same as explicit polynomials U = U_b U_t, F = U_t F_b + U_b F_t.
    Div("bubble-times-triangle-UV-polynomials", bubble_times_triangle_polynomials,
        {"mb": 1.0, "mt": 1.5}, {"UV"}, {"soft", "collinear"}, faces=(("x1", "x2"),),
        pole_order=1, names_in_message=("x1", "x2")),
    # bubble x soft QED vertex, D = 4: the bubble's UV face {x1, x2} and the vertex's soft
    # photon x5 along (x1, x2, x3, x4) ~ (t^2, t^2, t, t): measure t^6, U^-1 ~ t^-2,
    # F^-1 ~ t^-4 -> log; with F counted like U (t^2) it converges: infrared, soft.
    Div("bubble-times-qed-vertex-UV-and-soft", bubble_times_qed_vertex,
        {"mb": 1.0, "m": 1.0, "t": -1.0}, {"UV", "soft"}, faces=(("x1", "x2"),),
        pole_order=2, min_pole_order=2),
    # two-loop ladder of the bundled file with the rung mass mZ set to 0.0 numerically:
    # the outer rung x6 between on-shell top legs (p1^2 = p2^2 = mt^2) goes soft (the
    # eikonal lines x4, x5 on shell), and then the inner rung x3 as well: IR, no UV subloop;
    # double soft, 1/eps^2.  (The rule calls the face {x1, x2, x4, x5} -> 0 with both rungs
    # finite "collinear" although no collinear region exists here: not asserted either way.)
    Div("ladder-2L-massless-rungs-numeric", ladder_file_massless_rungs,
        {"k2": 1.0, "mt": 1.0, "mZ": 0.0}, {"soft"}, {"UV"}, pole_order=2, min_pole_order=2),
    # two-loop planar massless vertex, p1^2 = p2^2 = 0: soft and collinear regions of both
    # loops (1/eps^4: Gonsalves, Phys. Rev. D 28 (1983) 1542); the inner triangle is UV
    # finite (3 lines: 3 - D/2 = 1 > 0).
    Div("ladder-2L-massless-onshell", lambda: ladder(
        "0", "0", {"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"}), {"s": -1.0},
        {"collinear"}, {"UV"}, pole_order=4, min_pole_order=4),
    # ladder with only the outer rung x6 massless (inner rung massive) between the on-shell
    # legs: the one-loop soft photon of the QED vertex, dressed: soft, 1/eps.
    Div("ladder-2L-outer-rung-massless", lambda: ladder_one_massless_rung("outer"),
        {"m": 1.0, "M": 1.0, "k2": -1.0}, {"soft"}, {"UV"}, pole_order=1),
    # two-loop crossed vertex, massless lines, light-like legs (psq = 0.0 numerically):
    # soft and collinear regions of both loops, 1/eps^4; no UV subloop (triangles).
    Div("crossed-vertex-2L-massless-onshell-numeric", lambda: crossed_vertex_lines(["0"] * 6),
        {"psq": 0.0, "s": -1.0}, {"collinear"}, {"UV"}, pole_order=4, min_pole_order=4),
    # massless planar double box, light-like legs: 1/eps^4 (Smirnov, Phys. Lett. B 460 (1999)
    # 397); subloops are boxes (4 - D/2 = 2 > 0): no UV.
    Div("double-box-massless-onshell", double_box_massless, {"s": -1.0, "t": -2.0},
        {"collinear"}, {"UV"}, pole_order=4, min_pole_order=4),
    # D = 2 bubble with a massless line x1: F = x2 (Q x1 + m^2 (x1 + x2)); x2 -> 0 alone:
    # F ~ t, a = 0, b = 1 -> dt/t with only x1 finite: soft (int d^2k/k^2 at k -> 0).
    Div("bubble-D2-one-massless-line", lambda: bubble(["0", "m"], 2),
        {"psq": -1.0, "m": 1.0}, {"soft"}, {"UV", "collinear"}, faces=(("x2",),),
        pole_order=1, names_in_message=("x2",)),
    # D = 2 massless bubble off shell: F = Q x1 x2, each x_i -> 0: dt/t, the other finite: soft.
    Div("bubble-D2-massless", lambda: bubble(["0", "0"], 2), {"psq": -1.0}, {"soft"},
        {"UV", "collinear"}, faces=(("x1",), ("x2",)), pole_order=1),
]


@pytest.mark.parametrize("case", DIVERGENT, ids=lambda c: c.id)
def test_hand_derivation_agrees_with_newton_polytope(case):
    """The expected kinds above against the independent Newton-polytope counting."""
    d = case.build()
    ref = newton_fan(d, case.kin)
    assert ref.one_sign, "the criterion is exact only for F of one sign"
    assert not ref.convergent
    assert case.kinds <= ref.kinds and not (case.forbid & ref.kinds), ref.divergent
    div_sets = {frozenset(f.vanishing) for f in ref.divergent}
    for s in case.faces:
        assert frozenset(s) in div_sets, (s, ref.divergent)
    assert all(f.phi == 0 for f in ref.divergent), "all logarithmic at integer D here"
    if case.pole_order is not None:
        assert ref.pole_order == case.pole_order
    assert ref.pole_order >= case.min_pole_order


def _check_verdict_shape(v, d):
    names = {str(x) for x in d.variables}
    for f in tuple(v.divergent_faces) + tuple(v.singular_faces):
        assert f.kind in KINDS, f
        assert set(f.vanishing) and set(f.vanishing) <= names, f
        assert set(f.vanishing) | set(f.finite) == names, f
        assert not set(f.vanishing) & set(f.finite), f
        assert set(f.finite), f"a projective face keeps a parameter finite: {f}"
    for f in v.divergent_faces:
        assert f.exponent <= -1 + 1e-9, f
    for f in v.singular_faces:
        assert -1 < f.exponent < 0, f


@pytest.mark.parametrize("case", DIVERGENT, ids=lambda c: c.id)
def test_analyze_divergent(dv, case):
    d = case.build()
    v = dv.analyze(d, kinematics=case.kin)
    assert v.convergent is False
    assert v.divergent_faces, v
    _check_verdict_shape(v, d)
    assert v.kinds == frozenset(f.kind for f in v.divergent_faces)
    assert case.kinds <= set(v.kinds), (case.kinds, v.kinds, v.divergent_faces)
    assert not (case.forbid & set(v.kinds)), (v.kinds, v.divergent_faces)
    found = {frozenset(f.vanishing) for f in v.divergent_faces}
    for s in case.faces:
        assert frozenset(s) in found, (s, v.divergent_faces)
    if case.pole_order is not None:
        assert v.pole_order == case.pole_order, v
    assert v.pole_order >= case.min_pole_order, v


@pytest.mark.parametrize("case", DIVERGENT, ids=lambda c: c.id)
def test_compute_refuses_divergent(case):
    d = case.build()
    with pytest.raises(DiagramError) as ei:
        loopint.compute(d, kinematics=case.kin, **GUARD)
    msg = str(ei.value)
    words = {"UV": "UV", "soft": "soft", "collinear": "collinear"}
    assert any(words[k] in msg for k in case.kinds), msg
    for name in case.names_in_message:
        assert re.search(rf"\b{name}\b", msg), (name, msg)


def test_hand_polynomials_of_the_divergent_cases():
    """The F the comments above count with is the F the diagrams have."""
    x1, x2, x3, x4, x5 = X("x1", "x2", "x3", "x4", "x5")
    m, M, t, s, p1sq, p2sq, p4sq = X("m", "M", "t", "s", "p1sq", "p2sq", "p4sq")
    d = qed_vertex()
    assert same(d.U, x1 + x2 + x3)
    assert same(d.F, -(p1sq * x1 * x3 + p2sq * x2 * x3 + t * x1 * x2)
                + (x1 + x2 + x3) * m ** 2 * (x1 + x2))
    d = photon_box()
    p1, p4 = p1sq, p4sq
    assert same(d.F, m ** 2 * x1 ** 2 + m ** 2 * x3 ** 2 + M ** 2 * x4 ** 2
                + (2 * m ** 2 - t) * x1 * x3 + (m ** 2 + M ** 2 - p1) * x1 * x4
                + (m ** 2 + M ** 2 - p4) * x3 * x4 + (M ** 2 - s) * x2 * x4)
    d = massless_box_onshell_propagators(4)
    assert same(d.F, -s * x1 * x3 - t * x2 * x4)
    d = triangle()
    p3sq = X("p3sq")[0]
    assert same(d.F, -(p1sq * x1 * x2 + p2sq * x2 * x3 + p3sq * x1 * x3))
    g, p = bubble_times_triangle(), bubble_times_triangle_polynomials()
    assert same(g.U, p.U) and same(g.F, p.F)


@pytest.mark.parametrize("form", ["graph", "polynomials", "ladder-file-mZ-0"])
def test_cli_refuses_divergent_file(tmp_path, form):
    """A diagram file with the on-shell condition (or the zero mass) given only in
    [kinematics]: exit 2, the kind on stderr, nothing written."""
    if form == "ladder-file-mZ-0":
        text = (ROOT / "diagrams" / "ladder_vertex_2L_k1.toml").read_text()
        assert "\nmZ = 0.6078\n" in text
        body = text.replace("\nmZ = 0.6078\n", "\nmZ = 0.0\n")
        body = body[:body.index("[reference]")]
        path = tmp_path / "ladder_mZ0.toml"
        out = tmp_path / "out.json"
        path.write_text(body + "[integration]\nmax_evals = 200000\n")
        r = subprocess.run([sys.executable, "-m", "loopint.cli", "compute", str(path), "--rtol",
                            "1e-3", "--json", str(out)], capture_output=True, text=True,
                           timeout=300, cwd=ROOT)
        assert r.returncode == 2, (r.returncode, r.stdout, r.stderr[-2000:])
        assert "soft" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
        assert not out.exists()
        return
    if form == "graph":
        body = """
        internal_lines = [["m", [1, 3]], ["m", [2, 3]], ["0", [1, 2]]]
        external_lines = [["p1", 1], ["p2", 2], ["p3", 3]]
        [diagram.scalar_products]
        "p1*p1" = "p1sq"
        "p2*p2" = "p2sq"
        "p1*p2" = "(t - p1sq - p2sq)/2"
        [kinematics]
        p1sq = 1.0
        p2sq = 1.0
        t = -1.0
        m = 1.0
        """
    else:
        body = """
        loops = 1
        variables = ["x1", "x2", "x3"]
        U = "x1 + x2 + x3"
        F = "-(p1sq*x1*x3 + p2sq*x2*x3 + t*x1*x2) + (x1 + x2 + x3)*m**2*(x1 + x2)"
        [kinematics]
        p1sq = 1.0
        p2sq = 1.0
        t = -1.0
        m = 1.0
        """
    path = tmp_path / "qed_vertex.toml"
    out = tmp_path / "out.json"
    path.write_text('[diagram]\nname = "qed-vertex-onshell"\ndimension = 4\n'
                    + textwrap.dedent(body) + "[integration]\nmax_evals = 200000\n")
    r = subprocess.run([sys.executable, "-m", "loopint.cli", "compute", str(path), "--rtol", "1e-3",
                        "--json", str(out)], capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "soft" in r.stderr, r.stderr
    assert not out.exists()


def test_onshell_up_to_rounding_counts_as_on_shell(dv):
    """m = 0.1 and p1sq = p2sq = 0.01 as floats: m^2 - p1^2 is 1e-18, not 0, in exact
    arithmetic of the binary numbers, but the user means on shell: soft divergence."""
    kin = {"p1sq": 0.01, "p2sq": 0.01, "t": -0.02, "m": 0.1}
    v = dv.analyze(qed_vertex(), kinematics=kin)
    assert v.convergent is False and "soft" in v.kinds, v
    with pytest.raises(DiagramError, match="soft"):
        loopint.compute(qed_vertex(), kinematics=kin, **GUARD)


def test_near_on_shell_is_convergent(dv):
    """p^2 = m^2 (1 - 1e-6): the photon's mass-shell terms are small but present: finite."""
    kin = {"p1sq": 1 - 1e-6, "p2sq": 1 - 1e-6, "t": -1.0, "m": 1.0}
    assert newton_fan(qed_vertex(), kin).convergent
    v = dv.analyze(qed_vertex(), kinematics=kin)
    assert v.convergent is True and not v.divergent_faces, v


def test_batched_kinematics_with_an_on_shell_point_refused():
    """A scan that passes through the on-shell point gets no number for it."""
    kin = {"p1sq": [0.5, 1.0], "p2sq": [0.5, 1.0], "t": -1.0, "m": 1.0}
    with pytest.raises(DiagramError, match="soft"):
        loopint.compute(qed_vertex(), kinematics=kin, **GUARD)


def test_no_symbols_no_kinematics(dv):
    """A diagram without kinematic symbols: kinematics=None; the light-like legs written as
    "0" make the massless triangle collinear divergent (F = x1 x3 / 2 ... at s = -1/2)."""
    d = triangle(scalar_products={"p1*p1": "0", "p2*p2": "0", "p1*p2": "-1/4"})
    assert not d.kinematic_symbols
    v = dv.analyze(d, None)
    assert v.convergent is False and "collinear" in v.kinds and v.pole_order == 2, v
    with pytest.raises(DiagramError, match="collinear"):
        loopint.compute(d, **GUARD)


# Away from D = 4 the same diagrams move: UV subdivergences get worse above 4, soft and
# collinear ones below.  Massless triangle with p1^2 = p2^2 = 0: a = 3 - D, b = 3 - D/2, the
# face x1 -> 0: e + 1 = 1 - b = D/2 - 2.  Bubble x triangle: the face {x1, x2}: e + 1 = 2 - D/2.
ONSHELL_TRIANGLE_SP = {"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"}


@pytest.mark.parametrize("D,build,kin,kind,vanishing", [
    (4.1, lambda D: bubble_times_triangle(dimension=D), {"mb": 1.0, "mt": 1.5}, "UV", ("x1", "x2")),
    (3.9, lambda D: triangle(scalar_products=ONSHELL_TRIANGLE_SP, dimension=D), {"s": -1.0},
     "collinear", ("x1",)),
], ids=["bubble-x-triangle-D4.1-UV", "onshell-triangle-D3.9-collinear"])
def test_non_integer_dimension_divergent(dv, D, build, kin, kind, vanishing):
    d = build(D)
    e = (1 - D / 2) if kind == "UV" else (D / 2 - 3)
    ref = newton_fan(d, kin)
    assert not ref.convergent and kind in ref.kinds
    v = dv.analyze(d, kinematics=kin)
    assert v.convergent is False and kind in v.kinds, v
    f = [f for f in v.divergent_faces if set(f.vanishing) == set(vanishing)]
    assert f and abs(f[0].exponent - e) <= 1e-9, v.divergent_faces   # a power divergence
    with pytest.raises(DiagramError, match=kind):
        loopint.compute(d, kinematics=kin, **GUARD)


@pytest.mark.parametrize("D", [4.1, 4.02])
def test_onshell_massless_triangle_above_four_dimensions(dv, D):
    """Finite for D > 4: exponents D/2 - 3 on the faces x1 -> 0 and x3 -> 0, and the closed
    form (U = 1 on the simplex, Dirichlet integral of (x1 x3)^(D/2 - 3)):
        I = -Gamma(3 - D/2) S^(D/2 - 3) Gamma(D/2 - 2)^2 / Gamma(D - 3),   S = -s."""
    d = triangle(scalar_products=ONSHELL_TRIANGLE_SP, dimension=D)
    kin = {"s": -2.0}
    v = dv.analyze(d, kinematics=kin)
    assert v.convergent is True and not v.divergent_faces, v
    faces = {frozenset(f.vanishing): f.exponent for f in v.singular_faces}
    for x in ("x1", "x3"):
        assert abs(faces[frozenset([x])] - (D / 2 - 3)) <= 1e-9, v.singular_faces
    mpmath.mp.dps = 20
    Dm = mpmath.mpf(D)
    exact = complex(-mpmath.gamma(3 - Dm / 2) * mpmath.mpf(2) ** (Dm / 2 - 3)
                    * mpmath.gamma(Dm / 2 - 2) ** 2 / mpmath.gamma(Dm - 3))
    r = loopint.compute(d, kinematics=kin, rtol=1e-5)
    assert r.converged, r.status
    err = abs(r.error.real) + abs(r.error.imag)
    assert abs(r.value - exact) <= max(3 * err, 2e-5 * abs(exact)), (r.value, exact, r.error)


def test_finite_ladder_with_massless_rungs_above_four_dimensions(dv):
    """The QED-like ladder (massless rungs, on-shell massive legs) is IR divergent at D = 4
    and finite at D = 4.1 (IR faces: phi = D/2 - 2 times their weight > 0).  compute() must
    then give a number (with its status) or refuse with a DiagramError: never crash with an
    internal error (iterated sector decomposition can cycle on these polynomials)."""
    d = ladder_masses(["m", "m", "0", "m", "m", "0"],
                      {"p1*p1": "m**2", "p2*p2": "m**2", "p1*p2": "(k2 - 2*m**2)/2"})
    kin = {"m": 1.0, "k2": -1.0}
    assert not dv.analyze(d, kinematics=kin).convergent
    d41 = Diagram.from_graph(
        internal_lines=[[m, e] for m, e in zip(["m", "m", "0", "m", "m", "0"], [
            ["V3", "Va"], ["V3", "Vb"], ["Va", "Vb"], ["Va", "V1"], ["Vb", "V2"], ["V1", "V2"]])],
        external_lines=[["p1", "V1"], ["p2", "V2"], ["p3", "V3"]],
        scalar_products={"p1*p1": "m**2", "p2*p2": "m**2", "p1*p2": "(k2 - 2*m**2)/2"},
        dimension=4.1)
    assert newton_fan(d41, kin).convergent
    v = dv.analyze(d41, kinematics=kin)
    assert v.convergent is True and v.singular_faces, v
    try:
        r = loopint.compute(d41, kinematics=kin, rtol=1e-2, max_evals=1_000_000)
    except DiagramError:
        return
    assert r.converged or r.status, r


# =========================================================================== (B) convergent
@dataclass
class Conv:
    id: str
    build: Callable[[], Diagram]
    kin: dict | None
    reference: Callable[[], complex] | None = None
    slow: bool = False


def _ud_triangle(P1, P2, P3):
    # pySecDec: (-1)^3 Gamma(1) int 1/F, F = P1 x1 x2 + P2 x2 x3 + P3 x1 x3 (U = 1)
    return -phi1(P1 / P3, P2 / P3) / P3


def _ud_box_file():
    # D0 = Phi1(X, Y)/(S T), X = P1 P3/(S T), Y = P2 P4/(S T) (the file's own comment),
    # pySecDec sign (-1)^4 = +1
    P1, P2, P3, P4, S, T = 1.0, 2.0, 3.0, 4.0, 5.0, 6.0
    return phi1(P1 * P3 / (S * T), P2 * P4 / (S * T)) / (S * T)


def _sunrise_D2_bessel():
    # diagrams/sunrise_2L_D2.toml's source: I = -4 int_0^inf r I0(sqrt(s) r) K0(m1 r) K0(m2 r)
    # K0(m3 r) dr at s = 4, masses 1, 2, 3
    mpmath.mp.dps = 20
    return -4 * mpmath.quad(lambda r: r * mpmath.besseli(0, 2 * r) * mpmath.besselk(0, r)
                            * mpmath.besselk(0, 2 * r) * mpmath.besselk(0, 3 * r), [0, 1, mpmath.inf])


CONVERGENT = [
    # massless triangle, three off-shell Euclidean legs: every F coefficient present, finite
    # (Usyukina-Davydychev).
    Conv("massless-triangle-offshell", triangle,
         {"p1sq": -0.1, "p2sq": -0.2, "p3sq": -1.0}, lambda: _ud_triangle(0.1, 0.2, 1.0)),
    # the same function as explicit polynomials (other invariants)
    Conv("massless-triangle-offshell-polynomials", lambda: Diagram.from_polynomials(
        U="x1 + x2 + x3", F="P1*x1*x2 + P2*x2*x3 + P3*x1*x3", variables=["x1", "x2", "x3"],
        loops=1), {"P1": 0.5, "P2": 0.25, "P3": 2.0}, lambda: _ud_triangle(0.5, 0.25, 2.0)),
    # massless triangle in the Minkowski region (mixed-sign invariants): still finite
    Conv("massless-triangle-minkowski", triangle, {"p1sq": 1.0, "p2sq": -0.5, "p3sq": 2.0}),
    # massless box, four off-shell legs (bundled file's kinematics): finite in D = 4
    Conv("massless-box-offshell-file",
         lambda: loopint.load(ROOT / "diagrams" / "box_massless_offshell.toml").diagram,
         {"p1sq": -1.0, "p2sq": -2.0, "p3sq": -3.0, "p4sq": -4.0, "s": -5.0, "t": -6.0},
         _ud_box_file, slow=True),
    # massive triangle with two legs on shell (p1sq = p2sq = m^2 numerically): no massless
    # line, so nothing goes soft
    Conv("massive-triangle-onshell-legs", lambda: triangle(("m", "m", "m")),
         {"p1sq": 1.0, "p2sq": 1.0, "p3sq": -1.0, "m": 1.0},
         lambda: triangle_D(4, lambda a, b, c: -a * b - b * c + a * c + (a + b + c) ** 2)),
    # QED vertex with both legs off shell (p^2 = 0.5 != m^2): the x1 x3, x2 x3 terms stay
    Conv("qed-vertex-offshell-legs", qed_vertex,
         {"p1sq": 0.5, "p2sq": 0.5, "t": -1.0, "m": 1.0},
         lambda: triangle_D(4, lambda a, b, c: (a + b) ** 2 + a * b + 0.5 * a * c + 0.5 * b * c)),
    # one massless line x1 (3-1) between off-shell legs p3, p1: no soft region
    Conv("triangle-one-massless-line", lambda: triangle(("0", "m", "m")),
         {"p1sq": -1.0, "p2sq": -1.0, "p3sq": -1.0, "m": 1.0},
         lambda: triangle_D(4, lambda a, b, c: a * b + b * c + a * c + (a + b + c) * (b + c))),
    # massive bubble in D = 2: Gamma(1), finite
    Conv("bubble-D2-massive", lambda: bubble(["m1", "m2"], 2),
         {"psq": -1.0, "m1": 1.0, "m2": 2.0}, lambda: bubble_D(2, 1.0, 2.0, -1.0)),
    # triangle with powers [1, 1, 2], D = 4, massive: nu = 4, Gamma(2), finite
    Conv("triangle-powers-112", lambda: triangle(("m", "m", "m"), powers=[1, 1, 2]),
         {"p1sq": -1.0, "p2sq": -2.0, "p3sq": -3.0, "m": 1.0},
         lambda: triangle_D(4, lambda a, b, c: a * b + 2 * b * c + 3 * a * c + (a + b + c) ** 2,
                            powers=(1, 1, 2))),
    # massless on-shell box in D = 6: U^-2 F^-1; adjacent pair -> 0: t^(1 - 1), finite
    Conv("massless-box-onshell-D6", lambda: massless_box_onshell_propagators(6),
         {"s": -1.0, "t": -2.5}, lambda: box6_massless(1.0, 2.5), slow=True),
    # massive box, all legs on shell (p^2 = m^2 numerically), Euclidean s, t
    Conv("massive-box-onshell-legs", massive_box_graph,
         {"psq": 1.0, "s": -1.0, "t": -2.0, "m": 1.0}),
    # two-loop crossed vertex, all lines massive, legs on shell: no massless line
    Conv("crossed-vertex-2L-massive", crossed_vertex, {"psq": 1.0, "s": -1.0, "m": 1.0}),
    # sunrise [2, 2, 1] in D = 4: nu = 5, Gamma(1); subloops {x1, x3}: 3 - 2 > 0, ...
    Conv("sunrise-powers-221-D4", lambda: sunrise([2, 2, 1]),
         {"m1": 1.0, "m2": 2.0, "m3": 3.0, "psq": -1.0}),
    # sunrise in D = 2 (bundled file's kinematics)
    Conv("sunrise-D2-file", lambda: sunrise([1, 1, 1], dimension=2),
         {"m1": 1.0, "m2": 2.0, "m3": 3.0, "psq": 4.0}, _sunrise_D2_bessel, slow=True),
    # ladder with massless rungs but off-shell Euclidean legs: nothing on shell, finite
    Conv("ladder-2L-massless-rungs-offshell", lambda: ladder(
        "mt", "0", {"p1*p1": "-1", "p2*p2": "-1", "p1*p2": "(k2 + 2)/2"}),
         {"k2": -1.0, "mt": 1.0}),
    # ladder with only the inner rung x3 massless: it joins the loop lines x1, x4 and x2, x5,
    # not on-shell legs, so it has no soft region (every Newton-polytope facet has phi > 0)
    Conv("ladder-2L-inner-rung-massless", lambda: ladder_one_massless_rung("inner"),
         {"m": 1.0, "M": 1.0, "k2": -1.0}),
    # two-loop ladder vertex of the bundled file (massive rungs, on-shell top legs)
    Conv("ladder-2L-file-k1", lambda: loopint.load(
        ROOT / "diagrams" / "ladder_vertex_2L_k1.toml").diagram,
         {"k2": 1.0, "mt": 1.0, "mZ": 0.6078}),
    # C0(0, 0, s; m, m, m) with light-like legs given as "0" and massive lines
    Conv("triangle-lightlike-legs-massive-lines", lambda: triangle(
        ("m", "m", "m"), scalar_products={"p1*p1": "0", "p2*p2": "0", "p1*p2": "s/2"}),
         {"s": -2.0, "m": 1.0},
         lambda: triangle_D(4, lambda a, b, c: 2 * a * c + (a + b + c) ** 2)),
]


@pytest.mark.parametrize("case", CONVERGENT, ids=lambda c: c.id)
def test_convergent_by_newton_polytope(case):
    d = case.build()
    ref = newton_fan(d, case.kin)
    assert ref.convergent, ref.divergent


@pytest.mark.parametrize("case", CONVERGENT, ids=lambda c: c.id)
def test_analyze_convergent(dv, case):
    d = case.build()
    v = dv.analyze(d, kinematics=case.kin)
    assert v.convergent is True, v.divergent_faces
    assert v.divergent_faces == () or len(v.divergent_faces) == 0
    assert v.kinds == frozenset() and v.pole_order == 0
    _check_verdict_shape(v, d)


COMPUTED = [c for c in CONVERGENT if c.reference is not None]


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c.slow else c
                                  for c in COMPUTED], ids=lambda c: c.id)
def test_compute_convergent_against_reference(case):
    d = case.build()
    exact = complex(case.reference())
    r = loopint.compute(d, kinematics=case.kin, rtol=1e-5)
    assert r.converged, r.status
    err = abs(r.error.real) + abs(r.error.imag)
    assert abs(r.value - exact) <= max(3 * err, 2e-5 * abs(exact)), (r.value, exact, r.error)
    assert abs(r.value - exact) <= 1e-4 * abs(exact), (r.value, exact)


def test_references_of_the_convergent_cases():
    """The mpmath references against the bundled files' [reference] values and each other."""
    box = loopint.load(ROOT / "diagrams" / "box_massless_offshell.toml")
    assert abs(_ud_box_file() - box.reference.value) <= 1e-12 * abs(box.reference.value)
    tri = loopint.load(ROOT / "diagrams" / "triangle_massless_offshell.toml")
    assert abs(_ud_triangle(0.3, 0.5, 1.0) - tri.reference.value) <= 1e-10
    sun = loopint.load(ROOT / "diagrams" / "sunrise_2L_D2.toml")
    assert abs(_sunrise_D2_bessel() - sun.reference.value) <= 1e-12
    below = loopint.load(ROOT / "diagrams" / "triangle_below_threshold.toml")
    # C0(0, 0, 1; 1, 1, 1): F = -s x1 x3 + (sum x)^2 with the leg p3^2 = s = 1
    c0 = triangle_D(4, lambda a, b, c: -a * c + (a + b + c) ** 2)
    assert abs(c0 - below.reference.value) <= 1e-10
    # UD against a direct quadrature of its defining integral
    direct = -sum_simplex_direct(0.1, 0.2, 1.0)
    assert abs(_ud_triangle(0.1, 0.2, 1.0) - direct) <= 1e-9 * abs(direct)


def sum_simplex_direct(P1, P2, P3):
    return simplex2(lambda a, b, c: 1 / (P1 * a * b + P2 * b * c + P3 * a * c))


# =========================================================================== (C) singular
def _factorized_exact(D):
    """Bubble x triangle in D dimensions, each one-loop factor by mpmath (pySecDec norm)."""
    Ib = bubble_D(D, 1.0, 1.0, -1.0)                   # mb = 1, p2^2 = -1
    It = triangle_D(D, lambda a, b, c: a * b + 3 * b * c + 2 * a * c + 1.5 ** 2 * (a + b + c) ** 2,
                    dps=15)                            # mt = 1.5: x3 x4 + 3 x4 x5 + 2 x3 x5
    return complex(Ib * It)


def test_factorized_reference_checks():
    """The one-loop factors against known results.

    Bubble: Gamma(eps) int (m^2 + x(1-x) Q)^(-eps) = 1/eps - gamma - int log(...) + O(eps), and
    int_0^1 log(m^2 + x(1-x) Q) dx = log m^2 - 2 + beta log((beta + 1)/(beta - 1)),
    beta = sqrt(1 + 4 m^2/Q) (the finite part of B0 at spacelike p^2 = -Q).
    Triangle at D = 4 against diagrams/triangle_below_threshold.toml (C0(0,0,1;1,1,1))."""
    mpmath.mp.dps = 30
    for m, Q in ((1.0, 1.0), (1.5, 4.0)):
        beta = mpmath.sqrt(1 + 4 * m * m / Q)
        logint = mpmath.log(m * m) - 2 + beta * mpmath.log((beta + 1) / (beta - 1))
        for eps in (1e-4, 1e-5):
            b = bubble_D(4 - 2 * eps, m, m, -Q, dps=30)
            assert abs(b - 1 / eps + mpmath.euler + logint) <= 10 * eps
    below = loopint.load(ROOT / "diagrams" / "triangle_below_threshold.toml")
    c0 = triangle_D(4, lambda a, b, c: -a * c + (a + b + c) ** 2)
    assert abs(c0 - below.reference.value) <= 1e-10
    # the factorized diagram's polynomials are U_b U_t and U_t F_b + U_b F_t (hand-written)
    d = bubble_times_triangle()
    x1, x2, x3, x4, x5, mb, mt = X("x1", "x2", "x3", "x4", "x5", "mb", "mt")
    Ub, Ut = x1 + x2, x3 + x4 + x5
    Fb = x1 * x2 + mb ** 2 * Ub ** 2
    Ft = x3 * x4 + 3 * x4 * x5 + 2 * x3 * x5 + mt ** 2 * Ut ** 2
    assert same(d.U, Ub * Ut) and same(d.F, Ut * Fb + Ub * Ft)


@pytest.mark.parametrize("D", [3.9, 3.99])
def test_factorized_singular_face_newton_polytope(D):
    d = bubble_times_triangle(dimension=D)
    ref = newton_fan(d, {"mb": 1.0, "mt": 1.5})
    assert ref.convergent
    e = min(f.exponent for f in ref.singular)
    assert abs(e - (1 - D / 2)) <= 1e-12     # e + 1 = 2 - D/2 on the bubble's face
    (f,) = [f for f in ref.singular if abs(f.exponent - e) <= 1e-12]
    assert set(f.vanishing) == {"x1", "x2"}


@pytest.mark.parametrize("D", [3.9, 3.99])
def test_factorized_analyze_singular_face(dv, D):
    d = bubble_times_triangle(dimension=D)
    v = dv.analyze(d, kinematics={"mb": 1.0, "mt": 1.5})
    assert v.convergent is True and not v.divergent_faces
    assert v.singular_faces
    _check_verdict_shape(v, d)
    e = min(f.exponent for f in v.singular_faces)
    assert abs(e - (1 - D / 2)) <= 1e-9, v.singular_faces   # e + 1 = 2 - D/2
    f = min(v.singular_faces, key=lambda f: f.exponent)
    assert set(f.vanishing) == {"x1", "x2"} and f.kind == "UV", f


@pytest.mark.slow
@pytest.mark.parametrize("D", [3.9, 3.99])
def test_factorized_compute_matches_product(D):
    d = bubble_times_triangle(dimension=D)
    exact = _factorized_exact(D)
    r = loopint.compute(d, kinematics={"mb": 1.0, "mt": 1.5}, rtol=1e-4)
    assert r.converged, r.status
    err = abs(r.error.real) + abs(r.error.imag)
    assert abs(r.value - exact) <= max(3 * err, 1e-4 * abs(exact)), (r.value, exact, r.error)


def test_factorized_D4_refused():
    d = bubble_times_triangle(dimension=4)
    with pytest.raises(DiagramError, match="UV"):
        loopint.compute(d, kinematics={"mb": 1.0, "mt": 1.5}, **GUARD)


# =========================================================================== (D) bundled
FILES = sorted((ROOT / "diagrams").glob("*.toml"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_bundled_diagrams_are_convergent(dv, path):
    p = loopint.load(path)
    v = dv.analyze(p.diagram, p.kinematics or None)
    assert v.convergent is True, (path.name, v.divergent_faces)
    assert not v.divergent_faces and v.pole_order == 0
    _check_verdict_shape(v, p.diagram)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_bundled_diagrams_newton_polytope(path):
    p = loopint.load(path)
    ref = newton_fan(p.diagram, p.kinematics)
    assert ref.convergent, (path.name, ref.divergent)


# ====================================================== the vertex with a bubble inserted
def _vertex_with_bubble(D):
    """Two-loop vertex: a triangle whose line 4-1 carries a massive bubble (lines 4-1 twice),
    five massive lines, Euclidean legs; Gamma(nu - L D/2) = Gamma(5 - D) is finite, the
    bubble is a UV subdivergence at D = 4."""
    return Diagram.from_graph(
        internal_lines=[["m", [1, 2]], ["m", [2, 3]], ["m", [3, 4]], ["m", [4, 1]], ["m", [4, 1]]],
        external_lines=[["p1", 1], ["p2", 2], ["p3", 3]],
        scalar_products={"p1*p1": "-1", "p2*p2": "-1", "p1*p2": "-1/2"}, dimension=D)


@pytest.mark.slow
@pytest.mark.parametrize("D, about", [("39/10", -6.443), ("3999/1000", None)])
def test_vertex_with_a_bubble_below_four_dimensions(D, about):
    """Finite but with an integrable singularity t^e, e = 1 - D/2 (e = -0.9995 at D = 3.999):
    after the subtraction two independent engines agree within their errors; at D = 3.9 the
    value matches the tensor Gauss-Legendre evaluation of the sector form quoted in the issue
    (-6.443, three digits).  Before the subtraction cubature reported -5.8237 +- 5e-6 there."""
    d = _vertex_with_bubble(D)
    v = dv_analyze(d)
    assert v.convergent and v.singular_faces and {f.kind for f in v.singular_faces} == {"UV"}
    rc = loopint.compute(d, kinematics={"m": 1.0}, rtol=1e-5, method="cubature")
    rq = loopint.compute(d, kinematics={"m": 1.0}, rtol=1e-5, method="qmc")
    assert rc.converged and rq.converged, (rc.status, rq.status)
    sigma = np.hypot(abs(rc.error), abs(rq.error))
    assert abs(rc.value - rq.value) <= 3 * sigma, (rc.value, rq.value, sigma)
    if about is not None:
        assert abs(rc.value.real - about) <= 1e-3
    with pytest.raises(DiagramError, match="UV subdivergence"):
        loopint.compute(_vertex_with_bubble(4), kinematics={"m": 1.0}, **GUARD)


def dv_analyze(d):
    from loopint.divergence import analyze
    return analyze(d, {"m": 1.0})


# ================================================================ (E) facet normals, kept on disk
def _box_sum_points(dv):
    """The exponents of the Minkowski sum Newt(U) + Newt(F) of the bundled massless box with
    off-shell legs (N = 4)."""
    p = loopint.load(ROOT / "diagrams" / "box_massless_offshell.toml")
    EU, EF, _ = dv.point_supports(p.diagram, p.kinematics)
    return np.unique((EU[:, None, :] + EF[None, :, :]).reshape(-1, EU.shape[1]), axis=0)


def test_facet_normals_kept_and_checked(dv, tmp_path, monkeypatch):
    """The first call computes the normals (qhull) and stores them; a second call reads them
    back without computing; a record of another point set, or a damaged one, is recomputed;
    ``LOOPINT_CACHE_DIR=""`` writes nothing."""
    monkeypatch.setenv("LOOPINT_CACHE_DIR", str(tmp_path))
    P = _box_sum_points(dv)
    computed = dv._facet_normals(P)
    assert len(computed) >= P.shape[1]          # a polytope of dimension N - 2 has >= N - 1 facets
    assert dv.facet_normals(P) == computed
    records = list((tmp_path / "polytopes").glob("*.json"))
    assert len(records) == 1

    def refuse(_):
        raise AssertionError("computed although a valid record exists")
    monkeypatch.setattr(dv, "_facet_normals", refuse)
    assert dv.facet_normals(P) == computed

    for damaged in ('{"points": "another", "normals": [[0, 1, 0, 0]]}', '{"points": ',
                    '[1, 2]'):
        text = records[0].read_text()
        if damaged.startswith('{"points": "another"'):
            damaged = text.replace(json.loads(text)["points"], "another")
        records[0].write_text(damaged)
        monkeypatch.setattr(dv, "_facet_normals", lambda Q: computed)
        assert dv.facet_normals(P) == computed
        assert json.loads(records[0].read_text())["normals"] == [list(w) for w in computed]

    off = tmp_path / "off"
    monkeypatch.setenv("LOOPINT_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(off))
    monkeypatch.setenv("HOME", str(off))
    assert dv.facet_normals(P) == computed and not off.exists()


def test_second_process_skips_the_hull(tmp_path):
    """A later process that analyses the same diagram (other kinematics, the same vanishing
    coefficients) reads the facets from the cache folder: it imports no scipy.spatial."""
    code = textwrap.dedent(f"""
        import sys, loopint
        from loopint.divergence import analyze
        p = loopint.load({str(ROOT / "diagrams" / "triangle_above_threshold.toml")!r})
        v = analyze(p.diagram, {{"s": float(sys.argv[1]), "m": 1.0}})
        print(v.convergent, "scipy.spatial" in sys.modules)
    """)
    env = dict(os.environ, LOOPINT_CACHE_DIR=str(tmp_path), JAX_PLATFORMS="cpu")
    out = [subprocess.run([sys.executable, "-c", code, s], capture_output=True, text=True,
                          env=env, check=True).stdout.split() for s in ("10.0", "13.0")]
    assert out == [["True", "True"], ["True", "False"]]
