"""Maps between the unit cube and the unit simplex (generic; no physics).

The standard d-simplex is S_d = {x in R^d : x_i >= 0, sum_i x_i <= 1}, volume 1/d!.  The
Feynman-parameter integral over delta(1 - sum_{j=1}^{N} x_j) is the integral over S_{N-1}
with x_N = 1 - sum_{j<N} x_j.
"""

from __future__ import annotations

import jax.numpy as jnp


def simplex_from_cube(u, one_minus_u=None):
    """Sequential map of seed 000 (appendix C code): cube [0,1]^d -> simplex S_d.

    x_1 = u_1, x_k = (1 - x_1 - ... - x_{k-1}) u_k; Jacobian prod_{k=1}^{d-1} (1 - x_1 - ... - x_k).

    Returns ``(x[n, d+1], jacobian[n])``: the d simplex coordinates followed by the remainder
    ``1 - sum x`` (the eliminated Feynman parameter).  ``one_minus_u`` (optional) is ``1 - u``
    computed more accurately than the subtraction (see :func:`simplex_columns_from_cube`).
    """
    cols, jac = simplex_columns_from_cube(u, one_minus_u)
    return jnp.stack(cols, axis=1), jac


def simplex_columns_from_cube(u, one_minus_u=None):
    """:func:`simplex_from_cube` returning the d+1 coordinates as a list of ``[n]`` arrays.

    Keeping columns apart lets XLA fuse the map into the integrand without materializing
    (and re-slicing) an ``[n, d+1]`` array.

    The remainders are formed as products, 1 - x_1 - ... - x_k = prod_{i<=k} (1 - u_i), not by
    subtraction: near the face u_k -> 1 the difference rem - rem u_k would keep only the
    absolute accuracy of rem, and the Jacobian (a product of remainders) would lose digits in
    proportion to 1/(1 - u_k).  A boundary transform t = phi(u) should pass ``one_minus_u`` =
    1 - phi(u) evaluated without cancellation (e.g. phi(1 - u) for a symmetric phi).
    """
    n, d = u.shape
    rem = None
    jac = None
    cols = []
    for k in range(d):
        if k == 1:
            jac = rem
        elif k > 1:
            jac = jac * rem
        uk = u[:, k]
        # per column, so that XLA fuses it into the consumer instead of materializing 1 - u
        omk = 1.0 - uk if one_minus_u is None else one_minus_u[:, k]
        xk = uk if rem is None else rem * uk
        cols.append(xk)
        rem = omk if rem is None else rem * omk
    cols.append(rem)
    if jac is None:
        jac = jnp.ones((n,), u.dtype)
    return cols, jac


def simplex_volume(d: int) -> float:
    """|S_d| = 1/d!."""
    v = 1.0
    for k in range(2, d + 1):
        v /= k
    return v
