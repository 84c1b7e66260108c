"""Compilation per step of a delta sequence: every step binds the integrand anew (new deltas,
same shapes), so after the first step no kernel should be traced or compiled again.

One row per reported step of ``loopint.compute(problem, contour="none")`` on the two-loop ladder
vertex at k^2/m_t^2 = 5 (seed 000's physical example, ``diagrams/ladder_vertex_2L_k5.toml``):
the step's wall time, the part of it the computation spent tracing, lowering and compiling
(JAX's ``/jax/core/compile/`` events in the computing thread), and the compilation done ahead
of need in the engines' background thread (:data:`loopint.engines.regions.AHEAD`, overlapping
the computation), in a process that has not compiled this diagram before.

    python -m loopint.bench.delta_compiles [--rtol 1e-5] [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ..compute import compute, device_name
from ..problem import load
from ..timing import compile_clock

STREAMS_ROWS = False
DIAGRAM = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "diagrams",
                                        "ladder_vertex_2L_k5.toml"))


def run(quick: bool = False, rtol: float | None = None) -> list[dict]:
    """Rows ``{case, delta, n, seconds, compile_seconds, evaluations, ...}``, one per step."""
    problem = load(DIAGRAM)
    rtol = rtol if rtol is not None else (1e-3 if quick else 1e-5)
    rows: list[dict] = []
    last = {"t": time.perf_counter(), "compile": 0.0, "ahead": 0.0, "evaluations": 0}
    with compile_clock() as compiled:
        def progress(event: dict) -> None:
            if event.get("stage") != "delta":
                return
            now = time.perf_counter()
            rows.append({
                "case": f"ladder k5 delta step {event['n']}", "method": "delta sequence",
                "value": complex(np.ravel(event["value"])[0]),
                "error": complex(np.ravel(event["error"])[0]),
                "true_error": None, "delta": event["delta"],
                "evaluations": int(event["evaluations"] - last["evaluations"]),
                "seconds": now - last["t"], "compile_seconds": compiled.waited - last["compile"],
                "compile_ahead_seconds": compiled.ahead - last["ahead"],
                "device": device_name()})
            last.update(t=now, compile=compiled.waited, ahead=compiled.ahead,
                        evaluations=event["evaluations"])

        r = compute(problem, contour="none", rtol=rtol, progress=progress)
    for row in rows:
        row["status"] = r.status
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--json", help="write the rows as JSON")
    a = ap.parse_args(argv)
    rows = run(rtol=a.rtol)
    print(f"{'step':>4} {'delta':>10} {'seconds':>9} {'compile s':>9} {'ahead s':>9} "
          f"{'evaluations':>12}")
    for row in rows:
        print(f"{row['case'].split()[-1]:>4} {row['delta']:10.4g} {row['seconds']:9.3f} "
              f"{row['compile_seconds']:9.3f} {row['compile_ahead_seconds']:9.3f} "
              f"{row['evaluations']:12.3g}")
    print(f"status: {rows[-1]['status'] if rows else 'no delta steps'}")
    if a.json:
        from ..io import write_json_atomic
        write_json_atomic(a.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
