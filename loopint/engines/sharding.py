"""Several local devices: how many an engine uses, and the constraint that shards a batch.

Every engine parallelises over the devices of its host the same way (data parallelism, with
:mod:`jax.sharding`): the points of one integrand call -- a chunk of samples (mc, qmc), a
chunk of regions (cubature, PAGANI), the intervals of one innermost step (iterated) -- are
split along their first axis over a one-dimensional mesh of the first ``n`` local devices
(:func:`constraint`), and everything else (region and interval stores, selection, sums) is
left to XLA's sharding propagation, replicated where it is small.  The work a run does
and the regions or intervals it selects do not depend on the device count: only the order
of floating-point reductions may differ, so the results agree to round-off.

``devices`` is None (every local device), a number N (the first N local devices) or
``"global"``: every device of every process of a :mod:`jax.distributed` run, which then all
make the same call (one program over all hosts; :func:`loopint.compute` does this for a single
integral, and shares the points of a scan between the processes instead,
:mod:`loopint.parallel`).
"""

from __future__ import annotations

from typing import Callable

import jax
import numpy as np
from jax import lax


def device_count(devices: int | str | None) -> int:
    """Devices to shard over: every device of every process for ``"global"``, every local
    one for ``None``, else ``devices`` clipped to [1, local devices]."""
    if devices == "global":
        return jax.device_count()
    local = jax.local_device_count()
    return local if devices is None else max(1, min(int(devices), local))


def batch_sharding(ndev: int):
    """``NamedSharding`` of a batch axis over the first ``ndev`` local devices, or over all
    devices of the run when ``ndev`` exceeds the local ones (``"global"``); None for one."""
    if ndev <= 1:
        return None
    pool = jax.local_devices() if ndev <= jax.local_device_count() else jax.devices()
    mesh = jax.sharding.Mesh(np.asarray(pool[:ndev]), ("batch",))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))


def constraint(ndev: int) -> Callable:
    """``a -> a`` constrained to :func:`batch_sharding` along its first axis, for use inside
    a jitted function; the identity on one device and for arrays whose first axis does not
    split evenly over ``ndev`` (their work stays on the devices XLA places it on)."""
    shard = batch_sharding(ndev)
    if shard is None:
        return lambda a: a
    return lambda a: lax.with_sharding_constraint(a, shard) if a.shape[0] % ndev == 0 else a


def pow2_count(devices: int | str | None) -> int:
    """:func:`device_count` rounded down to a power of two: the engines whose batches have
    power-of-two sizes (region chunks, interval buffers) shard over that many devices, so
    that every batch splits evenly.  ``"global"`` with a total that is not a power of two
    falls back to the local devices (every process must take part in a global program)."""
    n = device_count(devices)
    p = 1 << (n.bit_length() - 1)
    if devices == "global" and p != n:
        return pow2_count(None)
    return p
