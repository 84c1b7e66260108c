"""Integration engines: generic, batched JAX integrators that know nothing of physics.

Each engine module exposes ``integrate_box(f, lower, upper, *, rtol, atol, max_evals, **opts)
-> IntegrationResult`` (see :mod:`loopint.engines.base` for the contract).  The user-facing
entry point is :func:`loopint.integrate`, which also handles the simplex domain.
"""

from .base import IntegrationResult

__all__ = ["IntegrationResult"]
