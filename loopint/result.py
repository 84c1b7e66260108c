"""The result of :func:`loopint.compute` and the error convention of a scaled value."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import __version__
from .io import jsonable


@dataclass
class Result:
    """A computed loop integral.

    value / error: complex number (or array over kinematic points); ``error.real`` and
        ``error.imag`` bound the errors of the real and imaginary parts.
    converged: True only when every point met the tolerance; ``status`` says why not.
    delta: the deltas of the regulator sequence used (a list, largest first); ``[]`` when
        no sequence was used (delta = 0: a Euclidean point, or the deformed contour); ``region``
        says which case it was.
    evaluations / seconds: the whole computation, including the delta terms of an earlier
        run that ``resume=True`` continued (their ``seconds`` rows add up);
        ``info["seconds_this_run"]`` is the wall time of this call alone.
    error_kind: ``"estimate"`` when converged; ``"lower bound"`` otherwise: a run stopped by
        its budget, or an extrapolation that did not settle, has an error estimate that can be
        far below the true error, so it only says the error is at least that large.
    region: 'euclidean' | 'negative' | 'forced' | 'physical' per point (a list when batched);
        ``info["regulated"]["point_method"]`` says per physical point whether the deformed
        contour or the delta sequence produced it.
    table: per-delta history of the regulator sequence (empty for delta = 0): rows of
        ``{"delta", "value", "error", "evaluations", "seconds"}``; with derivatives, a row's
        values hold the points' values, then each derivative's for every point.
    coefficients / coefficient_errors: for a regulated integral (D or powers with eps,
        :mod:`loopint.dimreg`) the Laurent coefficients ``{j: c_j}`` for j from the leading
        pole to ``eps_order`` (arrays over kinematic points when batched) and their errors
        (real and imaginary parts, as ``error``); ``value`` / ``error`` are then c_0 (or the
        coefficient of eps^eps_order when that is negative).  None otherwise.
    derivatives: with ``derivatives`` asked for (:mod:`loopint.derivatives`), a dict from
        the symbol (``"s"``; ``"s,mt"`` for a second derivative) to a
        :class:`~loopint.derivatives.Derivative` with ``.value`` and ``.error`` like the
        result's (and the coefficients' derivatives for a regulated integral); None otherwise.
        ``converged`` covers them: every derivative met the tolerance too.
    """

    value: Any
    error: Any
    converged: bool
    status: str
    method: str
    prefactor: str
    delta: Any
    evaluations: int
    seconds: float
    device: str
    diagram: str
    kinematics: dict
    settings: dict
    region: Any
    table: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    version: str = __version__
    coefficients: Any = None
    coefficient_errors: Any = None
    derivatives: Any = None

    @property
    def error_kind(self) -> str:
        return "estimate" if self.converged else "lower bound"

    def __repr__(self) -> str:
        v, e = np.atleast_1d(self.value), np.atleast_1d(self.error)
        if v.size == 1:
            val = (f"({v[0].real:.10g} ± {abs(e[0].real):.2g}) + "
                   f"({v[0].imag:.10g} ± {abs(e[0].imag):.2g})i")
        else:
            val = f"{v.size} kinematic points"
        return (f"Result({val}; {self.status}; method={self.method}, "
                f"{self.evaluations:.3g} evaluations, {self.seconds:.3g} s)")

    def to_dict(self) -> dict:
        """Everything needed to reproduce the run, as plain JSON types (complex -> [re, im])."""
        d = {k: getattr(self, k) for k in (
            "value", "error", "error_kind", "converged", "status", "method", "prefactor", "delta",
            "evaluations", "seconds", "device", "diagram", "kinematics", "settings", "region",
            "table", "info", "version")}
        if self.coefficients is not None:
            d["coefficients"] = {str(j): v for j, v in self.coefficients.items()}
            d["coefficient_errors"] = {str(j): v for j, v in self.coefficient_errors.items()}
        if self.derivatives is not None:
            d["derivatives"] = {k: v.to_dict() for k, v in self.derivatives.items()}
        return jsonable(d)


def device_name() -> str:
    """The device the engines run on, e.g. ``"gpu:NVIDIA H200"`` or ``"cpu"``."""
    import jax
    d = jax.devices()[0]
    return f"{d.platform}:{getattr(d, 'device_kind', '')}".rstrip(":")


def complex_parts(re, im) -> np.ndarray:
    """Complex array from real and imaginary parts without inf * 1j = nan surprises."""
    re, im = np.broadcast_arrays(np.asarray(re, float), np.asarray(im, float))
    z = np.empty(re.shape, complex)
    z.real, z.imag = re, im
    return z


def scale_error(e: np.ndarray, prefactor: complex) -> np.ndarray:
    """Errors of (re, im) of v*p from errors (re, im) of v (triangle inequality)."""
    pr, pi = abs(prefactor.real), abs(prefactor.imag)
    er, ei = np.abs(e.real), np.abs(e.imag)
    with np.errstate(invalid="ignore"):     # 0 * inf: a zero part of the prefactor adds nothing
        a = np.where(pi == 0, 0.0, pi * ei)
        b = np.where(pi == 0, 0.0, pi * er)
    return complex_parts(pr * er + a, b + pr * ei)


_POINTS_PREFIX = re.compile(r"^\d+ of \d+ points not converged: ")


def points_status(ok, statuses, batched: bool = True) -> str:
    """The status of a batch of points: ``"converged"``, or ``"n of K points not converged: "``
    followed by the distinct causes (at most three, sorted).  ``ok[K]`` flags the converged
    points; ``statuses`` are the causes, one per point or per share of the points; a share's
    own count (``"m of M points not converged: "``) is dropped, so that a batch assembled
    from batches carries one count, of all its points.  ``batched=False`` (one point): its
    causes alone, without a count."""
    ok = np.asarray(ok, bool)
    if ok.all():
        return "converged"
    if not batched:
        return "; ".join(sorted(set(statuses)))
    causes = sorted({_POINTS_PREFIX.sub("", st) for st in statuses})
    return (f"{int(np.count_nonzero(~ok))} of {ok.size} points not converged: "
            + "; ".join(causes[:3]))
