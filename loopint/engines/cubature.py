"""Globally adaptive Genz–Malik cubature, splitting many regions per step (Cuhre-like).

Algorithm (Genz & Malik 1980; Berntsen, Espelid & Genz 1991 = DCUHRE; the GPU batching of
seeds 003 and 004): keep a list of boxes with degree-7 estimates ``I_r`` and error
estimates ``E_r`` (:mod:`loopint.engines.rules.genz_malik`).  The result is ``Σ I_r`` with
error ``Σ E_r``.  While ``|Σ E| > max(atol, rtol·|Σ I|)`` in some component:

1. rank the regions by ``p_r = max_k E_{r,k}/τ_k`` (``τ_k`` = the tolerance target of
   component ``k``), so a vector integrand is refined where the component furthest from
   its target needs it;
2. take the largest-``p`` regions that together carry the fraction ``share`` (default 1/2)
   of ``Σ p``, and at least ``min_split`` of them so that the device stays busy (the
   sequential Cuhre takes only the first);
3. bisect each along its fourth-difference axis, evaluate all children in one batched
   call, give each child the two-level error of Berntsen, Espelid & Genz, and put the
   children in place of the parent.

A step is three jitted stages on device-resident buffers: :func:`_children` (selection by
octaves of the priority, no sort; bisection), the integrand evaluation
:meth:`~loopint.engines.regions.RegionProblem.evaluate` (the only compiled code that depends
on the integrand, shared with PAGANI) and :func:`_insert` (two-level errors, insertion, new
totals and next selection size); the host loop (:class:`_Run`) reads a few scalars per
step.  Buffers have fixed sizes from a ladder (``512·8^k`` on a CPU, ``32768·64^k`` on an
accelerator, :func:`~loopint.engines.regions.capacity_for`), so a run compiles a handful of shapes;
evaluation runs in chunks whose number follows the live region count.  From
:data:`~loopint.engines.regions.COMPILE_AHEAD_FROM` rows on, the steps of the next buffer size
are compiled in the background (option ``compile_ahead``), so that a run that grows, or the
next run of a delta sequence, does not wait for them.

Global error estimate (``error_estimate="global"``).  The sum of the local errors
``Σ E_r`` is the error of the embedded degree-5 rule summed without signs; on smooth and on
regulated loop integrands it exceeds the true error of ``Σ I_r`` 10^2 to 10^5 times (Genz's
oscillatory and Gaussian families in 5 dimensions: 9.1e-9 against 1.4e-14 and 9.6e-10 against
3.8e-12; the two-loop ladder vertex at delta = 0.34: 1.3e-5 against 1.2e-9).  The global
estimate applies the degree-9 rule of
:class:`~loopint.engines.rules.genz_malik.GenzMalik9Rule` to every live region of the
partition (a "sweep") and keeps the signs: ``d_r = I9_r - I7_r`` is, where the degree-9 rule
is the more accurate one, the error of ``I7_r`` with its sign, so ``Σ d_r`` is the error of
the degree-7 total with the cancellations between regions that the true error has (on the
cases above it matched the true error to a few per cent), and the degree-9 total is
reported.  Regions where the two rules are not in their asymptotic order
(``|d_r| > ρ E_r``, ``ρ =`` :data:`GLOBAL_RHO`: the degree-7 rule no better than the
degree-5 one) enter without signs:

    error = 2 |Σ_{asymptotic} d_r| + Σ_{others} |d_r| + (retired regions' local errors).

The first term bounds the error of the degree-7 total, not that of the degree-9 total that is
reported, which is smaller by a factor r = err9/err7 (f3 in 8-D: 1/60 to 1/130 over four
sweeps).  From the third sweep on, r is measured: the partitions of successive sweeps are
nested, so the changes of the two totals between sweeps, ``S9_j - S9_k`` and ``S7_j - S7_k``,
are differences of their errors, and their ratio lies between the two partitions' r when the
errors keep their sign and shrink, i.e. it is at least the newer partition's r wherever r does
not grow under refinement (it falls as the regions shrink, as h^2 for rules two degrees apart).
Where both pairs of the last three sweeps give such a ratio (positive, at most
:data:`GLOBAL_RATIO_MAX`, above round-off, the newer not above the older), the three degree-7
errors ``S9 - S7`` share one sign and shrink, and no region was retired between the sweeps,
the first term is multiplied by the larger of the two ratios (:func:`_degree9_ratio`);
elsewhere it stays as written.  On f3 in 8-D to rtol 1e-6 the run
then converges at its third sweep (true error 1.5e-7, estimate 9.7e-7, 2.6·10^8 evaluations)
where the degree-7 bound (2.8e-5) stopped it unconverged at the budget.

Sweeps are taken when the live count has grown fourfold since the last one (from
:data:`GLOBAL_FIRST_SWEEP` regions) and, once it has grown by half, when convergence is
predicted: by the local error times the ratio of global to local error seen at the last
sweep, or by the global estimate carried forward at the rate ``R^-a`` at which it fell
between the last two sweeps (the global error falls faster than the local one, so that the
ratio alone predicts late); but not while the local estimate is predicted to meet the
tolerance in fewer integrand points than the sweeps still needed for a validated estimate
(two, then one) cost, the first one's kernel compilation counted as the points evaluated
meanwhile (:data:`SWEEP_COMPILE_POINTS`, so that on an accelerator only runs of several
10^8 points sweep): its excess over the tolerance, falling as ``R^-a`` in the live count
``R`` between a step with at most half the regions and now, reaches 1 at ``R·excess^(1/a)``
regions (osc4 in 4-D to rtol 1e-7: no sweep, 1.6·10^6 points against 4.1·10^6 with two
sweeps; ``tests/test_cubature.py``).  Their evaluations are counted and kept within
``max_evals`` (a run stopped by a limit takes a last sweep with the evaluations kept for
it, and has converged if that sweep meets the tolerance).  A sweep's estimate is used only
when the previous sweep's estimate covers its value (``|S9 - S9_before| <= error_before``
in every component): two successive partitions must agree within the claimed error, a
check of the estimate on the integrand itself.  The error is never below that change,
``|S9 - S9_before|`` (the classical two-approximation bound): on the coarse partitions
that a budget affords in 6 to 8 dimensions the degree-9 rule is not yet much more accurate
than the degree-7 one, and the signed sum alone understated the true error (f4 in 6-D
after 2·10^7 evaluations: 1.5e-5 against 3.3e-5; f7 in 8-D after 3·10^7: 3.2e-7 against
8.4e-7).  The result then takes, per component, the smaller of the local and the global
estimate.  On Genz's families f1-f7 of seed 001 in 3 to 8 dimensions, at budgets from
3·10^6 to 10^8, the true error stayed within 0.66 of the global estimate
(``tests/test_cubature.py``, ``tests/test_generic_digits.py``); the regulated ladder terms
of the delta sequence extrapolate to pySecDec's value within their propagated estimate, and
on the deformed contour of the pentagon gamma gamma -> t tbar H to rtol 1e-6 on a CPU (the
point ``E0_ggttH`` of ``tests/physical_points.py``, the only point of that set whose CPU run
sweeps) the true error was 0.04 of it without the contour's boundary transform, 0.01 with it.  The default, ``error_estimate="auto"``, takes it wherever it
applies (two or more dimensions, the degree-7 rule).

When the regions fill the memory bound (``memory_limit``), the regions with the smallest
errors are retired into a fixed sum (together at most a quarter of the remaining error
budget, as PAGANI's threshold rule, seed 001 section 3.5.3); if that frees too little, the
run stops with a ``memory_limit`` status and its best estimate.

Stops: converged (checked from the first bisection step on, so that errors are two-level
ones); ``max_evals`` (the next step would exceed the budget); ``memory_limit``;
``max_iterations``.  Non-finite integrand values are counted (``info["nonfinite"]``),
replaced by 0, and make the status ``nonfinite: ...`` (never converged).
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import time
from collections.abc import Callable
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import base, regions
from .regions import (component_weights, count_carrying, priority,
                      smallest_within, tolerance_targets, top_mask)
from .rules.genz_malik import make_rule, two_level_error

METHOD = "cubature"

CPU_MAX_REGIONS = 2**22
ACCELERATOR_MAX_REGIONS = 2**27
ACCELERATOR_MIN_REGIONS = 2**16
ERROR_ESTIMATES = ("auto", "local", "global")
GLOBAL_RHO = 0.1             # |I9 - I7| above this share of the local error: not asymptotic
GLOBAL_FIRST_SWEEP = 4096    # live regions before the first sweep of the global estimate
GLOBAL_SAFETY = 2.0          # factor on the signed sum over the asymptotic regions
GLOBAL_RATIO_MAX = 0.1       # err9/err7 above this: the degree-9 rule not clearly the better
GLOBAL_NOISE = 16            # changes of the totals within this many ulp floors: round-off
LIMITS = (base.MAX_EVALS, base.MAX_ITERATIONS, base.MEMORY_LIMIT)   # stops a sweep may lift
# The first sweep of a run also compiles (or loads) the degree-9 kernel: counted as the
# integrand points the run could evaluate meanwhile.  The gamma gamma -> t tbar H pentagon's
# contour in 4-D: about 1 s of compilation at 1.7e6 points/s on a 2-core CPU, about 3 s at
# 2e8 points/s on an H100.
SWEEP_COMPILE_POINTS = {"cpu": 2 * 10**6}
SWEEP_COMPILE_POINTS_ACCELERATOR = 5 * 10**8


def default_max_regions(region_bytes: int, device=None) -> int:
    """Regions held at once with ``memory_limit=None`` on ``device`` (default: the first
    device), ``region_bytes`` each (:func:`~loopint.engines.regions.bytes_per_region`): 2^22
    on a CPU; on an accelerator the largest power of two within the device memory JAX may
    use, between 2^16 and 2^27 (on an H200, 2^26 in 6 dimensions; a vector integrand of
    many components, as a batch of kinematic points, has wider rows and fewer of them).  The
    regulated integrands of the delta sequence at small delta hit the CPU bound (the two-loop
    ladder vertex at delta = 0.02 in 5 dimensions)."""
    limit = base.device_memory_limit(device)
    if limit <= 0:
        return CPU_MAX_REGIONS
    k = int(np.floor(np.log2(limit / region_bytes)))
    return int(min(max(2**k, ACCELERATOR_MIN_REGIONS), ACCELERATOR_MAX_REGIONS))


@dataclasses.dataclass(frozen=True)
class Cubature(base.Engine):
    """Globally adaptive Genz–Malik cubature (module docstring).

    Options:
        memory_limit: bytes of device memory the engine may use for its buffers (regions,
            sample chunks); ``memory_limit //``
            :func:`~loopint.engines.regions.bytes_per_region` regions are held at once.
            None: automatic, :func:`default_max_regions` regions (2^22 on a CPU, more on an
            accelerator) and 2^21 integrand points per call, on an accelerator up to 2^25
            for large buffers (:meth:`~loopint.engines.regions.RegionProblem.wide_chunk`).
        precision: ``"float64"`` (default) or ``"float32"``.
        share: fraction of the total normalised error carried by the regions split per step.
        min_split: split at least this many regions per step (when that many exist).
        max_iterations: cap on adaptive steps.
        initial_divisions: start from the uniform grid with this many cells per axis.
        rule: ``"genz_malik"`` (degree 7/5, default) or ``"dcuhre9"`` (degree 9 with null
            rules, ``d >= 2``; see :class:`~loopint.engines.rules.genz_malik.GenzMalik9Rule`).
        error_estimate: ``"auto"`` (default): global where it applies
            (``rule="genz_malik"``, ``d >= 2``), local otherwise (:meth:`estimate_for`);
            ``"local"``: the sum of the regions' error estimates; ``"global"``: signed
            degree-9 sweeps of the partition (module docstring; ``rule="genz_malik"`` and
            ``d >= 2``; with ``defer_sweeps``, taken only where they cost fewer points than
            the local estimate is predicted to need).
        defer_sweeps: put a due sweep off while the local estimate is predicted to converge
            in fewer integrand points than the sweeps and their kernel's compilation (module
            docstring); False: sweep whenever one is due, for runs whose reported error
            matters below the tolerance (the delta sequence's terms, whose errors the
            extrapolation amplifies).
        stop_on_nonfinite: end the run at the first step that met a NaN/inf (status
            ``nonfinite``) instead of counting such values as 0 and going on: for integrands
            where one is a failure of the whole run (a deformed contour that left the Feynman
            prescription), not a few bad points.
        boundary_check: probe the integrand near the faces after the run
            (:func:`~loopint.engines.base.probe_boundary`).
        compile_ahead: once the buffer holds
            :data:`~loopint.engines.regions.COMPILE_AHEAD_FROM` rows, compile the next
            buffer size's steps in background threads (:data:`~loopint.engines.regions.AHEAD`),
            and on :meth:`~loopint.engines.base.Engine.prepare` the first size's.
            None (default): on a GPU, where the compilation overlaps the device's work; not
            on a CPU, where it competes with the computation for the same cores.
        devices: local devices to shard each chunk of regions over (None: all; a power of
            two is used, :func:`~loopint.engines.sharding.pow2_count`), or ``"global"``.

    :meth:`integrate_box` returns an :class:`~loopint.engines.base.IntegrationResult` whose
    ``info`` has ``regions``, ``iterations``, ``nonfinite``, ``retired_regions``,
    ``capacity``, ``error_estimate`` (the estimate the result carries: "local", "global" or,
    per component, "mixed"), ``local_error`` (the sum of local errors at the end, (re, im)
    parts as ``error``), ``sweeps``, ``sweep_evaluations`` and ``trace``: ``(evaluations,
    excess)`` each time the evaluations have doubled, ``excess`` the largest sum of local
    errors over its tolerance (the rate at which the run converges, for
    :class:`~loopint.engines.pilot.Pilot`).
    """

    name: ClassVar[str] = METHOD
    memory_limit: int | None = None
    precision: str = "float64"
    share: float = 0.5
    min_split: int = 64
    max_iterations: int = 100_000
    initial_divisions: int = 1
    rule: str = "genz_malik"
    error_estimate: str = "auto"
    defer_sweeps: bool = True
    stop_on_nonfinite: bool = False
    boundary_check: bool = True
    compile_ahead: bool | None = None
    devices: int | str | None = None

    def _integrate_box(self, f, lower, upper, *, rtol, atol, max_evals):
        """Integrate ``f`` over the box ``[lower, upper]``.

        ``f``: batched integrand, points ``(n, d)`` → values ``(n,)`` or ``(n, m)``, real or
        complex, traceable by JAX (the same function, or a
        :class:`~loopint.engines.base.BoundIntegrand` of it, reuses the compiled steps).
        Stops when ``|error| <= max(atol, rtol·|value|)`` in every component; a step that
        would exceed ``max_evals`` integrand points is not taken.
        """
        t0 = time.perf_counter()
        if not 0 < self.share <= 1:
            raise ValueError(f"share must be in (0, 1], got {self.share}")
        if self.error_estimate not in ERROR_ESTIMATES:
            raise ValueError(f"error_estimate must be one of {ERROR_ESTIMATES}, "
                             f"got {self.error_estimate!r}")
        problem = regions.prepare(f, lower, upper, rtol=rtol, atol=atol, max_evals=max_evals,
                                  precision=self.precision, rule=self.rule,
                                  memory_limit=self.memory_limit, devices=self.devices,
                                  default_regions=default_max_regions)
        if self.error_estimate == "global" and not self.global_applies(problem.ndim):
            raise ValueError("error_estimate='global' sweeps with the degree-9 rule: it needs "
                             f"rule='genz_malik' and ndim >= 2 (got rule={self.rule!r}, "
                             f"ndim={problem.ndim})")
        run = _Run.start(self, problem, rtol, atol, max_evals)
        return run.result(run.loop(), t0)

    def _prepare_box(self, f, lower, upper, max_evals: int) -> None:
        """Compile the first buffer size's evaluation, bisection and insertion side by side
        in the background (:meth:`~loopint.engines.base.Engine.prepare`): every run needs
        them.  From :data:`~loopint.engines.regions.COMPILE_AHEAD_FROM` rows on (the first
        size on an accelerator) the next size's steps are queued too, as the run's start
        (:meth:`_Run._compile_ahead`) would queue them, but earlier and behind every other
        queued compilation (``later``); a run that never grows does not need them, and one
        still running when the process ends delays its exit."""
        if not regions.ahead_enabled(self.compile_ahead) or self.devices == "global":
            return          # (a program over several processes: each builds it alike)
        problem = regions.prepare(f, lower, upper, rtol=base.DEFAULT_RTOL, atol=0.0,
                                  max_evals=max_evals, precision=self.precision,
                                  rule=self.rule, memory_limit=self.memory_limit,
                                  devices=self.devices, default_regions=default_max_regions)
        cap = problem.capacity(max(self.initial_divisions ** problem.ndim, 2))
        parts = {"evaluate": functools.partial(problem.compile_evaluate, cap),
                 "children": functools.partial(_compile_children, problem, cap),
                 "insert": functools.partial(_compile_insert, problem, cap)}
        for part, work in parts.items():
            regions.AHEAD.submit(_ahead_key(problem, part, cap), work)
        _queue_next_steps(problem, cap)

    def global_applies(self, ndim: int) -> bool:
        """Whether the global estimate can be formed: the degree-9 rule of the sweeps
        exists from two dimensions on and is checked against the degree-7 rule."""
        return self.rule == "genz_malik" and ndim >= 2

    def estimate_for(self, ndim: int) -> str:
        """The estimate a run in ``ndim`` dimensions uses: ``"auto"`` resolves to global
        where it applies (:meth:`global_applies`), else local."""
        if self.error_estimate != "auto":
            return self.error_estimate
        return "global" if self.global_applies(ndim) else "local"


# ---------------------------------------------------------------------------------------
# The host loop


@dataclasses.dataclass
class _Sweeps:
    """Bookkeeping of the global estimate: degree-9 points per region (0 with the local
    estimate), sweeps taken, their evaluations, the live count at the last one, the count
    that triggers the next, the ratio of global to local error seen at the last one, the
    rate at which the estimate fell between the last two (per component, :meth:`predicted`),
    which components' bounds the degree-9 ratio scaled, its ``(value, error)`` (float64) and
    whether the sweep before covered it."""

    points: int
    defer: bool = True
    compile_points: int = 0
    count: int = 0
    evaluations: int = 0
    swept_regions: int = 0
    next_at: int = GLOBAL_FIRST_SWEEP
    ratio: float | None = None
    rate: np.ndarray | None = None
    scaled: np.ndarray | None = None
    estimate: tuple | None = None
    validated: bool = False
    history: list = dataclasses.field(default_factory=list)
    sums: list = dataclasses.field(default_factory=list)

    def due(self, regions: int, predicts_convergence: Callable[[float], bool],
            local_cost: float = np.inf,
            predicts_global: Callable[[np.ndarray], bool] | None = None) -> bool:
        """Whether to sweep now, with ``regions`` live: the count has reached
        :attr:`next_at` (fourfold the last sweep's), or it has grown by half and either
        ``predicts_convergence(ratio)`` says that the local error scaled by the last
        global-to-local ratio meets the tolerance, or ``predicts_global(error)`` says
        that the global estimate, carried forward at its own rate (:meth:`predicted`),
        does; and the sweeps that a validated estimate still needs (two before the first
        estimate, then one; the first with :attr:`compile_points` for its kernel) cost
        fewer integrand points than ``local_cost``, what the local estimate alone is
        predicted to need (:meth:`local_cost`), or sweeps are not deferred."""
        if not self.points:
            return False
        grown = regions >= 1.5 * self.swept_regions
        predicted = grown and (
            (self.ratio is not None and predicts_convergence(self.ratio))
            or (predicts_global is not None and self.rate is not None
                and predicts_global(self.predicted(regions))))
        needed = 2 if self.estimate is None else 1
        cost = needed * regions * self.points + (self.compile_points if not self.count else 0)
        return (regions >= self.next_at or predicted) and (not self.defer or local_cost >= cost)

    def predicted(self, regions: int) -> np.ndarray:
        """The global error expected of a sweep of ``regions`` regions: the last
        estimate falling as ``R^-a`` with the rate ``a`` (per component) between the last
        two sweeps.  The global error falls faster than the local one (f3 in 8-D between
        sweeps of 3.2·10^6 and 1.6·10^7 regions: ``R^-1.1`` against ``R^-0.75``), so
        the ratio of the two at the last sweep predicts convergence late."""
        return self.estimate[1] * (regions / self.swept_regions) ** -self.rate

    def converges_at(self, met: Callable[[np.ndarray], bool]) -> int | None:
        """The live count, between half as many again as the last sweep's and the fourfold
        that triggers the next sweep anyway, at which :meth:`predicted` first meets the
        tolerance (``met``), to one per cent; None when it does not within that range.  A
        step stops there (:meth:`_Run._step`) instead of splitting past it, so that the
        sweep that converges is not taken on up to twice the regions it needs."""
        if self.rate is None:
            return None
        lo, hi = 1.5 * self.swept_regions, float(self.next_at)
        if not met(self.predicted(hi)):
            return None
        if met(self.predicted(lo)):
            return int(np.ceil(lo))
        while hi > 1.01 * lo:
            mid = np.sqrt(lo * hi)
            lo, hi = (lo, mid) if met(self.predicted(mid)) else (mid, hi)
        return int(np.ceil(hi))

    def local_cost(self, regions: int, excess: float, points_per_region: int) -> float:
        """Integrand points until the local estimate meets the tolerance, predicted from
        its rate: ``excess`` (local error over tolerance) is recorded with ``regions``,
        and compared with the last record at no more than half as many regions; an error
        falling as ``R^-a`` reaches the tolerance at ``R·excess^(1/a)`` regions, each new
        one costing two rule applications (a bisection).  ``inf`` without such a record
        or where the error did not fall: the sweeps are then never put off."""
        # records with increasing region counts (a retirement drops the later ones), so
        # that the comparison record is found by bisection
        h = self.history
        k = bisect.bisect_right(h, (regions // 2, np.inf))
        past = h[k - 1] if k else None
        while h and h[-1][0] >= regions:
            h.pop()
        h.append((regions, excess))
        if excess <= 1:
            return 0.0
        if past is None or not 0 < excess < past[1]:
            return np.inf
        r0, q0 = past
        rate = np.log(q0 / excess) / np.log(regions / r0)
        log_grow = np.log(excess) / rate
        if log_grow > 40:
            return np.inf
        return float(np.expm1(log_grow)) * regions * 2 * points_per_region

    def record(self, value, value7, signed, rest, floor, regions: int, local_error,
               retired=None) -> None:
        """Book a sweep of ``regions`` regions from the parts of its global estimate
        (:func:`_global_estimate`): ``GLOBAL_SAFETY·|signed|`` bounds the error of the
        degree-7 total, scaled down to the degree-9 total by :func:`_degree9_ratio` where the
        last three sweeps show the asymptotic regime and no region was retired between them
        (``retired``: the retired regions' value sum, which enters both totals at degree 7);
        validated when the previous sweep's estimate covers it (:func:`_covers`); the ratio
        to the local ``local_error`` predicts the next sweep."""
        self.evaluations += regions * self.points
        self.count += 1
        swept_before = self.swept_regions
        self.swept_regions = regions
        self.next_at = 4 * regions
        previous = self.estimate
        value, value7, signed, rest, floor = (np.asarray(a, np.float64)
                                              for a in (value, value7, signed, rest, floor))
        retired = np.zeros_like(value) if retired is None else np.asarray(retired, np.float64)
        scale = np.ones_like(value)
        same_retired = bool(self.sums) and np.array_equal(self.sums[-1][2], retired)
        if len(self.sums) == 2 and all(np.array_equal(r, retired) for *_, r in self.sums):
            ratio = _degree9_ratio([s[:2] for s in self.sums], value, value7, floor)
            scale = np.where(np.isnan(ratio), 1.0, ratio)
        scaled, scaled_before = scale != 1.0, self.scaled
        self.scaled = scaled
        self.sums = (self.sums + [(value7, value, retired)])[-2:]
        error = GLOBAL_SAFETY * scale * np.abs(signed) + rest + floor
        self.validated = _covers(previous, (value, error))
        if previous is not None:
            # never below the change since the last sweep: where the degree-9 rule is not
            # yet much better than the degree-7 one, the signed sum misses its own error
            error = np.maximum(error, np.abs(value - previous[0]))
        self.estimate = (value, error)
        # a fall across a retirement, or across a change of the bound's form (scaled by the
        # degree-9 ratio or not), is not the estimate's rate of convergence
        self.rate = (_falling_rate(previous, error, swept_before, regions, scaled == scaled_before)
                     if same_retired and scaled_before is not None else None)
        local_error = np.asarray(local_error, np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.ratio = float(np.nanmax(np.where(local_error > 0,
                                                  self.estimate[1] / local_error, 0)))

    def report(self, stop: str, total_value, total_error, problem: regions.RegionProblem,
               rtol: float, atol: float):
        """The ``(stop, value, error, estimate)`` a run reports: per component the smaller
        of the local and the validated global estimate, each with its own value (each pair
        is honest); all global when the run converged on the global estimate.  ``estimate``
        is ``"local"``, ``"global"`` or ``"mixed"``."""
        if self.estimate is None or not self.validated:
            return stop, total_value, total_error, "local"
        use = self.estimate[1] < total_error
        if stop == base.CONVERGED and not problem.met(total_value, total_error, rtol, atol):
            use = np.ones_like(use)
        value = np.where(use, self.estimate[0], total_value)
        error = np.where(use, self.estimate[1], total_error)
        estimate = "global" if np.all(use) else ("local" if not np.any(use) else "mixed")
        if stop != base.CONVERGED and np.any(use):
            stop += (f"; the global error estimate ({np.max(np.abs(self.estimate[1])):.3g})"
                     " is reported where smaller")
        return stop, value, error, estimate

    def met(self, problem: regions.RegionProblem, rtol: float, atol: float) -> bool:
        """Whether the last sweep is validated and meets the tolerance."""
        return (self.estimate is not None and self.validated
                and problem.met(*self.estimate, rtol, atol))


@dataclasses.dataclass(eq=False)
class _Run:
    """One run between its jitted steps: the device buffers ``(centers, halfwidths, value,
    error, axis)`` and :class:`Plan`, the retired regions' sums, the host's counters and
    the totals last read from the device."""

    engine: Cubature
    problem: regions.RegionProblem
    rtol: float
    atol: float
    max_evals: int
    progress: regions.Progress
    sweeps: _Sweeps
    scalars: dict
    buffers: tuple
    plan: Plan
    bad: jax.Array               # non-finite values of the last evaluation
    retired_value: jax.Array
    retired_error: jax.Array
    retired_regions: int = 0
    total_value: np.ndarray | None = None
    total_error: np.ndarray | None = None
    trace: list = dataclasses.field(default_factory=list)

    @classmethod
    def start(cls, engine: Cubature, problem: regions.RegionProblem, rtol: float, atol: float,
              max_evals: int) -> "_Run":
        """Evaluate the initial grid and plan the first step."""
        dtype, m = problem.dtype, problem.integrand.n_components
        grid, count, cap = problem.initial_grid(engine.initial_divisions, max_evals)
        scalars = dict(rtol=jnp.asarray(rtol, dtype), atol=jnp.asarray(atol, dtype),
                       share=jnp.asarray(engine.share, dtype))
        retired_value = jnp.zeros((m,), dtype)
        retired_error = jnp.zeros((m,), dtype)
        for part in ("evaluate", "children", "insert"):
            regions.AHEAD.wait(_ahead_key(problem, part, cap))
        est = problem.evaluate(*grid, count, jnp.ones((m,), dtype), cap)
        half = jnp.zeros((cap // 2,), jnp.int32)
        buffers, plan = _insert(*grid, est.value, est.error, est.split_axis, half, *grid,
                                est.value, est.error, est.split_axis, np.int32(count),
                                np.int32(0), np.bool_(True), retired_value, retired_error,
                                **scalars, is_complex=problem.integrand.is_complex)
        n9 = (make_rule("dcuhre9", problem.ndim).n_points
              if engine.estimate_for(problem.ndim) == "global" else 0)
        run = cls(engine, problem, rtol, atol, int(max_evals),
                  regions.Progress(regions=count, capacity=cap,
                                   evaluations=count * problem.points_per_region),
                  _Sweeps(points=n9, defer=engine.defer_sweeps,
                          compile_points=SWEEP_COMPILE_POINTS.get(
                              jax.default_backend(), SWEEP_COMPILE_POINTS_ACCELERATOR)),
                  scalars, buffers, plan, est.nonfinite, retired_value,
                  retired_error)
        run._compile_ahead()
        return run

    def loop(self) -> str:
        """Bisect until a stop; returns the stop's status."""
        while True:
            wanted = self._read_totals()
            stop = self._stop()
            if stop is None:
                stop = self._step(wanted)
            if stop is not None:
                return stop

    def _read_totals(self) -> int:
        """Read the totals and non-finite count; returns the regions the plan wants split."""
        plan = self.plan
        total_value, total_error, wanted, bad = jax.device_get(
            (plan.total_value, plan.total_error, plan.wanted, self.bad))
        self.progress.nonfinite += int(bad)
        self.total_value = np.asarray(total_value, np.float64)
        self.total_error = np.asarray(total_error, np.float64)
        evaluations = self.progress.evaluations
        if not self.trace or evaluations >= 2 * self.trace[-1][0]:
            self.trace.append((int(evaluations), self.problem.excess(
                self.total_value, self.total_error, self.rtol, self.atol)))
        return int(wanted)

    def _requested(self) -> float:
        return self.problem.requested(self.total_value, self.rtol, self.atol)

    def _budget_regions(self) -> int:
        """Regions the remaining budget can split (with room for a final sweep)."""
        p, n9 = self.progress, self.sweeps.points
        return ((self.max_evals - p.evaluations - p.regions * n9)
                // (2 * self.problem.points_per_region + n9))

    def _stop(self) -> str | None:
        """The status if the run ends before the next step, else None."""
        p = self.progress
        if self.engine.stop_on_nonfinite and p.nonfinite:
            return f"stopped at the first non-finite values (step {p.iterations})"
        # Judge convergence only after a bisection step with two-level errors: a lone
        # rule application can report an optimistic error.
        if p.iterations >= 1 and self.problem.met(self.total_value, self.total_error,
                                                  self.rtol, self.atol):
            return base.CONVERGED
        if self._global_converged():
            return base.CONVERGED
        if p.iterations >= self.engine.max_iterations:
            return p.not_converged(base.MAX_ITERATIONS, self.total_error, self._requested())
        if self._budget_regions() < 1:
            return p.not_converged(base.MAX_EVALS, self.total_error, self._requested())
        return None

    def _global_converged(self) -> bool:
        """Take a sweep when one is due (module docstring); whether its validated
        estimate meets the tolerance."""
        p, sw = self.progress, self.sweeps
        if not sw.points:
            return False
        local_cost = np.inf if not sw.defer else sw.local_cost(p.regions, self.problem.excess(
            self.total_value, self.total_error, self.rtol, self.atol),
            self.problem.points_per_region)
        if not (p.iterations >= 1 and p.evaluations + p.regions * sw.points <= self.max_evals):
            return False
        if not sw.due(p.regions, lambda ratio: self.problem.met(
                self.total_value, ratio * self.total_error, self.rtol, self.atol), local_cost,
                self._global_met):
            return False
        self._sweep()
        return sw.met(self.problem, self.rtol, self.atol)

    def _global_met(self, error) -> bool:
        """Whether a global estimate of ``error`` about the last sweep's value would meet
        the tolerance."""
        return self.problem.met(self.sweeps.estimate[0], error, self.rtol, self.atol)

    def _sweep(self) -> None:
        """Degree-9 sweep of the live regions: the global estimate, checked against the
        previous one (:func:`_covers`)."""
        p, sw, b = self.progress, self.sweeps, self.buffers
        regions.AHEAD.wait(self._ahead_key("sweep", p.capacity))
        est9 = self.problem.evaluate(b[0], b[1], p.regions, self.plan.weights, p.capacity,
                                     rule="dcuhre9")
        dtype = self.problem.dtype
        out = _global_estimate(b[2], b[3], est9.value, np.int32(p.regions),
                               self.retired_value, self.retired_error,
                               np.asarray(GLOBAL_RHO, dtype))
        parts, bad9, retired = jax.device_get((out, est9.nonfinite, self.retired_value))
        p.nonfinite += int(bad9)
        p.evaluations += p.regions * sw.points
        sw.record(*parts, p.regions, self.total_error, retired=retired)

    def _step(self, wanted: int) -> str | None:
        """Split the planned regions, making room first, and no more than bring the live
        count to where the global estimate is predicted to converge
        (:meth:`_Sweeps.converges_at`); a ``memory_limit`` status when retiring regions
        frees too little."""
        p, e = self.progress, self.engine
        max_regions = self.problem.max_regions
        split = min(max(wanted, min(e.min_split, p.regions)), p.regions, self._budget_regions())
        target = self.sweeps.converges_at(self._global_met)
        if target is not None and p.regions < target < p.regions + split:
            split = target - p.regions
        if max_regions - p.regions < max(1, split // 2):
            stop = self._retire()
            if stop is not None:
                return stop
        split = min(split, max_regions - p.regions)
        if p.regions + split > p.capacity:
            capacity = self.problem.capacity(p.regions + split)
            _wait_steps(self.problem, p.capacity, capacity)
            p.capacity = capacity
            self.buffers = _grow(self.buffers, rows=capacity)
            self._compile_ahead()
        self._bisect(min(split, p.capacity // 2, p.capacity - p.regions))
        return None

    def _ahead_key(self, *what) -> tuple:
        return _ahead_key(self.problem, *what)

    def _compile_ahead(self) -> None:
        """From :data:`~loopint.engines.regions.COMPILE_AHEAD_FROM` rows on, have the next
        buffer size's steps (:func:`_submit_steps`) and, with the global estimate (where
        sweeps are deferred, once the run has taken one), the sweeps of this size and the
        next (:func:`_compile_sweep`) compiled in the background."""
        cap = self.progress.capacity
        if not regions.ahead_enabled(self.engine.compile_ahead) \
                or cap < regions.COMPILE_AHEAD_FROM:
            return
        new = _queue_next_steps(self.problem, cap)
        sizes = (cap, new) if new > cap else (cap,)
        # deferred sweeps only once the run has taken one: most runs whose local estimate
        # converges first never sweep, and a compilation in the background competes with it
        sw = self.sweeps
        for rows in sizes if sw.points and (sw.count or not sw.defer) else ():
            regions.AHEAD.submit(self._ahead_key("sweep", rows),
                                 functools.partial(_compile_sweep, self.problem, rows))

    def _retire(self) -> str | None:
        """Move the smallest-error regions into the retired sums (:func:`_retire`)."""
        p = self.progress
        before = p.regions
        self.buffers, kept, rv, re = _retire(*self.buffers, np.int32(before),
                                             self.plan.weights, self.plan.targets,
                                             self.retired_error)
        p.regions = int(kept)
        freed = before - p.regions
        # the retired sums are kept either way: the compacted buffers are what remains
        self.retired_value, self.retired_error = self.retired_value + rv, self.retired_error + re
        self.retired_regions += freed
        if freed < max(1, before // 4):
            return (f"{base.MEMORY_LIMIT}: {before} regions of the {self.problem.max_regions} "
                    "that memory_limit holds; retiring small-error regions within a quarter "
                    f"of the remaining error budget would free only {freed}; error "
                    f"{np.max(np.abs(self.total_error)):.3g} > requested "
                    f"{self._requested():.3g}")
        return None

    def _bisect(self, split: int) -> None:
        """Bisect ``split`` regions, evaluate the children, insert them (one step)."""
        p, b, plan = self.progress, self.buffers, self.plan
        parents, child_c, child_h = _children(b[0], b[1], b[3], b[4], np.int32(p.regions),
                                              np.int32(split), plan.weights)
        est = self.problem.evaluate(child_c, child_h, 2 * split, plan.weights, p.capacity)
        self.buffers, self.plan = _insert(
            *b, parents, child_c, child_h, est.value, est.error, est.split_axis,
            np.int32(p.regions), np.int32(split), np.bool_(False), self.retired_value,
            self.retired_error, **self.scalars, is_complex=self.problem.integrand.is_complex)
        self.bad = est.nonfinite
        p.evaluations += 2 * split * self.problem.points_per_region
        p.regions += split
        p.iterations += 1

    def result(self, stop: str, t0: float) -> base.IntegrationResult:
        """The result, with the global estimate where it is validated and smaller."""
        p, sw = self.progress, self.sweeps
        if sw.points and stop != base.CONVERGED and p.regions > sw.swept_regions \
                and p.evaluations + p.regions * sw.points <= self.max_evals:
            self._sweep()
            if stop.startswith(LIMITS) and sw.met(self.problem, self.rtol, self.atol):
                stop = base.CONVERGED        # the budget kept for this sweep was enough
        stop, total_value, total_error, estimate = sw.report(
            stop, self.total_value, self.total_error, self.problem, self.rtol, self.atol)
        for kind in (base.MAX_EVALS, base.MAX_ITERATIONS):
            if stop.startswith(kind + ":"):     # with the final sweep's evaluations and error
                stop = p.not_converged(kind, total_error, self._requested())
        info = {"retired_regions": self.retired_regions, "error_estimate": estimate,
                "local_error": base.complex_error(self.total_error, self.problem.integrand),
                "sweeps": sw.count, "sweep_evaluations": int(sw.evaluations),
                "trace": self.trace}
        return regions.region_result(self.problem, p, method=METHOD, stop=stop,
                                     total_value=total_value, total_error=total_error, t0=t0,
                                     info=info)


# ---------------------------------------------------------------------------------------
# Jitted steps


class Plan(NamedTuple):
    """Totals and the next step's selection, computed on the device after every step."""

    total_value: jax.Array   # (M,)
    total_error: jax.Array   # (M,)
    targets: jax.Array       # (M,) tolerance targets τ_k
    weights: jax.Array       # (M,) component weights for priorities and split axes
    wanted: jax.Array        # () regions carrying `share` of the error


def _make_plan(value, error, count, retired_value, retired_error, rtol, atol, share,
               is_complex):
    live = (jnp.arange(value.shape[0]) < count)[:, None]
    total_value = jnp.sum(jnp.where(live, value, 0), axis=0) + retired_value
    total_error = jnp.sum(jnp.where(live, error, 0), axis=0) + retired_error
    targets = tolerance_targets(total_value, rtol, atol, is_complex)
    weights = component_weights(targets)
    wanted = count_carrying(priority(error, count, weights), share)
    wanted = jnp.clip(wanted, 1, count)
    return Plan(total_value, total_error, targets, weights, wanted.astype(jnp.int32))


@jax.jit
def _children(centers, halfwidths, error, axis, count, split, weights):
    """Bisect the ``split`` largest-priority regions along their split axes.

    Returns the parents' rows (``parents[j]``, ``j < split``, in index order) and a buffer of
    children: rows ``[0, split)`` lower halves, ``[split, 2·split)`` upper halves, the rest
    padding.  Independent of the integrand, so compiled once per buffer shape.
    """
    cap, ndim = centers.shape
    half = cap // 2
    chosen = top_mask(priority(error, count, weights), split)
    slot = jnp.where(chosen, jnp.cumsum(chosen) - 1, half)
    parents = jnp.zeros((half,), jnp.int32).at[slot].set(jnp.arange(cap, dtype=jnp.int32),
                                                       mode="drop")
    rows = jnp.arange(cap)
    is_child = rows < 2 * split
    upper = is_child & (rows >= split)
    rank = jnp.where(upper, rows - split, jnp.where(is_child, rows, 0))
    par = parents[rank]
    onehot = jax.nn.one_hot(axis[par], ndim, dtype=centers.dtype)
    child_h = halfwidths[par] * (1 - 0.5 * onehot)
    sign = jnp.where(upper, 1, -1)[:, None].astype(centers.dtype)
    return parents, centers[par] + sign * child_h * onehot, child_h


@functools.partial(jax.jit, static_argnames=("is_complex",))
def _insert(centers, halfwidths, value, error, axis, parents, child_c, child_h, est_value,
            est_error, est_axis, count, split, initial, retired_value, retired_error, rtol,
            atol, share, *, is_complex):
    """Two-level errors for the children, children in place of parents, new :class:`Plan`.

    The lower child takes its parent's row, the upper child is appended.  With ``initial``
    true the estimates are the first evaluation of rows ``[0, count)`` and are stored as
    they are.
    """
    cap = centers.shape[0]
    half = cap // 2
    j = jnp.arange(half)
    ok = j < split
    up = jnp.minimum(j + split, cap - 1)
    v_lo, v_up = est_value[j], est_value[up]
    e_lo, e_up = est_error[j], est_error[up]
    parent_value = value[parents]
    e_lo2 = two_level_error(v_lo, e_lo, v_up, e_up, parent_value)
    e_up2 = two_level_error(v_up, e_up, v_lo, e_lo, parent_value)
    dst = jnp.concatenate([jnp.where(ok, parents, cap), jnp.where(ok, count + j, cap)])
    src = jnp.concatenate([j, up])

    def put(buf, new, fresh):
        return jnp.where(initial, fresh, buf.at[dst].set(new, mode="drop"))

    centers = put(centers, child_c[src], centers)
    halfwidths = put(halfwidths, child_h[src], halfwidths)
    value = put(value, est_value[src], est_value)
    error = put(error, jnp.concatenate([e_lo2, e_up2]), est_error)
    axis = put(axis, est_axis[src], est_axis)
    new_count = jnp.where(initial, count, count + split)
    plan = _make_plan(value, error, new_count, retired_value, retired_error, rtol, atol,
                      share, is_complex)
    return (centers, halfwidths, value, error, axis), plan


@functools.partial(jax.jit, static_argnames=("rows",))
def _grow(state, *, rows):
    def pad(a):
        return jnp.pad(a, [(0, rows - a.shape[0])] + [(0, 0)] * (a.ndim - 1), mode="edge")
    return tuple(pad(a) for a in state)


def _specs(problem: regions.RegionProblem):
    """``spec(shape, dtype)`` and the five buffers of ``rows`` rows, as shapes to compile for."""
    n, m, dtype = problem.ndim, problem.integrand.n_components, problem.dtype

    def spec(shape, dt=dtype):
        return jax.ShapeDtypeStruct(shape, dt)

    def state(rows):
        return (spec((rows, n)), spec((rows, n)), spec((rows, m)), spec((rows, m)),
                spec((rows,), jnp.int32))

    return spec, state


def _ahead_key(problem: regions.RegionProblem, *what) -> tuple:
    """The key of a compilation ahead of need (:data:`~loopint.engines.regions.AHEAD`): the
    integrand's signature, the run's shapes and ``what`` is compiled."""
    return (METHOD, problem.kernel["f"].signature(), problem.ndim,
            problem.kernel["dtype_name"], problem.integrand.n_components,
            problem.integrand.is_complex, problem.rule, problem.memory.chunk_points,
            jax.config.jax_default_device) + what


def _compile_children(problem: regions.RegionProblem, rows: int) -> None:
    """Compile :func:`_children` for a buffer of ``rows`` rows."""
    spec, state = _specs(problem)
    i32, vec = spec((), jnp.int32), spec((problem.integrand.n_components,))
    _children.lower(*[state(rows)[k] for k in (0, 1, 3, 4)], i32, i32, vec).compile()


def _compile_insert(problem: regions.RegionProblem, rows: int) -> None:
    """Compile :func:`_insert` for a buffer of ``rows`` rows."""
    spec, state = _specs(problem)
    m = problem.integrand.n_components
    i32, vec, scalar = spec((), jnp.int32), spec((m,)), spec(())
    _insert.lower(*state(rows), spec((rows // 2,), jnp.int32), *state(rows)[:2],
                  *state(rows)[2:], i32, i32, spec((), jnp.bool_), vec, vec, rtol=scalar,
                  atol=scalar, share=scalar, is_complex=problem.integrand.is_complex).compile()


_STEP_PARTS = ("grow", "children", "evaluate", "insert")   # of _steps_parts, in that order


def _steps_parts(problem: regions.RegionProblem, capacity: int,
                 new_capacity: int) -> dict[str, Callable[[], None]]:
    """The compilations, without running them, of the steps of a run whose buffer grows from
    ``capacity`` to ``new_capacity`` rows, each on its own so that workers compile them side
    by side: the growth, the bisection, the evaluation of the children and the insertion.
    The shapes, static arguments and keyword arguments are those of :class:`_Run`'s calls
    (JAX's caches tell positional from keyword arguments), so that its calls find the code."""
    _, state = _specs(problem)
    return dict(zip(_STEP_PARTS, (
        lambda: _grow.lower(state(capacity), rows=new_capacity).compile(),
        functools.partial(_compile_children, problem, new_capacity),
        functools.partial(problem.compile_evaluate, new_capacity),
        functools.partial(_compile_insert, problem, new_capacity))))


def _submit_steps(problem: regions.RegionProblem, capacity: int, new_capacity: int) -> None:
    """Queue :func:`_steps_parts` on :data:`~loopint.engines.regions.AHEAD`, behind the
    compilations a run needs whether or not it grows (a contour's pilot, the first size)."""
    for part, work in _steps_parts(problem, capacity, new_capacity).items():
        regions.AHEAD.submit(_ahead_key(problem, "steps", capacity, new_capacity, part), work,
                             later=True)


def _queue_next_steps(problem: regions.RegionProblem, capacity: int) -> int:
    """From :data:`~loopint.engines.regions.COMPILE_AHEAD_FROM` rows on, queue the steps of
    the size after ``capacity`` (:func:`_submit_steps`); returns that size (``capacity`` at
    the top of the ladder)."""
    new = problem.capacity(capacity * problem.step)
    if capacity >= regions.COMPILE_AHEAD_FROM and new > capacity:
        _submit_steps(problem, capacity, new)
    return new


def _wait_steps(problem: regions.RegionProblem, capacity: int, new_capacity: int) -> None:
    """Wait for the parts :func:`_submit_steps` queued, if any."""
    for part in _STEP_PARTS:
        regions.AHEAD.wait(_ahead_key(problem, "steps", capacity, new_capacity, part))


def _compile_sweep(problem: regions.RegionProblem, rows: int) -> None:
    """Compile a degree-9 sweep of a buffer of ``rows`` rows and its global estimate."""
    spec, _ = _specs(problem)
    m = problem.integrand.n_components
    i32, vec, scalar, values = spec((), jnp.int32), spec((m,)), spec(()), spec((rows, m))
    problem.compile_evaluate(rows, rule="dcuhre9")
    _global_estimate.lower(values, values, values, i32, vec, vec, scalar).compile()


def _falling_rate(previous, error, regions_before: int, regions: int,
                  comparable) -> np.ndarray | None:
    """Per component, the rate ``a`` at which the global error fell as ``R^-a`` from the
    previous sweep's estimate (``previous``, of ``regions_before`` regions) to ``error``
    (of ``regions``), where it fell and the two estimates are ``comparable``; elsewhere 0
    (predicted to stay as it is).  None where no component fell."""
    if previous is None or not regions > regions_before > 0:
        return None
    before = np.asarray(previous[1], np.float64)
    fell = comparable & (error > 0) & (error < before)
    if not np.any(fell):
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.log(before / error) / np.log(regions / regions_before)
    return np.where(fell, rate, 0.0)


def _covers(previous, current) -> bool:
    """Whether the previous sweep's estimate covers the current value in every component
    (``|v_now - v_before| <= e_before``): the check that validates a global estimate."""
    if previous is None:
        return False
    return bool(np.all(np.abs(current[0] - previous[0]) <= previous[1]))


@jax.jit
def _global_estimate(value, error, value9, count, retired_value, retired_error, rho):
    """The parts of the global estimate of a degree-9 sweep (module docstring): the degree-9
    and degree-7 totals (retired regions included), the signed sum ``Σ d_r`` over the
    asymptotic rows, the unsigned rest (other rows, retired regions) and the floor of 64
    ulp of ``Σ |I9_r|`` that keeps the estimate above the rounding of the sums.

    ``d_r = I9_r - I7_r``; rows with ``|d_r| > rho·E_r`` enter without signs.
    """
    live = (jnp.arange(value.shape[0]) < count)[:, None]
    d = jnp.where(live, value9 - value, 0)
    loose = jnp.abs(d) > rho * error
    signed = jnp.sum(jnp.where(loose, 0, d), axis=0)
    unsigned = jnp.sum(jnp.where(loose, jnp.abs(d), 0), axis=0)
    total9 = jnp.sum(jnp.where(live, value9, 0), axis=0)
    total7 = jnp.sum(jnp.where(live, value, 0), axis=0)
    floor = 64 * jnp.finfo(value.dtype).eps * jnp.sum(jnp.abs(jnp.where(live, value9, 0)), axis=0)
    return (total9 + retired_value, total7 + retired_value, signed, unsigned + retired_error,
            floor)


def _degree9_ratio(sums, value9, value7, floor) -> np.ndarray:
    """Per component, a bound on ``err9/err7`` (the error of the degree-9 total over that of
    the degree-7 total) from the last three sweeps, or NaN where the sweeps do not show the
    asymptotic regime it needs (module docstring).

    ``sums``: ``(S7, S9)`` of the two sweeps before; ``value9, value7``: this sweep's.  The
    partitions are nested, so ``S9_j - S9_k = err9_j - err9_k`` and alike for degree 7; with
    ``err9 = r_j·err7`` on each partition, the ratio of the two changes,
    ``(S9_j - S9_k)/(S7_j - S7_k)``, lies between ``r_j`` and ``r_k`` when the errors keep
    their sign and shrink, so it is at least the newer partition's ratio wherever ``r`` does
    not grow under refinement.  Both pairs of successive sweeps must give such a ratio,
    positive and at most :data:`GLOBAL_RATIO_MAX`, and the newer pair's may not exceed the
    older pair's (a ratio that grows, as where a kink's regions come to dominate the error,
    would be understated); the larger one is returned.  Required as well: the degree-7 errors
    ``S9 - S7`` of the three sweeps share one sign and shrink, and every change is above
    round-off (:data:`GLOBAL_NOISE` floors)."""
    (a7, a9), (b7, b9) = sums
    c7, c9 = value7, value9
    e = np.stack([a9 - a7, b9 - b7, c9 - c7])
    noise = GLOBAL_NOISE * floor
    ok = (np.all(np.sign(e) == np.sign(e[0]), axis=0) & (e[0] != 0)
          & (np.abs(e[1]) < np.abs(e[0])) & (np.abs(e[2]) < np.abs(e[1])))
    ratios = []
    for s7, s9, t7, t9 in ((a7, a9, b7, b9), (b7, b9, c7, c9)):
        d7, d9 = s7 - t7, s9 - t9
        ok &= (np.abs(d7) > noise) & (np.abs(d9) > noise)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = d9 / d7
        ok &= (r > 0) & (r <= GLOBAL_RATIO_MAX)
        ratios.append(r)
    ok &= ratios[1] <= ratios[0] * 1.001         # 0.1 %: the changes' round-off
    return np.where(ok, np.maximum(*ratios), np.nan)


@jax.jit
def _retire(centers, halfwidths, value, error, axis, count, weights, targets, retired_error):
    """Move the smallest-priority regions into a fixed sum, within a quarter of the budget.

    The budget per component is ``τ_k - (already retired error)``.  Returns the compacted
    state, the number of regions kept, and the retired value and error sums.
    """
    cap = centers.shape[0]
    live = jnp.arange(cap) < count
    budget = jnp.maximum(targets - retired_error, 0) / 4
    retire = smallest_within(error, priority(error, count, weights), live, budget)
    keep = live & ~retire
    rv = jnp.sum(jnp.where(retire[:, None], value, 0), axis=0)
    re = jnp.sum(jnp.where(retire[:, None], error, 0), axis=0)
    dst = jnp.where(keep, jnp.cumsum(keep) - 1, cap)

    def compact(buf):
        return jnp.zeros_like(buf).at[dst].set(buf, mode="drop")

    state = tuple(compact(a) for a in (centers, halfwidths, value, error, axis))
    return state, jnp.sum(keep), rv, re
