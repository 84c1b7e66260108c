"""``loopint.integrate``: the generic GPU integrator (no physics).

    integrate(f, ndim, method="auto", domain="cube", rtol=1e-6, atol=0, max_evals=1e9, **opts)

``f`` maps points ``x[n, ndim]`` to values ``[n]`` or ``[n, m]``, real or complex, and must be
traceable by JAX.  ``domain`` is ``"cube"`` ([0,1]^ndim), ``"simplex"`` (x_i >= 0, sum x <= 1)
or a box ``(lower, upper)``.  Methods: ``iterated`` (nested adaptive Gauss-Kronrod),
``cubature`` (adaptive Genz-Malik), ``pagani`` (seed 001), ``qmc`` (randomized lattice rules),
``mc`` (Monte Carlo); ``auto`` picks cubature up to 7 dimensions, qmc above
(:func:`loopint.engines.choose_method`).  ``opts`` are the engine's options (the fields of its
class in :data:`loopint.engines.ENGINES`).  For the simplex, methods other than ``iterated``
integrate over the cube through the sequential map of :func:`loopint.maps.simplex_from_cube`
(its Jacobian included).
"""

from __future__ import annotations

from typing import Callable

from . import engines
from .engines.base import (DEFAULT_ATOL, DEFAULT_MAX_EVALS, DEFAULT_RTOL, IntegrationResult,
                           as_domain, check_indexing)

METHODS = engines.METHODS


def integrate(f: Callable, ndim: int, *, method: str = "auto", domain="cube",
              rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL,
              max_evals: int = DEFAULT_MAX_EVALS, **options) -> IntegrationResult:
    """Integrate a batched JAX function over the unit cube, a box or the unit simplex.

    Returns an :class:`~loopint.engines.base.IntegrationResult` with ``value``, ``error``,
    ``converged``, ``status``, ``evaluations``, ``seconds`` (see its docstring).
    """
    dom = as_domain(domain, ndim)
    check_indexing(f, ndim)
    method = engines.choose_method(ndim) if method == "auto" else method
    return engines.get(method, **options).integrate(f, dom, rtol=rtol, atol=atol,
                                                   max_evals=max_evals)
