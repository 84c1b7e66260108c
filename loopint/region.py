"""Where a kinematic point lies: is F of one sign on the simplex (Euclidean), of one negative
sign, or does it change sign (physical, a regulator or a contour is needed)?

:func:`classify_F` decides it for a numeric F, :func:`classify_coefficients` for F given as
exponents and coefficients (vectorized over the monomials, as the lowered integrand holds it).
A point is never called Euclidean without a proof.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import sympy

from .errors import DiagramError


@dataclass(frozen=True)
class Region:
    """Where a kinematic point lies.

    kind: 'euclidean' (F >= 0 on the simplex and > 0 inside: delta = 0 is exact),
          'negative' (F <= 0 everywhere: delta = 0 with the phase of (-|F| - i0)^(-b)), or
          'physical' (F changes sign, or one sign could not be proved: regulate with delta).
    method: how it was decided; detail: the evidence (a point with F < 0, boxes certified ...).
    """

    kind: str
    method: str
    detail: str = ""

    @property
    def euclidean(self) -> bool:
        return self.kind in ("euclidean", "negative")


def classify_F(F: sympy.Expr, xs: Sequence[sympy.Symbol], max_boxes: int = 20000) -> Region:
    """Decide whether a numeric, homogeneous F has one sign on the simplex.

    Method (never calls a physical point Euclidean):
      1. all coefficients >= 0 (or all <= 0): one sign by inspection;
      2. otherwise a branch-and-bound proof on the N primary-sector cubes
         {x_l = 1, 0 <= x_j <= 1} (F is homogeneous, so its sign on the simplex is its sign
         there): on a box [lo, hi] with lo >= 0, every monomial is monotone, so
         sum_{c>0} c x^a(lo) + sum_{c<0} c x^a(hi) is a rigorous lower bound of F; boxes are
         halved along their longest side until every box has a positive bound
         ('euclidean', proven) or F < 0 is found at a box centre ('physical', with the point);
      3. if the box budget runs out, the point is reported 'physical' (undecided), so the
         regulator is used: safe, only slower.
    """
    poly = sympy.Poly(F, *xs)
    terms = poly.terms()
    if not terms:
        return Region("physical", "F vanishes identically")
    expo = np.array([m for m, _ in terms], dtype=float)
    try:
        coef = np.array([float(c) for _, c in terms])
    except TypeError:
        raise DiagramError("F still depends on symbols without values", "kinematics") from None
    return classify_coefficients(expo, coef, max_boxes)


def classify_coefficients(expo: np.ndarray, coef: np.ndarray, max_boxes: int = 20000) -> Region:
    """:func:`classify_F` for F given as exponents ``expo[T, N]`` and coefficients ``coef[T]``."""
    coef = np.asarray(coef, dtype=float)
    nz = coef != 0
    expo, coef = np.asarray(expo, dtype=float)[nz], coef[nz]
    if coef.size == 0:
        return Region("physical", "F vanishes identically at this point")
    if not np.all(np.isfinite(coef)):
        raise DiagramError("F has non-finite coefficients at this kinematic point", "kinematics")
    if np.all(coef >= 0):
        return Region("euclidean", "all coefficients of F are >= 0")
    if np.all(coef <= 0):
        return Region("negative", "all coefficients of F are <= 0")
    N = expo.shape[1]
    scale = float(np.sum(np.abs(coef)))
    pos, neg = np.clip(coef, 0, None), np.clip(-coef, 0, None)
    lo_list, hi_list = [], []
    for l in range(N):
        lo = np.zeros(N)
        hi = np.ones(N)
        lo[l] = 1.0
        lo_list.append(lo)
        hi_list.append(hi)
    lo, hi = np.array(lo_list), np.array(hi_list)
    used = 0
    while len(lo):
        used += len(lo)
        if used > max_boxes:
            return Region("physical", "undecided: branch-and-bound budget exhausted "
                          f"({max_boxes} boxes); treated as physical (delta-regulated)")
        mid = 0.5 * (lo + hi)
        fmid = _mono(mid, expo) @ coef
        if np.any(fmid < -1e-14 * scale):
            k = int(np.argmin(fmid))
            pt = mid[k] / mid[k].sum()
            return Region("physical", "F < 0 found at a point of the simplex",
                          "x = [" + ", ".join(f"{v:.4g}" for v in pt) + f"], F = {fmid[k] / mid[k].sum() ** expo[0].sum():.3g}")
        bound = _mono(lo, expo) @ pos - _mono(hi, expo) @ neg
        open_ = bound <= 1e-12 * scale
        lo, hi = lo[open_], hi[open_]
        if not len(lo):
            break
        width = hi - lo
        ax = np.argmax(width, axis=1)
        r = np.arange(len(lo))
        m = 0.5 * (lo[r, ax] + hi[r, ax])
        lo2, hi1 = lo.copy(), hi.copy()
        hi1[r, ax] = m
        lo2[r, ax] = m
        lo = np.concatenate([lo, lo2])
        hi = np.concatenate([hi1, hi])
    return Region("euclidean", f"F > 0 proven on the simplex by branch-and-bound ({used} boxes)")


def _mono(x, expo):
    """The monomials x^expo at the points ``x[B, N]``: ``[B, T]``, by repeated products (the
    exponents are small non-negative integers; a float power per entry costs far more).  The
    boxes' corners and centres are dyadic, so the products are exact while degree times
    bisection depth stays within the 53-bit mantissa, and within rounding beyond."""
    out = np.ones((x.shape[0], expo.shape[0]))
    for j in range(expo.shape[1]):
        for p in range(1, int(expo[:, j].max(initial=0)) + 1):
            cols = expo[:, j] >= p
            out[:, cols] *= x[:, j:j + 1]
    return out
