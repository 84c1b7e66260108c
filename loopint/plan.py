"""``loopint.plan``: what a run of :func:`loopint.compute` does, decided once from its Settings.

A :class:`RunPlan` holds, for one group of kinematic points that share the supports of U and F
(:func:`support_groups`), the diagram reduced at those points, their regions (Euclidean,
physical, ...), the prefactor, and a :class:`Stage` per kind of engine run:

* ``direct``: the points where F has one sign (delta = 0);
* ``delta``: the terms I(delta_j) of the regulator sequence (:mod:`loopint.delta_sequence`);
* ``contour``: the physical points on the deformed contour (:mod:`loopint.contour`).

A stage fixes the method, the integrand's domain, the lowered integrand, the engine object
with its options and the tolerances of the bare integral.  The stages are built when first
used, so a setting that matters only for a stage that does not run is not refused.

Policy decided here: the engine (:func:`method_for`, through
:func:`loopint.engines.choose_method`), the domain (:func:`domain_for`), the engine options
(:func:`make_engine`), which methods the physical points get (:func:`physical_methods`), and
the tolerance of the delta terms (:data:`DELTA_RTOL_FACTOR`).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

import jax
import numpy as np
import sympy

from . import engines
from .derivatives import Request, blocks, request, supports_for, with_derivatives
from .diagram import EPS, Diagram, is_scaleless
from .divergence import ZERO_COEFFICIENT, Verdict, analyze, divergence_message
from .engines.base import Box, Engine, IntegrationResult, Simplex
from .errors import DiagramError, SpecError
from .lower import Integrand
from .problem import Problem, Settings
from .region import Region, classify_points

# Each term I(delta_j) is computed to rtol * DELTA_RTOL_FACTOR: half of the budget for the
# terms, half for the extrapolation, which amplifies the terms' errors (the rational fit 40 to
# 200 times on 16 terms; the adaptive rules deliver term errors 10-100 times below what is
# asked).  Cubature's terms (multi-loop diagrams over the decomposed sectors) carry the
# engine's global error estimate and are amplified 20 to 100 times by the fit: rtol / 20.
DELTA_RTOL_FACTOR = 0.5
DELTA_RTOL_FACTOR_CUBATURE = 0.05


class LRU:
    """A small least-recently-used memo: ``get(key, make)`` returns the value kept for
    ``key``, or ``make()`` (kept, the oldest entry dropped beyond ``size``).  Safe to share
    between threads (the shares of a scan over several devices): the lock guards the
    bookkeeping, not ``make()``, so two threads may build the same value once each."""

    def __init__(self, size: int):
        self.size = size
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, make: Callable):
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        value = make()
        with self._lock:
            self._data[key] = value
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key) -> bool:
        return key in self._data

    def items(self) -> list:
        """The kept ``(key, value)`` pairs, least recently used first."""
        with self._lock:
            return list(self._data.items())

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


def _srepr(expr) -> str:
    """:func:`sympy.srepr`, kept per expression: a scan's plans key the same polynomials many
    times, and printing a two-loop F costs milliseconds."""
    return _srepr_of(type(expr), expr)


@functools.lru_cache(maxsize=1024)
def _srepr_of(kind: type, expr) -> str:
    # keyed by type and value: 1, Integer(1) and Float(1.0) may compare equal but print apart
    return sympy.srepr(expr)


def _content_key(diagram: Diagram, *extra) -> tuple:
    """A hashable key of the diagram's polynomials, variables and propagator powers."""
    return (_srepr(diagram.U), _srepr(diagram.F), tuple(_srepr(v) for v in diagram.variables),
            tuple(_srepr(v) for v in diagram.powers)) + extra


INTEGRANDS = LRU(32)
BLOWUPS = LRU(64)
VERDICTS = LRU(64)


def integrand(diagram: Diagram, domain: str, transform: str, precision: str,
              kind: type[Integrand] = Integrand) -> Integrand:
    """The lowered integrand of ``diagram`` (an instance of ``kind``), reused by later calls
    with the same polynomials and options.  The engines' jitted kernels take its bound
    methods as static parts, so a new :class:`Integrand` per call would retrace and re-lower
    every kernel that evaluates the integrand; with the cache, repeated ``compute`` calls
    (scans, phenomenology loops) reuse the compiled kernels.  The key is the content of the
    diagram, not the object."""
    key = _content_key(diagram, tuple(diagram.kinematic_symbols),
                       _srepr(diagram.U_exponent), _srepr(diagram.F_exponent),
                       domain, transform, precision, kind)
    return INTEGRANDS.get(key, lambda: kind(diagram, domain=domain, transform=transform,
                                             precision=precision))


def verdict(diagram: Diagram) -> Verdict:
    """:func:`loopint.divergence.analyze` of the diagram's own supports (the supports at the
    kinematic point once :func:`at_point` has dropped the vanishing coefficients), cached by
    content."""
    key = _content_key(diagram, _srepr(diagram.dimension))
    return VERDICTS.get(key, lambda: analyze(diagram))


def has_blowups(diagram: Diagram) -> bool:
    """Whether U or F vanish on the boundary beyond the primary sectors' faces (subloops of a
    multi-loop diagram, massless lines).  Then the engines integrate over the decomposed
    sectors (:mod:`loopint.sectors`), where the integrand is bounded, instead of the simplex
    or the sequential cube, where those integrable singularities cost every level of an
    iterated integration and many regions of a cubature.  Cached by content; a
    decomposition that does not terminate is refused."""
    key = _content_key(diagram)

    def decompose() -> bool:
        from .sectors import DecompositionError, decompose_polynomials
        try:
            sectors = decompose_polynomials((diagram.U, diagram.F), diagram.variables)
        except DecompositionError as e:
            raise DiagramError(
                f"{e}; loopint cannot integrate this diagram at this point (its convergence "
                "test passed: " + verdict(diagram).summary().splitlines()[0] + ")",
                "diagram") from None
        return any(sec.blowups for sec in sectors)

    return BLOWUPS.get(key, decompose)


# ------------------------------------------------------------------ the points' supports
F_RANGE_MARGIN = 8
"""Decades kept below the largest float of the integrand's precision by :func:`_check_F_range`:
|F|^p with p = max(2, |b| + 2) must stay below 10^300 in float64 (which ends at 1.8e308) and
10^30 in float32.  The integrand takes 1/(F - i delta U) as conj/|.|^2 and raises it to the
power b (b + 1, b + 2 for the derivatives by the kinematics), so a larger F overflows there,
or underflows in the power, to an exact zero that no error estimate would notice."""


def _check_F_range(probe: Integrand, kin: np.ndarray, scale: np.ndarray) -> None:
    """Refuse points where F, bounded on the simplex by the sum of its coefficients' moduli
    (``scale``, per monomial), is too large for the integrand's precision
    (:data:`F_RANGE_MARGIN`)."""
    try:
        power = max(2.0, abs(float(probe.b.subs(EPS, 0))) + 2)
    except TypeError:            # an exponent with symbols other than eps
        power = 4.0
    dtype = np.dtype(probe.rdtype)
    digits = np.floor(np.log10(np.finfo(dtype).max))
    bound = np.sum(scale, axis=1)
    limit = 10.0 ** ((digits - F_RANGE_MARGIN) / power)
    if np.any(bound > limit):
        k = int(np.argmax(bound > limit))
        raise DiagramError(
            f"F reaches {bound[k]:.3g} at kinematic point {k} ({point_text(probe, kin[k])}), "
            f"beyond {limit:.3g}, above which |F|^{power:g} in the integrand overflows "
            f"{dtype.name}: give the masses and invariants in units in which they are closer to 1 "
            "(the integral scales as a power of the unit)", "kinematics")


def support_groups(probe: Integrand, kin: np.ndarray) -> list[tuple]:
    """The kinematic points grouped by which coefficients of U and F vanish there:
    ``[(keep_U, keep_F, indices)]`` (boolean masks over the monomials of ``probe``)."""
    masks = []
    for label, coef in (("U", probe.U_coefficients(kin)), ("F", probe.F_coefficients(kin))):
        scale = probe.coefficient_scales(label, kin)
        bad = ~np.all(np.isfinite(coef), axis=1)
        if np.any(bad):
            k = int(np.argmax(bad))
            raise DiagramError(
                f"{label} has non-finite coefficients at kinematic point {k} "
                f"({point_text(probe, kin[k])}): a scalar product or mass divides by zero "
                "or overflows there", "kinematics")
        if label == "F":
            _check_F_range(probe, kin, scale)
        masks.append(np.abs(coef) > ZERO_COEFFICIENT * scale)
    groups: dict = {}
    for k in range(kin.shape[0]):
        groups.setdefault((masks[0][k].tobytes(), masks[1][k].tobytes()), []).append(k)
    return [(masks[0][idx[0]], masks[1][idx[0]], idx) for idx in groups.values()]


def point_text(probe: Integrand, point: np.ndarray) -> str:
    """A kinematic point as ``"s = 10, m = 1"``."""
    return ", ".join(f"{n} = {v:.6g}" for n, v in zip(probe.symbols, point))


def reduced(diagram: Diagram, probe: Integrand, keep_U: np.ndarray, keep_F: np.ndarray,
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
    out = dataclasses.replace(diagram, U=polys[0], F=polys[1])
    if is_scaleless(out.U, out.F, out.variables):
        raise DiagramError(
            f"scaleless integral at the kinematic point {point_text(probe, kin[0])} (the "
            "Newton polytope of U + F is degenerate there; it vanishes in dimensional "
            "regularization)", "kinematics")
    return out


def at_point(diagram: Diagram, probe: Integrand, keep_U: np.ndarray, keep_F: np.ndarray,
             kin: np.ndarray) -> Diagram:
    """:func:`reduced`, refused with the divergence's kind if the integral diverges there."""
    out = reduced(diagram, probe, keep_U, keep_F, kin)
    v = verdict(out)
    if not v.convergent:
        where = "" if out is diagram else f" at the kinematic point {point_text(probe, kin[0])}"
        raise DiagramError(f"divergent integral{where}: " + divergence_message(v), "dimension")
    return out


def point_regions(probe: Integrand, kin: np.ndarray, s: Settings) -> list[Region]:
    """Every kinematic point classified from F's coefficients (``delta = "auto"``), or as
    ``delta`` asks: 0 forces delta = 0, a number forces the delta sequence."""
    expo = probe.F_exponents
    if s.delta != "auto" and s.delta != 0:
        return [Region("physical", f"delta sequence requested (delta0 = {s.delta})")] * kin.shape[0]
    coefs = probe.F_coefficients(kin)
    regions = classify_points(expo, coefs)
    if s.delta == 0:
        regions = [Region("euclidean" if r.kind == "euclidean" else "forced",
                          "delta = 0 requested", r.method) for r in regions]
    return regions


# ------------------------------------------------------------------ method, domain, engine
def method_for(s: Settings, ndim: int, regulated: bool, diagram: Diagram | None = None,
               points: int = 1) -> str:
    """The engine of the direct points (``regulated=False``; ``points`` of them integrated
    together) or of the delta terms: ``s.method``, or for ``"auto"``
    :func:`loopint.engines.choose_method` of a Feynman integrand, decomposed when the diagram
    has blow-ups (:func:`has_blowups`)."""
    if s.method != "auto":
        return s.method
    if regulated:
        decomposed = diagram is not None and has_blowups(diagram)
        return engines.choose_method(ndim, "regulated", decomposed=decomposed)
    return engines.choose_method(ndim, "feynman", points=points)


def contour_method(s: Settings, ndim: int) -> str:
    """The engine of the deformed contour: ``s.method``, or for ``"auto"``
    :func:`loopint.engines.choose_method` of a contour integrand.  A cube engine: the contour
    lives on the sectors' cubes."""
    method = s.method if s.method != "auto" else engines.choose_method(ndim, "contour")
    if method == "iterated":
        raise SpecError("method: contour deformation integrates over the sectors' cubes: "
                        "use a cube engine (cubature, pagani, qmc, mc), not 'iterated'")
    return method


def domain_for(s: Settings, method: str, diagram: Diagram | None = None,
               direct: bool = False) -> str:
    """The integrand's domain (:mod:`loopint.lower`) for ``method``: ``s.domain``, checked, or
    for ``"auto"`` the decomposed sectors where the diagram has blow-ups or integrable
    boundary singularities, else the simplex (iterated) or the sequential cube.

    ``direct`` (the integrand at delta = 0 of a Euclidean point): the iterated engine takes
    the decomposed sectors in every case.  Each sector puts the faces of the simplex at
    t = 0, where floating point resolves any scale, while the simplex has half of them at
    x_n = 1 - (x_1 + ... + x_(n-1)), where nodes closer than 1e-16 cannot be placed: with
    masses 1e-3 and 1e3 (F from 1e-6 to 1e6) the simplex yields a certified value 5e-8 off
    at rtol 1e-8, the sectors the value to 1e-16, in fewer evaluations (3,129 against
    4,851 for the D = 2 bubble; the bundled Euclidean files take the same or fewer)."""
    blowups = diagram is not None and has_blowups(diagram)    # refuses a cycling decomposition
    singular = diagram is not None and bool(verdict(diagram).singular_faces)
    decompose = blowups or singular
    if singular and s.domain not in ("auto", "decomposed"):
        raise SpecError(
            f"domain: {s.domain!r} cannot be used here: the integrand has integrable "
            "singularities at the boundary (sector exponents between -1 and 0; `loopint show` "
            "lists them), which only domain 'decomposed' maps away; use domain 'auto'")
    if method == "iterated":
        if s.domain == "auto":
            return "decomposed" if decompose or direct else "simplex"
        if s.domain not in ("simplex", "decomposed"):
            raise SpecError("domain: the iterated engine integrates over the simplex or the "
                            f"decomposed sectors: domain {s.domain!r} is not available "
                            "for it")
        return s.domain
    if s.domain == "simplex":
        raise SpecError(f"domain: 'simplex' needs method 'iterated' (got {method!r})")
    if s.domain == "auto":
        return "decomposed" if decompose else "sequential"
    return s.domain


CONTOUR_QMC = {"lattice": "cbc", "periodize": "korobov3"}
"""QMC options on the deformed contour: the prime lattice ladder (an independent CBC rule per
level, with fresh shifts) and the degree-3 Korobov transform.  Not the embedded sequence: its
levels share their shifts and their points, so a term of the error that the rule of 2^m
points does not resolve is there, with the same value, on every smaller level too, and the
estimate stalls at one value for several doublings.  On the two-loop ladder and crossed
vertices at k^2/m_t^2 = 4.2-5 (H200, 2^26 points) the embedded sequence's estimate stayed
within 3 % from 2^21 to 2^24 points at every deformation strength tried, then fell by two to
five orders at 2^25; by default the ladder at k^2/m_t^2 = 4.5 ran to its budget of 10^9
evaluations at rtol 1e-6, where the prime ladder converges after 3.4e7.  On the decomposed
sectors (:func:`contour_domain`) the degree-5 transform takes 2-4 times the evaluations for
the k^2/m_t^2 = 5 and 4.5 ladders at rtol 1e-6, as many for pySecDec's elliptic box at 1e-5,
and 3 times as many on the 100-point ladder scan at 1e-4 (``python -m
loopint.bench.contour_cases --scan``, the README's table)."""


CONTOUR_TRANSFORM = "sidi2"
"""The boundary transform of the deformed contour's integrand for the region engines
(cubature, PAGANI): Sidi's sin^2 map, ``t ~ u^5`` at each face.  The deformation
``z_k = x_k (1 - i Lam(x) dV/dx_k)`` vanishes at the faces of a sector's cube, so structure of F
within a thin layer at a face is not smoothed: a normal threshold lies on a face (on an edge
of the simplex), and an on-shell leg beside a light line puts a zero of F within
``m_light^2 / s`` of one.  Adaptive cubature can converge without having found such a layer,
with an estimate far below its true error: a one-loop box with lines of 173 and 4.8, two legs
on the heavy shell and s = 10^6 came out "converged" at rtol 1e-5 5.8e-5 off (11 estimates),
and triangles 10^-10.6 to 10^-9.2 above a normal threshold up to 2.7e-5 off (up to 10
estimates in the imaginary part).  The transform stretches those layers: the box comes out
1e-8 off with fewer evaluations, and 34 triangles from 10^-11.6 to 10^-5 above the threshold
within 2.7 estimates and their tolerance (Sidi's sin^1 map, ``t ~ u^3``, left four of them
3-4 estimates off).  On the one-loop points of the physical test set
(``tests/physical_points.py``) it takes 0.5 to 2.1 times the evaluations of no transform,
every true error far within its estimate.  Lattices keep their own periodizing transform
(:data:`CONTOUR_QMC`)."""


def cube_transform(s: Settings, method: str, contour: bool) -> str:
    """The boundary transform of a cube integrand: ``s.transform`` when given; for ``"auto"``
    :data:`CONTOUR_TRANSFORM` on the deformed contour (``contour``) for the region engines,
    none elsewhere (the lattices' periodization is the engine's own; at Euclidean points and
    on delta terms no measured case needed one)."""
    if s.transform != "auto":
        return s.transform
    return CONTOUR_TRANSFORM if contour and method in ("cubature", "pagani") else "none"


def contour_domain(s: Settings, diagram: Diagram) -> str:
    """The domain of the deformed contour's integrand: ``s.domain`` when it is given, else
    the decomposed sectors where the diagram has blow-ups (:func:`has_blowups`), on which the
    deformed integrand is smooth (:meth:`loopint.contour.ContourIntegrand.bind_deformed`),
    and the primary sectors otherwise."""
    if s.domain != "auto":
        return s.domain
    return "decomposed" if has_blowups(diagram) else "sectors"


PILOT_CANDIDATES = ("qmc", "cubature")
"""The engines of ``method="pilot"`` (:class:`loopint.engines.Pilot`), in the order they are
tried: the lattice first, which on smooth integrands converges within its pilot."""


def make_engine(method: str, s: Settings, ndim: int, *, regulated: bool = False,
                bounded: bool = False, stop_on_nonfinite: bool = False) -> Engine:
    """The engine object with the options loopint uses for its integrands.

    ``regulated``: the integrand is a delta term, which cancels strongly (int |f| >> |int f|
    near the Landau surface).  The iterated engine then uses absolute inner tolerances from
    the start, which cancellation cannot spoil (it would otherwise try mixed ones first and
    rerun), and GK21 in every direction (the ridge of width delta along the Landau surface
    costs fewer evaluations with the higher rule; see :mod:`loopint.engines.iterated`).
    Cubature keeps its default estimate, global from two dimensions on (signed degree-9
    sweeps, :mod:`loopint.engines.cubature`, taken only where they cost fewer points than
    the local estimate is predicted to need), for every integrand: the sums of local errors
    overstate the true error 10^2-10^5 times, on delta terms (whose errors enter the
    extrapolation amplified), at Euclidean points and on the deformed contour (the pentagon
    gamma gamma -> t tbar H at rtol 1e-6 on a CPU, without the contour's boundary transform:
    3.8e6 evaluations against 2.1e7, true error 1e-8 relative; ``E0_ggttH`` of
    ``tests/physical_points.py``); a delta term sweeps whenever a sweep is due
    (``defer_sweeps=False``): its error is worth more than the points.  ``bounded``: the
    integrand is bounded on its domain (the direct integrand of a convergent diagram, whose
    integrable boundary singularities :func:`domain_for` maps away); the iterated engine
    then does not extrapolate toward the ends of its ranges (QUADPACK's QAGS,
    :mod:`loopint.engines.endpoint`): the extrapolation assumes that the integrand's
    behaviour at the resolved scales continues to the end, which a light mass breaks (a
    line of mass 1e-7 beside masses of order 1 changes the integrand at x ~ 1e-14, where
    the extrapolation would continue the massless behaviour and certify its value).  The cube engines
    skip their boundary probe: the sector analysis (:func:`at_point`,
    :mod:`loopint.divergence`) has proven the lowered integrand bounded at the faces.
    Every engine shards its evaluations over the local devices ``devices`` asks for
    (:mod:`loopint.engines.sharding`); with ``"all"`` under :mod:`jax.distributed`, over the
    devices of every process (the processes all run the same computation).
    """
    if method == "pilot":
        return engines.Pilot(tuple(make_engine(m, s, ndim, bounded=bounded)
                                   for m in PILOT_CANDIDATES))
    opts: dict = {}
    if s.devices != "all":
        opts["devices"] = s.devices
    elif jax.process_count() > 1:
        opts["devices"] = "global"        # one integral over every host of the run
    if stop_on_nonfinite:
        opts["stop_on_nonfinite"] = True
    if method in ("qmc", "mc"):
        opts["seed"] = s.seed
    if s.precision != "float64":
        opts["precision"] = s.precision
    if method == "iterated":
        if regulated:
            opts["inner_tolerance"] = "absolute"
            opts["rules"] = "gk21"
        if bounded:
            opts["endpoint_terms"] = 0
    else:
        opts["boundary_check"] = False
        if method == "cubature" and regulated:
            opts["defer_sweeps"] = False
    return engines.get(method, **opts)


def engine_domain(method: str, domain: str, ndim: int) -> Box | Simplex:
    """What the engine integrates over: the simplex itself for the iterated engine on the
    ``"simplex"`` domain, the unit cube otherwise."""
    return Simplex(ndim) if method == "iterated" and domain == "simplex" else Box.cube(ndim)


@dataclass(frozen=True, eq=False)
class Stage:
    """One kind of engine run as the plan fixed it.

    method / domain: the engine's name and the integrand's domain (:mod:`loopint.lower`);
    integrand: the lowered integrand; engine: the engine object with its options;
    engine_domain: the box or simplex it integrates over; rtol / atol / max_evals: the
    tolerances of the bare integral (the prefactor divided out) and the evaluation budget.
    """

    method: str
    domain: str
    integrand: Integrand
    engine: Engine
    engine_domain: Box | Simplex
    rtol: float
    atol: float
    max_evals: int

    def _engine(self, options: dict) -> Engine:
        return dataclasses.replace(self.engine, **options) if options else self.engine

    def integrate(self, f: Callable, **options) -> IntegrationResult:
        """Run the engine on the bound integrand ``f``; ``options`` replace engine options for
        this run only (e.g. the iterated engine's ``scale``)."""
        return self._engine(options).integrate(f, self.engine_domain, rtol=self.rtol,
                                               atol=self.atol, max_evals=self.max_evals)

    def prepare(self, f: Callable, **options) -> None:
        """Have the kernels that :meth:`integrate` of an integrand of ``f``'s shapes starts
        with compiled in the background (:meth:`loopint.engines.base.Engine.prepare`)."""
        self._engine(options).prepare(f, self.engine_domain, max_evals=self.max_evals)


@dataclass(frozen=True)
class DeltaSchedule:
    """The regulator sequence delta_j = delta0 q^-j, j < terms, and when to stop it.

    delta0: ``"auto"`` (scaled to the problem, :func:`loopint.delta_sequence.delta_scale`)
    or a number; min_terms: terms computed before the extrapolation is trusted; rtol / atol:
    the tolerance of the extrapolated bare value."""

    delta0: object
    q: float
    terms: int
    min_terms: int
    rtol: float
    atol: float


def physical_methods(diagram: Diagram, s: Settings) -> tuple[tuple, str]:
    """Which methods the physical points get (``("contour",)``, ``("delta",)`` or both) and,
    when ``contour = "auto"`` cannot use the contour, why."""
    if s.contour == "none":
        return ("delta",), ""
    if s.contour == "deform":
        return ("contour",), ""
    why = ""
    if s.method == "iterated":
        why = "method 'iterated' integrates the delta sequence only"
    elif s.domain not in ("auto", "sectors", "decomposed"):
        why = f"domain {s.domain!r} is not a domain of the contour (the sectors)"
    elif s.delta != "auto":
        why = f"delta0 = {s.delta} given: the delta sequence was asked for"
    elif verdict(diagram).singular_faces:
        why = ("integrable boundary singularities (sector exponents between -1 and 0) are "
               "subtracted in the decomposed sectors only")
    if why:
        if s.cross_check:
            raise SpecError(f"cross_check: needs both methods, but the contour cannot be used "
                            f"here: {why}")
        return ("delta",), why
    return ("contour", "delta"), ""


@dataclass(eq=False)
class RunPlan:
    """What :func:`loopint.compute` does for kinematic points that share the supports of U
    and F (build it with :meth:`at`).

    problem / settings: as given to compute; diagram: reduced at the points (:func:`at_point`);
    kin: the points ``[K, s]``; regions: their kinds; prefactor: its value for
    ``settings.prefactor``; ndim: integration variables; derivatives: the derivatives asked
    for (:mod:`loopint.derivatives`), integrated with the value by every stage; refused: the
    request and the reason where they cannot be taken at these points of a batch (the
    values are computed, the derivatives reported as not converged).  The stages
    ``direct``, ``delta`` and ``contour`` and ``physical`` (:func:`physical_methods`) are
    built on first use.
    """

    problem: Problem
    settings: Settings
    diagram: Diagram
    kin: np.ndarray
    regions: list
    prefactor: complex
    ndim: int
    derivatives: Request | None = None
    refused: tuple | None = None

    @classmethod
    def at(cls, problem: Problem, settings: Settings, probe: Integrand, keep_U: np.ndarray,
           keep_F: np.ndarray, kin: np.ndarray) -> "RunPlan":
        """The plan for the points ``kin`` of ``problem`` (``probe``: its diagram lowered on
        the simplex; ``keep_U``, ``keep_F``: the points' supports, :func:`support_groups`)."""
        req = request(settings.derivatives, settings.derivative_order, probe.symbols)
        keep_U, keep_F, why = supports_for(probe, keep_U, keep_F, kin, req, point_text)
        refused = None
        if why is not None:
            if not any(np.ndim(v) for v in problem.kinematics.values()):
                raise SpecError(why)
            refused, req = (req, why), None     # a batch: these points' derivatives fail
        diagram = at_point(problem.diagram, probe, keep_U, keep_F, kin)
        probe = integrand(diagram, "simplex", "none", "float64")
        return cls(problem, settings, diagram, kin, point_regions(probe, kin, settings),
                   complex(sympy.N(diagram.prefactor(settings.prefactor), 20)), probe.ndim,
                   req, refused)

    @property
    def blocks(self) -> int:
        """Quantities per kinematic point: the value and its derivatives
        (:mod:`loopint.derivatives`)."""
        return blocks(self.derivatives)

    def bind(self, f):
        """The bound integrand ``f`` with the requested derivatives appended, and their
        weights (:meth:`loopint.derivatives.Request.bind`); ``(f, None)`` when none are asked
        for."""
        return with_derivatives(self.derivatives, f)

    @property
    def bare_atol(self) -> float:
        """The absolute tolerance of the bare integral (the prefactor divided out)."""
        return self.settings.atol / max(abs(self.prefactor), 1e-300)

    @functools.cached_property
    def direct(self) -> Stage:
        s = self.settings
        method = method_for(s, self.ndim, regulated=False, diagram=self.diagram,
                            points=sum(r.kind != "physical" for r in self.regions))
        domain = domain_for(s, method, self.diagram, direct=True)
        return self._stage(method, domain, make_engine(method, s, self.ndim, bounded=True),
                           s.rtol, self.bare_atol)

    @functools.cached_property
    def delta(self) -> Stage:
        s = self.settings
        method = method_for(s, self.ndim, regulated=True, diagram=self.diagram)
        domain = domain_for(s, method, self.diagram)
        factor = DELTA_RTOL_FACTOR_CUBATURE if method == "cubature" else DELTA_RTOL_FACTOR
        return self._stage(method, domain, make_engine(method, s, self.ndim, regulated=True),
                           max(s.rtol * factor, 1e-13),
                           s.atol * factor / max(abs(self.prefactor), 1e-300))

    @functools.cached_property
    def contour(self) -> Stage:
        from .contour import CONTOUR_DOMAINS, ContourIntegrand
        s = self.settings
        method = contour_method(s, self.ndim)
        if s.domain not in ("auto",) + CONTOUR_DOMAINS:
            raise SpecError(f"domain: the deformed contour is integrated over the domains "
                            f"{', '.join(CONTOUR_DOMAINS)}, not {s.domain!r}")
        if verdict(self.diagram).singular_faces:
            raise SpecError("contour: the deformed contour integrates over the sectors, where "
                            "this integrand has integrable singularities at the boundary "
                            "(sector exponents between -1 and 0, see `loopint show`); use "
                            "contour 'none' (the delta sequence over the decomposed sectors)")
        domain = contour_domain(s, self.diagram)
        ig = integrand(self.diagram, domain, cube_transform(s, method, contour=True),
                       s.precision, kind=ContourIntegrand)
        engine = make_engine(method, s, self.ndim,
                             stop_on_nonfinite=method in ("cubature", "qmc"))
        if method == "qmc":
            engine = dataclasses.replace(engine, **CONTOUR_QMC)
        return Stage(method, domain, ig, engine, engine_domain(method, domain, self.ndim),
                     s.rtol, self.bare_atol, int(s.max_evals))

    @functools.cached_property
    def physical(self) -> tuple[tuple, str]:
        """:func:`physical_methods`, without the delta sequence where its stage cannot be
        built from these settings (e.g. domain 'sectors' with an iterated delta engine): the
        contour alone then, and a cross-check is refused before anything runs."""
        how, why = physical_methods(self.diagram, self.settings)
        if how == ("contour", "delta"):
            try:
                self.delta
            except SpecError as e:
                if self.settings.cross_check:
                    raise SpecError(f"cross_check: needs both methods, but the delta sequence "
                                    f"cannot run with these settings ({e})") from None
                return ("contour",), ""
        return how, why

    @property
    def schedule(self) -> DeltaSchedule:
        s = self.settings
        return DeltaSchedule(s.delta, s.delta_q, s.delta_terms, s.delta_min_terms, s.rtol,
                             self.bare_atol)

    def _stage(self, method: str, domain: str, engine: Engine, rtol: float,
               atol: float) -> Stage:
        s = self.settings
        transform = "none" if domain == "simplex" else cube_transform(s, method, contour=False)
        ig = integrand(self.diagram, domain, transform, s.precision)
        return Stage(method, domain, ig, engine, engine_domain(method, domain, self.ndim),
                     rtol, atol, int(s.max_evals))
