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
   call of ``f`` on all ``n·K`` points), in slices of at most ``max_points`` points (set by
   ``memory_limit``) so that memory stays bounded; then QUADPACK's local estimate
   (:func:`qk_estimate`) is applied to all children at once.
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

Endpoint singularities
----------------------
Integrable singularities at the ends of a 1-D range (``x^(-1/2)``, ``log x``, ``x^(-0.9)``,
and what the outer levels see of them: ``∫_0^{c-x2} x3^(-1/2) dx3 = 2 (c - x2)^(1/2)`` makes
the next level singular at its upper end) are handled as in QUADPACK's DQAGS (Piessens et
al. 1983): the bisections toward the end form a sequence of approximations whose limit
Wynn's ε-algorithm finds (:mod:`loopint.engines.endpoint`).  Every interval that touches an
end of its range (``END_LOWER``/``END_UPPER``; its first or last piece inherits the bit)
keeps DQELG's condensed ε-table of the approximations ``S_i`` of the integral over its
ancestor's range (``S_{n+1} = S_n + Σ_children raw - raw_parent``; up to ``endpoint_terms``
of them, stored relative to ``S_n``) and the earlier extrapolated results.  Its value is the
extrapolated one, and its quadrature error DQELG's estimate (the spread of the last
results), where that estimate is supported (three earlier results, the raw steps shrinking,
no irregular step, the results agreeing to 1 % of the last raw step) and smaller than the
plain Kronrod error; otherwise the plain Kronrod result, so an integrand whose end
intervals are bisected fewer than five times (smooth ones) gets the same numbers as plain
bisection.  If the sequence does not settle (a non-integrable singularity, round-off), the
interval keeps being bisected until it is too short or ``max_intervals`` is reached, and
the run stops with the round-off or memory status (QUADPACK's ``ier = 1, 2, 4, 5``).  The
propagated inner error of such an interval is its own; the inner errors of the pieces cut
off earlier enter its sequence as noise, which the spread of the extrapolated results
measures.  A singularity at an upper end ``b != 0`` is seen through ``b - x``, which has
only the absolute precision of ``x``: tight tolerances there can end in round-off.

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
so few, large steps matter on a GPU: ``memory_limit`` (by default, up to 2^23 points per
integrand call on accelerators) sets the batch, ``fused`` (default on accelerators) makes the
innermost step one kernel, and ``nsplit = 4`` (default on accelerators) cuts the steps per
level call roughly in half for a few more evaluations (``nsplit = 8`` costs several times the
evaluations).  ``profile=True`` synchronises after every kernel and reports the calls and
seconds per kernel.

The innermost points are formed inside the evaluation kernel, never stored; children and
merges gather their rows after one int32 scatter of row indices instead of scattering every
field (faster on a GPU); on accelerators the integrand values are not written to memory
before the rule's sums (on the CPU they are: ``materialize``).  Eager JAX operations on the
host (slices and comparisons), each as costly as a kernel launch on a GPU, run inside jitted
kernels (:func:`_k_fresh_out`, :func:`_k_zero_out`), and the first evaluations gather their
prefixes inside the evaluation kernel (:func:`_k_eval`).  What remains is bound by the host:
the kernel launches (an XLA executable launches its fused kernels one by one) and the wait at
the per-step counters; fewer host round trips (an adaptive loop on the device) are the next
lever.

Buffers come in size classes ``16·4^k`` (CPU: at least 64 rows, innermost batches of at most
1024 intervals), each compiled once per component count; the first call of a new
configuration compiles a few dozen to a few hundred small kernels.  On a GPU each compiled
shape costs about 0.2–2 s, so there the shapes are kept few (``grow_only``): within one level
call a buffer only grows (it keeps its size class when the state shrinks), a fused innermost
step evaluates at least ``1/fused_min_fraction`` (1/16) of its buffer (masked padding rows),
and the selection kernel has no ``lax.cond`` (it compiles faster without).  On a CPU, where
the larger buffers cost real time, buffers follow the state.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time
from typing import Callable, ClassVar, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..precision import real_dtype
from . import sharding
from .base import (CONVERGED, DEFAULT_ATOL, DEFAULT_MAX_EVALS, DEFAULT_RTOL, MAX_EVALS,
                   MEMORY_LIMIT, NONFINITE, ROUNDOFF, BoundIntegrand, Box, Engine, StaticCallable, IntegrationResult, Simplex,
                   check_tolerances, complex_error, normalize_integrand, real_tolerance_met,
                   status_not_converged)
from .endpoint import HISTORY, epsilon_append
from .rules.gauss_kronrod import GK15, GK21, GaussKronrodRule, get_rule, qk_estimate

log = logging.getLogger(__name__)

METHOD = "iterated"

# Per-prefix flag bits, OR-ed from the inner levels outwards.
FLAG_MEMORY = 1        # max_intervals reached or interval storage full
FLAG_MAX_EVALS = 2     # evaluation budget spent
FLAG_ROUNDOFF = 4      # remaining error in intervals at the round-off floor / too short
FLAG_INNER = 8         # remaining error is propagated inner error
FLAG_NONFINITE = 16    # f returned NaN/inf somewhere below
_N_FLAGS = 5

# Interval bits: the interval touches the lower / upper end of its 1-D range.
END_LOWER = 1
END_UPPER = 2


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
    """``domain`` in ``ndim`` variables as :class:`Limits`: "cube", "simplex", ``(lower,
    upper)`` arrays, a :class:`~loopint.engines.base.Box` (the unit cube keeps its name), a
    :class:`~loopint.engines.base.Simplex`, or :class:`Limits`."""
    if isinstance(domain, Limits):
        lim = domain
    elif isinstance(domain, Simplex):
        lim = Limits.simplex(domain.ndim)
    elif isinstance(domain, str) and domain == "simplex":
        lim = Limits.simplex(ndim)
    elif isinstance(domain, str) and domain == "cube":
        lim = Limits.cube(ndim)
    elif isinstance(domain, Box):
        unit = np.all(domain.lower == 0.0) and np.all(domain.upper == 1.0)
        lim = Limits.cube(domain.ndim) if unit else Limits.box(domain.lower, domain.upper)
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
    devices: int = 1       # local devices the innermost evaluations are sharded over
    n_cols: int = 0        # K: even columns of the endpoint ε-tables (0: no extrapolation)


def _with_args(f: BoundIntegrand, args: tuple, x):
    return f.func.obj(*f.args, x, *args, **f.kwargs)


def _bound(f, args: tuple) -> BoundIntegrand:
    """``x -> f(x, *args)`` as a :class:`~loopint.engines.base.BoundIntegrand`: the arrays in
    ``args``, and in the arguments of a :class:`jax.tree_util.Partial` ``f`` (as
    ``loopint.lower`` builds them), are traced kernel arguments, so new deltas or kinematics
    reuse the compiled kernels; only the underlying Python function is static."""
    if args:
        return BoundIntegrand(StaticCallable(_with_args), (BoundIntegrand.of(f), tuple(args)))
    return BoundIntegrand.of(f)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """Everything the host loop needs: the integrand, domain, rules and the core."""

    fn: BoundIntegrand
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
    # Endpoint extrapolation (module docstring, "Endpoint singularities"):
    end: jax.Array        # (N,) int32: END_LOWER / END_UPPER if the interval touches that end
    raw: jax.Array        # (N, M) the plain Kronrod result (res may be extrapolated)
    dprev: jax.Array      # (N, M, K) DQELG's condensed ε-table: the two newest diagonals,
    dcur: jax.Array       # (N, M, K)   on the origin S_n (NaN where absent)
    xres: jax.Array       # (N, M, R) the earlier extrapolated limits, on the same origin
    nx: jax.Array         # (N, M) int32 valid entries of xres


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
    """First intervals (``n0`` equal pieces of the full range), their ``END_*`` bits and the
    inner tolerances."""
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
    end = jnp.where(k == 0, END_LOWER, 0) | jnp.where(k == n0 - 1, END_UPPER, 0)
    end = jnp.where(valid, end, 0).astype(jnp.int32)
    # Inner absolute tolerance: ρ τ_p / L_p, so that Σ_k w_k a = ρ τ_p (module docstring).
    inner = rho * base / jnp.where(length > 0, length, 1)[:, None]
    return a, b, pid, end, inner.astype(dt)


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


def _f_at_nodes(fn: BoundIntegrand, core: _Core, rule: GaussKronrodRule, pre, a, b):
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
def _k_eval(P, a, b, pid, end, start, count, fn: BoundIntegrand, *, core: _Core,
            rule: GaussKronrodRule, size: int):
    """Innermost level, first evaluations: ``f`` at the nodes of the rows ``start ..
    start+size`` of the intervals, their prefixes gathered here -> QUADPACK estimates.

    The points are formed inside, never stored, and the prefixes are gathered here rather
    than in a kernel of their own: one launch per slice.
    """
    a, b, pid, end = _slice(start, size, a, b, pid, end)
    valid = start + jnp.arange(size) < count
    return _estimate_f(fn, core, rule, P[pid], a, b, pid, end, valid)


def _rows(core: _Core, a, b, pid, end, res, qerr, ierr, ok, flags) -> _Intervals:
    """Freshly estimated intervals: plain Kronrod results; an interval that touches an end
    starts its sequence of approximations (one term, ``S_n - S_n = 0``)."""
    N, M, K = res.shape[0], res.shape[1], core.n_cols
    dprev = jnp.full((N, M, K), jnp.nan, res.dtype)
    dcur = dprev.at[:, :, :1].set(0.0) if K else dprev
    xres = jnp.zeros((N, M, HISTORY if K else 0), res.dtype)
    nx = jnp.zeros((N, M), jnp.int32)
    return _Intervals(a, b, pid, res, qerr, ierr, ok, flags, end, res, dprev, dcur, xres, nx)


def _estimate_f(fn: BoundIntegrand, core: _Core, rule: GaussKronrodRule, pre, a, b, pid, end,
                valid):
    """Innermost level: ``f`` at the nodes of the intervals ``(a, b)`` with prefixes ``pre``
    -> QUADPACK estimates and the number of nodes (of valid rows) with non-finite values.

    With ``core.devices > 1`` the intervals are sharded over that many local devices
    (:mod:`loopint.engines.sharding`); the bookkeeping around them follows XLA's sharding
    propagation."""
    shard = sharding.constraint(core.devices)
    pre, a, b, pid, end, valid = (shard(x) for x in (pre, a, b, pid, end, valid))
    vals = _f_at_nodes(fn, core, rule, pre, a, b)
    finite = jnp.isfinite(vals)
    # With ``core.materialize`` (the default on a CPU) the values are written to memory once;
    # otherwise XLA may fuse the integrand into each weighted sum of the rule, which is
    # faster on a GPU (module docstring, "Performance notes").
    vals = jnp.where(finite, vals, 0)
    if core.materialize:
        vals = jax.lax.optimization_barrier(vals)
    bad = ~jnp.all(finite, axis=2) & valid[:, None]
    res, qerr, ierr, ok = _reduce(core, rule, vals, None, a, b)
    flags = jnp.where(jnp.any(bad, axis=1), FLAG_NONFINITE, 0).astype(jnp.int32)
    return _rows(core, a, b, pid, end, res, qerr, ierr, ok, flags), jnp.sum(bad)


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
def _k_reduce(inner: _Out, a, b, pid, end, start, *, core: _Core, rule: GaussKronrodRule,
              size: int):
    """Level < d: inner integrals at the nodes -> QUADPACK estimates of ``size`` intervals."""
    K = rule.n_points
    a, b, pid, end = _slice(start, size, a, b, pid, end)
    vals = inner.val.reshape(size, K, core.n_real)
    errs = inner.err.reshape(size, K, core.n_real)
    res, qerr, ierr, ok = _reduce(core, rule, vals, errs, a, b)
    flags = _or_bits(inner.flags.reshape(size, K), axis=1)
    return _rows(core, a, b, pid, end, res, qerr, ierr, ok, flags)


class _Sums(NamedTuple):
    """Per-prefix sums over the intervals of one level (``B`` prefixes, ``U`` user
    components), and the per-interval quantities the split rule needs."""

    c: jax.Array          # (N, U) quadrature error per user component (|re| + |im|)
    ok: jax.Array         # (N, U) valid rows whose error may still shrink
    I: jax.Array          # (B, M) integral
    Et: jax.Array         # (B, M) quadrature + propagated error
    Ei: jax.Array         # (B, M) propagated inner error
    absval: jax.Array     # (B, M) Σ |interval results| (top level), else |I|
    Eu: jax.Array         # (B, U) error in intervals that cannot be split
    n_int: jax.Array      # (B,) int32 intervals
    n_ok: jax.Array       # (B,) splittable intervals
    inner_bits: jax.Array  # (B,) int32 flags OR-ed over the intervals


def _at_seg(x, seg):
    """Per-prefix array -> per-interval (the padding segment ``B`` reads a dummy zero row)."""
    return jnp.concatenate([x, jnp.zeros_like(x[:1])], axis=0)[seg]


def _prefix_sums(st: _Intervals, valid, seg, B: int, core: _Core, top: bool) -> _Sums:
    """Segment sums of the intervals by prefix.

    Padding rows (segment ``B``) are dropped by the segment reductions (an out-of-range
    segment id): summing them into one dummy row would serialize millions of atomic adds on
    one address on a GPU.
    """
    N = st.a.shape[0]
    U = core.n_user
    dt = _dtype(core)
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
    return _Sums(c, ok, I, Et, Ei, absval, Eu, n_int, n_ok, inner_bits)


def _convergence(s: _Sums, atol, rtol, core: _Core):
    """Per prefix and user component: the tolerance ``τ``, whether the error exceeds it,
    and the ``room`` left to the quadrature (``τ`` minus the propagated inner error and the
    error of the unsplittable intervals).  A prefix with no room is *hopeless*: limited by
    its inner integrals if their error dominates, else by round-off."""
    tau = jnp.maximum(atol, rtol * _comb(core, s.I))       # (B, U)
    E = _comb(core, s.Et)
    need = E > tau
    conv = ~jnp.any(need, axis=1)
    ei = _comb(core, s.Ei)
    room = tau - ei - s.Eu
    blocked = need & (room <= 0.01 * tau)
    hopeless = jnp.any(blocked, axis=1)
    inner_limited = jnp.any(blocked & (ei >= s.Eu), axis=1)
    return tau, need, conv, room, hopeless, inner_limited


def _mark_splits(s: _Sums, need, room, valid, seg, B: int, core: _Core):
    """The breadth-first split set: interval ``i`` of prefix ``p`` is marked when its error
    exceeds ``η · room_p / n_p`` (module docstring); a prefix whose growth would pass
    ``max_intervals`` splits only its worst interval.  Returns ``(want, demand, capfull)``:
    the marks, the marked intervals per prefix and the prefixes that cannot grow at all."""
    N = s.c.shape[0]
    inv_room = jnp.where(need & (room > 0), 1 / jnp.where(room > 0, room, 1), 0)
    r = jnp.max(jnp.where(s.ok, s.c, 0) * _at_seg(inv_room, seg), axis=1)     # (N,)
    thr = core.eta / jnp.maximum(s.n_ok, 1)
    want = (r > _at_seg(thr, seg)) & valid
    demand = jax.ops.segment_sum(want.astype(jnp.int32), seg, num_segments=B)
    grow = core.nsplit - 1
    over = s.n_int + demand * grow > core.max_intervals
    # Over the per-prefix capacity: split only the worst interval (the first of equals).
    # Computed unconditionally: with a lax.cond this kernel compiles slower on a GPU.
    rmax = jax.ops.segment_max(jnp.where(want, r, -1), seg, num_segments=B)
    is_max = want & (r >= _at_seg(rmax, seg))
    first = jax.ops.segment_min(jnp.where(is_max, jnp.arange(N), N), seg, num_segments=B)
    want = jnp.where(_at_seg(over, seg), is_max & (jnp.arange(N) == _at_seg(first, seg)), want)
    demand = jnp.where(over, jnp.minimum(demand, 1), demand)
    capfull = s.n_int + grow > core.max_intervals
    return want, demand, capfull


def _fit_storage(go, n_int, demand, grow: int, state_cap):
    """Which of the prefixes that ``go`` on may grow within ``state_cap`` interval rows.

    Prefixes in index order get their growth while it fits; the others wait with their
    intervals kept.  When not even the first waiting prefix fits (deadlock: all storage held
    by waiting prefixes), the longest run of prefixes whose intervals and growth fit together
    is kept and the rest *evicted*.  Returns ``(go, allowed, evicted)``.
    """
    kept = jnp.sum(jnp.where(go, n_int, 0))
    growth = jnp.where(go, demand * grow, 0)
    running = jnp.cumsum(jnp.stack([growth, jnp.where(go, n_int + growth, 0)], axis=1), axis=0)
    allowed = go & (running[:, 0] <= state_cap - kept)
    deadlock = jnp.any(go) & ~jnp.any(allowed)
    fits = running[:, 1] <= state_cap
    evicted = go & deadlock & ~fits
    allowed = jnp.where(deadlock, go & fits, allowed)
    return go & ~evicted, allowed, evicted


def _own_flags(unconv, hopeless, inner_limited, demand, capfull, stop):
    """Why each unconverged prefix stops (``FLAG_*`` bits of this level)."""
    own = jnp.where(unconv & hopeless, jnp.where(inner_limited, FLAG_INNER, FLAG_ROUNDOFF), 0)
    own = own | jnp.where(unconv & ~hopeless & (demand == 0), FLAG_ROUNDOFF, 0)
    own = own | jnp.where(unconv & ~hopeless & capfull, FLAG_MEMORY, 0)
    own = own | jnp.where(unconv & stop, FLAG_MAX_EVALS, 0)
    return own.astype(jnp.int32)


def _select(st: _Intervals, count, atol, rtol, active, out: _Out, stop, state_cap, *,
            core: _Core, top: bool):
    """Convergence test, retirement of finished prefixes and the breadth-first split set.

    Interval storage of the chunk is ``state_cap`` rows (:func:`_fit_storage`): prefixes
    that do not fit wait, or are *evicted*: their intervals are dropped and the host
    integrates them again later in a smaller batch (no result is lost, some work is
    repeated).

    Returns ``(split, keep, out, active, evicted, counts)`` with
    ``counts = [kept, split, active, evicted]``.
    """
    N = st.a.shape[0]
    B = active.shape[0]
    valid = jnp.arange(N) < count
    seg = jnp.where(valid, st.pid, B)
    s = _prefix_sums(st, valid, seg, B, core, top)
    tau, need, conv, room, hopeless, inner_limited = _convergence(s, atol, rtol, core)
    want, demand, capfull = _mark_splits(s, need, room, valid, seg, B, core)

    go = active & ~conv & ~hopeless & (demand > 0) & ~capfull & ~stop
    go, allowed, evicted = _fit_storage(go, s.n_int, demand, core.nsplit - 1, state_cap)
    unconv = active & ~conv
    own = _own_flags(unconv, hopeless, inner_limited, demand, capfull, stop)

    finish = active & ~go & ~evicted
    out = _Out(
        val=jnp.where(finish[:, None], s.I, out.val),
        err=jnp.where(finish[:, None], s.Et, out.err),
        absval=jnp.where(finish[:, None], s.absval, out.absval),
        flags=jnp.where(finish, own | s.inner_bits, out.flags),
        own=jnp.where(finish, own, out.own))
    active = go
    split = want & _at_seg(allowed & go, seg)
    keep = valid & _at_seg(active, seg) & ~split
    counts = jnp.stack([jnp.sum(keep), jnp.sum(split), jnp.sum(active),
                        jnp.sum(evicted)]).astype(jnp.int32)
    return split, keep, out, active, evicted, counts


_k_select = jax.jit(_select, static_argnames=("core", "top"))


def _children(a, b, pid, end, split, nsplit: int, size: int):
    """Cut every marked interval into ``nsplit`` equal pieces, packed into ``size`` rows.

    Gathers, not scatters: one int32 scatter finds the parent of each child slot, then the
    pieces are computed in one fused pass (faster on a GPU than scattering each field).
    Returns the pieces ``(a, b, pid, end)`` and each piece's parent row; the first piece
    keeps the parent's ``END_LOWER`` bit, the last its ``END_UPPER`` bit.
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
    cend = (jnp.where(k == 0, end[p] & END_LOWER, 0)
            | jnp.where(k == nsplit - 1, end[p] & END_UPPER, 0))
    return (jnp.where(live, lo, zero), jnp.where(live, hi, zero), jnp.where(live, pid[p], 0),
            jnp.where(live, cend, 0), p)


_k_children = jax.jit(_children, static_argnames=("nsplit", "size"))


def _extend(st: _Intervals, par, new: _Intervals, *, core: _Core) -> _Intervals:
    """Endpoint extrapolation (QUADPACK DQAGS, :mod:`loopint.engines.endpoint`): a piece
    that touches an end of its range appends one approximation to its parent's sequence and
    takes the extrapolated value where its error estimate beats the plain Kronrod error.

    The split changed the approximation ``S`` of the integral by ``D = Σ_children raw -
    raw_parent``: the new term of the sequence.  The table is kept on the origin of the
    newest approximation, so the extrapolated limit ``L`` makes the piece's own integral
    ``raw + L``.
    """
    if core.n_cols == 0:
        return new
    S = new.raw.shape[0]
    ns = core.nsplit
    family = jnp.arange(S) // ns
    D = (jax.ops.segment_sum(new.raw, family, num_segments=S // ns + 1)[family]
         - st.raw[par])                                                      # (S, M)
    at_end = new.end != 0
    # Only intervals at an end use the table; the others pass through unchanged.
    prev, cur, xres, nx, lim, err, usable = epsilon_append(
        st.dprev[par], st.dcur[par], st.xres[par], st.nx[par], D, jnp.abs(st.raw[par]))
    use = at_end[:, None] & usable & (err < new.qerr)
    e2, e3 = at_end[:, None], at_end[:, None, None]
    return new._replace(
        res=jnp.where(use, new.raw + lim, new.raw), qerr=jnp.where(use, err, new.qerr),
        dprev=jnp.where(e3, prev, new.dprev), dcur=jnp.where(e3, cur, new.dcur),
        xres=jnp.where(e3, xres, new.xres), nx=jnp.where(e2, nx, new.nx))


_k_extend = jax.jit(_extend, static_argnames=("core",))


def _merge(st: _Intervals, keep, new: _Intervals, n_keep, n_new, size: int):
    """Kept intervals first, then the new ones, in a buffer of ``size`` rows (zero padding).

    One int32 scatter finds the source row of each kept slot; all fields are then gathered
    (faster on a GPU than scattering every field).
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
def _k_refine_f(st: _Intervals, split, keep, P, n_keep, n_new, fn: BoundIntegrand, *, core: _Core,
                rule: GaussKronrodRule, new_size: int, size: int):
    """Innermost level, one fused step: bisect, evaluate ``f`` on the children, extrapolate
    at the ends, merge."""
    ca, cb, cp, ce, par = _children(st.a, st.b, st.pid, st.end, split, core.nsplit, new_size)
    valid = jnp.arange(new_size) < n_new
    new, nonfinite = _estimate_f(fn, core, rule, P[cp], ca, cb, cp, ce, valid)
    new = _extend(st, par, new, core=core)
    return _merge(st, keep, new, n_keep, n_new, size), nonfinite


# --------------------------------------------------------------------------------------------
# Host driver
# --------------------------------------------------------------------------------------------

# CPU size classes: (smallest buffer, largest innermost batch) and the growth factor, the
# fastest of several choices for the test suite on a 2-core CPU.
_CPU_CLASSES = (64, 1024)
_CPU_BUCKET_BASE = 4

# The memory bound: a batch of ``max_points`` points per integrand call is allowed
# ``_BUFFERS_PER_BATCH`` float64 arrays of shape ``[max_points, components + ndim]`` (the
# points and values of one call, the node values of the rule, the interval storage of the
# chunks of every level, whose sizes all follow from ``max_points``).
_BUFFERS_PER_BATCH = 64
# Automatic batch on an accelerator: between these bounds (larger batches gain nothing, the
# number of adaptive steps is set by the levels, not by the batch); on a CPU the smaller one.
_MIN_AUTO_POINTS = 2**16
_MAX_AUTO_POINTS = 2**23
_FALLBACK_DEVICE_BYTES = 16 * 2**30      # accelerator without memory statistics


def bytes_per_point(n_real: int, ndim: int) -> int:
    """Bytes of ``memory_limit`` per point of an integrand call, for ``n_real`` real
    components in ``ndim`` variables."""
    return _BUFFERS_PER_BATCH * 8 * (n_real + ndim)


def max_points(memory_limit: int | None, n_real: int = 1, ndim: int = 1) -> int:
    """Points per integrand call (and prefixes per inner batch) within ``memory_limit`` bytes.

    ``None``: 2^16 on a CPU; on an accelerator the largest power of two whose buffers fit
    the device memory, between 2^16 and 2^23.
    """
    per_point = bytes_per_point(n_real, ndim)
    if memory_limit is not None:
        return max(1, int(memory_limit) // per_point)
    if jax.default_backend() == "cpu":
        return _MIN_AUTO_POINTS
    try:
        limit = int(jax.devices()[0].memory_stats()["bytes_limit"])
    except Exception:           # backend without memory statistics
        limit = _FALLBACK_DEVICE_BYTES
    return max(_MIN_AUTO_POINTS, min(_MAX_AUTO_POINTS, _pow2_floor(limit // per_point)))


@dataclasses.dataclass(frozen=True)
class _Setup:
    """The options of one call, validated and with the backend's defaults resolved."""

    plan: _Plan
    nf: object                 # NormalizedIntegrand of the bound integrand
    rho: list                  # per level: fraction of its tolerance passed inwards
    n0: list                   # per level: initial intervals
    max_evals: int
    max_points: int
    fused: bool
    bucket_base: int
    grow_only: bool
    fused_min_fraction: int
    profile: bool

    @property
    def ndim(self) -> int:
        return self.plan.ndim

    @property
    def n_user(self) -> int:
        return self.plan.core.n_user

    def run(self, rtols, evaluations: int = 0) -> _Run:
        return _Run(self, rtols, evaluations)

    def chain(self, r0: float) -> list:
        """Relative tolerances of the levels: ``r0`` outermost, times ``ρ_j`` per level."""
        out = [r0]
        for j in range(1, self.ndim):
            out.append(out[-1] * self.rho[j - 1])
        return out

    def user_abs(self, x):
        """Real components -> user components (modulus of complex pairs)."""
        x = np.asarray(x)
        U = self.n_user
        return np.hypot(x[:U], x[U:]) if self.plan.core.is_complex else np.abs(x)

    def tolerance_scale(self, o: "_Out"):
        """|I| per user component, floored against exact cancellation by 1e-3 Σ|interval
        results|."""
        val = self.user_abs(np.asarray(o.val[0]))
        return np.maximum(val, 1e-3 * self.user_abs(np.asarray(o.absval[0])))


def _settle(engine: "Iterated", f: Callable, limits: Limits, max_evals: int) -> _Setup:
    """Validate the engine's options for ``limits`` and resolve the backend defaults."""
    ndim = limits.ndim
    if ndim < 1:
        raise ValueError(f"ndim must be >= 1, got {ndim}")
    n0 = ([int(engine.initial_intervals)] * ndim if np.ndim(engine.initial_intervals) == 0
          else [int(v) for v in engine.initial_intervals])
    if len(n0) != ndim or not all(_is_pow2(v) for v in n0):
        raise ValueError("initial_intervals must be a power of two, or one per dimension; "
                         f"got {engine.initial_intervals!r}")
    on_cpu = jax.default_backend() == "cpu"
    nsplit = engine.nsplit if engine.nsplit is not None else 2 if on_cpu else 4
    if nsplit < 2 or engine.max_intervals < 1:
        raise ValueError("need nsplit >= 2 and max_intervals >= 1")
    if engine.inner_factor is not None and not 0 < engine.inner_factor < 1:
        raise ValueError(f"inner_factor must lie in (0, 1), got {engine.inner_factor}")
    if engine.inner_tolerance not in ("auto", "absolute", "relative", "mixed"):
        raise ValueError("inner_tolerance must be 'auto', 'mixed', 'absolute' or 'relative', "
                         f"got {engine.inner_tolerance!r}")
    if engine.endpoint_terms != 0 and engine.endpoint_terms < 3:
        raise ValueError("endpoint_terms must be 0 (no endpoint extrapolation) or >= 3, got "
                         f"{engine.endpoint_terms!r}")
    if engine.fused_min_fraction < 1:
        raise ValueError(f"fused_min_fraction must be >= 1, got {engine.fused_min_fraction}")
    rules = _as_rules(engine.rules, ndim)
    dt = real_dtype(engine.precision)
    fn = _bound(f, tuple(engine.args))
    nf = normalize_integrand(fn, ndim, dt)
    materialize = on_cpu if engine.materialize is None else bool(engine.materialize)
    core = _Core(n_real=nf.n_components,
                 n_user=nf.n_components // 2 if nf.is_complex else nf.n_components,
                 is_complex=nf.is_complex, dtype=jnp.dtype(dt).name, nsplit=int(nsplit),
                 max_intervals=int(engine.max_intervals), eta=float(engine.split_fraction),
                 materialize=materialize, devices=sharding.pow2_count(engine.devices),
                 n_cols=(int(engine.endpoint_terms) + 1) // 2)
    if engine.inner_factor is None:
        # Even split: each level's own quadrature error gets 1/d of the budget, so level j
        # (0-based) asks its inner integrals for (d-j-1)/(d-j) of its own tolerance.
        rho = [(ndim - j - 1) / (ndim - j) for j in range(ndim)]
    else:
        rho = [float(engine.inner_factor)] * ndim
    return _Setup(
        plan=_Plan(fn=fn, ndim=ndim, limits=limits, rules=rules, core=core),
        nf=nf, rho=rho, n0=n0, max_evals=int(max_evals),
        max_points=max_points(engine.memory_limit, core.n_real, ndim),
        fused=(not on_cpu) if engine.fused is None else bool(engine.fused),
        bucket_base=_CPU_BUCKET_BASE if on_cpu else 4,
        grow_only=(not on_cpu) if engine.grow_only is None else bool(engine.grow_only),
        fused_min_fraction=int(engine.fused_min_fraction), profile=bool(engine.profile))


class _Run:
    """One nested adaptive run: host loop around the kernels, budgets and statistics."""

    def __init__(self, setup: "_Setup", rtols, evaluations: int = 0):
        plan = setup.plan
        self.plan = plan
        self.core = plan.core
        self.rtols = rtols
        self.rho = setup.rho
        self.max_evals = setup.max_evals
        self.n0 = setup.n0
        self.fused = setup.fused
        self.base = setup.bucket_base
        # Size classes 16·4^k rows; on a CPU at least 64 rows and innermost batches of at
        # most 1024 intervals (fewer shapes to compile, which dominates small runs there);
        # on accelerators batches as large as max_points allows.
        on_cpu = jax.default_backend() == "cpu"
        self.min_rows, self.eval_cap = _CPU_CLASSES if on_cpu else (16, None)
        self.grow_only = setup.grow_only
        self.fused_min_fraction = setup.fused_min_fraction
        self.evaluations = evaluations
        self.nonfinite = []
        self.stopped = False
        d = plan.ndim
        K = [r.n_points for r in plan.rules]
        n0, max_points = setup.n0, setup.max_points
        # Prefixes per chunk, intervals per evaluation slice (both powers of two) and the
        # interval storage of one chunk.
        self.chunk = [_pow2_floor(max(1, max_points // (K[j] * n0[j]))) for j in range(d)]
        self.slice = [_pow2_floor(max(1, max_points // K[j])) for j in range(d)]
        # (at least two prefixes at max_intervals, so that one prefix always fits)
        self.state_cap = [max(8 * self.chunk[j] * n0[j], 2 * (plan.core.max_intervals + n0[j]))
                          for j in range(d)]
        self.evicted = [0] * d
        self.profile = {} if setup.profile else None
        self.steps = [0] * d
        self.calls = [0] * d
        self.intervals = [0] * d

    def k(self, name: str, kernel, *args, **kw):
        """Run a kernel; with the ``profile`` option time it (synchronously)."""
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
        a, b, pid, end, inner_tol = self.k(
            "init", _k_init, P, A if base is None else base, count, self.rho[j],
            limits=plan.limits, level=j, n0=self.n0[j], dtype=core.dtype)
        n_state = count * self.n0[j]
        st = self._evaluate(j, P, inner_tol, a, b, pid, end, n_state)
        out, active = _k_fresh_out(st, count, rows=B)
        evicted_all = None
        rtol = self.rtols[j]
        while True:
            stop = self.evaluations >= self.max_evals
            self.stopped |= stop
            split, keep, out, active, evicted, counts = self.k(
                "select", _k_select, st, n_state, A, rtol, active, out, stop,
                self.state_cap[j], core=core, top=j == 0)
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
                # innermost step evaluates at least 1/fused_min_fraction of it (padding rows
                # are masked).
                size = max(size, st.a.shape[0])
                if fuse:
                    floor = size // self.fused_min_fraction
                    new_size = min(size, self.slice[j], max(new_size, floor))
            if fuse:
                st, nonfinite = self.k("refine_f", _k_refine_f, st, split, keep, P, n_keep,
                                       n_new, plan.fn, core=core, rule=rule,
                                       new_size=new_size, size=size)
                self.count_nonfinite(nonfinite)
                self.evaluations += n_new * rule.n_points
                self.intervals[j] += n_new
            else:
                ca, cb, cp, ce, par = self.k("children", _k_children, st.a, st.b, st.pid,
                                             st.end, split, nsplit=core.nsplit, size=new_size)
                new = self._evaluate(j, P, inner_tol, ca, cb, cp, ce, n_new)
                if core.n_cols:
                    new = self.k("extend", _k_extend, st, par, new, core=core)
                st = self.k("merge", _k_merge, st, keep, new, n_keep, n_new, size=size)
            n_state = n_keep + n_new

    def _evaluate(self, j: int, P, inner_tol, a, b, pid, end, count: int) -> _Intervals:
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
                part, nonfinite = self.k("eval", _k_eval, P, a, b, pid, end, start, count,
                                         plan.fn, core=core, rule=rule, size=size)
                self.count_nonfinite(nonfinite)
                self.evaluations += n * K
            else:
                X, AX = self.k("nodes", _k_nodes, P, inner_tol, a, b, pid, start, rule=rule,
                               size=size)
                inner = self.level(j + 1, X, AX, n * K)
                part = self.k("reduce", _k_reduce, inner, a, b, pid, end, start, core=core,
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
# Tolerance policy: crude estimate, pilot, reruns
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass
class _Outcome:
    """The top-level result of the final run and how it was reached."""

    out: _Out
    runs: list              # every run made (crude estimate, pilot, reruns), the final last
    mode: str               # inner tolerances of the final run
    tau: np.ndarray | None = None      # absolute tolerance scale of the final run
    pilot: object = None    # the pilot's value, if a pilot ran


def _run_relative(s: _Setup, rtol: float, atol_u) -> _Outcome:
    """The classic scheme: one run, relative inner tolerances, no pilot (or, at
    ``rtol = 0``, absolute ones)."""
    run = s.run(s.chain(rtol), 0)
    return _Outcome(run.top(atol_u), [run], "relative" if rtol else "absolute")


def _run_pilot(s: _Setup, rtol: float, atol_u, pilot_rtol: float) -> tuple[list, _Out]:
    """The crude tensor estimate and the pilot run at ``max(rtol, pilot_rtol)``.

    The crude estimate (one Gauss–Kronrod interval per level, no refinement) gives the
    pilot an absolute floor, so that the pilot does not resolve negligible regions to full
    relative accuracy either; 10x margin for a crude estimate.
    """
    crude = s.run([0.0] * s.ndim, 0)
    c_out = crude.top(np.full(s.n_user, np.inf))
    floor = np.maximum(atol_u, 0.1 * pilot_rtol * s.tolerance_scale(c_out))
    pilot = s.run(s.chain(max(rtol, pilot_rtol)), crude.evaluations)
    return [crude, pilot], pilot.top(atol_u, base_u=floor)


def _run_scaled(s: _Setup, rtol: float, atol: float, atol_u, *, inner_tolerance: str,
                pilot_rtol: float, scale) -> _Outcome:
    """Absolute inner tolerances from the scale ``τ`` (from ``scale`` or a pilot run); one
    rerun if ``τ`` proves too loose or, in ``"auto"``, mixed inner tolerances prove
    inner-limited (module docstring)."""
    runs: list = []
    pilot_value = None
    mode = "absolute" if inner_tolerance == "absolute" else "mixed"
    if scale is None:
        runs, p_out = _run_pilot(s, rtol, atol_u, pilot_rtol)
        pilot_value = s.nf.unpack(np.asarray(p_out.val[0]))
        scale_u = s.tolerance_scale(p_out)
        if inner_tolerance == "auto" and int(p_out.own[0]) & FLAG_INNER:
            # already the pilot's relative inner tolerances could not deliver: cancellation
            mode = "absolute"
    else:
        scale_u = np.broadcast_to(np.abs(np.asarray(scale, dtype=complex)), (s.n_user,))
    tau = np.maximum(atol_u, rtol * scale_u)
    for attempt in range(2):
        inner_rtols = s.chain(rtol) if mode == "mixed" else [rtol] + [0.0] * (s.ndim - 1)
        run = s.run(inner_rtols, runs[-1].evaluations if runs else 0)
        out = run.top(atol_u, base_u=tau)
        runs.append(run)
        val, err = np.asarray(out.val[0]), np.asarray(out.err[0])
        if attempt or run.stopped or real_tolerance_met(val, err, rtol, atol, s.nf):
            break
        tau_final = np.maximum(atol_u, rtol * s.tolerance_scale(out))
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
    return _Outcome(out, runs, mode, tau, pilot_value)


# --------------------------------------------------------------------------------------------
# Result: status and statistics
# --------------------------------------------------------------------------------------------

def _status(s: _Setup, o: _Outcome, val, err, nonfinite: int, converged: bool,
            rtol: float, atol_u) -> str:
    """The status message of a run (``converged`` or why not, most severe reason first)."""
    if converged:
        return CONVERGED
    if nonfinite:
        return (f"{NONFINITE}: integrand NaN/inf at {nonfinite} points (counted as 0); "
                f"error {float(np.max(np.abs(err))):.3g}")
    run = o.runs[-1]
    flags = int(o.out.flags[0])
    evaluations = int(run.evaluations)
    requested = float(np.max(np.maximum(atol_u, rtol * s.user_abs(val))))
    if run.stopped or flags & FLAG_MAX_EVALS:
        return status_not_converged(MAX_EVALS, evaluations, s.user_abs(err), requested)
    if flags & FLAG_MEMORY:
        return status_not_converged(MEMORY_LIMIT, evaluations, s.user_abs(err), requested)
    status = status_not_converged(ROUNDOFF, evaluations, s.user_abs(err), requested)
    if int(o.out.own[0]) & FLAG_INNER:
        status += " (limited by the error of the inner integrals)"
    return status


def _info(s: _Setup, o: _Outcome, nonfinite: int) -> dict:
    run = o.runs[-1]
    info = {
        "nonfinite": nonfinite,
        "rules": [r.name for r in s.plan.rules],
        "domain": s.plan.limits.name,
        "inner_tolerance": o.mode,
        "inner_factors": s.rho[:-1],
        "tau": None if o.tau is None else o.tau.tolist(),
        "pilot": o.pilot,
        "runs": len(o.runs),
        "steps": run.steps,
        "calls": run.calls,
        "intervals": run.intervals,
        "evicted": run.evicted,
        "flags": _flag_names(int(o.out.flags[0])),
        "max_points": s.max_points,
        "nsplit": s.plan.core.nsplit,
        "devices": s.plan.core.devices,
    }
    if s.profile:       # [calls, seconds] per kernel, over all runs
        prof: dict = {}
        for r in o.runs:
            for name, (n, t) in r.profile.items():
                c = prof.setdefault(name, [0, 0.0])
                c[0] += n
                c[1] += t
        info["profile"] = prof
    return info


def _flag_names(flags: int) -> list[str]:
    names = {FLAG_MEMORY: "memory", FLAG_MAX_EVALS: "max_evals", FLAG_ROUNDOFF: "roundoff",
             FLAG_INNER: "inner", FLAG_NONFINITE: "nonfinite"}
    return [n for bit, n in names.items() if flags & bit]


def _integrate(engine: "Iterated", f: Callable, limits: Limits, rtol: float, atol: float,
               max_evals: int) -> IntegrationResult:
    """The engine's run: settle the options, apply the tolerance policy, report."""
    t0 = time.perf_counter()
    check_tolerances(rtol, atol, max_evals)
    s = _settle(engine, f, limits, max_evals)
    atol_u = np.full(s.n_user, float(atol))
    if rtol == 0 or engine.inner_tolerance == "relative":
        o = _run_relative(s, rtol, atol_u)
    else:
        o = _run_scaled(s, rtol, atol, atol_u, inner_tolerance=engine.inner_tolerance,
                        pilot_rtol=engine.pilot_rtol, scale=engine.scale)
    val = np.asarray(o.out.val[0])
    err = np.asarray(o.out.err[0])
    nonfinite = int(sum(r.nonfinite_count() for r in o.runs))
    converged = bool(real_tolerance_met(val, err, rtol, atol, s.nf) and nonfinite == 0)
    status = _status(s, o, val, err, nonfinite, converged, rtol, atol_u)
    info = _info(s, o, nonfinite)
    return IntegrationResult(value=s.nf.unpack(val), error=complex_error(err, s.nf),
                             converged=converged, status=status,
                             evaluations=int(o.runs[-1].evaluations),
                             seconds=time.perf_counter() - t0, method=METHOD, info=info)


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Iterated(Engine):
    """Iterated adaptive Gauss–Kronrod integration over a box, the simplex or :class:`Limits`.

    Seed 000 §4.3–4.4.1 (DCM): nested 1-D adaptive integration à la QUADPACK DQAGE,
    vectorized over all 1-D integrals of a level (see the module docstring for the design and
    the error accounting).  ``engine.integrate(f, domain, *, rtol, atol, max_evals)`` takes
    ``f(x[n, ndim], *args) -> values[n]`` or ``[n, m]`` (real or complex, traceable by JAX;
    ``x[:, 0]`` is the outermost variable ``x1``) and a :class:`~loopint.engines.base.Box`,
    a :class:`~loopint.engines.base.Simplex` (iterated with ``x_j <= 1 - x_1 - … -
    x_{j-1}``) or a :class:`Limits` with variable limits.  ``max_evals`` counts integrand
    evaluations (points, crude and pilot runs included) after which refinement stops
    everywhere; the run can overshoot by the first estimates of integrals already started.

    Options:
        rules: None (GK21 for ``x1``, GK15 for the others), one rule for all ("gk15", "gk21",
            "gk31" or a :class:`GaussKronrodRule`), or one per level, outermost first.
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
        memory_limit: bytes of device memory the engine may use for its buffers; it sets the
            points per integrand call and prefixes per inner batch (:func:`max_points`,
            :func:`bytes_per_point` bytes each).  None: automatic, 2^16 points on a CPU and
            up to 2^23 on accelerators (by device memory).
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
        grow_only: buffers only grow within one level call and fused innermost batches
            cover at least ``1/fused_min_fraction`` of the buffer (fewer compiled shapes);
            default: on for accelerators, off on CPU, where smaller buffers are cheaper
            passes.  The results do not depend on it beyond rounding.
        fused_min_fraction: see ``grow_only``.
        materialize: write the innermost integrand values to memory before the rule's sums
            (an optimization barrier); default: on a CPU only.
        endpoint_terms: the most approximations (odd; QUADPACK's ``limexp``) the ε-table of
            the bisections toward an end of each 1-D range holds (QUADPACK QAGS, module
            docstring "Endpoint singularities"); every interval carries about
            ``endpoint_terms + 7`` more numbers per real component; 0 turns the
            extrapolation off (plain bisection).
        profile: synchronise after every kernel and report ``[calls, seconds]`` per kernel
            in ``info["profile"]``.
        devices: local devices to shard the innermost evaluations over (None: all; a power
            of two is used, :func:`~loopint.engines.sharding.pow2_count`), or ``"global"``.

    Returns :class:`IntegrationResult`; ``info`` holds ``nonfinite``; per level (outermost
    first, final run) ``steps``, ``calls``, ``intervals`` (evaluated) and ``evicted``
    (prefixes redone); the ``pilot`` value, the tolerance scale ``tau``, the
    ``inner_tolerance`` mode used, ``flags`` (limits hit anywhere below the top,
    informational when converged), ``runs`` (crude estimate, pilot and reruns included;
    ``evaluations`` counts all) and ``max_points``.
    """

    name: ClassVar[str] = METHOD
    rules: object = None
    max_intervals: int = 256
    precision: str = "float64"
    args: tuple = ()
    inner_factor: float | None = None
    inner_tolerance: str = "auto"
    pilot_rtol: float = 1e-2
    scale: object = None
    memory_limit: int | None = None
    initial_intervals: int | Sequence[int] = 1
    nsplit: int | None = None
    split_fraction: float = 0.5
    fused: bool | None = None
    grow_only: bool | None = None
    fused_min_fraction: int = 16
    materialize: bool | None = None
    endpoint_terms: int = 9
    profile: bool = False
    devices: int | str | None = None

    def integrate(self, f: Callable, domain, *, rtol: float = DEFAULT_RTOL,
                  atol: float = DEFAULT_ATOL,
                  max_evals: int = DEFAULT_MAX_EVALS) -> IntegrationResult:
        if not isinstance(domain, (Box, Simplex, Limits)):
            raise TypeError("Iterated.integrate takes a Box, a Simplex or Limits as its domain "
                            f"(loopint.engines.base.as_domain makes one), got {domain!r}")
        return _integrate(self, f, as_limits(domain, domain.ndim), rtol, atol, max_evals)

    def integrate_box(self, f: Callable, lower, upper, *, rtol: float, atol: float,
                      max_evals: int) -> IntegrationResult:
        return self.integrate(f, Box(lower, upper), rtol=rtol, atol=atol, max_evals=max_evals)
