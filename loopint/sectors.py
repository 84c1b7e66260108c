"""Sector decomposition: blow-ups that make the integrand bounded at the boundary.

A multi-loop integrand is singular where U vanishes on the boundary of the simplex (all
Feynman parameters of a subloop -> 0; massless lines add zeros of F).  The singularities are
integrable but point-like: in the three parameters of a two-loop triangle subloop the
integrand grows like 1/r^2, so every level of an iterated integration has to resolve a 1/r
or log r peak, and the cost multiplies from level to level.  On the two-loop ladder vertex of
seed 000 the iterated engine could not reach 1e-3 in 3e8 evaluations over the simplex or
the primary sectors; the model integral of 1/(t1+t2+t3)^2 over the unit cube takes 7.6e6
evaluations for 1e-3 and 4.8e7 for 1e-5 (11 and 18 adaptive steps at the outer level).

Iterated sector decomposition (Binoth & Heinrich, Nucl. Phys. B 585 (2000) 741; Heinrich,
Int. J. Mod. Phys. A 23 (2008) 1457) removes them.  Inside a primary sector (x_l = 1, the
other N-1 parameters in [0, 1]; :mod:`loopint.lower`, domain ``"sectors"``), a polynomial P
whose monomials all contain one of the variables of a set S vanishes on the face {x_S = 0}.
The cube is split into |S| subsectors, one per k in S, in which x_k is the largest of x_S:

    x_j = t_k t_j  (j in S, j != k),   x_k = t_k,   Jacobian t_k^(|S|-1),

so that P = t_k^m P~ with m its lowest degree in x_S.  This is repeated until every
polynomial of the list is a monomial times a polynomial with a nonzero constant term (the
choice of S: a smallest set of variables that meets every monomial after the common monomial
is divided out, Heinrich's strategy).  The integrand is homogeneous, so the factors t^m of U,
F and the Jacobian cancel (for a finite integral) to leave a bounded function; the zeros of F
inside the domain (the Landau surface of the physical region) are not touched.

Only supports (exponent vectors) are used: the decomposition is combinatorial and exact for
any coefficients.  A coefficient that vanishes at particular kinematics (a massless line, an
on-shell leg) only means a singularity the decomposition did not anticipate: the
transformation is still exact.

Evaluation uses the original U and F: every sector is a monomial map x = t^A with
Jacobian t^J (:func:`monomial_maps`), U and F are evaluated at the resulting x (products of
cube coordinates), and the Jacobian multiplies the integrand.  No polynomial is generated per
sector; one evaluation of U and F per sector and point, in floating point, where the small
factors t^m are carried exactly by the products (:class:`loopint.lower.Integrand`, domain
``"decomposed"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Sequence

import numpy as np

MAX_SECTORS = 4096
MAX_DEPTH = 32


class DecompositionError(ValueError):
    """The iterated decomposition did not finish (too many sectors, or Heinrich's strategy
    cycles: it is not guaranteed to terminate)."""


@dataclass(frozen=True)
class Sector:
    """One sector: primary index ``primary`` (x_primary = 1) and the blow-ups applied in
    order, each ``(k, S)`` with variable indices into the N - 1 cube coordinates (the N
    parameters without ``primary``)."""

    primary: int
    blowups: tuple


def _resolved(E: np.ndarray) -> bool:
    """A monomial times a polynomial with a constant term (or no monomial at all)."""
    if E.shape[0] == 0:
        return True
    R = E - E.min(axis=0)
    return bool(np.any(np.all(R == 0, axis=1)))


def _smallest_cover(E: np.ndarray) -> tuple:
    """A smallest set S of variables such that every monomial (after the common monomial is
    divided out) contains one of them; the first in lexicographic order among the smallest."""
    R = (E - E.min(axis=0)) > 0
    n = E.shape[1]
    for size in range(1, n + 1):
        for S in combinations(range(n), size):
            if np.all(np.any(R[:, S], axis=1)):
                return S
    raise AssertionError("a polynomial without a constant term always has a cover")


def _blowup(E: np.ndarray, k: int, S: tuple) -> np.ndarray:
    """Exponents after x_j = t_k t_j (j in S, j != k): the exponent of t_k becomes the total
    degree in x_S."""
    out = E.copy()
    out[:, k] = E[:, list(S)].sum(axis=1)
    return out


def decompose(supports: Sequence[np.ndarray], *, max_sectors: int = MAX_SECTORS) -> list[Sector]:
    """Sectors in which every polynomial of ``supports`` (exponent arrays ``[T, N]`` over the
    N Feynman parameters) is a monomial times a polynomial with a constant term.

    Primary sectors first (one per parameter), then iterated blow-ups.  Raises DecompositionError if
    the decomposition does not finish within ``max_sectors`` sectors or ``MAX_DEPTH``
    blow-ups (Heinrich's strategy can cycle for some polynomials; none of the diagrams
    here does).
    """
    supports = [np.asarray(E, dtype=np.int64) for E in supports]
    N = supports[0].shape[1]
    out: list[Sector] = []
    for l in range(N):
        keep = [j for j in range(N) if j != l]
        stack = [((), [E[:, keep] for E in supports])]
        while stack:
            blowups, Es = stack.pop()
            todo = next((E for E in Es if not _resolved(E)), None)
            if todo is None:
                out.append(Sector(l, blowups))
                if len(out) > max_sectors:
                    raise DecompositionError(
                        f"sector decomposition: more than {max_sectors} sectors")
                continue
            if len(blowups) >= MAX_DEPTH:
                raise DecompositionError(
                    f"sector decomposition: no resolution within {MAX_DEPTH} blow-ups (the "
                    "iterated strategy cycles for these polynomials)")
            S = _smallest_cover(todo)
            for k in reversed(S):       # popped in order k = S[0], S[1], ...
                stack.append((blowups + ((k, S),), [_blowup(E, k, S) for E in Es]))
    return out


def decompose_polynomials(polys: Sequence, variables: Sequence) -> list[Sector]:
    """:func:`decompose` for sympy polynomials (U and F of a diagram) in ``variables``."""
    import sympy

    return decompose([np.array(sympy.Poly(sympy.expand(P), *variables).monoms())
                      for P in polys])


def monomial_maps(sectors: Sequence[Sector], N: int) -> tuple[np.ndarray, np.ndarray]:
    """Each sector as a monomial map of the cube coordinates t (N - 1 of them):

        x_j = prod_i t_i^A[s, j, i]  (j = 0..N-1; the row of x_primary is zero: x = 1),
        Jacobian = prod_i t_i^J[s, i].

    Returns ``A[S, N, N-1]`` and ``J[S, N-1]`` (non-negative integers).  The blow-ups are
    undone from the last to the first (each expresses the variables before it through those
    after it): x_j = t_k t_j adds the exponent row of t_k to that of x_j, and its Jacobian
    t_k^(|S|-1) adds (|S|-1) times that row to J."""
    A = np.zeros((len(sectors), N, N - 1), np.int64)
    J = np.zeros((len(sectors), N - 1), np.int64)
    for s, sec in enumerate(sectors):
        rows = np.eye(N - 1, dtype=np.int64)
        jac = np.zeros(N - 1, np.int64)
        for k, S in reversed(sec.blowups):
            jac += (len(S) - 1) * rows[k]
            for j in S:
                if j != k:
                    rows[j] = rows[j] + rows[k]
        A[s] = np.insert(rows, sec.primary, 0, axis=0)
        J[s] = jac
    return A, J


def sector_exponents(supports: Sequence[np.ndarray], A: np.ndarray, J: np.ndarray,
                     powers: Sequence, a, b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Power counting in every sector: the exponents of the integrand's monomial factor.

    In sector s (x = t^A[s], Jacobian t^J[s]) the integrand prod_j x_j^(nu_j - 1) U^a / F^b
    becomes prod_i t_i^e[s, i] times a function that is regular at t = 0 and, for Euclidean
    kinematics (all coefficients of F of one sign), bounded away from zero on the whole cube
    (U and F are monomials times polynomials with a constant term there, :func:`decompose`):

        e[s, i] = sum_j (nu_j - 1) A[s, j, i] + J[s, i] + a u[s, i] - b f[s, i],

    with u[s, i] and f[s, i] the orders of vanishing of U and F in t_i (the smallest exponent
    of t_i over their monomials).  The sector integral converges if and only if every
    e[s, i] > -1 (Binoth & Heinrich, Nucl. Phys. B 585 (2000) 741, section 3).

    ``supports`` are the exponent arrays ``[T, N]`` of U and F (in that order) with the
    monomials whose coefficients vanish left out; ``powers`` (nu_j), ``a`` and ``b`` are exact
    numbers (sympy or fractions).  Returns ``(e, u, f)`` as object arrays of
    :class:`fractions.Fraction` (``e``) and integer arrays (``u``, ``f``), each ``[S, N-1]``.
    """
    from fractions import Fraction

    EU, EF = (np.asarray(E, dtype=np.int64) for E in supports)
    # orders of vanishing: the exponent of t_i of every monomial is (m @ A[s])_i
    u = np.min(np.einsum("tj,sji->sti", EU, A), axis=1)
    f = np.min(np.einsum("tj,sji->sti", EF, A), axis=1)
    nu1 = [Fraction(str(p - 1)) for p in powers]
    fa, fb = Fraction(str(a)), Fraction(str(b))
    S, n = J.shape
    e = np.empty((S, n), dtype=object)
    for s in range(S):
        for i in range(n):
            e[s, i] = (sum((c * int(A[s, j, i]) for j, c in enumerate(nu1)), Fraction(0))
                       + int(J[s, i]) + fa * int(u[s, i]) - fb * int(f[s, i]))
    return e, u, f
