"""loopint: Feynman loop integrals in Feynman-parameter space on GPUs and CPUs.

    import loopint
    d = loopint.Diagram.from_graph(internal_lines=..., external_lines=..., scalar_products=...)
    d.U, d.F                                   # sympy expressions
    r = loopint.compute(d, kinematics={"s": 10.0, "m": 1.0}, rtol=1e-6)
    r.value, r.error, r.converged, r.table
    p = loopint.load("diagrams/triangle_above_threshold.toml"); loopint.compute(p)
    loopint.integrate(f, ndim=6, method="qmc", rtol=1e-8)   # generic engine
    loopint.amplitude([("s*t/2", "box.toml"), ("-t", "triangle.toml")], {"s": -5, ...})
    loopint.init_distributed()          # one process per host: scans shared out over them

Importing loopint turns on JAX float64 (see :mod:`loopint.precision`) and, unless the
environment says otherwise, JAX's allocation of GPU memory as needed instead of 75 % of the
device at the first array (``XLA_PYTHON_CLIENT_PREALLOCATE=false``): on an H200 that
reservation took 1.8-2.5 s of every fresh process against 0.2-0.4 s, and runs that fill the
memory (PAGANI to its region bound) took no longer without it.  The names above are
loaded on first use, so that ``import loopint`` and the command line's ``--help``, ``show``
and input errors do not pay for importing JAX and SymPy (seconds on some hosts).
"""

import importlib as _importlib
import os as _os
import sys as _sys
import types as _types

__version__ = "0.1.0"

# read when JAX starts its GPU backend (the first array), which may come after this import
_os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

if "jax" in _sys.modules:
    from . import precision as _precision  # noqa: F401  (sets jax_enable_x64 now)
else:
    # JAX reads its float64 switch from the environment when it is first imported;
    # loopint.precision sets it again (and the compilation cache) once a module needs JAX
    _os.environ.setdefault("JAX_ENABLE_X64", "true")

_LAZY = {
    "amplitude": ".amplitude", "compute": ".compute", "Diagram": ".diagram",
    "IntegrationResult": ".engines.base", "DiagramError": ".errors", "SpecError": ".errors",
    "integrate": ".integrate", "Integrand": ".lower", "init_distributed": ".parallel",
    "Problem": ".problem", "Settings": ".problem", "load": ".problem", "Region": ".region",
    "Result": ".result",
}


def __getattr__(name: str):
    """The public names of :data:`__all__`, imported on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'loopint' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


class _Package(_types.ModuleType):
    """The package's module type: the import system binds a submodule to its package's
    attribute once the submodule is loaded; the functions named like their modules
    (``compute``, ``amplitude``, ``integrate``) keep the name, as an eager import of them
    would."""

    def __setattr__(self, name, value):
        if name in _LAZY and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


__all__ = ["Diagram", "DiagramError", "Integrand", "IntegrationResult", "Problem", "Region",
           "Result", "Settings", "SpecError", "amplitude", "compute", "init_distributed",
           "integrate", "load", "__version__"]
