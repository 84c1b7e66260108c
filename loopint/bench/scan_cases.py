"""Benchmark of phase-space scans: points per second of one batched :func:`loopint.compute`.

Three scans with the default methods (Euclidean points directly as one vector integrand,
physical points on their deformed contours, batched; :func:`loopint.contour.contour_points`):

* ``triangle``: C0(0,0,s;m,m,m) over s/m^2 in [-10, 20], across its threshold at 4, rtol 1e-6;
* ``box``: the one-loop box with four equal masses and massless legs, s/m^2 in [-10, 10] at
  t/m^2 = -2 (threshold at 4), rtol 1e-6;
* ``ladder``: the two-loop massive ladder vertex of seed 000 (``diagrams/ladder_vertex_2L_k1``)
  over k^2/m_t^2 in [0.5, 8], through its thresholds, rtol 1e-4.

Each scan runs twice (the first compiles); ``seconds`` is the second run.  At a sample of
points (every ``len // 4``-th and the last) a single-point run at rtol / 100 is the reference:
``true/tol`` is the largest true error of a converged point in units of its tolerance (must
be <= 1) and ``honest`` whether every sampled true error is within 3 times its estimate.

    python -m loopint.bench.scan_cases [--quick] [--points N N N]     (--quick: no ladder)
    python -m loopint.bench.scan_cases --direct      (Euclidean points: iterated and cubature)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from ..compute import compute, device_name
from ..diagram import Diagram
from ..problem import load

HERE = os.path.dirname(__file__)
DIAGRAMS = os.path.normpath(os.path.join(HERE, "..", "..", "diagrams"))

BOX = dict(internal_lines=[["m", [1, 2]], ["m", [2, 3]], ["m", [3, 4]], ["m", [4, 1]]],
           external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
           scalar_products={"p1*p1": "0", "p2*p2": "0", "p3*p3": "0",
                            "p1*p2": "s/2", "p2*p3": "t/2", "p1*p3": "-(s + t)/2"})


def _cases(points: tuple) -> list:
    """(name, target, fixed kinematics, scanned symbol, values, rtol)."""
    tri = load(os.path.join(DIAGRAMS, "triangle_below_threshold.toml"))
    ladder = load(os.path.join(DIAGRAMS, "ladder_vertex_2L_k1.toml"))
    box = Diagram.from_graph(**BOX, name="box-1L-massive")
    return [("triangle", tri, {"m": 1.0}, "s", np.linspace(-10.0, 20.0, points[0]), 1e-6),
            ("box", box, {"m": 1.0, "t": -2.0}, "s", np.linspace(-10.0, 10.0, points[1]), 1e-6),
            ("ladder", ladder, {"mt": 1.0, "mZ": ladder.kinematics["mZ"]}, "k2",
             np.linspace(0.5, 8.0, points[2]), 1e-4)]


def _sample_check(target, fixed: dict, name: str, values, r, rtol: float) -> tuple:
    """The largest true error / tolerance of converged sampled points, and honesty."""
    ok = np.asarray(r.info.get("point_converged") or [r.converged] * len(values))
    idx = sorted(set(range(0, len(values), max(len(values) // 4, 1))) | {len(values) - 1})
    worst, honest = 0.0, True
    for i in idx:
        ref = compute(target, {**fixed, name: float(values[i])}, rtol=rtol / 100)
        true = abs(complex(r.value[i]) - complex(ref.value))
        if ok[i]:
            worst = max(worst, true / (rtol * abs(complex(r.value[i]))))
        honest &= true <= 3 * abs(complex(r.error[i])) + abs(complex(ref.error))
    return worst, honest


def run(quick: bool = False, points: tuple | None = None) -> list[dict]:
    from . import format_table
    points = points or ((60, 20, 0) if quick else (1000, 200, 40))
    rows = []
    for name, target, fixed, symbol, values, rtol in _cases(points):
        if not len(values):
            continue
        kin = {**fixed, symbol: values}
        t0 = time.perf_counter()
        compute(target, kin, rtol=rtol)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = compute(target, kin, rtol=rtol)
        seconds = time.perf_counter() - t0
        worst, honest = _sample_check(target, fixed, symbol, values, r, rtol)
        ok = np.asarray(r.info.get("point_converged") or [r.converged] * len(values))
        physical = int(sum(1 for x in np.atleast_1d(r.region) if x == "physical"))
        rows.append({"case": f"scan {name} ({len(values)} points, {physical} physical)",
                     "method": r.method, "rtol": rtol, "converged": int(ok.sum()),
                     "evaluations": int(r.evaluations), "seconds": seconds,
                     "compile_seconds": max(first - seconds, 0.0),
                     "points_per_s": len(values) / seconds, "true/tol": worst,
                     "honest": honest, "device": device_name()})
        print(format_table(rows[-1:], header=len(rows) == 1), flush=True)
    return rows


def run_direct(points: tuple = (300, 100), rtols: tuple = (1e-6, 1e-9)) -> list[dict]:
    """Euclidean points only (s/m^2 in [-10, 3.9]) of the triangle and box scans as one vector
    integrand, by the iterated engine and by cubature (the choice of ``method="auto"`` for
    several points, :func:`loopint.engines.choose_method`): the second run's seconds, and
    the largest difference of the two in units of rtol |value|."""
    from . import format_table
    rows = []
    for (name, target, fixed, symbol, _, _), n in zip(_cases((1, 1, 0))[:2], points):
        kin = {**fixed, symbol: np.linspace(-10.0, 3.9, n)}
        for rtol in rtols:
            out = {}
            for method in ("iterated", "cubature"):
                compute(target, kin, rtol=rtol, method=method)
                t0 = time.perf_counter()
                out[method] = r = compute(target, kin, rtol=rtol, method=method)
                seconds = time.perf_counter() - t0
                rows.append({"case": f"{name}, {n} Euclidean points", "rtol": rtol,
                             "method": method, "converged": int(np.sum(r.info["point_converged"])),
                             "evaluations": int(r.evaluations), "seconds": seconds,
                             "device": device_name()})
            a, b = out["iterated"].value, out["cubature"].value
            rows[-1]["ratio"] = rows[-2]["seconds"] / rows[-1]["seconds"]
            rows[-1]["diff/tol"] = float(np.max(np.abs(a - b) / (rtol * np.abs(a))))
    print(format_table(rows), flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--points", type=int, nargs=3, metavar=("TRIANGLE", "BOX", "LADDER"))
    ap.add_argument("--direct", action="store_true",
                    help="the Euclidean points by the iterated engine and by cubature")
    a = ap.parse_args(argv)
    if a.direct:
        run_direct()
    else:
        run(a.quick, tuple(a.points) if a.points else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
