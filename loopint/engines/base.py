"""What every engine shares: the result object, tolerance test and integrand normalisation.

Engines integrate a batched function ``f(x[n, d]) -> values[n]`` or ``values[n, m]`` (real or
complex) over a box.  Internally every engine works on a *real* integrand with shape
``(n, M)``: :func:`normalize_integrand` splits complex outputs into real and imaginary parts and
promotes scalar outputs to one component, and ``unpack`` turns the engine's real estimates back
into the user's shape and dtype.

Error convention: for a complex result, ``error`` is complex too, ``error.real`` bounds the
error of the real part and ``error.imag`` that of the imaginary part (both non-negative).
A component meets the tolerance when ``|error| <= max(atol, rtol * |value|)``
(:func:`tolerance_met`), with ``|.|`` the complex modulus.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import math
import time
from typing import Any, Callable, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import BudgetError  # noqa: F401  (raised by the engines as base.BudgetError)
from ..io import jsonable
from ..maps import simplex_from_cube

class Status(str, enum.Enum):
    """Why an engine run ended.  ``CONVERGED`` is the only outcome with ``converged`` True;
    :attr:`IntegrationResult.status` carries the same word followed by the details."""

    CONVERGED = "converged"
    MAX_EVALS = "max_evals"                # evaluation budget spent before the tolerance was met
    MEMORY_LIMIT = "memory_limit"          # region/interval storage full; best estimate returned
    MAX_ITERATIONS = "max_iterations"      # iteration cap reached
    NONFINITE = "nonfinite"                # integrand returned NaN/inf at some points
    ROUNDOFF = "roundoff"                  # error dominated by round-off; tolerance not reachable
    SINGULAR_BOUNDARY = "singular at boundary"   # integrand grows without bound towards a face

    @classmethod
    def of(cls, message: str) -> "Status":
        """The status a message starts with (messages are built as ``"<status>: details"``)."""
        for s in sorted(cls, key=lambda s: -len(s.value)):
            if message.startswith(s.value):
                return s
        raise ValueError(f"not an engine status message: {message!r}")


CONVERGED = Status.CONVERGED.value
MAX_EVALS = Status.MAX_EVALS.value
MEMORY_LIMIT = Status.MEMORY_LIMIT.value
MAX_ITERATIONS = Status.MAX_ITERATIONS.value
NONFINITE = Status.NONFINITE.value
ROUNDOFF = Status.ROUNDOFF.value
SINGULAR_BOUNDARY = Status.SINGULAR_BOUNDARY.value

# The defaults every engine's ``integrate`` shares; the evaluation budget is also a diagram's
# (``loopint.problem.Settings.max_evals``), so that an integrand takes the same budget through
# ``loopint.integrate`` as through ``loopint.compute``.
DEFAULT_RTOL = 1e-6
DEFAULT_ATOL = 0.0
DEFAULT_MAX_EVALS = 10**9


@dataclasses.dataclass
class IntegrationResult:
    """Outcome of one engine run.

    Attributes:
        value: estimate; a scalar (Python float/complex) for scalar integrands, else an
            ``np.ndarray`` of shape ``(m,)`` (float64 or complex128).
        error: error estimate of the same shape and dtype kind (see module docstring).
        converged: True only when every component met the requested tolerance and no
            non-finite integrand value was seen.
        status: ``"converged"`` or a reason, e.g. ``"max_evals: 1.0e+08 evaluations spent, error
            3e-7 > requested 1e-8"``.
        evaluations: integrand evaluations (points; a vector integrand counts once per point).
        seconds: wall time of the run, compilation included.
        method: engine name.
        info: engine-specific statistics (regions, iterations, history, nonfinite count, ...).
        code: the :class:`Status` the run ended with (``status`` begins with its value).
    """

    value: Any
    error: Any
    converged: bool
    status: str
    evaluations: int
    seconds: float
    method: str
    info: dict = dataclasses.field(default_factory=dict)
    code: Status = dataclasses.field(init=False)

    def __post_init__(self):
        self.code = Status.of(self.status)

    def __repr__(self) -> str:
        v = np.atleast_1d(np.asarray(self.value))
        e = np.atleast_1d(np.asarray(self.error))
        body = ", ".join(_fmt_pm(a, b) for a, b in zip(v[:4], e[:4]))
        if v.size > 4:
            body += f", ... ({v.size} components)"
        return (f"IntegrationResult({body}; {self.status}; method={self.method}, "
                f"evaluations={self.evaluations:.3g}, {self.seconds:.3g} s)")

    def to_dict(self) -> dict:
        """Plain-JSON view: complex numbers become [re, im] pairs."""
        return {
            "value": jsonable(self.value),
            "error": jsonable(self.error),
            "converged": bool(self.converged),
            "status": self.status,
            "evaluations": int(self.evaluations),
            "seconds": float(self.seconds),
            "method": self.method,
            "info": {k: jsonable(v) for k, v in self.info.items()},
        }


def _fmt_pm(v, e) -> str:
    if np.iscomplexobj(v) or np.iscomplexobj(e):
        v, e = complex(v), complex(e)
        return f"({v.real:.12g} ± {abs(e.real):.2g}) + ({v.imag:.12g} ± {abs(e.imag):.2g})i"
    return f"{float(v):.12g} ± {float(e):.2g}"


@dataclasses.dataclass(frozen=True)
class Box:
    """The box ``lower <= x <= upper`` (tuples of floats; a value, hashable)."""

    lower: tuple
    upper: tuple

    def __post_init__(self):
        lo, hi = box(self.lower, self.upper, np.size(self.lower))
        object.__setattr__(self, "lower", tuple(map(float, lo)))
        object.__setattr__(self, "upper", tuple(map(float, hi)))

    @classmethod
    def cube(cls, ndim: int) -> "Box":
        return cls((0.0,) * ndim, (1.0,) * ndim)

    @property
    def ndim(self) -> int:
        return len(self.lower)


@dataclasses.dataclass(frozen=True)
class Simplex:
    """The unit simplex ``x_i >= 0, sum x_i <= 1`` in ``ndim`` variables."""

    ndim: int


def as_domain(domain, ndim: int) -> Box | Simplex:
    """``"cube"``, ``"simplex"``, ``(lower, upper)``, a :class:`Box` or a :class:`Simplex`
    (for ``ndim`` variables) as a domain object."""
    if not isinstance(ndim, (int, np.integer)) or isinstance(ndim, bool) or ndim < 1:
        raise ValueError(f"ndim must be a positive integer, got {ndim!r}")
    if isinstance(domain, str) and domain == "cube":
        return Box.cube(int(ndim))
    if isinstance(domain, str) and domain == "simplex":
        return Simplex(int(ndim))
    if isinstance(domain, (Box, Simplex)):
        if domain.ndim != ndim:
            raise ValueError(f"the domain has {domain.ndim} variables, the integrand {ndim}")
        return domain
    if isinstance(domain, (tuple, list)) and len(domain) == 2:
        return Box(*box(domain[0], domain[1], int(ndim)))
    raise ValueError(f"domain must be 'cube', 'simplex' or (lower, upper), got {domain!r}")


class Engine:
    """An integration method with its options.

    Every engine is a frozen dataclass whose fields are its options (so an engine is a value:
    hashable, printable, ``dataclasses.replace(engine, option=...)`` makes a variant), with
    one entry point::

        engine.integrate(f, domain, *, rtol, atol, max_evals) -> IntegrationResult

    ``f`` maps points ``x[n, ndim]`` to values ``[n]`` or ``[n, m]`` (real or complex,
    traceable by JAX; a :class:`BoundIntegrand` or :class:`jax.tree_util.Partial` keeps its
    arrays traced, so new arrays of the same shapes reuse the compiled kernels).  ``domain`` is
    a :class:`Box` or a :class:`Simplex` (or anything :func:`as_domain` accepts).  Engines that
    only integrate boxes implement :meth:`integrate_box`; the simplex is then integrated over
    the cube through the sequential map of :func:`loopint.maps.simplex_from_cube`.
    """

    name: ClassVar[str]

    def integrate(self, f: Callable, domain, *, rtol: float = DEFAULT_RTOL,
                  atol: float = DEFAULT_ATOL,
                  max_evals: int = DEFAULT_MAX_EVALS) -> IntegrationResult:
        check_tolerances(rtol, atol, max_evals)
        if isinstance(domain, str) or not isinstance(domain, (Box, Simplex)):
            raise TypeError("Engine.integrate takes a Box or a Simplex as its domain "
                            f"(loopint.engines.base.as_domain makes one), got {domain!r}")
        if isinstance(domain, Simplex):
            return self.integrate_simplex(f, domain.ndim, rtol=rtol, atol=atol,
                                          max_evals=int(max_evals))
        return self.integrate_box(f, domain.lower, domain.upper, rtol=rtol, atol=atol,
                                  max_evals=int(max_evals))

    def prepare(self, f: Callable, domain, *, max_evals: int = DEFAULT_MAX_EVALS) -> None:
        """Start compiling, in the background, the kernels that a run of ``f`` over ``domain``
        begins with, where the engine compiles ahead of need (its option ``compile_ahead``):
        a caller that first computes the integrand's parameters (a contour's strength) lets
        them compile meanwhile.  ``f`` needs only the shapes of the run's integrand (its bound
        arrays may hold other values).  Returns at once; engines that do not compile ahead,
        and the simplex (integrated through a map made for each run), do nothing."""
        if isinstance(domain, Box):
            self._prepare_box(f, domain.lower, domain.upper, int(max_evals))

    def _prepare_box(self, f: Callable, lower, upper, max_evals: int) -> None:
        return None

    def integrate_box(self, f: Callable, lower, upper, *, rtol: float = DEFAULT_RTOL,
                      atol: float = DEFAULT_ATOL,
                      max_evals: int = DEFAULT_MAX_EVALS) -> IntegrationResult:
        """:meth:`_integrate_box`, followed, for an engine whose option ``boundary_check`` is
        on, by the probe of :func:`probe_boundary` for an integrand unbounded towards a face."""
        r = self._integrate_box(f, lower, upper, rtol=rtol, atol=atol, max_evals=max_evals)
        return probe_boundary(r, f, lower, upper) if getattr(self, "boundary_check", False) else r

    def _integrate_box(self, f: Callable, lower, upper, *, rtol: float, atol: float,
                       max_evals: int) -> IntegrationResult:
        raise NotImplementedError

    def integrate_simplex(self, f: Callable, ndim: int, *, rtol: float, atol: float,
                          max_evals: int) -> IntegrationResult:
        def on_cube(u):
            x, jac = simplex_from_cube(u)
            y = f(x[:, :ndim])
            return y * (jac if y.ndim == 1 else jac[:, None])

        return self.integrate_box(on_cube, np.zeros(ndim), np.ones(ndim), rtol=rtol, atol=atol,
                                  max_evals=max_evals)


class StaticCallable:
    """A callable as a static part of a compiled function: equal when it is the same object,
    or the same method of the same object (``obj.method`` makes a new bound-method object at
    every access), whatever its own ``__eq__``."""

    __slots__ = ("obj", "_key")

    def __init__(self, obj):
        self.obj = obj
        self._key = ((id(obj.__self__), obj.__func__) if inspect.ismethod(obj) else (id(obj),))

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, StaticCallable) and other._key == self._key


@jax.tree_util.register_pytree_node_class
class BoundIntegrand:
    """An integrand as a pytree: the arrays bound into a :class:`jax.tree_util.Partial`
    (kinematics, deltas, a contour's lambda, as :mod:`loopint.lower` builds them) are leaves,
    traced arguments of the engines' compiled functions, and only the Python function is
    static.  A new kinematic point or delta then reuses the compiled kernels instead of
    compiling them again (about a second per point on a CPU)."""

    def __init__(self, func: StaticCallable, args: tuple = (), kwargs: dict | None = None):
        self.func, self.args, self.kwargs = func, tuple(args), dict(kwargs or {})

    @classmethod
    def of(cls, f: Callable) -> "BoundIntegrand":
        if isinstance(f, BoundIntegrand):
            return f
        if isinstance(f, jax.tree_util.Partial):
            return cls(StaticCallable(f.func), f.args, f.keywords)
        return cls(StaticCallable(f))

    def __call__(self, x):
        return self.func.obj(*self.args, x, **self.kwargs)

    def signature(self) -> tuple:
        """What compiled code depends on: the function and the shapes of the bound arrays."""
        leaves, tree = jax.tree_util.tree_flatten((self.args, self.kwargs))
        return (self.func, tree, tuple((np.shape(a), jnp.asarray(a).dtype.name) for a in leaves))

    def tree_flatten(self):
        return (self.args, self.kwargs), self.func

    @classmethod
    def tree_unflatten(cls, func, children):
        return cls(func, *children)


def cached_by_signature(build: Callable, size: int = 64) -> Callable:
    """``build(f, *options)`` cached by the signature of the :class:`BoundIntegrand` ``f``
    and the options: the compiled runners of the sampling engines take ``f`` as a traced
    argument, so one runner serves every integrand of one signature."""
    cache: dict = {}

    @functools.wraps(build)
    def get(f: BoundIntegrand, *options):
        key = (f.signature(),) + options
        if key not in cache:
            if len(cache) >= size:
                cache.pop(next(iter(cache)))
            cache[key] = build(f, *options)
        return cache[key]

    return get


@dataclasses.dataclass(frozen=True)
class NormalizedIntegrand:
    """A user integrand seen as a real ``(n, d) -> (n, M)`` function.

    ``fn`` is traceable by JAX; ``unpack(re)`` maps a real array with trailing axis ``M`` to
    the user's shape and kind (drops the component axis for scalar integrands and recombines
    real/imaginary halves for complex ones).
    """

    fn: Callable[[jax.Array], jax.Array]
    ndim: int
    n_components: int        # M: real components the engine integrates
    is_complex: bool
    is_scalar: bool
    dtype: Any = jnp.float64

    def call(self, f: Callable, x):
        """``f(x)`` normalized as :attr:`fn` normalizes the probed integrand, for an ``f``
        with the same output structure (the same :class:`BoundIntegrand` with traced
        arguments inside a compiled function)."""
        y = f(x)
        if self.is_scalar:
            y = y[:, None]
        if self.is_complex:
            y = jnp.concatenate([jnp.real(y), jnp.imag(y)], axis=1)
        return y.astype(self.dtype)

    def unpack(self, real_values):
        a = np.asarray(real_values)
        if self.is_complex:
            half = self.n_components // 2
            a = a[..., :half] + 1j * a[..., half:]
        if self.is_scalar:
            a = a[..., 0]
        if a.ndim == 0:
            return complex(a) if self.is_complex else float(a)
        return a


def _apply(f: BoundIntegrand, x):
    """``f(x)`` with ``f``'s arrays as arguments: compiled (:data:`_evaluate`) or traced
    (:func:`_output_shape`) once per integrand signature."""
    return f(x)


_evaluate = jax.jit(_apply)


@functools.partial(cached_by_signature, size=256)
def _output_shape(f: BoundIntegrand, ndim: int, dtype_name: str):
    """``f``'s output shape and dtype on two points, traced once per integrand signature (a
    new bind of the same integrand is not traced again)."""
    return jax.eval_shape(_apply, f, jax.ShapeDtypeStruct((2, ndim), dtype_name))


def normalize_integrand(f: Callable, ndim: int, dtype=jnp.float64) -> NormalizedIntegrand:
    """Probe ``f`` with ``jax.eval_shape`` and wrap it as a real ``(n, d) -> (n, M)`` function.

    Raises ``TypeError`` when ``f`` cannot be traced by JAX (written with NumPy instead of
    ``jax.numpy``, or branching in Python on the values of ``x``): engines compile the
    integrand, so it is called on abstract arrays.
    """
    try:
        probe = _output_shape(BoundIntegrand.of(f), ndim, jnp.dtype(dtype).name)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError,
            jax.errors.TracerIntegerConversionError) as e:   # ConcretizationTypeError: also bool
        raise TypeError(
            "the integrand must be written with jax.numpy (traceable by JAX): it is compiled "
            "and called on abstract arrays, so NumPy functions (np.cos), float(x) or Python "
            "if/while on values of x cannot be used; write e.g. "
            "lambda x: jnp.cos(x.sum(1)) with import jax.numpy as jnp "
            f"({type(e).__name__})") from None
    if probe.ndim not in (1, 2) or probe.shape[0] != 2:
        raise ValueError(
            f"integrand must map points of shape (n, {ndim}) to values of shape (n,) or (n, m); "
            f"for n=2 it returned shape {probe.shape}")
    is_scalar = probe.ndim == 1
    m = 1 if is_scalar else probe.shape[1]
    is_complex = jnp.issubdtype(probe.dtype, jnp.complexfloating)

    norm = NormalizedIntegrand(fn=None, ndim=ndim, n_components=2 * m if is_complex else m,
                               is_complex=bool(is_complex), is_scalar=is_scalar, dtype=dtype)
    return dataclasses.replace(norm, fn=lambda x: norm.call(f, x))


def check_indexing(f: Callable, ndim: int) -> None:
    """Raise ``IndexError`` when ``f`` reads ``x`` out of its bounds (e.g. ``x[:, 5]`` with
    ``ndim = 2``): JAX clamps such indices instead of raising, which would integrate the wrong
    function without a sign.  ``f`` is run once on two points with JAX's index checks
    (:mod:`jax.experimental.checkify`); a function the probe cannot run is left to the
    engines' own tracing, which names the problem (:func:`normalize_integrand`)."""
    from jax.experimental import checkify
    x = jnp.full((2, ndim), 0.5, jnp.float64)
    try:
        error, _ = checkify.checkify(f, errors=checkify.index_checks)(x)
    except Exception:        # untraceable or failing integrands: reported by the engines
        return
    message = error.get()
    if message:
        raise IndexError(f"the integrand indexes out of bounds ({message.strip()}); its points "
                         f"x have shape (n, {ndim}), columns 0..{ndim - 1}")


def tolerance_met(value, error, rtol: float, atol: float) -> bool:
    """True when every component satisfies ``|error| <= max(atol, rtol * |value|)``."""
    v = np.abs(np.asarray(value))
    e = np.abs(np.asarray(error))
    return bool(np.all(e <= np.maximum(atol, rtol * v)))


def real_tolerance_met(values, errors, rtol: float, atol: float, n: NormalizedIntegrand) -> bool:
    """:func:`tolerance_met` on the engine's real components, judged per user component.

    For complex integrands the real and imaginary errors of one component are combined as
    ``hypot`` and compared with ``rtol * |value|``, so a tiny imaginary part does not force
    relative accuracy on itself alone.
    """
    return tolerance_met(n.unpack(values), _combine_error(n.unpack(errors)), rtol, atol)


def real_tolerance_excess(values, errors, rtol: float, atol: float,
                          n: NormalizedIntegrand) -> float:
    """How far the errors are from :func:`real_tolerance_met`: the largest
    ``|error| / max(atol, rtol * |value|)`` over the user's components (<= 1 when met;
    ``inf`` where a component's target is 0 and its error is not, NaN for NaN errors)."""
    return tolerance_excess(n.unpack(values), n.unpack(errors), rtol, atol)


def tolerance_excess(values, errors, rtol: float, atol: float) -> float:
    """:func:`real_tolerance_excess` of values and errors in the user's form (complex
    errors as (re, im) parts)."""
    v = np.abs(np.asarray(values))
    e = np.abs(_combine_error(errors))
    target = np.maximum(atol, rtol * v)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(target > 0, e / np.where(target > 0, target, 1), np.where(e > 0, np.inf, 0))
    return float(np.max(q)) if q.size else 0.0


def _combine_error(e):
    e = np.asarray(e)
    return np.hypot(e.real, e.imag) if np.iscomplexobj(e) else np.abs(e)


def complex_error(err_real_components, n: NormalizedIntegrand):
    """Unpack real-component errors into the public error convention."""
    return n.unpack(np.abs(np.asarray(err_real_components)))


def check_tolerances(rtol: float, atol: float, max_evals: int) -> None:
    """Reject tolerances that no engine can honour, with a message that says why."""
    if not (rtol >= 0 and atol >= 0) or (rtol == 0 and atol == 0):
        raise ValueError(f"need rtol >= 0, atol >= 0, not both zero (got rtol={rtol}, atol={atol})")
    if rtol and rtol < 1e-15:
        raise ValueError(f"rtol={rtol} is below float64 resolution (1e-15)")
    if not (isinstance(max_evals, (int, np.integer)) or float(max_evals).is_integer()) or max_evals < 1:
        raise ValueError(f"max_evals must be a positive integer, got {max_evals!r}")


def box(lower, upper, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate and broadcast box limits to float64 arrays of shape ``(ndim,)``."""
    for name, limit in (("lower", lower), ("upper", upper)):
        if np.ndim(limit) > 1 or np.size(limit) not in (1, ndim):
            raise ValueError(f"box limit {name} must be a number or {ndim} numbers (one per "
                             f"variable), got shape {np.shape(limit)}")
    lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (ndim,)).copy()
    hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), (ndim,)).copy()
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
        raise ValueError(f"box limits must be finite with upper > lower; got {lo} .. {hi}")
    return lo, hi


def final_status(stop: str, nonfinite: int) -> tuple[bool, str]:
    """(converged, status) of an adaptive run that ended with ``stop`` and saw ``nonfinite``
    NaN/inf integrand values: never converged with non-finite values."""
    if nonfinite:
        return False, (f"{NONFINITE}: integrand returned NaN/inf at {nonfinite} points "
                       f"(counted as 0); run ended with: {stop}")
    return stop == CONVERGED, stop


def status_not_converged(kind: str, evaluations: int, err, requested) -> str:
    """Uniform wording for the common non-converged statuses."""
    return (f"{kind}: stopped after {evaluations:.3g} evaluations with error "
            f"{float(np.max(np.abs(err))):.3g} > requested {float(requested):.3g}")


def log2ceil(n: int) -> int:
    return max(0, math.ceil(math.log2(max(1, n))))


def device_memory_limit(device=None) -> int:
    """Bytes of device memory JAX may use on ``device`` (default: the first device); 0 on a
    CPU or where the backend gives no memory statistics (callers then keep their CPU
    defaults)."""
    device = device or jax.devices()[0]
    if device.platform == "cpu":
        return 0
    try:
        return int((device.memory_stats() or {}).get("bytes_limit", 0))
    except Exception:   # backends without memory statistics
        return 0


# Distances from a face (fractions of the box width) at which the integrand is probed, and the
# growth per step that counts as unbounded: a factor 2 over each 4 decades is t^e with
# e < -0.075, a power-law singularity; a logarithm (log(1/t): factors 2 then 1.5) is not.
BOUNDARY_PROBE = (1e-4, 1e-8, 1e-12)
BOUNDARY_GROWTH = 2.0
BOUNDARY_BASE_POINTS = 4


def boundary_singularity(f: Callable, lower, upper) -> str | None:
    """Whether ``f`` grows like a power of the distance to a face of the box.

    The rules of the cube engines (Genz-Malik, lattices, plain sampling) never evaluate the
    integrand on the boundary, and their error estimates (differences of rules, sample
    variances) assume a bounded integrand: near an integrable singularity t^e, -1 < e < 0, they
    can certify a value that is several per cent off (a Feynman integrand at D = 3.9 with a
    UV-divergent subloop: a stated error 10^5 times below the true one).  ``f`` is evaluated
    at :data:`BOUNDARY_BASE_POINTS` interior points moved to each face at the distances
    :data:`BOUNDARY_PROBE`; a component whose modulus grows by :data:`BOUNDARY_GROWTH` or
    more at each step towards a face, or becomes NaN/inf there after growing, is reported, as
    is one that is NaN/inf already at the first distance.

    Returns None, or a sentence naming the face and the estimated exponent.
    """
    lo = np.asarray(lower, dtype=np.float64)
    hi = np.asarray(upper, dtype=np.float64)
    d = lo.size
    k = np.arange(1, BOUNDARY_BASE_POINTS + 1)[:, None]
    alpha = np.sqrt(np.arange(2, d + 2) + 0.5)      # irrational steps: spread interior points
    base = 0.1 + 0.8 * np.mod(k * alpha[None, :], 1.0)       # [B, d] in the unit cube
    h = np.asarray(BOUNDARY_PROBE)
    pts = []
    for axis in range(d):
        for side in (0.0, 1.0):
            for b in base:
                for hk in h:
                    u = b.copy()
                    u[axis] = hk if side == 0.0 else 1.0 - hk
                    pts.append(u)
    u = np.asarray(pts)
    x = lo + u * (hi - lo)
    with np.errstate(all="ignore"):
        y = np.abs(np.asarray(_evaluate(BoundIntegrand.of(f), jnp.asarray(x, jnp.float64))))
    y = y.reshape(d, 2, BOUNDARY_BASE_POINTS, len(h), -1)           # [axis, side, base, h, m]
    a0, a1, a2 = y[..., 0, :], y[..., 1, :], y[..., 2, :]
    bad = ~np.isfinite(a0)
    if np.any(bad):
        # NaN/inf already a relative 1e-4 from a face: the run's points, which never saw it,
        # estimated the integral of a different function
        axis, side = (int(i[0]) for i in np.nonzero(bad)[:2])
        face = _face(axis, side, lo, hi)
        return (f"the integrand is NaN or inf at {int(np.sum(np.any(bad, axis=-1)))} of "
                f"{bad[..., 0].size} probe points {h[0]:g} of the box's width from its faces "
                f"(first towards {face}), which the run's points did not reach: its value "
                "and error estimate cannot be trusted")
    with np.errstate(all="ignore"):
        grows = (np.isfinite(a0) & np.isfinite(a1) & (a0 > 0) & (a1 >= BOUNDARY_GROWTH * a0)
                 & (~np.isfinite(a2) | (a2 >= BOUNDARY_GROWTH * a1)))
    if not np.any(grows):
        return None
    axis, side, b, m = (int(i[0]) for i in np.nonzero(grows))
    with np.errstate(all="ignore"):
        e = np.log(a1[axis, side, b, m] / a0[axis, side, b, m]) / np.log(h[1] / h[0])
    face = _face(axis, side, lo, hi)
    return (f"the integrand grows like t^{e:.3g} towards the face {face} (t = distance to "
            "the face): an unbounded integrand, for which this engine's error estimate "
            "cannot be trusted")


def _face(axis: int, side: int, lo: np.ndarray, hi: np.ndarray) -> str:
    """The face ``x_axis = lo`` (side 0) or ``= hi`` (side 1) of a box, for a status."""
    return f"x{axis + 1} = {(lo if side == 0 else hi)[axis]:.6g}"


def probe_boundary(r: IntegrationResult, f: Callable, lower, upper) -> IntegrationResult:
    """``r`` after probing ``f`` near the faces of the box (:func:`boundary_singularity`): an
    integrand that grows without bound there makes the result not converged, with status
    :data:`SINGULAR_BOUNDARY` (value and error kept as computed).  The cube engines run it
    after every integration unless their option ``boundary_check`` is off."""
    if r.status.startswith(NONFINITE):      # the run saw the non-finite values itself
        return r
    t0 = time.perf_counter()
    found = boundary_singularity(f, lower, upper)
    r = dataclasses.replace(r, seconds=r.seconds + time.perf_counter() - t0)
    if found:
        r = dataclasses.replace(r, converged=False,
                                status=f"{SINGULAR_BOUNDARY}: {found} (run ended with: "
                                       f"{r.status})",
                                info={**r.info, "boundary": found})
    return r
