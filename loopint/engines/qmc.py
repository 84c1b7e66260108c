"""Randomized rank-1 lattice rules (quasi-Monte Carlo) over a box.

Rule (seed 000 section 2.6; Cranley & Patterson 1976; Sloan & Joe 1994).  With ``n`` points,
generating vector ``z`` (:mod:`loopint.engines.lattice`) and ``q`` independent uniform shifts
``Delta_1..Delta_q``,

    K_n(Delta) = (1/n) sum_{k=0}^{n-1} w(t_k) f(a + (b - a) phi(t_k)),
    t_k = {k z / n + Delta},     w(t) = prod_j phi'(t_j),

where ``phi`` is a periodizing transform (:mod:`loopint.engines.periodize`, default
``korobov3``).  The estimate is the mean over shifts and the error its standard error
(seed 000, the formula after eq. 2.7):

    I ~ Kbar = (1/q) sum_j K_n(Delta_j),
    E^2 = 1/(q (q-1)) sum_j (K_n(Delta_j) - Kbar)^2,

i.e. the sample standard deviation of the shift means divided by ``sqrt(q)``, reported as a
one-sigma error without a Student-t factor.  ``E`` is an unbiased-variance estimate built from
only ``q`` (default 8) numbers: it fluctuates by ~25% (chi distribution with ``q-1`` degrees
of freedom), and the true error exceeds ``3 E`` with probability ~2% for ``q = 8``
(``P(|t_7| > 3)``); raise ``n_shifts`` for a steadier estimate (L'Ecuyer & Lemieux, "Recent
advances in randomized quasi-Monte Carlo methods", 2002).

Growth (as DKBVRT of seed 000's ref. 34): the rule is recomputed for the next ``n`` of the
lattice ladder (primes near ``2^k``, k = 10, 11, ..., up to ``max_log2``: 24 on a CPU, the
largest the device memory allows for the CBC construction on an accelerator, 28 on an H200,
:func:`default_max_log2`), roughly doubling the points, with fresh
shifts, until the tolerance ``max(atol, rtol |I|)`` is met or ``max_evals`` would be exceeded.
Each level is an independent estimate (prime lattices are not nested); the result is the
last level, and ``evaluations`` counts all levels.  With ``lattice="embedded"`` the levels are
``n = 2^m`` of one embedded lattice sequence of ``2^28`` points (:func:`lattice.embedded_cbc`,
the package's table: the same rules on every device; past ``2^28``, shifts are pooled):
level ``m`` evaluates only its new points (the odd ``k``) under the first level's shifts and
averages them with level ``m - 1``, so a run that stops at ``2^m`` points
has cost ``q 2^m`` instead of about ``2 q 2^m``.  Balancing 19 levels, its rules have up to
about twice the ``e^2`` of the rule built for each level alone, and its levels share their
shifts and their points: a term of the error that the rule of ``2^m`` points does not resolve
is there, with the same value, on every smaller level too (:data:`loopint.plan.CONTOUR_QMC`).
The prime ladder is the default everywhere.  Past the top of the ladder
(``max_log2``), more shifts are added at the largest ``n`` instead (the error then falls as
``q^(-1/2)`` only).

Evaluation: points are generated on the fly from their index, ``k z_j mod n`` in int64 (exact
for ``n < 2^31``), then ``/ n`` and the shift in float64; chunks of evaluations (all ``q``
shifts of a range of indices, sized by the ``memory_limit`` option: :func:`_chunk_points`) are
processed in a jitted ``lax.fori_loop`` with constant memory, and the per-shift float64 sums
are accumulated across chunks with Neumaier compensation.  The lattice point, transform and
weight are computed in float64; with ``precision="float32"`` only the integrand runs in
float32.  Points are clipped into the open box (one ulp inside each face, in the integrand's
precision) so that no evaluation lands on a face, where the transform's weight vanishes but
the integrand may not be finite.  Non-finite values are counted (``info["nonfinite"]``),
contribute zero, and the status is ``"nonfinite: ..."``.  With several devices each one sums its
share of every chunk's indices in its own loop, and the devices' sums are added once per level
(:func:`~loopint.engines.sharding.per_device`).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import math
import time
from typing import Callable, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..precision import real_dtype
from . import base, regions, sampling, sharding
from . import lattice as lattice_mod
from . import periodize as periodize_mod

log = logging.getLogger(__name__)


def _chunk_points(n: int, q: int, chunk_evals: int, cpu: bool = False) -> int:
    """Indices per chunk.  On an accelerator a power of 16 times 2^12 (few distinct
    compilations; the padding of a small level costs little there), and the memory bound
    ``chunk_evals // q`` itself for a level of at least that many points: each chunk is an
    iteration of a device loop, whose overhead (a host round trip for its predicate on a GPU,
    some 40 us) exceeds a chunk's work for a cheap integrand, so a large level takes chunks as
    large as the memory allows (2^16 indices on an H200 would spend twice the integrand's
    time on the loop, for the 6-D Table 5.1 integral).  On a CPU a fixed
    :data:`CPU_CHUNK_POINTS`: one compilation, and a level pads at most one chunk (a chunk of
    2^16 for n = 8191 would evaluate the integrand 8 times over)."""
    cap = max(1, int(chunk_evals) // q)
    if cpu:
        return min(CPU_CHUNK_POINTS, cap)
    if n >= cap:
        return cap
    c = 2**12
    while c < n and c * 16 <= cap:
        c *= 16
    return min(c, cap)


CPU_CHUNK_POINTS = 2**12
"""Lattice indices per chunk on a CPU (times the shifts: 32768 evaluations with 8 shifts,
enough to keep vectorized loops busy)."""

CPU_MAX_LOG2 = 24
"""Top of the lattice ladder on a CPU: building the CBC vector of ``2^24`` points takes about
40 s there (for weights other than the default, whose vectors the package carries; once, then
it is cached on disk)."""

BYTES_PER_POINT = 256
"""Device memory allowed per lattice point for the CBC construction: it needs about 128 bytes
(FFTs of twice the length in float64 and complex128, the permutation, the running product:
``2^29`` points fit in the 106 GB JAX may use on an H200 by default, ``2^30`` do not), doubled
so that half the memory stays free for the rest of a run."""


def default_max_log2(device=None) -> int:
    """Top of the lattice ladder (``k`` of the largest ``n ~ 2^k``) for ``device`` (default:
    the first device): :data:`CPU_MAX_LOG2` on a CPU; on an accelerator the largest ``k`` whose
    CBC construction fits in the device memory JAX may use (:data:`BYTES_PER_POINT`), at least
    ``CPU_MAX_LOG2``.  On an H200 that is ``k = 28`` (``n = 268435399``)."""
    limit = base.device_memory_limit(device)
    k = int(math.floor(math.log2(limit / BYTES_PER_POINT))) if limit > 0 else CPU_MAX_LOG2
    return max(CPU_MAX_LOG2, min(k, lattice_mod.LADDER_LOG2[-1]))


def _build_runner(f, ndim: int, precision: str, period: str, q: int, c: int, ndev: int):
    """Jitted sums of ``w f`` over the shifted lattice, per shift."""
    dtype = real_dtype(precision)
    norm = base.normalize_integrand(f, ndim, dtype)
    per = periodize_mod.get(period)
    share = c // ndev                                            # indices per device

    def chunk(fn, z, n, count, stride, shifts, lo, span, start):
        i = start + jnp.arange(share, dtype=jnp.int64)
        valid = i < count
        k = i * stride + (stride - 1)                            # all k, or the odd k
        kz = (k[:, None] * z[None, :]) % n                       # exact in int64
        t = kz.astype(jnp.float64) / n.astype(jnp.float64)       # (share, d)
        t = t[None, :, :] + shifts[:, None, :]                   # (q, share, d)
        t = jnp.where(t >= 1.0, t - 1.0, t)
        x, w = per.apply(t)
        pts = sampling.inside_box((lo + span * x).astype(dtype), lo, span).reshape(
            q * share, ndim)
        y = norm.call(fn, pts).astype(jnp.float64).reshape(q, share, -1)
        ok = jnp.all(jnp.isfinite(y), axis=2) & valid[None, :]
        bad = jnp.sum(~jnp.all(jnp.isfinite(y), axis=2) & valid[None, :])
        wy = jnp.where(ok[:, :, None], (w[..., None] if w.ndim else w) * y, 0.0)
        return jnp.sum(wy, axis=1), bad                          # (q, M)

    def sums(fn, z, n, count, stride, shifts, lo, span):
        """This device's sums over its share of every chunk of ``c`` indices, then the
        devices' total (:func:`sharding.per_device`)."""
        n_chunks = (count + c - 1) // c
        offset = jnp.asarray(sharding.device_index(ndev), jnp.int64) * share

        def body(i, st):
            s, cs, bad = st
            part, b = chunk(fn, z, n, count, stride, shifts, lo, span,
                            jnp.asarray(i, jnp.int64) * c + offset)
            s, cs = sampling.neumaier_add(s, cs, part)
            return s, cs, bad + b

        zero = jnp.zeros((q, norm.n_components), jnp.float64)
        s, cs, bad = lax.fori_loop(0, n_chunks, body, (zero, zero, jnp.zeros((), jnp.int64)))
        return sharding.total(s + cs, ndev), sharding.total(bad, ndev)

    @jax.jit
    def run(fn, z, n, count, stride, shifts, lo, span):
        """Mean of ``w f`` per shift over ``count`` lattice indices: ``k = 0..n-1``
        (``stride`` 1) or the odd ``k < n`` (``stride`` 2, ``count = n/2``)."""
        s, bad = sharding.per_device(ndev, sums)(fn, z, n, count, stride, shifts, lo, span)
        return s / count.astype(jnp.float64), bad

    return norm, run


@functools.partial(jax.jit, static_argnums=(2, 3))
def _shifts(key, level, q: int, d: int):
    """The ``q`` random shifts of a level (uniform in [0, 1)^d, from ``key`` folded with the
    level's index), as one compiled call."""
    return jax.random.uniform(jax.random.fold_in(key, level), (q, d), dtype=jnp.float64)


def _compile_run(run, bound, q: int, lo, hi) -> None:
    """Compile ``run`` for a level's argument shapes (the arrays made in the worker that
    compiles it, not on the caller's path)."""
    d = lo.size
    regions.compile_for(run, (bound, jnp.zeros((d,), jnp.int64), np.int64(1), np.int64(1),
                              np.int64(1), jnp.zeros((q, d), jnp.float64), jnp.asarray(lo),
                              jnp.asarray(hi - lo)))


# the compiled loop, shared by every integrand of one signature (``run`` takes the integrand,
# a base.BoundIntegrand, as its first, traced argument)
_make_runner = base.cached_by_signature(_build_runner)


@dataclasses.dataclass(frozen=True)
class QuasiMonteCarlo(base.Engine):
    """Randomized rank-1 lattice rule estimate of ``int_box f`` (module docstring).

    Options:
        seed: seeds the random shifts (``jax.random``, Threefry; Salmon et al. 2011).
        n_shifts: ``q >= 2`` random shifts per level (default 8).
        periodize: ``"korobov3"`` (default), ``"korobov<r>"``, ``"sidi"``/``"sidi<m>"``,
            ``"baker"`` or ``"none"`` (:mod:`loopint.engines.periodize`).
        lattice: ``"cbc"`` (fast CBC on the prime ladder, default), ``"embedded"`` (one
            base-2 embedded sequence, each level reusing the points of the levels before it)
            or ``"korobov"``.
        n_start: first level: the ladder point count near ``2^ceil(log2 n_start)``.
        memory_limit: bytes of device memory the engine may use for its chunks of points
            (:data:`~loopint.engines.sampling.BYTES_PER_EVALUATION` per evaluation, all ``q``
            shifts of a chunk's indices); None:
            :data:`~loopint.engines.sampling.DEFAULT_CHUNK_EVALUATIONS` evaluations.  The
            indices per chunk follow from it by :func:`_chunk_points` (on a CPU at most
            :data:`CPU_CHUNK_POINTS`).
        precision: ``"float64"`` or ``"float32"`` (integrand only; sums are float64).
        stop_on_nonfinite: end the run after the first level that met a NaN/inf (status
            ``nonfinite``) instead of going on with them counted as 0.
        weights: product weights gamma_j for the lattice construction (default
            :data:`lattice.DEFAULT_GAMMA`).
        max_log2: top of the ladder (default :func:`default_max_log2`: 24 on a CPU, 28 on an
            H200).
        callback: called per level with ``{n, evaluations, value, error}``.
        devices: local devices to shard over (None: all), or ``"global"``: every device
            of a :mod:`jax.distributed` run (:mod:`~loopint.engines.sharding`).
        boundary_check: probe the integrand near the faces after the run
            (:func:`loopint.engines.base.probe_boundary`).
        compile_ahead: compile the chunk loops of the run's first two chunk sizes side by
            side in background threads (also from
            :meth:`~loopint.engines.base.Engine.prepare`,
            :data:`~loopint.engines.regions.AHEAD`).  None (default): on a GPU, whose host
            compiles kernels for it on several cores at once; not on a CPU, where XLA
            already compiles one kernel on every core.

    ``max_evals`` bounds the evaluations over all levels (``q n`` per level).  The result has
    ``method="qmc"``; its ``info`` holds ``n`` (points of the last level), ``shifts``,
    ``levels``, ``history`` (``(n, q, value, error)`` per level), ``lattice``, ``periodize``,
    ``z`` (last generating vector), ``nonfinite``, ``precision``, ``devices``, ``seed``.
    """

    name: ClassVar[str] = "qmc"
    seed: int = 0
    n_shifts: int = 8
    periodize: str = "korobov3"
    lattice: str = "cbc"
    n_start: int = 2**10
    memory_limit: int | None = None
    precision: str = "float64"
    stop_on_nonfinite: bool = False
    weights: float = lattice_mod.DEFAULT_GAMMA
    max_log2: int | None = None
    callback: Callable | None = None
    devices: int | str | None = None
    boundary_check: bool = True
    compile_ahead: bool | None = None

    def __post_init__(self):
        real_dtype(self.precision)
        periodize_mod.get(self.periodize)
        if self.lattice not in ("embedded", "cbc", "korobov"):
            raise ValueError(f"lattice must be 'embedded', 'cbc' or 'korobov', "
                             f"got {self.lattice!r}")
        if int(self.n_shifts) < 2:
            raise ValueError(f"n_shifts must be >= 2 for an error estimate, got {self.n_shifts}")
        sampling.chunk_evaluations(self.memory_limit)

    def _integrate_box(self, f, lower, upper, *, rtol, atol, max_evals):
        t0 = time.perf_counter()
        lo, hi = base.box(lower, upper, max(np.size(lower), np.size(upper)))
        ndev = sharding.device_count(self.devices)
        ladder = self._ladder(int(max_evals))
        bound = base.BoundIntegrand.of(f)
        self._compile_ahead(bound, lo, hi, ladder)
        runner = functools.partial(self._runner, bound, lo.size, ndev)
        progress = sampling.Progress(runner(ladder[0])[0], rtol, atol, self.callback)
        evaluations, n_bad, z = self._levels(bound, runner, ladder, lo, hi - lo, int(max_evals),
                                             progress)
        history = progress.history
        info = {"n": int(history[-1][0]), "shifts": int(history[-1][1]), "levels": len(history),
                "history": history, "lattice": self.lattice,
                "periodize": periodize_mod.get(self.periodize).name, "z": [int(v) for v in z],
                "nonfinite": n_bad, "precision": self.precision, "devices": ndev,
                "seed": int(self.seed)}
        return progress.result(method=self.name, evaluations=evaluations, nonfinite=n_bad,
                               nonfinite_detail="(counted as 0)", info=info, started=t0)

    def _ladder(self, max_evals: int) -> list[int]:
        """The point counts of the levels, from ``n_start`` to ``max_log2``: powers of two
        (``"embedded"``) or the prime ladder."""
        max_log2 = default_max_log2() if self.max_log2 is None else int(self.max_log2)
        k0 = max(lattice_mod.LADDER_LOG2[0] - 4, math.ceil(math.log2(max(2, int(self.n_start)))))
        if self.lattice == "embedded":
            top = min(max(k0, max_log2), lattice_mod.EMBEDDED_LOG2)
            ladder = [1 << k for k in range(min(k0, top), top + 1)]
        else:
            ladder = lattice_mod.ladder(range(k0, max(k0, max_log2) + 1))
        q = int(self.n_shifts)
        if q * ladder[0] > max_evals:
            raise base.BudgetError(f"max_evals={max_evals} is below one level "
                                   f"({q} shifts x {ladder[0]} points)")
        return ladder

    def _chunk(self, n: int, ndev: int) -> int:
        """Indices per chunk for a level of ``n`` points: from the memory bound
        (:func:`_chunk_points`), a multiple of the device count."""
        cpu = jax.devices()[0].platform == "cpu"
        c = _chunk_points(n, int(self.n_shifts), sampling.chunk_evaluations(self.memory_limit),
                          cpu)
        return -(-c // ndev) * ndev

    def _runner(self, bound, ndim: int, ndev: int, n: int):
        """``(norm, run)`` for a level of ``n`` points: the compiled chunk loop of its chunk
        size (:meth:`_chunk`), compiled ahead where :meth:`_compile_ahead` queued it (the
        caller waits for that instead of compiling it a second time)."""
        c = self._chunk(n, ndev)
        if regions.ahead_enabled(self.compile_ahead):
            regions.AHEAD.wait(self._ahead_key(bound, ndim, ndev, c))
        return _make_runner(bound, ndim, self.precision, periodize_mod.get(self.periodize).name,
                            int(self.n_shifts), c, ndev)

    def _ahead_key(self, bound, ndim: int, ndev: int, c: int) -> tuple:
        return ("qmc", bound.signature(), ndim, self.precision, self.periodize,
                int(self.n_shifts), c, ndev, jax.config.jax_default_device)

    def _prepare_box(self, f, lower, upper, max_evals: int) -> None:
        lo, hi = base.box(lower, upper, max(np.size(lower), np.size(upper)))
        self._compile_ahead(base.BoundIntegrand.of(f), lo, hi, self._ladder(int(max_evals)))

    def _compile_ahead(self, bound, lo, hi, ladder: list[int]) -> None:
        """Queue the compilation of the chunk loops of the ladder's first two chunk sizes
        (:data:`~loopint.engines.regions.AHEAD`), with arguments of a level's shapes."""
        # not for a program over the devices of several processes (jax.distributed), which
        # every process must build alike
        if not regions.ahead_enabled(self.compile_ahead) or self.devices == "global":
            return
        ndev = sharding.device_count(self.devices)
        d, q = lo.size, int(self.n_shifts)
        sizes = list(dict.fromkeys(self._chunk(n, ndev) for n in ladder))[:2]
        for c in sizes:
            _, run = _make_runner(bound, d, self.precision,
                                  periodize_mod.get(self.periodize).name, q, c, ndev)
            regions.AHEAD.submit(self._ahead_key(bound, d, ndev, c),
                                 functools.partial(_compile_run, run, bound, q, lo, hi))

    def _levels(self, bound, runner, ladder: list[int], lo, span, max_evals: int,
                progress: sampling.Progress) -> tuple[int, int, np.ndarray]:
        """Walk the ladder until the tolerance is met, the next level would exceed
        ``max_evals``, or (``stop_on_nonfinite``) a level met a NaN/inf; past its top, pool
        more shifts at the largest ``n``.  An embedded level evaluates only its new points
        (the odd ``k``) and averages them with the level before, under the same shifts; a
        prime level is an independent rule with fresh shifts.  Returns the evaluations, the
        non-finite count and the generating vector."""
        key = jax.random.key(int(self.seed), impl="threefry2x32")
        q, d = int(self.n_shifts), lo.size
        embedded = self.lattice == "embedded"
        evaluations = n_bad = 0
        means_at_top: list[np.ndarray] = []
        z = lattice_mod.embedded_vector(d, gamma=self.weights) if embedded else None
        # the arguments that stay the same over the levels go to the device once; the level's
        # integers go as NumPy scalars (the compiled call takes them without an eager
        # conversion each): a run of many cheap levels is otherwise dominated by these
        # transfers
        z_dev = jnp.asarray(z) if embedded else None
        lo_dev, span_dev = jnp.asarray(lo), jnp.asarray(span)
        previous = None                      # the embedded sequence's means so far
        for level in itertools.count():
            at_top = level >= len(ladder)
            n = ladder[-1] if at_top else ladder[level]
            nested = embedded and previous is not None and not at_top
            count = n // 2 if nested else n
            if evaluations + q * count > max_evals:
                break
            if not embedded:
                z = lattice_mod.generating_vector(n, d, self.lattice, self.weights)
                z_dev = jnp.asarray(z)
            _, run = runner(n)
            shifts = _shifts(key, np.uint32(0 if nested else level), q, d)
            sums, bad = run(bound, z_dev, np.int64(n), np.int64(count),
                            np.int64(2 if nested else 1), shifts, lo_dev, span_dev)
            means = np.asarray(sums) * float(np.prod(span))                     # (q, M)
            if nested:
                means = 0.5 * (previous + means)
            if embedded and not at_top:
                previous = means
            n_bad += int(bad)
            evaluations += q * count
            if at_top:
                means_at_top.append(means)
                means = np.concatenate(means_at_top, axis=0)
            elif level == len(ladder) - 1:
                means_at_top = [means]
            met = progress.record(means.mean(axis=0),
                                  means.std(axis=0, ddof=1) / math.sqrt(means.shape[0]),
                                  evaluations, key=(n, means.shape[0]), labels={"n": n})
            if met or (self.stop_on_nonfinite and n_bad):
                break
        return evaluations, n_bad, z
