"""Shared test setup."""

import mpmath
import pytest


@pytest.fixture(autouse=True)
def _isolate_mpmath_precision():
    """Tests set mpmath's working precision freely; restore it so test order never matters."""
    dps = mpmath.mp.dps
    yield
    mpmath.mp.dps = dps
