"""Region buffers: the bookkeeping that the cubature and PAGANI engines share.

Both engines keep a list of boxes, as centres and half-widths, in device buffers whose
number of rows comes from the ladder ``512·8^k`` on a CPU and ``32768·64^k`` on an
accelerator (:func:`capacity_for`, :func:`min_capacity`, :func:`capacity_step`), so that a
run compiles a handful of shapes.  A rule of :mod:`loopint.engines.rules.genz_malik` is
applied to the live rows of a buffer in chunks (:meth:`RegionProblem.evaluate`): a buffer of up to
:data:`CHUNKS_PER_CALL` chunks in one jitted call (:func:`evaluate_regions`, :func:`evaluate_buffer`), a
larger one chunk by chunk from the host (:func:`evaluate_chunk`), so that the compiled code
that contains the integrand depends on the chunk, not on the buffer: buffers beyond
``CHUNKS_PER_CALL·chunk`` rows reuse it, and a run (or the next delta of a sequence) that grows into
them compiles only the integrand-free bookkeeping (on an accelerator, besides, once per rule,
the kernel of the wide chunks, when the live rows first fill one: see Memory below).  Regions are ranked by the priority ``p_r = max_k E_{r,k}/τ_k``
(:func:`tolerance_targets`, :func:`component_weights`, :func:`priority`) and selected by
octaves of the priority (:func:`top_mask`, :func:`count_carrying`, :func:`smallest_within`),
a few histogram passes instead of a sort.

Compilation ahead: every buffer size compiles its steps once, when a run first needs it.  A
run whose buffer has reached :data:`COMPILE_AHEAD_FROM` rows has the next size's steps
compiled by :data:`AHEAD`, background threads, while it computes; a later run (the next
delta of a sequence, whose regulated integrand needs more regions) or the same run then finds
them in JAX's caches instead of compiling on its own path.  The engines' ``prepare`` queues
the kernels a run starts with (a deformed contour's run, while its strength is chosen) and,
where the first size already has :data:`COMPILE_AHEAD_FROM` rows (an accelerator's), the
next size's steps behind every other queued compilation.

Memory: the option ``memory_limit`` (bytes) of both engines bounds the regions held at once
(:func:`bytes_per_region` each) and the integrand points of one call (:data:`BYTES_PER_POINT`
each, at most :data:`CHUNK_POINTS`), :func:`memory_bounds`.  Without it, on an accelerator,
a large buffer is evaluated in wider chunks, up to :data:`ACCELERATOR_CHUNK_POINTS` points as
far as :data:`CHUNK_MEMORY_SHARE` of the device memory holds them at the bytes per point of
XLA's memory analysis (:meth:`RegionProblem.wide_chunk`): the host's dispatch of a chunk costs
about as much as the integrand's work on 2^24 points.

A run of either engine starts with :func:`prepare` (validation, the integrand seen as real
components, the rule, the memory bounds: a :class:`RegionProblem`) and
:meth:`RegionProblem.initial_grid`, counts its work in a :class:`Progress`, and ends with
:func:`region_result`.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import functools
import itertools
import logging
import os
import queue
import threading
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..precision import real_dtype
from . import base, sharding
from .rules.genz_malik import RegionEstimates, apply_rule, make_rule

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------
# Chunked evaluation of a region buffer


def evaluate_regions(fn: Callable, rule, centers: jax.Array,
                     halfwidths: jax.Array, count: jax.Array, component_weights: jax.Array,
                     n_components: int, chunk: int, devices: int = 1) -> RegionEstimates:
    """Apply the rule to rows ``[0, count)`` of a region buffer, ``chunk`` regions at a time.

    The buffer has a static number of rows ``C`` (a multiple of ``chunk``); ``count`` is
    traced, and a ``while`` loop runs ``ceil(count/chunk)`` chunks, so the work follows the
    live count while the compiled shape stays fixed and one integrand call never sees more
    than ``chunk·N`` points (the memory bound).  Rows ``>= count`` of the outputs are zero.
    With ``devices > 1`` the regions of each chunk are sharded over that many local devices
    (:mod:`loopint.engines.sharding`).
    """
    cap, n = centers.shape
    dtype = centers.dtype
    zero = jnp.zeros((), jnp.int32)
    shard = sharding.constraint(devices)

    def body(j, carry):
        value, error, axis, bad = carry
        start = (j * chunk).astype(jnp.int32)
        c = shard(jax.lax.dynamic_slice(centers, (start, zero), (chunk, n)))
        h = shard(jax.lax.dynamic_slice(halfwidths, (start, zero), (chunk, n)))
        valid = shard(start + jnp.arange(chunk, dtype=jnp.int32) < count)
        est = apply_rule(fn, rule, c, h, valid, component_weights)
        value = jax.lax.dynamic_update_slice(value, est.value, (start, zero))
        error = jax.lax.dynamic_update_slice(error, est.error, (start, zero))
        axis = jax.lax.dynamic_update_slice(axis, est.split_axis, (start,))
        return value, error, axis, bad + est.nonfinite

    init = (jnp.zeros((cap, n_components), dtype), jnp.zeros((cap, n_components), dtype),
            jnp.zeros((cap,), jnp.int32), zero)
    n_chunks = (count.astype(jnp.int32) + chunk - 1) // chunk
    value, error, axis, bad = jax.lax.fori_loop(zero, n_chunks, body, init)
    return RegionEstimates(value, error, axis, bad)


@functools.partial(jax.jit, static_argnames=("ndim", "dtype_name", "chunk", "rule", "devices"))
def evaluate_buffer(centers, halfwidths, count, component_weights, *, f, ndim, dtype_name,
                    chunk, rule="genz_malik", devices=1) -> RegionEstimates:
    """:func:`evaluate_regions` for a user integrand ``f`` (a
    :class:`~loopint.engines.base.BoundIntegrand`, whose bound arrays are traced), jitted.

    With :func:`evaluate_chunk`, the only compiled code of the region engines that contains
    the integrand: compiled once per integrand function, buffer size and precision (not per
    kinematic point or delta) and shared by the cubature and PAGANI engines; their
    bookkeeping is compiled independently of the integrand.
    """
    n = base.normalize_integrand(f, ndim, jnp.dtype(dtype_name))
    return evaluate_regions(n.fn, make_rule(rule, ndim), centers, halfwidths, count,
                            component_weights, n.n_components, chunk, devices)


@functools.partial(jax.jit, static_argnames=("ndim", "dtype_name", "rule", "devices"))
def evaluate_chunk(centers, halfwidths, count, component_weights, *, f, ndim, dtype_name,
                   rule="genz_malik", devices=1) -> RegionEstimates:
    """The rule on one chunk of regions, rows ``[0, count)`` live: the body of
    :func:`evaluate_regions` as a function of its own, compiled once per integrand function,
    chunk size and rule, whatever the buffer the chunk comes from."""
    n = base.normalize_integrand(f, ndim, jnp.dtype(dtype_name))
    shard = sharding.constraint(devices)
    valid = shard(jnp.arange(centers.shape[0], dtype=jnp.int32) < count)
    return apply_rule(n.fn, make_rule(rule, ndim), shard(centers), shard(halfwidths), valid,
                      component_weights)


@functools.partial(jax.jit, static_argnames=("chunk",))
def _take_chunk(centers, halfwidths, start, *, chunk):
    zero = jnp.zeros((), jnp.int32)
    n = centers.shape[1]
    return (jax.lax.dynamic_slice(centers, (start, zero), (chunk, n)),
            jax.lax.dynamic_slice(halfwidths, (start, zero), (chunk, n)))


@functools.partial(jax.jit, donate_argnums=(0,))
def _put_chunk(out: RegionEstimates, est: RegionEstimates, start) -> RegionEstimates:
    zero = jnp.zeros((), jnp.int32)
    return RegionEstimates(jax.lax.dynamic_update_slice(out.value, est.value, (start, zero)),
                           jax.lax.dynamic_update_slice(out.error, est.error, (start, zero)),
                           jax.lax.dynamic_update_slice(out.split_axis, est.split_axis, (start,)),
                           out.nonfinite + est.nonfinite)


@functools.partial(jax.jit, static_argnames=("rows", "n_components", "dtype_name"))
def _no_estimates(*, rows, n_components, dtype_name) -> RegionEstimates:
    dtype = jnp.dtype(dtype_name)
    return RegionEstimates(jnp.zeros((rows, n_components), dtype),
                           jnp.zeros((rows, n_components), dtype),
                           jnp.zeros((rows,), jnp.int32), jnp.zeros((), jnp.int32))


def _pow2_floor(x: int) -> int:
    return 1 << max(0, int(x).bit_length() - 1)


def pow2_ceil(x: int) -> int:
    """Smallest power of two >= ``x`` (1 for ``x <= 1``)."""
    return 1 << max(0, int(x - 1).bit_length())


MIN_CAPACITY = 512        # CPU: the first buffer size
CAPACITY_STEP = 8         # CPU: region buffers grow 512 → 4096 → 32768 → ...
# Accelerators: 32768 → 2^21 → 2^27.  Every buffer size compiles its own steps (the
# bisection, the insertion and, up to CHUNKS_PER_CALL chunks, the evaluation with the
# integrand), about a second each on a GPU, while the steps' passes over a larger buffer cost
# the device microseconds.  Cold first call on one H200, same evaluations and values: the
# pentagon of the physical test set took 17.7 s with the step 8 and 9.7 s with 64, its
# unequal-mass box 8.6 s and 7.3 s; on a 2-core CPU the same box's warm run took 20 % longer
# with 64 (0.50 s → 0.60 s), so the CPU keeps the finer ladder.  The accelerator's first size
# is the CPU's third: a run beyond a few hundred regions (every point of the physical test
# set) outgrows 512 rows within its first steps and would compile the steps of two sizes on
# its way; the computation after the import of such a first call took 3.3-6.4 s from 32768
# rows against 5.3-8.6 s from 512 (README, "Physical points in a fresh process").
ACCELERATOR_MIN_CAPACITY = 32768
ACCELERATOR_CAPACITY_STEP = 64
CHUNKS_PER_CALL = 8       # chunks of a buffer evaluated in one jitted call, beyond: by the host


def min_capacity(cpu: bool) -> int:
    """The first buffer size: :data:`MIN_CAPACITY` on a CPU,
    :data:`ACCELERATOR_MIN_CAPACITY` on an accelerator."""
    return MIN_CAPACITY if cpu else ACCELERATOR_MIN_CAPACITY


def capacity_step(cpu: bool) -> int:
    """The factor between successive buffer sizes: :data:`CAPACITY_STEP` on a CPU,
    :data:`ACCELERATOR_CAPACITY_STEP` on an accelerator."""
    return CAPACITY_STEP if cpu else ACCELERATOR_CAPACITY_STEP


def capacity_for(n_regions: int, step: int = CAPACITY_STEP, first: int = MIN_CAPACITY) -> int:
    """Smallest buffer size on the ladder ``first·step^k`` holding ``n_regions`` regions."""
    cap = first
    while cap < n_regions:
        cap *= step
    return cap


def chunk_for(capacity: int, points_per_region: int, chunk_points: int) -> int:
    """Regions per integrand call for a buffer: ``capacity/CHUNKS_PER_CALL``, at most
    ``chunk_points/N``."""
    k_max = _pow2_floor(max(1, chunk_points // points_per_region))
    return max(1, min(capacity // CHUNKS_PER_CALL, k_max))


def pad_rows(a: np.ndarray, rows: int) -> np.ndarray:
    """Pad a host array to ``rows`` rows by repeating its last row."""
    return np.concatenate([a, np.repeat(a[-1:], rows - a.shape[0], axis=0)], axis=0)


def uniform_grid(lo: np.ndarray, hi: np.ndarray, divisions: int):
    """Centres and half-widths of the ``divisions^d`` equal cells of the box (host arrays)."""
    if divisions < 1:
        raise ValueError(f"initial_divisions must be >= 1, got {divisions}")
    d = lo.size
    h = (hi - lo) / (2 * divisions)
    idx = np.stack(np.meshgrid(*([np.arange(divisions)] * d), indexing="ij"), -1).reshape(-1, d)
    centers = lo + (2 * idx + 1) * h
    return centers, np.broadcast_to(h, centers.shape).copy()


def tolerance_targets(total_value, rtol, atol, is_complex: bool):
    """Per real component ``τ_k = max(atol, rtol·|value|)``, ``|.|`` = user component modulus."""
    if is_complex:
        half = total_value.shape[0] // 2
        mag = jnp.hypot(total_value[:half], total_value[half:])
        mag = jnp.concatenate([mag, mag])
    else:
        mag = jnp.abs(total_value)
    return jnp.maximum(atol, rtol * mag)


def component_weights(targets):
    """``min τ / τ_k`` (largest weight 1); components with ``τ_k = 0`` get weight 1e15."""
    pos = targets > 0
    tmin = jnp.min(jnp.where(pos, targets, jnp.inf))
    w = jnp.where(pos, tmin / jnp.where(pos, targets, 1), 1e15)
    return jnp.where(jnp.any(pos), w, jnp.ones_like(targets))


def priority(error, count, weights):
    """``p_r = max_k E_{r,k} w_k`` for live rows, ``-inf`` for padding rows."""
    p = jnp.max(error * weights[None, :], axis=1)
    return jnp.where(jnp.arange(error.shape[0]) < count, p, -jnp.inf)


# Selection by octaves of the priority: a few O(C) histogram passes instead of a sort (XLA's
# sort is slow on CPUs and a full sort is more than adaptive selection needs).

N_OCTAVES = 64


def octaves(p):
    """Octave of each priority below the largest, ``floor(log2(max p / p))`` in [0, 63].

    Zero priorities get octave 63, padding rows (``p < 0``) octave 64.
    """
    pmax = jnp.max(p)
    safe = jnp.where(p > 0, p, 1)
    b = jnp.floor(jnp.log2(jnp.where(pmax > 0, pmax, 1) / safe))
    b = jnp.where(p > 0, jnp.clip(b, 0, N_OCTAVES - 1), N_OCTAVES - 1)
    return jnp.where(p >= 0, b, N_OCTAVES).astype(jnp.int32)


def _octave_counts(b):
    return jnp.bincount(b, length=N_OCTAVES + 1)[:N_OCTAVES]


def top_mask(p, k):
    """Mask of ``k`` rows of largest priority ``p >= 0``, exact to within one octave (the
    boundary octave is taken in index order)."""
    b = octaves(p)
    at_most = jnp.cumsum(_octave_counts(b))                 # rows in octaves <= j
    j = jnp.argmax(at_most >= k)
    before = jnp.where(j > 0, at_most[jnp.maximum(j - 1, 0)], 0)
    edge = b == j
    return (b < j) | (edge & (jnp.cumsum(edge) <= k - before))


def count_carrying(p, share):
    """Rows, largest priorities first (by octave), whose priorities reach ``share`` of the sum."""
    b = octaves(p)
    pv = jnp.where(p > 0, p, 0)
    sums = jnp.cumsum(jax.ops.segment_sum(pv, b, num_segments=N_OCTAVES + 1)[:N_OCTAVES])
    j = jnp.argmax(sums >= share * sums[-1])
    return jnp.cumsum(_octave_counts(b))[j].astype(jnp.int32)


def smallest_within(error, p, candidates, limit):
    """Mask of candidate rows of smallest priority whose errors sum to at most ``limit``.

    Whole octaves are taken from the small end while the summed error ``(M,)`` stays within
    ``limit`` in every component, then a prefix (index order) of the next octave.  Used to
    finish (PAGANI) or retire (cubature) regions whose errors cannot matter.
    """
    b = jnp.where(candidates, octaves(p), N_OCTAVES)
    per_octave = jax.ops.segment_sum(error, b, num_segments=N_OCTAVES + 1)[:N_OCTAVES]
    from_small = jnp.cumsum(per_octave[::-1], axis=0)[::-1]      # octaves >= j
    ok = jnp.all(from_small <= limit[None, :], axis=1)
    j = jnp.where(jnp.any(ok), jnp.argmax(ok), N_OCTAVES)        # first whole octave taken
    taken = jnp.where(j < N_OCTAVES, from_small[jnp.minimum(j, N_OCTAVES - 1)], 0)
    edge = b == j - 1
    running = jnp.cumsum(jnp.where(edge[:, None], error, 0), axis=0)
    partial = edge & jnp.all(running <= (limit - taken)[None, :], axis=1)
    return ((b >= j) & (b < N_OCTAVES)) | partial


def requested_tolerance(total_value, rtol: float, atol: float, n) -> float:
    """The smallest ``max(atol, rtol·|value|)`` over the user's components (for statuses)."""
    mag = np.abs(np.atleast_1d(n.unpack(np.asarray(total_value))))
    return float(np.min(np.maximum(atol, rtol * mag)))


# ---------------------------------------------------------------------------------------
# Compilation ahead of need

# Buffers from this many rows on compile the next size's steps in the background: a run of
# that size computes for longer than the compilation takes, while below it a compilation
# that may never be used would only compete with the run for the CPU.
COMPILE_AHEAD_FROM = 32768


def ahead_workers() -> int:
    """Threads that compile ahead of need: one per four cores of the host, at most four, at
    least one.  XLA compiles one kernel on one core for a GPU, so kernels compiled side by
    side take a fraction of their serial time (four step kernels of the cubature engine on an
    H100's 16-core host: 3.1 s against 6.6 s one after the other)."""
    return max(1, min(4, (os.cpu_count() or 1) // 4))


def ahead_enabled(option: bool | None) -> bool:
    """An engine's option ``compile_ahead``: None (the default) means on an accelerator,
    whose host has cores to spare while the device computes; not on a CPU, where a
    compilation competes with the run for the cores (XLA already compiles one kernel on all
    of them)."""
    return jax.default_backend() != "cpu" if option is None else bool(option)


def compile_for(fn, args) -> None:
    """Compile the jitted ``fn`` for ``args``' shapes without running it: the executable
    lands in the caches that a call with such arguments uses."""
    fn.lower(*args).compile()


class CompileAhead:
    """Worker threads that compile what a run is expected to need next.

    :meth:`submit` queues ``work()`` (a compilation) under a key (once per key); :meth:`wait`
    blocks until the work under a key is done, so that the run does not compile the same code
    a second time next to a worker, and adds the time it waited to :attr:`waited`.  Up to
    ``workers`` (default :func:`ahead_workers`) compilations run at once, in the order they
    were submitted, except that work submitted with ``later=True`` (what a run needs only if
    it grows) waits behind all other queued work.  A failed compilation is dropped: the run's
    own call compiles again and reports the error.  At interpreter exit the queued work is
    dropped and the running compilations finished.
    """

    def __init__(self, size: int = 64, workers: int | None = None):
        self._size = size
        self._workers = workers
        self._done: collections.OrderedDict = collections.OrderedDict()
        self._queue: queue.PriorityQueue = queue.PriorityQueue()
        self._order = itertools.count()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.waited = 0.0

    def submit(self, key, work: Callable[[], Any], later: bool = False) -> None:
        # compiled for the caller's default device (part of JAX's cache key): a share of a
        # scan pins its thread to one device (loopint.parallel)
        device = jax.config.jax_default_device
        with self._lock:
            if key in self._done:
                return
            done = threading.Event()
            self._done[key] = done
            while len(self._done) > self._size:
                self._done.popitem(last=False)
            self._queue.put((int(later), next(self._order), (done, work, device)))
            workers = self._workers or ahead_workers()
            if len(self._threads) < workers:
                if not self._threads:
                    atexit.register(self.close)
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"loopint-compile-{len(self._threads)}")
                self._threads.append(thread)
                thread.start()

    def _work(self) -> None:
        while (item := self._queue.get()[2]) is not None:
            done, work, device = item
            try:
                with jax.default_device(device):
                    work()
            except Exception:        # noqa: BLE001 - the run's own call reports it
                pass
            finally:
                done.set()

    def wait(self, key) -> None:
        done = self._done.get(key)
        if done is not None and not done.is_set():
            t0 = time.perf_counter()
            done.wait()
            self.waited += time.perf_counter() - t0

    def join(self) -> None:
        """Wait until all submitted work is done."""
        for done in list(self._done.values()):
            done.wait()

    def close(self) -> None:
        """Drop the queued work, finish the running compilations, stop the threads."""
        with self._lock:
            threads, self._threads = self._threads, []
        if not threads:
            return
        while True:
            try:
                item = self._queue.get_nowait()[2]
            except queue.Empty:
                break
            if item is not None:
                item[0].set()
        for _ in threads:
            self._queue.put((0, next(self._order), None))
        for thread in threads:
            thread.join()


AHEAD = CompileAhead()


# ---------------------------------------------------------------------------------------
# Memory bounds

# Device bytes per region held, in units of a region's row (centres and half-widths of d
# coordinates, values and errors of M components, a split axis): the largest step, the
# insertion of the children, holds 4.2 rows per region at its peak (its arguments, results and
# temporaries, XLA's memory analysis of the compiled step for d = 3..8, M = 1..2), and a run
# keeps its chunk of integrand points besides (:data:`BYTES_PER_POINT`); twice that peak
# leaves room for the rest of the run.
REGION_ROWS = 8


def bytes_per_region(ndim: int, n_components: int) -> int:
    """Device bytes held per region of a run in ``ndim`` dimensions with ``n_components``
    real components: :data:`REGION_ROWS` rows of ``2·ndim + 2·n_components`` float64 numbers
    and an int32 axis."""
    return REGION_ROWS * (8 * (2 * ndim + 2 * n_components) + 4)


# Bytes per point of one integrand call: its float64 coordinates and values (d + M <= 8).
BYTES_PER_POINT = 64
CHUNK_POINTS = 2**21      # most integrand points per call when the memory is not limited
# On an accelerator, the buffers whose chunks CHUNK_POINTS bounds are evaluated in chunks of up
# to this many points where the device memory holds them (RegionProblem.wide_points): each
# chunk costs the host three dispatches, about 0.4 ms on an H200, against 0.36 ms of
# integrand work for 2^24 points of Genz's f7 in 8-D.  Warm runs of seed 001's targets at
# rtol 1e-9 on an H200, same evaluations and values: f4 5-D by cubature 1.5-1.8 s with 2^21
# points per call, 0.57 s with 2^23, 0.38-0.41 s with 2^25; f6 6-D by PAGANI 4.8-5.1 s,
# 1.3-1.4 s, 1.2 s; f7 8-D by PAGANI 10.0-10.6 s, 2.6 s, 1.15 s.
ACCELERATOR_CHUNK_POINTS = 2**25
# Share of the device memory one such call may hold, at the bytes per point that XLA's memory
# analysis gives for the compiled evaluation (RegionProblem.point_bytes): the region store's
# bound (bytes_per_region) leaves about half of the memory to the rest of the run.
CHUNK_MEMORY_SHARE = 1 / 8
# Wide chunks only for integrands whose compiled evaluation needs at most this many bytes per
# point (XLA's memory analysis, RegionProblem.point_bytes), a stand-in for cheap points, whose
# narrow chunks take the device about as long as their dispatch: 9-70 bytes for Genz's
# functions, which the wide chunks made 3-9 times faster (above).  An integrand of costly points
# gains nothing and can lose: the two-loop ladder's vector of four regulated terms (278-291
# bytes a point) took 5.2-5.3 s per four terms of 10^9 evaluations (terms 13-20) with chunks
# of 2^25 points against 3.5-4.0 s with 2^21, and compiled the wide kernel (4.5 s) on its own
# path (one H200, one lease, python -m loopint.bench.delta_compiles --rtol 1e-5 with
# ACCELERATOR_CHUNK_POINTS set to either).
WIDE_MAX_POINT_BYTES = 128
# On a CPU every buffer beyond the first size is evaluated chunk by chunk from the host, in
# chunks of at most this many points: one compiled integrand kernel serves every larger
# buffer (each size would otherwise compile its own, 0.6-0.8 s for the pentagon's deformed
# contour on a 2-core CPU), and a chunk's points stay in the caches (the Euclidean elliptic
# box to rtol 1e-8, 2.5e7 evaluations: 4.8 s against 9.0 s in chunks of up to 2^21 points).
# Smaller chunks cost the host's calls per chunk (tens of microseconds): with 2^16 points
# Genz's Gaussian in 5-D, about 20 flops a point, ran 30 % slower, with 2^17 about 10 %.
CPU_CHUNK_POINTS = 2**17


@dataclasses.dataclass(frozen=True)
class MemoryBounds:
    """What ``memory_limit`` allows: regions held at once, integrand points per call, and,
    on a CPU (``host_chunk_points``, else None), the points per call of every buffer beyond
    the first size, which is evaluated chunk by chunk (:data:`CPU_CHUNK_POINTS`); on an
    accelerator without ``memory_limit`` (``wide_points``, else None), the most points per
    call where the device memory holds them (:meth:`RegionProblem.wide_points`)."""

    max_regions: int
    chunk_points: int
    host_chunk_points: int | None = None
    wide_points: int | None = None


def memory_bounds(memory_limit: int | None, default_regions: Callable[[int], int],
                  region_bytes: int, cpu: bool = False,
                  accelerator: bool = False) -> MemoryBounds:
    """The bounds for ``memory_limit`` bytes: ``memory_limit // region_bytes`` regions
    (:func:`bytes_per_region`) and ``memory_limit //`` :data:`BYTES_PER_POINT` points per call
    (at most :data:`CHUNK_POINTS`); ``None``: the engine's ``default_regions(region_bytes)``
    and :data:`CHUNK_POINTS`, on an accelerator up to :data:`ACCELERATOR_CHUNK_POINTS` for
    large buffers (``accelerator``).  ``cpu``: beyond the first buffer size, chunks of at most
    :data:`CPU_CHUNK_POINTS` points."""
    if memory_limit is None:
        regions, points = int(default_regions(region_bytes)), CHUNK_POINTS
        if accelerator:
            return MemoryBounds(regions, points, None, ACCELERATOR_CHUNK_POINTS)
    else:
        limit = int(memory_limit)
        if limit < 2 * region_bytes:
            raise ValueError(f"memory_limit must hold at least 2 regions "
                             f"({2 * region_bytes} bytes), got {memory_limit}")
        regions, points = limit // region_bytes, min(CHUNK_POINTS, limit // BYTES_PER_POINT)
    return MemoryBounds(regions, points, min(points, CPU_CHUNK_POINTS) if cpu else None)


# ---------------------------------------------------------------------------------------
# A run: its fixed data, its counters, its result


_POINT_BYTES: collections.OrderedDict = collections.OrderedDict()   # the last 64 measured
_POINT_BYTES_LOCK = threading.Lock()


def _kernel_key(problem: "RegionProblem", rule: str) -> tuple:
    """What a run's evaluation kernel depends on, for :meth:`RegionProblem.point_bytes`."""
    k = problem.kernel
    return (k["f"].signature(), problem.ndim, k["dtype_name"], problem.integrand.n_components,
            rule, k["devices"], jax.config.jax_default_device)


@dataclasses.dataclass(frozen=True)
class RegionProblem:
    """What a run of a region engine fixes before its loop.

    Attributes:
        lower, upper: the box, float64 arrays of shape ``(ndim,)``.
        integrand: the user integrand as ``M`` real components.
        rule: the rule's name (a key of :data:`~loopint.engines.rules.genz_malik.RULES`).
        points_per_region: points of that rule.
        precision: ``"float64"`` or ``"float32"``; ``dtype`` the real dtype.
        memory: the bounds from ``memory_limit``.
        kernel: the static arguments of :func:`evaluate_buffer` but the rule (the integrand
            as a :class:`~loopint.engines.base.BoundIntegrand`, dimension, dtype name, local
            devices the chunks are sharded over).
        step: the factor between buffer sizes (:func:`capacity_step`).
        first: the first buffer size (:func:`min_capacity`).
    """

    lower: np.ndarray
    upper: np.ndarray
    integrand: base.NormalizedIntegrand
    rule: str
    points_per_region: int
    precision: str
    dtype: Any
    memory: MemoryBounds
    kernel: dict
    step: int = CAPACITY_STEP
    first: int = MIN_CAPACITY

    @property
    def ndim(self) -> int:
        return int(self.lower.size)

    @property
    def max_regions(self) -> int:
        return self.memory.max_regions

    @property
    def top_capacity(self) -> int:
        """The largest buffer: on the ladder, and no larger than needed for ``max_regions``."""
        return min(capacity_for(self.max_regions, self.step, self.first),
                   pow2_ceil(self.max_regions))

    def capacity(self, n_regions: int) -> int:
        """The buffer size for ``n_regions`` regions (:func:`capacity_for`, at most
        :attr:`top_capacity`)."""
        return min(capacity_for(n_regions, self.step, self.first), self.top_capacity)

    def chunk(self, capacity: int, rule: str | None = None) -> int:
        """Regions per integrand call for a buffer of ``capacity`` rows (:func:`chunk_for`);
        on a CPU, beyond the first size, one chunk for every size (:meth:`by_host`)."""
        rule = rule or self.rule
        npts = make_rule(rule, self.ndim).n_points
        if self.by_host(capacity):
            # at most the second size's rows: every buffer evaluated by the host holds a
            # whole number of chunks
            k = _pow2_floor(max(1, self.memory.host_chunk_points // npts))
            return min(k, self.first * self.step)
        return chunk_for(capacity, npts, self.memory.chunk_points)

    def spec(self, *shape: int, dtype=None) -> jax.ShapeDtypeStruct:
        """An abstract array of ``shape`` (default dtype: the run's real dtype), to compile
        for without data."""
        return jax.ShapeDtypeStruct(shape, self.dtype if dtype is None else dtype)

    def wide_chunk(self, capacity: int, count: int, rule: str | None = None) -> int:
        """Regions per integrand call for the full chunks of ``count`` live rows of a buffer
        evaluated by the host on an accelerator: :meth:`wide_points` of them, a multiple of
        :meth:`chunk`, at most the buffer; :meth:`chunk` elsewhere, and where the live rows
        do not fill the widest chunk (:attr:`MemoryBounds.wide_points`), so that runs which
        never get there neither measure the memory nor compile the wide kernel."""
        rule = rule or self.rule
        chunk = self.chunk(capacity, rule)
        if not self.memory.wide_points or self.by_host(capacity) \
                or capacity <= CHUNKS_PER_CALL * chunk:
            return chunk
        npts = make_rule(rule, self.ndim).n_points
        if count < min(capacity, _pow2_floor(max(1, self.memory.wide_points // npts))):
            return chunk
        wide = _pow2_floor(max(1, self.wide_points(rule, chunk) // npts))
        return max(chunk, min(capacity, wide))

    def wide_points(self, rule: str, chunk: int) -> int:
        """Points per call of :meth:`wide_chunk`: as many as :data:`CHUNK_MEMORY_SHARE` of the
        device memory holds at :meth:`point_bytes` each (measured on the kernel of ``chunk``
        regions), between ``chunk_points`` and :attr:`MemoryBounds.wide_points`;
        ``chunk_points`` for an integrand of more than :data:`WIDE_MAX_POINT_BYTES` a point."""
        narrow, wide = self.memory.chunk_points, self.memory.wide_points
        per_point = self.point_bytes(rule, chunk)
        limit = base.device_memory_limit()
        if not wide or per_point is None or limit <= 0 or per_point > WIDE_MAX_POINT_BYTES:
            return narrow
        fits = _pow2_floor(max(1, int(limit * CHUNK_MEMORY_SHARE / per_point)))
        return max(narrow, min(wide, fits))

    def point_bytes(self, rule: str, chunk: int) -> float | None:
        """Device bytes per integrand point of the evaluation with ``rule``: XLA's memory
        analysis (arguments, outputs, temporaries) of the kernel that evaluates ``chunk``
        regions (:func:`evaluate_chunk`, the one the host's loop calls anyway), over its
        points; None where the backend gives none.  Kept per integrand, shapes and rule for
        the process."""
        key = _kernel_key(self, rule)
        with _POINT_BYTES_LOCK:
            if key in _POINT_BYTES:
                return _POINT_BYTES[key]
        m, spec = self.integrand.n_components, self.spec

        part = spec(chunk, self.ndim)
        try:
            stats = evaluate_chunk.lower(part, part, spec(dtype=jnp.int32), spec(m), rule=rule,
                                         **self.kernel).compile().memory_analysis()
            total = (stats.temp_size_in_bytes + stats.output_size_in_bytes
                     + stats.argument_size_in_bytes)
            per_point = total / (chunk * make_rule(rule, self.ndim).n_points)
        except Exception as e:    # noqa: BLE001 - backends without a memory analysis
            log.info("no memory analysis of the %s evaluation (%r): chunks of at most %d "
                     "points", rule, e, self.memory.chunk_points)
            per_point = None
        if per_point is not None and not per_point > 0:
            per_point = None
        with _POINT_BYTES_LOCK:
            _POINT_BYTES[key] = per_point
            while len(_POINT_BYTES) > 64:
                _POINT_BYTES.popitem(last=False)
        return per_point

    def by_host(self, capacity: int) -> bool:
        """Whether a buffer of ``capacity`` rows is evaluated chunk by chunk from the host
        with the chunk of every larger size: on a CPU beyond the first size
        (:data:`CPU_CHUNK_POINTS`)."""
        return self.memory.host_chunk_points is not None and capacity > self.first

    def evaluate(self, centers, halfwidths, count: int, weights, capacity: int,
                 rule: str | None = None) -> RegionEstimates:
        """The rule (this run's, or ``rule``) on rows ``[0, count)`` of a buffer of
        ``capacity`` rows, in chunks (:meth:`chunk`): up to :data:`CHUNKS_PER_CALL` chunks in
        one call of :func:`evaluate_buffer`, more (and on a CPU every buffer beyond the first size,
        :meth:`by_host`) chunk by chunk (:func:`evaluate_chunk`), in chunks of
        :meth:`wide_chunk` while the live rows fill them, with the same arithmetic per region.
        Rows ``>= count`` of the outputs are zero."""
        rule = rule or self.rule
        chunk = self.chunk(capacity, rule)
        if capacity <= CHUNKS_PER_CALL * chunk and not self.by_host(capacity):
            return evaluate_buffer(centers, halfwidths, np.int32(count), weights, chunk=chunk,
                                   rule=rule, **self.kernel)
        out = _no_estimates(rows=capacity, n_components=self.integrand.n_components,
                            dtype_name=self.kernel["dtype_name"])
        # several virtual CPU devices run each call's collectives on one shared thread pool:
        # with many sharded calls in flight a call's participants can wait on each other past
        # XLA's rendezvous timeout (40 s, the process aborts) on a loaded CPU, so there each
        # chunk completes before the next is dispatched
        one_at_a_time = self.kernel["devices"] > 1 and jax.default_backend() == "cpu"
        # full wide chunks while the live rows fill them, then chunks of the narrow size:
        # rows past the live count are evaluated too, at most one narrow chunk of them
        # every chunk starts inside the buffer: dynamic slices clamp a start that does not
        assert capacity % chunk == 0, (capacity, chunk)
        wide, start = self.wide_chunk(capacity, int(count), rule), 0
        while start < count:
            size = wide if count - start >= wide else chunk
            c, h = _take_chunk(centers, halfwidths, np.int32(start), chunk=size)
            est = evaluate_chunk(c, h, np.int32(count - start), weights, rule=rule,
                                 **self.kernel)
            out = _put_chunk(out, est, np.int32(start))
            if one_at_a_time:
                jax.block_until_ready(out)
            start += size
        return out

    def compile_evaluate(self, capacity: int, rule: str | None = None) -> None:
        """Compile :meth:`evaluate` for a buffer of ``capacity`` rows without running it:
        the compiled code lands in the caches that a call with these shapes uses.  Not the
        kernel of :meth:`wide_chunk`, which only runs whose live rows fill a wide chunk need
        and which they compile when they first do."""
        rule = rule or self.rule
        chunk = self.chunk(capacity, rule)
        m, spec = self.integrand.n_components, self.spec
        rows, weights, count = spec(capacity, self.ndim), spec(m), spec(dtype=jnp.int32)
        if capacity <= CHUNKS_PER_CALL * chunk and not self.by_host(capacity):
            evaluate_buffer.lower(rows, rows, count, weights, rule=rule, chunk=chunk,
                                  **self.kernel).compile()
            return
        part = spec(chunk, self.ndim)
        estimates = RegionEstimates(spec(capacity, m), spec(capacity, m),
                                    spec(capacity, dtype=jnp.int32), count)
        chunk_estimates = RegionEstimates(spec(chunk, m), spec(chunk, m),
                                          spec(chunk, dtype=jnp.int32), count)
        _no_estimates.lower(rows=capacity, n_components=m,
                            dtype_name=self.kernel["dtype_name"]).compile()
        _take_chunk.lower(rows, rows, count, chunk=chunk).compile()
        evaluate_chunk.lower(part, part, count, weights, rule=rule, **self.kernel).compile()
        _put_chunk.lower(estimates, chunk_estimates, count).compile()

    def initial_grid(self, divisions: int, max_evals: int):
        """The uniform grid of ``divisions^d`` regions in a padded device buffer.

        Returns ``((centers, halfwidths), count, capacity)``; raises ``ValueError`` when the
        grid exceeds ``max_regions`` or one rule application on it exceeds ``max_evals``.
        """
        centers, halfwidths = uniform_grid(self.lower, self.upper, int(divisions))
        count = centers.shape[0]
        if count > self.max_regions:
            raise ValueError(f"initial_divisions={divisions} gives {count} regions, more than "
                             f"memory_limit holds ({self.max_regions} regions)")
        if count * self.points_per_region > max_evals:
            raise base.BudgetError(f"max_evals={max_evals} is below one rule application on the "
                                   f"{count} initial region(s) ({count * self.points_per_region} "
                                   "points)")
        cap = self.capacity(max(count, 2))
        buffers = (jnp.asarray(pad_rows(centers, cap), self.dtype),
                   jnp.asarray(pad_rows(halfwidths, cap), self.dtype))
        return buffers, count, cap

    def requested(self, total_value, rtol: float, atol: float) -> float:
        """The smallest requested tolerance over the user's components (for statuses)."""
        return requested_tolerance(total_value, rtol, atol, self.integrand)

    def met(self, total_value, total_error, rtol: float, atol: float) -> bool:
        """Whether the totals meet the tolerance in every user component."""
        return base.real_tolerance_met(total_value, total_error, rtol, atol, self.integrand)

    def excess(self, total_value, total_error, rtol: float, atol: float) -> float:
        """The largest error over its tolerance among the user components (<= 1: met)."""
        return base.real_tolerance_excess(total_value, total_error, rtol, atol, self.integrand)


def prepare(f: Callable, lower, upper, *, rtol: float, atol: float, max_evals: int,
            precision: str, rule: str, memory_limit: int | None,
            default_regions: Callable[[int], int], devices: int | None = 1) -> RegionProblem:
    """Validate a run's arguments and fix what its loop needs (:class:`RegionProblem`).

    ``default_regions``: the engine's region bound when ``memory_limit`` is None, a
    function of the bytes per region (:func:`bytes_per_region`);
    ``devices``: devices to shard the chunks over (None: all local ones;
    :func:`~loopint.engines.sharding.pow2_count`).
    """
    base.check_tolerances(rtol, atol, max_evals)
    ndim = max(np.size(lower), np.size(upper))
    lo, hi = base.box(lower, upper, ndim)
    dtype = real_dtype(precision)
    ndev = sharding.pow2_count(devices)
    # chunks from the host on one CPU device: several virtual CPU devices run each call's
    # collectives on a shared thread pool, which many small calls in flight can starve
    cpu = jax.default_backend() == "cpu"
    integrand = base.normalize_integrand(f, ndim, dtype)
    # wide chunks are sized by the local device's memory: not for a program over several
    # processes, which must all make the same calls
    memory = memory_bounds(memory_limit, default_regions,
                           bytes_per_region(ndim, integrand.n_components), cpu=cpu and ndev == 1,
                           accelerator=not cpu and devices != "global")
    npts = make_rule(rule, ndim).n_points
    kernel = dict(f=base.BoundIntegrand.of(f), ndim=ndim, dtype_name=jnp.dtype(dtype).name,
                  devices=ndev)
    return RegionProblem(lower=lo, upper=hi, integrand=integrand, rule=rule,
                         points_per_region=npts, precision=precision, dtype=dtype,
                         memory=memory, kernel=kernel, step=capacity_step(cpu),
                         first=min_capacity(cpu))


@dataclasses.dataclass
class Progress:
    """The host loop's counters: live regions, buffer rows, integrand points, steps, and
    non-finite values seen."""

    regions: int
    capacity: int
    evaluations: int = 0
    iterations: int = 0
    nonfinite: int = 0

    def not_converged(self, kind: str, total_error, requested: float) -> str:
        """The status of a run stopped by ``kind`` (max_evals, max_iterations)."""
        return base.status_not_converged(kind, self.evaluations, total_error, requested)


def region_result(problem: RegionProblem, progress: Progress, *, method: str, stop: str,
                  total_value, total_error, t0: float, info: dict) -> base.IntegrationResult:
    """The :class:`~loopint.engines.base.IntegrationResult` of a run that ended with
    ``stop``, with the totals as the user's values; ``info`` has ``regions``,
    ``iterations``, ``nonfinite``, ``capacity``, ``points_per_region``, ``ndim``,
    ``precision``, ``rule``, ``devices`` and the engine's own entries ``info``."""
    converged, status = base.final_status(stop, progress.nonfinite)
    n = problem.integrand
    return base.IntegrationResult(
        value=n.unpack(total_value), error=base.complex_error(total_error, n),
        converged=converged, status=status, evaluations=int(progress.evaluations),
        seconds=time.perf_counter() - t0, method=method,
        info={"regions": int(progress.regions), "iterations": progress.iterations,
              "nonfinite": progress.nonfinite, "capacity": progress.capacity,
              "points_per_region": problem.points_per_region, "ndim": problem.ndim,
              "precision": problem.precision, "rule": problem.rule,
              "devices": problem.kernel["devices"], **info})
