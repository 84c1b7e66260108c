"""Integrand throughput: evaluations per second of the Table 5.1 integrand.

Compares the seed's hand-written formula in plain JAX (:func:`loopint.testfunctions.table51`)
with the integrand generated from the diagram file (``diagrams/table51_2L.toml``, sequential
map), both fed by the MC engine's counter-based uniforms (Philox-4x32-10 and Threefry-2x32-20)
in batches of 2^24 points and summed on the device, in float64 and float32.  Median of
repeated timed runs after a warm-up.

    python -m loopint.bench.throughput [--batch-log2 24] [--steps 16] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import jax
import jax.numpy as jnp

import loopint  # noqa: F401  (x64)
from ..engines import mc
from ..lower import Integrand
from ..problem import load
from ..testfunctions import table51

DIAGRAM = os.path.join(os.path.dirname(__file__), "..", "..", "diagrams", "table51_2L.toml")


def _summer(f, batch: int, steps: int, dtype, rng: str = "philox"):
    """Jitted ``key_data -> sum over steps x batch points of f(u)``, the uniforms from the MC
    engine's counter-based generator (:func:`loopint.engines.mc.sample_columns`: elementwise
    in the sample, so XLA fuses generator, integrand and sum)."""
    nb = batch // mc.BLOCK

    @jax.jit
    def run(key_data):
        def body(i, acc):
            u = jnp.stack(mc.sample_columns(rng, key_data, jnp.asarray(i, jnp.int64) * nb,
                                             nb, 6, dtype), axis=1)
            return acc + jnp.sum(f(u).astype(jnp.float64))
        return jax.lax.fori_loop(0, steps, body, jnp.zeros((), jnp.float64))
    return run


def _key(seed: int, rng: str):
    return jnp.asarray(mc.seed_key_data(seed, rng))


def measure(batch_log2: int = 24, steps: int = 16, repeats: int = 5,
            rngs=("philox", "threefry")) -> list[dict]:
    batch = 2**batch_log2
    p = load(DIAGRAM)
    rows = []
    for precision, dtype in (("float64", jnp.float64), ("float32", jnp.float32)):
        ig = Integrand(p.diagram, domain="sequential", precision=precision)
        gen = ig.bind({}, [0.0], real=True)
        cands = {"plain JAX (seed formula)": lambda u: table51(u),
                 "generated from diagram file": lambda u: 2.0 * gen(u)[:, 0]}
        for rng in rngs:
            for name, f in cands.items():
                run = _summer(f, batch, steps, dtype, rng)
                t0 = time.perf_counter()
                val = float(run(_key(0, rng)).block_until_ready())
                compile_s = time.perf_counter() - t0
                times = []
                for r in range(repeats):
                    t0 = time.perf_counter()
                    val = float(run(_key(r + 1, rng)).block_until_ready())
                    times.append(time.perf_counter() - t0)
                med = statistics.median(times)
                n = batch * steps
                rows.append({"case": f"Table 5.1 integrand, {name}", "precision": precision,
                             "method": f"{rng} + sum", "evaluations": n, "seconds": med,
                             "compile_seconds": compile_s, "evals_per_s": n / med,
                             "value": val / n, "device": jax.devices()[0].device_kind})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch-log2", type=int, default=24)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    from . import format_table
    print(format_table(measure(a.batch_log2, a.steps, a.repeats)))


if __name__ == "__main__":
    main()
