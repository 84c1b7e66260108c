"""Benchmark cases from the seeds' physics: bundled diagrams through :func:`loopint.compute`.

Cheap cases run twice: a warm-up that compiles every kernel, then the timed run (``seconds``);
``compile_seconds`` is the warm-up's excess over the timed run.  The two expensive cases
(``once``) run a single time: their compilation is measured from JAX's compile events
(tracing, lowering and XLA compilation, summed) and ``seconds`` is the wall time minus that.
"""

from __future__ import annotations

import os
import sys
import time

from ..compute import compute, device_name
from ..problem import load
from ..timing import compile_clock

STREAMS_ROWS = True   # run() prints its rows itself (loopint.bench.run_suite)
HERE = os.path.dirname(__file__)
DIAGRAMS = os.path.normpath(os.path.join(HERE, "..", "..", "diagrams"))

# (case, file, overrides for the full run, overrides for --quick, once, seed's figure).
# Budgets keep the whole suite within 10 minutes on one H200: the pentagon by the DCM gets
# the seed's "15-ish" delta values (16).  The pentagon and the k2/mt2 = 5 ladder run both
# ways: by the DCM (the ladder by cubature over the decomposed sectors, loopint.sectors, with
# the cubature's global error estimate; its smallest deltas reach the memory bound and enter
# with their errors) and on the deformed contour.  A case that runs out of budget is
# reported as not converged.
CASES = [
    ("C0 above threshold (DCM)", "triangle_above_threshold.toml",
     {"rtol": 1e-6, "contour": "none"}, {"rtol": 1e-4, "contour": "none"}, False, None),
    ("pentagon gg->ttH (DCM)", "pentagon_ggttH.toml",
     {"rtol": 1e-5, "max_evals": 10**11, "delta_terms": 16, "contour": "none"}, None, True,
     "seed 000: 2726 s sequential, 287 s on 12 threads, ~5 digits"),
    ("pentagon gg->ttH (contour)", "pentagon_ggttH.toml",
     {"rtol": 1e-7, "contour": "deform", "method": "cubature", "max_evals": 10**10}, None, False,
     None),
    ("ladder vertex k2/mt2=1 (delta=0)", "ladder_vertex_2L_k1.toml",
     {"rtol": 1e-8, "max_evals": 5 * 10**10}, {"rtol": 1e-4}, False, None),
    ("ladder vertex k2/mt2=5 (DCM)", "ladder_vertex_2L_k5.toml",
     {"rtol": 1e-5, "max_evals": 10**11, "delta_terms": 16, "contour": "none"}, None, True,
     "seed 000 (DCM): 25800 s sequential, 3897 s on 24 threads"),
    ("ladder vertex k2/mt2=5 (contour)", "ladder_vertex_2L_k5.toml",
     {"rtol": 1e-5, "contour": "deform", "method": "qmc", "max_evals": 10**11}, None, False,
     "seed 000 (DCM): 25800 s sequential, 3897 s on 24 threads; pySecDec 188 s on 2 cores"),
    ("Table 5.1 integral (cubature)", "table51_2L.toml", {"rtol": 1e-8, "method": "cubature"},
     {"rtol": 1e-5, "method": "cubature"}, False, None),
]

def _row(case, r, ref, compile_seconds, note):
    v = complex(r.value)
    return {
        "case": case, "method": r.method, "value": v, "error": complex(r.error),
        "true_error": abs(v - ref.value) if ref is not None else None,
        "reference_error": ref.error if ref is not None else None,
        "evaluations": int(r.evaluations), "seconds": r.seconds,
        "compile_seconds": compile_seconds, "evals_per_s": r.evaluations / max(r.seconds, 1e-12),
        "device": device_name(), "converged": r.converged, "status": r.status,
        "delta_terms": len(r.table), "note": note,
    }


def run(quick: bool = False, only: str | None = None) -> list[dict]:
    rows = []
    for case, fname, full, small, once, note in CASES:
        if only is not None and only not in case:
            continue
        if quick and small is None:
            continue
        kw = small if quick else full
        p = load(os.path.join(DIAGRAMS, fname))
        if once:
            with compile_clock() as c:
                r = compute(p, **kw)
            compiling = min(c.waited, r.seconds)
            r.seconds -= compiling
        else:
            t0 = time.perf_counter()
            compute(p, **kw)                  # warm-up: compiles every kernel the run needs
            warm = time.perf_counter() - t0
            r = compute(p, **kw)
            compiling = max(0.0, warm - r.seconds)
        rows.append(_row(case, r, p.reference, compiling, note))
        # each row as soon as it exists: a long suite that is cut short keeps its rows
        from . import format_table
        print(format_table(rows[-1:], header=False), file=sys.stderr, flush=True)
    return rows
