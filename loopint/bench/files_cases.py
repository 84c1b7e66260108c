"""Benchmark rows for every bundled diagram file with the package's defaults, as a user runs it.

``cold`` is ``loopint compute FILE`` in a fresh process with an empty compilation cache (the
first command of a new user: Python start, imports, tracing, compilation, integration);
``seconds`` is a second :func:`loopint.compute` of the same file in this process, after a
first one (warm kernels).  ``true_error`` is measured against the file's ``[reference]``.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
import time


from ..compute import compute, device_name
from ..problem import load

STREAMS_ROWS = True
HERE = os.path.dirname(__file__)
DIAGRAMS = os.path.normpath(os.path.join(HERE, "..", "..", "diagrams"))


def _cold(path: str) -> tuple[float, dict]:
    """Wall time of ``loopint compute path`` in a new process with an empty cache."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        env = dict(os.environ, LOOPINT_CACHE_DIR=os.path.join(tmp, "cache"))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "loopint.cli", "compute", path, "--json", out,
                        "--quiet"], env=env, capture_output=True, check=False)
        wall = time.perf_counter() - t0
        data = json.load(open(out)) if os.path.exists(out) else {}
    return wall, data


def run(quick: bool = False, only: str | None = None) -> list[dict]:
    rows = []
    for path in sorted(glob.glob(os.path.join(DIAGRAMS, "*.toml"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if only and only not in name:
            continue
        cold, data = (None, {}) if quick else _cold(path)
        p = load(path)
        compute(p)
        t0 = time.perf_counter()
        r = compute(p)
        warm = time.perf_counter() - t0
        how = (r.info.get("regulated") or {}).get("point_method") or [r.region]
        row = {"case": name, "method": f"{r.method} ({', '.join(how)})",
               "value": complex(r.value), "error": complex(r.error), "converged": r.converged,
               "rtol": r.settings["rtol"], "evaluations": int(r.evaluations), "seconds": warm,
               "cold_process_seconds": cold, "cold_converged": data.get("converged"),
               "device": device_name()}
        if p.reference is not None:
            row["true_error"] = float(abs(complex(r.value) - p.reference.value))
            row["relative_error"] = float(row["true_error"] / abs(p.reference.value))
        rows.append(row)
        from . import format_table
        print(format_table([row], header=False), file=sys.stderr, flush=True)
    return rows
