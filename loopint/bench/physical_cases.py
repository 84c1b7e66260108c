"""Benchmark cases of the physical test set: points above thresholds, loopint's defaults.

The points of ``tests/physical_points.py`` (one-loop bubbles, triangles and boxes with unequal
masses near and far from thresholds, the massive pentagon, two-loop planar and crossed
vertices, pySecDec's elliptic two-loop box, the D = 2 two-loop sunrise) through :func:`loopint.compute` with DEFAULT settings
(contour ``auto``: the deformed contour, the delta sequence as fallback) at the issue's
tolerances: ``rtol`` 1e-6 one loop, 1e-5 two loops (``quick``: 1e-4 and 1e-3).  References:
closed forms and 1-D mpmath integrals, or pySecDec 1.6.6
(``tests/data/physical_references.json``); ``true_error`` is |value - reference|.  Each
point runs in two unit systems, "m = 1" and "GeV" (masses times 150, the reference times
150**(L*D - 2*nu)): two rows.

Cheap cases run twice (warm-up compiles, then the timed run), as in
:mod:`loopint.bench.seeds_cases`; the two-loop points and the pentagon run once and their
compilation is taken from JAX's compile events.  This module reads the test set from the
source checkout (``tests/`` beside the package), as the seeds suite reads ``diagrams/``.

With ``--cold`` each selected point (m = 1 units) runs instead in a process of its own with an
empty compilation cache, as a user's first ``loopint compute``: ``wall`` is the whole process
(Python's start, imports, the symbolic work, compiling and the run), ``import``, ``compiling``
(tracing, lowering and compiling that the computation waited for) and ``compiled_ahead``
(compilation in the engines' background threads, overlapping the rest) from
``Result.info["timing"]``.

    python -m loopint.bench.physical_cases [--quick] [--only TEXT] [--cold]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

from ..compute import compute, device_name
from ..diagram import Diagram
from ..timing import compile_clock

STREAMS_ROWS = True   # run() prints its rows itself (loopint.bench.run_suite)
HERE = os.path.dirname(__file__)
TESTS = os.path.normpath(os.path.join(HERE, "..", "..", "tests"))
RTOL = {False: {1: 1e-6, 2: 1e-5}, True: {1: 1e-4, 2: 1e-3}}


def points_module():
    path = os.path.join(TESTS, "physical_points.py")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: the physical test set is read from the source "
                                "checkout (tests/physical_points.py)")
    spec = importlib.util.spec_from_file_location("physical_points", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _expensive(p) -> bool:
    return p["loops"] > 1 or p["propagators"] >= 5


def _row(case, p, r, ref, ref_err, rtol, compile_seconds):
    v = complex(r.value)
    how = r.info.get("regulated", {}).get("point_method")
    return {
        "case": case, "method": r.method, "value": v, "error": complex(r.error),
        "true_error": abs(v - ref), "reference_error": ref_err,
        "rel_true_error": abs(v - ref) / abs(ref), "rel_error": abs(complex(r.error)) / abs(v),
        "evaluations": int(r.evaluations), "seconds": r.seconds,
        "compile_seconds": compile_seconds,
        "evals_per_s": r.evaluations / max(r.seconds, 1e-12), "device": device_name(),
        "converged": r.converged, "status": r.status, "rtol": rtol,
        "point_method": how[0] if isinstance(how, list) and len(how) == 1 else how,
        "region": r.region, "reference": p["reference"], "note": p["note"],
    }


def run(quick: bool = False, only: str | None = None) -> list[dict]:
    pp = points_module()
    from . import format_table
    rows = []
    diagrams = {}
    for p in pp.POINTS:
        if only is not None and only not in p["id"]:
            continue
        key = (p["diagram"], p["dimension"])
        if key not in diagrams:
            diagrams[key] = diagram_of(pp, p)
        d = diagrams[key]
        rtol = RTOL[quick][p["loops"]]
        ref, ref_err, _ = pp.reference(p)
        units = (("m=1", p["kinematics"]), ("GeV", pp.scaled_kinematics(p["kinematics"])))
        for unit, kin in units:
            sc = 1.0 if unit == "m=1" else pp.LAMBDA ** pp.mass_dimension(p)
            if _expensive(p):
                with compile_clock() as c:
                    r = compute(d, kinematics=kin, rtol=rtol)
                compiling = min(c.waited, r.seconds)
                r.seconds -= compiling
            else:
                t0 = time.perf_counter()
                compute(d, kinematics=kin, rtol=rtol)     # warm-up: compiles
                warm = time.perf_counter() - t0
                r = compute(d, kinematics=kin, rtol=rtol)
                compiling = max(0.0, warm - r.seconds)
            rows.append(_row(f"physical {p['id']} [{unit}]", p, r, ref * sc, ref_err * sc, rtol,
                             compiling))
            print(format_table(rows[-1:], header=False), file=sys.stderr, flush=True)
    return rows


_COLD = """
import json, sys
sys.path.insert(0, {tests!r})
import physical_points as pp
from loopint.bench.physical_cases import diagram_of
from loopint.compute import compute
p = pp.POINTS_BY_ID[{point!r}]
r = compute(diagram_of(pp, p), kinematics=p["kinematics"], rtol={rtol!r})
ref, _, _ = pp.reference(p)
print(json.dumps({{"value": [r.value.real, r.value.imag], "error": abs(complex(r.error)),
                  "rel_true_error": abs(complex(r.value) - ref) / abs(ref),
                  "evaluations": int(r.evaluations), "converged": bool(r.converged),
                  "method": r.method, "timing": r.info["timing"]}}))
"""


def diagram_of(pp, p) -> Diagram:
    """The diagram of the point ``p`` of the physical test set ``pp`` (:func:`points_module`)."""
    return Diagram.from_graph(**pp.DIAGRAMS[p["diagram"]], dimension=p["dimension"])


def run_cold(quick: bool = False, only: str | None = None) -> list[dict]:
    """Each selected point (m = 1 units) in a fresh process with an empty compilation cache
    (module docstring)."""
    pp = points_module()
    rows = []
    for p in pp.POINTS:
        if only is not None and only not in p["id"]:
            continue
        rtol = RTOL[quick][p["loops"]]
        code = _COLD.format(tests=TESTS, point=p["id"], rtol=rtol)
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, LOOPINT_CACHE_DIR=cache)
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  env=env)
            wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"cold run of {p['id']} failed: {proc.stderr[-2000:]}")
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        timing = out["timing"]
        rows.append({"case": f"physical {p['id']} [cold]", "method": out["method"],
                     "rtol": rtol, "converged": out["converged"],
                     "rel_true_error": out["rel_true_error"],
                     "evaluations": out["evaluations"], "wall": round(wall, 2),
                     "import": round(timing.get("import") or 0.0, 2),
                     "compiling": round(timing["trace"] + timing["lower"] + timing["compile"], 2),
                     "compiled_ahead": round(timing["compile_ahead"], 2),
                     "device": device_name()})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="physical test set benchmark rows")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=None)
    ap.add_argument("--cold", action="store_true",
                    help="each point in a fresh process with an empty compilation cache")
    a = ap.parse_args(argv)
    from . import format_table
    runner = run_cold if a.cold else run
    print(format_table(runner(quick=a.quick, only=a.only)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
