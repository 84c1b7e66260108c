"""Benchmark cases from the seeds' physics: DCM runs of bundled diagrams.

Each case is run twice: a warm-up (compiles the kernels; its time is reported as
``compile_seconds``, compilation included) and the timed run (``seconds``).
"""

from __future__ import annotations

import os
import sys
import time


from ..compute import compute, device_name
from ..problem import load

STREAMS_ROWS = True   # run() prints its rows itself (loopint.bench.run_suite)
HERE = os.path.dirname(__file__)
DIAGRAMS = os.path.normpath(os.path.join(HERE, "..", "..", "diagrams"))

# (case, file, overrides for the full run, overrides for --quick, seed's published figure).
# Budgets keep the whole suite within 10 minutes on one H200 (warm-ups included): the pentagon
# gets the seed's "15-ish" delta values (16), the k2/mt2 = 5 ladder a budget that shows where it
# stands (its first delta step alone needs more than 1e11 evaluations); a case that runs out
# of budget is reported as not converged, with its honest error.
CASES = [
    ("C0 above threshold (DCM)", "triangle_above_threshold.toml", {"rtol": 1e-6}, {"rtol": 1e-4}, None),
    ("pentagon gg->ttH (DCM)", "pentagon_ggttH.toml",
     {"rtol": 1e-5, "max_evals": 10**11, "delta_terms": 16}, None,
     "seed 000: 2726 s sequential, 287 s on 12 threads, ~5 digits"),
    ("ladder vertex k2/mt2=1 (delta=0)", "ladder_vertex_2L_k1.toml",
     {"rtol": 1e-8, "max_evals": 5 * 10**10}, {"rtol": 1e-4}, None),
    ("ladder vertex k2/mt2=5 (DCM)", "ladder_vertex_2L_k5.toml", {"rtol": 1e-4, "max_evals": 2 * 10**9},
     None, "seed 000: 25800 s sequential, 3897 s on 24 threads"),
    ("Table 5.1 integral (cubature)", "table51_2L.toml", {"rtol": 1e-8, "method": "cubature"},
     {"rtol": 1e-5, "method": "cubature"}, None),
]


def _row(case, r, ref, warm_seconds, note):
    v = complex(r.value)
    return {
        "case": case, "method": r.method, "value": v, "error": complex(r.error),
        "true_error": abs(v - ref.value) if ref is not None else None,
        "reference_error": ref.error if ref is not None else None,
        "evaluations": int(r.evaluations), "seconds": r.seconds,
        "compile_seconds": warm_seconds, "evals_per_s": r.evaluations / max(r.seconds, 1e-12),
        "device": device_name(), "converged": r.converged, "status": r.status,
        "delta_terms": len(r.table), "note": note,
    }


def run(quick: bool = False, only: str | None = None) -> list[dict]:
    rows = []
    for case, fname, full, small, note in CASES:
        if only is not None and only not in case:
            continue
        if quick and small is None:
            continue
        kw = small if quick else full
        p = load(os.path.join(DIAGRAMS, fname))
        t0 = time.perf_counter()
        compute(p, **kw)                      # warm-up: compiles every kernel the run needs
        warm = time.perf_counter() - t0
        r = compute(p, **kw)
        rows.append(_row(case, r, p.reference, warm, note))
        # each row as soon as it exists: a long suite that is cut short keeps its rows
        from . import format_table
        print(format_table(rows[-1:], header=False), file=sys.stderr, flush=True)
    return rows
