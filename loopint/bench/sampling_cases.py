"""Benchmark rows for the sampling engines: Monte Carlo (``mc``) and lattice QMC (``qmc``).

Cases (seed 000 chapter 3 and appendix C):

- ``table51`` (seed 000 Table 5.1, 6-D two-loop integrand, reference 8.5351398153893e-2):
  MC at N = 4e10 evaluations (the seed's largest useful N; quick: 1e7) in float64 and in
  float32 (float32 points and integrand, float64 sums); QMC to rtol 1e-8 (quick: 1e-5).
- the stochastic-geometry integrals (``geometry_suite``) by MC to rtol 1e-4 (quick: 1e-2);
  the cube is sampled without antithetic variates (its integrand has ``f(u) = f(1 - u)``).
- ``f1_8d`` and ``f3_8d`` (seed 001) by QMC to rtol 1e-6 (quick: 1e-1 and 1e-2) within
  2e10 evaluations; lattices up to the engine's default top (2^28 points on an H200), then
  more shifts.  1e-6 needs about 2^28-point lattices for both (4.3e9 evaluations); on a CPU,
  2^20-point lattices give relative errors ~1e-1 and ~1e-3.
- ``table51 plain JAX``: the throughput of the bare integrand, ``table51`` on 2^24 points per
  step from the MC engine's default (Philox) uniforms, summed in a jitted loop (no antithetic
  pairs, no error sums) -- the figure the engines' evaluations/s can be compared with.
- the three geometry integrals again with seeds 0..19 at rtol 1e-4 (not in ``--quick``, nor
  in ``loopint bench``'s suites): in how many of the 20 runs the true error is below 3
  estimated sigma.

Every engine case runs twice: the first run compiles (and builds lattice vectors); its wall
time minus the second's is ``compile_seconds``; ``seconds`` and ``evals_per_s`` are the second
run's.  ``device`` is ``jax.devices()[0].platform``.

    python -m loopint.bench.sampling_cases [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import loopint  # noqa: F401  (x64)
from ..engines import mc, qmc, sampling
from ..engines.base import Box
from ..testfunctions import TABLE51_REFERENCE, genz_suite, geometry_suite, table51


def _device() -> str:
    return jax.devices()[0].platform


def _row(case, method, precision, r, exact, seconds, compile_seconds, **extra):
    value = float(np.real(r.value))
    return {"case": case, "method": method, "precision": precision, "value": value,
            "error": float(np.real(r.error)),
            "true_error": None if exact is None else abs(value - exact),
            "evaluations": int(r.evaluations), "seconds": seconds,
            "compile_seconds": max(compile_seconds, 0.0),
            "evals_per_s": r.evaluations / max(seconds, 1e-12), "device": _device(),
            "converged": bool(r.converged), "status": r.status, **extra}


def _twice(fn):
    """Run ``fn`` twice; return the second result, its wall time and the warm-up excess."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    r = fn()
    second = time.perf_counter() - t0
    return r, second, first - second


def _mc_fixed_n(f, ndim, n, precision, chunk, rng="philox"):
    """MC with ``n`` evaluations (to within one stream block per chunk; the tolerance is out of
    reach on purpose): ``n`` is split into equal chunks of at most ``chunk`` evaluations."""
    k = -(-n // chunk)
    block = 2 * mc.BLOCK                      # evaluations per antithetic stream block
    chunk = max(block, (n // k) // block * block)
    n = k * chunk
    def go():
        return mc.MonteCarlo(n_start=n, memory_limit=_memory(chunk), precision=precision,
                             rng=rng).integrate(f, Box.cube(ndim), rtol=1e-15, atol=0.0,
                                                max_evals=n)
    # warm-up on one chunk: the loop over chunks is compiled once for any number of chunks
    t0 = time.perf_counter()
    mc.MonteCarlo(n_start=chunk, memory_limit=_memory(chunk), precision=precision,
                  rng=rng).integrate(f, Box.cube(ndim), rtol=1e-15, max_evals=chunk)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    r = go()
    return r, time.perf_counter() - t0, compile_s


def plain_jax_throughput(batch_log2: int = 24, steps: int = 16, precision: str = "float64") -> dict:
    """``table51`` on ``2^batch_log2`` uniform points per step, summed in a jitted loop."""
    from .throughput import _key, _summer
    dtype = jnp.float64 if precision == "float64" else jnp.float32
    batch = 2**batch_log2
    run = _summer(table51, batch, steps, dtype, "philox")

    t0 = time.perf_counter()
    run(_key(0, "philox")).block_until_ready()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    total = float(run(_key(1, "philox")).block_until_ready())
    sec = time.perf_counter() - t0
    n = batch * steps
    return {"case": "table51 plain JAX", "method": "philox + sum", "precision": precision,
            "value": total / n, "error": None, "true_error": abs(total / n - TABLE51_REFERENCE),
            "evaluations": n, "seconds": sec, "compile_seconds": max(compile_s - sec, 0.0),
            "evals_per_s": n / sec, "device": _device(), "converged": None}


def _sizes(quick: bool):
    """(on a GPU, evaluations per chunk, largest log2 lattice size) for this device and mode."""
    gpu = _device() != "cpu"
    return gpu, 2**24 if gpu else 2**20, None if (gpu and not quick) else 22


def _memory(chunk: int) -> int:
    """The engines' ``memory_limit`` for chunks of ``chunk`` evaluations."""
    return chunk * sampling.BYTES_PER_EVALUATION


def run(quick: bool = False, rows_for: str = "all") -> list[dict]:
    """All rows (module docstring); ``quick`` shrinks every case to seconds on a CPU.

    ``rows_for``: ``"seeds"`` skips the generic f1/f3 rows, ``"generic"`` runs only them
    (the suites of ``loopint bench``), ``"all"`` runs everything."""
    rows: list[dict] = []
    if rows_for == "generic":
        return _genz_rows(quick)
    gpu, chunk, max_log2 = _sizes(quick)

    # Table 5.1 by MC at fixed N
    n_mc = 10**7 if quick else 4 * 10**10
    for precision in ("float64", "float32"):
        r, sec, comp = _mc_fixed_n(table51, 6, n_mc, precision, chunk)
        rows.append(_row("table51", "mc", precision, r, TABLE51_REFERENCE, sec, comp,
                         rng=r.info["rng"], antithetic=True))
    if not quick:       # the other generators (Threefry; seed 002's jump-ahead LCG), float64
        for rng in ("threefry", "lcg"):
            r, sec, comp = _mc_fixed_n(table51, 6, n_mc, "float64", chunk, rng)
            rows.append(_row("table51", "mc", "float64", r, TABLE51_REFERENCE, sec, comp,
                             rng=r.info["rng"], antithetic=True))

    # Table 5.1 by QMC
    rtol = 1e-5 if quick else 1e-8
    r, sec, comp = _twice(lambda: qmc.QuasiMonteCarlo(
        memory_limit=_memory(chunk), max_log2=max_log2).integrate(
        table51, Box.cube(6), rtol=rtol, max_evals=10**11))
    rows.append(_row("table51", "qmc", "float64", r, TABLE51_REFERENCE, sec, comp, rtol=rtol,
                     n=r.info["n"], shifts=r.info["shifts"]))

    # stochastic geometry by MC
    rtol = 1e-2 if quick else 1e-4
    for case in geometry_suite():
        r, sec, comp = _twice(lambda: _geometry_mc(case, rtol, chunk, 2**24 if gpu else 2**16))
        rows.append(_row(case.name, "mc", "float64", r, case.exact, sec, comp, rtol=rtol,
                         antithetic=r.info["antithetic"]))

    if not quick and rows_for == "all":   # the honesty criterion at rtol 1e-4
        rows += [_twenty_seeds(case, chunk) for case in geometry_suite()]

    if rows_for == "all":
        rows += _genz_rows(quick)

    # the bare integrand's throughput
    for precision in ("float64", "float32"):
        rows.append(plain_jax_throughput(24, 1 if quick else 32, precision))
    return rows


def _geometry_mc(case, rtol: float, chunk: int, n_start: int, seed: int = 0):
    """A geometry integral by MC; the cube is sampled without antithetic variates (its
    integrand has ``f(u) = f(1 - u)``)."""
    engine = mc.MonteCarlo(seed=seed, n_start=n_start, memory_limit=_memory(chunk),
                           antithetic=case.name != "cube_tetrahedron_12d")
    return engine.integrate(case.f, Box.cube(case.ndim), rtol=rtol, max_evals=2 * 10**11)


def _twenty_seeds(case, chunk: int, rtol: float = 1e-4, seeds: int = 20) -> dict:
    """``case`` by MC with seeds 0..19 (compiled kernels reused): how often the true error
    is below 3 estimated sigma (honest: >= 19 of 20)."""
    t0 = time.perf_counter()
    z, evals, conv = [], 0, 0
    for seed in range(seeds):
        r = _geometry_mc(case, rtol, chunk, 2**24, seed)
        z.append((float(r.value) - case.exact) / float(r.error))
        evals += r.evaluations
        conv += bool(r.converged)
    sec = time.perf_counter() - t0
    inside = sum(abs(x) < 3 for x in z)
    return {"case": f"{case.name}, {seeds} seeds", "method": "mc", "precision": "float64",
            "rtol": rtol, "inside_3sigma": inside, "max_abs_z": max(abs(x) for x in z),
            "evaluations": evals, "seconds": sec, "evals_per_s": evals / sec,
            "device": _device(), "converged": conv == seeds,
            "status": f"{conv}/{seeds} converged; |true error| < 3 sigma in {inside}/{seeds}"}


def _genz_rows(quick: bool) -> list[dict]:
    """f1, f3 (8-D) by QMC."""
    rows: list[dict] = []
    _, chunk, max_log2 = _sizes(quick)
    genz = {c.name: c for c in genz_suite()}
    for name, rq in (("f1_8d", 1e-1), ("f3_8d", 1e-2)):
        case = genz[name]
        rtol = rq if quick else 1e-6
        r, sec, comp = _twice(lambda: qmc.QuasiMonteCarlo(
            memory_limit=_memory(chunk), max_log2=max_log2).integrate(
            case.f, Box.cube(8), rtol=rtol, max_evals=(10**8 if quick else 2 * 10**10)))
        rows.append(_row(name, "qmc", "float64", r, case.exact, sec, comp, rtol=rtol,
                         n=r.info["n"], shifts=r.info["shifts"]))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rows = run(quick=args.quick)
    for r in rows:
        print("  ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in r.items() if k != "status"), flush=True)
        if r.get("converged") is False:
            print("    status:", r.get("status"))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
