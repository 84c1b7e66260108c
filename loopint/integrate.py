"""``loopint.integrate``: the generic GPU integrator (no physics).

    integrate(f, ndim, method="auto", domain="cube", rtol=1e-6, atol=0, max_evals=1e8, **opts)

``f`` maps points ``x[n, ndim]`` to values ``[n]`` or ``[n, m]``, real or complex, and must be
traceable by JAX.  ``domain`` is ``"cube"`` ([0,1]^ndim), ``"simplex"`` (x_i >= 0, sum x <= 1)
or a box ``(lower, upper)``.  Methods: ``iterated`` (nested adaptive Gauss-Kronrod),
``cubature`` (adaptive Genz-Malik), ``pagani`` (seed 001), ``qmc`` (randomized lattice rules),
``mc`` (Monte Carlo); ``auto`` picks cubature up to 7 dimensions, qmc above.  For the simplex,
methods other than ``iterated`` integrate over the cube through the sequential map of
:func:`loopint.maps.simplex_from_cube` (its Jacobian included).
"""

from __future__ import annotations

import importlib
from typing import Callable

import numpy as np

from .engines.base import IntegrationResult, check_tolerances
from .maps import simplex_from_cube

METHODS = ("iterated", "cubature", "pagani", "qmc", "mc")


def engine_module(method: str):
    """The engine module for a method name."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {('auto',) + METHODS}, got {method!r}")
    return importlib.import_module(f".engines.{method}", __package__)


def auto_method(ndim: int) -> str:
    return "cubature" if ndim <= 7 else "qmc"


def integrate(f: Callable, ndim: int, *, method: str = "auto", domain="cube", rtol: float = 1e-6,
              atol: float = 0.0, max_evals: int = 10**8, **options) -> IntegrationResult:
    """Integrate a batched JAX function over the unit cube, a box or the unit simplex.

    Returns an :class:`~loopint.engines.base.IntegrationResult` with ``value``, ``error``,
    ``converged``, ``status``, ``evaluations``, ``seconds`` (see its docstring).
    """
    if not isinstance(ndim, (int, np.integer)) or ndim < 1:
        raise ValueError(f"ndim must be a positive integer, got {ndim!r}")
    check_tolerances(rtol, atol, max_evals)
    method = auto_method(ndim) if method == "auto" else method
    mod = engine_module(method)
    kw = dict(rtol=rtol, atol=atol, max_evals=int(max_evals), **options)
    if method == "iterated":
        return mod.integrate(f, ndim, domain=domain, **kw)
    if isinstance(domain, str) and domain == "cube":
        return mod.integrate_box(f, np.zeros(ndim), np.ones(ndim), **kw)
    if isinstance(domain, str) and domain == "simplex":
        def on_cube(u):
            x, jac = simplex_from_cube(u)
            y = f(x[:, :ndim])
            return y * (jac if y.ndim == 1 else jac[:, None])
        return mod.integrate_box(on_cube, np.zeros(ndim), np.ones(ndim), **kw)
    if isinstance(domain, (tuple, list)) and len(domain) == 2:
        return mod.integrate_box(f, domain[0], domain[1], **kw)
    raise ValueError(f"domain must be 'cube', 'simplex' or (lower, upper), got {domain!r}")
