"""Monte Carlo integration over a box: counter-based RNG, antithetic variates, chunked sums.

Estimator (seed 000, chapter 2, eqs. 2.1 and 2.5).  With ``n`` samples ``u_i`` uniform on the
unit cube, mapped to the box by ``x = a + (b - a) u`` (volume ``V = prod (b - a)``),

    Q f = V (1/n) sum_i g_i,      g_i = f(x_i)                   (plain)
                                  g_i = (f(x_i) + f(x_i*)) / 2   (antithetic, x_i* from 1 - u_i)

and the error estimate is the standard error of eq. 2.6 with ``lambda = 1`` (one sigma):

    E = V sqrt( (sum g_i^2 - n gbar^2) / ((n - 1) n) ),

i.e. for antithetic variates the sample variance of the *pair means* over the number of pairs.
An antithetic pair costs two evaluations: it helps when ``f(u)`` and ``f(1-u)`` are negatively
correlated (monotone integrands) and halves the efficiency when ``f(u) = f(1-u)`` (e.g. the
tetrahedron-picking integrands); ``antithetic=False`` turns it off.

Sums.  Samples are processed in chunks (their size set by the ``memory_limit`` option,
:func:`loopint.engines.sampling.chunk_evaluations`) inside one jitted ``lax.fori_loop``, so
memory is constant however large ``N`` is (seed 000 section 2.4: "chunking").  Each chunk
contributes its float64 sums ``sum (g - K)`` and ``sum (g - K)^2`` (``K`` = mean of the first
``PILOT_BLOCKS`` stream blocks, computed before the loop: a fixed shift that removes the
cancellation in ``sum g^2 - n gbar^2`` without changing the estimator, and leaves the loop
body one pass that XLA fuses); the chunk sums are accumulated with Neumaier's compensated
summation (the improved Kahan summation seed 000 uses as its round-off guard), so the
accumulated round-off stays ``O(eps)`` for any number of chunks.  Integrand values are
computed in ``precision`` (float64, or float32 opt-in) and always summed in float64.

Random numbers.  Every sample has a global index ``s = 0, 1, 2, ...``; samples are addressed
in stream blocks of ``BLOCK`` = 1024, and the uniforms of sample ``s`` are a pure function of
``(seed, s)``:

- ``"threefry"``: Threefry-2x32-20, the counter-based generator of Salmon, Moraes,
  Dror & Shaw, "Parallel random numbers: as easy as 1, 2, 3" (SC'11), through JAX's own hash
  (``jax.extend.random.threefry2x32_p``, the primitive under ``jax.random``), keyed with the
  seed's key: the two words of coordinate group ``g`` of sample ``s`` are
  ``H_key(s mod 2^32, floor(s / 2^32) G + g)`` with ``G`` groups per sample (float64: one
  coordinate per group, its two words are the 64 bits; float32: two coordinates per group);
- ``"philox"`` (default): Philox-4x32-10 of the same paper (the generator seed 000 uses
  through Random123, and cuRAND's default), written here in ``uint32`` JAX ops: counter
  ``(s mod 2^32, floor(s / 2^32), g, 0)`` for coordinate group ``g`` of sample ``s`` (two
  float64 or four float32 coordinates per group), key = the two 32-bit halves of the seed.
  Checked against Random123's known-answer vectors.  The default because it is the fastest
  of the two hashes on a GPU (fewer integer operations per word than Threefry-2x32-20);
- ``"lcg"``: the 64-bit linear congruential generator of seed 002,
  ``x_(k+1) = a x_k + c mod 2^64`` with Knuth's MMIX constants ``a = 6364136223846793005``,
  ``c = 1442695040888963407``; coordinate ``j`` of sample ``s`` is ``x_(s d + j + 1)``, the
  consecutive stream.  Block starts are reached by jump-ahead (``x_(k+m) = A_m x_k + C_m``,
  ``A_m = a^m``, ``C_m = c (a^m - 1)/(a - 1)``, composed by binary powering), and within a
  block by seed 002's vectorized form ``x_(start+e) = A_e x_start + C_e`` with a precomputed
  table ``(A_e, C_e)``.  Kept for comparison with seed 002: the low bits of a power-of-two LCG
  are weak and consecutive d-tuples lie on hyperplanes; prefer the counter-based generators.

For the counter-based generators each sample's words come from its own counters, so the
generator is elementwise in the sample index: XLA fuses it with the integrand and the
reduction, and the uniforms never pass through device memory.

64 (float64) or 32 (float32) random bits become ``u = (floor(bits / 2^12) + 1/2) 2^-52``
(float32: ``(floor(bits / 2^9) + 1/2) 2^-23``), so ``u`` and ``1 - u`` are both exact and lie
strictly inside (0, 1): integrands singular on the faces of the cube are never evaluated there.

Because points depend on the global sample index only, two runs that end at the same number
of samples (chunk sizes that divide ``n_start`` and the step targets the same way) differ only
through the order of the float64 summation and the shift ``K``: round-off, ~1e-16 relative.
(A chunk is rounded down to whole blocks, and evaluations are made in whole chunks.)
The meta-algorithm's later steps continue the stream at new indices and never reuse a random
number; the same ``seed`` gives bit-identical results on the same device and software.
With several devices the blocks of each chunk are sharded over them
(``jax.sharding.NamedSharding`` on the block axis) and the per-chunk sums are reduced across
devices by XLA; the points, hence the estimate up to round-off, are those of one device.

Automatic integration (seed 000 section 2.4.3, Fig. 2.3): start with ``n_start`` evaluations;
while the error exceeds ``max(atol, rtol |I|)`` and the budget allows, grow the total by a
factor between 1.5 and ``growth`` (the factor ``1.1 (E / tol)^2`` that the 1/sqrt(N) law
predicts, clipped to that range), keeping all previous samples.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time
from typing import Callable, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.random import threefry2x32_p

from ..precision import real_dtype
from . import base, sampling, sharding

log = logging.getLogger(__name__)

BLOCK = 1024
"""Samples per stream block: the unit in which random numbers are addressed."""

PILOT_BLOCKS = 4
"""Stream blocks whose mean is the summation shift ``K`` (module docstring)."""

RNGS = ("philox", "threefry", "lcg")

# Knuth's MMIX LCG (seed 002, section 2; Knuth 1999)
LCG_A = 6364136223846793005
LCG_C = 1442695040888963407
_M64 = (1 << 64) - 1

# Philox-4x32 constants (Salmon et al. 2011; Random123 philox.h)
_PHILOX_M0 = 0xD2511F53
_PHILOX_M1 = 0xCD9E8D57
_PHILOX_W0 = 0x9E3779B9
_PHILOX_W1 = 0xBB67AE85


# ----------------------------------------------------------------------------------------------
# Philox-4x32-10

def philox4x32(counter, key, rounds: int = 10):
    """Philox-4x32-R block function on uint32 arrays.

    ``counter``: tuple of four uint32 arrays (broadcastable), ``key``: tuple of two uint32
    scalars/arrays.  Returns four uint32 arrays.  Round: ``(hi0, lo0) = M0 * c0``,
    ``(hi1, lo1) = M1 * c2``, ``c <- (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)``; key bumped by
    the Weyl constants between rounds.
    """
    c0, c1, c2, c3 = (jnp.asarray(c, jnp.uint32) for c in counter)
    k0, k1 = (jnp.asarray(k, jnp.uint32) for k in key)
    m0 = jnp.uint64(_PHILOX_M0)
    m1 = jnp.uint64(_PHILOX_M1)
    lo_mask = jnp.uint64(0xFFFFFFFF)
    for r in range(rounds):
        if r:
            k0 = k0 + jnp.uint32(_PHILOX_W0)
            k1 = k1 + jnp.uint32(_PHILOX_W1)
        p0 = m0 * c0.astype(jnp.uint64)
        p1 = m1 * c2.astype(jnp.uint64)
        hi0 = (p0 >> 32).astype(jnp.uint32)
        lo0 = (p0 & lo_mask).astype(jnp.uint32)
        hi1 = (p1 >> 32).astype(jnp.uint32)
        lo1 = (p1 & lo_mask).astype(jnp.uint32)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


# ----------------------------------------------------------------------------------------------
# 64-bit LCG with jump-ahead

def lcg_jump(m: int, a: int = LCG_A, c: int = LCG_C) -> tuple[int, int]:
    """``(A_m, C_m)`` with ``x_(k+m) = A_m x_k + C_m mod 2^64`` (binary powering, exact ints)."""
    acc_a, acc_c = 1, 0
    base_a, base_c = a, c
    while m:
        if m & 1:
            acc_a, acc_c = (base_a * acc_a) & _M64, (base_a * acc_c + base_c) & _M64
        base_a, base_c = (base_a * base_a) & _M64, (base_a * base_c + base_c) & _M64
        m >>= 1
    return acc_a, acc_c


def _splitmix64(x: int) -> int:
    """Seed scrambler (Steele, Lea & Flood 2014) so that nearby seeds start far apart."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


@functools.lru_cache(maxsize=32)
def _lcg_inner(d: int) -> tuple[np.ndarray, np.ndarray]:
    """``(A_e, C_e)`` for ``e = 1 .. BLOCK d``: the outputs of one block from its start state."""
    length = BLOCK * d
    ia, ic = np.empty(length, np.uint64), np.empty(length, np.uint64)
    acc_a, acc_c = 1, 0
    for e in range(length):
        acc_a, acc_c = (LCG_A * acc_a) & _M64, (LCG_A * acc_c + LCG_C) & _M64
        ia[e], ic[e] = acc_a, acc_c
    return ia, ic


@functools.lru_cache(maxsize=32)
def _lcg_block_table(d: int, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """``(A_(rL), C_(rL))`` for ``r = 0 .. nb-1``, ``L = BLOCK d``: starts of consecutive blocks."""
    ja, jc = lcg_jump(BLOCK * d)
    ta, tc = np.empty(nb, np.uint64), np.empty(nb, np.uint64)
    acc_a, acc_c = 1, 0
    for r in range(nb):
        ta[r], tc[r] = acc_a, acc_c
        acc_a, acc_c = (ja * acc_a) & _M64, (ja * acc_c + jc) & _M64
    return ta, tc


def _lcg_state_words(x0: int, block: int, d: int) -> np.ndarray:
    """The LCG state at the start of stream block ``block`` as two uint32 words."""
    a, c = lcg_jump(block * BLOCK * d)
    x = (a * x0 + c) & _M64
    return np.array([x >> 32, x & 0xFFFFFFFF], dtype=np.uint32)


# ----------------------------------------------------------------------------------------------
# uniforms of stream blocks

def _unit_from_bits(bits, dtype):
    """Map random bits to the symmetric open grid ``(k + 1/2) 2^-p`` (see module docstring)."""
    if dtype == jnp.float64:
        return ((bits >> 12).astype(jnp.float64) + 0.5) * 2.0**-52
    return ((bits >> 9).astype(jnp.float32) + jnp.float32(0.5)) * jnp.float32(2.0**-23)


def sample_columns(rng: str, key_data, first_block, nblocks: int, d: int, dtype) -> list:
    """The uniforms of the ``nblocks`` stream blocks from ``first_block`` on, as ``d`` flat
    columns ``[nblocks * BLOCK]`` (sample-major).

    Threefry and Philox are elementwise in the global sample index ``s`` (one iota, no
    gathers, no rank changes), and consumers stack the columns right before the integrand,
    whose column slices XLA resolves to these arrays: generator, integrand and sums become one
    kernel and the uniforms never pass through device memory.

    ``key_data``: uint32[2] derived from the seed (:func:`seed_key_data`), or for ``"lcg"`` the
    generator state at the start of ``first_block``; ``first_block``: int64 scalar (traced).
    """
    n = nblocks * BLOCK
    wide = dtype == jnp.float64
    if rng in ("threefry", "philox"):
        per = (1 if rng == "threefry" else 2) if wide else (2 if rng == "threefry" else 4)
        groups = -(-d // per)                              # hash calls per sample
        s = jnp.asarray(first_block, jnp.int64) * BLOCK + jnp.arange(n, dtype=jnp.int64)
        s_lo = (s & 0xFFFFFFFF).astype(jnp.uint32)
        s_hi = (s >> 32).astype(jnp.uint32)
        words = []
        for g in range(groups):
            if rng == "threefry":
                # counter (s_lo, s_hi G + g): unique while s < 2^64 / G
                x1 = s_hi * jnp.uint32(groups) + jnp.uint32(g)
                words += list(threefry2x32_p.bind(key_data[0], key_data[1], s_lo, x1))
            else:
                gg = jnp.full((n,), g, jnp.uint32)
                words += list(philox4x32((s_lo, s_hi, gg, jnp.zeros_like(gg)),
                                         (key_data[0], key_data[1])))
        if wide:
            words = [(words[2 * k].astype(jnp.uint64) << 32) | words[2 * k + 1].astype(jnp.uint64)
                     for k in range(len(words) // 2)]
        return [_unit_from_bits(w, dtype) for w in words[:d]]
    if rng == "lcg":
        # key_data holds the LCG state at the start of first_block (_lcg_state_words); block r
        # of the batch starts at A_(rL) x + C_(rL) (L = BLOCK d)
        ia, ic = _lcg_inner(d)
        ta, tc = _lcg_block_table(d, nblocks)
        x0 = (key_data[0].astype(jnp.uint64) << 32) | key_data[1].astype(jnp.uint64)
        start = jnp.asarray(ta) * x0 + jnp.asarray(tc)
        x = jnp.asarray(ia)[None, :] * start[:, None] + jnp.asarray(ic)[None, :]
        if not wide:
            x = (x >> 32).astype(jnp.uint32)
        u = _unit_from_bits(x.reshape(n, d), dtype)
        return [u[:, k] for k in range(d)]
    raise ValueError(f"rng must be one of {RNGS}, got {rng!r}")


def seed_key_data(seed: int, rng: str) -> np.ndarray:
    """The two uint32 words the generators are keyed with, derived from the integer seed."""
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    if rng == "lcg":
        x0 = _splitmix64(seed & _M64)
        return np.array([x0 >> 32, x0 & 0xFFFFFFFF], dtype=np.uint32)
    if rng == "threefry":
        return np.asarray(jax.random.key_data(jax.random.key(seed & _M64, impl="threefry2x32")),
                          dtype=np.uint32)
    return np.array([(seed >> 32) & 0xFFFFFFFF, seed & 0xFFFFFFFF], dtype=np.uint32)


def uniforms(first_sample: int, n_samples: int, ndim: int, *, seed: int = 0,
             rng: str = "philox", precision: str = "float64") -> np.ndarray:
    """The base uniforms ``u`` of samples ``first_sample .. first_sample + n_samples - 1``.

    Exactly the numbers :class:`MonteCarlo` uses (before the antithetic reflection); both
    arguments must be multiples of :data:`BLOCK`.  For tests and diagnostics.
    """
    if first_sample % BLOCK or n_samples % BLOCK:
        raise ValueError(f"first_sample and n_samples must be multiples of {BLOCK}")
    kd = seed_key_data(seed, rng)
    if rng == "lcg":
        kd = _lcg_state_words(int(kd[0]) << 32 | int(kd[1]), first_sample // BLOCK, ndim)
    u = _uniforms_jit(rng, ndim, real_dtype(precision), n_samples // BLOCK)(
        jnp.asarray(kd), jnp.int64(first_sample // BLOCK))
    return np.asarray(u)


@functools.lru_cache(maxsize=16)
def _uniforms_jit(rng: str, ndim: int, dtype, nblocks: int):
    return jax.jit(lambda kd, first: jnp.stack(
        sample_columns(rng, kd, first, nblocks, ndim, dtype), axis=1))


# ----------------------------------------------------------------------------------------------
# the compiled chunk loop

def _build_runner(f, ndim: int, precision: str, rng: str, antithetic: bool, chunk_blocks: int,
                  ndev: int):
    """The jitted chunk loop: generate, evaluate, sum (one fused kernel per chunk)."""
    dtype = real_dtype(precision)
    norm = base.normalize_integrand(f, ndim, dtype)
    m = norm.n_components
    constrain = sharding.constraint(ndev)

    def chunk(fn, key_data, lo, span, first_block, nblocks=chunk_blocks):
        cols = [constrain(c) for c in
                sample_columns(rng, key_data, first_block, nblocks, ndim, dtype)]
        lo_, span_ = lo.astype(dtype), span.astype(dtype)

        def points(cs):    # column by column, stacked last (see sample_columns)
            return jnp.stack([sampling.inside_box(lo_[k] + span_[k] * c, lo[k], span[k])
                              for k, c in enumerate(cs)], axis=1)

        y = norm.call(fn, points(cols)).astype(jnp.float64)
        ok = sampling.finite_rows(y)
        nbad = (~ok).astype(jnp.float64)          # non-finite evaluations of each sample
        if antithetic:
            y2 = norm.call(fn, points([1 - c for c in cols])).astype(jnp.float64)
            ok2 = sampling.finite_rows(y2)
            nbad = nbad + (~ok2).astype(jnp.float64)
            ok = ok & ok2
            g = 0.5 * (y + y2)
        else:
            g = y
        return g, ok, nbad

    if rng == "lcg":  # the carried key is the LCG state at the chunk start: advance it
        ja, jc = lcg_jump(chunk_blocks * BLOCK * ndim)

        def next_key(kd):
            x = (kd[0].astype(jnp.uint64) << 32) | kd[1].astype(jnp.uint64)
            x = jnp.uint64(ja) * x + jnp.uint64(jc)
            return jnp.stack([(x >> 32).astype(jnp.uint32), (x & 0xFFFFFFFF).astype(jnp.uint32)])
    else:
        def next_key(kd):
            return kd

    # the shift K is the mean of the finite samples of the first few blocks, computed before
    # the loop: the loop body is then one pass (generate, evaluate, sum), which XLA fuses into
    # one kernel; K from within the chunk would need g in memory for a second pass
    pilot_blocks = min(chunk_blocks, -(-PILOT_BLOCKS // max(ndev, 1)) * max(ndev, 1))

    def pilot_mean(fn, key_data, lo, span, first_block):
        g, ok, _ = chunk(fn, key_data, lo, span, first_block, pilot_blocks)
        return jnp.sum(jnp.where(ok[:, None], g, 0.0), axis=0) / jnp.maximum(jnp.sum(ok), 1)

    @jax.jit
    def run(fn, state, key_data, lo, span, first_block, n_chunks):
        s, cs, q, cq, k_shift, n_ok, n_bad = state
        k_shift = lax.cond(n_ok + n_bad == 0, pilot_mean, lambda *_: k_shift,
                           fn, key_data, lo, span, first_block)

        def body(i, carry):
            (s, cs, q, cq, n_ok, n_bad), kd = carry
            g, ok, nbad = chunk(fn, kd, lo, span,
                                first_block + jnp.asarray(i, jnp.int64) * chunk_blocks)
            dg = jnp.where(ok[:, None], g - k_shift, 0.0)
            # one variadic reduction: a single consumer, so XLA fuses the generator and the
            # integrand into it (separate sums would each read the values from memory); a
            # variadic reduce takes operands of one shape, so the counts ride along per
            # component
            s1, s2, cnt, bad = lax.reduce(
                (dg, dg * dg, jnp.broadcast_to(ok[:, None], dg.shape).astype(jnp.float64),
                 jnp.broadcast_to(nbad[:, None], dg.shape)), (0.0, 0.0, 0.0, 0.0),
                lambda a, b: tuple(x + y for x, y in zip(a, b)), (0,))
            cnt, bad = cnt[0], bad[0]
            s, cs = sampling.neumaier_add(s, cs, s1)
            q, cq = sampling.neumaier_add(q, cq, s2)
            return ((s, cs, q, cq, n_ok + cnt.astype(jnp.int64), n_bad + bad.astype(jnp.int64)),
                    next_key(kd))

        s, cs, q, cq, n_ok, n_bad = lax.fori_loop(
            0, n_chunks, body, ((s, cs, q, cq, n_ok, n_bad), key_data))[0]
        return s, cs, q, cq, k_shift, n_ok, n_bad

    def init():
        z = jnp.zeros((m,), jnp.float64)
        return (z, z, z, z, z, jnp.zeros((), jnp.int64), jnp.zeros((), jnp.int64))

    return norm, run, init


# the compiled loop, shared by every integrand of one signature (``run`` takes the integrand,
# a base.BoundIntegrand, as its first, traced argument)
_make_runner = base.cached_by_signature(_build_runner)


def _estimate(state, vol: float):
    """Value and standard error (eq. 2.6, lambda = 1) from the accumulated state."""
    s, cs, q, cq, k_shift, n_ok, _ = (np.asarray(a) for a in state)
    n = int(n_ok)
    if n == 0:
        nan = np.full(s.shape, np.nan)
        return nan, nan
    s_tot, q_tot = s + cs, q + cq
    mean = k_shift + s_tot / n
    if n < 2:
        return vol * mean, np.full(s.shape, np.inf)
    var = np.maximum(q_tot - s_tot * s_tot / n, 0.0) / (n - 1)
    return vol * mean, vol * np.sqrt(var / n)


@dataclasses.dataclass(frozen=True)
class MonteCarlo(base.Engine):
    """Monte Carlo estimate of ``int_box f`` with the automatic meta-algorithm of seed 000
    (module docstring).

    Options:
        seed: non-negative integer; same seed -> same random numbers.
        n_start: evaluations of the first step.  growth: largest factor between steps (> 1).
        memory_limit: bytes of device memory the engine may use for its sample chunks
            (:data:`~loopint.engines.sampling.BYTES_PER_EVALUATION` per evaluation); None:
            chunks of :data:`~loopint.engines.sampling.DEFAULT_CHUNK_EVALUATIONS` evaluations
            on any device.  A chunk is rounded down to whole stream blocks of :data:`BLOCK`
            samples, then up to a multiple of the device count.
        antithetic: use ``u`` and ``1 - u`` (eq. 2.5).
        rng: ``"philox"`` (default), ``"threefry"`` or ``"lcg"`` (module docstring).
        precision: ``"float64"`` or ``"float32"`` for points and integrand values; sums are
            always float64.
        callback: called after each step with ``{evaluations, value, error}``.
        devices: local devices to shard over (None: all), or ``"global"``: every device
            of a :mod:`jax.distributed` run (:mod:`~loopint.engines.sharding`).
        boundary_check: probe the integrand near the faces after the run
            (:func:`loopint.engines.base.probe_boundary`).

    ``max_evals`` counts an antithetic pair as 2 evaluations; evaluations are made in whole
    chunks, so the run may stop up to one chunk short of it.  The result has ``method="mc"``;
    its ``info`` holds ``samples`` (pairs when antithetic), ``nonfinite`` (evaluations that
    returned NaN/inf, excluded from the sums with their partner), ``steps``, ``history``
    (evaluations, value, error per step), ``rng``, ``seed``, ``antithetic``, ``chunk_evals``,
    ``devices``, ``precision``.

    Status: ``"converged"`` when the tolerance is met and no non-finite value was seen;
    ``"nonfinite: ..."`` when NaN/inf appeared (the estimate uses the finite pairs only);
    ``"max_evals: ..."`` when the budget was spent first.
    """

    name: ClassVar[str] = "mc"
    seed: int = 0
    n_start: int = 2**20
    growth: float = 4
    memory_limit: int | None = None
    antithetic: bool = True
    rng: str = "philox"
    precision: str = "float64"
    callback: Callable | None = None
    devices: int | str | None = None
    boundary_check: bool = True

    def __post_init__(self):
        if self.rng not in RNGS:
            raise ValueError(f"rng must be one of {RNGS}, got {self.rng!r}")
        real_dtype(self.precision)
        if self.growth <= 1:
            raise ValueError(f"growth must be > 1, got {self.growth}")
        sampling.chunk_evaluations(self.memory_limit)

    def _integrate_box(self, f, lower, upper, *, rtol, atol, max_evals):
        t0 = time.perf_counter()
        lo, hi = base.box(lower, upper, max(np.size(lower), np.size(upper)))
        ndev = sharding.device_count(self.devices)
        chunk_blocks, chunk_evals = self._chunking(int(max_evals), ndev)
        bound = base.BoundIntegrand.of(f)
        norm, run, init = _make_runner(bound, lo.size, self.precision, self.rng,
                                       bool(self.antithetic), chunk_blocks, ndev)
        progress = sampling.Progress(norm, rtol, atol, self.callback)
        state, done = self._sample(bound, run, init(), lo, hi - lo, chunk_blocks, chunk_evals,
                                   int(max_evals) // chunk_evals, progress)
        n_ok, n_bad = int(np.asarray(state[5])), int(np.asarray(state[6]))
        evaluations = done * chunk_evals
        info = {"samples": n_ok, "nonfinite": n_bad, "steps": len(progress.history),
                "history": progress.history, "rng": self.rng, "seed": int(self.seed),
                "antithetic": bool(self.antithetic), "chunk_evals": chunk_evals,
                "devices": ndev, "precision": self.precision}
        detail = ("and were excluded (with their antithetic partner)" if self.antithetic else
                  "and were excluded")
        return progress.result(method=self.name, evaluations=evaluations, nonfinite=n_bad,
                               nonfinite_detail=detail, info=info, started=t0)

    def _chunking(self, max_evals: int, ndev: int) -> tuple[int, int]:
        """``(chunk_blocks, chunk_evals)``: stream blocks and evaluations per chunk, at most
        the memory bound's, ``n_start`` and ``max_evals``, a multiple of the device count."""
        block_evals = BLOCK * (2 if self.antithetic else 1)
        limit = min(sampling.chunk_evaluations(self.memory_limit), int(self.n_start), max_evals)
        chunk_blocks = max(1, limit // block_evals)
        chunk_blocks = -(-chunk_blocks // ndev) * ndev
        chunk_evals = chunk_blocks * block_evals
        if max_evals // chunk_evals < 1:
            raise base.BudgetError(f"max_evals={max_evals} is below one chunk ({chunk_evals} "
                                   f"evaluations = {chunk_blocks} blocks of {BLOCK} samples "
                                   f"on {ndev} device(s))")
        return chunk_blocks, chunk_evals

    def _sample(self, bound, run, state, lo, span, chunk_blocks: int, chunk_evals: int,
                budget_chunks: int, progress: sampling.Progress):
        """The steps of the meta-algorithm: ``run`` the chunks up to the next target, record
        the estimate, stop when it meets the tolerance or the budget of ``budget_chunks``
        chunks is spent.  Returns the final state and the number of chunks done."""
        key_words = seed_key_data(self.seed, self.rng)
        vol = float(np.prod(span))
        done = 0
        target = max(1, math.ceil(int(self.n_start) / chunk_evals))
        while True:
            target = min(target, budget_chunks)
            if target <= done:
                return state, done
            first = done * chunk_blocks
            state = run(bound, state, self._key_at(key_words, first, lo.size), jnp.asarray(lo),
                        jnp.asarray(span), jnp.int64(first), jnp.int64(target - done))
            done = target
            value, error = _estimate(jax.device_get(state), vol)
            if progress.record(value, error, done * chunk_evals, key=(done * chunk_evals,)):
                return state, done
            target = max(done + 1, math.ceil(done * self._growth_factor(progress)))

    def _key_at(self, key_words: np.ndarray, block: int, ndim: int):
        """The generator key of a chunk starting at stream block ``block`` (for ``"lcg"`` the
        generator state there, by jump-ahead)."""
        if self.rng == "lcg":
            return jnp.asarray(_lcg_state_words(int(key_words[0]) << 32 | int(key_words[1]),
                                                block, ndim))
        return jnp.asarray(key_words)

    def _growth_factor(self, progress: sampling.Progress) -> float:
        """The factor ``1.1 (E / tol)^2`` that the 1/sqrt(N) law predicts, clipped to
        [1.5, growth]; ``growth`` when the ratio is not finite."""
        ratio = progress.error_ratio()
        growth = float(self.growth)
        return min(growth, max(min(1.5, growth), 1.1 * ratio**2)) if np.isfinite(ratio) \
            else growth
