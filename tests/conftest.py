"""Shared test setup."""

import os

import jax
import mpmath
import pytest

# the commands the tests run in-process compute there, not in a 'loopint serve' of the user's
# (tests/test_server.py starts its own, on a socket of its own)
os.environ["LOOPINT_SERVER"] = ""


@pytest.fixture(autouse=True)
def _isolate_mpmath_precision():
    """Tests set mpmath's working precision freely; restore it so test order never matters."""
    dps = mpmath.mp.dps
    yield
    mpmath.mp.dps = dps


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_kernels():
    """Every XLA:CPU executable a process holds keeps a few memory mappings of its code and
    data, and JAX holds every executable it compiled; a pytest worker that runs hundreds of
    tests reaches the kernel's limit on mappings per process (``vm.max_map_count``, 65530 by
    default).  That is the likely cause of the workers that died loading an executable
    (SIGSEGV or SIGABRT in XLA): test_iterated.py alone leaves 34,206 mappings, 1,099 after
    ``jax.clear_caches()``.  Clearing JAX's caches after each test module releases them; the
    persistent compilation cache keeps the reloads cheap."""
    yield
    jax.clear_caches()
