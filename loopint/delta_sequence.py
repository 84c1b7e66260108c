"""The regulator sequence of the Direct Computation Method (seed 000, sections 4.2-4.4).

At a physical point (F vanishes inside the simplex) the integrand is regulated, F -> F - i
delta U, and I(delta_j) is computed for delta_j = delta_0 q^-j (q = 1.2 by default).  The
deltas of one step are one vector integrand (:data:`DELTA_STEP` of them), so they share the
evaluations of U and F and one compilation serves every step.  Real and imaginary parts are
extrapolated to delta -> 0 after each step (:func:`extrapolation.extrapolate`: Wynn's
epsilon algorithm or rational extrapolation in delta, whichever has the smaller error
estimate), until the extrapolation meets the tolerance (after at least ``min_terms`` terms)
or ``terms`` deltas are spent.  With several local devices the steps run in rounds, one
step per device (:func:`_step_devices`); a step computed alongside the one that ended the
sequence is counted in the evaluations and left out of the table.

delta_0 is scaled to the problem: the mean of |F|/U over the simplex (:func:`delta_scale`),
so that the first regulated integral smooths the Landau singularity on the scale of F
itself; a number given as ``delta`` overrides it.  Each term is computed to the tolerance of
the plan's delta stage (:data:`loopint.plan.DELTA_RTOL_FACTOR`), since the extrapolation
amplifies the terms' errors; the error it reports includes their propagation.

After each step the table is written atomically to the checkpoint file (if one is given),
and ``resume=True`` continues from it (:func:`load_checkpoint`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import logging
import os
import time

import jax
import numpy as np

from extrapolation import extrapolate

from .derivatives import blocks, split
from .engines.base import Status
from .errors import SpecError
from .io import complex_array, jsonable, write_json_atomic
from .lower import Integrand
from .maps import simplex_from_cube
from .result import scale_error

log = logging.getLogger(__name__)

DELTA_STEP = 4   # deltas per engine call: a fixed vector width, so one compilation serves all

_ROW_KEYS = ("delta", "bare_value", "bare_error", "value", "error", "evaluations", "seconds",
             "engine_status")


def delta_scale(integrand: Integrand, kin: np.ndarray) -> np.ndarray:
    """Mean of |F|/U over a deterministic set of 4096 simplex points, per kinematic point."""
    n = 4096
    d = integrand.ndim
    # a rank-1 lattice in the cube, mapped to the simplex (any well spread set would do)
    z = np.array([1, 1571, 2989, 4001, 5393, 6661, 7919, 9001, 10007, 11003][:d]
                 + [13] * max(0, d - 10))
    u = ((np.arange(n)[:, None] * z[None, :]) % n + 0.5) / n
    x, _ = simplex_from_cube(jax.numpy.asarray(u))
    U, F = integrand.polynomials(x, kin)
    return np.mean(np.abs(np.asarray(F)) / np.asarray(U), axis=0)


SCALE_GROUP_RATIO = 4.0
"""Points of a batch whose delta scales (:func:`delta_scale`) lie within this factor share a
delta sequence (:func:`scale_groups`)."""


def scale_groups(plan, kin: np.ndarray) -> list[tuple[np.ndarray, float | None]]:
    """The points of ``kin`` in groups that share one delta sequence, each with its delta_0
    (None: :func:`run` takes it from the schedule, or from the scale of its points): by
    octaves of :data:`SCALE_GROUP_RATIO` of their delta scale, so that each group starts at
    its own delta_0.  A sequence started at another point's scale, 16 times larger, ended
    before its deltas reached the point's own and extrapolated to values 1e12 times too small
    (an equal-mass triangle at s = 21 m^2 batched with s = 3100 m^2); one point or a fixed
    delta_0 is one group."""
    P = kin.shape[0]
    if P == 1 or plan.schedule.delta0 != "auto":
        return [(np.arange(P), None)]
    scale = np.asarray(delta_scale(plan.delta.integrand, kin), dtype=float)
    if not np.all(np.isfinite(scale) & (scale > 0)):
        return [(np.arange(P), None)]
    octave = np.floor(np.log(scale / scale.max()) / np.log(SCALE_GROUP_RATIO)).astype(int)
    groups = [np.flatnonzero(octave == o) for o in sorted(set(octave.tolist()), reverse=True)]
    return [(g, float(np.max(scale[g]))) for g in groups]


def merge(outs: list[dict], groups: list[np.ndarray]) -> dict:
    """The outcomes of :func:`run` on the ``groups`` of a batch as one (the points in the
    order of the groups, ``points`` their indices into the batch); the per-delta table and
    the deltas, which differ between the groups, are kept per group in ``groups``."""
    if len(outs) == 1:
        return dict(outs[0], points=groups[0])
    cat = {k: np.concatenate([o[k] for o in outs], axis=-1)
           for k in ("value", "error", "converged", "derivatives", "derivative_errors")
           if k in outs[0]}
    return {**cat, "status": [st for o in outs for st in o["status"]],
            "points": np.concatenate(groups), "evaluations": sum(o["evaluations"] for o in outs),
            "table": [], "deltas": [], "delta0": [o["delta0"] for o in outs],
            "seconds_resumed": sum(o["seconds_resumed"] for o in outs),
            "extrapolation": {"status": [st for o in outs for st in o["extrapolation"]["status"]],
                              "method": [str(m) for o in outs
                                         for m in np.atleast_1d(o["extrapolation"]["method"])],
                              "n_terms": [o["extrapolation"]["n_terms"] for o in outs]},
            "groups": [{"points": g.tolist(), "delta0": o["delta0"], "deltas": o["deltas"]}
                       for g, o in zip(groups, outs)]}


def term_usable(engine_status: str, method: str) -> bool:
    """Whether a delta term may enter the extrapolation: converged, or (cubature) stopped by
    its memory or evaluation bound with its best estimate and an error estimate that the
    extrapolation propagates (the smallest deltas of a multi-loop diagram fill the region
    store first; the windows of :func:`extrapolation.rational_windows` weigh what they add)."""
    code = Status.of(engine_status)
    return code is Status.CONVERGED or (
        method == "cubature" and code in (Status.MEMORY_LIMIT, Status.MAX_EVALS))


def fingerprint(problem, settings: dict, delta0: np.ndarray, method: str) -> str:
    """What the terms I(delta_j) of a checkpoint depend on.  Not the sequence length
    (``delta_terms``, ``delta_min_terms``): a resumed run may extend a finished table; nor
    ``devices``: the terms do not depend on the device count beyond round-off, and a run
    may be resumed on another machine."""
    settings = {k: v for k, v in settings.items()
                if k not in ("delta_terms", "delta_min_terms", "devices")}
    blob = json.dumps({"U": str(problem.diagram.U), "F": str(problem.diagram.F),
                       "kin": jsonable(problem.kinematics), "settings": settings,
                       "delta0": jsonable(delta0), "method": method}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def load_checkpoint(checkpoint: str, fp: str, deltas: np.ndarray, P: int) -> list:
    """The rows of a checkpoint written by :func:`run` for the same terms (fingerprint
    ``fp``), at most ``len(deltas)`` of them, as ``(row, value[P], error[P])``.  A checkpoint
    of another problem or settings, or one that cannot be read, is a :class:`SpecError`
    naming the file."""
    def bad(why: str) -> SpecError:
        return SpecError(f"{checkpoint}: {why}; remove it or run without --resume")

    try:
        with open(checkpoint) as fh:
            saved = json.load(fh)
    except OSError as e:
        raise bad(f"cannot read the checkpoint ({e.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise bad(f"not a readable checkpoint (truncated or corrupt JSON: {e})") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("rows"), list) \
            or "fingerprint" not in saved:
        raise bad("not a checkpoint of loopint (no fingerprint and rows)")
    if saved["fingerprint"] != fp:
        raise bad("the checkpoint belongs to another problem or other settings "
                  "(diagram, kinematics, rtol, method, ...)")
    rows = []
    for i, row in enumerate(saved["rows"][:len(deltas)]):
        try:
            if not isinstance(row, dict) or any(k not in row for k in _ROW_KEYS):
                raise ValueError("missing keys")
            value, error = complex_array(row["bare_value"]), complex_array(row["bare_error"])
            if value.shape != (P,) or error.shape != (P,):
                raise ValueError("wrong number of kinematic points")
            if not np.isclose(float(row["delta"]), deltas[i], rtol=1e-12, atol=0):
                raise ValueError(f"delta {row['delta']} is not delta_{i} = {deltas[i]}")
            row = {**row, "evaluations": int(row["evaluations"]), "seconds": float(row["seconds"])}
        except (ValueError, TypeError, IndexError) as e:
            raise bad(f"row {i} of the checkpoint is damaged ({e})") from None
        rows.append((row, value, error))
    return rows


def run(plan, kin: np.ndarray, *, progress=None, checkpoint: str | None = None,
        resume: bool = False, t_start: float | None = None,
        delta0: float | None = None) -> dict:
    """The delta sequence of ``plan`` (a :class:`~loopint.plan.RunPlan`: its ``delta`` stage
    and ``schedule``) at the points ``kin[P, s]``, extrapolated to delta -> 0; ``delta0``:
    its start where the caller has it (:func:`scale_groups`).

    Returns the values and errors (prefactor applied), per-point convergence and status, the
    table of terms, the deltas, delta_0, the evaluations, the seconds of resumed terms and
    the extrapolation's status and method.
    """
    stage, sched, prefactor = plan.delta, plan.schedule, plan.prefactor
    method = stage.method
    t_start = time.perf_counter() if t_start is None else t_start
    P = kin.shape[0]
    PB = P * plan.blocks     # every derivative is extrapolated like the value: more "points"
    if delta0 is not None:
        delta0 = np.full(P, float(delta0))
    elif sched.delta0 == "auto":
        delta0 = np.full(P, float(np.max(delta_scale(stage.integrand, kin))))
    else:
        delta0 = np.full(P, float(sched.delta0))
    # one delta sequence for all points of a batch (they share the vector integrand): the
    # largest scale, so every point starts well regulated.
    d0 = float(delta0[0])
    all_deltas = d0 * sched.q ** -np.arange(sched.terms, dtype=float)
    fp = fingerprint(plan.problem, plan.settings.to_dict(), delta0, method)
    vals: list = []    # per delta: complex [P]
    errs: list = []
    rows: list = []
    if resume and checkpoint and os.path.exists(checkpoint):
        for row, v, e in load_checkpoint(checkpoint, fp, all_deltas, PB):
            rows.append(row)
            vals.append(v)
            errs.append(e)
        log.info("resumed %d delta terms from %s", len(rows), checkpoint)
    evaluations = sum(r["evaluations"] for r in rows)
    seconds_resumed = sum(r["seconds"] for r in rows)

    def extrapolated() -> dict:
        return extrapolate(np.array(vals), np.array(errs), rtol=sched.rtol, atol=sched.atol,
                           deltas=np.array([r_["delta"] for r_ in rows]))

    def report(ext: dict) -> None:
        if progress:
            progress({"stage": "delta", "n": len(rows), "delta": float(rows[-1]["delta"]),
                      "value": ext["value"][:P] * prefactor,
                      "error": scale_error(ext["error"][:P], prefactor),
                      "evaluations": evaluations, "seconds": time.perf_counter() - t_start})

    n = len(rows)
    # a resumed table is extrapolated first: it may be complete (all terms computed, not
    # converged) or already converged, and then no term is added
    ext = extrapolated() if rows else None
    if ext is not None:
        report(ext)

    def more() -> bool:
        return n < sched.terms and not (ext is not None and n >= sched.min_terms
                                        and np.all(ext["converged"]))

    devices = _step_devices(plan, method)
    while more():
        starts = range(n, min(sched.terms, n + DELTA_STEP * max(1, len(devices))), DELTA_STEP)
        steps = [all_deltas[a:a + DELTA_STEP] for a in starts]
        for ds, (r, dt, w) in zip(steps, _integrate_steps(plan, stage, kin, steps, vals,
                                                          method, devices)):
            evaluations += r.evaluations
            if not more():       # computed alongside a step that ended the sequence
                continue
            step = len(ds)
            v = split(r.value, plan.blocks, P, w).reshape(PB, -1)[:, :step]
            e = split(r.error, plan.blocks, P, w).reshape(PB, -1)[:, :step]
            for j in range(step):
                vals.append(v[:, j])
                errs.append(e[:, j])
                rows.append({"delta": float(ds[j]), "bare_value": v[:, j],
                             "bare_error": e[:, j], "value": v[:, j] * prefactor,
                             "error": scale_error(e[:, j], prefactor),
                             "evaluations": int(r.evaluations) if j == 0 else 0,
                             "seconds": dt if j == 0 else 0.0, "engine_status": r.status})
            n = len(rows)
            if checkpoint:
                write_json_atomic(checkpoint, {"fingerprint": fp, "rows": rows})
            ext = extrapolated()
            report(ext)
    return _outcome(ext, rows, method, prefactor, evaluations, d0, seconds_resumed,
                    plan.derivatives)


def _step_devices(plan, method: str) -> list:
    """The local devices that compute successive steps at the same time, one step each, or
    none (one step at a time, its engine run sharded over the devices).  The terms of
    different deltas are independent integrals, so the steps of a round run concurrently,
    each on one device, and equal their one-device runs bit for bit; a sharded run of one
    step shares only its evaluations, while its region store and selection are repeated on
    every device.  Not for the iterated engine (each step takes its scale from the step
    before) nor under :mod:`jax.distributed` (one program over every host)."""
    if method == "iterated" or jax.process_count() > 1:
        return []
    from .parallel import local_devices
    devices = local_devices(plan.settings.devices)
    return devices if len(devices) > 1 else []


def _integrate_steps(plan, stage, kin: np.ndarray, steps: list, vals: list, method: str,
                     devices: list) -> list:
    """``(result, seconds, weights)`` of the engine run of each step (its deltas, padded to
    :data:`DELTA_STEP`, the padding dropped afterwards, so that one compilation serves all):
    without ``devices`` one step, on the devices the engine shards over; with them the
    steps concurrently, the j-th on ``devices[j]`` alone (a round of one step too, so that
    every term is its one-device value)."""
    def one(j: int, pin: bool):
        ds = steps[j]
        if len(ds) < DELTA_STEP:
            ds = np.concatenate([ds, np.full(DELTA_STEP - len(ds), ds[-1])])
        t0 = time.perf_counter()
        with jax.default_device(devices[j]) if pin else contextlib.nullcontext():
            f, w = plan.bind(stage.integrand.bind(kin, ds, real=False))
            options = {"devices": 1} if pin else _iterated_scale(vals, method, w)
            r = stage.integrate(f, **options)
        return r, time.perf_counter() - t0, w

    if not devices:
        return [one(0, False)]
    with concurrent.futures.ThreadPoolExecutor(len(steps), "loopint-delta") as pool:
        return list(pool.map(one, range(len(steps)), [True] * len(steps)))


def _iterated_scale(vals: list, method: str, weights: np.ndarray | None = None) -> dict:
    """After the first step the size of every component is known from the previous delta:
    the iterated engine takes it as its ``scale`` and needs no pilot run (it reruns if the
    scale was too loose).  ``weights``: the derivatives' (:mod:`loopint.derivatives`), by
    which the engine sees them multiplied."""
    if vals and method == "iterated":
        last = np.abs(np.asarray(vals[-1]))                           # [blocks * P]
        if weights is not None:
            last = last * weights.reshape(-1)
        if np.all(np.isfinite(last)) and np.all(last > 0):
            return {"scale": np.repeat(last, DELTA_STEP)}     # component (b*P + p)*R + r
    return {}


def _outcome(ext: dict, rows: list, method: str, prefactor: complex, evaluations: int,
             d0: float, seconds_resumed: float, derivatives=None) -> dict:
    """The sequence's result per point: converged when the extrapolation of its value and of
    every derivative (a :class:`loopint.derivatives.Request`) converged and every term may
    enter it (:func:`term_usable`)."""
    B = blocks(derivatives)
    P = len(ext["value"]) // B
    n = len(rows)
    bad = [r_["engine_status"] for r_ in rows if not term_usable(r_["engine_status"], method)]
    engine_ok = not bad
    each = np.asarray(ext["converged"]).reshape(B, P)
    conv = np.all(each, axis=0) & engine_ok
    status = ["extrapolation not converged"] * P
    for i in range(P):
        if conv[i]:
            status[i] = "converged"
        elif not engine_ok:
            status[i] = f"an I(delta) integral did not converge ({bad[0]})"
        else:
            b = int(np.argmin(each[:, i]))
            what = "" if b == 0 else f" of the derivative {derivatives.labels[b - 1]}"
            status[i] = (f"extrapolation{what} not converged after {n} delta terms "
                         f"({ext['status'][b * P + i]})")
    value = (np.asarray(ext["value"]) * prefactor).reshape(B, P)
    error = scale_error(np.asarray(ext["error"]), prefactor).reshape(B, P)
    derivatives = {} if B == 1 else {"derivatives": value[1:],
                                          "derivative_errors": error[1:]}
    return {"value": value[0], "error": error[0], **derivatives,
            "converged": conv, "status": status, "evaluations": evaluations,
            "table": rows, "deltas": [float(r_["delta"]) for r_ in rows], "delta0": d0,
            "seconds_resumed": seconds_resumed,
            "extrapolation": {"status": list(map(str, ext["status"])),
                              "method": ext["method"], "n_terms": n}}
