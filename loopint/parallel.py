"""Several devices and several hosts: how a computation is spread over them.

Two levels, both built on JAX's own machinery (nothing home-made for distribution):

* **Within a host** (``devices = "all" | N``): a scan's kinematic points are split over the
  local devices (:func:`split_by_cost`), one thread per device computes its share with every
  engine pinned to that device (:func:`jax.default_device`), and the results are gathered in
  the points' order.  A single integral (or a share of one device) is data-parallel instead:
  every engine shards its integrand evaluations over the devices it is given
  (:mod:`loopint.engines.sharding`), except that a delta sequence computes its steps
  concurrently, one per device (:func:`loopint.delta_sequence.run`).
* **Across hosts** (:func:`init_distributed`, ``loopint compute --distributed``): after
  :func:`jax.distributed.initialize` every process computes its share of a scan's points
  (:func:`split_by_cost` again) on its own devices as above, and the shares are gathered on every
  process (:func:`allgather_json`, through
  :func:`jax.experimental.multihost_utils.process_allgather`); process 0 writes the outputs.
  A single integral is one program over the devices of every process: each engine shards
  its integrand calls over all of them (``devices="global"``,
  :mod:`loopint.engines.sharding`), and every process runs the same host loop.

The split of a scan is a different partition of the adaptive work than one batched run:
the values of a point computed on 1 or N devices agree within their error estimates, not to
round-off, and converge or not alike.  One engine run agrees to round-off on any number of
devices.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .errors import SpecError

# Relative cost of a point in the physical region (a deformed contour, with its strength
# chosen by pilot runs, or a delta sequence of many runs) against one in the Euclidean region
# (a share of one engine run at delta = 0), for balancing the shares of a scan: an assumed
# round figure, not a measurement; a wrong guess costs balance, never accuracy.
PHYSICAL_COST = 10.0


def local_devices(setting: Any) -> list:
    """The local devices that ``devices`` (``"all"`` or N) asks for; more than the process
    has is a :class:`~loopint.errors.SpecError` naming the key."""
    import jax
    have = jax.local_devices()
    if setting == "all":
        return have
    n = int(setting)
    if n > len(have):
        raise SpecError(f"devices: {n} requested, but this process has {len(have)} local "
                        f"{have[0].platform} device(s); give 'all' or at most {len(have)}")
    return have[:n]


def split_by_cost(costs, parts: int) -> list[np.ndarray]:
    """Indices ``0..len(costs)-1`` split into at most ``parts`` shares of nearly equal total
    cost (the longest-processing-time rule: the costliest point first, each to the share
    with the least cost so far, ties to the lowest share); each share in increasing order,
    empty shares dropped.  Deterministic."""
    costs = np.asarray(costs, float)
    load = np.zeros(max(1, int(parts)))
    owner = np.empty(costs.size, int)
    for k in np.argsort(-costs, kind="stable"):
        j = int(np.argmin(load))
        owner[k] = j
        load[j] += costs[k]
    shares = [np.nonzero(owner == j)[0] for j in range(load.size)]
    return [s for s in shares if s.size]


def point_costs(kinds: list[str]) -> np.ndarray:
    """The balancing weight of each point from its region kind (:data:`PHYSICAL_COST` for
    ``"physical"``, 1 otherwise)."""
    return np.array([PHYSICAL_COST if k == "physical" else 1.0 for k in kinds])


# ------------------------------------------------------------------ several processes
def init_distributed(coordinator_address: str | None = None, num_processes: int | None = None,
                     process_id: int | None = None) -> tuple[int, int]:
    """Join a multi-process run: :func:`jax.distributed.initialize` with these arguments,
    each None taken from the cluster environment (Slurm, Open MPI, ...) as JAX detects it.
    On CPUs the processes exchange data through gloo.  Call it once, before any other JAX
    work.  Returns ``(process_index, process_count)``."""
    import jax
    jax.config.update("jax_cpu_collectives_implementation", "gloo")    # CPU backend only
    jax.distributed.initialize(coordinator_address=coordinator_address,
                               num_processes=num_processes, process_id=process_id)
    return jax.process_index(), jax.process_count()


def allgather_json(obj) -> list:
    """Every process's ``obj`` (JSON-serialisable), in process order, on every process."""
    from jax.experimental import multihost_utils
    data = np.frombuffer(json.dumps(obj).encode(), np.uint8)
    sizes = np.asarray(multihost_utils.process_allgather(np.array([data.size], np.int64)))
    padded = np.zeros(int(sizes.max()), np.uint8)
    padded[:data.size] = data
    every = np.asarray(multihost_utils.process_allgather(padded))
    return [json.loads(bytes(every[i, :int(sizes[i, 0])]).decode())
            for i in range(every.shape[0])]
