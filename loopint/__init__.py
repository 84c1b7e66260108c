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

Importing loopint turns on JAX float64 (see :mod:`loopint.precision`).
"""

import time as _time

_IMPORT_START = _time.perf_counter()

from . import precision as _precision  # noqa: E402,F401  (sets jax_enable_x64 once)

__version__ = "0.1.0"

from .amplitude import amplitude  # noqa: E402
from .compute import compute  # noqa: E402
from .diagram import Diagram  # noqa: E402
from .engines.base import IntegrationResult  # noqa: E402
from .errors import DiagramError, SpecError  # noqa: E402
from .integrate import integrate  # noqa: E402
from .lower import Integrand  # noqa: E402
from .parallel import init_distributed  # noqa: E402
from .problem import Problem, Settings, load  # noqa: E402
from .region import Region  # noqa: E402
from .result import Result  # noqa: E402

from . import timing as _timing  # noqa: E402

_timing.IMPORT_SECONDS = _time.perf_counter() - _IMPORT_START

__all__ = ["Diagram", "DiagramError", "Integrand", "IntegrationResult", "Problem", "Region",
           "Result", "Settings", "SpecError", "amplitude", "compute", "init_distributed", "integrate", "load",
           "__version__"]
