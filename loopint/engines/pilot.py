"""An engine chosen by short runs of the candidates: :class:`Pilot`.

No engine is the fastest on every Feynman integrand of three or more dimensions.  Randomized
lattices converge as ``n^-2`` or faster on a smooth integrand, where cubature's local errors
fall slowly; cubature's bisection resolves a scale hierarchy (a mass of 10^-3 beside one of
10^3), where a lattice's error stalls.  Measured on a 2-core CPU at Euclidean points
(``python -m loopint.bench.pilot_cases --max-evals 2e7``, the table in README.md): a two-loop
triangle ladder with virtualities 10^-4 and 1 at rtol 1e-6 took 1.7e7 lattice evaluations,
while cubature had not converged after 2e7; a one-loop box with masses 10^3 and 10^-3 at rtol
1e-8 took 1.5e7 evaluations by the pilot's choice, cubature, while the lattice had not
converged after 1.7e7.

:class:`Pilot` runs its first candidate with ``pilot_evals`` evaluations.  Converged: that is
the result.  Otherwise it projects the evaluations that candidate needs from the rate at which
its error fell (:func:`projected_evaluations`); where that is more than ``switch_factor``
pilot budgets, it runs the next candidate with the same budget and projects its need the same
way.  The candidate with the smallest projection (a converged pilot: its own evaluations) then
runs with what is left of ``max_evals``.  The result is that run's, with the pilots'
evaluations and seconds added, the engine that produced it as ``method`` and the pilots in
``info["pilot"]``.  A projection is an order of magnitude, not a promise: it only has to tell
apart rates that differ tenfold, as they do where the choice matters.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import ClassVar

import numpy as np

from . import base

# The least and largest error decay ``excess ~ evaluations^-a`` a projection assumes: a
# random shift never converges more slowly than Monte Carlo, and rates above 4 are noise in
# the estimates of two levels.
MIN_RATE, MAX_RATE = 0.5, 4.0

# The smallest pilot: a few lattice levels, or a few bisection steps of cubature in 8-D.
MIN_PILOT_EVALS = 2**15


def _rate(points: list[tuple[float, float]]) -> float:
    """The least-squares slope ``a`` of ``log excess = c - a log n`` over ``points``
    ``(n, excess)``, clipped to ``[MIN_RATE, MAX_RATE]``; ``MIN_RATE`` with fewer than two
    usable points."""
    pts = [(math.log(n), math.log(x)) for n, x in points if n > 0 and 0 < x < math.inf]
    if len(pts) < 2:
        return MIN_RATE
    ln, lx = np.array(pts).T
    ln0 = ln - ln.mean()
    if not np.any(ln0):
        return MIN_RATE
    slope = float(np.dot(ln0, lx - lx.mean()) / np.dot(ln0, ln0))
    return float(np.clip(-slope, MIN_RATE, MAX_RATE))


def projected_evaluations(r: base.IntegrationResult, rtol: float, atol: float) -> float:
    """The evaluations a run of ``r``'s engine needs to meet the tolerance, projected from
    ``r``: its own evaluations where it converged; for ``qmc``, its levels' errors (each level
    a new lattice of about twice the points, so a run ending at ``n`` points costs about
    ``2 q n``); for ``cubature``, its trace of ``(evaluations, excess)``; ``inf`` for other
    engines, for non-finite errors and for a run that found non-finite values."""
    if r.converged:
        return float(r.evaluations)
    if r.info.get("nonfinite") or not np.all(np.isfinite(np.asarray(r.error))):
        return math.inf
    excess = base.tolerance_excess(r.value, r.error, rtol, atol)
    if r.method == "qmc":
        levels = [(n, q, base.tolerance_excess(v, e, rtol, atol))
                  for n, q, v, e in r.info["history"]]
        n, q, _ = levels[-1]
        rate = _rate([(n_, x) for n_, _, x in levels[-3:]])
        return 2.0 * q * n * excess ** (1.0 / rate)
    if r.method == "cubature":
        trace = list(r.info.get("trace", []))[-3:]
        local = base.tolerance_excess(r.value, r.info.get("local_error", r.error), rtol, atol)
        rate = _rate(trace + [(r.evaluations, local)])
        return r.evaluations * excess ** (1.0 / rate)
    return math.inf


@dataclasses.dataclass(frozen=True)
class Pilot(base.Engine):
    """Run each of ``candidates`` (engines) briefly and integrate with the one projected to
    need the fewest evaluations (module docstring).

    pilot_evals: the evaluation budget of a pilot run (at most an eighth of ``max_evals``;
        where that is below ``MIN_PILOT_EVALS``, the last candidate runs alone: cubature,
        whose smallest run is one rule application, where a lattice needs a level of
        about 8,000 points).
    switch_factor: the next candidate is tried only where the projection of the best so
        far exceeds this many pilot budgets.  A projection from a short run can overstate the
        need tenfold (the rate still rising), and the next pilot compiles another engine's
        kernels, seconds in a fresh process.
    """

    name: ClassVar[str] = "pilot"
    candidates: tuple = ()
    pilot_evals: int = 2**18
    switch_factor: float = 32.0

    def __post_init__(self):
        if not self.candidates:
            raise ValueError("Pilot needs at least one candidate engine")

    def integrate(self, f, domain, *, rtol: float = base.DEFAULT_RTOL,
                  atol: float = base.DEFAULT_ATOL,
                  max_evals: int = base.DEFAULT_MAX_EVALS) -> base.IntegrationResult:
        base.check_tolerances(rtol, atol, max_evals)
        t0 = time.perf_counter()
        max_evals = int(max_evals)
        budget = min(int(self.pilot_evals), max_evals // 8)
        if budget < MIN_PILOT_EVALS:
            return self.candidates[-1].integrate(f, domain, rtol=rtol, atol=atol,
                                                 max_evals=max_evals)
        pilots: list[tuple[base.Engine, base.IntegrationResult, float]] = []
        for engine in self.candidates:
            if pilots and min(p for _, _, p in pilots) <= self.switch_factor * budget:
                break
            r = engine.integrate(f, domain, rtol=rtol, atol=atol, max_evals=budget)
            pilots.append((engine, r, projected_evaluations(r, rtol, atol)))
        engine, r, _ = min(pilots, key=lambda t: t[2])
        spent = sum(p.evaluations for _, p, _ in pilots)
        if not r.converged and max_evals - spent > r.evaluations:
            r = engine.integrate(f, domain, rtol=rtol, atol=atol, max_evals=max_evals - spent)
            spent += r.evaluations
        info = dict(r.info)
        info["pilot"] = [{"method": p.method, "evaluations": p.evaluations,
                          "converged": p.converged, "projected_evaluations": proj}
                         for _, p, proj in pilots]
        return dataclasses.replace(r, evaluations=spent, seconds=time.perf_counter() - t0,
                                   info=info)

    def prepare(self, f, domain, *, max_evals: int = base.DEFAULT_MAX_EVALS) -> None:
        self.candidates[0].prepare(f, domain, max_evals=max_evals)
