"""Honesty of the region engines' error estimates on Genz's six families, random parameters.

Genz (1984, "Testing multidimensional integration routines") defines six families over
``[0, 1]^d``, each with a difficulty vector ``a`` and a location vector ``u``:

    oscillatory      cos(2 pi u_1 + a.x)
    product peak     prod_i (a_i^-2 + (x_i - u_i)^2)^-1
    corner peak      (1 + a.x)^-(d+1)
    Gaussian         exp(-sum_i a_i^2 (x_i - u_i)^2)
    C0 (kinked)      exp(-sum_i a_i |x_i - u_i|)
    discontinuous    0 where x_1 > u_1 or x_2 > u_2, else exp(a.x)

Seed 001's f1-f8 are members with fixed parameters (kinks and jumps at x = 1/2, on the
boundaries of the bisected regions); here ``u`` is drawn uniformly from [0.1, 0.9]^d and ``a``
from a band scaled with d (:func:`family`), so that kinks and jumps cut through regions.  Each
integral has a closed form, evaluated with mpmath at 30 digits (:func:`family`).

Every run (family, d, rtol, draw) is one :class:`~loopint.engines.cubature.Cubature` call with
the default error estimate and every sweep taken when due (``defer_sweeps=False``), within
``max_evals`` (``--method pagani``: one :class:`~loopint.engines.pagani.Pagani` call).  A run is honest when its true error is at most its estimate and, if it reports
convergence, at most the tolerance.  The summary gives per family and dimension the runs, how
many converged, how many were honest, and the largest ratio of true error to estimate.

    python -m loopint.bench.genz_families [--dims 3,5,6,8] [--rtols 1e-6,1e-8,1e-10]
        [--draws 2] [--max-evals 5e7] [--method cubature|pagani] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import dataclass
from typing import Callable

import jax.numpy as jnp
import mpmath
import numpy as np

from ..engines.cubature import Cubature
from ..engines.pagani import Pagani

FAMILIES = ("oscillatory", "product_peak", "corner_peak", "gaussian", "c0", "discontinuous")


@dataclass(frozen=True)
class Member:
    """One integrand of a family: ``f(x[n, d]) -> [n]`` (jax.numpy), its exact integral over
    the unit cube, and its parameters."""

    f: Callable
    exact: float
    a: np.ndarray
    u: np.ndarray


def family(name: str, d: int, draw: int) -> Member:
    """The member ``draw`` of family ``name`` in ``d`` dimensions, its parameters drawn from a
    generator seeded by ``(name, d, draw)``."""
    rng = np.random.default_rng([FAMILIES.index(name), d, draw])
    u = rng.uniform(0.1, 0.9, d)
    band = rng.uniform(0.5, 1.5, d)
    f, a, exact = _member(name, d, u, band)
    return Member(f, exact, a, u)


def _member(name: str, d: int, u: np.ndarray, band: np.ndarray):
    """``(f, a, exact)`` of family ``name`` with location ``u`` and difficulty band."""
    with mpmath.workdps(30):
        if name == "oscillatory":
            a = band * 9.0 / d**0.5
            z = mpmath.exp(2j * mpmath.pi * u[0])
            for ai in a:
                z *= (mpmath.exp(1j * ai) - 1) / (1j * ai)
            return (lambda x: jnp.cos(2 * jnp.pi * u[0] + x @ a)), a, float(mpmath.re(z))
        if name == "product_peak":
            a = band * 7.0 / d**0.25
            v = mpmath.mpf(1)
            for ai, ui in zip(a, u):
                v *= ai * (mpmath.atan(ai * (1 - ui)) + mpmath.atan(ai * ui))
            return (lambda x: jnp.prod(1.0 / (a**-2.0 + (x - u) ** 2), axis=1)), a, float(v)
        if name == "corner_peak":
            # inclusion-exclusion over the vertices of the cube
            a = band * 1.5 / d**0.5
            total = mpmath.mpf(0)
            for mask in range(1 << d):
                s = 1 + mpmath.fsum(mpmath.mpf(a[i]) for i in range(d) if mask >> i & 1)
                total += (-1) ** bin(mask).count("1") / s
            v = total / (mpmath.factorial(d) * mpmath.fprod(mpmath.mpf(x) for x in a))
            return (lambda x: (1.0 + x @ a) ** (-(d + 1))), a, float(v)
        if name == "gaussian":
            a = band * 6.0 / d**0.5
            v = mpmath.mpf(1)
            for ai, ui in zip(a, u):
                v *= (mpmath.sqrt(mpmath.pi) / (2 * ai)
                      * (mpmath.erf(ai * (1 - ui)) + mpmath.erf(ai * ui)))
            return (lambda x: jnp.exp(-jnp.sum(a**2 * (x - u) ** 2, axis=1))), a, float(v)
        if name == "c0":
            a = band * 5.0 / d**0.5
            v = mpmath.mpf(1)
            for ai, ui in zip(a, u):
                v *= (2 - mpmath.exp(-ai * ui) - mpmath.exp(-ai * (1 - ui))) / ai
            return (lambda x: jnp.exp(-jnp.sum(a * jnp.abs(x - u), axis=1))), a, float(v)
        if name == "discontinuous":
            a = band * 2.0 / d**0.5
            v = mpmath.mpf(1)
            for i, ai in enumerate(a):
                v *= (mpmath.exp(ai * (u[i] if i < 2 else 1.0)) - 1) / ai
            return (lambda x: jnp.where((x[:, 0] > u[0]) | (x[:, 1] > u[1]), 0.0,
                                        jnp.exp(x @ a))), a, float(v)
    raise ValueError(f"family must be one of {FAMILIES}, got {name!r}")


def engine(method: str, name: str):
    """The engine of a run: cubature with every sweep taken, or PAGANI with its default rule
    (the relative-error filtering off for the oscillatory family, which changes sign)."""
    if method == "cubature":
        return Cubature(defer_sweeps=False)
    if method == "pagani":
        return Pagani(relerr_filtering=name != "oscillatory")
    raise ValueError(f"method must be cubature or pagani, got {method!r}")


def run_one(name: str, d: int, rtol: float, draw: int, max_evals: float,
            method: str = "cubature") -> dict:
    """One run of one member (module docstring), with its true error."""
    m = family(name, d, draw)
    exact = m.exact
    t0 = time.perf_counter()
    r = engine(method, name).integrate_box(m.f, np.zeros(d), np.ones(d), rtol=rtol,
                                           max_evals=max_evals)
    true = abs(float(r.value) - exact) / abs(exact)
    est = float(r.error) / abs(exact)
    return {"family": name, "method": method, "d": d, "rtol": rtol, "draw": draw,
            "converged": bool(r.converged),
            "true_error": true, "error": est,
            "honest": bool(true <= est and (not r.converged or true <= rtol)),
            "evaluations": int(r.evaluations), "sweeps": r.info.get("sweeps"),
            "error_estimate": r.info.get("error_estimate"),
            "seconds": round(time.perf_counter() - t0, 2)}


def summary(runs: list[dict]) -> list[dict]:
    """Per family and dimension: runs, converged, honest, largest true error / estimate."""
    out = []
    for (name, d), group in itertools.groupby(
            sorted(runs, key=lambda r: (FAMILIES.index(r["family"]), r["d"])),
            key=lambda r: (r["family"], r["d"])):
        g = list(group)
        out.append({"case": f"{name}, {d}-D", "method": g[0].get("method", "cubature"),
                    "runs": len(g),
                    "converged": sum(r["converged"] for r in g),
                    "honest": sum(r["honest"] for r in g),
                    "worst true/est": max(r["true_error"] / r["error"] if r["error"] else np.inf
                                          for r in g)})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--dims", default="3,5,6,8")
    ap.add_argument("--rtols", default="1e-6,1e-8,1e-10")
    ap.add_argument("--draws", type=int, default=2)
    ap.add_argument("--max-evals", type=float, default=5e7)
    ap.add_argument("--method", default="cubature", choices=("cubature", "pagani"))
    ap.add_argument("--json", default=None, help="write every run's row here")
    a = ap.parse_args(argv)
    runs = []
    for name, d, rtol, draw in itertools.product(
            a.families.split(","), [int(x) for x in a.dims.split(",")],
            [float(x) for x in a.rtols.split(",")], range(a.draws)):
        runs.append(run_one(name, d, rtol, draw, a.max_evals, a.method))
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(runs, fh, indent=1)
    from . import format_table
    print(format_table(summary(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
