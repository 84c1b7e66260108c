"""PAGANI: breadth-first parallel adaptive cubature (Sakiotis et al., SC'21 = seed 001).

Seed 001 Algorithm 2, with the degree-9 rule and null-rule error estimate of
:mod:`loopint.engines.rules.genz_malik` that the authors' code uses (the option ``rule``):

1. split the box uniformly into ``d^n`` regions (``d`` = 4 for n <= 4, 2 for n <= 10, else 1,
   as in the authors' code; ``initial_divisions`` overrides);
2. each iteration evaluates *every* region in memory (one batched integrand call per chunk),
   replaces the errors by the two-level estimates of section 3.2 (siblings and parent), and
   forms the totals ``v + v_f``, ``e + e_f`` with the contributions ``v_f, e_f`` of regions
   finished earlier;
3. stops when ``|e + e_f| <= max(atol, rtol·|v + v_f|)`` in every component, from the
   second iteration on (so that every error is a two-level one);
4. *relative-error classification* (section 3.5.1, from the second iteration on): a region
   with ``E_r <= rtol·|V_r|`` in every component is finished.  Lemma 3.1 makes this safe when
   the integrand keeps one sign; for sign-changing integrands (seed 001 f1) pass
   ``relerr_filtering=False``.  As a guard, the classification is dropped for an iteration
   in which it would commit more error than the whole tolerance;
5. *threshold classification* (section 3.5.2–3.5.3, Algorithm 3) when memory would run out
   (``2·active`` above the regions that ``memory_limit`` holds), when the evaluation
   budget would (the next iteration would spend more than half of the remaining
   ``max_evals``: breadth-first doubling makes one iteration cost about as much as all
   before it, so the budget runs out as memory does on the seed's GPU) or when the
   estimate's leading ``log10(1/rtol)`` digits have stopped changing (the last three totals
   agree within the tolerance): regions are finished in increasing order of error while
   their summed error stays within ``P`` times the remaining error budget, and the step is
   accepted only if at least half of the regions of the iteration are then finished (the
   50% memory rule).  ``P`` starts at 25% and is relaxed by 10% up to 95%, as the paper
   relaxes it on repeated direction changes.  Here the admissible set is found directly
   from histograms of the errors by octave (whole octaves from the small end, then part of
   the next) instead of the paper's bisection on the threshold.  The budget is the room left
   under the target, ``τ - e_f`` (the authors' code; the paper writes ``e - v·τ``);
6. finished regions are filtered out (their estimates added to ``v_f, e_f``); every active
   region is bisected along its fourth-difference axis; repeat.

If memory would still run out, the run returns its best estimate with status
``memory_limit: ...`` (not converged).  Vector integrands: a region is relative-error
finished only when every component is; threshold classification ranks regions by
``max_k E_{r,k}/τ_k`` and checks the budget per component; split axes weight the components'
fourth differences by ``1/τ_k``.  Non-finite integrand values are counted
(``info["nonfinite"]``), replaced by 0, and make the status ``nonfinite: ...``.

Each iteration is three jitted calls on device-resident buffers of a fixed size from the
ladder of :func:`~loopint.engines.regions.capacity_for`:
:meth:`~loopint.engines.regions.RegionProblem.evaluate` (shared with the cubature engine), :func:`_post_process` and :func:`_filter_split`
(:func:`_threshold_classify` when triggered); the host loop (:class:`_Run`) reads a few sums
per iteration.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import base, regions
from .cubature import default_max_regions
from .regions import component_weights, priority, smallest_within, tolerance_targets
from .rules.genz_malik import two_level_error

METHOD = "pagani"
BUDGET_FRACTIONS = (0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95)   # seed 001 §3.5.3


@dataclasses.dataclass(frozen=True)
class Pagani(base.Engine):
    """PAGANI, seed 001 (module docstring).

    Options:
        memory_limit: bytes of device memory the engine may use for its buffers (regions,
            sample chunks); ``memory_limit //``
            :func:`~loopint.engines.regions.bytes_per_region` regions are held at once.
            None: automatic, as the cubature engine
            (:func:`~loopint.engines.cubature.default_max_regions`: 2^22 regions on a CPU,
            sized by the device memory on an accelerator) and 2^21 integrand points per
            call, on an accelerator up to 2^25 for large buffers
            (:meth:`~loopint.engines.regions.RegionProblem.wide_chunk`).
        precision: ``"float64"`` (default) or ``"float32"``.
        relerr_filtering: finish regions whose own relative error meets ``rtol``
            (section 3.5.1); turn off for integrands that change sign.
        max_iterations: cap on iterations (each one bisects every active region).
        initial_divisions: cells per axis of the initial uniform split (None: 4, 2 or 1 by
            dimension, reduced until the grid fits ``memory_limit`` and ``max_evals``).
        rule: ``"auto"`` (default: ``"dcuhre9"`` from two dimensions on, ``"genz_malik"`` in
            one), ``"dcuhre9"`` (degree 9 with the null rules' error estimate, the rule of the
            seed's code; ``d >= 2``) or ``"genz_malik"`` (degree 7/5).  The null rules'
            estimate is what lets the breadth-first scheme finish regions: with the 7/5
            difference, about 10^2 to 10^4 times the true error, the 5-D Gaussian f4 to rtol
            1e-7 and the 5-D corner peak f3 to 1e-8 filled a store of 2^22 regions unconverged
            (true errors 1.6e-9 and 1.3e-12), and f7 in 8-D to 1e-6 spent 1.7e9 evaluations
            (estimate 7.7e-5, true error 8.3e-8); with the null rules they converge (true
            errors 6.7e-9, 1.7e-9 and 4.2e-7; f3 in 0.9 s and f7 in 2.9 s on a 2-core CPU).
            At loose tolerances the larger rule can cost more: f4 in 5-D to 1e-5 took 6.2e8
            evaluations and 19 s against 5.0e8 and 10 s with the 7/5 rule.
        boundary_check: probe the integrand near the faces after the run
            (:func:`~loopint.engines.base.probe_boundary`).
        devices: local devices to shard each chunk of regions over (None: all; a power of
            two is used, :func:`~loopint.engines.sharding.pow2_count`), or ``"global"``.

    :meth:`integrate_box` returns an :class:`~loopint.engines.base.IntegrationResult` whose
    ``info`` has ``regions`` (active at the end), ``iterations``, ``nonfinite``,
    ``finished_regions``, ``threshold_filterings``, ``relerr_classification_dropped``,
    ``initial_divisions`` and ``history`` (per iteration: regions, value, error).
    """

    name: ClassVar[str] = METHOD
    memory_limit: int | None = None
    precision: str = "float64"
    relerr_filtering: bool = True
    max_iterations: int = 200
    initial_divisions: int | None = None
    rule: str = "auto"
    boundary_check: bool = True
    devices: int | str | None = None

    def rule_for(self, ndim: int) -> str:
        """The rule a run in ``ndim`` dimensions uses (``"auto"`` resolved)."""
        if self.rule != "auto":
            return self.rule
        return "dcuhre9" if ndim >= 2 else "genz_malik"

    def _integrate_box(self, f, lower, upper, *, rtol, atol, max_evals):
        """Integrate ``f`` over the box ``[lower, upper]``.

        ``f``: batched integrand, points ``(n, d)`` → values ``(n,)`` or ``(n, m)``, real or
        complex, traceable by JAX (the same function, or a
        :class:`~loopint.engines.base.BoundIntegrand` of it, reuses the compiled steps).
        Stops when ``|error| <= max(atol, rtol·|value|)`` in every component; an iteration
        that would exceed ``max_evals`` integrand points is not run.
        """
        t0 = time.perf_counter()
        ndim = max(np.size(lower), np.size(upper))
        problem = regions.prepare(f, lower, upper, rtol=rtol, atol=atol, max_evals=max_evals,
                                  precision=self.precision, rule=self.rule_for(ndim),
                                  memory_limit=self.memory_limit, devices=self.devices,
                                  default_regions=default_max_regions)
        run = _Run.start(self, problem, rtol, atol, max_evals)
        return run.result(run.loop(), t0)

    def divisions(self, problem: regions.RegionProblem, max_evals: int) -> int:
        """Cells per axis of the initial grid: the option or the authors' choice, reduced
        until the grid fits in memory and one rule application in ``max_evals``."""
        ndim = problem.ndim
        d = self.initial_divisions
        if d is None:
            d = 4 if ndim <= 4 else 2 if ndim <= 10 else 1
        d = int(d)
        while d > 1 and (d**ndim > problem.max_regions
                         or d**ndim * problem.points_per_region > max_evals):
            d -= 1
        return d


# ---------------------------------------------------------------------------------------
# The host loop


@dataclasses.dataclass(eq=False)
class _Run:
    """One run between its jitted steps: the device buffers ``(centers, halfwidths,
    parent_value)``, the component weights, the finished regions' sums, the host's counters,
    the totals and their history."""

    engine: Pagani
    problem: regions.RegionProblem
    rtol: float
    atol: float
    max_evals: int
    progress: regions.Progress
    divisions: int
    buffers: tuple
    weights: np.ndarray
    finished_value: np.ndarray
    finished_error: np.ndarray
    total_value: np.ndarray
    total_error: np.ndarray
    finished_regions: int = 0
    threshold_filterings: int = 0
    relerr_dropped: int = 0
    digits_settled: bool = False
    history: list = dataclasses.field(default_factory=list)
    totals: list = dataclasses.field(default_factory=list)

    @classmethod
    def start(cls, engine: Pagani, problem: regions.RegionProblem, rtol: float, atol: float,
              max_evals: int) -> "_Run":
        """The initial grid (:meth:`Pagani.divisions`) in a buffer, nothing evaluated yet."""
        m, dtype = problem.integrand.n_components, problem.dtype
        d = engine.divisions(problem, max_evals)
        grid, count, cap = problem.initial_grid(d, max_evals)
        buffers = grid + (jnp.zeros((cap, m), dtype),)          # parents' values
        return cls(engine, problem, rtol, atol, int(max_evals),
                   regions.Progress(regions=count, capacity=cap), d, buffers, np.ones(m),
                   np.zeros(m), np.zeros(m), np.zeros(m), np.full(m, np.inf))

    def loop(self) -> str:
        """Iterate until a stop; returns the stop's status."""
        p = self.progress
        while True:
            requested = self.problem.requested(self.total_value, self.rtol, self.atol)
            if p.iterations >= self.engine.max_iterations:
                return p.not_converged(base.MAX_ITERATIONS, self.total_error, requested)
            if p.evaluations + p.regions * self.problem.points_per_region > self.max_evals:
                return p.not_converged(base.MAX_EVALS, self.total_error, requested)
            ev, n_active, e_rel = self._evaluate()
            # Convergence is judged on two-level errors only: the first iteration's raw rule
            # errors can be optimistic (e.g. the degree-9 null-rule estimate on f7 in 8-D).
            if p.iterations >= 2 and self.problem.met(self.total_value, self.total_error,
                                                      self.rtol, self.atol):
                return base.CONVERGED
            active, a, stop = self._classify(ev, n_active, e_rel)
            if stop is None and a == 0:
                stop = (f"{base.ROUNDOFF}: every region is finished but the summed error "
                        f"{np.max(np.abs(self.total_error)):.3g} exceeds the requested "
                        f"{self._requested():.3g} (cancellation between regions; use "
                        "relerr_filtering=False)")
            if stop is not None:
                return stop
            self._filter_split(ev, active, a)

    def _requested(self) -> float:
        return self.problem.requested(self.total_value, self.rtol, self.atol)

    def _budget_pressure(self, a: int) -> bool:
        """Whether bisecting the ``a`` active regions would spend more than half of the
        remaining evaluations on the next iteration: the evaluation budget as a resource
        that runs out, next to memory (seed 001 §3.5.2 case b; the breadth-first doubling
        makes each iteration cost about as much as all before it)."""
        remaining = self.max_evals - self.progress.evaluations
        return 2 * a * self.problem.points_per_region > remaining / 2

    def _evaluate(self):
        """Evaluate every region, two-level errors, relative-error classification, totals.

        Returns the :class:`IterationEstimates`, the number of regions left active and the
        error of those finished by relative error (host)."""
        p, b, e = self.progress, self.buffers, self.engine
        dtype = self.problem.dtype
        est = self.problem.evaluate(b[0], b[1], p.regions, jnp.asarray(self.weights, dtype),
                                    p.capacity)
        ev = _post_process(est.value, est.error, est.split_axis, est.nonfinite, b[2],
                           np.int32(p.regions), np.bool_(p.iterations == 0),
                           np.bool_(e.relerr_filtering and p.iterations > 0),
                           jnp.asarray(self.rtol, dtype))
        p.evaluations += p.regions * self.problem.points_per_region
        v_sum, e_sum, e_rel, n_active, bad = jax.device_get(
            (ev.value_sum, ev.error_sum, ev.relerr_error, ev.n_active, ev.nonfinite))
        p.nonfinite += int(bad)
        self.total_value = self.finished_value + np.asarray(v_sum, np.float64)
        self.total_error = self.finished_error + np.asarray(e_sum, np.float64)
        n = self.problem.integrand
        self.history.append((p.regions, n.unpack(self.total_value), n.unpack(self.total_error)))
        self.totals.append(self.total_value)
        p.iterations += 1
        return ev, int(n_active), np.asarray(e_rel, np.float64)

    def _classify(self, ev: IterationEstimates, a: int, e_rel: np.ndarray):
        """Which regions stay active: relative-error classification with its guard, then
        threshold classification when memory would run out or the digits have settled.

        Returns ``(active, a, stop)``: the mask, its count and a ``memory_limit`` status
        when the active regions cannot be bisected within memory (else None).
        """
        p, m = self.progress, self.problem.integrand.n_components
        targets = _targets_np(self.total_value, self.rtol, self.atol, self.problem.integrand)
        self.weights = _weights_np(targets)
        active = ev.active
        if a < p.regions and np.any(self.finished_error + e_rel > targets):
            # Relative-error finishing would already exceed the tolerance (cancellation
            # between regions of opposite sign): keep every region active this iteration.
            active = jnp.arange(p.capacity) < p.regions
            a = p.regions
            e_rel = np.zeros(m)
            self.relerr_dropped += 1
        self.digits_settled = self.digits_settled or _digits_settled(self.totals, targets)
        max_regions = self.problem.max_regions
        if not (2 * a > max_regions or self.digits_settled or self._budget_pressure(a)):
            return active, a, None
        dtype = self.problem.dtype
        budget = np.maximum(targets - self.finished_error - e_rel, 0)
        th = _threshold_classify(ev.error, active, np.int32(p.regions),
                                 jnp.asarray(self.weights, dtype), jnp.asarray(budget, dtype))
        if bool(th.success):
            self.threshold_filterings += 1
            return th.active, int(th.n_active), None
        if 2 * a > max_regions:
            return active, a, (
                f"{base.MEMORY_LIMIT}: {p.regions} regions evaluated, {a} still active and "
                f"bisecting them would exceed the {max_regions} regions that memory_limit "
                "holds; threshold classification found no set of regions to finish within "
                f"95% of the remaining error budget; error "
                f"{np.max(np.abs(self.total_error)):.3g} > requested {self._requested():.3g}")
        return active, a, None

    def _filter_split(self, ev: IterationEstimates, active, a: int) -> None:
        """Finish the inactive regions, bisect the ``a`` active ones into a buffer sized for
        them (shrunk only when the list has become far smaller)."""
        p = self.progress
        new_s = 2 * a
        new_cap = self.problem.capacity(new_s)
        if new_cap < p.capacity and new_s * 64 > p.capacity:
            new_cap = p.capacity
        b = self.buffers
        self.buffers, fv, fe = _filter_split(b[0], b[1], ev.value, ev.error, ev.split_axis,
                                             active, np.int32(p.regions), rows=new_cap)
        fv, fe = jax.device_get((fv, fe))
        self.finished_value = self.finished_value + np.asarray(fv, np.float64)
        self.finished_error = self.finished_error + np.asarray(fe, np.float64)
        self.finished_regions += p.regions - a
        p.regions, p.capacity = new_s, new_cap

    def result(self, stop: str, t0: float) -> base.IntegrationResult:
        info = {"finished_regions": self.finished_regions,
                "threshold_filterings": self.threshold_filterings,
                "relerr_classification_dropped": self.relerr_dropped,
                "initial_divisions": self.divisions,
                "history": [(int(n), v, e) for n, v, e in self.history]}
        return regions.region_result(self.problem, self.progress, method=METHOD, stop=stop,
                                     total_value=self.total_value,
                                     total_error=self.total_error, t0=t0, info=info)


# ---------------------------------------------------------------------------------------
# Host-side helpers


def _targets_np(total_value, rtol, atol, n: base.NormalizedIntegrand) -> np.ndarray:
    return np.asarray(tolerance_targets(jnp.asarray(total_value), rtol, atol, n.is_complex))


def _weights_np(targets) -> np.ndarray:
    return np.asarray(component_weights(jnp.asarray(targets)))


def _digits_settled(totals: list[np.ndarray], targets: np.ndarray) -> bool:
    """Seed 001 §3.5.2 case (a): the last three estimates agree within the tolerance."""
    if len(totals) < 3:
        return False
    v0, v1, v2 = totals[-3:]
    return bool(np.all(np.abs(v2 - v1) <= targets) and np.all(np.abs(v1 - v0) <= targets))


# ---------------------------------------------------------------------------------------
# Jitted pieces of one iteration


class IterationEstimates(NamedTuple):
    value: jax.Array          # (C, M) region estimates
    error: jax.Array          # (C, M) two-level errors
    split_axis: jax.Array     # (C,)
    active: jax.Array         # (C,) bool after relative-error classification
    n_active: jax.Array       # ()
    value_sum: jax.Array      # (M,) over the s regions
    error_sum: jax.Array      # (M,)
    relerr_value: jax.Array   # (M,) of the regions finished by relative error
    relerr_error: jax.Array   # (M,)
    nonfinite: jax.Array      # ()


@jax.jit
def _post_process(est_value, est_error, split_axis, nonfinite, parent_value, s, first, relerr,
                  rtol):
    """TWO-LEVEL-ERROR, REL-ERR-CLASSIFY and the sums of seed 001 Algorithm 2 (lines 11-14).

    Regions ``i`` and ``i + s/2`` are the two halves of parent ``i`` (row ``i`` of
    ``parent_value``), as laid out by :func:`_filter_split`.  Independent of the integrand
    (evaluation is :meth:`~loopint.engines.regions.RegionProblem.evaluate`).
    """
    cap = est_value.shape[0]
    rows = jnp.arange(cap)
    live = rows < s
    half = s // 2
    lower_half = rows < half
    sib = jnp.clip(jnp.where(lower_half, rows + half, rows - half), 0, cap - 1)
    par = jnp.clip(jnp.where(lower_half, rows, rows - half), 0, cap - 1)
    refined = two_level_error(est_value, est_error, est_value[sib], est_error[sib],
                              parent_value[par])
    error = jnp.where(first, est_error, refined)
    error = jnp.where(live[:, None], error, 0)
    value = jnp.where(live[:, None], est_value, 0)
    done = jnp.all(error <= rtol * jnp.abs(value), axis=1) & relerr & live
    active = live & ~done
    fin = done[:, None]
    return IterationEstimates(
        value, error, split_axis, active, jnp.sum(active, dtype=jnp.int32),
        jnp.sum(value, axis=0), jnp.sum(error, axis=0),
        jnp.sum(jnp.where(fin, value, 0), axis=0), jnp.sum(jnp.where(fin, error, 0), axis=0),
        nonfinite)


class ThresholdResult(NamedTuple):
    active: jax.Array     # (C,) bool
    n_active: jax.Array   # ()
    success: jax.Array    # () bool
    fraction: jax.Array   # () budget fraction P used


@jax.jit
def _threshold_classify(error, active, s, weights, budget):
    """THRESHOLD-CLASSIFY (seed 001 Algorithm 3) without a search over thresholds.

    Among the active regions, finish those of smallest normalised error
    ``max_k E_{r,k}/τ_k`` while their summed error stays within ``P·budget`` in every
    component (:func:`~loopint.engines.regions.smallest_within`, octave histograms), and
    succeed with the first ``P`` of :data:`BUDGET_FRACTIONS` that leaves at most half of
    the ``s`` regions of this iteration active.
    """
    cap = error.shape[0]
    p = priority(error, cap, weights)
    n_cand = jnp.sum(active, dtype=jnp.int32)
    fractions = jnp.asarray(BUDGET_FRACTIONS, error.dtype)

    def n_finished(fraction):
        return jnp.sum(smallest_within(error, p, active, fraction * budget), dtype=jnp.int32)

    n_fin = jax.lax.map(n_finished, fractions)
    ok = n_cand - n_fin <= s // 2
    success = jnp.any(ok)
    fraction = jnp.where(success, fractions[jnp.argmax(ok)], 0)
    finish = smallest_within(error, p, active, fraction * budget) & success
    new_active = active & ~finish
    return ThresholdResult(new_active, jnp.sum(new_active, dtype=jnp.int32), success, fraction)


@functools.partial(jax.jit, static_argnames=("rows",))
def _filter_split(centers, halfwidths, value, error, split_axis, active, s, *, rows):
    """FILTER and SPLIT (Algorithm 2, lines 18-22): compact the active regions, bisect them.

    Active region ``j`` (in order) becomes rows ``j`` (lower half) and ``j + a`` (upper
    half) of a buffer with ``rows`` rows; ``parent_value[j]`` keeps its estimate for the
    next two-level error.  Returns the new state and the finished regions' value and error.
    """
    cap, ndim = centers.shape
    a = jnp.sum(active, dtype=jnp.int32)
    idx = jnp.cumsum(active) - 1
    dst = jnp.where(active, idx, rows)
    onehot = jax.nn.one_hot(split_axis, ndim, dtype=centers.dtype)
    h = halfwidths * (1 - 0.5 * onehot)
    lower_c = centers - h * onehot
    upper_c = centers + h * onehot
    dst2 = jnp.concatenate([dst, jnp.where(active, idx + a, rows)])

    def place(parts, width):
        buf = jnp.zeros((rows, width), centers.dtype)
        return buf.at[dst2].set(jnp.concatenate(parts), mode="drop")

    new_centers = place([lower_c, upper_c], ndim)
    new_halfwidths = place([h, h], ndim)
    parent_value = jnp.zeros((rows, value.shape[1]), value.dtype).at[dst].set(value, mode="drop")
    fin = (~active & (jnp.arange(cap) < s))[:, None]
    return ((new_centers, new_halfwidths, parent_value),
            jnp.sum(jnp.where(fin, value, 0), axis=0), jnp.sum(jnp.where(fin, error, 0), axis=0))
