"""The one place where loopint configures JAX: floating-point width and compilation cache.

loopint computes in float64 (complex128) by default: loop integrals near thresholds lose
digits quickly, and the error estimates of adaptive rules need the headroom. JAX keeps float32
unless ``jax_enable_x64`` is on, so importing :mod:`loopint` switches it on, once, here.
float32 stays available per call (``precision="float32"``), which casts inputs and rules.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from . import cache as cache_mod

jax.config.update("jax_enable_x64", True)


def _enable_compilation_cache() -> None:
    """JAX's persistent compilation cache in the folder ``jax/`` of the loopint cache folder
    (:mod:`loopint.cache`: ``$LOOPINT_CACHE_DIR``, else ``$XDG_CACHE_HOME/loopint``, else
    ``~/.cache/loopint``; ``LOOPINT_CACHE_DIR=""`` turns it off).

    A second run of the same diagram (same shapes, any kinematics: they are arguments of
    the kernels) loads its compiled kernels instead of compiling again.  Every kernel is
    stored, however fast it compiled: a GPU takes a tenth of a second or more even for a
    small one, and a diagram's run makes dozens (``tests/test_timing.py`` checks that a second
    process compiles nothing).
    """
    root = cache_mod.cache_dir()
    if root is None:
        return
    folder = root / "jax"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # read-only home: run without the cache
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


_enable_compilation_cache()

PRECISIONS = {"float64": jnp.float64, "float32": jnp.float32}


def real_dtype(precision: str = "float64"):
    """Return the JAX real dtype for ``precision`` ('float64' or 'float32')."""
    try:
        return PRECISIONS[precision]
    except KeyError:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}") from None


def complex_dtype(precision: str = "float64"):
    """Return the complex dtype matching ``precision`` (complex128 or complex64)."""
    return jnp.complex128 if real_dtype(precision) == jnp.float64 else jnp.complex64
