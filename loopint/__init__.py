"""loopint: Feynman loop integrals in Feynman-parameter space on GPUs and CPUs.

Importing loopint turns on JAX float64 (see :mod:`loopint.precision`).
"""

from . import precision as _precision  # noqa: F401  (sets jax_enable_x64 once)
from .engines.base import IntegrationResult

__version__ = "0.1.0"

__all__ = ["IntegrationResult", "__version__"]
