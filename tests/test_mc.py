"""Monte Carlo engine: generators, reproducibility, stream discipline, honesty of the error.

Exact references: closed forms of the stochastic-geometry integrals (``geometry_suite``),
Random123's known-answer vectors for Philox-4x32-10, and a plain Python
implementation of the 64-bit LCG.

CPU budget: rtol 1e-4 on the geometry integrals needs 1e8-1e10 evaluations (relative standard
deviations 0.85, 1.0 and 7.2 per sample), far beyond a 2-core CPU test; the honesty check runs
20 seeds per integral at rtol 1e-3 (sphere, cube) and 1e-2 (tetrahedron in tetrahedron) and
asserts the true error is below 3 sigma in at least 19 of 20.  The 1e-4 runs are in
``loopint.bench.sampling_cases``.
"""

import json
import os
import subprocess
import sys
import textwrap

import jax.numpy as jnp
import numpy as np
import pytest

import loopint  # noqa: F401  (float64)
from loopint.engines import base, mc, sampling
from loopint.engines.base import Box
from loopint.testfunctions import TABLE51_REFERENCE, geometry_suite, table51

GEOMETRY = {c.name: c for c in geometry_suite()}


def _quadratic(x):
    return jnp.sum(x * x, axis=1)          # int over [0,1]^d = d/3


def _chunk(evaluations):
    """The ``memory_limit`` whose chunks hold ``evaluations`` evaluations."""
    return evaluations * sampling.BYTES_PER_EVALUATION


# ---------------------------------------------------------------- generators

@pytest.mark.parametrize("ctr,key,want", [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox_known_answers(ctr, key, want):
    """Random123 tests/kat_vectors, philox4x32 with 10 rounds."""
    got = tuple(int(v) for v in mc.philox4x32(ctr, key))
    assert got == want


def test_lcg_jump_ahead_and_stream():
    m64 = 2**64
    x = 12345
    seq = []
    for _ in range(1000):
        x = (mc.LCG_A * x + mc.LCG_C) % m64
        seq.append(x)
    for k in (1, 2, 17, 999):
        a, c = mc.lcg_jump(k)
        assert (a * 12345 + c) % m64 == seq[k - 1]
    # the engine's uniforms are the consecutive stream x_1, x_2, ... (d per sample)
    kd = mc.seed_key_data(7, "lcg")
    x = int(kd[0]) << 32 | int(kd[1])
    d, first, count = 3, 2048, 1024
    stream = []
    for _ in range((first + count) * d):
        x = (mc.LCG_A * x + mc.LCG_C) % m64
        stream.append(x)
    top52 = np.array(stream[first * d:], dtype=np.uint64) >> np.uint64(12)
    ref = (top52.astype(float) + 0.5) * 2.0**-52
    u = mc.uniforms(first, count, d, seed=7, rng="lcg")
    np.testing.assert_array_equal(u.ravel(), ref)


@pytest.mark.parametrize("rng", mc.RNGS)
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_uniforms_open_symmetric_and_distinct(rng, precision):
    """u in (0,1), 1-u exact, and two chunks of the stream share no random number."""
    a = mc.uniforms(0, 4096, 5, seed=3, rng=rng, precision=precision)
    b = mc.uniforms(4096, 4096, 5, seed=3, rng=rng, precision=precision)
    for u in (a, b):
        assert u.min() > 0 and u.max() < 1
        assert np.all((1 - (1 - u)) == u)
        assert abs(u.mean() - 0.5) < 0.01
    if precision == "float64":   # 2^52 grid: any repeat would be a reuse, not chance
        assert np.intersect1d(a.ravel(), b.ravel()).size == 0
        assert np.unique(a).size == a.size
    # addressing is by global sample index: one call over both equals the two calls
    both = mc.uniforms(0, 8192, 5, seed=3, rng=rng, precision=precision)
    np.testing.assert_array_equal(both, np.concatenate([a, b]))
    other = mc.uniforms(0, 4096, 5, seed=4, rng=rng, precision=precision)
    assert not np.array_equal(a, other)


@pytest.mark.parametrize("rng", mc.RNGS)
def test_uniform_moments_and_uncorrelated_coordinates(rng):
    """Mean 1/2, variance 1/12 and no correlation between the coordinates of a sample (7, so
    that Threefry and Philox use several hash calls per sample), within 5 standard errors,
    also beyond sample index 2^32 (the high counter word)."""
    n, d = 2**15, 7
    draws = []
    for first in (0, 2**33):
        u = mc.uniforms(first, n, d, seed=11, rng=rng)
        assert np.all(np.abs(u.mean(axis=0) - 0.5) < 5 * np.sqrt(1 / 12 / n))
        assert np.all(np.abs(u.var(axis=0) - 1 / 12) < 5 * np.sqrt(1 / 180 / n))
        corr = np.corrcoef(u.T)[np.triu_indices(d, 1)]
        assert np.all(np.abs(corr) < 5 / np.sqrt(n)), corr
        draws.append(u)
    assert np.intersect1d(draws[0].ravel(), draws[1].ravel()).size == 0


def test_neumaier_compensation():
    s, c = jnp.float64(0.0), jnp.float64(0.0)
    for x in [1e16, 1.0, -1e16, 1.0] * 3:
        s, c = sampling.neumaier_add(s, c, jnp.float64(x))
    assert float(s + c) == 6.0 and float(s) != 6.0


# ---------------------------------------------------------------- engine behaviour

def test_quadratic_all_generators():
    for rng in mc.RNGS:
        r = mc.MonteCarlo(n_start=2**14, memory_limit=_chunk(2**14), rng=rng).integrate(
            _quadratic, Box.cube(4), rtol=1e-3, max_evals=10**9)
        assert r.converged and r.status == base.CONVERGED
        assert abs(r.value - 4 / 3) < 4 * r.error
        assert r.method == "mc" and r.info["rng"] == rng


def test_same_seed_same_bits_different_seed_differs():
    kw = dict(rtol=1e-9, max_evals=2**17)
    opts = dict(n_start=2**15, memory_limit=_chunk(2**14))
    a = mc.MonteCarlo(seed=11, **opts).integrate(table51, Box.cube(6), **kw)
    b = mc.MonteCarlo(seed=11, **opts).integrate(table51, Box.cube(6), **kw)
    c = mc.MonteCarlo(seed=12, **opts).integrate(table51, Box.cube(6), **kw)
    assert a.value == b.value and a.error == b.error
    assert a.value != c.value


@pytest.mark.parametrize("rng", mc.RNGS)
def test_chunking_changes_only_rounding(rng):
    """Points depend on the global sample index only: chunking reorders the float64 sums."""
    kw = dict(rtol=1e-12, max_evals=2**16)
    opts = dict(n_start=2**16, seed=5, rng=rng)
    a = mc.MonteCarlo(memory_limit=_chunk(2**12), **opts).integrate(table51, Box.cube(6), **kw)
    b = mc.MonteCarlo(memory_limit=_chunk(2**16), **opts).integrate(table51, Box.cube(6), **kw)
    assert a.evaluations == b.evaluations == 2**16
    assert a.info["chunk_evals"] != b.info["chunk_evals"]
    assert a.value == pytest.approx(b.value, rel=1e-13)
    assert a.error == pytest.approx(b.error, rel=1e-9)


def test_meta_algorithm_continues_the_stream():
    """Growing N in steps gives the same estimate as one step of the final N (no reuse)."""
    kw = dict(rtol=1e-12, max_evals=2**16)
    opts = dict(memory_limit=_chunk(2**12), seed=9)
    steps = mc.MonteCarlo(n_start=2**12, growth=4, **opts).integrate(table51, Box.cube(6), **kw)
    once = mc.MonteCarlo(n_start=2**16, **opts).integrate(table51, Box.cube(6), **kw)
    assert steps.info["steps"] == 3 and once.info["steps"] == 1
    assert steps.evaluations == once.evaluations == 2**16
    assert steps.value == pytest.approx(once.value, rel=1e-13)
    assert [h[0] for h in steps.info["history"]] == [2**12, 2**14, 2**16]
    assert steps.status.startswith(base.MAX_EVALS) and not steps.converged


def test_antithetic_error_is_pair_variance():
    """Eq. 2.6: the error is the std of the pair means over sqrt(pairs)."""
    n = 2**13
    r = mc.MonteCarlo(n_start=2 * n, memory_limit=_chunk(2 * n), seed=2).integrate(
        _quadratic, Box.cube(3), rtol=1e-12, max_evals=2 * n)
    u = mc.uniforms(0, n, 3, seed=2)
    g = 0.5 * ((u * u).sum(1) + ((1 - u) ** 2).sum(1))
    assert r.info["samples"] == n
    assert r.value == pytest.approx(g.mean(), rel=1e-13)
    assert r.error == pytest.approx(g.std(ddof=1) / np.sqrt(n), rel=1e-9)


def test_plain_sampling_and_box():
    # int over [0,2] x [1,3] of x*y = 2 * 4 = 8
    r = mc.MonteCarlo(antithetic=False, n_start=2**15, memory_limit=_chunk(2**15)).integrate(
        lambda x: x[:, 0] * x[:, 1], Box([0, 1], [2, 3]), rtol=2e-3, max_evals=10**9)
    assert r.converged and abs(r.value - 8) < 4 * r.error
    assert r.info["samples"] == r.evaluations


def test_float32_points_float64_sums():
    r = mc.MonteCarlo(precision="float32", n_start=2**16, memory_limit=_chunk(2**16)).integrate(
        table51, Box.cube(6), rtol=3e-3, max_evals=10**9)
    assert r.converged and abs(r.value - TABLE51_REFERENCE) < 4 * r.error
    assert isinstance(r.value, float) and r.info["precision"] == "float32"


def test_vector_and_complex_equal_componentwise():
    def vec(x):
        s = jnp.sum(x, axis=1)
        return jnp.stack([jnp.exp(1j * s), s * s + 0j], axis=1)

    comps = [lambda x: jnp.cos(jnp.sum(x, 1)), lambda x: jnp.sin(jnp.sum(x, 1)),
             lambda x: jnp.sum(x, 1) ** 2]
    kw = dict(rtol=1e-12, max_evals=2**15)
    engine = mc.MonteCarlo(n_start=2**15, memory_limit=_chunk(2**14), seed=4)
    rv = engine.integrate(vec, Box.cube(3), **kw)
    assert rv.value.shape == (2,) and np.iscomplexobj(rv.value) and np.iscomplexobj(rv.error)
    got = [rv.value[0].real, rv.value[0].imag, rv.value[1].real]
    errs = [rv.error[0].real, rv.error[0].imag, rv.error[1].real]
    assert rv.value[1].imag == 0 and rv.error[1].imag == 0
    for g, e, fc in zip(got, errs, comps):
        r = engine.integrate(fc, Box.cube(3), **kw)
        assert g == pytest.approx(r.value, rel=1e-12, abs=1e-15)
        assert e == pytest.approx(r.error, rel=1e-9, abs=1e-15)


def test_nonfinite_counted_and_excluded():
    def f(x):
        return jnp.where(x[:, 0] < 0.01, jnp.nan, 1.0 + 0.0 * x[:, 1])

    r = mc.MonteCarlo(antithetic=False, n_start=2**14, memory_limit=_chunk(2**14)).integrate(
        f, Box.cube(2), rtol=1e-3, max_evals=10**9)
    assert not r.converged and r.status.startswith(base.NONFINITE)
    assert abs(r.info["nonfinite"] - 0.01 * r.evaluations) < 5 * np.sqrt(0.01 * r.evaluations)
    assert r.value == 1.0 and r.info["samples"] == r.evaluations - r.info["nonfinite"]


def test_budget_exhausted_status():
    r = mc.MonteCarlo(n_start=2**13, memory_limit=_chunk(2**13)).integrate(
        table51, Box.cube(6), rtol=1e-7, max_evals=2**15)
    assert not r.converged and r.status.startswith(base.MAX_EVALS)
    assert r.evaluations <= 2**15


def test_bad_arguments():
    with pytest.raises(ValueError):
        mc.MonteCarlo(rng="mt19937").integrate(_quadratic, Box.cube(1))
    with pytest.raises(ValueError):
        mc.MonteCarlo().integrate(_quadratic, Box.cube(1), rtol=1e-3, max_evals=100)
    with pytest.raises(TypeError):
        mc.MonteCarlo(bogus=1)
    with pytest.raises(ValueError):
        mc.MonteCarlo(memory_limit=0)


# ---------------------------------------------------------------- honesty on exact integrals

@pytest.mark.parametrize("name,rtol,antithetic", [
    ("sphere_tetrahedron_5d", 1e-3, True),
    # f(u) = f(1-u) here (a point reflection keeps the volume): antithetic pairs would only
    # double the cost, so the cube is sampled plainly
    ("cube_tetrahedron_12d", 1e-3, False),
    ("tetrahedron_tetrahedron_12d", 1e-2, True),
])
def test_geometry_twenty_seeds_honest(name, rtol, antithetic):
    case = GEOMETRY[name]
    inside, results = 0, []
    for seed in range(20):
        engine = mc.MonteCarlo(seed=seed, n_start=2**16, memory_limit=_chunk(2**16),
                               antithetic=antithetic)
        r = engine.integrate(case.f, Box.cube(case.ndim), rtol=rtol, max_evals=10**9)
        assert r.converged, r.status
        assert r.error <= rtol * abs(r.value)
        results.append((r.value, r.error))
        inside += abs(r.value - case.exact) < 3 * r.error
    z = [(v - case.exact) / e for v, e in results]
    print(f"{name}: rtol {rtol}: |error| < 3 sigma in {inside}/20 seeds; z = "
          + " ".join(f"{x:+.2f}" for x in z))
    assert inside >= 19


def test_table51_mc_honest():
    r = mc.MonteCarlo(n_start=2**16, memory_limit=_chunk(2**16)).integrate(
        table51, Box.cube(6), rtol=2e-3, max_evals=10**9)
    assert r.converged and abs(r.value - TABLE51_REFERENCE) < 3 * r.error


# ---------------------------------------------------------------- several devices

def test_two_cpu_devices_same_points(tmp_path):
    """Sharded over 2 host devices the estimate equals the 1-device one up to round-off."""
    code = textwrap.dedent("""
        import jax, loopint, json, sys
        from loopint.engines import mc, sampling
        from loopint.engines.base import Box
        from loopint.testfunctions import table51
        assert jax.device_count() == 2
        out = {}
        for nd in (1, 2):
            engine = mc.MonteCarlo(n_start=2**16, memory_limit=2**14 * sampling.BYTES_PER_EVALUATION,
                                   seed=3, devices=nd)
            r = engine.integrate(table51, Box.cube(6), rtol=1e-12, max_evals=2**16)
            out[nd] = [r.value, r.error, r.evaluations, r.info["devices"]]
        print(json.dumps(out))
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    one, two = out["1"], out["2"]
    assert two[3] == 2 and one[3] == 1 and one[2] == two[2]
    assert two[0] == pytest.approx(one[0], rel=1e-13)
    assert two[1] == pytest.approx(one[1], rel=1e-9)
