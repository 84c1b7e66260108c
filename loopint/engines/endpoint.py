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
(one per interval that touches a singular endpoint, per component): :func:`epsilon_append`
is DQELG's incremental step (its condensed table of two diagonals, safeguards and error
estimate; the host-side :class:`extrapolation.WynnEpsilon` is the reference the tests
compare with).  :mod:`loopint.engines.iterated` keeps the table in each interval that
touches an endpoint and uses the extrapolated value where its error estimate is the smaller.

Translation invariance: every even-column element of the ε-table moves with a constant added
to the sequence, so the table is stored relative to the newest approximation ``S_n``;
the extrapolated limit is then the correction to add to ``S_n``, and no digits are lost to
the size of the integral over the rest of the range.
"""

from __future__ import annotations

import jax
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


def epsilon_append(prev, cur, history, n_history, step, scale):
    """Append one term to a batch of DQELG condensed ε-tables; the extrapolated limit.

    The state of a sequence, all on the origin of its newest term (module docstring):

    * ``prev``, ``cur``: ``(..., K)`` the even columns ``ε_0, ε_2, …`` of the two newest
      ascending diagonals (NaN where absent); ``K`` columns hold ``2K - 1`` terms (DQELG's
      ``limexp``: beyond it the oldest terms, the top of each diagonal, drop out);
    * ``history``: ``(..., R)`` earlier extrapolated results, newest last, the last
      ``n_history`` valid (int ``(...)``).

    ``step`` ``(...)`` is the new term minus the previous newest, ``S_{n+1} - S_n``; ``scale``
    ``(...)`` the size of the terms themselves (for the machine-precision tests: the state
    holds differences only).  The new diagonal comes from Wynn's cross rule

        N = C + 1 / (1/(E - C) - 1/(C - W) + 1/(C - S)),

    ``E, C, W`` the column-``2k`` elements of the new, current and previous diagonals and ``S``
    the previous diagonal's column ``2k - 2`` (Wynn 1966; ``ε_{-2} = ∞``; DQELG's ``res = e1 +
    1/ss``).  As in DQELG: a column whose three newest elements agree to machine precision
    has converged (its newest element is the result); differences at machine precision, or
    a jump of more than ``IRREGULAR_JUMP`` times the size of the data, end the table at that
    column (it regrows one column per term); the result is the element of the new diagonal
    with the smallest local spread ``|e2 - e1| + |e1 - e0| + |res - e2|``.

    Returns ``(prev, cur, history, n_history, result, error, usable)``: the new state, the
    limit (on the new origin) and

    * ``error``: ``max(local spread, Σ_i |result - history_i|)`` over the last three earlier
      results (DQELG's error, with the local spread as a floor as in
      ``extrapolation.wynn``), at least ``5 eps |result| + 10 eps scale``; infinite with fewer
      than three earlier results or terms;
    * ``usable``: that estimate is supported: three terms and three earlier results, finite,
      the last raw step smaller than the one before (else the sequence may diverge and the
      ε-algorithm find its anti-limit), and the results agree to ``ACCELERATION_GAIN``
      times the last raw step (else their spread is no evidence of convergence).
    """
    dt = cur.dtype
    eps = jnp.finfo(dt).eps
    K = cur.shape[-1]
    R = history.shape[-1]
    step = jnp.asarray(step, dt)
    scale = jnp.asarray(scale, dt)
    # The table axis first; one column per iteration of a scan (each iteration's values are
    # materialized once, where a Python loop lets XLA recompute the chain in every use).
    p = jnp.moveaxis(prev, -1, 0) - step
    c = jnp.moveaxis(cur, -1, 0) - step
    hist = history - step[..., None]
    p_left = jnp.concatenate([jnp.full_like(p[:1], jnp.nan), p[:-1]], axis=0)  # column 2k-2

    def tiny(d, x, y):
        return jnp.abs(d) <= eps * jnp.maximum(jnp.maximum(jnp.abs(x), jnp.abs(y)), scale)

    def column(carry, xs):
        e2, result, best, alive, exact, keep = carry
        k, e0, e1, e3 = xs
        first = k == 0                              # ε_{-2} = ∞: no S term
        present = alive & jnp.isfinite(e0) & jnp.isfinite(e1) & jnp.isfinite(e2)
        present = present & (first | jnp.isfinite(e3))
        d1, d2, d3 = e1 - e3, e2 - e1, e1 - e0
        small1 = ~first & tiny(d1, e1, e3)
        small2, small3 = tiny(d2, e2, e1), tiny(d3, e1, e0)
        err2, err3 = jnp.abs(d2), jnp.abs(d3)
        conv = present & small2 & small3
        result = jnp.where(conv, e2, result)
        best = jnp.where(conv, err2 + err3, best)
        exact = exact | conv
        inv1 = jnp.where(first | small1, 0, 1 / jnp.where(first | small1, 1, d1))
        ss = inv1 + 1 / jnp.where(small2, 1, d2) - 1 / jnp.where(small3, 1, d3)
        irregular = jnp.abs(ss) * jnp.maximum(jnp.abs(e1), scale) * IRREGULAR_JUMP <= 1
        stop = present & (conv | small1 | small2 | small3 | irregular)
        keep = jnp.where(stop, k + 1, keep).astype(jnp.int32)
        ok = present & ~stop
        res = e1 + 1 / jnp.where(ok, ss, 1)
        local = err2 + jnp.abs(res - e2) + err3
        better = ok & (local <= best)
        result = jnp.where(better, res, result)
        best = jnp.where(better, local, best)
        res = jnp.where(ok, res, jnp.nan)
        return (res, result, best, ok, exact, keep), res

    zero = jnp.zeros_like(step)
    carry = (zero, zero, jnp.full(step.shape, jnp.inf, dt), jnp.ones(step.shape, bool),
             jnp.zeros(step.shape, bool), jnp.full(step.shape, K, jnp.int32))
    carry, upper = jax.lax.scan(column, carry,
                                (jnp.arange(K - 1, dtype=jnp.int32), p[:-1], c[:-1], p_left[:-1]))
    _, result, best, _, exact, keep = carry
    new = jnp.concatenate([zero[None], upper], axis=0)                 # (K, ...)

    # DQELG's error: the spread of the result and the last three earlier results.
    spread = jnp.zeros_like(result)
    wide = jnp.zeros_like(result)
    for i in range(R):
        d = jnp.where(n_history > R - 1 - i, jnp.abs(result - hist[..., i]), 0)
        wide = wide + d
        if i >= R - 3:
            spread = spread + d
    three = jnp.isfinite(p[0]) & jnp.isfinite(c[0])         # at least three terms
    enough = three & (n_history >= 3)
    error = jnp.where(exact, best, jnp.maximum(best, jnp.where(enough, spread, jnp.inf)))
    error = jnp.maximum(error, 5 * eps * jnp.abs(result) + 10 * eps * scale)
    accelerated = exact | (wide <= ACCELERATION_GAIN * jnp.abs(step))
    # The raw steps must shrink: on a divergent sequence (x^(-1.1): steps growing by 2^0.1)
    # the ε-algorithm returns the anti-limit, the analytic continuation of the integral
    # (QUADPACK's DQAGS tests for it after the fact, ier = 5).
    contracting = jnp.abs(step) < jnp.abs(p[0] - c[0])
    usable = (enough & jnp.isfinite(result) & jnp.isfinite(error) & accelerated
              & contracting)

    # The new state: DQELG keeps the results of tables of three terms or more as history;
    # a table cut at column 2(keep-1) keeps that many columns of the new diagonal and one
    # fewer of the current one.
    history = jnp.where(three[..., None],
                        jnp.concatenate([hist[..., 1:], result[..., None]], axis=-1), hist)
    n_history = jnp.where(three, jnp.minimum(n_history + 1, R), n_history)
    cols = jnp.arange(K)
    prev = jnp.where(cols < keep[..., None] - 1, jnp.moveaxis(c, 0, -1), jnp.nan)
    cur = jnp.where(cols < keep[..., None], jnp.moveaxis(new, 0, -1), jnp.nan)
    return prev, cur, history, n_history, result, error, usable
