r"""Extrapolation toward a singular endpoint (QUADPACK QAGS), vectorized over intervals.

QUADPACK's DQAGS (Piessens, de Doncker-Kapenga, Überhuber & Kahaner 1983, §3.4) integrates
functions with integrable endpoint singularities such as ``x^(-1/2)``, ``log x`` or
``x^(-0.9)`` by bisecting toward the singular point and extrapolating the sequence of
approximations with Wynn's ε-algorithm (routine DQELG).  Bisection alone converges slowly
there: for ``f(x) = x^α g(x)`` the Gauss–Kronrod error of the interval ``[0, h]`` is
``c_0 h^(α+1) + c_1 h^(α+2) + …`` (Lyness & Ninham 1967, "Numerical quadrature and asymptotic
expansions"), so each bisection gains only a factor ``2^(α+1)`` (``1.07`` for ``α = -0.9``).
The approximations

    S_n = G([lo, lo + h_n]) + Σ_{i<n} G(piece_i),     h_n = h_0 / s^n,

(``G`` the Gauss–Kronrod estimate, ``piece_i`` the intervals cut off by the ``n``-th split
into ``s`` pieces) form a sum of geometric sequences ``S + Σ_k c_k λ_k^n``, ``λ_k =
s^-(α+1+k)``, for which Wynn's ε-algorithm (the iterated Shanks transform) is exact term by
term: ``2k + 1`` approximations remove ``k`` terms.  Logarithmic factors (``x^α log x``) make
the components confluent; the ε-algorithm still accelerates them, more slowly.

This module holds the arithmetic, written for ``jit`` and for a batch of sequences at once
(one per interval that touches a singular endpoint, per component): :func:`epsilon_limit`
is DQELG on a window of the last ``H`` approximations, with its safeguards and error
estimate (the host-side, incremental :class:`extrapolation.WynnEpsilon` is the reference the
tests compare with).  :mod:`loopint.engines.iterated` keeps the window in each interval that
touches an endpoint and uses the extrapolated value where its error estimate is the smaller.

Translation invariance: every element of the ε-table moves with a constant added to the
sequence, so the approximations are stored relative to the newest one, ``E_i = S_i - S_n``;
the extrapolated limit is then the correction to add to ``S_n``, and no digits are lost to
the size of the integral over the rest of the range.
"""

from __future__ import annotations

import jax.numpy as jnp

IRREGULAR_JUMP = 1e4
"""DQELG's test for irregular behaviour: a new element further than this many times the
size of the data from its neighbour ends the table at that column."""

HISTORY = 4
"""Earlier extrapolated results compared with the newest in the error estimate (DQELG: 3;
``extrapolation.safeguards.HISTORY_DEPTH`` explains 4)."""

ACCELERATION_GAIN = 1e-2
"""The extrapolated results must agree to this fraction of the last raw step before their
spread is trusted as the error (``extrapolation.safeguards.ACCELERATION_GAIN``): without
evidence of acceleration (logarithmic convergence) the spread underestimates the error."""


def epsilon_limit(terms, n, history, n_history, axis: int = -1):
    """DQELG on the last ``H`` terms of a batch of sequences.

    Args:
        terms: the approximations, ``H`` of them along ``axis``, newest last, right-aligned:
            only the last ``n`` entries are valid (the others are ignored).
        n: int, number of valid terms (``<= H``), broadcasting with ``terms`` less ``axis``.
        history: the earlier extrapolated results, ``R`` of them along ``axis`` (newest last,
            right-aligned, the last ``n_history`` valid), on the same origin as ``terms``.
        n_history: int, like ``n``.

    Returns ``(result, error, usable)``, shaped like ``terms`` less ``axis``:

    * ``result``: the element of the newest ascending diagonal with the smallest local
      spread ``|e2 - e1| + |e1 - e0| + |res - e2|`` (DQELG), or the column that converged to
      machine precision;
    * ``error``: ``max(local spread, Σ_i |result - history_i|)`` over the last three earlier
      results (DQELG's error; the local spread as a floor, as in ``extrapolation.wynn``), at
      least ``5 eps |result|`` plus the round-off of the terms; infinite with fewer than
      three earlier results;
    * ``usable``: the error is supported: at least three terms and three earlier results,
      finite, and the results agree to ``ACCELERATION_GAIN`` times the last raw step (else
      their spread is no evidence of convergence).
    """
    H = terms.shape[axis]
    R = history.shape[axis]
    dt = terms.dtype
    eps = jnp.finfo(dt).eps
    # Lists of equally shaped arrays: every step below is elementwise, so XLA fuses the
    # whole table into one pass over the batch.
    raw = [jnp.take(terms, i, axis=axis) for i in range(H)]
    t = [jnp.where(n > H - 1 - i, x, jnp.nan) for i, x in enumerate(raw)]
    scale = jnp.zeros_like(raw[0])
    for i, x in enumerate(raw):
        scale = jnp.maximum(scale, jnp.where(n > H - 1 - i, jnp.abs(x), 0))
    cols = _even_columns(t, scale, eps)

    # Scan the newest ascending diagonal (DQELG's loop over the columns 2k).
    last = H - 1
    result = t[last]
    best = jnp.full(result.shape, jnp.inf, dt)
    alive = jnp.ones(result.shape, bool)
    exact = jnp.zeros(result.shape, bool)
    for k in range(len(cols) - 1):
        c = cols[k]
        e2, e1, e0 = c[last], c[last - 1], c[last - 2]
        err2, err3 = jnp.abs(e2 - e1), jnp.abs(e1 - e0)
        present = jnp.isfinite(e0) & jnp.isfinite(e1) & jnp.isfinite(e2)
        small2 = err2 <= eps * jnp.maximum(jnp.maximum(jnp.abs(e2), jnp.abs(e1)), scale)
        small3 = err3 <= eps * jnp.maximum(jnp.maximum(jnp.abs(e1), jnp.abs(e0)), scale)
        conv = alive & present & small2 & small3
        result = jnp.where(conv, e2, result)
        best = jnp.where(conv, err2 + err3, best)
        exact = exact | conv
        alive = alive & present & ~conv
        res = cols[k + 1][last]
        step = alive & jnp.isfinite(res)
        local = err2 + jnp.abs(res - e2) + err3
        better = step & (local <= best)
        result = jnp.where(better, res, result)
        best = jnp.where(better, local, best)
        alive = step

    # DQELG's error: the spread of the result and the last three earlier results.
    spread = jnp.zeros_like(result)
    wide = jnp.zeros_like(result)
    for i in range(R):
        d = jnp.where(n_history > R - 1 - i, jnp.abs(result - jnp.take(history, i, axis=axis)),
                      0)
        wide = wide + d
        if i >= R - 3:
            spread = spread + d
    enough = (n_history >= 3) & (n >= 3)
    error = jnp.where(exact, best, jnp.maximum(best, jnp.where(enough, spread, jnp.inf)))
    error = jnp.maximum(error, 5 * eps * jnp.abs(result) + 10 * eps * scale)
    raw_step = jnp.abs(raw[last] - raw[last - 1]) if H > 1 else jnp.zeros_like(result)
    accelerated = exact | (wide <= ACCELERATION_GAIN * raw_step)
    usable = enough & jnp.isfinite(result) & jnp.isfinite(error) & accelerated
    return result, error, usable


def _even_columns(t: list, scale, eps) -> list:
    """Even columns ``ε_0, ε_2, …`` of the ε-table of the terms ``t`` (a list of arrays), each
    a list indexed by the newest term an element uses (``None`` before the first), by Wynn's
    cross rule

        N = C + 1 / (1/(E - C) - 1/(C - W) + 1/(C - S)),

    ``N = ε_{2k+2}`` and ``E, C, W = ε_{2k}`` ending at terms ``i, i-1, i-2``, ``S =
    ε_{2k-2}`` ending at term ``i-2`` (Wynn 1966; ``ε_{-2} = ∞``; DQELG's ``res = e1 + 1/ss``).
    An element whose differences vanish to machine precision, or that jumps by more than
    ``IRREGULAR_JUMP`` times the size of the data (DQELG), is NaN, and so is everything
    built on it: the table ends there.
    """
    H = len(t)

    def tiny(d, x, y):
        return jnp.abs(d) <= eps * jnp.maximum(jnp.maximum(jnp.abs(x), jnp.abs(y)), scale)

    cols = [list(t)]
    for k in range((H - 1) // 2):
        cur = cols[-1]
        new = [None] * H
        for i in range(2 * k + 2, H):
            E, C, W = cur[i], cur[i - 1], cur[i - 2]
            d2, d3 = E - C, C - W
            tiny2, tiny3 = tiny(d2, E, C), tiny(d3, C, W)
            if k == 0:
                inv1, tiny1 = 0.0, False
            else:
                S = cols[-2][i - 2]
                d1 = C - S
                tiny1 = tiny(d1, C, S)
                inv1 = 1 / jnp.where(tiny1, 1, d1)
            ss = inv1 + 1 / jnp.where(tiny2, 1, d2) - 1 / jnp.where(tiny3, 1, d3)
            irregular = jnp.abs(ss) * jnp.maximum(jnp.abs(C), scale) * IRREGULAR_JUMP <= 1
            bad = tiny1 | tiny2 | tiny3 | irregular
            new[i] = jnp.where(bad, jnp.nan, C + 1 / jnp.where(bad, 1, ss))
        cols.append(new)
    return cols
