"""Benchmark cases of the iterated Gauss–Kronrod engine (seed 000 chapter 4).

* the Genz cases of dimension <= 5 (seed 001 §4.1: Sakiotis et al., PAGANI, SC'21) to
  ``rtol = 1e-8``: f3_3d, f3_5d, f4_5d (narrow peak), f5_5d (kinks at 1/2: two initial intervals);
* a regulated one-loop integrand: C0(0, 0, s; m, m, m) at s = 10 m², the Feynman-parameter
  integral over the 2-simplex with ``F - iδU`` for 15 values ``δ_j = 0.1·1.2^-j`` at once (a
  vector integrand, as the DCM δ-sequence uses it), to ``rtol = 1e-8``, against 1-D mpmath
  references (inner integral in closed form).

* the hardest four-δ step of the pentagon δ-sequence of ``diagrams/pentagon_ggttH.toml``
  (δ_j = δ₀·1.2^-j, j = 12..15, δ₀ from :mod:`loopint.compute`) to ``rtol = 5e-7``, the
  per-δ tolerance of a ``--rtol 1e-5`` run (no reference: ``true_error`` is empty).

Each case runs twice: a warm-up that compiles the kernels (its extra time is
``compile_seconds``) and the timed run (``seconds``).  ``quick`` runs f3_3d to 1e-5 only;
``only`` selects the cases whose name contains the text.
On a CPU the evaluation budget is capped (``max_evals`` 3e8), so the large cases stop with
``converged = False`` there; they are meant for the GPU.

    python -m loopint.bench.iterated_cases [--quick] [--only TEXT]
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import mpmath
import numpy as np

import loopint  # noqa: F401  (float64)
from ..engines.base import as_domain
from ..engines.iterated import Iterated
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
    out.append(_pentagon_case())
    refs = np.array([c0_reference(d) for d in C0_DELTAS])
    out.append((f"C0 s=10m² regulated, {len(C0_DELTAS)} δ in [{C0_DELTAS[-1]:.3g}, 0.1]",
                c0_integrand, 2, "simplex", refs, 1e-8,
                {"args": (jnp.asarray(C0_DELTAS),)}))
    return out


def _pentagon_case():
    from ..delta_sequence import delta_scale
    from ..lower import Integrand
    from ..problem import load
    from .seeds_cases import DIAGRAMS
    p = load(os.path.join(DIAGRAMS, "pentagon_ggttH.toml"))
    ig = Integrand(p.diagram, domain="simplex")
    kin = ig.kinematics_array(p.kinematics)
    deltas = float(np.max(delta_scale(ig, kin))) * 1.2 ** -np.arange(12, 16)
    f = ig.bind(kin, deltas)
    return (f"pentagon, 4 δ in [{deltas[-1]:.3g}, {deltas[0]:.3g}]", f, ig.ndim, "simplex", None,
            5e-7, {})


def run(quick: bool = False, only: str | None = None) -> list[dict]:
    """One row per case: value, error, true error, evaluations, timings, device."""
    on_cpu = jax.default_backend() == "cpu"
    max_evals = 3 * 10**8 if on_cpu else 10**11
    device = jax.devices()[0].platform
    rows = []
    for name, f, ndim, domain, exact, rtol, kw in _cases(quick):
        if only is not None and only not in name:
            continue
        engine, dom = Iterated(**kw), as_domain(domain, ndim)
        t0 = time.perf_counter()
        engine.integrate(f, dom, rtol=rtol, max_evals=max_evals)
        first = time.perf_counter() - t0
        r = engine.integrate(f, dom, rtol=rtol, max_evals=max_evals)
        value = np.asarray(r.value)
        if exact is None:
            true = rel = np.array([np.nan])
        else:
            true = np.abs(value - np.asarray(exact))
            rel = true / np.abs(np.asarray(exact))
        rows.append({
            "case": name, "method": "iterated",
            "value": _scalar(value), "error": _scalar(np.asarray(r.error)),
            "true_error": None if exact is None else float(np.max(true)),
            "true_rel_error": None if exact is None else float(np.max(rel)),
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
    ap.add_argument("--only", default=None, help="run the cases whose name contains TEXT")
    a = ap.parse_args()
    from . import format_table
    print(format_table(run(quick=a.quick, only=a.only)))


if __name__ == "__main__":
    main()
