"""``loopint.compute``: a loop integral at one or many kinematic points, with an honest error.

The regulator driver of the Direct Computation Method (seed 000, sections 4.2-4.4), in
three steps per group of kinematic points that share the supports of U and F:

* :class:`loopint.plan.RunPlan`: the diagram at the points, their regions
  (:func:`loopint.diagram.classify_F`), the prefactor, and the engine runs it will make.
* Where F has one sign on the simplex the integral is computed directly at delta = 0 (the
  plan's ``direct`` stage).
* Physical points (F vanishes inside the simplex) go to the deformed contour
  (:mod:`loopint.contour`) and, where it does not converge or cannot be used, to the delta
  sequence F -> F - i delta U extrapolated to delta -> 0 (:mod:`loopint.delta_sequence`);
  ``cross_check`` computes both and compares them.

Multi-loop diagrams (U vanishes on the boundary of the simplex, at the subloops) are
integrated over the decomposed sectors (:mod:`loopint.sectors`), where the integrand is
bounded; their delta sequence by Genz-Malik cubature (:func:`loopint.plan.method_for`).
Regulated diagrams (D or powers with eps) go to :mod:`loopint.dimreg`.

The points of a scan are shared out over the processes of a :mod:`jax.distributed` run and
over the local devices (``devices``) first (:mod:`loopint.parallel`); each share is computed
as above, and the shares' results are put back in the points' order.
"""

from __future__ import annotations

import os
import time

_IMPORT_START = time.perf_counter()

from typing import Any, Callable, Mapping

import jax
import numpy as np

from . import delta_sequence, parallel
from .contour import combine_physical, contour_points
from .derivatives import Derivative, blocks, request, split
from .diagram import Diagram
from .errors import DiagramError, SpecError
from .io import jsonable
from .plan import RunPlan, integrand, point_regions, support_groups, verdict
from .problem import Problem, Settings, check_kinematics, load, validate_settings
from .region import one_loop_landau_points, pinch_tolerance
from .result import Result, device_name, points_status, scale_error
from . import timing
from .timing import compile_clock

__all__ = ["Result", "compute", "device_name"]


def compute(target: Problem | Diagram | str | os.PathLike,
            kinematics: Mapping[str, Any] | None = None, *,
            settings: Settings | None = None, progress: Callable[[dict], None] | None = None,
            checkpoint: str | None = None, resume: bool = False, **overrides) -> Result:
    """Compute a loop integral (the Python API of the README).

    Args:
        target: a :class:`~loopint.problem.Problem` (e.g. from :func:`loopint.load`), a
            :class:`~loopint.diagram.Diagram`, or the path of a diagram file (read by
            :func:`loopint.load`).
        kinematics: symbol -> number or 1-D array (arrays give a batched scan, one vector
            integrand over all points).  Required for a Diagram; replaces a Problem's values.
        settings: a :class:`~loopint.problem.Settings`; keyword overrides such as
            ``method="qmc"``, ``rtol=1e-8``, ``delta=0.5``, ``prefactor="none"`` apply on top.
        progress: called with a dict after each stage (used by the CLI); no printing
            otherwise: ``{"stage": "direct" | "contour" | "delta", "value", "error",
            "evaluations", "seconds"}``, a "delta" step also with ``n`` (terms so far) and
            ``delta`` (the smallest so far).
        checkpoint: file for the partial delta-table (written atomically after each step);
            ``resume=True`` continues from it (and extends a finished table when
            ``delta_terms`` was raised).  A checkpoint of other settings, or a damaged one, is
            a :class:`~loopint.problem.SpecError` naming the file.

    Returns:
        :class:`~loopint.result.Result` (value, error, converged, status, table, ...);
        ``info["timing"]`` splits the call's wall time into JAX's tracing, lowering,
        compilation and loads from the compilation cache, and the rest (:mod:`loopint.timing`).
    """
    t_start = time.perf_counter()
    problem, s = _normalized(target, kinematics, settings, overrides)
    n_points = problem.n_points
    devices = parallel.local_devices(s.devices)     # also checks the setting here
    with compile_clock() as clock:
        if n_points > 1 and checkpoint is None and jax.process_count() > 1:
            result = _compute_processes(problem, s, progress, t_start)
        elif n_points > 1 and checkpoint is None and len(devices) > 1:
            result = _compute_devices(problem, s, progress, t_start)
        else:
            result = _compute_here(problem, s, progress, checkpoint, resume, t_start)
    result.info["timing"] = clock.split(time.perf_counter() - t_start)
    return result


def _compute_here(problem: Problem, s: Settings, progress, checkpoint, resume,
                  t_start: float) -> Result:
    """:func:`compute` on the devices of this process, one plan per support group."""
    if problem.diagram.regulated:
        from .dimreg import compute_series
        return compute_series(problem, s, progress, t_start)
    if s.eps_order is not None:
        raise DiagramError(
            f"eps_order = {s.eps_order} needs a regulated integral: give the dimension (or a "
            "power) with eps, e.g. dimension = \"4 - 2*eps\"", "dimension")
    probe = integrand(problem.diagram, "simplex", "none", "float64")
    kin = probe.kinematics_array(problem.kinematics)
    groups = support_groups(probe, kin)
    if len(groups) > 1:
        return _compute_groups(problem, groups, s, progress, t_start)
    plan = RunPlan.at(problem, s, probe, *groups[0][:2], kin)
    return _run(plan, progress, checkpoint, resume, t_start)


def _normalized(target, kinematics, settings, overrides) -> tuple[Problem, Settings]:
    """The Problem (with its kinematics checked) and the validated Settings of a call."""
    if isinstance(target, (str, os.PathLike)):
        target = load(target)
    if isinstance(target, Diagram):
        if kinematics is None and target.kinematic_symbols:
            raise ValueError(f"kinematics: values needed for {list(target.kinematic_symbols)}")
        problem = Problem(target, check_kinematics(target, kinematics or {}))
    elif isinstance(target, Problem):
        problem = target
        if kinematics is not None:
            problem = Problem(target.diagram, check_kinematics(target.diagram, kinematics),
                              target.settings, target.reference, target.path)
    else:
        raise TypeError("compute() needs a Problem, a Diagram or the path of a diagram file, "
                        f"got {type(target).__name__}")
    base = settings or problem.settings
    given = {k: v for k, v in overrides.items() if v is not None}
    s = validate_settings({**base.to_dict(), **given})
    return problem, s


class _Points:
    """Per-point results of one plan, filled stage by stage: the values and, per derivative
    asked for, its values (``dvalue[j, k]``)."""

    def __init__(self, K: int, blocks: int = 1):
        self.value = np.zeros(K, complex)
        self.error = np.zeros(K, complex)
        self.dvalue = np.zeros((blocks - 1, K), complex)
        self.derror = np.zeros((blocks - 1, K), complex)
        self.ok = np.zeros(K, bool)
        self.status: list[str] = [""] * K
        self.evaluations = 0
        self.methods: set = set()

    def fill(self, idx, value, error, converged, status, dvalue=None, derror=None) -> None:
        self.value[idx] = value
        self.error[idx] = error
        if dvalue is not None and len(dvalue):
            self.dvalue[:, idx] = dvalue
            self.derror[:, idx] = derror
        self.ok[idx] = converged
        for i, k in enumerate(idx):
            self.status[k] = status[i]

    def refuse(self, why: str) -> None:
        """The derivatives of every point cannot be taken (``why``): NaN, not converged."""
        self.dvalue[:] = self.derror[:] = np.nan
        self.ok[:] = False
        self.status = [why] * len(self.status)

    def derivatives(self, req, batched: bool) -> dict | None:
        """``{label: Derivative}`` for the Result, None without derivatives."""
        if req is None:
            return None
        pick = (lambda a: a) if batched else (lambda a: complex(a[0]))
        return {label: Derivative(pick(self.dvalue[j]), pick(self.derror[j]))
                for j, label in enumerate(req.labels)}


def _run(plan: RunPlan, progress, checkpoint, resume, t_start: float) -> Result:
    """The direct points, then the physical ones, of one plan, as a Result."""
    s = plan.settings
    K = plan.kin.shape[0]
    req = plan.derivatives if plan.refused is None else plan.refused[0]
    pts = _Points(K, blocks(req))
    info: dict = {}
    direct = [k for k in range(K) if plan.regions[k].kind != "physical"]
    physical = [k for k in range(K) if plan.regions[k].kind == "physical"]
    landau = _landau_points(plan)
    direct = [k for k in direct if k not in landau]
    physical = [k for k in physical if k not in landau]
    if direct:
        info["direct"] = _direct(plan, direct, pts, progress, t_start)
    table, deltas_used, seconds_resumed = [], [], 0.0
    if physical:
        info["regulated"], d_out = _physical(plan, physical, pts, progress, checkpoint, resume,
                                             t_start)
        if d_out is not None:
            table, deltas_used = d_out["table"], d_out["deltas"]
            seconds_resumed = d_out["seconds_resumed"]
    if s.cross_check and not physical and not landau:
        info["cross_check"] = ("nothing to cross-check: no physical point (F has one sign on "
                               "the simplex, delta = 0 is exact)")
    for k, why in landau.items():
        pts.value[k] = pts.error[k] = complex(np.nan, np.nan)
        pts.dvalue[:, k] = pts.derror[:, k] = complex(np.nan, np.nan)
        pts.status[k], pts.ok[k] = why, False
    batched = any(np.ndim(v) for v in plan.problem.kinematics.values())
    if plan.refused is not None:
        pts.refuse(plan.refused[1])
    converged = bool(np.all(pts.ok))
    status = points_status(pts.ok, [st for st, ok in zip(pts.status, pts.ok) if not ok], batched)
    seconds_this_run = time.perf_counter() - t_start
    regions = plan.regions
    return Result(
        value=pts.value if batched else complex(pts.value[0]),
        error=pts.error if batched else complex(pts.error[0]),
        converged=converged, status=status, method="+".join(sorted(pts.methods)),
        prefactor=s.prefactor, delta=deltas_used, evaluations=int(pts.evaluations),
        seconds=seconds_this_run + seconds_resumed, device=device_name(),
        diagram=plan.diagram.name,
        kinematics={k: jsonable(v) for k, v in plan.problem.kinematics.items()},
        settings=s.to_dict(),
        region=[r.kind for r in regions] if batched else regions[0].kind,
        table=table, derivatives=pts.derivatives(req, batched),
        info={**info, "convergence": verdict(plan.diagram).summary(),
                           "seconds_this_run": seconds_this_run,
                           "point_converged": pts.ok.tolist() if batched else None,
                           "point_status": list(pts.status) if batched else None,
                           "region_method": [r.method for r in regions][:1 if not batched else K]})


def _landau_points(plan: RunPlan) -> dict[int, str]:
    """The points exactly on a Landau singularity of a one-loop diagram
    (:func:`loopint.region.one_loop_landau_points`): integrated, a triangle exactly at
    p3^2 = (m2 + m3)^2 with unequal masses comes out certified at rtol 1e-8 with 29 times its
    estimate off, or (in GeV) meets F = 0 exactly and stops the whole batch, while 1e-12 off
    the threshold it is computed honestly.  They are not integrated: value and error NaN, not
    converged."""
    d = plan.diagram
    probe = integrand(d, "simplex", "none", "float64")
    tolerance = pinch_tolerance(float(d.dimension), [float(p) for p in d.powers],
                                plan.settings.rtol)
    return one_loop_landau_points(d.loops, d.variables, probe.F_exponents,
                                  probe.F_coefficients(plan.kin), tolerance)


def _direct(plan: RunPlan, direct: list, pts: _Points, progress, t_start: float) -> dict:
    """The points where F has one sign: one engine run at delta = 0 (real where every point
    is Euclidean)."""
    stage = plan.direct
    real = all(plan.regions[k].kind == "euclidean" for k in direct)
    f, w = plan.bind(stage.integrand.bind(plan.kin[direct], [0.0], real=real))
    r = stage.integrate(f)
    pts.methods.add(r.method)
    v = split(r.value, plan.blocks, len(direct), w)[:, :, 0] * plan.prefactor
    e = scale_error(split(r.error, plan.blocks, len(direct), w)[:, :, 0], plan.prefactor)
    pts.fill(direct, v[0], e[0], r.converged, [r.status] * len(direct), v[1:], e[1:])
    pts.evaluations += r.evaluations
    if progress:
        progress({"stage": "direct", "value": pts.value[direct], "error": pts.error[direct],
                  "evaluations": pts.evaluations, "seconds": time.perf_counter() - t_start})
    return {"method": r.method, "domain": stage.domain, "status": r.status,
            "engine_info": jsonable(r.info)}


def _physical(plan: RunPlan, physical: list, pts: _Points, progress, checkpoint, resume,
              t_start: float) -> tuple[dict, dict | None]:
    """The physical points: the deformed contour and/or the delta sequence
    (:attr:`RunPlan.physical`); the delta sequence takes every point without the contour,
    the contour's failures, and every point for a cross-check."""
    s = plan.settings
    how, reason = plan.physical
    info: dict = {"contour": s.contour, "cross_check": s.cross_check}
    if reason:
        info["contour_not_used"] = reason
    kreg = plan.kin[physical]
    c_out = d_out = None
    if "contour" in how:
        c_out = contour_points(plan.contour, kreg, plan.prefactor, s.contour_lambda,
                               plan.derivatives)
        pts.methods.add(c_out["method"])
        pts.evaluations += c_out["evaluations"]
        info.update(contour_method=c_out["method"], domain_contour=plan.contour.domain,
                    **{"lambda": c_out["lambda"]})
        if progress:
            progress({"stage": "contour", "value": c_out["value"], "error": c_out["error"],
                      "evaluations": pts.evaluations, "seconds": time.perf_counter() - t_start})
    if "delta" in how:
        todo = np.arange(len(physical))
        if c_out is not None and not s.cross_check:
            todo = np.nonzero(~np.asarray(c_out["converged"]))[0]
        if todo.size:
            stage = plan.delta
            pts.methods.add(stage.method)
            # a checkpoint holds one sequence: a resumable run keeps the batch together
            groups = ([(np.arange(todo.size), None)] if checkpoint
                      else delta_sequence.scale_groups(plan, kreg[todo]))
            d_out = delta_sequence.merge(
                [delta_sequence.run(plan, kreg[todo[g]], progress=progress,
                                    checkpoint=checkpoint, resume=resume, t_start=t_start,
                                    delta0=d0)
                 for g, d0 in groups], [todo[g] for g, _ in groups])
            pts.evaluations += d_out["evaluations"]
            info.update(method=stage.method, domain=stage.domain, delta0=d_out["delta0"],
                        extrapolation=d_out["extrapolation"])
            if "groups" in d_out:
                info["delta_groups"] = d_out["groups"]
    out = combine_physical(c_out, d_out, len(physical), s.cross_check)
    pts.fill(physical, out["value"], out["error"], out["converged"], out["status"],
             out.get("derivatives"), out.get("derivative_errors"))
    info["point_method"] = out["method"]
    if "cross_check" in out:
        info["cross_check_result"] = out["cross_check"]
    return info, d_out


def _subproblem(problem: Problem, idx, s: Settings) -> Problem:
    """The problem at the points ``idx`` of a batch."""
    kin = {k: (np.asarray(v)[idx] if np.ndim(v) else v) for k, v in problem.kinematics.items()}
    return Problem(problem.diagram, kin, s, problem.reference, problem.path)


def _compute_groups(problem: Problem, groups: list, s: Settings, progress, t_start) -> Result:
    """A batch whose points differ in which coefficients of U and F vanish (e.g. a scan
    through a zero mass): each group of points computed on its own, results in order."""
    parts = [(idx, _outcome(_compute_here(_subproblem(problem, idx, s), s, progress, None,
                                          False, time.perf_counter())))
             for _, _, idx in groups]
    return _assembled(problem, s, parts, "groups", t_start)


def _compute_devices(problem: Problem, s: Settings, progress, t_start) -> Result:
    """A batch shared out over the local devices (:func:`loopint.parallel.split_by_cost`),
    one thread per device, each engine pinned to its device; results in order."""
    import concurrent.futures
    import jax
    devices = parallel.local_devices(s.devices)
    shares = _shares(problem, s, len(devices))
    one = s.updated(devices=1)

    def share(j: int) -> dict:
        with jax.default_device(devices[j]):
            sub = _subproblem(problem, shares[j], one)
            out = _outcome(_compute_here(sub, one, progress, None, False, time.perf_counter()))
        out["info"]["device"] = str(devices[j])
        return out

    with concurrent.futures.ThreadPoolExecutor(len(shares), "loopint-device") as pool:
        outs = list(pool.map(share, range(len(shares))))
    return _assembled(problem, s, list(zip(shares, outs)), "device_shares", t_start)


def _shares(problem: Problem, s: Settings, parts: int) -> list[np.ndarray]:
    """The points of a batch in at most ``parts`` shares of about equal cost
    (:func:`loopint.parallel.split_by_cost`; the same on every process)."""
    probe = integrand(problem.diagram, "simplex", "none", "float64")
    kinds = [r.kind for r in point_regions(probe, probe.kinematics_array(problem.kinematics), s)]
    return parallel.split_by_cost(parallel.point_costs(kinds), parts)


def _compute_processes(problem: Problem, s: Settings, progress, t_start) -> Result:
    """A batch shared out over the processes of a :mod:`jax.distributed` run
    (:func:`_shares`), each share on the local devices of its process; every process
    returns the whole result."""
    import jax
    shares = _shares(problem, s, jax.process_count())
    index = jax.process_index()
    mine = shares[index] if index < len(shares) else np.zeros(0, int)
    out = failure = error = None
    # a share is this process's own work: its engines use its local devices only
    ndev = len(parallel.local_devices(s.devices))
    own = s.updated(devices=ndev)
    try:
        if mine.size:
            sub = _subproblem(problem, mine, own)
            local = (_compute_devices(sub, own, progress, time.perf_counter())
                     if mine.size > 1 and ndev > 1 else
                     _compute_here(sub, own, progress, None, False, time.perf_counter()))
            out = _outcome(local)
    except Exception as e:      # noqa: BLE001 - raised below, after the allgather
        # every process must reach the allgather, also one whose share failed: the others
        # would wait there for it
        failure = e
        error = {"type": type(e).__name__, "message": str(e), "key": getattr(e, "key", None)}
    every = parallel.allgather_json({"points": mine.tolist(), "outcome": out, "error": error})
    if failure is not None:
        raise failure
    reported = next((e["error"] for e in every if e["error"]), None)
    if reported is not None:
        raise _share_error(reported)
    covered = sorted(k for e in every for k in e["points"])
    if covered != list(range(problem.n_points)):
        raise RuntimeError("the processes of the run disagree on the shares of the scan's "
                           "points (each point must be computed by exactly one)")
    parts = [(e["points"], e["outcome"]) for e in every if e["points"]]
    return _assembled(problem, s, parts, "process_shares", t_start)


def _share_error(reported: dict) -> Exception:
    """The exception of another process's share (:func:`_compute_processes`), raised on
    this one as well: bad input as the same :class:`DiagramError` or :class:`SpecError`."""
    if reported["type"] == "DiagramError":
        return DiagramError(reported["message"], reported["key"])
    if reported["type"] == "SpecError":
        return SpecError(reported["message"])
    return RuntimeError(f"another process of the run failed: {reported['type']}: "
                        f"{reported['message']}")


def _outcome(r: Result) -> dict:
    """What :func:`_assembled` needs of a share's Result, per point (JSON-able)."""
    n = np.size(r.value)
    ok = r.info.get("point_converged") if np.ndim(r.value) else None
    return {"value": jsonable(np.atleast_1d(r.value)), "error": jsonable(np.atleast_1d(r.error)),
            "ok": list(ok) if ok is not None else [bool(r.converged)] * n,
            "point_status": list(r.info.get("point_status") or [r.status] * n),
            "region": r.region if isinstance(r.region, list) else [r.region] * n,
            "point_method": _point_methods(r),
            "region_method": list(r.info.get("region_method") or [None] * n),
            "converged": bool(r.converged), "status": r.status, "method": r.method,
            "evaluations": int(r.evaluations),
            "derivatives": {label: [jsonable(np.atleast_1d(d.value)),
                                    jsonable(np.atleast_1d(d.error))]
                            for label, d in (r.derivatives or {}).items()},
            "series": None if r.coefficients is None else {
                "value": _laurent(r.coefficients, r.coefficient_errors),
                "derivatives": {label: _laurent(d.coefficients, d.coefficient_errors)
                                for label, d in (r.derivatives or {}).items()}},
            "info": jsonable(r.info)}


def _laurent(coefficients: dict, errors: dict) -> dict:
    """Laurent coefficients ``{j: c_j}`` and their errors, per point, JSON-able."""
    return {str(j): [jsonable(np.atleast_1d(coefficients[j])), jsonable(np.atleast_1d(errors[j]))]
            for j in coefficients}


def _laurent_points(parts: list, K: int, pick) -> tuple[dict, dict]:
    """The Laurent coefficients of a batch from its shares' (``pick(outcome)``: a share's
    :func:`_laurent`), in the points' order; an order below a share's leading pole is 0
    there, with error 0."""
    orders = sorted({int(j) for _, out in parts for j in pick(out)})
    value = {j: np.zeros(K, complex) for j in orders}
    error = {j: np.zeros(K, complex) for j in orders}
    for idx, out in parts:
        for j, (v, e) in pick(out).items():
            value[int(j)][np.asarray(idx, int)] = _complex(v)
            error[int(j)][np.asarray(idx, int)] = _complex(e)
    return value, error


def _point_methods(r: Result) -> list:
    """Per point of a Result, how a physical point was computed (``info["regulated"]
    ["point_method"]``, which lists the physical points only), None for the others."""
    regions = r.region if isinstance(r.region, list) else [r.region]
    methods = iter((r.info.get("regulated") or {}).get("point_method", []))
    return [next(methods, None) if kind == "physical" else None for kind in regions]


def _complex(pairs) -> np.ndarray:
    a = np.asarray(pairs, float).reshape(-1, 2)
    return a[:, 0] + 1j * a[:, 1]


def _assembled(problem: Problem, s: Settings, parts: list, kind: str, t_start) -> Result:
    """One Result from the outcomes of shares of a batch (``parts``: ``[(indices,
    outcome)]``), in the points' order; ``info[kind]`` lists the shares."""
    K = problem.n_points
    value = np.zeros(K, complex)
    error = np.zeros(K, complex)
    ok = np.zeros(K, bool)
    region = [None] * K
    point_method = [None] * K
    region_method = [None] * K
    point_status = [""] * K
    statuses, methods, shares = [], set(), []
    evaluations = 0
    req = request(s.derivatives, s.derivative_order, problem.diagram.kinematic_symbols)
    dpts = _Points(K, blocks(req))
    for idx, out in parts:
        idx = np.asarray(idx, int)
        value[idx] = _complex(out["value"])
        error[idx] = _complex(out["error"])
        for j, (dv, de) in enumerate(out["derivatives"].values()):
            dpts.dvalue[j, idx] = _complex(dv)
            dpts.derror[j, idx] = _complex(de)
        ok[idx] = out["ok"]
        for i, k in enumerate(idx):
            region[k] = out["region"][i]
            point_method[k] = out["point_method"][i]
            region_method[k] = out["region_method"][i]
            point_status[k] = out.get("point_status", [out["status"]] * len(idx))[i]
        if not out["converged"]:
            statuses.append(out["status"])
        methods.update(out["method"].split("+"))
        evaluations += out["evaluations"]
        shares.append({"points": idx.tolist(), "method": out["method"], "status": out["status"],
                       "info": out["info"]})
    converged = bool(np.all(ok))
    status = points_status(ok, statuses)
    # as one run's info: how each physical point was computed, in the points' order
    physical = [m for m, kind in zip(point_method, region) if kind == "physical"]
    regulated = {"regulated": {"point_method": physical}} if physical else {}
    derivatives = dpts.derivatives(req, batched=True)
    series: dict = {}
    if problem.diagram.regulated:       # the Laurent coefficients (loopint.dimreg)
        coefficients, errors = _laurent_points(parts, K, lambda o: o["series"]["value"])
        series = {"coefficients": coefficients, "coefficient_errors": errors}
        for label, d in (derivatives or {}).items():
            dc, de = _laurent_points(parts, K, lambda o: o["series"]["derivatives"][label])
            derivatives[label] = Derivative(d.value, d.error, dc, de)
        regulated["eps_order"] = 0 if s.eps_order is None else s.eps_order
    return Result(value=value, error=error, converged=converged, status=status,
                  method="+".join(sorted(methods)), prefactor=s.prefactor, delta=[],
                  evaluations=int(evaluations), seconds=time.perf_counter() - t_start,
                  device=device_name(), diagram=problem.diagram.name,
                  kinematics={k: jsonable(v) for k, v in problem.kinematics.items()},
                  settings=s.to_dict(), region=region,
                  derivatives=derivatives, **series,
                  info={kind: shares, "point_converged": ok.tolist(),
                        "point_status": point_status,
                        "region_method": region_method, **regulated})


timing.IMPORT_SECONDS = time.perf_counter() - _IMPORT_START
