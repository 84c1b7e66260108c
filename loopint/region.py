"""Where a kinematic point lies: is F of one sign on the simplex (Euclidean), of one negative
sign, or does it change sign (physical, a regulator or a contour is needed)?

:func:`classify_F` decides it for a numeric F, :func:`classify_coefficients` for F given as
exponents and coefficients (vectorized over the monomials, as the lowered integrand holds it).
A point is never called Euclidean without a proof.
"""

from __future__ import annotations

import itertools
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
         regulator is used: safe, only slower.  Where F vanishes at a vertex of the simplex
         (every F of two loops or more) no bound can close the boxes at that vertex, so
         only a short search for F < 0 is made (:data:`VERTEX_ZERO_BOXES`).
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
    return classify_points(expo, np.asarray(coef, dtype=float)[None, :], max_boxes)[0]


def classify_points(expo: np.ndarray, coefs: np.ndarray, max_boxes: int = 20000) -> list[Region]:
    """:func:`classify_coefficients` of every kinematic point, F's coefficients ``coefs[P, T]``
    over the exponents ``expo[T, N]``: the branch-and-bound of :func:`classify_F` run for all
    undecided points at once (their boxes in one array, each tagged with its point; the budget
    of ``max_boxes`` is per point), so a scan of many points costs a few array passes rather
    than a Python loop per point.  The result of each point is the one it gets alone."""
    expo = np.asarray(expo, dtype=float)
    coefs = np.atleast_2d(np.asarray(coefs, dtype=float))
    P = coefs.shape[0]
    out: list = [None] * P
    if not np.all(np.isfinite(coefs)):
        raise DiagramError("F has non-finite coefficients at this kinematic point", "kinematics")
    # zero coefficients add nothing to F or to its bounds, so they stay in the arrays
    for p in np.flatnonzero(np.all(coefs == 0, axis=1)):
        out[p] = Region("physical", "F vanishes identically at this point")
    for p in np.flatnonzero(np.all(coefs >= 0, axis=1) & np.any(coefs != 0, axis=1)):
        out[p] = Region("euclidean", "all coefficients of F are >= 0")
    for p in np.flatnonzero(np.all(coefs <= 0, axis=1) & np.any(coefs != 0, axis=1)):
        out[p] = Region("negative", "all coefficients of F are <= 0")
    todo = np.array([p for p in range(P) if out[p] is None], dtype=np.int64)
    if not len(todo):
        return out
    N = expo.shape[1]
    degree = expo[0].sum()
    scale = np.sum(np.abs(coefs), axis=1)
    # F at the simplex's vertices e_l: the coefficients of x_l^degree.  Where one vanishes
    # (always for two loops and more, where U has no pure powers; or a massless line), every
    # box at that vertex has the bound -(negative terms) < 0, so no proof of positivity can
    # close: only a point with F < 0 can decide, searched for within VERTEX_ZERO_BOXES boxes.
    pure = [np.flatnonzero(np.all(expo == degree * np.eye(N)[l], axis=1)) for l in range(N)]
    at_vertex = np.stack([coefs[:, i[0]] if i.size else np.zeros(P) for i in pure], axis=1)
    unprovable = np.any(at_vertex == 0, axis=1)
    budget = np.where(unprovable, min(max_boxes, VERTEX_ZERO_BOXES), max_boxes)
    pos, neg = np.clip(coefs, 0, None), np.clip(-coefs, 0, None)
    # every undecided point starts from the N primary-sector cubes {x_l = 1, 0 <= x_j <= 1}
    owner = np.repeat(todo, N)
    lo = np.tile(np.eye(N), (len(todo), 1))
    hi = np.ones_like(lo)
    used = np.zeros(P, dtype=np.int64)
    while len(owner):
        used += np.bincount(owner, minlength=P)
        over = np.unique(owner[used[owner] > budget[owner]])
        for p in over:
            out[p] = Region("physical", _undecided(unprovable[p], budget[p], at_vertex[p]))
        live = used[owner] <= budget[owner]
        owner, lo, hi = owner[live], lo[live], hi[live]
        if not len(owner):
            break
        mid = 0.5 * (lo + hi)
        fmid = _values(mid, expo, coefs, owner)
        neg_at = fmid < -1e-14 * scale[owner]
        if np.any(neg_at):
            # per point, the box centre of smallest F among this pass's boxes
            order = np.lexsort((fmid, owner))
            first = order[np.r_[True, owner[order][1:] != owner[order][:-1]]]
            for k in first[neg_at[first]]:
                pt = mid[k] / mid[k].sum()
                out[owner[k]] = Region(
                    "physical", "F < 0 found at a point of the simplex",
                    "x = [" + ", ".join(f"{v:.4g}" for v in pt) + "], "
                    f"F = {fmid[k] / mid[k].sum() ** degree:.3g}")
            keep = ~np.isin(owner, owner[neg_at])
            owner, lo, hi, mid = owner[keep], lo[keep], hi[keep], mid[keep]
        bound = _values(lo, expo, pos, owner) - _values(hi, expo, neg, owner)
        open_ = bound <= 1e-12 * scale[owner]
        closed = np.setdiff1d(np.unique(owner), owner[open_])
        for p in closed:
            out[p] = Region("euclidean", "F > 0 proven on the simplex by branch-and-bound "
                            f"({used[p]} boxes)")
        owner, lo, hi = owner[open_], lo[open_], hi[open_]
        if not len(owner):
            break
        ax = np.argmax(hi - lo, axis=1)
        r = np.arange(len(owner))
        m = 0.5 * (lo[r, ax] + hi[r, ax])
        lo2, hi1 = lo.copy(), hi.copy()
        hi1[r, ax] = m
        lo2[r, ax] = m
        owner = np.concatenate([owner, owner])
        lo = np.concatenate([lo, lo2])
        hi = np.concatenate([hi1, hi])
    return out


# Boxes searched for a point with F < 0 where F vanishes at a vertex of the simplex and
# positivity therefore cannot be proven (:func:`classify_points`); the point is physical
# either way, the search only supplies the evidence.
VERTEX_ZERO_BOXES = 512


def _undecided(unprovable: bool, budget: int, at_vertex: np.ndarray) -> str:
    """The method of an undecided point."""
    if unprovable:
        l = int(np.flatnonzero(at_vertex == 0)[0])
        return ("undecided: F vanishes at the vertex x_{} = 1 of the simplex, so bounds cannot "
                "prove it positive, and no point with F < 0 was found in {} boxes; treated as "
                "physical (delta-regulated)".format(l + 1, budget))
    return (f"undecided: branch-and-bound budget exhausted ({budget} boxes); treated as "
            "physical (delta-regulated)")


def _values(x, expo, coefs, owner, chunk: int = 2048):
    """sum_t coefs[owner[b], t] x[b]^expo[t] for every box ``b``, in chunks of boxes small
    enough that the monomials of a chunk stay in the processor's cache."""
    out = np.empty(x.shape[0])
    for a in range(0, x.shape[0], chunk):
        b = slice(a, a + chunk)
        out[b] = np.einsum("bt,bt->b", _mono(x[b], expo), coefs[owner[b]])
    return out


def _mono(x, expo):
    """The monomials x^expo at the points ``x[B, N]``: ``[B, T]``, by repeated products (the
    exponents are small non-negative integers; a float power per entry costs far more): the
    powers x_j^0..x_j^max of each variable, then one gathered product per variable.  The
    boxes' corners and centres are dyadic, so the products are exact while degree times
    bisection depth stays within the 53-bit mantissa, and within rounding beyond."""
    expo = np.asarray(expo, dtype=np.int64)
    out = None
    for j in range(expo.shape[1]):
        top = int(expo[:, j].max(initial=0))
        if top == 0:
            continue
        powers = np.empty((x.shape[0], top + 1))
        powers[:, 0] = 1.0
        for p in range(1, top + 1):
            powers[:, p] = powers[:, p - 1] * x[:, j]
        factor = powers[:, expo[:, j]]
        out = factor if out is None else out * factor
    return np.ones((x.shape[0], expo.shape[0])) if out is None else out


# ---------------------------------------------------------------------------------------
# Landau singularities of one-loop diagrams at the kinematic point

LANDAU_TOLERANCE = 1e-12
"""A face's smallest eigenvalue below this fraction of its largest counts as zero."""


def pinch_tolerance(dimension: float, powers, rtol: float):
    """The relative eigenvalue below which :func:`one_loop_landau_faces` reports a face ``S``
    (a function of ``S``): :data:`LANDAU_TOLERANCE`, or, where the integral is infinite at
    that Landau singularity, the float64 resolution at the tolerance, ``eps / rtol``.

    Near the singularity of a face of n lines with powers nu_i the integral behaves as
    eta^((D + n - 1)/2 - sum nu_i), eta the relative distance (a bubble's threshold as beta^(D - 3):
    1/beta in D = 2; a triangle's anomalous threshold as log eta in D = 4).  Where that exponent
    is <= 0 the value comes from the neighbourhood of the pinch, where F, a difference of terms
    of order one, is of order eta and is evaluated to a relative eps / eta: a D = 2 bubble
    3e-11 above its threshold (eta = 1.6e-11) came out "converged" at rtol 1e-6 ten times off.
    Elsewhere the pinch's share of the value vanishes with eta and points 10^-10.6 from a threshold
    compute within their estimates (``tests/test_thresholds.py``)."""
    eps = float(np.finfo(np.float64).eps)
    pinch = max(LANDAU_TOLERANCE, eps / rtol) if rtol > 0 else LANDAU_TOLERANCE

    def tolerance(S) -> float:
        exponent = (dimension + len(S) - 1) / 2 - sum(powers[i] for i in S)
        return pinch if exponent <= 0 else LANDAU_TOLERANCE
    return tolerance


def one_loop_landau_faces(expo: np.ndarray, coefs: np.ndarray,
                          tolerance=None) -> list[list[tuple]]:
    """Per kinematic point, the faces of the simplex on which a one-loop F has a critical
    point of value 0 inside the face: the Landau singularities of the reduced diagrams.

    For one loop F is a quadratic form, ``F = x^T Y x`` (Y from F's coefficients,
    ``expo[T, N]`` of total degree 2, ``coefs[K, T]``).  On the face of the lines ``S``
    (the other x zero), the critical points of F on the simplex solve ``Y_S x = mu 1`` with
    value ``mu``, so a zero of F with zero gradient inside the face is a null vector of
    ``Y_S`` with every component of one sign (the Landau equations of the diagram with the
    lines outside S contracted).  For two lines it is the normal threshold
    ``p^2 = (m_i + m_j)^2`` (the pseudo-threshold ``(m_i - m_j)^2`` has a null vector of mixed
    signs); for every line, the diagram's leading singularity (an anomalous threshold).  Faces
    on which F vanishes identically, or with more than one zero eigenvalue (zero masses and
    on-shell legs: F's vanishing monomials, which the sector analysis of
    :mod:`loopint.divergence` handles), are not reported.

    ``tolerance`` (a function of the face, :func:`pinch_tolerance`; default
    :data:`LANDAU_TOLERANCE` for every face): the bound on the smallest eigenvalue of ``Y_S``
    (F at its unit eigenvector v) relative to the size of F's terms there,
    ``sum_ij |Y_ij v_i v_j|``, below which the face counts as singular.

    Returns, per point, the faces as tuples of line indices (0-based), smallest first."""
    expo = np.asarray(expo, dtype=np.int64)
    coefs = np.atleast_2d(np.asarray(coefs, dtype=np.float64))
    K, N = coefs.shape[0], expo.shape[1]
    Y = np.zeros((K, N, N))
    for t, e in enumerate(expo):
        nz = np.flatnonzero(e)
        if len(nz) == 1:
            Y[:, nz[0], nz[0]] += coefs[:, t]
        else:
            i, j = nz
            Y[:, i, j] += coefs[:, t] / 2
            Y[:, j, i] += coefs[:, t] / 2
    out: list[list[tuple]] = [[] for _ in range(K)]
    for size in range(2, N + 1):
        for S in itertools.combinations(range(N), size):
            sub = Y[:, S][:, :, S]
            if not np.all(np.isfinite(sub)):
                continue
            w, V = np.linalg.eigh(sub)
            order = np.argsort(np.abs(w), axis=1)
            w_sorted = np.take_along_axis(np.abs(w), order, axis=1)
            scale = w_sorted[:, -1]
            v = np.take_along_axis(V, order[:, None, :1], axis=2)[:, :, 0]
            big = np.max(np.abs(v), axis=1)
            one_sign = (np.all(v > 1e-8 * big[:, None], axis=1)
                        | np.all(v < -1e-8 * big[:, None], axis=1))
            # F at the critical point v against the size of its terms there, sum |Y_ij v_i v_j|:
            # the relative resolution of F at the pinch (the largest eigenvalue instead would
            # count a point with a hierarchy of scales, whose large entries do not meet at v,
            # as singular: a triangle with masses 1e-3, 1, 1e-2 at q3 = 1e5)
            terms = np.einsum("ki,kij,kj->k", np.abs(v), np.abs(sub), np.abs(v))
            tol = LANDAU_TOLERANCE if tolerance is None else tolerance(S)
            hit = ((scale > 0) & (w_sorted[:, 0] <= tol * terms)
                   & (w_sorted[:, 1] > 1e-8 * scale) & one_sign)
            for k in np.flatnonzero(hit):
                out[k].append(S)
    return out


def one_loop_landau_points(loops: int, variables: Sequence, expo: np.ndarray,
                           coefs: np.ndarray, tolerance=None) -> dict[int, str]:
    """The kinematic points (rows of ``coefs``) of a one-loop diagram that lie on a Landau
    singularity of a reduced diagram (:func:`one_loop_landau_faces`), with their status
    (:func:`landau_status`); none for more loops.  F has a double zero on the boundary of
    the simplex there, where the contour's deformation vanishes and no engine's error
    estimate sees the integrable singularity (dimensional regularization does not regulate
    it either: the faces where F vanishes identically, which it does, are not reported)."""
    expo = np.asarray(expo)
    if loops != 1 or expo.size == 0 or set(expo.sum(axis=1)) != {2}:
        return {}
    faces = one_loop_landau_faces(expo, coefs, tolerance)
    return {k: landau_status(found, variables, len(variables))
            for k, found in enumerate(faces) if found}


def landau_status(faces: list[tuple], variables: Sequence, n_lines: int) -> str:
    """The status of a point at the Landau singularities ``faces`` (of
    :func:`one_loop_landau_faces`)."""
    names = ["{" + ", ".join(str(variables[i]) for i in S) + "}" for S in faces]
    inner = [n for S, n in zip(faces, names) if len(S) == n_lines]
    edge = [n for S, n in zip(faces, names) if len(S) < n_lines]
    parts = []
    if edge:
        parts.append("on the threshold of the lines " + ", ".join(edge) + " (for two lines "
                     "p^2 = (m_i + m_j)^2): F has a double zero on the boundary of the "
                     "simplex, where neither the contour's deformation nor the engines' "
                     "error estimates reach it")
    if inner:
        parts.append("on the leading Landau singularity of the diagram (for a bubble its "
                     "threshold, for more lines an anomalous threshold): F has a double zero "
                     "inside the simplex")
    return ("threshold: the kinematic point lies " + "; and ".join(parts) + " (F's quadratic "
            "form on those lines singular to a relative 1e-12, or to 2.2e-16/rtol where the "
            "integral is infinite at the singularity and float64 does not resolve F near it); "
            "not integrated (value NaN): compute at a point farther from the threshold")
