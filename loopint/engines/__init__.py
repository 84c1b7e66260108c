"""Integration engines: generic, batched JAX integrators that know nothing of physics.

Every engine is an :class:`~loopint.engines.base.Engine`: a frozen dataclass of its options
with one entry point, ``engine.integrate(f, domain, *, rtol, atol, max_evals) ->
IntegrationResult`` (see :mod:`loopint.engines.base` for the contract).  :data:`ENGINES` maps
the method names to the engine classes, :func:`get` makes one from a name and options, and
:func:`choose_method` is the one place where ``method="auto"`` is resolved.
"""

from __future__ import annotations

from .base import Box, Engine, IntegrationResult, Simplex, Status, as_domain
from .cubature import Cubature
from .iterated import Iterated
from .mc import MonteCarlo
from .pagani import Pagani
from .pilot import Pilot
from .qmc import QuasiMonteCarlo

ENGINES: dict[str, type[Engine]] = {
    e.name: e for e in (Iterated, Cubature, Pagani, QuasiMonteCarlo, MonteCarlo)}
METHODS = tuple(ENGINES)

# What ``method="auto"`` means for each kind of integrand (``choose_method``).
INTEGRANDS = ("generic", "feynman", "regulated", "contour", "series")


def get(method: str, **options) -> Engine:
    """The engine called ``method`` with these options (its dataclass fields)."""
    if method not in ENGINES:
        raise ValueError(f"method must be one of {('auto',) + METHODS}, got {method!r}")
    return ENGINES[method](**options)


def choose_method(ndim: int, integrand: str = "generic", *, decomposed: bool = False,
                  points: int = 1) -> str:
    """The engine ``method="auto"`` uses for an ``ndim``-dimensional integrand of a kind.

    - ``"generic"`` (:func:`loopint.integrate`): Genz-Malik cubature up to 7 dimensions, where
      its degree-7 rule with 2^d + O(d^2) points per region stays affordable; randomized
      lattices above.
    - ``"feynman"`` (a Feynman integrand at a Euclidean point): the iterated engine up to 2
      dimensions; several kinematic points at once (``points`` > 1, one vector integrand)
      there go to cubature: the iterated engine refines every inner integral for the
      hardest point and pays a host round trip per level and step (on a 2-core CPU, 300
      points of a one-loop triangle at rtol 1e-6 and 1e-9 took 1.9-24 times longer by it,
      ``python -m loopint.bench.scan_cases --direct``).  From 3 dimensions on, ``"pilot"``:
      lattices or cubature, whichever short runs of both project to need fewer
      evaluations (:class:`~loopint.engines.pilot.Pilot`; lattices converge several times
      faster on smooth integrands, cubature resolves scale hierarchies).
    - ``"regulated"`` (a term of the delta sequence, which cancels strongly near the Landau
      surface): the iterated engine with absolute inner tolerances, except over decomposed
      sectors (``decomposed=True``, a multi-loop diagram whose U or F vanishes inside the
      boundary) of up to 6 dimensions, where cubature needs fewer evaluations.
    - ``"contour"`` (a Feynman integrand on the deformed contour, over the primary or the
      decomposed sectors' cubes): cubature up to 4 dimensions, lattices above (two-loop diagrams, where QMC
      needs fewer evaluations for the same error).
    - ``"series"`` (the subtracted sector integrands of an epsilon expansion, with logarithms
      at the faces): cubature in one dimension, lattices from two, where cubature slows down
      and overstates its error 10^2-10^4 times.
    """
    if integrand == "generic":
        return "cubature" if ndim <= 7 else "qmc"
    if integrand == "feynman":
        return ("pilot" if ndim >= 3 else "iterated" if points <= 1 else "cubature")
    if integrand == "regulated":
        return "cubature" if decomposed and ndim <= 6 else "iterated"
    if integrand == "contour":
        return "cubature" if ndim <= 4 else "qmc"
    if integrand == "series":
        return "cubature" if ndim <= 1 else "qmc"
    raise ValueError(f"integrand must be one of {INTEGRANDS}, got {integrand!r}")


__all__ = ["Box", "ENGINES", "Engine", "IntegrationResult", "METHODS", "Pilot", "Simplex",
           "Status", "as_domain", "choose_method", "get"]
