"""Benchmark of derivatives with respect to the kinematics (:mod:`loopint.derivatives`).

Bundled diagram files with their default settings, computed once for the value alone and once
with first derivatives by some of their symbols (integrated together with the value, every
component to the file's tolerance).  Per row: the seconds of each (the median of three warm
runs, after a run that compiles), the evaluations of each, and the cost of one derivative in
units of the value alone, ``(t_with / t_value - 1) / m`` for m derivatives.  Where a closed
form exists (C0, the massless box: ``tests/derivative_points.py``) the largest relative true
error of the derivatives and whether each is within 3 times its error estimate.

    python -m loopint.bench.derivative_cases [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time

from ..compute import compute, device_name
from ..problem import load

HERE = os.path.dirname(__file__)
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

# (diagram file, derivatives, extra settings, closed form in tests/derivative_points.py)
CASES = (
    ("triangle_below_threshold.toml", ("s", "m"), {}, "c0"),
    ("triangle_above_threshold.toml", ("s", "m"), {}, "c0"),
    ("triangle_above_threshold.toml", ("s",), {"contour": "none"}, "c0"),
    ("box_massless_offshell.toml", ("s", "t"), {}, "box"),
    ("sunrise_2L_D2.toml", ("s",), {}, None),
    ("ladder_vertex_2L_k1.toml", ("k2",), {}, None),
    ("pentagon_ggttH.toml", ("s12",), {}, None),
)


def closed_forms():
    path = os.path.join(ROOT, "tests", "derivative_points.py")
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location("derivative_points", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _timed(problem, runs: int, **kw):
    """The result of a compiling run, then the median seconds of ``runs`` warm ones."""
    compute(problem, **kw)
    seconds = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = compute(problem, **kw)
        seconds.append(time.perf_counter() - t0)
    return r, statistics.median(seconds)


def _true_errors(forms, name: str, problem, r) -> tuple[float | None, bool | None]:
    if forms is None or name is None:
        return None, None
    f = getattr(forms, name)
    worst, honest = 0.0, True
    for symbol, d in r.derivatives.items():
        exact = forms.diff(f, dict(problem.kinematics), (symbol,))
        err = abs(complex(d.value) - exact)
        worst = max(worst, err / abs(exact))
        honest &= err <= 3 * abs(complex(d.error)) + 1e-14 * abs(exact)
    return worst, honest


def run(quick: bool = False) -> list[dict]:
    from . import format_table
    forms = closed_forms()
    rows = []
    for file, names, extra, form in CASES:
        if quick and "2L" in file or quick and "pentagon" in file:
            continue
        p = load(os.path.join(ROOT, "diagrams", file))
        kw = dict(extra, rtol=p.settings.rtol * (100 if quick else 1))
        runs = 1 if quick else 3
        plain, t_value = _timed(p, runs, **kw)
        r, t_with = _timed(p, runs, derivatives=list(names), **kw)
        true, honest = _true_errors(forms, form, p, r)
        m = len(names)
        label = ", ".join(f"d/d{n}" for n in names)
        rows.append({
            "case": f"{file} {label}" + "".join(f" {k}={v}" for k, v in extra.items()),
            "method": r.method, "value": complex(r.value), "error": complex(r.error),
            "true_error": true, "honest": honest, "converged": r.converged and plain.converged,
            "evaluations": int(r.evaluations), "evaluations_value": int(plain.evaluations),
            "seconds": t_with, "seconds_value": t_value,
            "cost_per_derivative": (t_with / t_value - 1.0) / m, "device": device_name()})
        print(format_table(rows[-1:], header=len(rows) == 1), flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    run(a.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
