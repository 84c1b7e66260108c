"""Problems: a diagram, its kinematics, settings and reference, read from a TOML file.

A :class:`Problem` is what ``loopint compute FILE`` and :func:`loopint.compute` work on.
:func:`load` validates everything before anything is computed; every error is a
:class:`SpecError` whose message names the file, the key and the problem.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import sympy

from .diagram import EPS, Diagram, _split_product, is_scaleless, regulator_linear
from .errors import DiagramError, SpecError
from .spec.expr import ExpressionError, is_identifier, parse_expression
from .spec.transform import parse_transform

METHODS = ("auto", "iterated", "cubature", "pagani", "qmc", "mc")
DOMAINS = ("auto", "sequential", "sectors", "decomposed", "simplex")
PREFACTORS = ("pysecdec", "none")

_DIAGRAM_KEYS = {
    "name", "dimension", "powers",
    "internal_lines", "external_lines", "eliminate",
    "loop_momenta", "propagators", "external_momenta",
    "U", "F", "variables", "loops",
    "scalar_products",
}
_TABLES = {"diagram", "kinematics", "integration", "regulator", "reference"}


@dataclass(frozen=True)
class Settings:
    """How to compute.  Every field has a default chosen by the package.

    method: engine ('auto' picks: at Euclidean points iterated GK up to d = 2 (cubature for
        several points at once), from d = 3 qmc or cubature by short pilot runs of both
        (:class:`loopint.engines.Pilot`); in the regulated physical region iterated GK
        (cubature for multi-loop diagrams up to d = 6); on the deformed contour cubature up
        to d = 4, qmc otherwise); rtol/atol: requested accuracy of the final (extrapolated) value;
        max_evals: integrand evaluations allowed per integral; precision: 'float64' or
        'float32'; domain: simplex parametrization ('auto', 'sequential', 'sectors',
        'decomposed' (sector decomposition, :mod:`loopint.sectors`), 'simplex'); transform: boundary
        transform of cube domains ('auto': :func:`loopint.plan.cube_transform`, or a name of
        :mod:`loopint.spec.transform`); seed: random seed for mc/qmc;
        prefactor: 'pysecdec' (the normalization in :mod:`loopint.diagram`) or 'none' (bare integral).
    Regulator (DCM, seed 000 section 4.4): delta 'auto' (0 when Euclidean, else the sequence),
        a number delta0 to force the sequence start, or 0 to force delta = 0;
        delta_q: ratio q of delta_j = delta0 q^-j; delta_terms: maximum sequence length;
        delta_min_terms: terms computed before the first extrapolation is trusted.
        contour: how physical points are computed: 'auto' (default: delta = 0 on a deformed
        contour (the decomposed sectors where the diagram has blow-ups, else the primary ones;
        a cube engine; :meth:`loopint.contour.ContourIntegrand.bind_deformed`),
        and the delta sequence for the points where the contour does not converge or cannot
        be used), 'deform' (the contour only) or 'none' (the delta sequence only);
        contour_lambda: 'auto' or the deformation strength; cross_check: compute physical
        points by both methods and compare them.
    Dimensional regularization (``dimension = "4 - 2*eps"``, :mod:`loopint.dimreg`):
        eps_order: the highest order k of the Laurent coefficients c_j, j <= k, to compute
        (None: 0, the finite part).
    Derivatives (:mod:`loopint.derivatives`): derivatives: kinematic symbols to differentiate
        the result by (integrated with the value, each to rtol; atol applies to k dI/dk, in
        the units of the value); derivative_order: 1, or 2 for the second derivatives of
        every pair as well.
    devices: 'all' (default) or a number N of local devices (GPUs) to use
        (:mod:`loopint.parallel`): the points of a scan are split over them, and every engine
        run shards its integrand evaluations over the devices it is given; with 'all' under
        :mod:`jax.distributed` a single integral uses the devices of every process.
    """

    method: str = "auto"
    rtol: float = 1e-6
    atol: float = 0.0
    max_evals: int = 10**9          # as loopint.engines.base.DEFAULT_MAX_EVALS
    precision: str = "float64"
    domain: str = "auto"
    transform: str = "auto"
    seed: int = 0
    prefactor: str = "pysecdec"
    delta: Any = "auto"
    delta_q: float = 1.2
    delta_terms: int = 20
    delta_min_terms: int = 6
    contour: str = "auto"
    contour_lambda: Any = "auto"
    cross_check: bool = False
    eps_order: Any = None
    derivatives: tuple = ()
    derivative_order: int = 1
    devices: Any = "all"

    def updated(self, **kw) -> "Settings":
        """A copy with some fields replaced (validated)."""
        return validate_settings({**self.__dict__, **{k: v for k, v in kw.items() if v is not None}})

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Reference:
    value: complex
    error: float | None
    source: str


@dataclass
class Problem:
    """A diagram with kinematics, settings and (optionally) a reference value."""

    diagram: Diagram
    kinematics: dict
    settings: Settings = field(default_factory=Settings)
    reference: Reference | None = None
    path: str | None = None

    @property
    def n_points(self) -> int:
        """Kinematic points (1 without arrays)."""
        return max((np.size(v) for v in self.kinematics.values() if np.ndim(v)), default=1)

    def with_kinematics(self, **values) -> "Problem":
        kin = dict(self.kinematics)
        kin.update(values)
        return replace(self, kinematics=check_kinematics(self.diagram, kin, where=self.path))


def _err(path, key, msg) -> SpecError:
    where = f"{path}: " if path else ""
    return SpecError(f"{where}{key}: {msg}" if key else f"{where}{msg}")


def _number(v, path, key, *, positive=False, integer=False, allow_zero=True):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise _err(path, key, f"must be a number, got {v!r}")
    if not math.isfinite(v):
        raise _err(path, key, f"must be finite, got {v!r}")
    if integer and not float(v).is_integer():
        raise _err(path, key, f"must be an integer, got {v!r}")
    if positive and (v < 0 or (v == 0 and not allow_zero)):
        raise _err(path, key, f"must be {'>= 0' if allow_zero else '> 0'}, got {v!r}")
    return int(v) if integer else float(v)


def validate_settings(d: Mapping[str, Any], path: str | None = None) -> Settings:
    """Check types and ranges of settings; unknown keys are errors."""
    known = Settings.__dataclass_fields__
    for k in d:
        if k not in known:
            raise _err(path, k, f"unknown setting (known: {', '.join(sorted(known))})")
    s = dict(Settings().__dict__)
    s.update(d)
    if s["method"] not in METHODS:
        raise _err(path, "method", f"must be one of {METHODS}, got {s['method']!r}")
    if s["domain"] not in DOMAINS:
        raise _err(path, "domain", f"must be one of {DOMAINS}, got {s['domain']!r}")
    if s["prefactor"] not in PREFACTORS:
        raise _err(path, "prefactor", f"must be one of {PREFACTORS}, got {s['prefactor']!r}")
    if s["precision"] not in ("float64", "float32"):
        raise _err(path, "precision", f"must be 'float64' or 'float32', got {s['precision']!r}")
    s["rtol"] = _number(s["rtol"], path, "rtol", positive=True)
    s["atol"] = _number(s["atol"], path, "atol", positive=True)
    if s["rtol"] == 0 and s["atol"] == 0:
        raise _err(path, "rtol", "rtol and atol cannot both be 0")
    if 0 < s["rtol"] < 1e-14:
        raise _err(path, "rtol", f"{s['rtol']} is below float64 resolution")
    s["max_evals"] = _number(s["max_evals"], path, "max_evals", positive=True, integer=True,
                             allow_zero=False)
    s["seed"] = _number(s["seed"], path, "seed", positive=True, integer=True)
    if not isinstance(s["transform"], str):
        raise _err(path, "transform", f"must be a name, got {s['transform']!r}")
    try:
        if s["transform"] != "auto":
            parse_transform(s["transform"])
    except ValueError as e:
        raise _err(path, "transform", f"{e}, or auto (the default)") from None
    if s["delta"] != "auto":
        s["delta"] = _number(s["delta"], path, "delta", positive=True)
    s["delta_q"] = _number(s["delta_q"], path, "delta_q", positive=True)
    if not s["delta_q"] > 1:
        raise _err(path, "delta_q", f"must be > 1, got {s['delta_q']}")
    s["delta_terms"] = _number(s["delta_terms"], path, "delta_terms", integer=True, positive=True)
    s["delta_min_terms"] = _number(s["delta_min_terms"], path, "delta_min_terms", integer=True,
                                   positive=True)
    if not 3 <= s["delta_min_terms"] <= s["delta_terms"] <= 60:
        raise _err(path, "delta_terms", "need 3 <= delta_min_terms <= delta_terms <= 60")
    if s["contour"] not in ("auto", "none", "deform"):
        raise _err(path, "contour", f"must be 'auto', 'none' or 'deform', got {s['contour']!r}")
    if not isinstance(s["cross_check"], (bool, np.bool_)):
        raise _err(path, "cross_check", f"must be true or false, got {s['cross_check']!r}")
    s["cross_check"] = bool(s["cross_check"])
    if s["cross_check"] and s["contour"] != "auto":
        raise _err(path, "cross_check", "runs both methods for the physical region: it needs "
                   f"contour 'auto', not {s['contour']!r}")
    if s["contour_lambda"] != "auto":
        s["contour_lambda"] = _number(s["contour_lambda"], path, "contour_lambda", positive=True,
                                      allow_zero=False)
    if s["eps_order"] is not None:
        v = s["eps_order"]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer, float)) or \
                float(v) != int(v) or not -12 <= int(v) <= 6:
            raise _err(path, "eps_order", f"must be an integer from -12 to 6, got {v!r}")
        s["eps_order"] = int(v)
    s["derivatives"] = _derivative_names(s["derivatives"], path)
    v = s["devices"]
    if v != "all":
        if isinstance(v, bool) or not isinstance(v, (int, np.integer, float)) or \
                not float(v).is_integer() or v < 1:
            raise _err(path, "devices", f"must be 'all' or a whole number >= 1, got {v!r}")
        s["devices"] = int(v)
    v = s["derivative_order"]
    if isinstance(v, bool) or v not in (1, 2):
        raise _err(path, "derivative_order", f"must be 1 or 2, got {v!r}")
    s["derivative_order"] = int(v)
    if v == 2 and not s["derivatives"]:
        raise _err(path, "derivative_order", "2 needs the symbols to differentiate by: give "
                   "derivatives = [...] (--derivative SYMBOL)")
    return Settings(**s)


def _derivative_names(v, path) -> tuple:
    """The ``derivatives`` setting as a tuple of distinct symbol names."""
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, (list, tuple)):
        raise _err(path, "derivatives", f"must be a list of kinematic symbols, got {v!r}")
    for n in v:
        if not isinstance(n, str) or not is_identifier(n):
            raise _err(path, "derivatives", f"must be a list of kinematic symbols, got {n!r}")
    if len(set(v)) != len(v):
        raise _err(path, "derivatives", f"a symbol is given twice: {list(v)}")
    return tuple(v)


def check_kinematics(diagram: Diagram, kin: Mapping[str, Any], where: str | None = None,
                     allow_arrays: bool = True, sources: Mapping[str, Any] | None = None) -> dict:
    """Validate kinematic values: every symbol present, finite numbers, masses >= 0, no
    denominator of U or F zero at any point.

    ``sources`` (key -> expression text, e.g. ``{"diagram.scalar_products.'p1*p2'": "s/(m-1)"}``)
    lets the error for a zero denominator name the key it comes from."""
    out = {}
    for k, v in kin.items():
        key = f"kinematics.{k}"
        if not is_identifier(k):
            raise _err(where, key, "not a valid symbol name")
        if not isinstance(v, (list, tuple, str)) and hasattr(v, "__array__"):
            v = np.asarray(v)            # a NumPy or JAX array: 0-d ones are numbers
            v = v.item() if v.ndim == 0 else v
        if isinstance(v, (list, tuple, np.ndarray)) and allow_arrays:
            try:
                a = np.asarray(v)
            except (ValueError, TypeError):  # ragged nested lists
                raise _err(where, key, f"must be a number or a 1-D list of numbers, got {v!r}") from None
            if a.dtype.kind not in "if" or a.ndim != 1 or a.size == 0:
                raise _err(where, key, f"must be a number or a 1-D list of numbers, got {v!r}")
            a = a.astype(np.float64)
            if not np.all(np.isfinite(a)):
                raise _err(where, key, "values must be finite (no NaN or inf)")
            out[k] = a
        elif isinstance(v, (complex, np.complexfloating)) or (
                isinstance(v, str) and re.search(r"\b(i|I|j)\b|\d[ij]\b", v)):
            raise _err(where, key, f"must be a real number, got {v!r}: complex masses and "
                       "invariants (a width, m^2 - i m Gamma) are not supported")
        else:
            out[k] = _number(v, where, key)
        if k in diagram.mass_symbols and np.any(np.asarray(out[k]) < 0):
            if np.ndim(out[k]):
                i = int(np.flatnonzero(out[k] < 0)[0])
                raise _err(where, key, f"a list is a batch of kinematic points, and its entry "
                           f"{i + 1} ({out[k][i]:g}) is a negative mass; masses are given as "
                           "masses, not squared, and complex masses (a width) are not supported")
            raise _err(where, key, f"mass {k} is negative ({v}); masses are given as masses, not squared")
    missing = [s for s in diagram.kinematic_symbols if s not in out]
    if missing:
        raise _err(where, "kinematics", f"missing value for {', '.join(missing)}")
    sizes = {np.size(v) for v in out.values() if np.ndim(v)}
    if len(sizes) > 1:
        raise _err(where, "kinematics", f"arrays of different lengths {sorted(sizes)}")
    for name, poly in (("U", diagram.U), ("F", diagram.F)):
        zero = _zero_denominators(poly, out)
        if zero:
            base, point = zero[0]
            key = next((k for k, text in (sources or {}).items()
                        if _zero_denominators(_parse_quietly(text, out), out)), None)
            what = f"{key}: the expression" if key else f"kinematics: {name}"
            raise SpecError(f"{where + ': ' if where else ''}{what} divides by zero at this "
                            f"kinematic point: {base} = 0 at {point}")
    if not sizes:
        # a diagram with scales can still be scaleless at one point (massless bubble at p^2 = 0)
        U, F = diagram.substitute({k: out[k] for k in diagram.kinematic_symbols})
        if is_scaleless(U, F, diagram.variables):
            raise _err(where, "kinematics", "scaleless integral at this kinematic point (the "
                       "Newton polytope of U + F is degenerate; it vanishes in dimensional "
                       "regularization): nothing to compute")
    return out


def _zero_denominators(expr, values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Denominators of ``expr`` (bases of negative powers, in the kinematic symbols only)
    that vanish at the kinematic values: ``[(denominator, "s = 1.0, m = 1.0"), ...]``.

    One point: exactly, with the floats as exact rationals (as :meth:`Diagram.substitute`).
    Arrays: in float64 at every point (a polynomial denominator; others are not checked).
    """
    out = []
    if expr is None:
        return out
    for p in expr.atoms(sympy.Pow):
        base = p.base
        names = sorted(str(x) for x in base.free_symbols)
        if not (p.exp.is_negative and names and set(names) <= set(values)):
            continue
        syms = sorted(base.free_symbols, key=str)
        if not any(np.ndim(values[n]) for n in names):
            exact = {x: sympy.nsimplify(float(values[str(x)]), rational=True) for x in syms}
            if base.subs(exact) == 0:
                out.append((str(base), ", ".join(f"{n} = {values[n]}" for n in names)))
            continue
        try:
            poly = sympy.Poly(base, *syms)
        except sympy.PolynomialError:
            continue
        cols = np.broadcast_arrays(*[np.asarray(values[str(x)], float) for x in syms])
        total = sum(float(c) * np.prod([col ** e for col, e in zip(cols, m)], axis=0)
                    for m, c in poly.terms())
        hit = np.flatnonzero(np.asarray(total) == 0)
        if hit.size:
            i = int(hit[0])
            out.append((str(base), ", ".join(f"{n} = {cols[names.index(n)][i]}"
                                             for n in names) + f" (point {i})"))
    return out


def _parse_quietly(text, values: Mapping[str, Any]):
    """``text`` parsed over the kinematic symbols (and any other identifiers in it, as
    symbols: Feynman parameters, momenta), or None where it does not parse."""
    import re
    names = set(values) | set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", str(text))) - {"sqrt"}
    try:
        return parse_expression(text, sorted(names))
    except ExpressionError:
        return None


def _expression_sources(t: Mapping[str, Any]) -> dict:
    """Key -> expression text of the ``[diagram]`` entries that can hold kinematic symbols."""
    src = {}
    for k, v in (t.get("scalar_products") or {}).items() if isinstance(
            t.get("scalar_products"), dict) else ():
        src[f"diagram.scalar_products.{k!r}"] = v
    lines = t.get("internal_lines")
    for i, line in enumerate(lines if isinstance(lines, list) else ()):
        if isinstance(line, (list, tuple)) and line:
            src[f"diagram.internal_lines[{i}] mass"] = line[0]
    props = t.get("propagators")
    for i, text in enumerate(props if isinstance(props, list) else ()):
        src[f"diagram.propagators[{i}]"] = text
    for k in ("U", "F"):
        if k in t:
            src[f"diagram.{k}"] = t[k]
    return src


def _momentum_names(t: Mapping[str, Any], sp: Mapping[str, Any]) -> set:
    """The momenta a ``[diagram]`` table names: its external lines', loop and external
    momenta, and those of its scalar products' keys (as far as they are well formed)."""
    names = set()
    for key in sp:
        try:
            names.update(_split_product(key, "diagram.scalar_products"))
        except DiagramError:     # reported with its key when the diagram is built
            pass
    for line in t.get("external_lines", []) if isinstance(t.get("external_lines"), list) else []:
        if isinstance(line, (list, tuple)) and line and isinstance(line[0], str):
            names.add(line[0])
    for key in ("loop_momenta", "external_momenta"):
        if isinstance(t.get(key), list):
            names.update(n for n in t[key] if isinstance(n, str))
    return names


def _check_kinematic_names(t: Mapping[str, Any], sp: Mapping[str, Any], kin_names,
                           path: str | None) -> None:
    """A value in ``[kinematics]`` for a momentum would be ignored: refused instead, naming
    the key."""
    clash = [n for n in kin_names if n in _momentum_names(t, sp)]
    if clash:
        raise _err(path, f"kinematics.{clash[0]}", f"{clash[0]!r} is a momentum of the diagram, "
                   "not a mass or invariant: its scalar products are given in "
                   "diagram.scalar_products")


def diagram_from_table(t: Mapping[str, Any], kin_names, path: str | None = None) -> Diagram:
    """Build a :class:`Diagram` from a ``[diagram]`` table, declaring only ``kin_names``."""
    for k in t:
        if k not in _DIAGRAM_KEYS:
            raise _err(path, f"diagram.{k}", f"unknown key (known: {', '.join(sorted(_DIAGRAM_KEYS))})")
    syms = {n: sympy.Symbol(n, real=True) for n in kin_names}
    forms = [f for f, keys in (("graph", ("internal_lines",)), ("propagators", ("propagators",)),
                               ("polynomials", ("U", "F"))) if any(k in t for k in keys)]
    if len(forms) != 1:
        raise _err(path, "diagram", "give exactly one of: internal_lines (graph), propagators, "
                   f"or U and F (explicit polynomials); found {forms or 'none'}")
    name = t.get("name", Path(path).stem if path else "diagram")
    if not isinstance(name, str):
        raise _err(path, "diagram.name", "must be a string")
    common = {"dimension": t.get("dimension", 4), "powers": t.get("powers"), "name": name,
              "symbols": syms}
    dim = common["dimension"]
    if isinstance(dim, str):
        try:
            D = regulator_linear(dim, "dimension")
        except DiagramError as e:
            raise _err(path, "diagram.dimension", "must be a positive number or a + b*eps (e.g. "
                       f"\"4 - 2*eps\"): {str(e).split(': ', 1)[-1]}") from None
        if D.subs(EPS, 0) <= 0:
            raise _err(path, "diagram.dimension", f"must be positive at eps = 0, got {dim!r}")
    elif isinstance(dim, bool) or not isinstance(dim, (int, float)) or not math.isfinite(dim) or dim <= 0:
        raise _err(path, "diagram.dimension",
                   f"must be a positive number or a + b*eps (e.g. \"4 - 2*eps\"), got {dim!r}")
    sp = t.get("scalar_products", {})
    if not isinstance(sp, dict):
        raise _err(path, "diagram.scalar_products", "must be a table of \"p1*p2\" = \"expression\"")
    _check_kinematic_names(t, sp, kin_names, path)
    allowed = {"graph": {"internal_lines", "external_lines", "eliminate"},
               "propagators": {"loop_momenta", "propagators", "external_momenta"},
               "polynomials": {"U", "F", "variables", "loops"}}[forms[0]]
    for k in t:
        other = _DIAGRAM_KEYS - allowed - {"name", "dimension", "powers", "scalar_products"}
        if k in other:
            raise _err(path, f"diagram.{k}", f"does not belong to the {forms[0]} form")
    try:
        if forms[0] == "graph":
            return Diagram.from_graph(t["internal_lines"], t.get("external_lines", []), sp,
                                      eliminate=t.get("eliminate"), **common)
        if forms[0] == "propagators":
            for k in ("loop_momenta",):
                if k not in t:
                    raise _err(path, f"diagram.{k}", "missing")
            return Diagram.from_propagators(t["loop_momenta"], t["propagators"],
                                            t.get("external_momenta"), sp, **common)
        for k in ("U", "F", "variables", "loops"):
            if k not in t:
                raise _err(path, f"diagram.{k}", "missing (the explicit-polynomial form needs "
                           "U, F, variables and loops)")
        if sp:
            raise _err(path, "diagram.scalar_products", "not used by the explicit-polynomial form")
        return Diagram.from_polynomials(t["U"], t["F"], t["variables"], t["loops"], **common)
    except DiagramError as e:
        msg = str(e)
        if "unknown symbol" in msg:
            msg += "; kinematic symbols are declared by giving their values in [kinematics]"
            if forms[0] == "propagators" and str(e.key).startswith("propagators"):
                msg += (", momenta in diagram.loop_momenta (integrated) or "
                        "diagram.external_momenta")
        if e.key and msg.startswith(e.key):
            raise SpecError(f"{path + ': ' if path else ''}diagram.{msg}") from None
        raise _err(path, f"diagram.{e.key}" if e.key else "diagram", msg) from None


def problem_from_dict(doc: Mapping[str, Any], path: str | None = None) -> Problem:
    """Validate a parsed TOML document into a :class:`Problem`."""
    for k in doc:
        if k not in _TABLES:
            raise _err(path, k, f"unknown table or key (known: {', '.join(sorted(_TABLES))})")
        if not isinstance(doc[k], dict):
            raise _err(path, k, "must be a table")
    if "diagram" not in doc:
        raise _err(path, "diagram", "missing [diagram] table")
    kin_raw = doc.get("kinematics", {})
    for k in kin_raw:
        if not is_identifier(k):
            raise _err(path, f"kinematics.{k}", "not a valid symbol name")
    diagram = diagram_from_table(doc["diagram"], list(kin_raw), path)
    if "eps" in kin_raw and diagram.regulated:
        # the diagram's eps is the regulator: a value for it would be ignored
        raise _err(path, "kinematics.eps", "eps is the dimensional regulator of this diagram, "
                   "not a kinematic value: the results are its Laurent coefficients in eps; a "
                   "fixed dimension is given as a number, e.g. dimension = 3.8")
    kin = check_kinematics(diagram, kin_raw, where=path, sources=_expression_sources(doc["diagram"]))
    settings_d = dict(doc.get("integration", {}))
    reg = doc.get("regulator", {})
    for k, v in reg.items():
        mapped = {"delta": "delta", "q": "delta_q", "terms": "delta_terms",
                  "min_terms": "delta_min_terms", "contour": "contour",
                  "lambda": "contour_lambda", "cross_check": "cross_check",
                  "eps_order": "eps_order"}.get(k)
        if mapped is None:
            raise _err(path, f"regulator.{k}", "unknown key (known: delta, q, terms, min_terms, "
                       "contour, lambda, cross_check, eps_order)")
        settings_d[mapped] = v
    regulator_keys = ("delta", "contour", "cross", "eps")
    for k in doc.get("integration", {}):
        if k.startswith(regulator_keys):
            raise _err(path, f"integration.{k}", "regulator settings belong in [regulator]")
        if k not in Settings.__dataclass_fields__:
            known = sorted(n for n in Settings.__dataclass_fields__
                           if not n.startswith(regulator_keys))
            raise _err(path, f"integration.{k}", f"unknown setting (known: {', '.join(known)})")
    try:
        settings = validate_settings(settings_d, None)
    except SpecError as e:
        key = str(e).split(":")[0]
        table = "regulator" if key.startswith(regulator_keys) else "integration"
        inverse = {"delta_q": "q", "delta_terms": "terms", "delta_min_terms": "min_terms",
                   "contour_lambda": "lambda"}
        if table == "regulator":
            key = inverse.get(key, key)
        raise _err(path, f"{table}.{key}", str(e).split(": ", 1)[1]) from None
    unknown = [n for n in settings.derivatives if n not in diagram.kinematic_symbols]
    if unknown:
        raise _err(path, "integration.derivatives",
                   f"{unknown[0]!r} is not a kinematic symbol of the diagram (U and F depend "
                   f"on: {', '.join(diagram.kinematic_symbols) or 'none'})")
    ref = None
    if "reference" in doc:
        r = doc["reference"]
        for k in r:
            if k not in ("value", "error", "source"):
                raise _err(path, f"reference.{k}", "unknown key (known: value, error, source)")
        if "value" not in r:
            raise _err(path, "reference.value", "missing")
        v = r["value"]
        if isinstance(v, list):
            if len(v) != 2:
                raise _err(path, "reference.value", "give a number or [re, im]")
            val = complex(_number(v[0], path, "reference.value"), _number(v[1], path, "reference.value"))
        else:
            val = complex(_number(v, path, "reference.value"))
        err = r.get("error")
        if err is not None:
            if isinstance(err, list):
                err = float(max(abs(_number(e, path, "reference.error")) for e in err))
            else:
                err = _number(err, path, "reference.error", positive=True)
        src = r.get("source", "")
        if not isinstance(src, str):
            raise _err(path, "reference.source", "must be a string")
        ref = Reference(val, err, src)
    return Problem(diagram=diagram, kinematics=kin, settings=settings, reference=ref, path=path)


MAX_FILE_BYTES = 1_000_000


def read_toml(path: str | Path) -> dict:
    """A TOML file parsed, every failure (unreadable, too large, not UTF-8, malformed) a
    :class:`SpecError` naming the file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise SpecError(f"{p}: cannot read file ({e.strerror})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError(f"{p}: file larger than {MAX_FILE_BYTES} bytes")
    try:
        # "utf-8-sig": a byte-order mark, which some editors write first, is not TOML text
        return tomllib.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise SpecError(f"{p}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{p}: malformed TOML: {e}") from None


def load(path: str | Path) -> Problem:
    """Read and validate a diagram file (the format: README, 'A diagram file')."""
    return problem_from_dict(read_toml(path), str(Path(path)))
