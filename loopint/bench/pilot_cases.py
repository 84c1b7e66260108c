"""Benchmark of ``method = "auto"`` at Euclidean points of three or more dimensions: the
lattice, cubature, and the engine :class:`loopint.engines.Pilot` picks after short runs of both.

Cases (the last two are bundled files, the others not): smooth integrands, where
the lattice converges several times faster, and scale hierarchies, where cubature does:

* ``ladder-tri-small``: the massless two-loop ladder triangle with virtualities
  (1e-4, 0.5, 1), rtol 1e-6;
* ``ladder-tri``: the same at (3, 5, 1), rtol 1e-8;
* ``kite``: the two-loop self-energy with five massive lines (1, 1, 0.3, 1, 1) at p^2 = -2,
  rtol 1e-8;
* ``box-m1e3-m1e-3``, ``box-m30-m1e-2``: the one-loop box with alternating masses at
  Euclidean kinematics, rtol 1e-8;
* ``box-p1-1e-6``: the massless box of ``diagrams/box_massless_offshell.toml`` with one
  virtuality 1e-6 and the others of order one, rtol 1e-8;
* ``ladder_vertex_2L_k1`` (rtol 1e-6) and ``elliptic2L_euclidean`` (rtol 1e-8), bundled.

Each engine runs twice: ``first_call`` is the first call's time (compilation included),
``seconds`` the second's; a forced engine stops at ``--max-evals`` (default 5e7).  ``spread``
is the largest difference between the engines' converged values in units of their combined
error estimates.

    python -m loopint.bench.pilot_cases [--max-evals N] [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from ..compute import compute, device_name
from ..diagram import Diagram
from ..problem import load
from . import format_table

HERE = os.path.dirname(__file__)
DIAGRAMS = os.path.normpath(os.path.join(HERE, "..", "..", "diagrams"))

# The massless two-loop ladder triangle: apex 1 (p3), sides 1-2-3 and 1-4-5, rungs 2-4 and
# 3-5, legs p1 at 3 and p2 at 5 with p_i^2 = -P_i.
LADDER_TRIANGLE = dict(
    internal_lines=[["0", [1, 2]], ["0", [2, 3]], ["0", [1, 4]], ["0", [4, 5]], ["0", [3, 5]],
                    ["0", [2, 4]]],
    external_lines=[["p1", 3], ["p2", 5], ["p3", 1]],
    scalar_products={"p1*p1": "-P1", "p2*p2": "-P2", "p1*p2": "(P1 + P2 - P3)/2"})
KITE = dict(
    internal_lines=[["m", [1, 2]], ["m", [1, 3]], ["M", [2, 3]], ["m", [2, 4]], ["m", [3, 4]]],
    external_lines=[["p", 1], ["q", 4]], scalar_products={"p*p": "-s"})
BOX = dict(
    internal_lines=[["m", [4, 1]], ["M", [1, 2]], ["m", [2, 3]], ["M", [3, 4]]],
    external_lines=[["p1", 1], ["p2", 2], ["p3", 3], ["p4", 4]],
    scalar_products={"p1*p1": "p1sq", "p2*p2": "p2sq", "p3*p3": "p3sq",
                     "p1*p2": "(s - p1sq - p2sq)/2", "p2*p3": "(t - p2sq - p3sq)/2",
                     "p1*p3": "(p4sq - s - t + p2sq)/2"})
EUCLIDEAN_BOX = dict(p1sq=-1.0, p2sq=-2.0, p3sq=-3.0, p4sq=-4.0, s=-5.0, t=-6.0)


def cases() -> list:
    """(name, target, kinematics, rtol, methods)."""
    tri = Diagram.from_graph(**LADDER_TRIANGLE, name="ladder-triangle-2L")
    kite = Diagram.from_graph(**KITE, name="kite-2L")
    box = Diagram.from_graph(**BOX, name="box-1L-massive")
    massless = load(os.path.join(DIAGRAMS, "box_massless_offshell.toml"))
    k1 = load(os.path.join(DIAGRAMS, "ladder_vertex_2L_k1.toml"))
    elliptic = load(os.path.join(DIAGRAMS, "elliptic2L_euclidean.toml"))
    cube = ("cubature", "qmc", "auto")
    three = ("iterated",) + cube
    return [
        ("ladder-tri-small", tri, dict(P1=1e-4, P2=0.5, P3=1.0), 1e-6, cube),
        ("ladder-tri", tri, dict(P1=3.0, P2=5.0, P3=1.0), 1e-8, cube),
        ("kite", kite, dict(s=2.0, m=1.0, M=0.3), 1e-8, cube),
        ("box-m1e3-m1e-3", box, dict(EUCLIDEAN_BOX, m=1e3, M=1e-3), 1e-8, three),
        ("box-m30-m1e-2", box, dict(EUCLIDEAN_BOX, m=30.0, M=1e-2), 1e-8, three),
        ("box-p1-1e-6", massless, dict(EUCLIDEAN_BOX, p1sq=-1e-6), 1e-8, three),
        ("ladder_vertex_2L_k1", k1, dict(k1.kinematics), 1e-6, cube),
        ("elliptic2L_euclidean", elliptic, dict(elliptic.kinematics), 1e-8, cube),
    ]


def run(max_evals: float = 5e7) -> list[dict]:
    rows = []
    for name, target, kin, rtol, methods in cases():
        runs = {}
        for method in methods:
            budget = {} if method == "auto" else {"max_evals": max_evals}
            t = time.perf_counter()
            compute(target, kin, method=method, rtol=rtol, **budget)
            first = time.perf_counter() - t
            t = time.perf_counter()
            r = compute(target, kin, method=method, rtol=rtol, **budget)
            seconds = time.perf_counter() - t
            runs[method] = r
            pilot = (r.info.get("direct", {}).get("engine_info", {}).get("pilot")
                     if method == "auto" else None)
            rows.append({"case": name, "method": method, "rtol": rtol,
                         "chosen": r.method if method == "auto" else None,
                         "converged": bool(r.converged), "value": complex(r.value),
                         "error": float(abs(complex(r.error)) / abs(complex(r.value))),
                         "evaluations": int(r.evaluations), "seconds": seconds,
                         "first_call": first,
                         "pilot": pilot, "device": device_name()})
            print(format_table(rows[-1:], header=len(rows) == 1), flush=True)
        ok = [r for r in runs.values() if r.converged]
        spread = max((abs(complex(a.value) - complex(b.value))
                      / (abs(complex(a.error)) + abs(complex(b.error)))
                      for a in ok for b in ok if a is not b), default=0.0)
        for row in rows[-len(methods):]:
            row["spread"] = float(spread)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-evals", type=float, default=5e7,
                    help="budget of a forced engine (default 5e7)")
    ap.add_argument("--json", help="write the rows to this JSON file")
    a = ap.parse_args(argv)
    rows = run(a.max_evals)
    print()
    print(format_table([{k: v for k, v in r.items() if k != "pilot"} for r in rows]))
    if a.json:
        from ..io import write_json_atomic
        write_json_atomic(a.json, {"rows": [{**r, "value": [r["value"].real, r["value"].imag]}
                                            for r in rows]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
