"""Regulator sequences: where to sample ``I(delta)`` before extrapolating to ``delta -> 0``."""

from __future__ import annotations

import numpy as np


def geometric_sequence(delta0: float, n: int, q: float = 1.2) -> np.ndarray:
    r"""The geometric sequence :math:`\delta_j = \delta_0 q^{-j}`, ``j = 0, ..., n-1``.

    The Direct Computation Method samples the regulated integral :math:`I(\delta_j)` on this
    sequence, with ``q = 1.2``, and extrapolates :math:`\delta \to 0` with Wynn's epsilon
    algorithm (seed 000, Sec. 4.4).  Terms :math:`\delta^k` of the expansion of
    :math:`I(\delta)` then become geometric components :math:`(q^{-k})^j` in ``j``, which is
    what the epsilon algorithm removes exactly.

    Args:
        delta0: the first (largest) value, ``> 0``.
        n: number of values.
        q: ratio between consecutive values, ``> 1``.
    """
    if not delta0 > 0 or not q > 1 or n < 0:
        raise ValueError(f"need delta0 > 0, q > 1 and n >= 0; got {delta0}, {q}, {n}")
    return float(delta0) * float(q) ** -np.arange(int(n), dtype=float)


def delta_table(delta, values, *, distinct: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(delta, values)`` as arrays, checked: ``delta`` of shape ``(n,)`` with every value
    ``> 0`` (and pairwise different with ``distinct``), ``values`` of shape ``(n,)`` or
    ``(n, m)``.  Raises ValueError otherwise."""
    d = np.asarray(delta, dtype=float)
    v = np.asarray(values)
    if d.ndim != 1 or v.shape[:1] != d.shape or v.ndim not in (1, 2):
        raise ValueError(f"delta must be (n,) and values (n,) or (n, m); got {d.shape}, {v.shape}")
    if not np.all(d > 0):
        raise ValueError("all delta must be positive (the limit is delta -> 0+)")
    if distinct and np.unique(d).size != d.size:
        raise ValueError("the delta must be distinct")
    return d, v
