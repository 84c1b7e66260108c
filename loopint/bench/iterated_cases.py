"""Benchmark cases of the iterated Gauss–Kronrod engine (seed 000 chapter 4).

* the Genz cases of dimension <= 5 (seed 001 §4.1, REFERENCES.md) to ``rtol = 1e-8``:
  f3_3d, f3_5d, f4_5d (narrow peak), f5_5d (kinks at 1/2: two initial intervals);
* a regulated one-loop integrand: C0(0, 0, s; m, m, m) at s = 10 m², the Feynman-parameter
  integral over the 2-simplex with ``F - iδU`` for 15 values ``δ_j = 0.1·1.2^-j`` at once (a
  vector integrand, as the DCM δ-sequence uses it), to ``rtol = 1e-8``, against 1-D mpmath
  references (inner integral in closed form).

Each case runs twice: a warm-up that compiles the kernels (its extra time is
``compile_seconds``) and the timed run (``seconds``).  ``quick`` runs f3_3d to 1e-5 only.
On a CPU the evaluation budget is capped (``max_evals`` 3e8), so the large cases stop with
``converged = False`` there; they are meant for the GPU.

    python -m loopint.bench.iterated_cases [--quick]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import mpmath
import numpy as np

import loopint  # noqa: F401  (float64)
from ..engines import iterated
from ..testfunctions import genz_suite

C0_S, C0_M2 = 10.0, 1.0
C0_DELTAS = 0.1 * 1.2 ** -np.arange(15)


def c0_integrand(x, deltas):
    """-1/(F - iδU) on the 2-simplex, U = 1, F = -s x1 (1 - x1 - x2) + m² (pySecDec
    normalization of C0 for N = 3, L = 1, D = 4); one component per δ."""
    x1, x2 = x[:, 0], x[:, 1]
    F = -C0_S * x1 * (1 - x1 - x2) + C0_M2
    return -1.0 / (F[:, None] - 1j * deltas[None, :])


def c0_reference(delta: float) -> complex:
    """x2 integral in closed form, then 1-D mpmath quadrature at 30 digits."""
    with mpmath.workdps(30):
        s, d = mpmath.mpf(C0_S), mpmath.mpf(delta)

        def inner(x1):
            return (mpmath.log(C0_M2 - 1j * d)
                    - mpmath.log(C0_M2 - s * x1 * (1 - x1) - 1j * d)) / (s * x1)

        r = mpmath.sqrt(1 - 4 * C0_M2 / s)
        return complex(-mpmath.quad(inner, [0, (1 - r) / 2, (1 + r) / 2, 1], maxdegree=10))


def _cases(quick: bool):
    genz = {c.name: c for c in genz_suite()}
    if quick:
        c = genz["f3_3d"]
        return [("f3_3d", c.f, c.ndim, "cube", c.exact, 1e-5, {})]
    out = []
    for name, kw in [("f3_3d", {}), ("f3_5d", {}), ("f4_5d", {}),
                     ("f5_5d", {"initial_intervals": 2, "inner_tolerance": "relative"})]:
        c = genz[name]
        out.append((name, c.f, c.ndim, "cube", c.exact, 1e-8, kw))
    refs = np.array([c0_reference(d) for d in C0_DELTAS])
    out.append((f"C0 s=10m² regulated, {len(C0_DELTAS)} δ in [{C0_DELTAS[-1]:.3g}, 0.1]",
                c0_integrand, 2, "simplex", refs, 1e-8,
                {"args": (jnp.asarray(C0_DELTAS),)}))
    return out


def run(quick: bool = False) -> list[dict]:
    """One row per case: value, error, true error, evaluations, timings, device."""
    on_cpu = jax.default_backend() == "cpu"
    max_evals = 3 * 10**8 if on_cpu else 10**11
    device = jax.devices()[0].platform
    rows = []
    for name, f, ndim, domain, exact, rtol, kw in _cases(quick):
        t0 = time.perf_counter()
        iterated.integrate(f, ndim, domain=domain, rtol=rtol, max_evals=max_evals, **kw)
        first = time.perf_counter() - t0
        r = iterated.integrate(f, ndim, domain=domain, rtol=rtol, max_evals=max_evals, **kw)
        value = np.asarray(r.value)
        true = np.abs(value - np.asarray(exact))
        rel = true / np.abs(np.asarray(exact))
        rows.append({
            "case": name, "method": "iterated",
            "value": _scalar(value), "error": _scalar(np.asarray(r.error)),
            "true_error": float(np.max(true)), "true_rel_error": float(np.max(rel)),
            "rtol": rtol, "evaluations": int(r.evaluations), "seconds": r.seconds,
            "compile_seconds": max(0.0, first - r.seconds),
            "evals_per_s": r.evaluations / max(r.seconds, 1e-12), "device": device,
            "converged": r.converged, "status": r.status,
            "steps": "/".join(map(str, r.info["steps"])),
            "inner_tolerance": r.info["inner_tolerance"], "runs": r.info["runs"],
        })
    return rows


def _scalar(a: np.ndarray):
    """Scalar as is; of a vector (one component per δ) the last, smallest-δ, hardest one."""
    a = a.reshape(-1)[-1]
    return complex(a) if np.iscomplexobj(a) else float(a)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    from . import format_table
    print(format_table(run(quick=a.quick)))


if __name__ == "__main__":
    main()
