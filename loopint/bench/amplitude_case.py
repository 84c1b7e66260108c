"""Benchmark row: an amplitude evaluated with a shared error budget against the same
integrals each computed to the sum's relative tolerance.

    python -m loopint.bench.amplitude_case [--rtol R] [--method M] [--file F]
    loopint bench --suite amplitude

The comparison is the one a user without :mod:`loopint.amplitude` would make: every integral
at ``rtol`` (relative to itself), whose errors then add up to at most rtol * sum |c_i I_i|
(the sum's tolerance whenever the terms do not cancel).  Both runs follow a warm-up run of
every integral, so ``seconds`` counts integration, not compilation; ``evaluations`` are the
integrand evaluations of all runs (the amplitude's pilots included).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from ..amplitude import amplitude, load_amplitude
from ..compute import compute
from ..result import device_name, scale_error

HERE = os.path.dirname(__file__)
FILE = os.path.normpath(os.path.join(HERE, "..", "..", "diagrams", "amplitude",
                                     "amplitude_box_triangles.toml"))


def each_at_rtol(amp, rtol: float, **overrides) -> dict:
    """Every integral of ``amp`` computed at relative tolerance ``rtol``: the sum, its error
    bound and the evaluations."""
    t0 = time.perf_counter()
    value, error, evaluations = 0j, 0j, 0
    for t in amp.terms:
        c = complex(t.expr.subs({s: amp.kinematics[str(s)] for s in t.expr.free_symbols}))
        r = compute(t.problem, rtol=rtol, atol=0.0, **{**amp.overrides, **overrides})
        value += c * complex(r.value)
        error += complex(scale_error(np.asarray(r.error), c))
        evaluations += r.evaluations
    return {"value": value, "error": error, "evaluations": evaluations,
            "seconds": time.perf_counter() - t0}


def row(path: str = FILE, rtol: float | None = None, method: str | None = None) -> dict:
    """The benchmark row of the amplitude file ``path`` (its own rtol unless given)."""
    amp = load_amplitude(path)
    rtol = rtol or amp.rtol
    over = {"method": method} if method else {}
    each_at_rtol(amp, rtol, **over)                      # warm-up: compile every integrand
    ref = each_at_rtol(amp, rtol, **over)
    r = amplitude(amp, rtol=rtol, **over)
    return {"case": f"amplitude {amp.name} ({len(amp.terms)} integrals)",
            "method": "+".join(sorted({t.result.method for t in r.terms if t.result})),
            "rtol": rtol, "value": complex(r.value), "error": complex(r.error),
            "tolerance": float(r.tolerance), "converged": r.converged,
            "evaluations": r.evaluations, "seconds": r.seconds,
            "each_at_rtol_evaluations": ref["evaluations"], "each_at_rtol_seconds": ref["seconds"],
            "each_at_rtol_value": ref["value"], "each_at_rtol_error": ref["error"],
            "ratio": r.evaluations / ref["evaluations"],
            "difference": abs(complex(r.value) - ref["value"]), "device": device_name()}


def run(quick: bool = False) -> list[dict]:
    """The rows of ``loopint bench --suite amplitude``: the bundled amplitude at rtol 1e-6 and
    1e-8 (``quick``: 1e-6), each integral's default engine and QMC."""
    return [row(FILE, rtol, method) for rtol in ((1e-6,) if quick else (1e-6, 1e-8))
            for method in (None, "qmc")]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m loopint.bench.amplitude_case",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--file", default=FILE, help="amplitude file (default: the bundled one)")
    p.add_argument("--rtol", type=float, action="append",
                   help="tolerance of the sum (repeat for several rows; default: the file's)")
    p.add_argument("--method", help="engine for every integral (default: each file's)")
    p.add_argument("--json", metavar="OUT", help="write the rows as JSON")
    a = p.parse_args(argv)
    rows = [row(a.file, r, a.method) for r in (a.rtol or [None])]
    cols = ("rtol", "method", "converged", "evaluations", "each_at_rtol_evaluations", "ratio",
            "seconds", "each_at_rtol_seconds", "error", "tolerance", "difference")
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(f"{abs(r[c]):.3g}" if isinstance(r[c], complex) else
                         f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c])
                         for c in cols))
    if a.json:
        from ..io import write_json_atomic
        write_json_atomic(a.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
