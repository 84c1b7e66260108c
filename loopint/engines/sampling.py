"""What the sampling engines (:mod:`~loopint.engines.mc`, :mod:`~loopint.engines.qmc`) share.

Both evaluate the integrand on chunks of points inside one jitted ``lax.fori_loop`` and
accumulate float64 sums, so their memory is set by the chunk size, not by the number of
points; both repeat a host-side loop of steps (MC: growing sample counts, QMC: the levels of
the lattice ladder) that ends when the tolerance is met or the budget is spent.  This module
holds the pieces of that machinery:

- points kept strictly inside the box (:func:`inside_box`), non-finite values found without a
  reduction (:func:`finite_rows`), Neumaier's compensated sum across chunks
  (:func:`neumaier_add`);
- the chunk size derived from the common ``memory_limit`` option
  (:func:`chunk_evaluations`);
- the record of the steps, the tolerance test and the final status (:class:`Progress`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import jax.numpy as jnp
import numpy as np

from . import base

BYTES_PER_EVALUATION = 256
"""Device bytes allowed per evaluation of a chunk when ``memory_limit`` is given: the point
(up to a dozen float64 coordinates), its lattice transform and weight, and a few float64
integrand components, in case XLA keeps them in memory instead of fusing them into the sums."""

DEFAULT_CHUNK_EVALUATIONS = 2**22
"""Evaluations per chunk with ``memory_limit=None`` (any device): large enough to keep an
accelerator busy, about 1 GiB at :data:`BYTES_PER_EVALUATION`."""


def chunk_evaluations(memory_limit: int | None) -> int:
    """Evaluations per chunk: :data:`DEFAULT_CHUNK_EVALUATIONS` for ``memory_limit=None``,
    else ``memory_limit`` bytes at :data:`BYTES_PER_EVALUATION` each (at least one)."""
    if memory_limit is None:
        return DEFAULT_CHUNK_EVALUATIONS
    if int(memory_limit) < 1:
        raise ValueError(f"memory_limit must be a positive number of bytes, got {memory_limit!r}")
    return max(1, int(memory_limit) // BYTES_PER_EVALUATION)


# ----------------------------------------------------------------------------------------------
# chunk arithmetic

def neumaier_add(s, c, x):
    """One step of Neumaier's compensated sum: returns ``(s + x, c + lost low-order part)``."""
    t = s + x
    lost = jnp.where(jnp.abs(s) >= jnp.abs(x), (s - t) + x, (x - t) + s)
    return t, c + lost


def finite_rows(y):
    """``[n]`` mask of the rows of ``y[n, m]`` that are finite in every component (elementwise
    over the few components, no reduction: it stays in the caller's fusion)."""
    ok = jnp.isfinite(y[:, 0])
    for k in range(1, y.shape[1]):
        ok = ok & jnp.isfinite(y[:, k])
    return ok


def inside_box(x, lo, span):
    """Clip points ``x`` (in their own dtype) to the open box: one ulp inside each face.

    ``lo + span * u`` can round onto a face even for ``u`` strictly inside (0, 1).
    """
    lo_ = lo.astype(x.dtype)
    hi_ = (lo + span).astype(x.dtype)
    return jnp.clip(x, jnp.nextafter(lo_, hi_), jnp.nextafter(hi_, lo_))


# ----------------------------------------------------------------------------------------------
# the step loop on the host

@dataclasses.dataclass
class Progress:
    """The estimates of a sampling run, step by step, and the status it ends with.

    ``value`` and ``error`` are the engine's real components (``norm`` unpacks them into the
    user's shape); ``met`` says whether the last recorded step met the tolerance
    ``max(atol, rtol |value|)`` with a finite error.
    """

    norm: base.NormalizedIntegrand
    rtol: float
    atol: float
    callback: Callable | None = None
    history: list = dataclasses.field(default_factory=list)
    value: np.ndarray | None = None
    error: np.ndarray | None = None
    met: bool = False

    def record(self, value, error, evaluations: int, key: tuple = (),
               labels: dict | None = None) -> bool:
        """Record one step's estimate: ``history`` gets ``(*key, value, error)`` in the user's
        form, the callback ``{**labels, evaluations, value, error}``; returns :attr:`met`."""
        self.value, self.error = value, error
        val_user = self.norm.unpack(value)
        err_user = base.complex_error(error, self.norm)
        self.history.append((*key, val_user, err_user))
        if self.callback is not None:
            self.callback({**(labels or {}), "evaluations": evaluations,
                           "value": self.norm.unpack(value),
                           "error": base.complex_error(error, self.norm)})
        self.met = (bool(np.all(np.isfinite(error)))
                    and base.real_tolerance_met(value, error, self.rtol, self.atol, self.norm))
        return self.met

    def error_ratio(self) -> float:
        """The largest ``error / max(atol, rtol |value|)`` over the user's components (inf
        where that tolerance is 0)."""
        tol = np.maximum(self.atol, self.rtol * np.abs(self.norm.unpack(self.value)))
        err_user = base._combine_error(base.complex_error(self.error, self.norm))
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.nanmax(np.where(tol > 0, err_user / tol, np.inf)))

    def result(self, *, method: str, evaluations: int, nonfinite: int, nonfinite_detail: str,
               info: dict, started: float) -> base.IntegrationResult:
        """The run's :class:`~loopint.engines.base.IntegrationResult`: ``"nonfinite: ..."``
        (``nonfinite`` evaluations returned NaN/inf; ``nonfinite_detail`` says what was done
        with them) before ``"converged"`` before ``"max_evals: ..."``.  ``started``: the
        ``time.perf_counter()`` at the start of the run."""
        val_user = self.norm.unpack(self.value)
        err_user = base.complex_error(self.error, self.norm)
        if nonfinite:
            status = (f"{base.NONFINITE}: {nonfinite} of {evaluations} evaluations returned "
                      f"NaN/inf {nonfinite_detail}")
        elif self.met:
            status = base.CONVERGED
        else:
            requested = float(np.max(np.maximum(self.atol,
                                                self.rtol * np.abs(np.asarray(val_user)))))
            status = base.status_not_converged(base.MAX_EVALS, evaluations,
                                               base._combine_error(err_user), requested)
        return base.IntegrationResult(
            value=val_user, error=err_user, converged=bool(self.met and not nonfinite),
            status=status, evaluations=evaluations, seconds=time.perf_counter() - started,
            method=method, info=info)
