"""Benchmark cases of dimensional regularization: Laurent coefficients in D = 4 - 2 eps.

The cases of ``tests/dimreg_points.py`` (bubbles, massless triangles and boxes, pySecDec's
box1L and triangle2L examples, two-loop sunrises, the massless two-loop planar and crossed
vertices; Euclidean and physical) through :func:`loopint.compute` with default settings at
``rtol`` 1e-6 (one loop) and 1e-4 (two loops) (``quick``: 1e-4, 1e-3), plus the issue's goal
rows: the on-shell massless box to 1e-8 and the planar two-loop vertex to 1e-5.  References:
closed forms and mpmath integrals, or pySecDec 1.6.6 (``tests/data/dimreg_references.json``).
Per row: the largest relative true error over the coefficients (relative to the largest
|c_j|; nan where no reference was generated), the largest reported error (same scale), whether every coefficient's true error is
within 5 times its reported error, evaluations and seconds.  Each case runs twice (the first
run compiles; ``seconds`` is the second, ``compile_seconds`` the difference).

    python -m loopint.bench.dimreg_cases [--quick] [--only TEXT]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

from ..compute import compute, device_name
from ..diagram import Diagram

STREAMS_ROWS = True
HERE = os.path.dirname(__file__)
TESTS = os.path.normpath(os.path.join(HERE, "..", "..", "tests"))
RTOL = {False: {1: 1e-6, 2: 1e-4}, True: {1: 1e-4, 2: 1e-3}}
GOALS = (("D0_eucl", 1e-8), ("D0_phys", 1e-8), ("V2P_eucl", 1e-5))


def points_module():
    path = os.path.join(TESTS, "dimreg_points.py")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: the dimensional-regularization test set is read "
                                "from the source checkout (tests/dimreg_points.py)")
    spec = importlib.util.spec_from_file_location("dimreg_points", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _diagram(pp, case) -> Diagram:
    return Diagram.from_graph(internal_lines=case["internal_lines"],
                              external_lines=case["external_lines"],
                              scalar_products=case["scalar_products"], powers=case["powers"],
                              dimension=pp.DIMENSION, name=case["name"])


def _row(case, rtol, r, ref, warm_up_seconds):
    if ref is None:
        ref = {j: complex("nan") for j in r.coefficients}
    scale = max(abs(v) for v in r.coefficients.values())
    true = {j: abs(r.coefficients[j] - ref[j]) for j in ref}
    est = {j: abs(r.coefficient_errors[j].real) + abs(r.coefficient_errors[j].imag) for j in ref}
    return {"case": f"{case['name']} rtol {rtol:g}", "method": r.method,
            "value": complex(r.value), "error": complex(r.error),
            "true_error": max(true.values()) / scale, "error_estimate": max(est.values()) / scale,
            "honest": all(true[j] <= 5 * est[j] + 1e-13 * scale for j in ref),
            "orders": f"{min(ref)}..{max(ref)}", "evaluations": int(r.evaluations),
            "seconds": r.seconds, "compile_seconds": max(warm_up_seconds - r.seconds, 0.0),
            "evals_per_s": r.evaluations / max(r.seconds, 1e-12), "device": device_name(),
            "converged": r.converged, "region": r.region}


def run(quick: bool = False, only: str | None = None) -> list[dict]:
    pp = points_module()
    from . import format_table
    todo = [(c, RTOL[quick][c["loops"]]) for c in pp.CASES]
    if not quick:
        todo += [(pp.CASES_BY_NAME[name], rtol) for name, rtol in GOALS]
    rows = []
    for case, rtol in todo:
        if only is not None and only not in case["name"]:
            continue
        try:
            ref, _, _ = pp.reference(case)
        except KeyError:                # a pySecDec reference not generated: timing only
            ref = None
        d = _diagram(pp, case)
        kw = dict(eps_order=case["eps_order"], rtol=rtol)
        t0 = time.perf_counter()
        compute(d, case["kinematics"], **kw)
        first = time.perf_counter() - t0
        r = compute(d, case["kinematics"], **kw)
        row = _row(case, rtol, r, ref, first)
        rows.append(row)
        print(format_table([row], header=len(rows) == 1), flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only")
    a = ap.parse_args(argv)
    run(a.quick, a.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
