"""Rank-1 lattice rules: generating vectors built by the package, and the lattice ladder.

A rank-1 lattice rule with ``n`` points and generating vector ``z in {1..n-1}^d`` is

    Q_n(f) = (1/n) sum_{k=0}^{n-1} f({k z / n}),                         ({.} = fractional part)

and its randomly shifted version uses the points ``{k z / n + Delta}`` (Cranley & Patterson
1976; seed 000 section 2.6).  The quality of ``z`` is measured here by the squared worst-case
error in the weighted Korobov space of smoothness ``alpha = 2`` with product weights
``gamma_j`` -- the classical ``P_alpha`` criterion (Sloan & Joe, *Lattice Methods for Multiple
Integration*, 1994, section 4; Nuyens & Cools, *Math. Comp.* 75 (2006) 903-920):

    e^2(z) = -1 + (1/n) sum_{k=0}^{n-1} prod_{j=1}^{d} [1 + gamma_j omega({k z_j / n})],
    omega(x) = 2 pi^2 B_2(x),   B_2(x) = x^2 - x + 1/6,

because ``sum_{h != 0} exp(2 pi i h x) / h^2 = 2 pi^2 B_2(x)``.  ``e^2`` is also, up to the
scaling ``gamma_j -> 2 pi^2 gamma_j``, the shift-averaged worst-case error of a randomly
shifted lattice rule in the unanchored Sobolev space of first order (Dick, Kuo & Sloan,
*Acta Numerica* 22 (2013), section 5), so the same vectors serve non-periodic integrands.

Two constructions, both for prime ``n``:

- :func:`cbc` (default): the component-by-component construction (Sloan & Reztsov 2002), each
  ``z_s`` chosen to minimize ``e^2`` of the first ``s`` components given ``z_1..z_(s-1)``, done
  with the *fast* CBC of Nuyens & Cools (2006): for prime ``n`` the matrix
  ``[omega({k z / n})]_(z, k)`` becomes circulant after ordering ``z`` and ``k`` by powers of a
  primitive root ``g`` of ``n``, so all ``n - 1`` candidates are scored with one circular
  convolution of length ``n - 1``: ``O(d n log n)`` time, ``O(n)`` memory.  ``z_1 = 1``.  The
  convolution runs in JAX on the default device, as a linear convolution with power-of-two FFTs
  (``n - 1`` can have large prime factors).
- :func:`korobov`: Korobov vectors ``z = (1, a, a^2, ..., a^(d-1)) mod n`` with ``a`` chosen to
  minimize ``e^2``.  Each candidate costs ``O(n d)``; all ``a <= n/2`` are tried while
  ``n d (n/2) <= 2^26``, otherwise a fixed pseudo-random subset of ``max(32, 2^26/(n d))``
  candidates (seeded by ``n``) is searched: for large ``n`` this is a restricted search, not
  the optimum (about a second of numpy per vector).

A third, :func:`embedded_cbc`, builds one odd vector for every ``n = 2^m`` up to a top
``2^m_max`` (an embedded lattice sequence: the rule of ``2^(m-1)`` points is part of the rule
of ``2^m``), by a fast CBC over the units mod ``2^m`` that balances all levels.

The *ladder* (:func:`ladder`) is the sequence of point counts the QMC engine walks through:
the largest prime ``<= 2^k`` for ``k = 10, 11, ...`` (prime so that the fast CBC applies and
every ``z_j`` is a unit mod ``n``).  For the default weights the package carries the CBC vectors
of the ladder from ``2^10`` to ``2^28`` points (:mod:`loopint.engines.rules.lattice_prime`) and
the embedded sequence (:mod:`loopint.engines.rules.lattice_base2`), in 64 dimensions.  Other
vectors are computed on demand and memoized in memory and on disk (one small JSON file per
``(method, n, weights)``) in the folder ``lattice/`` of ``$LOOPINT_CACHE_DIR``, else of
``$XDG_CACHE_HOME/loopint``, else of ``~/.cache/loopint`` (``LOOPINT_CACHE_DIR=""``: memory
only).  Nothing is copied from elsewhere; a cache miss recomputes the vector.  A CBC vector
for ``d`` dimensions is the first ``d`` components of the vector for any ``d' > d`` (same
weights), so a cached vector is extended, not recomputed, when more dimensions are asked for.

Default weights ``gamma_j = DEFAULT_GAMMA`` for all ``j`` (equal product weights: Feynman
parameters carry no natural ordering of importance); any positive sequence can be passed.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import pathlib
import tempfile
import threading
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import cache as cache_mod

log = logging.getLogger(__name__)

DEFAULT_GAMMA = 0.5
"""Default product weight gamma_j (Korobov-space scale; ``2 pi^2 gamma_j ~ 10`` in the
Sobolev-space scale).  Chosen by a small comparison of 0.02, 0.1, 0.5 and 2 on f1_8d, f3_5d,
f3_8d, f2_6d, f4_5d and the Table 5.1 integrand (korobov3, n = 2^16 .. 2^20): 0.5 gave the
smallest geometric-mean error, by a factor 1.5-2; the differences between single lattices are
larger than those between weights."""

LADDER_LOG2 = tuple(range(10, 31))
"""Point counts of the ladder: the largest prime ``<= 2^k`` for these ``k`` (1021 ... 1073741789;
``k z mod n`` stays exact in int64 for ``n < 2^31``)."""

_MEMO: dict = {}
_LOCK = threading.Lock()


# ----------------------------------------------------------------------------------------------
# number theory

def is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin for n < 3.3e24 (bases 2..41)."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
    for p in small:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def prime_below(m: int) -> int:
    """Largest prime ``<= m``."""
    p = m
    while p >= 2 and not is_prime(p):
        p -= 1
    if p < 2:
        raise ValueError(f"no prime <= {m}")
    return p


def _prime_factors(m: int) -> list[int]:
    out, p = [], 2
    while p * p <= m:
        if m % p == 0:
            out.append(p)
            while m % p == 0:
                m //= p
        p += 1
    if m > 1:
        out.append(m)
    return out


def primitive_root(n: int) -> int:
    """Smallest generator of the multiplicative group ``Z_n^*`` of a prime ``n``."""
    if not is_prime(n):
        raise ValueError(f"{n} is not prime")
    if n == 2:
        return 1
    factors = _prime_factors(n - 1)
    for g in range(2, n):
        if all(pow(g, (n - 1) // q, n) != 1 for q in factors):
            return g
    raise AssertionError("unreachable: every prime has a primitive root")


def ladder(log2_range: Sequence[int] = LADDER_LOG2) -> list[int]:
    """Point counts ``n_k`` = largest prime ``<= 2^k`` for ``k`` in ``log2_range``."""
    return [_prime_below_pow2(int(k)) for k in log2_range]


@functools.lru_cache(maxsize=None)
def _prime_below_pow2(k: int) -> int:
    return prime_below(2**k)


# ----------------------------------------------------------------------------------------------
# the criterion

def omega(x: np.ndarray) -> np.ndarray:
    """``2 pi^2 B_2(x)`` for ``x`` in [0, 1): the one-dimensional kernel of ``P_2``."""
    return 2.0 * np.pi**2 * (x * x - x + 1.0 / 6.0)


def _weights(gamma, d: int) -> np.ndarray:
    g = np.broadcast_to(np.asarray(gamma, dtype=np.float64), (d,)) if np.ndim(gamma) == 0 \
        else np.asarray(gamma, dtype=np.float64)[:d]
    if g.shape != (d,) or not np.all(g > 0):
        raise ValueError(f"need {d} positive product weights, got {gamma!r}")
    return g


def p2_error(z: Sequence[int], n: int, gamma=DEFAULT_GAMMA) -> float:
    """Squared worst-case error ``e^2(z)`` (module docstring) of the lattice ``(n, z)``.

    Direct ``O(n d)`` evaluation; used to check constructions and to compare vectors.
    """
    z = np.asarray(z, dtype=np.int64)
    g = _weights(gamma, z.size)
    k = np.arange(n, dtype=np.int64)
    prod = np.ones(n)
    for zj, gj in zip(z, g):
        prod *= 1.0 + gj * omega((k * zj % n) / n)
    return float(prod.mean() - 1.0)


# ----------------------------------------------------------------------------------------------
# constructions

def cbc(n: int, d: int, gamma=DEFAULT_GAMMA, start: Sequence[int] = ()) -> np.ndarray:
    """Fast component-by-component construction (Nuyens & Cools 2006) for prime ``n``.

    Returns ``z`` of length ``d`` (int64).  ``start`` fixes the first components (used to
    extend a cached vector); the remaining ones are chosen greedily as described in the module
    docstring.  ``z_j`` and ``n - z_j`` score the same (``omega`` is symmetric; the lattices are
    mirror images) and the smaller is returned, so the result does not depend on which of the
    two the rounding of the FFT favours.
    """
    if not is_prime(n):
        raise ValueError(f"fast CBC needs a prime number of points, got {n}")
    g = _weights(gamma, d)
    z = [int(v) for v in start][:d]
    if n == 2:
        return np.ones(d, dtype=np.int64)
    if not z:
        z = [1]
    if len(z) >= d:
        return np.asarray(z[:d], dtype=np.int64)

    root = primitive_root(n)
    m = n - 1
    # perm[i] = root^i mod n, i = 0..n-2, filled by doubling: perm[i + L] = perm[i] root^L mod n
    # (products of two residues < 2^31 are exact in int64)
    perm = np.empty(m, dtype=np.int64)
    perm[0] = 1
    filled = 1
    while filled < m:
        cnt = min(filled, m - filled)
        perm[filled:filled + cnt] = perm[:cnt] * pow(root, filled, n) % n
        filled += cnt
    inv_perm = np.empty(m, dtype=np.int64)             # root^(-l) = root^((m - l) % m)
    inv_perm[0] = 1
    inv_perm[1:] = perm[:0:-1]
    # The O(n log n) work runs in JAX on the default device, so that an accelerator builds the
    # vectors of the top of the ladder, n ~ 2^28, in seconds.
    # The circular convolution of length m = n - 1 (which can have large prime factors: slow
    # FFTs, and cuFFT cannot plan them beyond ~2^26) is done as a linear convolution with
    # power-of-two FFTs of length L >= 2m - 1, folded back.
    L = 1 << (2 * m - 2).bit_length()
    perm_d = jnp.asarray(perm)
    c_hat = jnp.fft.rfft(omega(perm_d / n), n=L)        # first column of the circulant
    inv_d = jnp.asarray(inv_perm)
    del perm_d
    prod = jnp.ones(n)                                 # prod_j (1 + gamma_j omega({k z_j/n}))
    for j, zj in enumerate(z):
        prod = _cbc_update(prod, zj, g[j], n)
    for s in range(len(z), d):
        best = int(_cbc_argmin(prod, inv_d, c_hat, m, L))
        zs = int(perm[best])
        zs = min(zs, n - zs)    # z and n - z give mirror-image lattices of equal quality
        z.append(zs)
        prod = _cbc_update(prod, zs, g[s], n)
    return np.asarray(z, dtype=np.int64)


@functools.partial(jax.jit, static_argnums=(3, 4))
def _cbc_argmin(prod, inv_perm, c_hat, m: int, L: int):
    """Index (in generator order) of the candidate minimizing the criterion: the circular
    convolution ``v[i] = sum_l omega(root^(i-l)) prod(root^(-l))``, ``i, l < m``, as the linear
    convolution ``w`` (FFTs of length ``L >= 2m - 1``) folded, ``v[i] = w[i] + w[i + m]``."""
    w = jnp.fft.irfft(c_hat * jnp.fft.rfft(prod[inv_perm], n=L), n=L)
    v = w[:m] + jnp.concatenate([w[m:2 * m - 1], jnp.zeros((1,), w.dtype)])
    return jnp.argmin(v)


@functools.partial(jax.jit, static_argnums=3)
def _cbc_update(prod, zs, gs, n: int):
    k = jnp.arange(n, dtype=jnp.int64)
    return prod * (1.0 + gs * omega((k * zs % n) / n))


def korobov(n: int, d: int, gamma=DEFAULT_GAMMA, budget: float = 2.0**26) -> tuple[np.ndarray, int]:
    """Korobov vector ``(1, a, ..., a^(d-1)) mod n`` minimizing ``e^2``; returns ``(z, a)``.

    Candidates ``a = 1 .. (n-1)/2`` coprime to ``n`` (``a`` and ``n - a`` score the same), so
    any ``n`` works, e.g. powers of two; when
    ``n * d * #candidates`` exceeds ``budget`` a fixed pseudo-random subset (seeded by ``n``)
    of ``max(32, budget / (n d))`` candidates is searched.
    """
    if n < 3:
        return np.ones(d, dtype=np.int64), 1
    g = _weights(gamma, d)
    cands = np.arange(1, (n - 1) // 2 + 1, dtype=np.int64)
    cands = cands[np.gcd(cands, n) == 1]        # all of them for prime n; odd a for n = 2^m
    limit = max(32, int(budget // (n * d)))
    if cands.size > limit:
        rng = np.random.default_rng(n)
        cands = np.sort(rng.choice(cands[1:], size=limit, replace=False))  # a = 1 is useless
    k = np.arange(n, dtype=np.int64)
    best, best_a = math.inf, 1
    # vectorize over a batch of candidates to keep numpy busy without huge temporaries
    batch = max(1, int(2**22 // n))
    for i0 in range(0, cands.size, batch):
        a = cands[i0:i0 + batch]
        zj = np.ones_like(a)
        prod = np.ones((a.size, n))
        for j in range(d):
            prod *= 1.0 + g[j] * omega((np.outer(zj, k) % n) / n)
            zj = zj * a % n
        e2 = prod.mean(axis=1) - 1.0
        i = int(np.argmin(e2))
        if e2[i] < best:
            best, best_a = float(e2[i]), int(a[i])
    return korobov_vector(n, d, best_a), best_a


def korobov_vector(n: int, d: int, a: int) -> np.ndarray:
    z = np.empty(d, dtype=np.int64)
    v = 1
    for j in range(d):
        z[j] = v
        v = v * a % n
    return z


# ----------------------------------------------------------------------------------------------
# embedded lattice sequences in base 2

E2_FLOOR = 1e-13
"""Added to ``e^2`` before ratios are taken in :func:`embedded_cbc`: the criterion is a sum of
``2^m`` terms of order one, so values below about this are rounding, not lattice quality."""

EMBEDDED_MIN_LOG2 = 10
"""Smallest level ``2^m`` that :func:`embedded_cbc` balances (the QMC engine's first level)."""


def embedded_cbc(m_max: int, d: int, gamma=DEFAULT_GAMMA, start: Sequence[int] = (),
                 m_min: int = EMBEDDED_MIN_LOG2) -> np.ndarray:
    """Component-by-component construction of an embedded lattice sequence in base 2.

    One odd generating vector ``z`` serves every ``n = 2^m``, ``m <= m_max``: the rule of
    ``2^m`` points uses ``{k z / 2^m}``, ``k < 2^m``, and contains the rule of ``2^(m-1)``
    points (its even ``k``), so a QMC level reuses every point of the levels before it.  Each
    component ``z_s`` minimizes, over all odd candidates below ``2^m_max``, the worst ratio
    over the levels ``m_min <= m <= m_max`` of its squared error ``e^2_(2^m)`` to the smallest
    one any candidate reaches at that level (given ``z_1..z_(s-1)``): the relative criterion
    of Cools, Kuo & Nuyens, *SIAM J. Sci. Comput.* 28 (2006) 2162-2188.  ``z_1 = 1``.

    Fast in the same way as :func:`cbc`.  A lattice index ``k = 2^(m_max - L) u`` (``u`` odd)
    pairs with ``z`` through ``u z mod 2^L`` only, and the odd residues mod ``2^L`` are
    ``+-5^a`` (``L >= 3``); ``omega`` is even, so every ``L`` contributes one circular
    correlation of length ``2^(L-2)`` over the powers of 5, shared by all levels ``m >= L``:
    ``O(d 2^m_max log 2^m_max)`` time and ``O(2^m_max)`` memory in all.  Levels whose best
    ``e^2`` is at the float64 rounding of the criterion (``E2_FLOOR``) do not discriminate.
    """
    g = _weights(gamma, d)
    z = [int(v) for v in start][:d] or [1]
    if len(z) >= d:
        return np.asarray(z[:d], dtype=np.int64)
    n = 1 << m_max
    tables = [None if L < 3 else tuple(jnp.asarray(a) for a in _units_pow2(L))
              for L in range(1, m_max + 1)]
    prod = jnp.ones(n)
    e2 = jnp.zeros(m_max + 1)         # e^2_(2^m) of the components so far, m = 0..m_max
    for j, zj in enumerate(z):
        prod, e2 = _embedded_update(prod, e2, zj, g[j], m_max)
    for s in range(len(z), d):
        best = _embedded_argmin(prod, e2, g[s], m_max, min(m_min, m_max), tables)
        z.append(best)
        prod, e2 = _embedded_update(prod, e2, best, g[s], m_max)
    return np.asarray(z, dtype=np.int64)


@functools.lru_cache(maxsize=None)
def _units_pow2(L: int):
    """For the odd residues ``u < 2^L`` (index ``(u - 1) / 2``): the powers ``5^a mod 2^L``,
    ``a < 2^(L-2)``, and the discrete log ``a`` of ``+-u`` (``L >= 3``; trivial below)."""
    if L < 3:
        return None
    G, mask = 1 << (L - 2), (1 << L) - 1
    pw = np.empty(G, dtype=np.int64)
    pw[0], filled = 1, 1
    while filled < G:                                  # pw[a + f] = pw[a] 5^f, by doubling
        cnt = min(filled, G - filled)
        pw[filled:filled + cnt] = pw[:cnt] * pow(5, filled, 1 << L) & mask
        filled += cnt
    dlog = np.empty(1 << (L - 1), dtype=np.int64)
    a = np.arange(G, dtype=np.int64)
    dlog[(pw - 1) // 2] = a
    dlog[((1 << L) - pw - 1) // 2] = a
    return pw, dlog


def _embedded_argmin(prod, e2, gs, m_max: int, m_min: int, tables) -> int:
    """The odd candidate below ``2^m_max`` with the smallest worst ratio (:func:`embedded_cbc`)."""
    return int(2 * int(_embedded_argmin_jit(prod, jnp.asarray(e2), gs, tables, m_max, m_min)) + 1)


@functools.partial(jax.jit, static_argnums=(4, 5))
def _embedded_argmin_jit(prod, e2, gs, tables, m_max: int, m_min: int):
    """Index ``(z - 1) / 2`` of the best candidate.

    ``T_m(z) = sum_(k < 2^m) prod(k 2^(m_max - m)) omega({k z / 2^m})`` is built up over
    ``L = 1..m``: ``T_L = [T_(L-1), T_(L-1)] + W_L`` on the odd residues mod ``2^L``, with
    ``W_L(z) = sum_(u odd) prod(2^(m_max - L) u) omega({u z / 2^L})``; then
    ``e^2_m(z) = e^2_m + gamma_s T_m(z) / 2^m``."""
    T = prod[:1] * omega(0.0)                          # k = 0
    worst = None
    for L in range(1, m_max + 1):
        c = prod[(1 << (m_max - L))::(1 << (m_max - L + 1))]             # u = 1, 3, .., 2^L - 1
        T = jnp.concatenate([T, T]) if L > 1 else T
        T = T + _w_level(c, L, tables[L - 1])
        if L >= m_min:
            e = e2[L] + gs * T / (1 << L) + E2_FLOOR
            r = e / jnp.min(e)
            worst = r if worst is None else jnp.maximum(jnp.concatenate([worst, worst]), r)
    return jnp.argmin(worst)


def _w_level(c, L: int, table):
    """``W_L`` on the odd residues mod ``2^L`` (``c[(u - 1) / 2] = prod(2^(m_max - L) u)``)."""
    if L == 1:
        return c * omega(0.5)
    if L == 2:
        return jnp.full((2,), jnp.sum(c) * omega(0.25))
    pw, dlog = table
    C = c[(pw - 1) // 2] + c[((1 << L) - pw - 1) // 2]        # +-5^a together (omega is even)
    om = omega(pw.astype(jnp.float64) / (1 << L))
    corr = jnp.fft.irfft(jnp.conj(jnp.fft.rfft(C)) * jnp.fft.rfft(om), n=C.shape[0])
    return corr[dlog]                                  # W(+-5^b) = sum_a C[a] om[a + b]


@functools.partial(jax.jit, static_argnums=4)
def _embedded_update(prod, e2, zs, gs, m_max: int):
    """Multiply ``prod`` by the component ``zs`` and update ``e^2_(2^m)`` for every ``m``."""
    n = 1 << m_max
    k = jnp.arange(n, dtype=jnp.int64)
    term = prod * omega(((k * zs) & (n - 1)).astype(jnp.float64) / n)
    sums = jnp.stack([jnp.sum(term[::1 << (m_max - m)]) / (1 << m) for m in range(m_max + 1)])
    return prod + gs * term, e2 + gs * sums


# ----------------------------------------------------------------------------------------------
# cache (the files are records of :mod:`loopint.cache`)

def _weights_tag(gamma, d: int) -> str:
    if np.ndim(gamma) == 0:
        return f"const{float(gamma)!r}"
    w = np.asarray(gamma, dtype=np.float64)
    return "seq" + hashlib.sha1(w.tobytes()).hexdigest()[:16]


def _cache_file(method: str, n: int, tag: str, d: int) -> pathlib.Path | None:
    name = f"{method}_n{n}_{tag}" + (f"_d{d}" if method == "korobov" else "") + ".json"
    return cache_mod.record_path("lattice", name)


def generating_vector(n: int, d: int, method: str = "cbc", gamma=DEFAULT_GAMMA) -> np.ndarray:
    """Generating vector for ``n`` points in ``d`` dimensions (memoized, see module docstring).

    ``method``: ``"cbc"`` (fast CBC) or ``"korobov"``.  ``n`` must be prime.  For the default
    weights and ``n`` on the ladder the package carries the first
    :data:`~loopint.engines.rules.lattice_prime.DIMENSIONS` CBC components
    (:mod:`loopint.engines.rules.lattice_prime`, written by :func:`write_prime_table`), so
    nothing is built: a first run spends no time, and on an accelerator no compilation, on
    the construction.
    """
    if method not in ("cbc", "korobov"):
        raise ValueError(f"lattice must be 'cbc' or 'korobov', got {method!r}")
    if d < 1:
        raise ValueError(f"need d >= 1, got {d}")
    _weights(gamma, d)
    tag = _weights_tag(gamma, d)
    start: Sequence[int] = ()
    if method == "cbc" and tag == _weights_tag(DEFAULT_GAMMA, 1):
        from .rules import lattice_prime as table
        bundled = table.Z.get(n) if table.GAMMA == DEFAULT_GAMMA else None
        if bundled is not None:
            if d <= len(bundled):
                return np.asarray(bundled[:d], dtype=np.int64)
            start = bundled
    path = _cache_file(method, n, tag, d)
    key = (method, n, tag, d if method == "korobov" else None, str(path))

    def build(partial):
        if method == "cbc":
            log.info("building CBC lattice n=%d d=%d", n, d)
            z = cbc(n, d, gamma, start=start if partial is None else partial)
            extra = {}
        else:
            log.info("searching Korobov lattice n=%d d=%d", n, d)
            z, a = korobov(n, d, gamma)
            extra = {"a": int(a)}
        return z, {"method": method, "n": int(n), "weights": tag, "alpha": 2,
                   "criterion": "P_2 (Korobov space, product weights)",
                   "e2": p2_error(z, n, gamma) if n * d <= 2**26 else None, **extra}

    return _memoized(key, path, d, lambda data: data.get("n") == n
                     and data.get("method") == method, build)


def _memoized(key, path, d: int, stored_ok, build) -> np.ndarray:
    """The first ``d`` components of the vector under ``key``: from memory, else from the disk
    cache file ``path`` (when ``stored_ok`` accepts its header), else ``build(partial)``
    (``partial``: a shorter cached vector to extend, or None) -> ``(z, header)``, kept in
    both."""
    with _LOCK:
        z = _MEMO.get(key)
        if z is None:
            data = cache_mod.read_json(path)
            if data and stored_ok(data):
                z = np.asarray(data["z"], dtype=np.int64)
        if z is not None and len(z) >= d:
            _MEMO[key] = z
            return z[:d].copy()
        z, header = build(z)
        _MEMO[key] = z
        cache_mod.write_json(path, {**header, "z": [int(v) for v in z]})
        return z[:d].copy()



EMBEDDED_LOG2 = 28
"""``m_max`` of the QMC engine's embedded sequence: ``2^28`` points, the top of the prime ladder
on an H200 (:func:`loopint.engines.qmc.default_max_log2`); one sequence for every device, so a
CPU and a GPU compute the same rules."""


def embedded_vector(d: int, m_max: int = EMBEDDED_LOG2, gamma=DEFAULT_GAMMA) -> np.ndarray:
    """Generating vector of the embedded lattice sequence (:func:`embedded_cbc`) of ``2^m_max``
    points in ``d`` dimensions, memoized like :func:`generating_vector`.

    For the default weights and ``m_max = EMBEDDED_LOG2`` the package carries the first
    :data:`~loopint.engines.rules.lattice_base2.DIMENSIONS` components
    (:mod:`loopint.engines.rules.lattice_base2`, written by :func:`write_embedded_table`), so
    nothing is built.  More dimensions, other weights or another ``m_max`` are built here, on
    the default device, in ``O(2^m_max)`` memory (``2^28``: about 10 GB; seconds on a GPU,
    minutes on a CPU) and cached on disk."""
    if d < 1 or m_max < 1:
        raise ValueError(f"need d >= 1 and m_max >= 1, got d={d}, m_max={m_max}")
    _weights(gamma, d)
    tag = _weights_tag(gamma, d)
    start: Sequence[int] = ()
    if m_max == EMBEDDED_LOG2 and tag == _weights_tag(DEFAULT_GAMMA, 1):
        from .rules import lattice_base2 as table
        if table.M == m_max and table.GAMMA == DEFAULT_GAMMA:
            if d <= len(table.Z):
                return np.asarray(table.Z[:d], dtype=np.int64)
            start = table.Z
    path = _cache_file("embedded", 1 << m_max, tag, d)
    key = ("embedded", m_max, tag, None, str(path))

    def build(partial):
        log.info("building embedded lattice sequence 2^%d d=%d", m_max, d)
        z = embedded_cbc(m_max, d, gamma, start=start if partial is None else partial)
        return z, {"method": "embedded", "m_max": int(m_max), "weights": tag, "alpha": 2,
                   "criterion": "max over levels of P_2 relative to the best (base 2)"}

    return _memoized(key, path, d, lambda data: data.get("m_max") == m_max
                     and data.get("method") == "embedded", build)


def write_embedded_table(d: int, path=None) -> None:
    """Build the embedded vector for the default weights, ``m_max = EMBEDDED_LOG2`` and ``d``
    dimensions, and write it (atomically) as the module
    :mod:`loopint.engines.rules.lattice_base2`, or to ``path``."""
    z = embedded_cbc(EMBEDDED_LOG2, d, DEFAULT_GAMMA)
    text = ('"""Generating vector of the embedded base-2 lattice sequence built by\n'
            ':func:`loopint.engines.lattice.embedded_cbc` (this package; written by\n'
            ':func:`loopint.engines.lattice.write_embedded_table`): ``2^M`` points, equal\n'
            'product weights ``GAMMA``, the first ``DIMENSIONS`` components."""\n\n'
            f"M = {EMBEDDED_LOG2}\nGAMMA = {DEFAULT_GAMMA}\nDIMENSIONS = {d}\n\n"
            f"Z = (\n{_rows(z, '    ')}\n)\n")
    _write_module(text, path or pathlib.Path(__file__).parent / "rules" / "lattice_base2.py")


def write_prime_table(d: int, log2_range: Sequence[int] = range(10, 29), path=None) -> None:
    """Build the CBC vectors (:func:`cbc`) for the default weights, ``d`` dimensions and the
    ladder's ``n`` for ``k`` in ``log2_range``, and write them (atomically) as the module
    :mod:`loopint.engines.rules.lattice_prime`, or to ``path``.  The top, ``2^28``, is the
    ladder's top on an H200 (:func:`loopint.engines.qmc.default_max_log2`); build it there."""
    vectors = {n: cbc(n, d, DEFAULT_GAMMA) for n in ladder(log2_range)}
    body = "\n".join(f"    {n}: (\n{_rows(z, '        ')}\n    )," for n, z in vectors.items())
    text = ('"""Generating vectors of the prime lattice ladder built by\n'
            ':func:`loopint.engines.lattice.cbc` (this package; written by\n'
            ':func:`loopint.engines.lattice.write_prime_table`): for each number of points\n'
            '``n`` (the largest prime ``<= 2^k``), the first ``DIMENSIONS`` components for equal\n'
            'product weights ``GAMMA``."""\n\n'
            f"GAMMA = {DEFAULT_GAMMA}\nDIMENSIONS = {d}\n\nZ = {{\n{body}\n}}\n")
    _write_module(text, path or pathlib.Path(__file__).parent / "rules" / "lattice_prime.py")


def _rows(z, indent: str) -> str:
    return "\n".join(indent + " ".join(f"{int(v)}," for v in z[i:i + 6])
                     for i in range(0, len(z), 6))


def _write_module(text: str, target) -> None:
    target = pathlib.Path(target)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp_", suffix=".py")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, target)
