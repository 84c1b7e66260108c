"""Several local devices: how many an engine uses, and the constraint that shards a batch.

Every engine parallelises over the devices of its host the same way (data parallelism, with
:mod:`jax.sharding`): the points of one integrand call -- a chunk of samples (mc, qmc), a
chunk of regions (cubature, PAGANI), the intervals of one innermost step (iterated) -- are
split along their first axis over a one-dimensional mesh of the first ``n`` local devices
(:func:`constraint`), and everything else (region and interval stores, selection, sums) is
left to XLA's sharding propagation, replicated where it is small.  The work a run does
and the regions or intervals it selects do not depend on the device count: only the order
of floating-point reductions may differ, so the results agree to round-off.

Only local devices are used: under :mod:`jax.distributed` (several processes), each process
shards its own engine runs over the devices it owns, and the processes share the points of
a scan (:mod:`loopint.parallel`).
"""

from __future__ import annotations

from typing import Callable

import jax
import numpy as np
from jax import lax


def device_count(devices: int | None) -> int:
    """Local devices to shard over: all for ``None``, else ``devices`` clipped to [1, all]."""
    local = jax.local_device_count()
    return local if devices is None else max(1, min(int(devices), local))


def batch_sharding(ndev: int):
    """``NamedSharding`` of a batch axis over the first ``ndev`` local devices (None for
    one)."""
    if ndev <= 1:
        return None
    mesh = jax.sharding.Mesh(np.asarray(jax.local_devices()[:ndev]), ("batch",))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))


def constraint(ndev: int) -> Callable:
    """``a -> a`` constrained to :func:`batch_sharding` along its first axis, for use inside
    a jitted function; the identity on one device and for arrays whose first axis does not
    split evenly over ``ndev`` (their work stays on the devices XLA places it on)."""
    shard = batch_sharding(ndev)
    if shard is None:
        return lambda a: a
    return lambda a: lax.with_sharding_constraint(a, shard) if a.shape[0] % ndev == 0 else a


def pow2_count(devices: int | None) -> int:
    """:func:`device_count` rounded down to a power of two: the engines whose batches have
    power-of-two sizes (region chunks, interval buffers) shard over that many devices, so
    that every batch splits evenly."""
    n = device_count(devices)
    return 1 << (n.bit_length() - 1)
