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
