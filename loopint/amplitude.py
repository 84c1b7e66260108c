"""Amplitudes: weighted sums A = sum_i c_i(kinematics) I_i of loop integrals, with the error
budget of the sum shared between its terms.

The user asks for the accuracy of the sum, not of each integral:

    |error(A)| <= tau = max(atol, rtol * |A|).

The budget rule
---------------
1. Pilot.  Every integral with a non-zero coefficient is computed at a loose relative tolerance
   ``pilot_rtol`` (default ``min(0.1, sqrt(rtol))``).  This gives the size of each term,
   T_i = c_i I_i, the sum, tau, and for each term the evaluations N_i its run took and the
   error it reached.
2. Allocation.  Term i is given an absolute tolerance sigma_i on T_i, with

       sum_i sigma_i <= tau                                                        (*)

   chosen to minimize the modelled cost sum_i N_i (s_i / sigma_i)^(1/alpha_i), where s_i is
   the error T_i has now: an engine whose error falls like N^(-alpha) needs N_i (s_i /
   sigma_i)^(1/alpha) evaluations to reach sigma_i.  Lagrange's condition gives

       sigma_i = B * w_i / sum_j w_j,   w_i = N_i^(alpha_i/(1+alpha_i)) s_i^(1/(1+alpha_i)),

   so the relative tolerance of a term, sigma_i/|T_i|, falls as |T_i| grows: large terms are
   computed more accurately than ``rtol``, small ones less.  A term whose present error is
   already within its share (``s_i <= sigma_i``, a converged run) is not recomputed; its
   error is charged to the budget as it is and the rest, B = tau - sum of those errors, is
   shared again among the others (water-filling), until no more terms drop out.  alpha = 1
   for quasi-Monte Carlo (lattice rules with a periodizing transform), 1/2 for Monte Carlo and
   2 for the deterministic rules (iterated Gauss-Kronrod, Genz-Malik cubature, PAGANI), which
   converge at least that fast on the smooth integrands they are chosen for; alpha only sets
   how strongly the shares follow cost rather than size.
3. Refinement, one term at a time.  Of the terms not within their shares, the one with the
   largest share is computed again with ``atol`` = sigma_i / (|Re c_i| + |Im c_i|) and
   ``rtol`` = 0 (:func:`loopint.compute`'s atol is on the value with its prefactor, i.e. on
   I_i); then the budget is shared again with its new error and cost.  One at a time because
   engines overshoot their tolerances: what a refined term leaves unused goes to the others
   and may spare them their refinement.  The allocation spends 0.9 tau of the most
   pessimistic |A| (|A| minus its present error), so that a sum that moves within its error
   stays within tolerance; a sum that cancels below its present error is asked for a 100
   times smaller error first.  It stops when the error is within tau, or names why not (a
   term that does not converge, one refined ``MAX_ROUNDS`` times, the evaluation budget).

pySecDec evaluates weighted sums of integrals in the same spirit (``sum_package`` and the
amplitude classes of SecDecUtil, from version 1.5; G. Heinrich et al., Comput. Phys. Commun.
273 (2022) 108267, arXiv:2108.10807, and the pySecDec documentation, "Evaluating a Weighted Sum
of Integrals"): the sample sizes of the integrals are chosen so that the precision asked of the
sum is reached in the least integration time, with the integrals' Monte Carlo and QMC errors,
which are statistical, added in quadrature.

How errors combine
------------------
Linearly.  The error estimates of the deterministic rules are not independent random
variables, and those of QMC runs with one seed need not be independent either, so adding in
quadrature would claim a cancellation that nothing guarantees.  With ``error.real`` and
``error.imag`` bounding the parts of each I_i (the convention of :class:`loopint.Result`), the
parts of c_i I_i are bounded by :func:`loopint.result.scale_error` and those of A by the sum of
these bounds; |error(A)| <= sum_i (|Re c_i| + |Im c_i|) |error(I_i)|, which is what (*) budgets.

Many points: kinematic values may be 1-D arrays (a scan); each integral is then one batched
computation over all points, tau and the shares are per point, and a term is refined with the
tightest of its per-point tolerances.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import sympy

from . import __version__
from .diagram import Diagram
from .errors import SpecError
from .io import jsonable
from .problem import Problem, check_kinematics, load, read_toml, validate_settings
from .result import Result, device_name, scale_error
from .spec.expr import ExpressionError, is_identifier, parse_expression

__all__ = ["Amplitude", "AmplitudeResult", "Term", "TermResult", "amplitude", "load_amplitude",
           "share_budget"]

MAX_ROUNDS = 4          # refinements of one term after its pilot
SAFETY = 0.9            # fraction of tau the allocation spends
ALPHA = {"qmc": 1.0, "mc": 0.5}     # error ~ N^-alpha; deterministic rules: ALPHA_DEFAULT
ALPHA_DEFAULT = 2.0
# Settings of every term that an amplitude may set (besides the sum's rtol/atol/max_evals)
TERM_SETTINGS = ("method", "precision", "seed", "prefactor", "domain", "transform")
INTEGRATION_KEYS = ("rtol", "atol", "max_evals", "pilot_rtol") + TERM_SETTINGS
_TABLES = ("amplitude", "kinematics", "integration")


# ------------------------------------------------------------------------------- the input
@dataclass(frozen=True)
class Term:
    """One term c * I of an amplitude.

    key: where it was defined (``amplitude.term[2]`` in a file, ``terms[2]`` in the API);
    coefficient: the text (or number) given, as text; raw: as given; expr: it parsed (sympy, in the kinematic symbols);
    problem: the integral, with the amplitude's kinematics; file: its diagram file, if any.
    """

    key: str
    coefficient: str
    expr: Any
    problem: Problem
    file: str | None = None
    raw: Any = None

    @property
    def name(self) -> str:
        return self.problem.diagram.name


@dataclass(frozen=True)
class Amplitude:
    """A validated amplitude: its terms, the shared kinematics and the sum's settings
    (``rtol``, ``atol``, ``max_evals``, ``pilot_rtol``; ``overrides``: settings given to every
    term's computation, e.g. ``method``)."""

    name: str
    terms: tuple
    kinematics: dict
    rtol: float = 1e-6
    atol: float = 0.0
    max_evals: int = 10**12
    pilot_rtol: float | None = None
    overrides: dict = field(default_factory=dict)
    path: str | None = None


def _err(where: str | None, key: str, msg: str) -> SpecError:
    return SpecError(f"{where + ': ' if where else ''}{key}: {msg}")


def _shared_kinematics(kin: Mapping[str, Any] | None, where: str | None) -> dict:
    """The amplitude's kinematic values: finite numbers or 1-D arrays of one length."""
    out = {}
    for k, v in (kin or {}).items():
        key = f"kinematics.{k}"
        if not is_identifier(k):
            raise _err(where, key, "not a valid symbol name")
        if isinstance(v, (list, tuple, np.ndarray)):
            try:
                a = np.asarray(v, dtype=float)
            except (TypeError, ValueError):
                raise _err(where, key, f"must be a number or a 1-D list of numbers, got {v!r}") from None
            if a.ndim != 1 or a.size == 0:
                raise _err(where, key, f"must be a number or a 1-D list of numbers, got {v!r}")
        elif isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            a = float(v)
        else:
            raise _err(where, key, f"must be a number or a 1-D list of numbers, got {v!r}")
        if not np.all(np.isfinite(a)):
            raise _err(where, key, "values must be finite (no NaN or inf)")
        out[k] = a
    sizes = {np.size(v) for v in out.values() if np.ndim(v)}
    if len(sizes) > 1:
        raise _err(where, "kinematics", f"arrays of different lengths {sorted(sizes)}")
    return out


def _coefficient(value, kin: Mapping[str, Any], key: str, where: str | None):
    """(text, sympy expression) of a coefficient: a number or an expression in the kinematic
    symbols, parsed with the restricted grammar (:func:`loopint.spec.expr.parse_expression`)."""
    if isinstance(value, (complex, np.complexfloating)):
        if not (math.isfinite(value.real) and math.isfinite(value.imag)):
            raise _err(where, key, f"must be finite, got {value!r}")
        return repr(complex(value)), sympy.Float(value.real) + sympy.I * sympy.Float(value.imag)
    if isinstance(value, (np.integer, np.floating)):
        value = value.item()
    try:
        expr = parse_expression(value, sorted(kin))
    except ExpressionError as e:
        hint = ("; coefficients may use the amplitude's kinematic symbols, given in "
                "[kinematics]" if "unknown symbol" in str(e) else "")
        raise _err(where, key, f"{e}{hint}") from None
    return (value if isinstance(value, str) else repr(value)), expr


def _term_problem(target, kin: dict, key: str, where: str | None, base: Path | None):
    """The Problem of one term at the amplitude's kinematics (shared values override the
    term file's own), and its file."""
    file = None
    if isinstance(target, (str, Path)):
        p = Path(target)
        if base is not None and not p.is_absolute():
            p = base / p
        file = str(p)
        if not p.is_file():
            raise _err(where, key, f"diagram file {str(target)!r} not found (looked for {p})")
        try:
            target = load(p)
        except SpecError as e:
            raise _err(where, key, str(e)) from None
    if isinstance(target, Problem):
        own = {k: target.kinematics[k] for k in target.diagram.kinematic_symbols}
        diagram, settings, reference, tpath = (target.diagram, target.settings, target.reference,
                                               target.path)
    elif isinstance(target, Diagram):
        own, diagram, settings, reference, tpath = {}, target, None, None, None
    else:
        raise _err(where, key, "the integral must be a Problem, a Diagram or the path of a "
                   f"diagram file, got {type(target).__name__}")
    values = {s: kin.get(s, own.get(s)) for s in diagram.kinematic_symbols}
    missing = [s for s, v in values.items() if v is None]
    if missing:
        raise _err(where, key, f"kinematics: no value for {', '.join(missing)} (give it in the "
                   "amplitude's kinematics)")
    try:
        checked = check_kinematics(diagram, values, where=None)
    except SpecError as e:
        raise _err(where, key, str(e)) from None
    problem = Problem(diagram, checked, *(() if settings is None else (settings, reference)),
                      path=tpath)
    return problem, file


def build(terms: Sequence, kinematics: Mapping[str, Any] | None = None, *, name: str = "amplitude",
          rtol: float | None = None, atol: float | None = None, max_evals: int | None = None,
          pilot_rtol: float | None = None, where: str | None = None,
          keys: Sequence[str] | None = None, base: Path | None = None,
          **overrides) -> Amplitude:
    """Validate ``terms`` [(coefficient, integral), ...] into an :class:`Amplitude`
    (the checks of :func:`amplitude`); every error is a :class:`SpecError` naming the key."""
    kin = _shared_kinematics(kinematics, where)
    if not isinstance(terms, (list, tuple)) or not terms:
        raise _err(where, "amplitude.term" if keys is not None else "terms",
                   "empty amplitude: give at least one term (coefficient, integral)")
    out = []
    for i, t in enumerate(terms):
        key = keys[i] if keys else f"terms[{i}]"
        if not isinstance(t, (list, tuple)) or len(t) != 2:
            raise _err(where, key, f"must be a pair (coefficient, integral), got {t!r}")
        text, expr = _coefficient(t[0], kin, f"{key}.coefficient" if keys else key, where)
        problem, file = _term_problem(t[1], kin, f"{key}.diagram" if keys else key, where, base)
        out.append(Term(key, text, expr, problem, file, t[0]))
    given = {"rtol": rtol, "atol": atol, "max_evals": max_evals, **overrides}
    given = {k: v for k, v in given.items() if v is not None}
    for k in given:
        if k not in INTEGRATION_KEYS:
            raise _err(where, f"integration.{k}" if keys is not None else k,
                       f"unknown setting of an amplitude (known: {', '.join(INTEGRATION_KEYS)})")
    try:
        s = validate_settings({"max_evals": 10**12, **given})
    except SpecError as e:
        raise SpecError(f"{where + ': ' if where else ''}"
                        f"{'integration.' if keys is not None else ''}{e}") from None
    if pilot_rtol is not None and (isinstance(pilot_rtol, bool) or not isinstance(
            pilot_rtol, (int, float)) or not 0 < pilot_rtol < 1):
        raise _err(where, "integration.pilot_rtol" if keys is not None else "pilot_rtol",
                   f"must be a number between 0 and 1, got {pilot_rtol!r}")
    return Amplitude(name, tuple(out), kin, s.rtol, s.atol, s.max_evals, pilot_rtol,
                     {k: getattr(s, k) for k in TERM_SETTINGS if k in given}, where or None)


def amplitude_from_dict(doc: Mapping[str, Any], path: str | None = None) -> Amplitude:
    """Validate a parsed amplitude file (``[amplitude]`` with ``[[amplitude.term]]``,
    ``[kinematics]``, ``[integration]``)."""
    for k in doc:
        if k not in _TABLES:
            raise _err(path, k, f"unknown table or key of an amplitude file (known: "
                       f"{', '.join(_TABLES)})")
        if not isinstance(doc[k], dict):
            raise _err(path, k, "must be a table")
    amp = doc.get("amplitude")
    if amp is None:
        raise _err(path, "amplitude", "missing [amplitude] table")
    for k in amp:
        if k not in ("name", "term"):
            raise _err(path, f"amplitude.{k}", "unknown key (known: name, term)")
    name = amp.get("name", Path(path).stem if path else "amplitude")
    if not isinstance(name, str):
        raise _err(path, "amplitude.name", "must be a string")
    raw = amp.get("term", [])
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise _err(path, "amplitude.term", "must be a list of [[amplitude.term]] tables")
    if not raw:
        raise _err(path, "amplitude.term", "empty amplitude: give at least one "
                   "[[amplitude.term]] with a coefficient and a diagram")
    keys, pairs = [], []
    for i, t in enumerate(raw):
        key = f"amplitude.term[{i}]"
        for k in t:
            if k not in ("coefficient", "diagram"):
                raise _err(path, f"{key}.{k}", "unknown key (known: coefficient, diagram)")
        for k in ("coefficient", "diagram"):
            if k not in t:
                raise _err(path, f"{key}.{k}", "missing")
        if not isinstance(t["diagram"], str):
            raise _err(path, f"{key}.diagram", "must be the path of a diagram file")
        keys.append(key)
        pairs.append((t["coefficient"], t["diagram"]))
    integ = dict(doc.get("integration", {}))
    base = Path(path).parent if path else None
    return build(pairs, doc.get("kinematics", {}), name=name, where=path or "", keys=keys,
                 base=base, **integ)


def load_amplitude(path: str | Path) -> Amplitude:
    """Read and validate an amplitude file; term diagram paths are relative to it."""
    return amplitude_from_dict(read_toml(path), str(path))


def is_amplitude_file(path: str | Path) -> bool:
    """True when ``path`` is a TOML file with an ``[amplitude]`` table (False when it cannot
    be read or parsed: :func:`loopint.load` then reports why)."""
    try:
        return "amplitude" in read_toml(path)
    except SpecError:
        return False


# ------------------------------------------------------------------------------- the output
@dataclass
class TermResult:
    """One term of an evaluated amplitude.

    value / error: the integral I_i (with its prefactor) and its error (``error.real`` and
    ``error.imag`` bound the parts); coefficient_value: c_i at the kinematic point(s);
    contribution / contribution_error: c_i I_i and the bounds of its parts
    (:func:`loopint.result.scale_error`); tolerance: the term's share of the sum's final
    tolerance tau: its error plus a part of the unused budget in proportion to the rule's
    weights, the shares adding up to tau (where the sum did not converge: the share the rule
    would ask for next); None for a zero coefficient;
    atol: the absolute tolerance on I_i asked of its last computation (None: the pilot, at
    relative tolerance ``pilot_rtol``); runs: computations made (pilot and refinements);
    result: the last :class:`loopint.Result`.
    """

    key: str
    name: str
    file: str | None
    coefficient: str
    coefficient_value: Any
    value: Any
    error: Any
    contribution: Any
    contribution_error: Any
    converged: bool
    status: str
    tolerance: Any
    atol: float | None
    runs: int
    evaluations: int
    seconds: float
    result: Result | None = None

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in (
            "key", "name", "file", "coefficient", "coefficient_value", "value", "error",
            "contribution", "contribution_error", "converged", "status", "tolerance", "atol",
            "runs", "evaluations", "seconds")}
        if self.result is not None:
            d["method"] = self.result.method
            d["region"] = self.result.region
            d["settings"] = self.result.settings
        return jsonable(d)


@dataclass
class AmplitudeResult:
    """An evaluated amplitude A = sum_i c_i I_i.

    value / error: A and the bounds of its real and imaginary parts (linear sums of the terms'
    bounds); tolerance: tau = max(atol, rtol |A|) per point; converged: every term converged
    and |error| <= tau at every point; status: why not, naming the term(s); evaluations /
    seconds: of all computations (pilots and refinements); terms: :class:`TermResult` per
    term; refinements: the computations after the pilots, in order: the term, its share of
    the budget, the atol asked of I, the error reached (in the budget's units), evaluations,
    and the sum's tolerance at that step.
    """

    name: str
    value: Any
    error: Any
    converged: bool
    status: str
    rtol: float
    atol: float
    pilot_rtol: float
    tolerance: Any
    evaluations: int
    seconds: float
    terms: list
    refinements: list
    kinematics: dict
    device: str
    file: str | None = None
    version: str = __version__

    @property
    def error_kind(self) -> str:
        return "estimate" if self.converged else "lower bound"

    def __repr__(self) -> str:
        v, e = np.atleast_1d(self.value), np.atleast_1d(self.error)
        val = (f"({v[0].real:.10g} ± {abs(e[0].real):.2g}) + ({v[0].imag:.10g} ± "
               f"{abs(e[0].imag):.2g})i" if v.size == 1 else f"{v.size} kinematic points")
        return (f"AmplitudeResult({self.name}: {val}; {self.status}; {len(self.terms)} terms, "
                f"{self.evaluations:.3g} evaluations, {self.seconds:.3g} s)")

    def table(self) -> list[dict]:
        """One row per term: key, name, coefficient, c*I, its error, the tolerance it was
        given, relative tolerance, evaluations, status (first point when batched)."""
        rows = []
        for t in self.terms:
            c = complex(np.atleast_1d(t.contribution)[0])
            e = complex(np.atleast_1d(t.contribution_error)[0])
            tol = None if t.tolerance is None else float(np.atleast_1d(t.tolerance)[0])
            rows.append({"key": t.key, "name": t.name, "coefficient": t.coefficient,
                         "contribution": c, "error": math.hypot(e.real, e.imag),
                         "tolerance": tol, "relative_tolerance":
                             None if tol is None or c == 0 else tol / abs(c),
                         "evaluations": t.evaluations, "runs": t.runs, "status": t.status})
        return rows

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in (
            "name", "value", "error", "error_kind", "converged", "status", "rtol", "atol",
            "pilot_rtol", "tolerance", "evaluations", "seconds", "refinements", "kinematics",
            "device", "file", "version")}
        d["terms"] = [t.to_dict() for t in self.terms]
        return jsonable(d)


# ------------------------------------------------------------------------------- the budget
def share_budget(errors, costs, tau, alpha, frozen=None) -> tuple[np.ndarray, np.ndarray]:
    """The shares sigma_i of the budget tau (module docstring, step 2), per point.

    Args:
        errors: s[i, k], the present absolute error of term i at point k (in the units of the
            budget: (|Re c| + |Im c|) |error(I)|).
        costs: N[i], evaluations of the run that gave it.
        tau: budget per point, shape (K,).
        alpha: the convergence exponent of each term's engine, shape (n,).
        frozen: terms that may keep their present error (a converged run) where it is within
            their share; others are always given a share.

    Returns:
        (sigma[i, k], kept[i, k], offered[i, k]): the shares, where a term keeps its present
        error (sigma = s there; sum_i sigma[i, k] <= tau[k]), and the share each term was
        offered: sigma where it is not kept, and where it is, the share it had when it was
        found within it (>= s).
    """
    s = np.asarray(errors, float)
    n, K = s.shape
    tau = np.broadcast_to(np.asarray(tau, float), (K,))
    w = _weights(s, costs, alpha)
    may = np.broadcast_to(np.ones((n, 1), bool) if frozen is None else
                          np.asarray(frozen, bool)[:, None], (n, K))
    kept = (s == 0) & may
    offered = np.zeros((n, K))
    while True:
        free = ~kept
        budget = np.maximum(tau - np.where(kept, s, 0).sum(0), 0.0)
        wsum = np.where(free, w, 0).sum(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(wsum > 0, budget * w / wsum, budget / np.maximum(free.sum(0), 1))
        sigma = np.where(kept, s, share)
        offered = np.where(kept, offered, sigma)
        new = free & may & (s <= sigma)
        if not new.any():
            return sigma, kept, offered
        kept |= new


def _weights(errors, costs, alpha) -> np.ndarray:
    """w[i, k] = N_i^(alpha_i/(1+alpha_i)) s_ik^(1/(1+alpha_i)): the shares of the optimal
    allocation are proportional to them (module docstring, step 2)."""
    N = np.maximum(np.asarray(costs, float), 1.0)[:, None]
    a = np.asarray(alpha, float)[:, None]
    return N ** (a / (1 + a)) * np.asarray(errors, float) ** (1 / (1 + a))


def _alpha(method: str) -> float:
    """The slowest convergence exponent among the engines a result used."""
    return min(ALPHA.get(m, ALPHA_DEFAULT) for m in (method or "").split("+") if m) \
        if method else ALPHA_DEFAULT


def _coefficient_values(term: Term, kin: Mapping[str, Any], K: int,
                        where: str | None) -> np.ndarray:
    """c at every point (complex, shape (K,)); a SpecError naming the term where it is not
    finite (a denominator that vanishes at the point)."""
    syms = sorted(term.expr.free_symbols, key=str)
    f = sympy.lambdify(syms, term.expr, modules="numpy")
    args = [np.asarray(kin[str(x)], dtype=complex) for x in syms]
    with np.errstate(all="ignore"):
        c = np.broadcast_to(np.asarray(f(*args), dtype=complex), (K,)).copy()
    if not np.all(np.isfinite(c)):
        bad = int(np.flatnonzero(~np.isfinite(c))[0])
        at = ", ".join(f"{x} = {np.atleast_1d(kin[str(x)])[min(bad, np.size(kin[str(x)]) - 1)]}"
                       for x in syms)
        raise _err(where, f"{term.key}.coefficient" if term.key.startswith("amplitude.") else
                   term.key, f"{term.coefficient!r} is not finite at "
                        f"{at}" + (f" (point {bad})" if K > 1 else ""))
    return c


# ------------------------------------------------------------------------------- evaluation
class _Terms:
    """The terms' latest results during an evaluation, as arrays over (term, point)."""

    def __init__(self, amp: Amplitude, c: np.ndarray, progress, t_start: float):
        n, K = c.shape
        self.amp, self.c, self.progress, self.t_start = amp, c, progress, t_start
        self.kappa = np.abs(c.real) + np.abs(c.imag)     # |c I| error per |I| error (bound)
        self.v = np.zeros((n, K), complex)
        self.e = np.zeros((n, K), complex)
        self.ok = np.ones(n, bool)
        self.status = ["not computed: coefficient 0"] * n
        self.evaluations = np.zeros(n, int)
        self.last_cost = np.zeros(n, int)
        self.seconds = np.zeros(n)
        self.runs = np.zeros(n, int)
        self.alpha = np.full(n, ALPHA_DEFAULT)
        self.atol: list = [None] * n
        self.tolerance: list = [None] * n
        self.results: list = [None] * n

    @property
    def spent(self) -> int:
        return int(self.evaluations.sum())

    def run(self, i: int, stage: str, rtol: float, atol: float) -> None:
        """Compute term i at (rtol, atol) on I_i, within what is left of the sum's budget."""
        from .compute import compute
        term = self.amp.terms[i]
        own = term.problem.settings.max_evals
        max_evals = max(1, min(own, self.amp.max_evals - self.spent))
        t0 = time.perf_counter()
        # a term file's own derivatives are not part of the sum: not computed
        r = compute(term.problem, settings=term.problem.settings, rtol=rtol, atol=atol,
                    max_evals=max_evals, derivatives=(), **self.amp.overrides)
        self.seconds[i] += time.perf_counter() - t0
        K = self.v.shape[1]
        self.v[i] = np.broadcast_to(np.asarray(r.value, complex), (K,))
        self.e[i] = np.broadcast_to(np.asarray(r.error, complex), (K,))
        self.ok[i], self.status[i], self.results[i] = r.converged, r.status, r
        self.evaluations[i] += r.evaluations
        self.last_cost[i] = r.evaluations
        self.runs[i] += 1
        self.alpha[i] = _alpha(r.method)
        self.atol[i] = None if stage == "pilot" else atol
        if self.progress:
            self.progress({"stage": stage, "term": term.key, "name": term.name,
                           "value": self.c[i] * self.v[i], "error": self.scaled()[i],
                           "evaluations": self.spent,
                           "seconds": time.perf_counter() - self.t_start})

    def scaled(self) -> np.ndarray:
        """Each term's error in the budget's units: (|Re c| + |Im c|) |error(I)|."""
        return self.kappa * np.hypot(self.e.real, self.e.imag)

    def total(self) -> tuple[np.ndarray, np.ndarray]:
        """A = sum c I and the bounds of its parts (linear sums, module docstring)."""
        return (self.c * self.v).sum(0), scale_error(self.e, self.c).sum(0)


def evaluate(amp: Amplitude, progress: Callable[[dict], None] | None = None) -> AmplitudeResult:
    """Evaluate an :class:`Amplitude` with the budget rule of the module docstring."""
    t_start = time.perf_counter()
    K = max([np.size(v) for v in amp.kinematics.values() if np.ndim(v)] or [1])
    c = np.stack([_coefficient_values(t, amp.kinematics, K, amp.path) for t in amp.terms])
    st = _Terms(amp, c, progress, t_start)
    pilot = amp.pilot_rtol or (min(0.1, math.sqrt(amp.rtol)) if amp.rtol > 0 else 1e-2)
    live = [i for i in range(len(amp.terms)) if np.any(c[i] != 0)]
    for i in live:
        st.run(i, "pilot", pilot, 0.0)
    history, stop = [], None
    while True:
        value, error = st.total()
        E = np.hypot(error.real, error.imag)
        tau = np.maximum(amp.atol, amp.rtol * np.abs(value))
        if np.all(st.ok[live]) and np.all(E <= tau):
            break
        if st.spent >= amp.max_evals:
            stop = f"evaluation budget of the sum (max_evals = {amp.max_evals:.3g}) spent"
            break
        stop = _refine_one(st, live, value, E, history)
        if stop:
            break
    if live:
        for i, share in zip(live, _final_shares(st, live, tau)):
            st.tolerance[i] = share
    return _result(amp, st, live, pilot, history, stop, K, t_start)


def _final_shares(st: _Terms, live: list, tau) -> np.ndarray:
    """The shares of the sum's final tolerance tau the terms hold: each term's error plus a
    part of what is left (tau - sum of the errors) in proportion to the rule's weights w_i, so
    that they add up to tau; where the errors add up to more (the sum did not converge), the
    shares the rule would ask for next."""
    s, N, a = st.scaled()[live], st.last_cost[live], st.alpha[live]
    slack = tau - s.sum(0)
    if np.all(slack >= 0):
        w = _weights(s, N, a)
        wsum = w.sum(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            part = np.where(wsum > 0, w / wsum, 1.0 / len(live))
        return s + slack * part
    return share_budget(s, N, tau, a, frozen=st.ok[live])[0]


def _refine_one(st: _Terms, live: list, value, E, history: list) -> str | None:
    """One step of the refinement (module docstring, steps 2 and 3): share the budget among
    the terms as they are now and recompute the one with the largest share that is not within
    it.  One term at a time, because engines overshoot their tolerance: what a refined term
    leaves unused is shared again, and may spare others their refinement.  Returns a reason
    to stop, or None."""
    amp = st.amp
    lower = np.maximum(np.abs(value) - E, 0.0)
    tau = SAFETY * np.maximum(amp.atol, amp.rtol * lower)
    # a sum that cancels below its present error: ask for a 100 times smaller error
    tau = np.where(tau > 0, tau, E / 100)
    sigma, kept, _ = share_budget(st.scaled()[live], st.last_cost[live], tau, st.alpha[live],
                                  frozen=st.ok[live])
    todo = [j for j in range(len(live)) if not kept[j].all()]
    if not todo:
        return "no term can be refined further"
    j = max(todo, key=lambda j: float(np.max(np.where(kept[j], 0.0, sigma[j]))))
    i = live[j]
    if st.runs[i] > MAX_ROUNDS:
        return f"{amp.terms[i].key} refined {MAX_ROUNDS} times without reaching its share"
    need = ~kept[j] & (st.kappa[i] > 0)
    target = float(np.min(sigma[j][need] / st.kappa[i][need]))
    # below the float64 resolution of I_i no engine can go; the sum then reports its error
    target = max(target, 4e-16 * float(np.max(np.abs(st.v[i]))))
    st.run(i, "refinement", 0.0, target)
    history.append({"term": amp.terms[i].key, "name": amp.terms[i].name, "share": sigma[j],
                    "atol": target, "error": st.scaled()[i], "evaluations": st.last_cost[i],
                    "tolerance_of_sum": tau / SAFETY})
    if not st.ok[i]:
        return f"refinement of {amp.terms[i].key} did not converge"
    return None


def _result(amp: Amplitude, st: _Terms, live: list, pilot: float, history: list, stop,
            K: int, t_start: float) -> AmplitudeResult:
    value, error = st.total()
    E = np.hypot(error.real, error.imag)
    tau = np.maximum(amp.atol, amp.rtol * np.abs(value))
    reasons = [f"term {amp.terms[i].key} ({amp.terms[i].name}) not converged: {st.status[i]}"
               for i in live if not st.ok[i]]
    over = ~(E <= tau)
    if over.any():
        where = f" at {int(over.sum())} of {K} points" if K > 1 else ""
        reasons.append(f"sum error {float(np.max(E)):.3g} above its tolerance "
                       f"{float(np.min(tau[over])):.3g}{where}")
    if stop and reasons:
        reasons.append(stop)
    converged = not reasons
    one = (lambda x: complex(x[0]) if np.iscomplexobj(x) else float(x[0])) if K == 1 else (
        lambda x: x)
    terms = []
    for i, t in enumerate(amp.terms):
        computed = st.runs[i] > 0
        tol = st.tolerance[i]
        terms.append(TermResult(
            key=t.key, name=t.name, file=t.file, coefficient=t.coefficient,
            coefficient_value=one(st.c[i]), value=one(st.v[i]) if computed else None,
            error=one(st.e[i]) if computed else None, contribution=one(st.c[i] * st.v[i]),
            contribution_error=one(scale_error(st.e[i], st.c[i])), converged=bool(st.ok[i]),
            status=st.status[i], tolerance=None if tol is None else one(tol), atol=st.atol[i],
            runs=int(st.runs[i]), evaluations=int(st.evaluations[i]),
            seconds=float(st.seconds[i]), result=st.results[i]))
    return AmplitudeResult(
        name=amp.name, value=one(value), error=one(error), converged=converged,
        status="converged" if converged else "; ".join(reasons), rtol=amp.rtol, atol=amp.atol,
        pilot_rtol=pilot, tolerance=one(tau), evaluations=st.spent,
        seconds=time.perf_counter() - t_start, terms=terms,
        refinements=[{k: (one(v) if isinstance(v, np.ndarray) else v) for k, v in r.items()}
                     for r in history],
        kinematics={k: jsonable(v) for k, v in amp.kinematics.items()}, device=device_name(),
        file=amp.path)


def amplitude(terms, kinematics: Mapping[str, Any] | None = None, *, rtol: float | None = None,
              atol: float | None = None, max_evals: int | None = None,
              pilot_rtol: float | None = None, name: str | None = None,
              progress: Callable[[dict], None] | None = None, **overrides) -> AmplitudeResult:
    """Evaluate the amplitude A = sum_i c_i I_i to the accuracy asked of the sum.

    Args:
        terms: a list of ``(coefficient, integral)``: the coefficient a number or an expression
            string in the kinematic symbols (the restricted grammar of diagram files:
            numbers, symbols, + - * / ** and sqrt), the integral a
            :class:`~loopint.problem.Problem`, a :class:`~loopint.diagram.Diagram` or the path
            of a diagram file; or an :class:`Amplitude`, or the path of an amplitude file.
        kinematics: symbol -> number or 1-D array, shared by all terms (overriding each
            term's own values) and the only symbols coefficients may use.
        rtol / atol: tolerance of the sum, tau = max(atol, rtol |A|) (default 1e-6 / 0);
        max_evals: evaluations allowed to the whole sum; pilot_rtol: relative tolerance of
            the pilot runs (default min(0.1, sqrt(rtol))); overrides: settings for every
            term's computation (``method``, ``precision``, ``seed``, ``prefactor``,
            ``domain``, ``transform``).
        progress: called with a dict after each term's computation.

    Returns:
        :class:`AmplitudeResult`.  Bad input raises :class:`~loopint.errors.SpecError`
        naming the term and key.
    """
    given = dict(rtol=rtol, atol=atol, max_evals=max_evals, pilot_rtol=pilot_rtol, **overrides)
    if isinstance(terms, (str, Path)):
        terms = load_amplitude(terms)
    if isinstance(terms, Amplitude):
        amp = terms
        keep = {"rtol": amp.rtol, "atol": amp.atol, "max_evals": amp.max_evals,
                "pilot_rtol": amp.pilot_rtol, **amp.overrides}
        keep.update({k: v for k, v in given.items() if v is not None})
        amp = build([(t.raw, t.problem) for t in amp.terms], {**amp.kinematics,
                    **(kinematics or {})}, name=name or amp.name, where=amp.path,
                    keys=[t.key for t in amp.terms] if amp.path else None, **keep)
        amp = Amplitude(**{**amp.__dict__, "terms": tuple(
            Term(**{**n.__dict__, "file": o.file}) for n, o in zip(amp.terms, terms.terms))})
    else:
        amp = build(terms, kinematics, name=name or "amplitude", **given)
    return evaluate(amp, progress)


# ------------------------------------------------------------------------------- command line
def format_table(r: AmplitudeResult) -> str:
    """The sum and one line per term (first kinematic point when batched), as
    ``loopint compute`` prints them."""
    v, e = complex(np.atleast_1d(r.value)[0]), complex(np.atleast_1d(r.error)[0])
    tau = float(np.atleast_1d(r.tolerance)[0])
    lines = [f"amplitude   {r.name}  ({len(r.terms)} terms{', ' + r.file if r.file else ''})",
             (f"value       ({v.real:.12g} ± {abs(e.real):.2g}) + ({v.imag:.12g} ± "
              f"{abs(e.imag):.2g}) i"),
             f"status      {r.status}",
             (f"tolerance   {tau:.3g} = max(atol {r.atol:.3g}, rtol {r.rtol:.3g} * |sum|); "
              f"|error| {math.hypot(e.real, e.imag):.3g}; pilot rtol {r.pilot_rtol:.3g}"),
             f"evaluations {r.evaluations:.4g}   time {r.seconds:.3g} s   device {r.device}"]
    if np.ndim(r.value):
        lines.append(f"points      {np.size(r.value)} (the table shows the first)")
    if not r.converged:
        lines.append("error       a lower bound only: the sum did not converge")
    lines.append(f"{'term':<20} {'integral':<20} {'coefficient':<22} {'c*I':>18} {'error':>9} "
                 f"{'share':>9} {'share/|c*I|':>11} {'runs':>4} {'evals':>9}  status")
    for row in r.table():
        share = "-" if row["tolerance"] is None else f"{row['tolerance']:.2e}"
        rel = "-" if row["relative_tolerance"] is None else f"{row['relative_tolerance']:.1e}"
        c = row["contribution"]
        cv = f"{c.real:.12g}" if c.imag == 0 else f"{c.real:.6g}{c.imag:+.6g}i"
        coef = row["coefficient"] if len(row["coefficient"]) <= 22 else row["coefficient"][:19] + "..."
        lines.append(f"{row['key']:<20} {row['name'][:20]:<20} {coef:<22} {cv:>18} "
                     f"{row['error']:9.2e} {share:>9} {rel:>11} {row['runs']:>4} "
                     f"{row['evaluations']:>9}  {row['status']}")
    return "\n".join(lines)


def compute_file(args, overrides: Mapping[str, Any]) -> int | None:
    """``loopint compute FILE`` for an amplitude file (None when FILE is not one): prints the
    sum and the per-term table, writes ``--json`` atomically; exit 0 converged, 1 not.
    ``overrides`` are the command line's settings (``--rtol`` etc., for the sum)."""
    import sys
    if not is_amplitude_file(args.file):
        return None
    for option in ("plot", "resume"):
        if getattr(args, option, None):
            raise SpecError(f"--{option}: not available for an amplitude file ({args.file})")
    known = set(INTEGRATION_KEYS)
    unused = sorted(k for k in overrides if k not in known)
    if unused:
        raise SpecError(f"{args.file}: option(s) {', '.join('--' + k.replace('_', '-') for k in unused)}"
                        " do not apply to an amplitude")
    amp = load_amplitude(args.file)

    def progress(ev):
        if not getattr(args, "quiet", False):
            print(f"loopint: {ev['stage']} {ev['term']} ({ev['name']}): "
                  f"{ev['evaluations']:.3g} evaluations, {ev['seconds']:.1f} s",
                  file=sys.stderr, flush=True)

    r = amplitude(amp, progress=progress, **overrides)
    print(format_table(r))
    if getattr(args, "json", None):
        from .io import write_json_atomic
        d = r.to_dict()
        d["file"] = str(Path(args.file).resolve())
        write_json_atomic(args.json, d)
    return 0 if r.converged else 1
