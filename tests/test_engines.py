"""The one engine interface: registry, options, domains, statuses, and compiled kernels reused
across bound integrands (a new delta or kinematic point never recompiles)."""

import contextlib
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from loopint import engines, integrate
from loopint.engines.base import Box, IntegrationResult, Simplex, Status, as_domain
from loopint.lower import Integrand
from loopint.problem import load


def test_registry_holds_every_method_and_builds_engines_from_options():
    assert set(engines.METHODS) == {"iterated", "cubature", "pagani", "qmc", "mc"}
    for name, cls in engines.ENGINES.items():
        e = engines.get(name)
        assert isinstance(e, engines.Engine) and isinstance(e, cls) and e.name == name
        assert dataclasses.is_dataclass(e)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(e, dataclasses.fields(e)[0].name, None)
        assert e == engines.get(name) and hash(e) == hash(engines.get(name))
    with pytest.raises(ValueError, match="method must be one of"):
        engines.get("simpson")
    with pytest.raises(TypeError):
        engines.get("qmc", no_such_option=1)


def test_domains():
    assert as_domain("cube", 3) == Box.cube(3)
    assert as_domain("simplex", 2) == Simplex(2)
    b = as_domain(([0, -1], [2, 1]), 2)
    assert isinstance(b, Box) and b.ndim == 2 and list(b.upper) == [2.0, 1.0]
    for bad, ndim in (("sphere", 2), (([0, 0], [1]), 3), (Simplex(3), 2)):
        with pytest.raises(ValueError):
            as_domain(bad, ndim)
    with pytest.raises(ValueError, match="upper > lower"):
        Box([0, 1], [1, 1])
    with pytest.raises(ValueError, match="ndim"):
        as_domain("cube", 0)
    with pytest.raises(TypeError, match="Box or a Simplex"):
        engines.get("cubature").integrate(lambda x: x[:, 0], "cube")
    with pytest.raises(ValueError, match="lower must be a number or 2 numbers"):
        as_domain(([0, 0, 0], [1, 1, 1]), 2)


@pytest.mark.parametrize("f", [
    lambda x: x[:, 5],                                     # a static index past the columns
    lambda x: jnp.take(x, 2, axis=1) + x[:, 0],
    lambda x: x[:, jnp.array([0, 3])].sum(1),              # an index array
])
def test_an_integrand_reading_past_its_variables_is_refused(f):
    # JAX clamps out-of-range indices: x[:, 5] of a 2-D point would silently read x[:, 1]
    with pytest.raises(IndexError, match=r"out of bounds.*shape \(n, 2\), columns 0\.\.1"):
        integrate(f, 2)
    r = integrate(lambda x: x[:, 1] ** 2, 2, rtol=1e-8)
    assert r.converged and abs(r.value - 1 / 3) < 1e-8


@pytest.mark.parametrize("method", ["iterated", "cubature", "pagani", "qmc", "mc"])
def test_every_engine_integrates_box_and_simplex_through_one_call(method):
    # int_box x1 x2 over [0,2]x[0,1] = 1; over the unit simplex = 1/24
    f = lambda x: x[:, 0] * x[:, 1]                                 # noqa: E731
    rtol = 1e-2 if method == "mc" else 1e-6
    e = engines.get(method)
    for dom, exact in ((Box([0, 0], [2, 1]), 1.0), (Simplex(2), 1 / 24)):
        r = e.integrate(f, dom, rtol=rtol, atol=0.0, max_evals=10**7)
        assert isinstance(r, IntegrationResult) and r.method == method
        assert r.converged and r.code is Status.CONVERGED
        assert abs(r.value - exact) <= 5 * abs(r.error) + 1e-12


def test_status_codes_follow_the_messages():
    r = integrate(lambda x: jnp.cos(40 * x.sum(1)), 4, method="cubature", rtol=1e-12,
                  max_evals=5000)
    assert not r.converged and r.code is Status.MAX_EVALS and r.status.startswith("max_evals")
    assert Status.of("singular at boundary: x") is Status.SINGULAR_BOUNDARY
    with pytest.raises(ValueError):
        Status.of("fine")


def test_choose_method_is_the_one_automatic_choice():
    c = engines.choose_method
    assert [c(d) for d in (1, 7, 8)] == ["cubature", "cubature", "qmc"]
    # one Euclidean point: iterated up to 2 dimensions, then the pilots' choice
    assert [c(d, "feynman") for d in (1, 2, 3, 6)] == ["iterated", "iterated", "pilot", "pilot"]
    # several kinematic points as one vector integrand: cubature up to 2 dimensions
    assert [c(d, "feynman", points=2) for d in (1, 2, 3, 6)] == \
        ["cubature", "cubature", "pilot", "pilot"]
    assert c(4, "regulated") == "iterated" and c(6, "regulated", decomposed=True) == "cubature"
    assert c(7, "regulated", decomposed=True) == "iterated"
    assert [c(d, "contour") for d in (4, 5)] == ["cubature", "qmc"]
    assert [c(d, "series") for d in (1, 2)] == ["cubature", "qmc"]
    with pytest.raises(ValueError, match="integrand must be one of"):
        c(3, "exotic")


@contextlib.contextmanager
def _compilations():
    """Count JAX trace/lower/compile events inside the block."""
    events = []

    def listener(event, duration, **_):
        if event.startswith("/jax/core/compile/"):
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


@pytest.mark.parametrize("method", ["iterated", "cubature", "pagani", "qmc", "mc"])
def test_a_new_delta_reuses_the_compiled_kernels(method):
    """A step of the delta sequence binds the integrand anew (new arrays, same shapes): the
    engine must run it without tracing or compiling anything."""
    diagram = load("diagrams/triangle_above_threshold.toml").diagram
    kin = load("diagrams/triangle_above_threshold.toml").kinematics
    ig = Integrand(diagram, domain="sequential")
    engine = engines.get(method)
    dom = Box.cube(ig.ndim)
    tol = dict(rtol=1e-3, atol=0.0, max_evals=2 * 10**5)
    first = engine.integrate(ig.bind(kin, deltas=(0.3,)), dom, **tol)
    with _compilations() as events:
        again = engine.integrate(ig.bind(kin, deltas=(0.3,)), dom, **tol)
    assert events == []
    np.testing.assert_array_equal(np.asarray(again.value), np.asarray(first.value))
    assert again.evaluations == first.evaluations
