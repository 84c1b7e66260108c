"""Iterated adaptive Gauss–Kronrod integration, vectorized (the integrator of DCM).

Seed 000 chapter 4 (sections 4.3–4.4.1): the ``d``-dimensional integral is written as nested
1-D integrals

    I = ∫_{α1}^{β1} dx1 ∫_{α2(x1)}^{β2(x1)} dx2 … ∫_{αd(x<d)}^{βd(x<d)} dxd f(x1, …, xd),   (4.2)

each done by an adaptive Gauss–Kronrod rule in the manner of QUADPACK DQAGE: GK21 in ``x1``
and GK15 in the other directions by default.  The rule's "function value" at a node ``x_k`` of
level ``j`` is itself the level-``j+1`` integral over the remaining variables (seed eqs. 4.3,
4.4); at the innermost level it is ``f``.  The limits may depend on the outer variables
(:class:`Limits`): the unit simplex ``{x_i >= 0, Σ x_i <= 1}`` has ``x_j ∈ [0, 1 - x1 - … -
x_{j-1}]``.

Vectorized, breadth-first
-------------------------
Nothing runs one interval or one point at a time.  A *level-j call* receives a batch of ``B``
prefixes (outer coordinates ``x_<j``) and integrates all ``B`` one-dimensional integrals
together.  The intervals of all prefixes live in one flat list (interval ``i`` belongs to
prefix ``pid[i]``; per-prefix sums are segment sums) held in padded device arrays of
``16·4^k`` rows, so the jitted kernels see a handful of shapes.  One adaptive step:

1. *select* (one kernel): per prefix, the integral and error sums; prefixes that meet their
   tolerance, or cannot improve, are retired (their totals written out, their intervals
   dropped).  In every other prefix **all** intervals whose error exceeds its share are
   marked for bisection — the PAGANI-like breadth-first rule "split interval ``i`` of prefix
   ``p`` if ``err_i > η · room_p / n_p``", with ``room_p`` the error the quadrature may still
   make (tolerance minus the propagated inner error, see below), ``n_p`` the number of
   splittable intervals of ``p`` and ``η = 1/2``: the intervals not split then carry at most
   ``η · room_p``, and at least one interval is split whenever ``p`` has not converged.
   The only host synchronisation of a step: four counters.
2. *children*: the marked intervals are cut (``nsplit = 2`` pieces) into a compact list.
3. *evaluate*: the rule's nodes of all children of all prefixes form ``n·K`` new prefixes
   for level ``j+1``, which integrates them in **one** batched call (innermost level: one
   call of ``f`` on all ``n·K`` points), in slices of at most ``max_points`` points so that
   memory stays bounded; then QUADPACK's local estimate (:func:`qk_estimate`) is applied to
   all children at once.
4. *merge*: kept and new intervals are compacted into the next buffer.

A Python loop drives these jitted kernels; every level's batch is as large as the outer levels
make it, so a few steps fill a GPU.  Large batches are cut into chunks of at most
``max_points / K`` prefixes, each run to completion; a chunk's intervals live in a buffer of
``8 · max_points / K`` rows.  When that buffer is full, prefixes wait (in index order) for
room; if none can grow, the trailing ones are evicted and integrated again afterwards in a
smaller chunk, so memory is bounded at every level without giving up accuracy.

Tolerances and the error of the inner integrals
-----------------------------------------------
Seed 000 §4.4.1 notes that the error made in the inner integrations contributes to the overall
error.  It is accounted for explicitly here (the "integration error interface" of Li, de
Doncker et al.; the classic policy of Fritsch, Kahaner & Lyness, "Double integration using
one-dimensional adaptive quadrature routines", ACM TOMS 7 (1981), is to ask the inner
integrals for a smaller tolerance than the outer one):

* every interval carries two errors: the QUADPACK quadrature error of its own rule and the
  *propagated inner error* ``|h| Σ_k w_k · err_inner(x_k)`` (Kronrod weights ``w_k``,
  half-length ``h``): the rule applied to the error estimates of its function values;
* a prefix has converged when ``|Σ quadrature err + Σ propagated err| <= max(a_p, r_j ·
  |I_p|)`` for every component (complex components by modulus).  The final error is the
  outermost quadrature error **plus** the propagated inner error, so the inaccuracy of every
  level is in the reported error;
* the tolerance is split *evenly* between the ``d`` levels: level ``j`` (1-based) keeps
  ``1/(d-j+1)`` of its tolerance for its own quadrature and passes the fraction
  ``ρ_j = (d-j)/(d-j+1)`` to its inner integrals (``inner_factor`` fixes one ``ρ`` for all
  levels instead, e.g. the classic 1/10).  Each inner integral at a node of prefix ``p``
  is asked for an absolute error ``a = ρ_j · a_p / L_p`` (``L_p`` the length of ``p``'s
  range) and a relative one ``r_{j+1} = ρ_j r_j``.  The Kronrod weights of ``p``'s intervals
  sum to ``L_p``, so inner integrals that meet the absolute part propagate at most
  ``ρ_j a_p``; the relative part propagates at most ``ρ_j r_j Σ w |F| ≈ ρ_j r_j |I_p|`` when
  the inner integrals do not cancel.  Asking for ``1/10`` per level makes the innermost of a
  5-D integral ``10^4`` times tighter than needed; the even split asks at most ``d`` times;
* the absolute part needs the size of the integral: a *pilot* run at ``pilot_rtol = 1e-2``
  gives ``τ = max(atol, rtol·|I_pilot|)``, the top level's inner integrals get
  ``a = ρ_1 τ / L_1`` (``inner_tolerance="auto"`` or ``"mixed"``; pass ``scale=|I|`` to skip
  the pilot, e.g. from the previous δ of a δ-sequence).  The pilot itself takes its absolute
  floor, ``0.1 · pilot_rtol · |I_0|``, from a crude tensor estimate ``I_0`` (one
  Gauss–Kronrod interval per level, ``21·15^(d-1)`` points).  The absolute
  part spares the work on negligible regions (the tails of a peak), which a relative
  tolerance would resolve to full relative accuracy.  If the result shows that ``τ`` was too
  loose, the run is repeated once with the corrected ``τ``; if the top level ends
  *inner-limited* — its inner integrals cancel, ``Σ w |F| >> |Σ w F|``, so that relative
  inner errors exceed the budget — it is repeated with absolute inner tolerances only
  (``inner_tolerance="absolute"``), which nothing can spoil; when the pilot itself ends
  inner-limited the absolute run comes directly.  ``"relative"`` is the classic scheme (one
  run, no pilot, relative inner tolerances).  Regulated loop integrands in the physical
  region cancel strongly (the pentagon of seed 000 at δ = 0.1: ``∫|f|`` is a few hundred
  times ``|∫f|``); there ``inner_tolerance="absolute"`` with ``scale`` from the previous δ
  saves the pilot.

An interval whose error sits at QUADPACK's round-off floor ``50 ε resabs`` or that is too short
to bisect is not split again; a prefix whose remaining error lies in such intervals, or in its
inner integrals, stops with a flag (round-off, inner-limited), as does a prefix that reached
``max_intervals`` (memory) or the run's ``max_evals`` (the best estimate and its honest error
are returned).  A result is ``converged`` only if the final error (outer plus propagated)
meets the requested tolerance, whatever flags the inner levels raised.  Non-finite integrand
values are counted (``info["nonfinite"]``), enter as 0, and make the result not converged.

Runtime parameters of the integrand (δ, kinematics) go through ``args`` (``f(x, *args)``) or
a :class:`jax.tree_util.Partial` ``f`` (as :meth:`loopint.lower.Integrand.bind` returns):
their arrays are traced kernel arguments, so a new δ or kinematic point does not recompile.

Performance notes
-----------------
Every adaptive step of every level costs one host synchronisation (four counters) and a
few kernel launches; the total number of steps is about the product of the steps per level,
so few, large steps matter on a GPU: ``max_points`` (up to 2^23 points per integrand call
on accelerators) sets the batch, ``fused`` (default on accelerators) makes the innermost step
one kernel, and ``nsplit = 4`` (default on accelerators) cuts the steps per level call roughly
in half for a few more evaluations.  On the hardest pentagon step (README, "Performance") the
GPU is busy with kernels, host overhead is hidden: with ``LOOPINT_PROFILE_ITERATED=1``
(a synchronisation after every kernel) the kernel times sum to about 23 s against 22.3 s warm
without it (selection 6.4 s, integrand evaluation 10.7 s, merge 2.6 s).  ``nsplit = 4`` took the steps per level from 8/64/576/4630 to 5/25/125/1229 for 9 %
more evaluations (22.3 s -> 13.3 s warm; ``nsplit = 8``: 4x the evaluations, 40 s).  The
innermost points are formed inside the evaluation kernel, never stored; children and merges
gather their rows after one int32 scatter of row indices instead of scattering every field
(1.3-2.5x faster on an H200); on accelerators the integrand values are not written to memory
before the rule's sums (on the CPU they are, ``_MATERIALIZE``; on the H200 12.3 s against
11.3 s warm without).  Together with ``nsplit = 4``: 22.3 s -> 11.3 s warm.

Since then the step is bound by the host, not by the kernels.  A profile of the host loop
(``cProfile``, hardest pentagon step at rtol 2e-6, H200, 7.6 s profiled): 2.8 s in the
launches of 5743 jitted kernels (about 0.5 ms each: an XLA executable launches its fused
kernels one by one), 1.7 s waiting at the per-step counters, 0.7 s in eager JAX
operations on the host (slices and comparisons, each as costly as a launch).  Those eager
operations now run inside jitted kernels (:func:`_k_fresh_out`, :func:`_k_zero_out`), and the
first evaluations gather their prefixes inside the evaluation kernel (:func:`_k_eval`:
6.58-6.80 s against 6.89-6.96 s on that step).  An evaluation kernel that computes the
nodes one at a time with the rule's sums as elementwise chains was 1.5x faster alone
(6.8e9 against 4.5e9 evaluations/s on 2^19 intervals of 21 nodes, as fast as the
integrand alone) but no faster in the engine and much slower to compile, so it was not
kept.  Fewer host round trips (an adaptive loop on the device) are the next lever.

Buffers come in size classes ``16·4^k`` (CPU: at least 64 rows, innermost batches of at most
1024 intervals), each compiled once per component count; the first call of a new
configuration compiles a few dozen to a few hundred small kernels.  On a GPU each compiled
shape costs about 0.2–2 s, so there the shapes are kept few: within one level call a buffer
only grows (it keeps its size class when the state shrinks), a fused innermost step evaluates
at least 1/16 of its buffer (masked padding rows), and the selection kernel has no
``lax.cond`` (on an H200 one shape of it compiled in 0.9–3.8 s with the conditional and in
0.5–2.2 s without, for 1k to 4M rows, and ran in 0.45 against 0.31 ms at 1024 rows).
On the hardest pentagon step this took the first call from 241 s to 101 s (492 to 313
compilations) at an unchanged 24 s warm.  On a CPU, where the larger buffers cost real time,
buffers follow the state.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import os
import time
from typing import Callable, ClassVar, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..precision import real_dtype
from .base import (CONVERGED, Engine, MAX_EVALS, MEMORY_LIMIT, NONFINITE, ROUNDOFF, IntegrationResult,
                   check_tolerances, complex_error, normalize_integrand, real_tolerance_met,
                   status_not_converged)
from .gauss_kronrod import GK15, GK21, GaussKronrodRule, get_rule, qk_estimate

log = logging.getLogger(__name__)

METHOD = "iterated"

# Per-prefix flag bits, OR-ed from the inner levels outwards.
FLAG_MEMORY = 1        # max_intervals reached or interval storage full
FLAG_MAX_EVALS = 2     # evaluation budget spent
FLAG_ROUNDOFF = 4      # remaining error in intervals at the round-off floor / too short
FLAG_INNER = 8         # remaining error is propagated inner error
FLAG_NONFINITE = 16    # f returned NaN/inf somewhere below
_N_FLAGS = 5


# --------------------------------------------------------------------------------------------
# Domains: limits of the iterated integral
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Constant:
    """Limit ``x_j`` = constant ``values[j]`` (hashable, so plans stay cacheable)."""

    values: tuple

    def __call__(self, j: int, prefix):
        return jnp.full(prefix.shape[:1], self.values[j], prefix.dtype)


@dataclasses.dataclass(frozen=True)
class _SimplexUpper:
    """``x_j <= 1 - x_1 - … - x_{j-1}`` (clipped at 0 against rounding)."""

    def __call__(self, j: int, prefix):
        return jnp.maximum(1.0 - jnp.sum(prefix, axis=1), 0.0).astype(prefix.dtype)


@dataclasses.dataclass(frozen=True)
class _PerLevel:
    """Per-level callables ``bound_j(prefix[B, j]) -> [B]`` (or constants)."""

    bounds: tuple

    def __call__(self, j: int, prefix):
        b = self.bounds[j]
        if callable(b):
            return jnp.broadcast_to(jnp.asarray(b(prefix), prefix.dtype), prefix.shape[:1])
        return jnp.full(prefix.shape[:1], b, prefix.dtype)


@dataclasses.dataclass(frozen=True)
class Limits:
    """Limits of the iterated integral: ``x_j ∈ [lower(j, prefix), upper(j, prefix)]``.

    ``j`` is the 0-based level (``x_{j+1}`` in the seed's numbering) and ``prefix`` the outer
    coordinates, shape ``(B, j)``; both callables return shape ``(B,)`` and must be traceable
    by JAX.  Build one with :meth:`cube`, :meth:`box`, :meth:`simplex` or :meth:`from_bounds`.
    """

    ndim: int
    lower: Callable
    upper: Callable
    name: str = "custom"

    @classmethod
    def cube(cls, ndim: int) -> "Limits":
        """The unit cube ``[0, 1]^ndim``."""
        return cls(ndim, _Constant((0.0,) * ndim), _Constant((1.0,) * ndim), "cube")

    @classmethod
    def box(cls, lower, upper) -> "Limits":
        """The box ``[lower_j, upper_j]`` (finite, ``upper > lower``)."""
        lo = np.atleast_1d(np.asarray(lower, dtype=np.float64))
        hi = np.atleast_1d(np.asarray(upper, dtype=np.float64))
        lo, hi = np.broadcast_arrays(lo, hi)
        if lo.ndim != 1 or not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))
                                and np.all(hi > lo)):
            raise ValueError(f"box limits must be finite 1-D arrays with upper > lower; "
                             f"got {lower!r} .. {upper!r}")
        return cls(lo.size, _Constant(tuple(map(float, lo))), _Constant(tuple(map(float, hi))),
                   "box")

    @classmethod
    def simplex(cls, ndim: int) -> "Limits":
        """The unit simplex ``{x_i >= 0, Σ x_i <= 1}``: ``x_j ∈ [0, 1 - x_1 - … - x_{j-1}]``."""
        return cls(ndim, _Constant((0.0,) * ndim), _SimplexUpper(), "simplex")

    @classmethod
    def from_bounds(cls, lower: Sequence, upper: Sequence, name: str = "custom") -> "Limits":
        """Per-level bounds: each entry a number or a callable ``prefix[B, j] -> [B]``."""
        if len(lower) != len(upper):
            raise ValueError("lower and upper need one bound per dimension")
        return cls(len(lower), _PerLevel(tuple(lower)), _PerLevel(tuple(upper)), name)


def as_limits(domain, ndim: int) -> Limits:
    """Turn ``domain`` ("cube", "simplex", ``(lower, upper)`` arrays, or :class:`Limits`)."""
    if isinstance(domain, Limits):
        lim = domain
    elif isinstance(domain, str):
        if domain == "cube":
            lim = Limits.cube(ndim)
        elif domain == "simplex":
            lim = Limits.simplex(ndim)
        else:
            raise ValueError(f"domain must be 'cube', 'simplex', (lower, upper) or Limits; "
                             f"got {domain!r}")
    elif isinstance(domain, (tuple, list)) and len(domain) == 2:
        lim = Limits.box(*domain)
    else:
        raise ValueError(f"domain must be 'cube', 'simplex', (lower, upper) or Limits; "
                         f"got {domain!r}")
    if lim.ndim != ndim:
        raise ValueError(f"domain has {lim.ndim} dimensions, integrand has ndim={ndim}")
    return lim


def default_rules(ndim: int) -> tuple[GaussKronrodRule, ...]:
    """Seed 000 §4.5: GK21 in ``x1`` (outermost), GK15 in the other directions."""
    return (GK21,) + (GK15,) * (ndim - 1)


def _as_rules(rules, ndim: int) -> tuple[GaussKronrodRule, ...]:
    if rules is None:
        return default_rules(ndim)
    if isinstance(rules, (str, GaussKronrodRule)):
        return (get_rule(rules),) * ndim
    rules = tuple(get_rule(r) for r in rules)
    if len(rules) != ndim:
        raise ValueError(f"need one rule per dimension ({ndim}), got {len(rules)}")
    return rules


# --------------------------------------------------------------------------------------------
# Static plan and device state
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Core:
    """Integrand-independent trace-time constants (static ``jit`` argument).

    Kept apart from the integrand so that the bookkeeping kernels are compiled once per
    component count and dtype, not once per integrand.
    """

    n_real: int            # M: real components integrated
    n_user: int            # U: user components (complex ones counted once)
    is_complex: bool
    dtype: str
    nsplit: int
    max_intervals: int
    eta: float
    materialize: bool = True


@jax.tree_util.register_pytree_node_class
class _Bound:
    """``x -> f(x, *args)`` as a pytree: the arrays in ``args``, and in the arguments of a
    :class:`jax.tree_util.Partial` ``f`` (as ``loopint.lower`` builds them), are traced
    kernel arguments, so new δ values or kinematics reuse the compiled kernels; only the
    underlying Python function is static."""

    def __init__(self, func, pargs, pkw, args):
        self.func, self.pargs, self.pkw, self.args = func, pargs, pkw, args

    @classmethod
    def of(cls, f, args: tuple) -> "_Bound":
        if isinstance(f, jax.tree_util.Partial):
            return cls(f.func, tuple(f.args), dict(f.keywords), args)
        return cls(f, (), {}, args)

    def __call__(self, x):
        return self.func(*self.pargs, x, *self.args, **self.pkw)

    def tree_flatten(self):
        return (self.pargs, self.pkw, self.args), self.func

    @classmethod
    def tree_unflatten(cls, func, children):
        return cls(func, *children)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """Everything the host loop needs: the integrand, domain, rules and the core."""

    fn: _Bound
    ndim: int
    limits: Limits
    rules: tuple
    core: _Core


class _Intervals(NamedTuple):
    """Flat interval list of one level (padded; rows >= count are garbage/zero)."""

    a: jax.Array          # (N,)
    b: jax.Array          # (N,)
    pid: jax.Array        # (N,) int32: prefix index
    res: jax.Array        # (N, M) Kronrod result
    qerr: jax.Array       # (N, M) quadrature error (QUADPACK, guarded)
    ierr: jax.Array       # (N, M) propagated inner error
    ok: jax.Array         # (N, U) bool: the quadrature error of this component may shrink
    flags: jax.Array      # (N,) int32: flags OR-ed over the inner integrals of the nodes


class _Out(NamedTuple):
    """Per-prefix results of one level call."""

    val: jax.Array        # (B, M)
    err: jax.Array        # (B, M) quadrature + propagated error
    absval: jax.Array     # (B, M) Σ |interval results|
    flags: jax.Array      # (B,) int32: own flags | flags of the inner integrals
    own: jax.Array        # (B,) int32: why this level's integral stopped unconverged


def _dtype(core: _Core):
    return jnp.dtype(core.dtype)


def _comb(core: _Core, x):
    """Real components -> user components: modulus for complex pairs."""
    if core.is_complex:
        u = core.n_user
        return jnp.hypot(x[..., :u], x[..., u:])
    return jnp.abs(x)


def _is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def _pow2_floor(n: int) -> int:
    return 1 << max(0, int(math.floor(math.log2(max(1, n)))))


def _bucket(n: int, base: int, minimum: int) -> int:
    """Padded row count for ``n`` rows: ``minimum·base^k``, so that few shapes get compiled."""
    size = minimum
    while size < n:
        size *= base
    return size


# --------------------------------------------------------------------------------------------
# Kernels (jitted; sizes static, counts and tolerances traced)
# --------------------------------------------------------------------------------------------

@functools.partial(jax.jit, static_argnames=("size",))
def _k_take(arrays, start, *, size):
    """Rows ``start .. start+size`` of every array (clipped at the end)."""
    def take(x):
        idx = jnp.minimum(start + jnp.arange(size), x.shape[0] - 1)
        return x[idx]
    return jax.tree_util.tree_map(take, arrays)


@jax.jit
def _k_gather(arrays, idx):
    """Rows ``idx`` of every array."""
    return jax.tree_util.tree_map(lambda x: x[idx], arrays)


@jax.jit
def _k_scatter(out, rows, idx, count):
    """``out[idx[i]] = rows[i]`` for ``i < count``."""
    pos = jnp.where(jnp.arange(idx.shape[0]) < count, idx, out.val.shape[0])
    return jax.tree_util.tree_map(lambda o, r: o.at[pos].set(r, mode="drop"), out, rows)


@jax.jit
def _k_put_rows(out, rows, start, count):
    """Write the first ``count`` rows of ``rows`` into ``out`` at ``start``."""
    def put(o, r):
        i = jnp.arange(r.shape[0])
        idx = jnp.where(i < count, start + i, o.shape[0])
        return o.at[idx].set(r, mode="drop")
    return jax.tree_util.tree_map(put, out, rows)


@functools.partial(jax.jit, static_argnames=("rows",))
def _k_alloc(like, *, rows: int):
    """Zero buffers with ``rows`` rows shaped like the arrays of ``like``."""
    return jax.tree_util.tree_map(lambda x: jnp.zeros((rows,) + x.shape[1:], x.dtype), like)


@functools.partial(jax.jit, static_argnames=("rows",))
def _k_fresh_out(st: _Intervals, count, *, rows: int):
    """Zero per-prefix results of a level call and its active mask (``count`` prefixes).

    One kernel: slicing ``st`` and comparing on the host are eager operations, which on a
    GPU cost about as much as a kernel launch each.
    """
    return _zero_out(rows, st.res.shape[1], st.res.dtype), jnp.arange(rows) < count


def _zero_out(rows: int, m: int, dtype) -> _Out:
    z, zi = jnp.zeros((rows, m), dtype), jnp.zeros((rows,), jnp.int32)
    return _Out(z, z, z, zi, zi)


_k_zero_out = jax.jit(_zero_out, static_argnums=(0, 1, 2))


@jax.jit
def _k_put_slice(out, rows, start):
    """Write all of ``rows`` into ``out`` at ``start`` (fits by construction)."""
    return jax.tree_util.tree_map(
        lambda o, r: jax.lax.dynamic_update_slice_in_dim(o, r, start, 0), out, rows)


@functools.partial(jax.jit, static_argnames=("limits", "level", "n0", "dtype"))
def _k_init(P, base, count, rho, *, limits: Limits, level: int, n0: int, dtype: str):
    """First intervals (``n0`` equal pieces of the full range) and the inner tolerances."""
    dt = jnp.dtype(dtype)
    B = P.shape[0]
    lo = limits.lower(level, P).astype(dt)
    hi = limits.upper(level, P).astype(dt)
    hi = jnp.maximum(hi, lo)
    length = hi - lo
    i = jnp.arange(B * n0)
    p, k = i // n0, i % n0
    valid = p < count
    a = lo[p] + length[p] * (k / n0)
    b = jnp.where(k == n0 - 1, hi[p], lo[p] + length[p] * ((k + 1) / n0))
    a = jnp.where(valid, a, 0).astype(dt)
    b = jnp.where(valid, b, 0).astype(dt)
    pid = jnp.where(valid, p, 0).astype(jnp.int32)
    # Inner absolute tolerance: ρ τ_p / L_p, so that Σ_k w_k a = ρ τ_p (module docstring).
    inner = rho * base / jnp.where(length > 0, length, 1)[:, None]
    return a, b, pid, inner.astype(dt)


def _slice(start, size, *arrays):
    return tuple(jax.lax.dynamic_slice_in_dim(x, start, size) for x in arrays)


def _nodes(rule: GaussKronrodRule, a, b):
    """Rule nodes mapped to the intervals: ``(S, K)``."""
    x = jnp.asarray(rule.nodes, a.dtype)
    c, h = 0.5 * (a + b), 0.5 * (b - a)
    return c[:, None] + h[:, None] * x[None, :]


def _points(pre, x):
    """Prefix coordinates ``pre`` ``(S, j)`` joined with the nodes ``x`` ``(S, K)``:
    ``(S·K, j+1)``."""
    S, K = x.shape
    j = pre.shape[1]
    pre = jnp.broadcast_to(pre[:, None, :], (S, K, j))
    return jnp.concatenate([pre, x[:, :, None]], axis=2).reshape(S * K, j + 1)


def _f_at_nodes(fn: "_Bound", core: _Core, rule: GaussKronrodRule, pre, a, b):
    """``f`` at the rule's nodes of the intervals ``(a, b)`` with prefixes ``pre``:
    ``(S, K, M)``."""
    nf = normalize_integrand(fn, pre.shape[1] + 1, _dtype(core))
    vals = nf.fn(_points(pre, _nodes(rule, a, b)))
    return vals.reshape(a.shape[0], rule.n_points, core.n_real)


def _reduce(core: _Core, rule: GaussKronrodRule, values, inner_err, a, b):
    """QUADPACK estimates for intervals ``(S,)`` from node values ``(S, K, M)``."""
    dt = _dtype(core)
    h = 0.5 * (b - a)
    q = qk_estimate(values, h, rule)
    if inner_err is None:       # innermost level: f is exact
        ierr = jnp.zeros_like(q.result)
    else:
        wk = jnp.asarray(rule.kronrod_weights, dt)[:, None]
        ierr = jnp.abs(h)[:, None] * jnp.sum(inner_err * wk, axis=1)
    at_ro = q.at_roundoff
    if core.is_complex:
        u = core.n_user
        at_ro = at_ro[:, :u] & at_ro[:, u:]
    eps = jnp.finfo(dt).eps
    long_enough = (jnp.abs(h) > 100 * eps * jnp.maximum(jnp.abs(a), jnp.abs(b))
                   + 1000 * jnp.finfo(dt).tiny)
    ok = ~at_ro & long_enough[:, None]
    return q.result, q.error, ierr, ok


@functools.partial(jax.jit, static_argnames=("core", "rule", "size"))
def _k_eval(P, a, b, pid, start, count, fn: "_Bound", *, core: _Core, rule: GaussKronrodRule,
            size: int):
    """Innermost level, first evaluations: ``f`` at the nodes of the rows ``start ..
    start+size`` of the intervals, their prefixes gathered here -> QUADPACK estimates.

    The points are formed inside, never stored.  One kernel per slice (the gather as a
    kernel of its own: 6.89-6.96 s against 6.58-6.80 s on the hardest pentagon step).
    """
    a, b, pid = _slice(start, size, a, b, pid)
    valid = start + jnp.arange(size) < count
    return _estimate_f(fn, core, rule, P[pid], a, b, pid, valid)


def _estimate_f(fn: "_Bound", core: _Core, rule: GaussKronrodRule, pre, a, b, pid, valid):
    """Innermost level: ``f`` at the nodes of the intervals ``(a, b)`` with prefixes ``pre``
    -> QUADPACK estimates and the number of nodes (of valid rows) with non-finite values."""
    vals = _f_at_nodes(fn, core, rule, pre, a, b)
    finite = jnp.isfinite(vals)
    # On a CPU the values are materialized once (otherwise XLA may fuse the integrand into
    # each weighted sum of the rule); on a GPU leaving the fusion to XLA was faster
    # (module docstring, "Performance notes").
    vals = jnp.where(finite, vals, 0)
    if core.materialize:
        vals = jax.lax.optimization_barrier(vals)
    bad = ~jnp.all(finite, axis=2) & valid[:, None]
    res, qerr, ierr, ok = _reduce(core, rule, vals, None, a, b)
    flags = jnp.where(jnp.any(bad, axis=1), FLAG_NONFINITE, 0).astype(jnp.int32)
    return _Intervals(a, b, pid, res, qerr, ierr, ok, flags), jnp.sum(bad)


@functools.partial(jax.jit, static_argnames=("rule", "size"))
def _k_nodes(P, inner_tol, a, b, pid, start, *, rule: GaussKronrodRule, size: int):
    """Prefixes ``(size·K, j+1)`` for the inner level, and their absolute tolerances."""
    a, b, pid = _slice(start, size, a, b, pid)
    x = _nodes(rule, a, b)
    K = x.shape[1]
    U = inner_tol.shape[1]
    A = jnp.broadcast_to(inner_tol[pid][:, None, :], (size, K, U)).reshape(size * K, U)
    return _points(P[pid], x), A


def _or_bits(flags, axis):
    out = jnp.zeros(flags.shape[:axis] + flags.shape[axis + 1:], jnp.int32)
    for bit in range(_N_FLAGS):
        out = out | (jnp.any((flags >> bit) & 1, axis=axis).astype(jnp.int32) << bit)
    return out


@functools.partial(jax.jit, static_argnames=("core", "rule", "size"))
def _k_reduce(inner: _Out, a, b, pid, start, *, core: _Core, rule: GaussKronrodRule,
              size: int):
    """Level < d: inner integrals at the nodes -> QUADPACK estimates of ``size`` intervals."""
    K = rule.n_points
    a, b, pid = _slice(start, size, a, b, pid)
    vals = inner.val.reshape(size, K, core.n_real)
    errs = inner.err.reshape(size, K, core.n_real)
    res, qerr, ierr, ok = _reduce(core, rule, vals, errs, a, b)
    flags = _or_bits(inner.flags.reshape(size, K), axis=1)
    return _Intervals(a, b, pid, res, qerr, ierr, ok, flags)


def _select(st: _Intervals, count, atol, rtol, active, out: _Out, stop, state_cap, *,
            core: _Core, top: bool):
    """Convergence test, retirement of finished prefixes and the breadth-first split set.

    Interval storage of the chunk is ``state_cap`` rows.  Prefixes, in index order, get
    their growth while it fits; the others wait with their intervals kept.  When not even the
    first waiting prefix fits (all storage held by waiting prefixes) the trailing prefixes
    are *evicted*: their intervals are dropped and the host integrates them again later in
    a smaller batch (no result is lost, some work is repeated).

    Returns ``(split, keep, out, active, evicted, counts)`` with
    ``counts = [kept, split, active, evicted]``.
    """
    N = st.a.shape[0]
    B = active.shape[0]
    U = core.n_user
    dt = _dtype(core)
    valid = jnp.arange(N) < count
    seg = jnp.where(valid, st.pid, B)

    def at_seg(x):          # per-prefix array -> per-interval (row B is a dummy)
        return jnp.concatenate([x, jnp.zeros_like(x[:1])], axis=0)[seg]

    # Padding rows (segment B) are dropped by the segment reductions (an out-of-range
    # segment id): summing them into one dummy row would serialize millions of atomic adds
    # on one address on a GPU.

    ok = st.ok & valid[:, None]
    # Per-interval error per user component: |re| + |im| for complex ones, an upper bound of
    # the modulus that is much cheaper than hypot on every interval.
    c = st.qerr[:, :U] + st.qerr[:, U:] if core.is_complex else st.qerr       # (N, U)

    def ssum(x):
        return jax.ops.segment_sum(x, seg, num_segments=B)

    I = ssum(st.res)
    Et = ssum(st.qerr + st.ierr)
    Ei = ssum(st.ierr)
    # Σ|interval results| is only needed for the outermost integral
    absval = ssum(jnp.abs(st.res)) if top else jnp.abs(I)
    Eu = ssum(jnp.where(ok, 0, c))                         # error in unsplittable intervals
    small = ssum(jnp.stack([jnp.ones((N,), dt), jnp.any(ok, axis=1).astype(dt)]
                           + [((st.flags >> bit) & 1).astype(dt) for bit in range(_N_FLAGS)],
                           axis=1))
    n_int = small[:, 0].astype(jnp.int32)
    n_ok = small[:, 1]
    inner_bits = jnp.zeros((B,), jnp.int32)
    for bit in range(_N_FLAGS):
        inner_bits = inner_bits | ((small[:, 2 + bit] > 0).astype(jnp.int32) << bit)

    tau = jnp.maximum(atol, rtol * _comb(core, I))         # (B, U)
    E = _comb(core, Et)
    need = E > tau
    conv = ~jnp.any(need, axis=1)
    ei = _comb(core, Ei)
    room = tau - ei - Eu
    blocked = need & (room <= 0.01 * tau)
    hopeless = jnp.any(blocked, axis=1)
    inner_limited = jnp.any(blocked & (ei >= Eu), axis=1)

    inv_room = jnp.where(need & (room > 0), 1 / jnp.where(room > 0, room, 1), 0)
    r = jnp.max(jnp.where(ok, c, 0) * at_seg(inv_room), axis=1)        # (N,)
    thr = core.eta / jnp.maximum(n_ok, 1)
    want = (r > at_seg(thr)) & valid
    demand = jax.ops.segment_sum(want.astype(jnp.int32), seg, num_segments=B)
    grow = core.nsplit - 1
    over = n_int + demand * grow > core.max_intervals
    # Over the per-prefix capacity: split only the worst interval (the first of equals).
    # Computed unconditionally: with a lax.cond this kernel compiled slower on a GPU (module
    # docstring, "Performance notes").
    rmax = jax.ops.segment_max(jnp.where(want, r, -1), seg, num_segments=B)
    is_max = want & (r >= at_seg(rmax))
    first = jax.ops.segment_min(jnp.where(is_max, jnp.arange(N), N), seg, num_segments=B)
    want = jnp.where(at_seg(over), is_max & (jnp.arange(N) == at_seg(first)), want)
    demand = jnp.where(over, jnp.minimum(demand, 1), demand)
    capfull = n_int + grow > core.max_intervals

    go = active & ~conv & ~hopeless & (demand > 0) & ~capfull & ~stop
    # Storage: prefixes in index order get their growth while it fits ``state_cap``.
    kept = jnp.sum(jnp.where(go, n_int, 0))
    growth = jnp.where(go, demand * grow, 0)
    running = jnp.cumsum(jnp.stack([growth, jnp.where(go, n_int + growth, 0)], axis=1), axis=0)
    allowed = go & (running[:, 0] <= state_cap - kept)
    deadlock = jnp.any(go) & ~jnp.any(allowed)
    # Deadlock: keep the longest run of prefixes whose intervals and growth fit together.
    fits = running[:, 1] <= state_cap
    evicted = go & deadlock & ~fits
    allowed = jnp.where(deadlock, go & fits, allowed)
    go = go & ~evicted

    unconv = active & ~conv
    own = jnp.where(unconv & hopeless, jnp.where(inner_limited, FLAG_INNER, FLAG_ROUNDOFF), 0)
    own = own | jnp.where(unconv & ~hopeless & (demand == 0), FLAG_ROUNDOFF, 0)
    own = own | jnp.where(unconv & ~hopeless & capfull, FLAG_MEMORY, 0)
    own = own | jnp.where(unconv & stop, FLAG_MAX_EVALS, 0)
    own = own.astype(jnp.int32)

    finish = active & ~go & ~evicted
    out = _Out(
        val=jnp.where(finish[:, None], I, out.val),
        err=jnp.where(finish[:, None], Et, out.err),
        absval=jnp.where(finish[:, None], absval, out.absval),
        flags=jnp.where(finish, own | inner_bits, out.flags),
        own=jnp.where(finish, own, out.own))
    active = go
    split = want & at_seg(allowed & go)
    keep = valid & at_seg(active) & ~split
    counts = jnp.stack([jnp.sum(keep), jnp.sum(split), jnp.sum(active),
                        jnp.sum(evicted)]).astype(jnp.int32)
    return split, keep, out, active, evicted, counts


_k_select = jax.jit(_select, static_argnames=("core", "top"))


def _children(a, b, pid, split, nsplit: int, size: int):
    """Cut every marked interval into ``nsplit`` equal pieces, packed into ``size`` rows.

    Gathers, not scatters: one int32 scatter finds the parent of each child slot, then the
    pieces are computed in one fused pass (on an H200 1.3-1.5x faster than scattering each
    field, 16k to 4M rows; session microbenchmark, module docstring "Performance notes").
    """
    N = split.shape[0]
    n_par = size // nsplit + 1
    rank = jnp.cumsum(split) - 1
    parent = jnp.zeros((n_par,), jnp.int32).at[jnp.where(split, rank, n_par)].set(
        jnp.arange(N, dtype=jnp.int32), mode="drop")
    c = jnp.arange(size)
    p, k = parent[c // nsplit], c % nsplit
    live = c < (rank[-1] + 1) * nsplit
    pa, pb = a[p], b[p]
    lo = pa + (pb - pa) * (k / nsplit)
    hi = jnp.where(k == nsplit - 1, pb, pa + (pb - pa) * ((k + 1) / nsplit))
    zero = jnp.zeros((), a.dtype)
    return jnp.where(live, lo, zero), jnp.where(live, hi, zero), jnp.where(live, pid[p], 0)


_k_children = jax.jit(_children, static_argnames=("nsplit", "size"))


def _merge(st: _Intervals, keep, new: _Intervals, n_keep, n_new, size: int):
    """Kept intervals first, then the new ones, in a buffer of ``size`` rows (zero padding).

    One int32 scatter finds the source row of each kept slot; all fields are then gathered
    (on an H200 1.4-2.5x faster than scattering every field).
    """
    N = keep.shape[0]
    pos = jnp.where(keep, jnp.cumsum(keep) - 1, size)
    src = jnp.zeros((size,), jnp.int32).at[pos].set(jnp.arange(N, dtype=jnp.int32),
                                                    mode="drop")
    r = jnp.arange(size)
    old_row = r < n_keep
    new_row = jnp.clip(r - n_keep, 0, new.a.shape[0] - 1)
    live = r < n_keep + n_new

    def merge(old, fresh):
        shape = (size,) + (1,) * (old.ndim - 1)
        v = jnp.where(old_row.reshape(shape), old[src], fresh[new_row])
        return jnp.where(live.reshape(shape), v, jnp.zeros((), v.dtype))
    return jax.tree_util.tree_map(merge, st, new)


_k_merge = jax.jit(_merge, static_argnames=("size",))


@functools.partial(jax.jit, static_argnames=("core", "rule", "new_size", "size"))
def _k_refine_f(st: _Intervals, split, keep, P, n_keep, n_new, fn: "_Bound", *, core: _Core,
                rule: GaussKronrodRule, new_size: int, size: int):
    """Innermost level, one fused step: bisect, evaluate ``f`` on the children, merge."""
    ca, cb, cp = _children(st.a, st.b, st.pid, split, core.nsplit, new_size)
    valid = jnp.arange(new_size) < n_new
    new, nonfinite = _estimate_f(fn, core, rule, P[cp], ca, cb, cp, valid)
    return _merge(st, keep, new, n_keep, n_new, size), nonfinite


# --------------------------------------------------------------------------------------------
# Host driver
# --------------------------------------------------------------------------------------------

# CPU size classes: (smallest buffer, largest innermost batch) and the growth factor
# (measured: the fastest of several choices for the test suite on a 2-core CPU).
_CPU_CLASSES = (64, 1024)
_CPU_BUCKET_BASE = 4
# Buffers that only grow within one level call, and fused innermost batches of at least
# 1/_FUSED_MIN_FRACTION of the buffer: None = on accelerators (fewer compiled shapes, each
# costs ~0.2-2 s there), not on a CPU (smaller buffers are cheaper passes).  The results do
# not depend on it beyond rounding.
_GROW_ONLY = None
_FUSED_MIN_FRACTION = 16
# Integrand values of the innermost level written to memory before the rule's sums (an
# optimization barrier): None = on a CPU only.
_MATERIALIZE = None


def _default_max_points(n_real: int = 1, ndim: int = 1) -> int:
    """Points per integrand call: 2^16 on a CPU; on an accelerator as many as keep one
    ``[points, components + ndim]`` float64 array within 1/64 of the device memory, between
    2^16 and 2^23 (H200, 4 δ of a complex integrand: 2^23; larger batches gain nothing, the
    number of adaptive steps is set by the levels, not by the batch)."""
    if jax.default_backend() == "cpu":
        return 2**16
    try:
        limit = int(jax.devices()[0].memory_stats()["bytes_limit"])
    except Exception:           # backend without memory statistics
        limit = 16 * 2**30
    per_point = 8 * (n_real + ndim)
    return max(2**16, min(2**23, _pow2_floor(limit // 64 // per_point)))


class _Run:
    """One nested adaptive run: host loop around the kernels, budgets and statistics."""

    def __init__(self, plan: _Plan, *, rtols, rho, max_evals: int,
                 max_points: int, n0: Sequence[int], fused: bool, bucket_base: int,
                 evaluations: int = 0):
        self.plan = plan
        self.core = plan.core
        self.rtols = rtols
        self.rho = rho
        self.max_evals = max_evals
        self.n0 = n0
        self.fused = fused
        self.base = bucket_base
        # Size classes 16·4^k rows; on a CPU at least 64 rows and innermost batches of at
        # most 1024 intervals (fewer shapes to compile, which dominates small runs there);
        # on accelerators batches as large as max_points allows.
        on_cpu = jax.default_backend() == "cpu"
        self.min_rows, self.eval_cap = _CPU_CLASSES if on_cpu else (16, None)
        self.grow_only = (not on_cpu) if _GROW_ONLY is None else _GROW_ONLY
        self.evaluations = evaluations
        self.nonfinite = []
        self.stopped = False
        d = plan.ndim
        K = [r.n_points for r in plan.rules]
        # Prefixes per chunk, intervals per evaluation slice (both powers of two) and the
        # interval storage of one chunk.
        self.chunk = [_pow2_floor(max(1, max_points // (K[j] * n0[j]))) for j in range(d)]
        self.slice = [_pow2_floor(max(1, max_points // K[j])) for j in range(d)]
        # (at least two prefixes at max_intervals, so that one prefix always fits)
        self.state_cap = [max(8 * self.chunk[j] * n0[j], 2 * (plan.core.max_intervals + n0[j]))
                          for j in range(d)]
        self.evicted = [0] * d
        self.profile = {} if os.environ.get("LOOPINT_PROFILE_ITERATED") == "1" else None
        self.steps = [0] * d
        self.calls = [0] * d
        self.intervals = [0] * d

    def k(self, name: str, kernel, *args, **kw):
        """Run a kernel; with ``LOOPINT_PROFILE_ITERATED=1`` time it (synchronously)."""
        if self.profile is None:
            return kernel(*args, **kw)
        t0 = time.perf_counter()
        out = jax.block_until_ready(kernel(*args, **kw))
        n, t = self.profile.get(name, (0, 0.0))
        self.profile[name] = (n + 1, t + time.perf_counter() - t0)
        return out

    def bucket(self, n: int) -> int:
        return _bucket(n, self.base, self.min_rows)

    def level(self, j: int, P, A, count: int, base=None, chunk: int | None = None) -> _Out:
        """Integrate over ``x_j`` for the first ``count`` prefixes of ``P`` (rows of ``A``).

        ``base`` (top level only) replaces ``A`` as the scale of the inner tolerances.
        Large batches are cut into chunks of at most ``chunk`` prefixes.
        """
        rows = P.shape[0]
        chunk = chunk or self.chunk[j]
        if count <= chunk and rows == self.bucket(count):
            return self._solve(j, P, A, count, base, chunk)
        out = _k_zero_out(rows, self.core.n_real, self.core.dtype)
        for start in range(0, count, chunk):
            n = min(chunk, count - start)
            size = self.bucket(n)
            Pc, Ac = _k_take((P, A), start, size=size)
            Bc = None if base is None else _k_take(base, start, size=size)
            res = self._solve(j, Pc, Ac, n, Bc, chunk)
            out = _k_put_rows(out, res, start, n)
        return out

    def _solve(self, j: int, P, A, count: int, base, chunk: int) -> _Out:
        """One chunk; prefixes evicted for lack of storage are redone in smaller chunks."""
        out, evicted = self._adapt(j, P, A, count, base)
        if evicted is None:
            return out
        idx = np.flatnonzero(np.asarray(evicted))
        n = idx.size
        self.evicted[j] += n
        log.debug("iterated: level %d evicted %d of %d prefixes", j, n, count)
        padded = np.full(self.bucket(n), idx[0])
        padded[:n] = idx
        padded = jnp.asarray(padded)
        Pe, Ae = _k_gather((P, A), padded)
        Be = None if base is None else _k_gather(base, padded)
        res = self.level(j, Pe, Ae, n, Be, chunk=max(1, min(chunk, n) // 4))
        return _k_scatter(out, res, padded, n)

    def _adapt(self, j: int, P, A, count: int, base):
        """Adaptive loop of level ``j`` for one chunk of prefixes (module docstring).

        Returns the per-prefix results and the mask of evicted prefixes (None if none).
        """
        plan, core = self.plan, self.core
        B = P.shape[0]
        innermost = j == plan.ndim - 1
        rule = plan.rules[j]
        self.calls[j] += 1
        a, b, pid, inner_tol = self.k("init", _k_init, P, A if base is None else base, count,
                                      self.rho[j],
                                       limits=plan.limits, level=j, n0=self.n0[j],
                                       dtype=core.dtype)
        n_state = count * self.n0[j]
        st = self._evaluate(j, P, inner_tol, a, b, pid, n_state)
        out, active = _k_fresh_out(st, count, rows=B)
        evicted_all = None
        rtol = self.rtols[j]
        while True:
            stop = self.evaluations >= self.max_evals
            self.stopped |= stop
            split, keep, out, active, evicted, counts = self.k(
                "select", _k_select, st, n_state, A, rtol, active, out, stop, self.state_cap[j], core=core,
                top=j == 0)
            n_keep, n_split, n_active, n_evicted = (int(v) for v in np.asarray(counts))
            self.steps[j] += 1
            if n_evicted:
                evicted_all = evicted if evicted_all is None else evicted_all | evicted
            if n_active == 0:
                return out, evicted_all
            n_new = n_split * core.nsplit
            new_size = self.bucket(n_new)
            size = self.bucket(n_keep + n_new)
            fuse = innermost and self.fused and new_size <= self.slice[j]
            if self.grow_only:
                # Fewer compiled shapes (module docstring, "Performance notes"): within one
                # call the buffer keeps its size class when the state shrinks, and the fused
                # innermost step evaluates at least 1/_FUSED_MIN_FRACTION of it (padding rows
                # are masked).
                size = max(size, st.a.shape[0])
                if fuse:
                    floor = size // _FUSED_MIN_FRACTION
                    new_size = min(size, self.slice[j], max(new_size, floor))
            if fuse:
                st, nonfinite = self.k("refine_f", _k_refine_f, st, split, keep, P, n_keep,
                                       n_new, plan.fn,
                                            core=core, rule=rule,
                                            new_size=new_size, size=size)
                self.count_nonfinite(nonfinite)
                self.evaluations += n_new * rule.n_points
                self.intervals[j] += n_new
            else:
                ca, cb, cp = self.k("children", _k_children, st.a, st.b, st.pid, split,
                                    nsplit=core.nsplit, size=new_size)
                new = self._evaluate(j, P, inner_tol, ca, cb, cp, n_new)
                st = self.k("merge", _k_merge, st, keep, new, n_keep, n_new, size=size)
            n_state = n_keep + n_new

    def _evaluate(self, j: int, P, inner_tol, a, b, pid, count: int) -> _Intervals:
        """QUADPACK estimates on the first ``count`` of the intervals ``(a, b, pid)``.

        Innermost level: ``f`` at ``S·K`` points per slice.  Other levels: one call of
        level ``j+1`` on the ``S·K`` node prefixes per slice.  ``S <= self.slice[j]``.
        """
        plan, core = self.plan, self.core
        rule = plan.rules[j]
        rows = a.shape[0]
        # Innermost: slices of a size class that covers ``count`` (powers of two, so they
        # tile the buffer).  Other levels: as few slices as possible, each is a whole
        # adaptive call of the next level.
        size = min(rows, self.slice[j])
        if j == plan.ndim - 1:
            size = min(size, self.bucket(count), self.eval_cap or size)
        K = rule.n_points
        self.intervals[j] += count
        out = None
        for start in range(0, max(count, 1), size):
            n = max(0, min(size, count - start))
            if j == plan.ndim - 1:
                part, nonfinite = self.k("eval", _k_eval, P, a, b, pid, start, count,
                                         plan.fn, core=core, rule=rule, size=size)
                self.count_nonfinite(nonfinite)
                self.evaluations += n * K
            else:
                X, AX = self.k("nodes", _k_nodes, P, inner_tol, a, b, pid, start, rule=rule,
                               size=size)
                inner = self.level(j + 1, X, AX, n * K)
                part = self.k("reduce", _k_reduce, inner, a, b, pid, start, core=core,
                              rule=rule, size=size)
            if size == rows:
                return part
            if out is None:
                out = _k_alloc(part, rows=rows)
            out = _k_put_slice(out, part, start)
        return out

    def top(self, atol_u, base_u=None) -> _Out:
        dt = _dtype(self.core)
        U = self.core.n_user
        rows = self.bucket(1)       # one prefix, padded to a size class
        P = jnp.zeros((rows, 0), dt)
        A = jnp.broadcast_to(jnp.asarray(atol_u, dt), (rows, U))
        base = None if base_u is None else jnp.broadcast_to(jnp.asarray(base_u, dt), (rows, U))
        return self.level(0, P, A, 1, base)

    def count_nonfinite(self, n) -> None:
        """Collect the device counters without a host synchronisation per step."""
        self.nonfinite.append(n)
        if len(self.nonfinite) >= 256:
            self.nonfinite = [jnp.sum(jnp.stack(self.nonfinite))]

    def nonfinite_count(self) -> int:
        return int(sum(int(n) for n in jax.device_get(self.nonfinite)))


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------

def integrate(f: Callable, ndim: int, *, domain="cube", rules=None, rtol: float = 1e-6,
              atol: float = 0.0, max_evals: int = 10**9, max_intervals: int = 256,
              precision: str = "float64", args: tuple = (), inner_factor: float | None = None,
              inner_tolerance: str = "auto", pilot_rtol: float = 1e-2, scale=None,
              max_points: int | None = None, initial_intervals: int | Sequence[int] = 1,
              nsplit: int | None = None,
              split_fraction: float = 0.5, fused: bool | None = None) -> IntegrationResult:
    """Iterated adaptive Gauss–Kronrod integration of ``f`` over a cube, box or simplex.

    Seed 000 §4.3–4.4.1 (DCM): nested 1-D adaptive integration à la QUADPACK DQAGE,
    vectorized over all 1-D integrals of a level (see the module docstring for the design and
    the error accounting).

    Args:
        f: integrand, ``f(x[n, ndim], *args) -> values[n]`` or ``[n, m]``, real or complex,
            traceable by JAX.  ``x[:, 0]`` is the outermost variable ``x1``.
        ndim: number of variables.
        domain: "cube" (``[0,1]^ndim``), "simplex" (``x_i >= 0``, ``Σ x_i <= 1``, iterated with
            ``x_j <= 1 - x_1 - … - x_{j-1}``), ``(lower, upper)`` for a box, or a
            :class:`Limits` with variable limits.
        rules: None (GK21 for ``x1``, GK15 for the others), one rule for all ("gk15", "gk21",
            "gk31" or a :class:`GaussKronrodRule`), or one per level, outermost first.
        rtol, atol: the result meets ``|error| <= max(atol, rtol·|value|)`` per component.
        max_evals: integrand evaluations (points, crude and pilot runs included) after which
            refinement stops everywhere; the run can overshoot by the first estimates of
            integrals already started.
        max_intervals: intervals per 1-D integral (QUADPACK's ``limit``).
        precision: "float64" (default) or "float32".
        args: extra (traced) arguments passed to ``f``; change them without recompiling.
        inner_factor: None (even split of the tolerance between the levels) or a fixed
            ``ρ``: each level asks its inner integrals for ``ρ`` times its own tolerance.
        inner_tolerance: "auto" (pilot for the scale, inner tolerances ``max(absolute,
            relative)``, and absolute only if the inner integrals cancel), "mixed" (the same
            without the fallback), "absolute" (pilot, absolute inner tolerances) or
            "relative" (classic: relative inner tolerances, no pilot).
        pilot_rtol: tolerance of the pilot run.
        scale: known size ``|I|`` (scalar or per component) that replaces the pilot run.
        max_points: points per integrand call and prefixes per inner batch (memory bound);
            default 2**16 on CPU, up to 2**23 on accelerators (by device memory).
        initial_intervals: equal pieces each 1-D range starts with (a power of two), or one
            such number per level: e.g. ``(16, 4, 1, 1)`` gives the outer levels, whose
            batches are small, more parallel work per step on a GPU.
        nsplit: pieces a refined interval is cut into; default 2 on a CPU and 4 on
            accelerators, where the number of adaptive steps costs more than evaluations
            (module docstring, "Performance notes").
        split_fraction: ``η`` of the breadth-first rule (module docstring).
        fused: fuse bisection, evaluation and merge of the innermost level into one kernel
            per step (fewer launches, more compiled shapes); default: on for accelerators,
            off on CPU.

    Returns:
        :class:`IntegrationResult`; ``info`` holds ``nonfinite``; per level (outermost
        first, final run) ``steps``, ``calls``, ``intervals`` (evaluated) and ``evicted``
        (prefixes redone); the ``pilot`` value, the tolerance scale ``tau``, the
        ``inner_tolerance`` mode used,
        ``flags`` (limits hit anywhere below the top, informational when converged) and
        ``runs`` (crude estimate, pilot and reruns included; ``evaluations`` counts all).
    """
    t0 = time.perf_counter()
    check_tolerances(rtol, atol, max_evals)
    if ndim < 1:
        raise ValueError(f"ndim must be >= 1, got {ndim}")
    n0 = ([int(initial_intervals)] * ndim if np.ndim(initial_intervals) == 0
          else [int(v) for v in initial_intervals])
    if len(n0) != ndim or not all(_is_pow2(v) for v in n0):
        raise ValueError("initial_intervals must be a power of two, or one per dimension; "
                         f"got {initial_intervals!r}")
    on_cpu = jax.default_backend() == "cpu"
    if nsplit is None:
        nsplit = 2 if on_cpu else 4
    if nsplit < 2 or max_intervals < 1:
        raise ValueError("need nsplit >= 2 and max_intervals >= 1")
    if inner_factor is not None and not 0 < inner_factor < 1:
        raise ValueError(f"inner_factor must lie in (0, 1), got {inner_factor}")
    if inner_tolerance not in ("auto", "absolute", "relative", "mixed"):
        raise ValueError("inner_tolerance must be 'auto', 'mixed', 'absolute' or 'relative', "
                         f"got {inner_tolerance!r}")
    limits = as_limits(domain, ndim)
    rules_t = _as_rules(rules, ndim)
    dt = real_dtype(precision)
    fn = _Bound.of(f, tuple(args))
    nf = normalize_integrand(fn, ndim, dt)
    core = _Core(n_real=nf.n_components,
                 n_user=nf.n_components // 2 if nf.is_complex else nf.n_components,
                 is_complex=nf.is_complex, dtype=jnp.dtype(dt).name, nsplit=int(nsplit),
                 max_intervals=int(max_intervals), eta=float(split_fraction),
                 materialize=on_cpu if _MATERIALIZE is None else bool(_MATERIALIZE))
    plan = _Plan(fn=fn, ndim=ndim, limits=limits, rules=rules_t, core=core)
    max_points = int(max_points or _default_max_points(core.n_real, ndim))
    if fused is None:
        fused = not on_cpu
    bucket_base = _CPU_BUCKET_BASE if on_cpu else 4
    U = core.n_user
    atol_u = np.full(U, float(atol))

    if inner_factor is None:
        # Even split: each level's own quadrature error gets 1/d of the budget, so level j
        # (0-based) asks its inner integrals for (d-j-1)/(d-j) of its own tolerance.
        rho = [(ndim - j - 1) / (ndim - j) for j in range(ndim)]
    else:
        rho = [float(inner_factor)] * ndim

    def chain(r0):
        out = [r0]
        for j in range(1, ndim):
            out.append(out[-1] * rho[j - 1])
        return out

    def make_run(rtols, evaluations):
        return _Run(plan, rtols=rtols, rho=rho, max_evals=int(max_evals),
                    max_points=max_points, n0=n0, fused=fused,
                    bucket_base=bucket_base, evaluations=evaluations)

    def user_abs(x):
        x = np.asarray(x)
        return np.hypot(x[:U], x[U:]) if core.is_complex else np.abs(x)

    runs = []
    pilot_value = None
    tau = None

    def tolerance_scale(o: _Out):
        # |I| per component, floored against exact cancellation by 1e-3 Σ|interval results|
        val = user_abs(np.asarray(o.val[0]))
        return np.maximum(val, 1e-3 * user_abs(np.asarray(o.absval[0])))

    if rtol == 0 or inner_tolerance == "relative":
        mode = "relative" if rtol else "absolute"
        run = make_run(chain(rtol), 0)
        out = run.top(atol_u)
        runs.append(run)
    else:
        if scale is None:
            # Crude tensor estimate (one Gauss–Kronrod interval per level, no refinement) as
            # an absolute floor for the pilot, so that the pilot does not resolve negligible
            # regions to full relative accuracy either; 10x margin for a crude estimate.
            crude = make_run([0.0] * ndim, 0)
            c_out = crude.top(np.full(U, np.inf))
            runs.append(crude)
            floor = np.maximum(atol_u, 0.1 * pilot_rtol * tolerance_scale(c_out))
            pilot = make_run(chain(max(rtol, pilot_rtol)), crude.evaluations)
            p_out = pilot.top(atol_u, base_u=floor)
            runs.append(pilot)
            pilot_value = nf.unpack(np.asarray(p_out.val[0]))
            scale_u = tolerance_scale(p_out)
        else:
            scale_u = np.broadcast_to(np.abs(np.asarray(scale, dtype=complex)), (U,))
        mode = "absolute" if inner_tolerance == "absolute" else "mixed"
        if scale is None and inner_tolerance == "auto" and int(p_out.own[0]) & FLAG_INNER:
            # already the pilot's relative inner tolerances could not deliver: cancellation
            mode = "absolute"
        tau = np.maximum(atol_u, rtol * scale_u)
        for attempt in range(2):
            inner_rtols = chain(rtol) if mode == "mixed" else [rtol] + [0.0] * (ndim - 1)
            run = make_run(inner_rtols, runs[-1].evaluations if runs else 0)
            out = run.top(atol_u, base_u=tau)
            runs.append(run)
            val, err = np.asarray(out.val[0]), np.asarray(out.err[0])
            if attempt or run.stopped or real_tolerance_met(val, err, rtol, atol, nf):
                break
            tau_final = np.maximum(atol_u, rtol * tolerance_scale(out))
            if np.any(tau > 1.5 * tau_final):
                log.info("iterated: tolerance scale %s too loose (final %s); rerunning", tau,
                         tau_final)
            elif inner_tolerance == "auto" and int(out.own[0]) & FLAG_INNER:
                # inner integrals could not deliver (cancellation: Σ w |F| >> |Σ w F|)
                log.info("iterated: inner-limited with mixed tolerances; rerunning absolute")
                mode = "absolute"
            else:
                break
            tau = tau_final
    run = runs[-1]
    val = np.asarray(out.val[0])
    err = np.asarray(out.err[0])
    flags = int(out.flags[0])
    nonfinite = int(sum(r.nonfinite_count() for r in runs))
    evaluations = int(run.evaluations)
    met = real_tolerance_met(val, err, rtol, atol, nf)
    converged = bool(met and nonfinite == 0)
    requested = float(np.max(np.maximum(atol_u, rtol * user_abs(val))))
    if converged:
        status = CONVERGED
    elif nonfinite:
        status = (f"{NONFINITE}: integrand NaN/inf at {nonfinite} points (counted as 0); "
                  f"error {float(np.max(np.abs(err))):.3g}")
    elif run.stopped or flags & FLAG_MAX_EVALS:
        status = status_not_converged(MAX_EVALS, evaluations, user_abs(err), requested)
    elif flags & FLAG_MEMORY:
        status = status_not_converged(MEMORY_LIMIT, evaluations, user_abs(err), requested)
    else:
        status = status_not_converged(ROUNDOFF, evaluations, user_abs(err), requested)
        if int(out.own[0]) & FLAG_INNER:
            status += " (limited by the error of the inner integrals)"
    seconds = time.perf_counter() - t0
    info = {
        "nonfinite": nonfinite,
        "rules": [r.name for r in rules_t],
        "domain": limits.name,
        "inner_tolerance": mode,
        "inner_factors": rho[:-1],
        "tau": None if tau is None else tau.tolist(),
        "pilot": pilot_value,
        "runs": len(runs),
        "steps": run.steps,
        "calls": run.calls,
        "intervals": run.intervals,
        "evicted": run.evicted,
        "flags": _flag_names(flags),
        "max_points": max_points,
        "nsplit": core.nsplit,
    }
    if run.profile is not None:      # LOOPINT_PROFILE_ITERATED=1: [calls, seconds] per kernel
        prof: dict = {}
        for r in runs:
            for name, (n, t) in r.profile.items():
                c = prof.setdefault(name, [0, 0.0])
                c[0] += n
                c[1] += t
        info["profile"] = prof
    return IntegrationResult(value=nf.unpack(val), error=complex_error(err, nf),
                             converged=converged, status=status, evaluations=evaluations,
                             seconds=seconds, method=METHOD, info=info)


def _flag_names(flags: int) -> list[str]:
    names = {FLAG_MEMORY: "memory", FLAG_MAX_EVALS: "max_evals", FLAG_ROUNDOFF: "roundoff",
             FLAG_INNER: "inner", FLAG_NONFINITE: "nonfinite"}
    return [n for bit, n in names.items() if flags & bit]


def integrate_box(f: Callable, lower, upper, **kw) -> IntegrationResult:
    """:func:`integrate` over the box ``[lower, upper]`` (``ndim = len(lower)``)."""
    lim = Limits.box(lower, upper)
    return integrate(f, lim.ndim, domain=lim, **kw)


@dataclasses.dataclass(frozen=True)
class Iterated(Engine):
    """Iterated adaptive Gauss-Kronrod (:func:`integrate`); integrates the simplex natively."""

    name: ClassVar[str] = METHOD
    rules: object = None
    max_intervals: int = 256
    precision: str = "float64"
    inner_factor: float | None = None
    inner_tolerance: str = "auto"
    pilot_rtol: float = 1e-2
    scale: object = None
    max_points: int | None = None
    initial_intervals: int | Sequence[int] = 1
    nsplit: int | None = None
    split_fraction: float = 0.5
    fused: bool | None = None

    def integrate_box(self, f, lower, upper, *, rtol, atol, max_evals):
        lim = Limits.box(lower, upper)
        return integrate(f, lim.ndim, domain=lim, rtol=rtol, atol=atol, max_evals=max_evals,
                         **self.options())

    def integrate_simplex(self, f, ndim, *, rtol, atol, max_evals):
        return integrate(f, ndim, domain="simplex", rtol=rtol, atol=atol, max_evals=max_evals,
                         **self.options())
