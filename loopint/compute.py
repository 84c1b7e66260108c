"""``loopint.compute``: a loop integral at one or many kinematic points, with an honest error.

The regulator driver of the Direct Computation Method (seed 000, sections 4.2-4.4):

* Each kinematic point is classified by the diagram layer (:func:`loopint.diagram.classify_F`).
  Where F has one sign on the simplex the integral is computed directly at delta = 0.
* Elsewhere (F vanishes inside the simplex) the integrand is regulated, F -> F - i delta U, and
  I(delta_j) is computed for delta_j = delta_0 q^-j (q = 1.2 by default).  All deltas of a step
  are one vector integrand, so they share the evaluations of U and F.  Real and imaginary
  parts are extrapolated to delta -> 0 (:mod:`extrapolation`) in two ways, and each part takes
  the one with the smaller error estimate: Wynn's epsilon algorithm (the seed's nonlinear
  method, valid under general conditions, exact on delta^(1/2) and delta*log(delta) terms at
  a threshold) and rational extrapolation in delta (Bulirsch-Stoer).  At a physical point
  away from thresholds I(delta) is analytic at delta = 0 (a contour deformation of F exists)
  but has singularities on the imaginary delta axis at the critical values of F/U on the
  faces of the simplex, often closer to 0 than the deltas that are cheap to integrate; power
  series (linear, Richardson extrapolation, seed 000 sec. 4.4) converge slowly there,
  rational functions do not (:mod:`extrapolation.rational`; the pentagon of seed 000 with
  16 deltas: 2e-8 against 2e-5 for the best fit in powers of delta).  The rational fit is
  tried on every window of at least 6 consecutive deltas and the window with the smallest
  error estimate is kept (:func:`_rational_fit`).  The sequence grows
  ``DELTA_STEP`` terms at a time until the extrapolation meets the tolerance or
  ``delta_terms`` is reached.
* delta_0 is scaled to the problem: delta_0 = ``delta0_factor`` (default 1) times the mean of
  |F|/U over 4096 points of the simplex (a Sobol'-free deterministic grid of the sequential map),
  so that the first regulated integral smooths the Landau singularity on the scale of F
  itself; ``[regulator] delta = <number>`` overrides it.
* Each I(delta_j) is computed to ``rtol * DELTA_RTOL_FACTOR`` (1/2: half of the budget for
  the terms, half for the extrapolation), since the extrapolation amplifies the errors of
  the terms; the error it reports includes their propagation (the rational fit's
  amplification on the pentagon's 16 terms is 40-200; the adaptive rule delivers term errors
  10-100 times below what is asked).  On the pentagon (16 deltas, rtol 1e-5, H200) 1/2
  against 1/5 took 1.4e10 to 1.29e10 evaluations at the same true error (2.2e-8) with an
  error estimate of 3.9e-6 instead of 2.2e-6 relative.  The iterated engine
  uses GK21 in every direction here (the seed's default is GK21 outermost and GK15 inside):
  the ridge of width delta along the Landau surface costs fewer evaluations with the higher
  rule (pentagon, 16 deltas on an H200: 1.40e10 against 1.79e10 evaluations).
* Multi-loop diagrams (U vanishes on the boundary of the simplex, at the subloops) are
  integrated over the decomposed sectors (:mod:`loopint.sectors`), where the integrand is
  bounded, and their delta sequence by Genz-Malik cubature: the iterated engine over the
  simplex could not resolve the subloop singularities (the two-loop ladder vertex at
  k^2/m_t^2 = 1: not 1e-3 in 3e8 evaluations), over the decomposed sectors it is still
  slower than cubature on the regulated 5-D integrand (k^2/m_t^2 = 5, H200: 272 s for 12
  deltas at rtol 1e-4 against 45 s for 16 deltas at 1e-5 by cubature).  The cubature terms
  carry the engine's global error estimate (signed degree-9 sweeps,
  :mod:`loopint.engines.cubature`): the sum of local errors overstated them 10^2 to 10^4
  times, and amplified by the rational fit it could not certify the ladder (16 deltas:
  estimate 6e-4 for a true error of 6e-6).  They are asked for ``rtol *
  DELTA_RTOL_FACTOR_CUBATURE`` (1/20: the fit's amplification there is 20-100), and a term
  stopped by the memory or evaluation bound still enters with its error (the smallest
  deltas fill the region store first); the windows of the rational fit leave such a term
  out when it costs more than it adds.  The ladder then converges after 16 deltas: 45 s
  warm on an H200, error estimate 1.3e-6 relative, true error 2e-7 against pySecDec.

After each step the partial table is written atomically to the checkpoint file (if one is
given) and ``resume=True`` continues from it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import jax
import numpy as np
import sympy

from . import __version__
from .diagram import Diagram, DiagramError, is_scaleless
from .region import Region, classify_coefficients
from .divergence import ZERO_COEFFICIENT, Verdict, analyze, divergence_message
from .engines.base import NONFINITE, IntegrationResult, _jsonable
from .files import write_text_atomic
from . import engines
from .engines.base import Box, Simplex
from .lower import Integrand
from .problem import Problem, Settings, SpecError, check_kinematics, validate_settings

log = logging.getLogger(__name__)

DELTA_RTOL_FACTOR = 0.5
# Cubature's delta terms (multi-loop diagrams): the rational fit amplifies their errors 20 to
# 100 times on the two-loop ladder vertex (16 deltas), so they are asked for rtol/20.
DELTA_RTOL_FACTOR_CUBATURE = 0.05
DELTA_STEP = 4   # deltas per engine call: a fixed vector width, so one compilation serves all


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
        ``{"delta", "value", "error", "evaluations", "seconds"}``.
    coefficients / coefficient_errors: for a regulated integral (D or powers with eps,
        :mod:`loopint.dimreg`) the Laurent coefficients ``{j: c_j}`` for j from the leading
        pole to ``eps_order`` (arrays over kinematic points when batched) and their errors
        (real and imaginary parts, as ``error``); ``value`` / ``error`` are then c_0 (or the
        coefficient of eps^eps_order when that is negative).  None otherwise.
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
        return _jsonable(d)


def device_name() -> str:
    d = jax.devices()[0]
    return f"{d.platform}:{getattr(d, 'device_kind', '')}".rstrip(":")


def _prefactor_value(diagram: Diagram, convention: str) -> complex:
    return complex(sympy.N(diagram.prefactor(convention), 20))


def _choose_method(settings: Settings, ndim: int, regulated: bool,
                   diagram: Diagram | None = None) -> str:
    if settings.method != "auto":
        return settings.method
    if regulated:
        # multi-loop (U vanishes on the boundary): Genz-Malik cubature over the decomposed
        # sectors; the two-loop ladder vertex at k^2/m_t^2 = 5 to rtol 1e-5 converged after
        # 16 deltas in 45 s on an H200 (true error 2e-7), the iterated engine took 272 s for
        # 12 deltas at 1e-4.  One-loop: the iterated engine over the simplex (pentagon: 8.4 s).
        if ndim <= 6 and diagram is not None and _has_blowups(diagram):
            return "cubature"
        return "iterated"
    if ndim <= 3:
        return "iterated"
    # six and more dimensions: randomized lattices (the seed's 6-D Table 5.1 integral to rtol
    # 1e-8 on a 2-core CPU: qmc 9.4 s with 4.2e6 evaluations, cubature 509 s with 1e9)
    return "cubature" if ndim <= 5 else "qmc"


def _choose_domain(settings: Settings, method: str, diagram: Diagram | None = None) -> str:
    blowups = diagram is not None and _has_blowups(diagram)    # refuses a cycling decomposition
    singular = diagram is not None and bool(_verdict(diagram).singular_faces)
    decompose = blowups or singular
    if singular and settings.domain not in ("auto", "decomposed"):
        raise SpecError(
            f"domain: {settings.domain!r} cannot be used here: the integrand has integrable "
            "singularities at the boundary (sector exponents between -1 and 0; `loopint show` "
            "lists them), which only domain 'decomposed' maps away; use domain 'auto'")
    if method == "iterated":
        if settings.domain == "auto":
            return "decomposed" if decompose else "simplex"
        if settings.domain not in ("simplex", "decomposed"):
            raise SpecError("domain: the iterated engine integrates over the simplex or the "
                            f"decomposed sectors: domain {settings.domain!r} is not available "
                            "for it")
        return settings.domain
    if settings.domain == "simplex":
        raise SpecError(f"domain: 'simplex' needs method 'iterated' (got {method!r})")
    if settings.domain == "auto":
        return "decomposed" if decompose else "sequential"
    return settings.domain


_BLOWUPS: dict = {}


def _has_blowups(diagram: Diagram) -> bool:
    """Whether U or F vanish on the boundary beyond the primary sectors' faces (subloops of a
    multi-loop diagram, massless lines).  Then the engines integrate over the decomposed
    sectors (:mod:`loopint.sectors`), where the integrand is bounded, instead of the simplex
    or the sequential cube, where those integrable singularities cost every level of an
    iterated integration and many regions of a cubature.  Two-loop ladder vertex at
    k^2/m_t^2 = 1: the iterated engine reached 1e-6 in 1.2e7 evaluations, against not 1e-3
    in 3e8 over the simplex (CPU); cubature to 1e-8 took 9.1e7 evaluations against 1.1e9
    (H200)."""
    key = (sympy.srepr(diagram.U), sympy.srepr(diagram.F),
           tuple(sympy.srepr(v) for v in diagram.variables))
    if key not in _BLOWUPS:
        from .sectors import DecompositionError, decompose_polynomials
        try:
            sectors = decompose_polynomials((diagram.U, diagram.F), diagram.variables)
        except DecompositionError as e:
            raise DiagramError(
                f"{e}; loopint cannot integrate this diagram at this point (its convergence "
                "test passed: " + _verdict(diagram).summary().splitlines()[0] + ")",
                "diagram") from None
        _BLOWUPS[key] = any(sec.blowups for sec in sectors)
    return _BLOWUPS[key]


_VERDICTS: dict = {}


def _verdict(diagram: Diagram) -> Verdict:
    """:func:`loopint.divergence.analyze` of the diagram's own supports (the supports at the
    kinematic point once :func:`_at_point` has dropped the vanishing coefficients), cached by
    content."""
    key = (sympy.srepr(diagram.U), sympy.srepr(diagram.F),
           tuple(sympy.srepr(v) for v in diagram.variables),
           tuple(sympy.srepr(v) for v in diagram.powers), sympy.srepr(diagram.dimension))
    if key not in _VERDICTS:
        _VERDICTS[key] = analyze(diagram)
    return _VERDICTS[key]


def _support_groups(probe: Integrand, kin: np.ndarray) -> list[tuple]:
    """The kinematic points grouped by which coefficients of U and F vanish there:
    ``[(keep_U, keep_F, indices)]`` (boolean masks over the monomials of ``probe``)."""
    masks = []
    for label, coef in (("U", probe.U_coefficients(kin)), ("F", probe.F_coefficients(kin))):
        bad = ~np.all(np.isfinite(coef), axis=1)
        if np.any(bad):
            k = int(np.argmax(bad))
            raise DiagramError(
                f"{label} has non-finite coefficients at kinematic point {k} "
                f"({_point_text(probe, kin[k])}): a scalar product or mass divides by zero "
                "or overflows there", "kinematics")
        scale = np.max(np.abs(coef), axis=1, keepdims=True)
        masks.append(np.abs(coef) > ZERO_COEFFICIENT * scale)
    groups: dict = {}
    for k in range(kin.shape[0]):
        groups.setdefault((masks[0][k].tobytes(), masks[1][k].tobytes()), []).append(k)
    return [(masks[0][idx[0]], masks[1][idx[0]], idx) for idx in groups.values()]


def _point_text(probe: Integrand, point: np.ndarray) -> str:
    return ", ".join(f"{n} = {v:.6g}" for n, v in zip(probe.symbols, point))


def _reduced(diagram: Diagram, probe, keep_U: np.ndarray, keep_F: np.ndarray,
             kin: np.ndarray) -> Diagram:
    """The diagram with the monomials whose coefficients vanish at these points left out (a
    zero mass or an on-shell leg given as numbers), so that its sector decomposition and
    power counting see the point's singularities; a scaleless integral there is refused."""
    if np.all(keep_U) and np.all(keep_F):
        return diagram
    polys = []
    for P, expo, keep in ((diagram.U, probe.U_exponents, keep_U),
                          (diagram.F, probe.F_exponents, keep_F)):
        kept = {tuple(int(k) for k in m) for m, ok in zip(expo, keep) if ok}
        terms = sympy.Poly(P, *diagram.variables).terms()
        polys.append(sympy.Add(*[c * sympy.Mul(*[x ** k for x, k in zip(diagram.variables, m)])
                                 for m, c in terms if m in kept]))
    reduced = dataclasses.replace(diagram, U=polys[0], F=polys[1])
    if is_scaleless(reduced.U, reduced.F, reduced.variables):
        raise DiagramError(
            f"scaleless integral at the kinematic point {_point_text(probe, kin[0])} (the "
            "Newton polytope of U + F is degenerate there; it vanishes in dimensional "
            "regularization)", "kinematics")
    return reduced


def _at_point(diagram: Diagram, probe: Integrand, keep_U: np.ndarray, keep_F: np.ndarray,
              kin: np.ndarray) -> Diagram:
    """:func:`_reduced`, refused with the divergence's kind if the integral diverges there."""
    reduced = _reduced(diagram, probe, keep_U, keep_F, kin)
    verdict = _verdict(reduced)
    if not verdict.convergent:
        where = "" if reduced is diagram else \
            f" at the kinematic point {_point_text(probe, kin[0])}"
        raise DiagramError(f"divergent integral{where}: " + divergence_message(verdict),
                           "dimension")
    return reduced


def _run_engine(method: str, f, ndim: int, settings: Settings, rtol: float, atol: float,
                domain: str, scale=None, regulated: bool = False,
                stop_on_nonfinite: bool = False) -> IntegrationResult:
    opts: dict = {}
    if stop_on_nonfinite:
        opts["stop_on_nonfinite"] = True
    if method in ("qmc", "mc"):
        opts["seed"] = settings.seed
    if settings.precision != "float64":
        opts["precision"] = settings.precision
    if method == "iterated":
        if regulated:
            # The regulated integrand cancels strongly (int |f| >> |int f| near the Landau
            # surface): absolute inner tolerances from the start, which cancellation cannot
            # spoil (the engine would otherwise try mixed ones first and rerun).  After the
            # first step of the delta sequence the size of the integral is known from the
            # previous delta: no pilot run (the engine reruns if it was too loose).
            opts["inner_tolerance"] = "absolute"
            opts["rules"] = "gk21"      # every direction: see the iterated module docstring
            if scale is not None:
                opts["scale"] = scale
        dom = Simplex(ndim) if domain == "simplex" else Box.cube(ndim)
    else:
        # the cube engines' boundary probe is not needed: the sector analysis (compute's
        # _at_point, loopint.divergence) has proven the lowered integrand bounded at the faces
        opts["boundary_check"] = False
        if method == "cubature" and regulated and ndim >= 2:
            # signed degree-9 sweeps (cubature module docstring): the terms' errors enter the
            # extrapolation amplified, and the local sums overstate them 10^2-10^4 times
            opts["error_estimate"] = "global"
        dom = Box.cube(ndim)
    return engines.get(method, **opts).integrate(f, dom, rtol=rtol, atol=atol,
                                                 max_evals=int(settings.max_evals))


def _regions(integrand: Integrand, kin: np.ndarray) -> list[Region]:
    """Classify every kinematic point from F's coefficients (vectorized over points)."""
    coefs = integrand.F_coefficients(kin)
    expo = integrand.F_exponents
    return [classify_coefficients(expo, coefs[k]) for k in range(kin.shape[0])]


def _delta_scale(integrand: Integrand, kin: np.ndarray) -> np.ndarray:
    """Mean of |F|/U over a deterministic set of simplex points, per kinematic point."""
    n = 4096
    d = integrand.ndim
    # a rank-1 lattice in the cube, mapped to the simplex (any well spread set would do)
    z = np.array([1, 1571, 2989, 4001, 5393, 6661, 7919, 9001, 10007, 11003][:d] + [13] * max(0, d - 10))
    u = ((np.arange(n)[:, None] * z[None, :]) % n + 0.5) / n
    from .maps import simplex_from_cube
    x, _ = simplex_from_cube(jax.numpy.asarray(u))
    U, F = integrand.polynomials(x, kin)
    return np.mean(np.abs(np.asarray(F)) / np.asarray(U), axis=0)


def compute(target: Problem | Diagram, kinematics: Mapping[str, Any] | None = None, *,
            settings: Settings | None = None, progress: Callable[[dict], None] | None = None,
            checkpoint: str | None = None, resume: bool = False, **overrides) -> Result:
    """Compute a loop integral (the Python API of the README).

    Args:
        target: a :class:`~loopint.problem.Problem` (e.g. from :func:`loopint.load`) or a
            :class:`~loopint.diagram.Diagram`.
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
        :class:`Result` (value, error, converged, status, table, ...).
    """
    t_start = time.perf_counter()
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
        raise TypeError(f"compute() needs a Problem or a Diagram, got {type(target).__name__}")
    base = settings or problem.settings
    s = validate_settings({**base.to_dict(), **{k: v for k, v in overrides.items() if v is not None}})
    diagram = problem.diagram
    batched = any(np.ndim(v) for v in problem.kinematics.values())
    if diagram.regulated:
        from .dimreg import compute_series
        return compute_series(problem, s, progress, t_start)
    if s.eps_order is not None:
        raise DiagramError(
            f"eps_order = {s.eps_order} needs a regulated integral: give the dimension (or a "
            "power) with eps, e.g. dimension = \"4 - 2*eps\"", "dimension")

    probe = _integrand(diagram, "simplex", "none", "float64")
    kin = probe.kinematics_array(problem.kinematics)
    groups = _support_groups(probe, kin)
    if len(groups) > 1:
        return _compute_groups(problem, groups, s, progress, t_start)
    diagram = _at_point(diagram, probe, *groups[0][:2], kin)
    probe = _integrand(diagram, "simplex", "none", "float64")
    K = kin.shape[0]
    if s.delta == "auto":
        regions = _regions(probe, kin)
    elif s.delta == 0:
        regions = [Region("euclidean" if r.kind == "euclidean" else "forced",
                          "delta = 0 requested", r.method) for r in _regions(probe, kin)]
    else:
        regions = [Region("physical", f"delta sequence requested (delta0 = {s.delta})")] * K

    prefactor = _prefactor_value(diagram, s.prefactor)
    value = np.zeros(K, complex)
    error = np.zeros(K, complex)
    point_ok = np.zeros(K, bool)
    statuses: list[str] = [""] * K
    evaluations = 0
    table: list = []
    methods = set()
    deltas_used: list = []
    seconds_resumed = 0.0     # wall time of the delta terms a resumed checkpoint already holds
    info: dict = {}

    direct = [k for k in range(K) if regions[k].kind != "physical"]
    regulated = [k for k in range(K) if regions[k].kind == "physical"]
    ndim = probe.ndim

    if direct:
        method, domain, ig = _setup_engine(diagram, s, ndim, regulated=False)
        methods.add(method)
        real = all(regions[k].kind == "euclidean" for k in direct)
        f = ig.bind(kin[direct], [0.0], real=real)
        r = _run_engine(method, f, ndim, s, s.rtol, s.atol / max(abs(prefactor), 1e-300), domain)
        v = np.atleast_1d(np.asarray(r.value)).astype(complex)
        e = np.atleast_1d(np.asarray(r.error)).astype(complex)
        value[direct] = v * prefactor
        error[direct] = _scale_error(e, prefactor)
        point_ok[direct] = r.converged
        for k in direct:
            statuses[k] = r.status
        evaluations += r.evaluations
        info["direct"] = {"method": method, "domain": domain, "status": r.status,
                          "engine_info": _jsonable(r.info)}
        if progress:
            progress({"stage": "direct", "value": value[direct], "error": error[direct],
                      "evaluations": evaluations, "seconds": time.perf_counter() - t_start})

    def absorb(out: dict) -> None:
        """Results of the regulated points into the per-point arrays."""
        nonlocal evaluations
        value[regulated] = out["value"]
        error[regulated] = out["error"]
        point_ok[regulated] = out["converged"]
        for i, k in enumerate(regulated):
            statuses[k] = out["status"][i]
        evaluations += out["evaluations"]

    if regulated:
        how, reason = _physical_methods(diagram, s)
        info["regulated"] = {"contour": s.contour, "cross_check": s.cross_check}
        if reason:
            info["regulated"]["contour_not_used"] = reason
        kreg = kin[regulated]
        c_out = d_out = None
        if "contour" in how:
            c_out = _contour(diagram, s, kreg, prefactor, ndim)
            methods.add(c_out["method"])
            evaluations += c_out["evaluations"]
            info["regulated"].update(contour_method=c_out["method"], domain_contour="sectors",
                                     **{"lambda": c_out["lambda"]})
            if progress:
                progress({"stage": "contour", "value": c_out["value"], "error": c_out["error"],
                          "evaluations": evaluations,
                          "seconds": time.perf_counter() - t_start})
        # the delta sequence: every point without the contour, the contour's failures under
        # 'auto', every point for a cross-check
        if "delta" in how:
            todo = np.arange(len(regulated))
            if c_out is not None and not s.cross_check:
                todo = np.nonzero(~np.asarray(c_out["converged"]))[0]
            if todo.size:
                method, domain, ig = _setup_engine(diagram, s, ndim, regulated=True)
                methods.add(method)
                d_out = _delta_sequence(ig, kreg[todo], s, method, domain, prefactor, progress,
                                        checkpoint, resume, problem, t_start)
                d_out["points"] = todo
                evaluations += d_out["evaluations"]
                table = d_out["table"]
                deltas_used = d_out["deltas"]
                seconds_resumed = d_out["seconds_resumed"]
                info["regulated"].update(method=method, domain=domain, delta0=d_out["delta0"],
                                         extrapolation=d_out["extrapolation"])
        physical = _combine_physical(c_out, d_out, len(regulated), s)
        value[regulated] = physical["value"]
        error[regulated] = physical["error"]
        point_ok[regulated] = physical["converged"]
        for i, k in enumerate(regulated):
            statuses[k] = physical["status"][i]
        info["regulated"]["point_method"] = physical["method"]
        if "cross_check" in physical:
            info["regulated"]["cross_check_result"] = physical["cross_check"]

    if s.cross_check and not regulated:
        info["cross_check"] = ("nothing to cross-check: no physical point (F has one sign on "
                               "the simplex, delta = 0 is exact)")
    converged = bool(np.all(point_ok))
    if converged:
        status = "converged"
    else:
        bad = sorted({st for st, ok in zip(statuses, point_ok) if not ok})
        status = "; ".join(bad) if not batched else (
            f"{int(np.count_nonzero(~point_ok))} of {K} points not converged: " + "; ".join(bad[:3]))
    seconds_this_run = time.perf_counter() - t_start
    result = Result(
        value=value if batched else complex(value[0]),
        error=error if batched else complex(error[0]),
        converged=converged, status=status, method="+".join(sorted(methods)),
        prefactor=s.prefactor, delta=deltas_used, evaluations=int(evaluations),
        seconds=seconds_this_run + seconds_resumed, device=device_name(), diagram=diagram.name,
        kinematics={k: _jsonable(v) for k, v in problem.kinematics.items()},
        settings=s.to_dict(),
        region=[r.kind for r in regions] if batched else regions[0].kind,
        table=table, info={**info, "convergence": _verdict(diagram).summary(),
                           "seconds_this_run": seconds_this_run,
                           "point_converged": point_ok.tolist() if batched else None,
                           "region_method": [r.method for r in regions][:1 if not batched else K]})
    return result


def _compute_groups(problem: Problem, groups: list, s: Settings, progress, t_start) -> Result:
    """A batch whose points differ in which coefficients of U and F vanish (e.g. a scan
    through a zero mass): each group of points computed on its own, results in order."""
    K = sum(len(g[2]) for g in groups)
    value = np.zeros(K, complex)
    error = np.zeros(K, complex)
    ok = np.zeros(K, bool)
    region = [None] * K
    statuses, methods, parts = [], set(), []
    evaluations = 0
    for _, _, idx in groups:
        kin = {k: (np.asarray(v)[idx] if np.ndim(v) else v) for k, v in problem.kinematics.items()}
        r = compute(Problem(problem.diagram, kin, s, problem.reference, problem.path),
                    settings=s, progress=progress)
        value[idx] = np.atleast_1d(r.value)
        error[idx] = np.atleast_1d(r.error)
        ok[idx] = r.info["point_converged"] if np.ndim(r.value) else r.converged
        for i, k in enumerate(idx):
            region[k] = r.region[i] if isinstance(r.region, list) else r.region
        if not r.converged:
            statuses.append(r.status)
        methods.update(r.method.split("+"))
        evaluations += r.evaluations
        parts.append({"points": list(idx), "method": r.method, "status": r.status,
                      "info": r.info})
    converged = bool(np.all(ok))
    status = "converged" if converged else (
        f"{int(np.count_nonzero(~ok))} of {K} points not converged: " + "; ".join(statuses[:3]))
    return Result(value=value, error=error, converged=converged, status=status,
                  method="+".join(sorted(methods)), prefactor=s.prefactor, delta=[],
                  evaluations=int(evaluations), seconds=time.perf_counter() - t_start,
                  device=device_name(), diagram=problem.diagram.name,
                  kinematics={k: _jsonable(v) for k, v in problem.kinematics.items()},
                  settings=s.to_dict(), region=region,
                  info={"groups": parts, "point_converged": ok.tolist()})


_INTEGRANDS: "OrderedDict[tuple, Integrand]" = OrderedDict()
_INTEGRAND_CACHE_SIZE = 32


def _integrand(diagram: Diagram, domain: str, transform: str, precision: str) -> Integrand:
    """The lowered integrand of ``diagram``, reused by later calls with the same polynomials
    and options.  The engines' jitted kernels take its bound methods as static parts, so a
    new :class:`Integrand` per call would retrace and re-lower every kernel that evaluates
    the integrand (on an H200 about 4 s at the start of each pentagon run); with the cache,
    repeated ``compute`` calls (scans, phenomenology loops) reuse the compiled kernels.
    The key is the content of the diagram, not the object."""
    key = (sympy.srepr(diagram.U), sympy.srepr(diagram.F),
           tuple(sympy.srepr(v) for v in diagram.variables),
           tuple(sympy.srepr(v) for v in diagram.powers), tuple(diagram.kinematic_symbols),
           sympy.srepr(diagram.U_exponent), sympy.srepr(diagram.F_exponent),
           domain, transform, precision)
    ig = _INTEGRANDS.get(key)
    if ig is None:
        ig = Integrand(diagram, domain=domain, transform=transform, precision=precision)
        _INTEGRANDS[key] = ig
        while len(_INTEGRANDS) > _INTEGRAND_CACHE_SIZE:
            _INTEGRANDS.popitem(last=False)
    else:
        _INTEGRANDS.move_to_end(key)
    return ig


def _setup_engine(diagram: Diagram, s: Settings, ndim: int, regulated: bool):
    """(method, domain, lowered integrand) for the direct or the regulated points."""
    method = _choose_method(s, ndim, regulated=regulated, diagram=diagram)
    domain = _choose_domain(s, method, diagram)
    transform = "none" if domain == "simplex" else s.transform
    return method, domain, _integrand(diagram, domain, transform, s.precision)


def _contour(diagram: Diagram, s: Settings, kin: np.ndarray, prefactor: complex,
             ndim: int) -> dict:
    """Physical-region points at delta = 0 on a deformed contour, one engine run per point.

    The second method beside the delta sequence (``contour = "deform"``): see
    :meth:`loopint.lower.Integrand.bind_deformed`.  Primary sectors and a cube engine
    (``method`` auto: cubature up to 4 dimensions, qmc above).
    """
    # five and more dimensions (two-loop diagrams): randomized lattices; the two-loop ladder
    # vertex at k^2/m_t^2 = 5 to rtol 1e-5 took 137 s by qmc against 257 s by cubature on a
    # 2-core CPU, with the same true error (3e-6 against pySecDec)
    method = s.method if s.method != "auto" else ("cubature" if ndim <= 4 else "qmc")
    if method == "iterated":
        raise SpecError("method: contour deformation integrates over the primary-sector cubes: "
                        "use a cube engine (cubature, pagani, qmc, mc), not 'iterated'")
    if s.domain not in ("auto", "sectors"):
        raise SpecError(f"domain: contour deformation uses domain 'sectors', not {s.domain!r}")
    if _verdict(diagram).singular_faces:
        raise SpecError("contour: the deformed contour integrates over the primary sectors, "
                        "where this integrand has integrable singularities at the boundary "
                        "(sector exponents between -1 and 0, see `loopint show`); use contour "
                        "'none' (the delta sequence over the decomposed sectors)")
    ig = _integrand(diagram, "sectors", s.transform, s.precision)
    atol = s.atol / max(abs(prefactor), 1e-300)
    P = kin.shape[0]
    value = np.zeros(P, complex)
    error = np.zeros(P, complex)
    conv = np.zeros(P, bool)
    status, lams = [], []
    evaluations = 0
    for i in range(P):
        point = kin[i:i + 1]
        lam = (ig.deformation_lambda(point) if s.contour_lambda == "auto"
               else float(s.contour_lambda))
        for _ in range(CONTOUR_RETRIES + 1):
            r = _run_engine(method, ig.bind_deformed(point, lam), ndim, s, s.rtol, atol,
                            "sectors", stop_on_nonfinite=method in ("cubature", "qmc"))
            evaluations += r.evaluations
            # a point where Im V(z) > 0 (the pilot grid missed it) gives NaN: a smaller
            # deformation, unless lambda was given
            if not r.status.startswith(NONFINITE) or s.contour_lambda != "auto":
                break
            log.info("contour: sign violation at lambda = %.3g, retrying with %.3g", lam,
                     lam * CONTOUR_SHRINK)
            lam *= CONTOUR_SHRINK
        lams.append(lam)
        value[i] = complex(np.asarray(r.value).reshape(-1)[0]) * prefactor
        error[i] = _scale_error(np.asarray(r.error).reshape(-1)[:1], prefactor)[0]
        conv[i] = r.converged
        status.append(r.status)
    return {"method": method, "value": value, "error": error, "converged": conv,
            "status": status, "evaluations": evaluations, "lambda": lams}


# A contour run whose integrand met a sign violation (NaN) is repeated this many times, each
# with lambda times CONTOUR_SHRINK, before the point is left to the delta sequence.
CONTOUR_RETRIES = 2
CONTOUR_SHRINK = 0.25

# A cross-check fails when the contour and the delta sequence differ by more than this many
# combined standard errors (their estimates added in quadrature).
CROSS_CHECK_SIGMAS = 5.0


def _physical_methods(diagram: Diagram, s: Settings) -> tuple[tuple, str]:
    """Which methods the physical points get (``("contour",)``, ``("delta",)`` or both) and,
    when ``contour = "auto"`` cannot use the contour, why."""
    if s.contour == "none":
        return ("delta",), ""
    if s.contour == "deform":
        return ("contour",), ""
    why = ""
    if s.method == "iterated":
        why = "method 'iterated' integrates the delta sequence only"
    elif s.domain not in ("auto", "sectors"):
        why = f"domain {s.domain!r} is not the primary sectors of the contour"
    elif s.delta != "auto":
        why = f"delta0 = {s.delta} given: the delta sequence was asked for"
    elif _verdict(diagram).singular_faces:
        why = ("integrable boundary singularities (sector exponents between -1 and 0) are "
               "subtracted in the decomposed sectors only")
    if why:
        if s.cross_check:
            raise SpecError(f"cross_check: needs both methods, but the contour cannot be used "
                            f"here: {why}")
        return ("delta",), why
    return ("contour", "delta"), ""


def _combine_physical(c_out: dict | None, d_out: dict | None, P: int, s: Settings) -> dict:
    """Per physical point: the contour's result where it converged (or where it is the only
    method), otherwise the delta sequence's; with ``cross_check`` both, compared."""
    value = np.zeros(P, complex)
    error = np.zeros(P, complex)
    conv = np.zeros(P, bool)
    status: list = [""] * P
    method: list = [""] * P
    d_at = {} if d_out is None else {int(k): i for i, k in enumerate(d_out["points"])}
    for p in range(P):
        c_ok = c_out is not None and bool(c_out["converged"][p])
        if c_out is not None and (c_ok or p not in d_at):
            value[p], error[p] = c_out["value"][p], c_out["error"][p]
            conv[p], status[p], method[p] = c_ok, c_out["status"][p], "contour"
        else:
            i = d_at[p]
            value[p], error[p] = d_out["value"][i], d_out["error"][i]
            conv[p], status[p], method[p] = bool(d_out["converged"][i]), d_out["status"][i], \
                "delta sequence"
            if c_out is not None:
                status[p] = (status[p] if conv[p] else status[p] + "; ") + \
                    ("" if conv[p] else f"contour: {c_out['status'][p]}")
                status[p] = status[p].rstrip("; ")
    out = {"value": value, "error": error, "converged": conv, "status": status,
           "method": method}
    if s.cross_check and c_out is not None and d_out is not None:
        checks = []
        for p in range(P):
            i = d_at[p]
            diff = c_out["value"][p] - d_out["value"][i]
            sig = np.hypot(np.hypot(c_out["error"][p].real, c_out["error"][p].imag),
                           np.hypot(d_out["error"][i].real, d_out["error"][i].imag))
            n = float(abs(diff) / sig) if sig > 0 else (0.0 if diff == 0 else np.inf)
            checks.append({"contour": c_out["value"][p], "delta_sequence": d_out["value"][i],
                           "difference": diff, "sigmas": n})
            if n > CROSS_CHECK_SIGMAS:
                conv[p] = False
                status[p] = (f"methods disagree: contour and delta sequence differ by "
                             f"{n:.3g} combined errors (|difference| {abs(diff):.3g})")
            elif not (c_out["converged"][p] and d_out["converged"][i]):
                conv[p] = False
                status[p] = ("cross-check incomplete: contour " + c_out["status"][p] +
                             "; delta sequence " + d_out["status"][i])
        out["cross_check"] = checks
    return out


def _scale_error(e: np.ndarray, prefactor: complex) -> np.ndarray:
    """Errors of (re, im) of v*p from errors (re, im) of v (triangle inequality)."""
    pr, pi = abs(prefactor.real), abs(prefactor.imag)
    er, ei = np.abs(e.real), np.abs(e.imag)
    with np.errstate(invalid="ignore"):     # 0 * inf: a zero part of the prefactor adds nothing
        a = np.where(pi == 0, 0.0, pi * ei)
        b = np.where(pi == 0, 0.0, pi * er)
    return _cplx(pr * er + a, b + pr * ei)


def _fingerprint(problem: Problem, s: Settings, delta0: np.ndarray, method: str) -> str:
    """What the terms I(delta_j) of a checkpoint depend on.  Not the sequence length
    (``delta_terms``, ``delta_min_terms``): a resumed run may extend a finished table."""
    settings = {k: v for k, v in s.to_dict().items() if k not in ("delta_terms", "delta_min_terms")}
    blob = json.dumps({"U": str(problem.diagram.U), "F": str(problem.diagram.F),
                       "kin": _jsonable(problem.kinematics), "settings": settings,
                       "delta0": _jsonable(delta0), "method": method}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def write_json_atomic(path: str, obj: Any) -> None:
    """Write JSON to ``path`` atomically (:func:`loopint.files.write_atomic`: temporary file
    in the same folder, synced, then renamed; mode ``0o666 & ~umask``)."""
    write_text_atomic(path, json.dumps(_jsonable(obj), indent=1), fsync=True)


_ROW_KEYS = ("delta", "bare_value", "bare_error", "value", "error", "evaluations", "seconds",
             "engine_status")


def _load_checkpoint(checkpoint: str, fp: str, deltas: np.ndarray, P: int) -> list:
    """The rows of a checkpoint written by :func:`_delta_sequence` for the same terms
    (fingerprint ``fp``), at most ``len(deltas)`` of them.  A checkpoint of another problem
    or settings, or one that cannot be read, is a :class:`SpecError` naming the file."""
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
            value, error = _complex_arr(row["bare_value"]), _complex_arr(row["bare_error"])
            if value.shape != (P,) or error.shape != (P,):
                raise ValueError("wrong number of kinematic points")
            if not np.isclose(float(row["delta"]), deltas[i], rtol=1e-12, atol=0):
                raise ValueError(f"delta {row['delta']} is not delta_{i} = {deltas[i]}")
            row = {**row, "evaluations": int(row["evaluations"]), "seconds": float(row["seconds"])}
        except (ValueError, TypeError, IndexError) as e:
            raise bad(f"row {i} of the checkpoint is damaged ({e})") from None
        rows.append((row, value, error))
    return rows


def _delta_sequence(ig: Integrand, kin: np.ndarray, s: Settings, method: str, domain: str,
                    prefactor: complex, progress, checkpoint, resume, problem, t_start) -> dict:
    from extrapolation.wynn import wynn_epsilon

    P = kin.shape[0]
    if s.delta == "auto":
        delta0 = np.full(P, float(np.max(_delta_scale(ig, kin))))
    else:
        delta0 = np.full(P, float(s.delta))
    # one delta sequence for all points of a batch (they share the vector integrand): the
    # largest scale, so every point starts well regulated.
    d0 = float(delta0[0])
    q = s.delta_q
    all_deltas = d0 * q ** -np.arange(s.delta_terms, dtype=float)
    factor = DELTA_RTOL_FACTOR_CUBATURE if method == "cubature" else DELTA_RTOL_FACTOR
    rtol_i = max(s.rtol * factor, 1e-13)
    atol_i = s.atol * factor / max(abs(prefactor), 1e-300)
    fp = _fingerprint(problem, s, delta0, method)
    vals: list = []    # per delta: complex [P]
    errs: list = []
    rows: list = []
    if resume and checkpoint and os.path.exists(checkpoint):
        for row, v, e in _load_checkpoint(checkpoint, fp, all_deltas, P):
            rows.append(row)
            vals.append(v)
            errs.append(e)
        log.info("resumed %d delta terms from %s", len(rows), checkpoint)
    evaluations = sum(r["evaluations"] for r in rows)
    seconds_resumed = sum(r["seconds"] for r in rows)
    status = ["extrapolation not converged"] * P

    def extrapolate() -> dict:
        return _extrapolate(np.array(vals), np.array(errs), s, prefactor, wynn_epsilon,
                            deltas=np.array([r_["delta"] for r_ in rows]))

    def report(ext: dict) -> None:
        if progress:
            progress({"stage": "delta", "n": len(rows), "delta": float(rows[-1]["delta"]),
                      "value": ext["value"] * prefactor,
                      "error": _scale_error(ext["error"], prefactor),
                      "evaluations": evaluations, "seconds": time.perf_counter() - t_start})

    n = len(rows)
    # a resumed table is extrapolated first: it may be complete (all delta_terms computed,
    # not converged) or already converged, and then no term is added
    ext = extrapolate() if rows else None
    if ext is not None:
        report(ext)
    while n < s.delta_terms and not (ext is not None and n >= s.delta_min_terms
                                     and np.all(ext["converged"])):
        step = min(DELTA_STEP, s.delta_terms - n)
        ds = all_deltas[n:n + step]
        if step < DELTA_STEP:   # pad to the fixed width (same compiled kernels), drop afterwards
            ds = np.concatenate([ds, np.full(DELTA_STEP - step, ds[-1])])
        t0 = time.perf_counter()
        f = ig.bind(kin, ds, real=False)
        scale = None
        if vals and method == "iterated":
            last = np.abs(np.asarray(vals[-1]))                           # [P]
            if np.all(np.isfinite(last)) and np.all(last > 0):
                scale = np.repeat(last, DELTA_STEP)                       # component p*R + r
        r = _run_engine(method, f, ig.ndim, s, rtol_i, atol_i, domain, scale, regulated=True)
        dt = time.perf_counter() - t0
        v = np.asarray(r.value).reshape(P, -1)[:, :step]
        e = np.asarray(r.error).reshape(P, -1)[:, :step]
        evaluations += r.evaluations
        for j in range(step):
            vals.append(v[:, j])
            errs.append(e[:, j])
            rows.append({"delta": float(ds[j]), "bare_value": v[:, j], "bare_error": e[:, j],
                         "value": v[:, j] * prefactor, "error": _scale_error(e[:, j], prefactor),
                         "evaluations": int(r.evaluations) if j == 0 else 0,
                         "seconds": dt if j == 0 else 0.0, "engine_status": r.status})
        n = len(rows)
        if checkpoint:
            write_json_atomic(checkpoint, {"fingerprint": fp, "rows": rows})
        ext = extrapolate()
        report(ext)
    bad = [r_["engine_status"] for r_ in rows if not _term_usable(r_["engine_status"], method)]
    engine_ok = not bad
    conv = ext["converged"] & engine_ok
    for i in range(P):
        if conv[i]:
            status[i] = "converged"
        elif not engine_ok:
            status[i] = f"an I(delta) integral did not converge ({bad[0]})"
        else:
            status[i] = (f"extrapolation not converged after {n} delta terms "
                         f"({ext['status'][i]})")
    return {"value": ext["value"] * prefactor, "error": _scale_error(ext["error"], prefactor),
            "converged": conv, "status": status, "evaluations": evaluations,
            "table": rows, "deltas": [float(r_["delta"]) for r_ in rows], "delta0": d0,
            "seconds_resumed": seconds_resumed,
            "extrapolation": {"status": list(map(str, ext["status"])),
                              "method": ext["method"], "n_terms": n}}


def _term_usable(engine_status: str, method: str) -> bool:
    """Whether a delta term may enter the extrapolation: converged, or (cubature) stopped by
    its memory or evaluation bound with its best estimate and an error estimate that the
    extrapolation propagates (the smallest deltas of a multi-loop diagram fill the region
    store first; the windows of :func:`_rational_fit` weigh what they add)."""
    if engine_status == "converged":
        return True
    return method == "cubature" and engine_status.startswith(("memory_limit", "max_evals"))


def _complex_arr(x) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[..., 0] + 1j * a[..., 1]


def _cplx(re, im) -> np.ndarray:
    """Complex array from real and imaginary parts without inf * 1j = nan surprises."""
    re, im = np.broadcast_arrays(np.asarray(re, float), np.asarray(im, float))
    z = np.empty(re.shape, complex)
    z.real, z.imag = re, im
    return z


def _extrapolate(vals: np.ndarray, errs: np.ndarray, s: Settings, prefactor, wynn,
                 deltas: np.ndarray | None = None) -> dict:
    """Real and imaginary parts of every point's sequence I(delta_j) extrapolated to 0.

    Two candidates per part, the one with the smaller error estimate is kept: Wynn epsilon
    and (with ``deltas``) rational extrapolation in delta (:func:`_rational_fit`).

    Error model of the epsilon algorithm: its own estimate (the spread of successive
    extrapolants, as QUADPACK's DQELG) plus the largest integration error of the terms used.
    The term errors are not propagated through the (large, ~1e6) amplification factor of the
    epsilon table: all I(delta_j) come from one adaptive rule on one subdivision, so their
    errors are a smooth function of delta that the extrapolation treats like the integrand
    itself, not independent noise; the spread of successive extrapolants measures what is
    left of them (tests/test_compute.py checks honesty against closed forms).  The rational
    fit propagates them to first order (``sum_j |dI/dI_j| sigma_j``,
    :mod:`extrapolation.rational`).
    """
    rtol = s.rtol
    atol = s.atol / max(abs(prefactor), 1e-300)
    parts = []
    for part, perr in ((vals.real, errs.real), (vals.imag, errs.imag)):
        w = wynn(part, None, rtol=rtol, atol=atol)
        value = np.asarray(w.value, float)
        error = np.asarray(w.error, float) + np.max(np.abs(perr), axis=0)
        status = np.asarray(w.status, object)
        regular = np.isin(status, ["converged", "tolerance_not_met"])
        method = np.full(value.shape, "wynn", object)
        if deltas is not None:
            rv, re_, rk = _rational_fit(deltas, part, np.abs(perr))
            better = np.isfinite(re_) & ~(re_ >= error)
            # Consistency: the limit lies within the other method's error of its value (if
            # that one is honest), so the chosen value is at least |value - other| - e_other
            # from it; the error is widened to that.  Where the two disagree beyond their
            # errors one is overconfident (e.g. the rational fit on delta^(1/2) terms at a
            # threshold), and which one cannot be told.
            other_v, other_e = np.where(better, value, rv), np.where(better, error, re_)
            value = np.where(better, rv, value)
            error = np.where(better, re_, error)
            with np.errstate(invalid="ignore"):
                gap = np.abs(value - other_v) - other_e
            error = np.where(np.isfinite(gap) & (gap > error), gap, error)
            regular = regular | better
            status = np.where(better, "tolerance_not_met", status)
            method = np.where(better, [f"rational({k})" for k in np.atleast_1d(rk)], method)
        parts.append((value, error, status, regular, method))
    (vr, er, sr, gr, mr), (vi, ei, si, gi, mi) = parts
    value = _cplx(vr, vi)
    error = _cplx(er, ei)
    mag = np.abs(value)
    tol = np.maximum(atol, rtol * mag)
    with np.errstate(invalid="ignore"):
        converged = np.hypot(error.real, error.imag) <= tol
    # each part must also have behaved regularly (its own status), unless it is negligible
    for regular, err in ((gr, error.real), (gi, error.imag)):
        converged &= regular | (np.abs(err) <= 0.5 * tol)
    status = np.where(converged, "converged",
                      np.asarray([f"re: {a}; im: {b}" for a, b in
                                  zip(np.atleast_1d(sr), np.atleast_1d(si))]))
    method = [f"re: {a}; im: {b}" for a, b in zip(np.atleast_1d(mr), np.atleast_1d(mi))]
    return {"value": value, "error": error, "converged": converged, "status": status,
            "method": method}


def _best_fit(fits: list, P: int):
    """The fit with the smallest error per column, its error widened by the distance to the
    two next-best fits (picking the smallest of several estimates is optimistic).

    ``fits``: ``(label, error[P], value[P])`` with non-finite errors as inf.  Returns
    ``(value[P], error[P], label[P])``; error inf where fewer than three fits exist.
    """
    if len(fits) < 3:
        return np.full(P, np.nan), np.full(P, np.inf), np.zeros(P, int)
    E = np.stack([f[1] for f in fits])                  # [fits, P]
    V = np.stack([f[2] for f in fits])
    labels = np.array([f[0] for f in fits])
    rank = np.argsort(E, axis=0, kind="stable")
    cols = np.arange(P)
    best = rank[0]
    value = V[best, cols]
    spread = np.maximum(np.abs(value - V[rank[1], cols]), np.abs(value - V[rank[2], cols]))
    error = E[best, cols] + spread
    return value, np.where(np.isfinite(error), error, np.inf), labels[best]


def _rational_fit(deltas: np.ndarray, values: np.ndarray, sigma: np.ndarray):
    """Rational extrapolation (:func:`extrapolation.rational`) of ``values[n, P]`` over
    windows of at least 6 consecutive deltas, the best window per column (:func:`_best_fit`).

    The largest deltas lie far from 0 on the scale of the singularities of I(delta) (on the
    imaginary axis, see :mod:`extrapolation.rational`) and can spoil a low-degree rational
    fit: on the pentagon's 16-term table the 13 or 14 smallest are chosen, estimates several
    times smaller than with all 16.  The smallest deltas are the hardest integrals and may
    carry errors that the fit amplifies beyond what they add: on the two-loop ladder vertex
    (k^2/m_t^2 = 5, 16 deltas, smallest term error 1.6e-5) the best window without the last
    one has a real-part error estimate 20 times smaller than the best fit with it (4.6e-6
    against 1.0e-4; true error 8e-7).  Through
    :func:`_extrapolate`, true errors were at most 0.1 of the estimates on the pentagon for
    8 to 16 terms, and at most 0.75 on C0 at s = 4.2 to 50 m² for 8 to 20 terms, except
    s = 4.2 m² with 16 terms (6 times, unconverged at 6.5e-3).
    Returns ``(value[P], error[P], label[P])``, the label ``"k=<k>"`` (the k smallest deltas)
    or ``"i:j"`` (the i-th to j-th largest, 0-based, j exclusive).
    """
    from extrapolation.rational import rational

    n, P = values.shape
    order = np.argsort(-deltas, kind="stable")         # largest delta first
    d, v, sg = deltas[order], values[order], sigma[order]
    fits = []
    for j in range(n, 5, -1):
        for i in range(j - 5):
            r = rational(d[i:j], v[i:j], sg[i:j])
            e = np.asarray(r.error, float)
            label = f"k={j - i}" if j == n else f"{i}:{j}"
            fits.append((label, np.where(np.isfinite(e), e, np.inf), np.asarray(r.value, float)))
    return _best_fit(fits, P)
