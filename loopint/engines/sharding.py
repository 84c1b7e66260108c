"""Several local devices: how many an engine uses, and the constraint that shards a batch.

Every engine parallelises over the devices of its host the same way (data parallelism, with
:mod:`jax.sharding`): the points of one integrand call -- a chunk of samples (mc, qmc), a
chunk of regions (cubature, PAGANI), the intervals of one innermost step (iterated) -- are
split along their first axis over a one-dimensional mesh of the first ``n`` local devices
(:func:`constraint`), and everything else (region and interval stores, selection, sums) is
left to XLA's sharding propagation, replicated where it is small.  The QMC engine, whose
sums need nothing of the points but their total, instead runs its whole chunk loop once per
device on that device's share of every chunk (:func:`per_device`), and combines the devices'
sums once per call.  The work a run does and the regions or intervals it selects do
not depend on the device count: only the order of floating-point reductions may differ, so
the results agree to round-off.

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


AXIS = "batch"
"""The name of the mesh axis the devices lie on."""


def _mesh(ndev: int):
    """One-dimensional mesh of the first ``ndev`` local devices, or of every device of the
    run when ``ndev`` exceeds the local ones (``"global"``)."""
    pool = jax.local_devices() if ndev <= jax.local_device_count() else jax.devices()
    return jax.sharding.Mesh(np.asarray(pool[:ndev]), (AXIS,))


def batch_sharding(ndev: int):
    """``NamedSharding`` of a batch axis over :func:`_mesh`; None for one device."""
    if ndev <= 1:
        return None
    return jax.sharding.NamedSharding(_mesh(ndev), jax.sharding.PartitionSpec(AXIS))


def per_device(ndev: int, body: Callable) -> Callable:
    """``body`` run once on each of ``ndev`` devices (``jax.shard_map``), every argument and
    every result replicated: ``body`` takes its share of the work from
    :func:`device_index` and must return the same values on every device (combine the shares
    with ``lax.psum(x, AXIS)``).  ``body`` itself for one device.  For use inside a jitted
    function.

    A chunk of points sharded by :func:`constraint` makes XLA gather whatever reshape crosses
    the sharded axis (a lattice chunk's ``(shifts, points, d)`` flattened for the integrand
    is gathered whole onto every device, and evaluated on each); a per-device loop moves
    nothing but its sums."""
    if ndev <= 1:
        return body
    spec = jax.sharding.PartitionSpec()
    return jax.shard_map(body, mesh=_mesh(ndev), in_specs=spec, out_specs=spec,
                         check_vma=False)


def device_index(ndev: int):
    """This device's index on the mesh inside :func:`per_device` (0 for one device)."""
    return lax.axis_index(AXIS) if ndev > 1 else 0


def total(x, ndev: int):
    """The sum of ``x`` over the devices of :func:`per_device` (``x`` for one device)."""
    return lax.psum(x, AXIS) if ndev > 1 else x


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
