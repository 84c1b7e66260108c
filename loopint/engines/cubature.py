"""Globally adaptive Genz–Malik cubature, splitting many regions per step (Cuhre-like).

Algorithm (Genz & Malik 1980; Berntsen, Espelid & Genz 1991 = DCUHRE; the GPU batching of
seeds 003 and 004): keep a list of boxes with degree-7 estimates ``I_r`` and error
estimates ``E_r`` (:mod:`loopint.engines.genz_malik`).  The result is ``Σ I_r`` with error
``Σ E_r``.  While ``|Σ E| > max(atol, rtol·|Σ I|)`` in some component:

1. rank the regions by ``p_r = max_k E_{r,k}/τ_k`` (``τ_k`` = the tolerance target of
   component ``k``), so a vector integrand is refined where the component furthest from
   its target needs it;
2. take the largest-``p`` regions that together carry the fraction ``share`` (default 1/2)
   of ``Σ p``, and at least ``min_split`` of them so that the device stays busy (the
   sequential Cuhre takes only the first);
3. bisect each along its fourth-difference axis, evaluate all children in one batched
   call, give each child the two-level error of Berntsen, Espelid & Genz, and put the
   children in place of the parent.

A step is three jitted calls on device-resident buffers: :func:`_children` (selection by
octaves of the priority, no sort; bisection), the integrand evaluation
:func:`~loopint.engines.genz_malik.evaluate_buffer` (the only compiled code that depends on
the integrand, shared with PAGANI) and :func:`_insert` (two-level errors, insertion, new
totals and next selection size); the host loop reads a few scalars per step.  Buffers
have fixed sizes from the ladder ``512·8^k``
(:func:`~loopint.engines.genz_malik.capacity_for`), so a run compiles a handful of shapes;
evaluation runs in chunks whose number follows the live region count.

Global error estimate (``error_estimate="global"``).  The sum of the local errors
``Σ E_r`` is the error of the embedded degree-5 rule summed without signs; on smooth and on
regulated loop integrands it exceeds the true error of ``Σ I_r`` 10^2 to 10^5 times (Genz's
oscillatory and Gaussian families in 5 dimensions: 9.1e-9 against 1.4e-14 and 9.6e-10 against
3.8e-12; the two-loop ladder vertex at delta = 0.34: 1.3e-5 against 1.2e-9).  The global
estimate applies the degree-9 rule of :class:`~loopint.engines.genz_malik.GenzMalik9Rule`
to every live region of the partition (a "sweep") and keeps the signs:
``d_r = I9_r - I7_r`` is, where the degree-9 rule is the more accurate one, the error of
``I7_r`` with its sign, so ``Σ d_r`` is the error of the degree-7 total with the
cancellations between regions that the true error has (on the cases above it matched the
true error to a few per cent), and the degree-9 total is reported.  Regions where the two
rules are not in their asymptotic order (``|d_r| > ρ E_r``, ``ρ =`` :data:`GLOBAL_RHO`: the
degree-7 rule no better than the degree-5 one) enter without signs:

    error = 2 |Σ_{asymptotic} d_r| + Σ_{others} |d_r| + (retired regions' local errors).

Sweeps are taken when the live count has grown fourfold since the last one (from
:data:`GLOBAL_FIRST_SWEEP` regions) and when the ratio of global to local error seen at the
last sweep predicts convergence; their evaluations are counted and kept within
``max_evals``.  A sweep's estimate is used only when the previous sweep's estimate covers
its value (``|S9 - S9_before| <= error_before`` in every component): two successive
partitions must agree within the claimed error, a check of the estimate on the integrand
itself.  The result then takes, per component, the smaller of the two estimates.  On
Genz's families in 3 to 6 dimensions the true error stayed within 0.53 of the global
estimate (``tests/test_cubature.py``); the regulated ladder terms of
:mod:`loopint.compute` extrapolate to pySecDec's value within their propagated estimate.

When ``max_regions`` is reached, the regions with the smallest errors are retired into a
fixed sum (together at most a quarter of the remaining error budget, as PAGANI's threshold
rule, seed 001 section 3.5.3); if that frees too little, the run stops with a
``memory_limit`` status and its best estimate.

Stops: converged (checked from the first bisection step on, so that errors are two-level
ones); ``max_evals`` (the next step would exceed the budget); ``memory_limit``;
``max_iterations``.  Non-finite integrand values are counted (``info["nonfinite"]``),
replaced by 0, and make the status ``nonfinite: ...`` (never converged).
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
                         count_carrying, evaluate_buffer, make_rule, pad_rows, pow2_ceil,
                         priority, requested_tolerance, smallest_within, tolerance_targets,
                         top_mask, two_level_error, uniform_grid)

METHOD = "cubature"

CPU_MAX_REGIONS = 2**22
# Device bytes allowed per region when sizing the default on an accelerator: the region
# arrays (centres, half-widths, values and errors of up to a few dozen components), their
# children and the evaluation chunk, with room for the rest of a run.
BYTES_PER_REGION = 4096
ACCELERATOR_MAX_REGIONS = 2**25
ERROR_ESTIMATES = ("local", "global")
GLOBAL_RHO = 0.1             # |I9 - I7| above this share of the local error: not asymptotic
GLOBAL_FIRST_SWEEP = 4096    # live regions before the first sweep of the global estimate
GLOBAL_SAFETY = 2.0          # factor on the signed sum over the asymptotic regions


def default_max_regions(device=None) -> int:
    """Default ``max_regions`` for ``device`` (default: the first device): 2^22 on a CPU; on
    an accelerator the largest power of two with :data:`BYTES_PER_REGION` bytes each within
    the device memory JAX may use, between 2^22 and 2^25 (2^24 on an H200).  The regulated
    integrands of the delta sequence at small delta hit the CPU bound (the two-loop ladder
    vertex at delta = 0.02 in 5 dimensions)."""
    limit = base.device_memory_limit(device)
    if limit <= 0:
        return CPU_MAX_REGIONS
    k = int(np.floor(np.log2(limit / BYTES_PER_REGION)))
    return int(min(max(2**k, CPU_MAX_REGIONS), ACCELERATOR_MAX_REGIONS))


@base.checks_boundary
def integrate_box(f: Callable, lower, upper, *, rtol: float = 1e-6, atol: float = 0.0,
                  max_evals: int = 10**8, max_regions: int | None = None,
                  precision: str = "float64", share: float = 0.5, min_split: int = 64,
                  max_iterations: int = 100_000, chunk_points: int = 2**21,
                  initial_divisions: int = 1, rule: str = "genz_malik",
                  error_estimate: str = "local",
                  stop_on_nonfinite: bool = False) -> base.IntegrationResult:
    """Integrate ``f`` over the box ``[lower, upper]`` by globally adaptive Genz–Malik cubature.

    Args:
        f: batched integrand, points ``(n, d)`` → values ``(n,)`` or ``(n, m)``, real or
            complex, traceable by JAX.  Passing the same function object again reuses the
            compiled steps.
        lower, upper: box corners, shape ``(d,)``, ``d >= 1`` (meant for ``d >= 2``).
        rtol, atol: stop when ``|error| <= max(atol, rtol·|value|)`` in every component.
        max_evals: integrand-point budget; a step that would exceed it is not taken.
        max_regions: most regions held at once (the memory bound); default
            :func:`default_max_regions` (2^22 on a CPU, more on an accelerator).
        precision: ``"float64"`` (default) or ``"float32"``.
        share: fraction of the total normalised error carried by the regions split per step.
        min_split: split at least this many regions per step (when that many exist).
        max_iterations: cap on adaptive steps.
        chunk_points: most integrand points per integrand call (memory bound of one call).
        initial_divisions: start from the uniform grid with this many cells per axis.
        rule: ``"genz_malik"`` (degree 7/5, default) or ``"dcuhre9"`` (degree 9 with null
            rules, ``d >= 2``; see :class:`~loopint.engines.genz_malik.GenzMalik9Rule`).
        error_estimate: ``"local"`` (default: the sum of the regions' error estimates) or
            ``"global"`` (signed degree-9 sweeps of the partition, see the module docstring;
            ``rule="genz_malik"`` and ``d >= 2``).
        stop_on_nonfinite: end the run at the first step that met a NaN/inf (status
            ``nonfinite``) instead of counting such values as 0 and going on: for integrands
            where one is a failure of the whole run (a deformed contour that left the Feynman
            prescription), not a few bad points.

    Returns:
        :class:`~loopint.engines.base.IntegrationResult`; ``info`` has ``regions``,
        ``iterations``, ``nonfinite``, ``retired_regions``, ``capacity``, ``error_estimate``
        (the estimate the result carries: "local", "global" or, per component, "mixed"),
        ``local_error`` (the sum of local errors at the end, (re, im) parts as ``error``),
        ``sweeps`` and ``sweep_evaluations``.
    """
    t0 = time.perf_counter()
    base.check_tolerances(rtol, atol, max_evals)
    ndim = max(np.size(lower), np.size(upper))
    lo, hi = base.box(lower, upper, ndim)
    dtype = real_dtype(precision)
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share}")
    if max_regions is None:
        max_regions = default_max_regions()
    if max_regions < 2:
        raise ValueError(f"max_regions must be >= 2, got {max_regions}")
    if error_estimate not in ERROR_ESTIMATES:
        raise ValueError(f"error_estimate must be one of {ERROR_ESTIMATES}, got {error_estimate!r}")
    use_global = error_estimate == "global"
    if use_global and (rule != "genz_malik" or ndim < 2):
        raise ValueError("error_estimate='global' sweeps with the degree-9 rule: it needs "
                         f"rule='genz_malik' and ndim >= 2 (got rule={rule!r}, ndim={ndim})")
    integrand = base.normalize_integrand(f, ndim, dtype)
    npts = make_rule(rule, ndim).n_points
    static = dict(f=base.BoundIntegrand.of(f), ndim=ndim, dtype_name=jnp.dtype(dtype).name,
                  rule=rule)
    top_cap = min(capacity_for(max_regions), pow2_ceil(max_regions))

    centers, halfwidths = uniform_grid(lo, hi, int(initial_divisions))
    count = centers.shape[0]
    if count > max_regions:
        raise ValueError(f"initial_divisions={initial_divisions} gives {count} regions "
                         f"> max_regions={max_regions}")
    if count * npts > max_evals:
        raise ValueError(f"max_evals={max_evals} is below one rule application on the "
                         f"{count} initial region(s) ({count * npts} points)")
    cap = min(capacity_for(max(count, 2)), top_cap)
    state = (jnp.asarray(pad_rows(centers, cap), dtype),
             jnp.asarray(pad_rows(halfwidths, cap), dtype))
    scalars = dict(rtol=jnp.asarray(rtol, dtype), atol=jnp.asarray(atol, dtype),
                   share=jnp.asarray(share, dtype))
    retired_value = jnp.zeros((integrand.n_components,), dtype)
    retired_error = jnp.zeros((integrand.n_components,), dtype)
    ones = jnp.ones((integrand.n_components,), dtype)
    est = evaluate_buffer(*state, jnp.int32(count), ones,
                          chunk=chunk_for(cap, npts, chunk_points), **static)
    half = jnp.zeros((cap // 2,), jnp.int32)
    state, plan = _insert(*state, est.value, est.error, est.split_axis, half, *state,
                          est.value, est.error, est.split_axis, jnp.int32(count), jnp.int32(0),
                          jnp.bool_(True), retired_value, retired_error, **scalars,
                          is_complex=integrand.is_complex)
    bad = est.nonfinite
    evaluations = count * npts
    nonfinite = 0
    retired_regions = 0
    iterations = 0
    n9 = make_rule("dcuhre9", ndim).n_points if use_global else 0
    sweeps = sweep_evaluations = swept_count = 0
    next_sweep, ratio, glob, validated = GLOBAL_FIRST_SWEEP, None, None, False

    def sweep():
        """Degree-9 sweep of the live regions: (value, error) of the global estimate."""
        nonlocal evaluations, sweeps, sweep_evaluations, swept_count, nonfinite
        est9 = evaluate_buffer(state[0], state[1], jnp.int32(count), plan.weights,
                               chunk=chunk_for(cap, n9, chunk_points), **dict(static, rule="dcuhre9"))
        out = _global_estimate(state[2], state[3], est9.value, jnp.int32(count), retired_value,
                               retired_error, jnp.asarray(GLOBAL_RHO, dtype),
                               jnp.asarray(GLOBAL_SAFETY, dtype))
        value_g, error_g, bad9 = jax.device_get((out[0], out[1], est9.nonfinite))
        nonfinite += int(bad9)
        evaluations += count * n9
        sweep_evaluations += count * n9
        sweeps += 1
        swept_count = count
        return np.asarray(value_g, np.float64), np.asarray(error_g, np.float64)

    while True:
        total_value, total_error, wanted, bad_host = jax.device_get(
            (plan.total_value, plan.total_error, plan.wanted, bad))
        nonfinite += int(bad_host)
        if stop_on_nonfinite and nonfinite:
            stop = f"stopped at the first non-finite values (step {iterations})"
            break
        total_value = np.asarray(total_value, np.float64)
        total_error = np.asarray(total_error, np.float64)
        requested = requested_tolerance(total_value, rtol, atol, integrand)
        # Judge convergence only after a bisection step with two-level errors: a lone
        # rule application can report an optimistic error.
        if iterations >= 1 and base.real_tolerance_met(total_value, total_error, rtol, atol,
                                                       integrand):
            stop = base.CONVERGED
            break
        if use_global and iterations >= 1 and evaluations + count * n9 <= max_evals:
            predicted = ratio is not None and count >= 1.5 * swept_count and \
                base.real_tolerance_met(total_value, ratio * total_error, rtol, atol, integrand)
            if count >= next_sweep or predicted:
                previous, glob = glob, sweep()
                next_sweep = 4 * count
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = float(np.nanmax(np.where(total_error > 0, glob[1] / total_error, 0)))
                validated = _covers(previous, glob)
                if validated and base.real_tolerance_met(*glob, rtol, atol, integrand):
                    stop = base.CONVERGED
                    break
        if iterations >= max_iterations:
            stop = base.status_not_converged(base.MAX_ITERATIONS, evaluations, total_error,
                                             requested)
            break
        # (global estimate: room is kept for a final sweep of the grown partition)
        budget_regions = (max_evals - evaluations - count * n9) // (2 * npts + n9)
        if budget_regions < 1:
            stop = base.status_not_converged(base.MAX_EVALS, evaluations, total_error, requested)
            break
        split = min(max(int(wanted), min(min_split, count)), count, budget_regions)
        if max_regions - count < max(1, split // 2):
            state, kept, rv, re = _retire(*state, jnp.int32(count), plan.weights,
                                          plan.targets, retired_error)
            kept = int(kept)
            freed = count - kept
            # the retired sums are kept either way: the compacted state is what remains
            retired_value, retired_error = retired_value + rv, retired_error + re
            retired_regions += freed
            count = kept
            if freed < max(1, (count + freed) // 4):
                stop = (f"{base.MEMORY_LIMIT}: {count + freed} regions (max_regions="
                        f"{max_regions}); retiring small-error regions within a quarter of the "
                        f"remaining error budget would free only {freed}; error "
                        f"{np.max(np.abs(total_error)):.3g} > requested {requested:.3g}")
                break
        split = min(split, max_regions - count)
        if count + split > cap:
            cap = min(capacity_for(count + split), top_cap)
            state = _grow(state, rows=cap)
        split = min(split, cap // 2, cap - count)
        parents, child_c, child_h = _children(state[0], state[1], state[3], state[4],
                                              jnp.int32(count), jnp.int32(split), plan.weights)
        est = evaluate_buffer(child_c, child_h, jnp.int32(2 * split), plan.weights,
                              chunk=chunk_for(cap, npts, chunk_points), **static)
        state, plan = _insert(*state, parents, child_c, child_h, est.value, est.error,
                              est.split_axis, jnp.int32(count), jnp.int32(split),
                              jnp.bool_(False), retired_value, retired_error, **scalars,
                              is_complex=integrand.is_complex)
        bad = est.nonfinite
        evaluations += 2 * split * npts
        count += split
        iterations += 1

    estimate, local_error = "local", total_error
    if use_global and stop != base.CONVERGED and count > swept_count \
            and evaluations + count * n9 <= max_evals:
        previous, glob = glob, sweep()
        validated = _covers(previous, glob)
    if glob is not None and validated:
        # per component the smaller estimate, with its own value (each pair is honest)
        use = glob[1] < total_error
        if stop == base.CONVERGED and not base.real_tolerance_met(
                total_value, total_error, rtol, atol, integrand):
            use = np.ones_like(use)          # converged on the global estimate
        total_value = np.where(use, glob[0], total_value)
        total_error = np.where(use, glob[1], total_error)
        estimate = "global" if np.all(use) else ("local" if not np.any(use) else "mixed")
        if stop != base.CONVERGED and np.any(use):
            stop += (f"; the global error estimate ({np.max(np.abs(glob[1])):.3g}) is "
                     f"reported where smaller")
    converged, status = base.final_status(stop, nonfinite)
    return base.IntegrationResult(
        value=integrand.unpack(total_value),
        error=base.complex_error(total_error, integrand),
        converged=converged, status=status, evaluations=int(evaluations),
        seconds=time.perf_counter() - t0, method=METHOD,
        info={"regions": int(count), "iterations": iterations, "nonfinite": nonfinite,
              "retired_regions": retired_regions, "capacity": cap,
              "points_per_region": npts, "ndim": ndim, "precision": precision, "rule": rule,
              "error_estimate": estimate, "local_error": base.complex_error(local_error, integrand),
              "sweeps": sweeps,
              "sweep_evaluations": int(sweep_evaluations)})


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


def _covers(previous, current) -> bool:
    """Whether the previous sweep's estimate covers the current value in every component
    (``|v_now - v_before| <= e_before``): the check that validates a global estimate."""
    if previous is None:
        return False
    return bool(np.all(np.abs(current[0] - previous[0]) <= previous[1]))


@jax.jit
def _global_estimate(value, error, value9, count, retired_value, retired_error, rho, safety):
    """Value and error of the global estimate from a degree-9 sweep (module docstring).

    ``d_r = I9_r - I7_r``; rows with ``|d_r| > rho·E_r`` enter without signs.  A floor of
    64 ulp of ``Σ |I9_r|`` keeps the estimate above the rounding of the sums.
    """
    live = (jnp.arange(value.shape[0]) < count)[:, None]
    d = jnp.where(live, value9 - value, 0)
    loose = jnp.abs(d) > rho * error
    signed = jnp.sum(jnp.where(loose, 0, d), axis=0)
    unsigned = jnp.sum(jnp.where(loose, jnp.abs(d), 0), axis=0)
    total9 = jnp.sum(jnp.where(live, value9, 0), axis=0)
    floor = 64 * jnp.finfo(value.dtype).eps * jnp.sum(jnp.abs(jnp.where(live, value9, 0)), axis=0)
    error_g = safety * jnp.abs(signed) + unsigned + retired_error + floor
    return total9 + retired_value, error_g


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


@dataclasses.dataclass(frozen=True)
class Cubature(base.Engine):
    """Adaptive Genz-Malik cubature (:func:`integrate_box`)."""

    name: ClassVar[str] = METHOD
    max_regions: int | None = None
    precision: str = "float64"
    share: float = 0.5
    min_split: int = 64
    max_iterations: int = 100000
    chunk_points: int = 2**21
    initial_divisions: int = 1
    rule: str = "genz_malik"
    error_estimate: str = "local"
    stop_on_nonfinite: bool = False
    boundary_check: bool = True

    def integrate_box(self, f, lower, upper, *, rtol, atol, max_evals):
        return integrate_box(f, lower, upper, rtol=rtol, atol=atol, max_evals=max_evals,
                             **self.options())
