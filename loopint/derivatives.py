"""Derivatives of a loop integral with respect to its kinematic symbols.

The derivative is taken under the integral sign: every lowered integrand of this package is
``f(kin, ..., u)`` with the kinematic point ``kin[K, s]`` a runtime argument
(:mod:`loopint.lower`, :mod:`loopint.contour`, :mod:`loopint.dimreg`), so JAX's forward mode
gives d f / d kin_j at the same points as ``f`` itself.  :class:`Differentiated` appends these
derivatives to the integrand's components, and one engine run integrates the value and its
derivatives together: the same nodes, regions and lattice, one error estimate per component.

Layout: a bound integrand with ``C`` components (``K`` kinematic points times deltas, or
orders of eps) becomes one with ``B * C``, block ``b`` holding the ``b``-th quantity of
:attr:`Differentiated.labels` (block 0 the value, then the first derivatives in the order
asked, then, for ``order = 2``, the second derivatives of the pairs ``i <= j``), each block
laid out like the original.  A caller that reshapes the components as ``[K, ...]`` reshapes
them as ``[B * K, ...]``: every block is one more set of "points".

Why this is exact: differentiation under the integral sign needs the derivative of the
integrand to be integrable, uniformly near the point.

* Euclidean points and the delta terms: F > 0, or F - i delta U with delta > 0, has no zero
  inside the domain, and the integrand's behaviour at the boundary is fixed by the Newton
  polytope of U and F (:mod:`loopint.divergence`); a kinematic derivative multiplies it by
  dF/dk / F, whose monomials lie in that polytope, so the power counting at every face is the
  same and the derivative converges where the integral does.  The delta sequence
  extrapolates every derivative like the value.
* The deformed contour: the integral does not depend on the contour (Cauchy), so the
  derivative of the integral is the integral of the derivative of the integrand along a fixed
  contour.  The deformation is therefore held fixed (``jax.lax.stop_gradient`` on the
  kinematics it is built from), which is cheaper than differentiating it and gives a
  smoother integrand.
* That argument needs the point's Newton polytope to be the generic one in the symbol.
  Where a coefficient of U or F vanishes at the point (a zero mass, an on-shell leg given
  as a symbol), the integrand is computed without that monomial (its power counting and
  sector decomposition need the point's own supports); if the coefficient depends on a
  requested symbol, :func:`supports_for` keeps the monomial where it does not change the
  polytope, and refuses the point where it does (there the integral is not smooth in the
  symbol: an on-shell logarithm, m^2 log m^2).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from itertools import combinations_with_replacement
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .engines.base import StaticCallable
from .errors import SpecError


def pairs(m: int) -> tuple:
    """The second derivatives of m symbols: index pairs ``(i, j)``, i <= j, in label order."""
    return tuple(combinations_with_replacement(range(m), 2))


def labels(names: Sequence[str], order: int) -> list[str]:
    """The derivatives' keys: the names, then ``"a,b"`` for the pairs of ``order = 2``."""
    out = list(names)
    if order == 2:
        out += [f"{names[i]},{names[j]}" for i, j in pairs(len(names))]
    return out


class Differentiated:
    """``fn(kin, *args, u) -> [n, C]`` extended to ``[n, B * C]`` by its derivatives with
    respect to the columns ``columns`` of ``kin`` (module docstring: the layout), called as
    ``wrapper(weights, kin, *args, u)``: block ``b`` of kinematic point ``k`` is multiplied by
    ``weights[b, k]`` (the components of one point are consecutive, ``C / K`` of them).

    Build it with :func:`differentiated`, which returns one object per (function, columns,
    order): the engines key their compiled kernels by the integrand's function, so the same
    object must come back for a new kinematic point.
    """

    def __init__(self, fn, columns: Sequence[int], order: int):
        if order not in (1, 2):
            raise ValueError(f"derivative order must be 1 or 2, got {order}")
        self.fn = fn
        self.columns = tuple(int(c) for c in columns)
        self.order = order
        self.pairs = pairs(len(self.columns))

    def _tangents(self, kin, which: Sequence[int]):
        """Unit tangents ``[len(which), K, s]``: column ``columns[i]`` of every point is 1."""
        eye = np.zeros((len(which), kin.shape[1]))
        for row, i in enumerate(which):
            eye[row, self.columns[i]] = 1.0
        return jnp.broadcast_to(jnp.asarray(eye, kin.dtype)[:, None, :],
                                (len(which),) + kin.shape)

    def __call__(self, weights, kin, *rest):
        *args, u = rest

        def g(k):
            return self.fn(k, *args, u)

        m = len(self.columns)
        if self.order == 1:
            value, first = jax.vmap(lambda t: jax.jvp(g, (kin,), (t,)),
                                    out_axes=(None, 0))(self._tangents(kin, range(m)))
            parts = [first[i] for i in range(m)]
        else:
            def nested(ti, tj):
                return jax.jvp(lambda k: jax.jvp(g, (k,), (ti,)), (kin,), (tj,))

            ti = self._tangents(kin, [i for i, _ in self.pairs])
            tj = self._tangents(kin, [j for _, j in self.pairs])
            (value, d_i), (_, d_ij) = jax.vmap(nested, out_axes=((None, 0), (0, 0)))(ti, tj)
            parts = [d_i[self.pairs.index((i, i))] for i in range(m)]
            parts += [d_ij[p] for p in range(len(self.pairs))]
        per_point = value.shape[1] // kin.shape[0]
        return jnp.concatenate(
            [value] + [blk * jnp.repeat(weights[b + 1], per_point).astype(blk.dtype)
                       for b, blk in enumerate(parts)], axis=1)


_WRAPPERS: dict = {}
_WRAPPERS_LOCK = threading.Lock()     # the shares of a scan run in threads


def differentiated(fn, columns: Sequence[int], order: int) -> Differentiated:
    """The :class:`Differentiated` of ``fn``, one object per (function, columns, order)."""
    key = (StaticCallable(fn), tuple(columns), order)
    with _WRAPPERS_LOCK:
        if key not in _WRAPPERS:
            if len(_WRAPPERS) >= 64:
                _WRAPPERS.pop(next(iter(_WRAPPERS)))
            _WRAPPERS[key] = (fn, Differentiated(fn, columns, order))   # fn kept: its id is the key
        return _WRAPPERS[key][1]


@dataclass(frozen=True)
class Request:
    """Which derivatives a run computes: kinematic ``names`` and their ``columns`` in the
    integrand's ``kin`` (:attr:`loopint.lower.Integrand.symbols`), and the ``order``."""

    names: tuple
    columns: tuple
    order: int

    @property
    def labels(self) -> list[str]:
        return labels(self.names, self.order)

    @property
    def blocks(self) -> int:
        return len(self.labels) + 1

    def weights(self, kin: np.ndarray) -> np.ndarray:
        """``[blocks, K]``: 1 for the value, |k_i| for d/dk_i and |k_i k_j| for the second
        derivatives, per point (1 in place of a symbol whose value is 0).  The engines
        integrate k_i dI/dk_i, in the units of the integral, so that one absolute tolerance
        and the engines' error balancing treat the value and its derivatives alike."""
        kin = np.asarray(kin, float)
        scale = [np.where(kin[:, c] != 0, np.abs(kin[:, c]), 1.0) for c in self.columns]
        rows = [np.ones(kin.shape[0])] + scale
        if self.order == 2:
            rows += [scale[i] * scale[j] for i, j in pairs(len(self.columns))]
        return np.stack(rows)

    def bind(self, f: jax.tree_util.Partial) -> tuple[jax.tree_util.Partial, np.ndarray]:
        """A bound integrand ``f(u)`` (its first bound argument the kinematics ``[K, s]``)
        with the weighted derivatives appended, and the weights ``[blocks, K]`` to divide
        them by (:func:`split`)."""
        wrapper = differentiated(f.func, self.columns, self.order)
        w = self.weights(np.asarray(f.args[0]))
        return jax.tree_util.Partial(wrapper, jnp.asarray(w, f.args[0].dtype), *f.args,
                                     **f.keywords), w



def blocks(req: Request | None) -> int:
    """Quantities per kinematic point: the value and the derivatives of ``req``."""
    return 1 if req is None else req.blocks


def with_derivatives(req: Request | None, f) -> tuple:
    """:meth:`Request.bind` of the bound integrand ``f``; ``(f, None)`` without a request."""
    return (f, None) if req is None else req.bind(f)


def split(a, blocks: int, K: int, weights: np.ndarray | None = None) -> np.ndarray:
    """An engine's values or errors over ``blocks * K * c`` components as a complex
    ``[blocks, K, c]`` array, the derivatives' weights (:meth:`Request.weights`) divided out
    (errors stay non-negative: the weights are)."""
    out = np.asarray(a).astype(complex).reshape(blocks, K, -1)
    return out if weights is None else out / weights[:, :, None]


def request(names: Sequence[str], order: int, symbols: Sequence[str]) -> Request | None:
    """The :class:`Request` for ``names`` over a diagram's kinematic ``symbols``; None when no
    derivative is asked for.  A name that is not a kinematic symbol of the diagram is a
    :class:`SpecError` naming the key ``derivatives``."""
    if not names:
        return None
    symbols = list(symbols)
    for n in names:
        if n not in symbols:
            have = ", ".join(symbols) if symbols else "none"
            raise SpecError(f"derivatives: {n!r} is not a kinematic symbol of the diagram (U "
                            f"and F depend on: {have})")
    return Request(tuple(names), tuple(symbols.index(n) for n in names), int(order))


def supports_for(probe, keep_U: np.ndarray, keep_F: np.ndarray, kin: np.ndarray,
                 req: Request | None, point_text) -> tuple[np.ndarray, np.ndarray, str | None]:
    """The supports of U and F (:func:`loopint.plan.support_groups`) to integrate with for
    derivatives, and why the derivatives cannot be taken at these points (None if they can).

    A monomial whose coefficient vanishes at the points and depends on a requested symbol
    (as an expression: ``m**2`` at m = 0 depends on m although its derivative vanishes
    there, and its second does not) is kept, with its zero coefficient, when it lies in the
    convex hull of the kept monomials of its polynomial: it changes neither the Newton
    polytope nor, therefore, the integral's power counting, and the integrand is smooth in
    the symbol there (C0 at s = 2 m^2).  Otherwise it is a vertex: the points lie on a
    boundary of the kinematic domain (an on-shell leg, a zero mass given as a symbol), where
    the integral is not smooth in that symbol (logarithms such as m^2 log m^2, or |m| in odd
    dimensions), and the reason is returned."""
    if req is None or (np.all(keep_U) and np.all(keep_F)):
        return keep_U, keep_F, None
    wanted = {probe._sym_objs[c]: n for n, c in zip(req.names, req.columns)}
    out = []
    for label, code, keep in (("U", probe._U, keep_U), ("F", probe._F, keep_F)):
        keep = np.array(keep, bool)
        hull = code.exponents[keep]
        for t in np.flatnonzero(~keep):
            coef = code.coefficients[t]
            names = [n for sym, n in wanted.items() if sym in coef.free_symbols]
            if not names:
                continue
            if not _in_hull(code.exponents[t], hull):
                return keep_U, keep_F, (
                    f"derivatives: {names[0]!r} cannot be taken at the kinematic point "
                    f"{point_text(probe, kin[0])}: the coefficient {coef} of {label} vanishes "
                    f"there and depends on {names[0]}, and its monomial shapes the integral's "
                    "singularities (an on-shell leg or a zero mass: the integral is not "
                    "smooth in it there)")
            keep[t] = True
        out.append(keep)
    return out[0], out[1], None


def _in_hull(point: np.ndarray, vertices: np.ndarray) -> bool:
    """Whether ``point`` is a convex combination of the rows of ``vertices`` (a linear
    program: lambda >= 0, sum lambda = 1, lambda @ vertices = point)."""
    if len(vertices) == 0:
        return False
    from scipy.optimize import linprog
    n = len(vertices)
    a_eq = np.vstack([np.asarray(vertices, float).T, np.ones((1, n))])
    b_eq = np.concatenate([np.asarray(point, float), [1.0]])
    res = linprog(np.zeros(n), A_eq=a_eq, b_eq=b_eq, bounds=[(0, None)] * n, method="highs")
    return bool(res.status == 0)


@dataclass
class Derivative:
    """A derivative of the result: ``value`` and ``error`` (complex, or arrays over the
    kinematic points, with the convention of :class:`loopint.result.Result`); for a regulated
    integral also the derivatives of its Laurent coefficients."""

    value: Any
    error: Any
    coefficients: Any = None
    coefficient_errors: Any = None

    def to_dict(self) -> dict:
        d = {"value": self.value, "error": self.error}
        if self.coefficients is not None:
            d["coefficients"] = {str(j): v for j, v in self.coefficients.items()}
            d["coefficient_errors"] = {str(j): v for j, v in self.coefficient_errors.items()}
        return d
