"""PAGANI: breadth-first parallel adaptive cubature (Sakiotis et al., SC'21 = seed 001).

Seed 001 Algorithm 2, with the Genz–Malik 7/5 rule of :mod:`loopint.engines.genz_malik`
(``rule="dcuhre9"``: the degree-9 rule with null rules that the authors' code uses):

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
   (``2·active > memory_limit_regions``) or when the estimate's leading ``log10(1/rtol)``
   digits have stopped changing (the last three totals agree within the tolerance): regions are finished in increasing order of error while
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
ladder ``512·8^k``: :func:`~loopint.engines.genz_malik.evaluate_buffer` (shared with the
cubature engine), :func:`_post_process` and :func:`_filter_split`
(:func:`_threshold_classify` when triggered); the host reads a few sums per iteration.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Callable, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..precision import real_dtype
from . import base
from .genz_malik import (capacity_for, chunk_for, component_weights,
                         evaluate_buffer, make_rule, pad_rows, pow2_ceil, priority,
                         requested_tolerance, smallest_within, tolerance_targets,
                         two_level_error, uniform_grid)

METHOD = "pagani"
BUDGET_FRACTIONS = (0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95)   # seed 001 §3.5.3


@base.checks_boundary
def integrate_box(f: Callable, lower, upper, *, rtol: float = 1e-6, atol: float = 0.0,
                  max_evals: int = 10**8, max_regions: int | None = None,
                  precision: str = "float64", relerr_filtering: bool = True,
                  memory_limit_regions: int = 2**22, max_iterations: int = 200,
                  chunk_points: int = 2**21, initial_divisions: int | None = None,
                  rule: str = "genz_malik") -> base.IntegrationResult:
    """Integrate ``f`` over the box ``[lower, upper]`` with PAGANI (seed 001).

    Args:
        f: batched integrand, points ``(n, d)`` → values ``(n,)`` or ``(n, m)``, real or
            complex, traceable by JAX.  The same function object reuses compiled steps.
        lower, upper: box corners, shape ``(d,)``.
        rtol, atol: stop when ``|error| <= max(atol, rtol·|value|)`` in every component.
        max_evals: integrand-point budget; an iteration that would exceed it is not run.
        max_regions: alias of ``memory_limit_regions`` (the common engine keyword).
        precision: ``"float64"`` (default) or ``"float32"``.
        relerr_filtering: finish regions whose own relative error meets ``rtol``
            (section 3.5.1); turn off for integrands that change sign.
        memory_limit_regions: most regions held in memory (an artificial limit lets tests
            force the memory path).
        max_iterations: cap on iterations (each one bisects every active region).
        chunk_points: most integrand points per integrand call.
        initial_divisions: cells per axis of the initial uniform split.
        rule: ``"genz_malik"`` (degree 7/5, default) or ``"dcuhre9"`` (degree 9 with null
            rules, the rule of the authors' code; ``d >= 2``).

    Returns:
        :class:`~loopint.engines.base.IntegrationResult`; ``info`` has ``regions`` (active
        at the end), ``iterations``, ``nonfinite``, ``finished_regions``,
        ``threshold_filterings``, ``history`` (per iteration: regions, value, error).
    """
    t0 = time.perf_counter()
    base.check_tolerances(rtol, atol, max_evals)
    if max_regions is not None:
        memory_limit_regions = int(max_regions)
    if memory_limit_regions < 2:
        raise ValueError(f"memory_limit_regions must be >= 2, got {memory_limit_regions}")
    ndim = max(np.size(lower), np.size(upper))
    lo, hi = base.box(lower, upper, ndim)
    dtype = real_dtype(precision)
    integrand = base.normalize_integrand(f, ndim, dtype)
    m = integrand.n_components
    npts = make_rule(rule, ndim).n_points
    static = dict(f=base.BoundIntegrand.of(f), ndim=ndim, dtype_name=jnp.dtype(dtype).name,
                  rule=rule)

    if initial_divisions is None:
        initial_divisions = 4 if ndim <= 4 else 2 if ndim <= 10 else 1
    d = int(initial_divisions)
    while d > 1 and (d**ndim > memory_limit_regions or d**ndim * npts > max_evals):
        d -= 1
    centers, halfwidths = uniform_grid(lo, hi, d)
    s = centers.shape[0]
    if s * npts > max_evals:
        raise ValueError(f"max_evals={max_evals} is below one rule application "
                         f"({npts} points)")
    top_cap = min(capacity_for(memory_limit_regions), pow2_ceil(memory_limit_regions))
    cap = min(capacity_for(s), top_cap)
    chunk = chunk_for(cap, npts, chunk_points)
    state = (jnp.asarray(pad_rows(centers, cap), dtype),
             jnp.asarray(pad_rows(halfwidths, cap), dtype),
             jnp.zeros((cap, m), dtype))                      # parents' values
    rt = jnp.asarray(rtol, dtype)
    finished_value = np.zeros(m)
    finished_error = np.zeros(m)
    weights = np.ones(m)
    evaluations = 0
    nonfinite = 0
    finished_regions = 0
    threshold_filterings = 0
    relerr_dropped = 0
    history = []
    totals = []
    digits_settled = False
    it = 0
    stop = None
    total_value = np.zeros(m)
    total_error = np.full(m, np.inf)
    while True:
        requested = requested_tolerance(total_value, rtol, atol, integrand)
        if it >= max_iterations:
            stop = base.status_not_converged(base.MAX_ITERATIONS, evaluations, total_error,
                                             requested)
            break
        if evaluations + s * npts > max_evals:
            stop = base.status_not_converged(base.MAX_EVALS, evaluations, total_error,
                                             requested)
            break
        est = evaluate_buffer(state[0], state[1], jnp.int32(s), jnp.asarray(weights, dtype),
                              chunk=chunk, **static)
        ev = _post_process(est.value, est.error, est.split_axis, est.nonfinite, state[2],
                           jnp.int32(s), jnp.bool_(it == 0),
                           jnp.bool_(relerr_filtering and it > 0), rt)
        evaluations += s * npts
        (v_sum, e_sum, v_rel, e_rel, n_active, bad) = jax.device_get(
            (ev.value_sum, ev.error_sum, ev.relerr_value, ev.relerr_error, ev.n_active,
             ev.nonfinite))
        nonfinite += int(bad)
        total_value = finished_value + np.asarray(v_sum, np.float64)
        total_error = finished_error + np.asarray(e_sum, np.float64)
        history.append((s, integrand.unpack(total_value), integrand.unpack(total_error)))
        totals.append(total_value)
        it += 1
        # Convergence is judged on two-level errors only: the first iteration's raw rule
        # errors can be optimistic (e.g. the degree-9 null-rule estimate on f7 in 8-D).
        if it >= 2 and base.real_tolerance_met(total_value, total_error, rtol, atol,
                                               integrand):
            stop = base.CONVERGED
            break
        targets = _targets_np(total_value, rtol, atol, integrand)
        weights = _weights_np(targets)
        active = ev.active
        a = int(n_active)
        committed = finished_error + np.asarray(e_rel, np.float64)
        if a < s and np.any(committed > targets):
            # Relative-error finishing would already exceed the tolerance (cancellation
            # between regions of opposite sign): keep every region active this iteration.
            active = jnp.arange(cap) < s
            a = s
            e_rel = np.zeros(m)
            relerr_dropped += 1
        digits_settled = digits_settled or _digits_settled(totals, targets)
        if 2 * a > memory_limit_regions or digits_settled:
            budget = np.maximum(targets - finished_error - np.asarray(e_rel, np.float64), 0)
            th = _threshold_classify(ev.error, active, jnp.int32(s), jnp.asarray(weights, dtype),
                                     jnp.asarray(budget, dtype))
            ok, a_new = bool(th.success), int(th.n_active)
            if ok:
                active, a = th.active, a_new
                threshold_filterings += 1
            elif 2 * a > memory_limit_regions:
                stop = (f"{base.MEMORY_LIMIT}: {s} regions evaluated, {a} still active and "
                        f"bisecting them would exceed memory_limit_regions="
                        f"{memory_limit_regions}; threshold classification found no set of "
                        f"regions to finish within 95% of the remaining error budget; error "
                        f"{np.max(np.abs(total_error)):.3g} > requested "
                        f"{requested_tolerance(total_value, rtol, atol, integrand):.3g}")
                break
        if a == 0:
            stop = (f"{base.ROUNDOFF}: every region is finished but the summed error "
                    f"{np.max(np.abs(total_error)):.3g} exceeds the requested "
                    f"{requested_tolerance(total_value, rtol, atol, integrand):.3g} (cancellation "
                    f"between regions; use relerr_filtering=False)")
            break
        new_s = 2 * a
        new_cap = min(capacity_for(new_s), top_cap)
        if new_cap < cap and new_s * 64 > cap:
            new_cap = cap          # shrink only when the list has become far smaller
        state, fv, fe = _filter_split(state[0], state[1], ev.value, ev.error, ev.split_axis,
                                      active, jnp.int32(s), rows=new_cap)
        fv, fe = jax.device_get((fv, fe))
        finished_value = finished_value + np.asarray(fv, np.float64)
        finished_error = finished_error + np.asarray(fe, np.float64)
        finished_regions += s - a
        s, cap = new_s, new_cap
        chunk = chunk_for(cap, npts, chunk_points)

    converged, status = base.final_status(stop, nonfinite)
    return base.IntegrationResult(
        value=integrand.unpack(total_value),
        error=base.complex_error(total_error, integrand),
        converged=converged, status=status, evaluations=int(evaluations),
        seconds=time.perf_counter() - t0, method=METHOD,
        info={"regions": int(s), "iterations": it, "nonfinite": nonfinite,
              "finished_regions": finished_regions,
              "threshold_filterings": threshold_filterings,
              "relerr_classification_dropped": relerr_dropped,
              "initial_divisions": d, "capacity": cap, "points_per_region": npts,
              "ndim": ndim, "precision": precision, "rule": rule,
              "history": [(int(n), v, e) for n, v, e in history]})


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
    (evaluation is :func:`~loopint.engines.genz_malik.evaluate_buffer`).
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
    component (:func:`~loopint.engines.genz_malik.smallest_within`, octave histograms), and
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


@dataclasses.dataclass(frozen=True)
class Pagani(base.Engine):
    """PAGANI, seed 001 (:func:`integrate_box`)."""

    name: ClassVar[str] = METHOD
    max_regions: int | None = None
    precision: str = "float64"
    relerr_filtering: bool = True
    memory_limit_regions: int = 2**22
    max_iterations: int = 200
    chunk_points: int = 2**21
    initial_divisions: int | None = None
    rule: str = "genz_malik"
    boundary_check: bool = True

    def integrate_box(self, f, lower, upper, *, rtol, atol, max_evals):
        return integrate_box(f, lower, upper, rtol=rtol, atol=atol, max_evals=max_evals,
                             **self.options())
