"""``loopint bench``: the benchmark table (README, 'Performance').

Suites: ``seeds`` (the seeds' own problems: pentagon, ladder vertex, Table 5.1, stochastic
geometry), ``generic`` (f1-f7 with pagani, cubature, qmc, iterated; scipy alongside),
``files`` (every bundled diagram file with the defaults, cold process and warm) and
``physical`` (physical points against independent references, each in two unit systems),
``dimreg`` (Laurent coefficients in D = 4 - 2 eps against closed forms and pySecDec),
``derivatives`` (derivatives by the kinematics against the value alone), ``amplitude`` (a
weighted sum of integrals with a shared error budget against each integral at the tolerance),
``scans`` (points per second of batched scans across thresholds) and ``devices`` (the same
computations on 1, 2, 4, ... local devices; not part of ``all``).
Every row: case, method, value, error estimate, true error (where a reference exists),
evaluations, wall time after warm-up, compile/warm-up time, evaluations/s, device.
Case modules expose ``run(quick: bool) -> list[dict]``.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import math
import sys
import time

log = logging.getLogger(__name__)

# (module, which rows): the sampling module serves both suites, split by case name
_GENERIC_PREFIXES = ("f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8")
SUITES = {
    "seeds": [("loopint.bench.seeds_cases", "all"), ("loopint.bench.sampling_cases", "seeds")],
    "generic": [("loopint.bench.cubature_cases", "all"), ("loopint.bench.sampling_cases", "generic"),
                ("loopint.bench.iterated_cases", "generic")],
}
SUITES["files"] = [("loopint.bench.files_cases", "all")]
SUITES["physical"] = [("loopint.bench.physical_cases", "all")]
SUITES["dimreg"] = [("loopint.bench.dimreg_cases", "all")]
SUITES["derivatives"] = [("loopint.bench.derivative_cases", "all")]
SUITES["amplitude"] = [("loopint.bench.amplitude_case", "all")]
SUITES["scans"] = [("loopint.bench.scan_cases", "all")]
SUITES["devices"] = [("loopint.bench.device_cases", "all")]
SUITES["all"] = (SUITES["seeds"] + SUITES["generic"] + SUITES["files"] + SUITES["physical"]
                 + SUITES["dimreg"] + SUITES["derivatives"] + SUITES["amplitude"]
                 + SUITES["scans"])

COLUMNS = ("case", "method", "value", "error", "true_error", "evaluations", "seconds",
           "compile_seconds", "evals_per_s", "device")


def _is_generic(row: dict) -> bool:
    return str(row.get("case", "")).startswith(_GENERIC_PREFIXES)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, complex):
        return f"{v.real:.10g}{v.imag:+.10g}i" if v.imag else f"{v.real:.10g}"
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v):
        return _fmt(complex(v[0], v[1]))
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e5 or not math.isfinite(v) else f"{v:.3e}"
    if isinstance(v, int):
        return f"{v:.3g}" if v >= 10**5 else str(v)
    return str(v)


def format_table(rows: list[dict], header: bool = True) -> str:
    cols = list(COLUMNS) + sorted({k for r in rows for k in r} - set(COLUMNS))
    cols = [c for c in cols if c in ("case", "method") or any(c in r for r in rows)]
    cells = [[_fmt(r.get(c)) for c in cols] for r in rows]
    width = [max([len(c)] + [len(x[i]) for x in cells]) for i, c in enumerate(cols)]
    lines = []
    if header:
        lines.append("  ".join(c.ljust(w) for c, w in zip(cols, width)))
        lines.append("  ".join("-" * w for w in width))
    lines += ["  ".join(x.ljust(w) for x, w in zip(row, width)) for row in cells]
    return "\n".join(lines)


def run_suite(suite: str, quick: bool = False, json_path: str | None = None,
              only: str | None = None) -> int:
    """Run a suite, print the table, optionally write JSON; exit status 0 if it ran.

    ``only``: run just the seeds cases whose name contains this text (the other modules are
    skipped), e.g. ``only="C0"`` for a smoke test.
    """
    rows: list[dict] = []
    for mod, which in SUITES[suite]:
        if only is not None and not mod.endswith(("seeds_cases", "files_cases", "dimreg_cases")):
            continue
        t0 = time.perf_counter()
        try:
            m = importlib.import_module(mod)
            if which != "all" and "rows_for" in inspect.signature(m.run).parameters:
                out = m.run(quick=quick, rows_for=which)     # runs only that suite's part
            elif only is not None:
                out = m.run(quick=quick, only=only)
            else:
                out = m.run(quick=quick)
        except Exception as e:  # a broken case must not hide the others
            log.exception("benchmark module %s failed", mod)
            out = [{"case": mod, "method": "-", "status": f"failed: {type(e).__name__}: {e}"}]
        if which == "seeds":
            out = [r for r in out if not _is_generic(r)]
        elif which == "generic":
            out = [r for r in out if _is_generic(r)]
        if not getattr(sys.modules.get(mod), "STREAMS_ROWS", False):
            for r in out:
                print(format_table([r], header=False), file=sys.stderr, flush=True)
        rows.extend(out)
        log.info("%s: %.1f s", mod, time.perf_counter() - t0)
    print(format_table(rows))
    if json_path:
        from ..io import write_json_atomic
        write_json_atomic(json_path, {"suite": suite, "quick": quick, "rows": rows,
                                      "date": time.strftime("%Y-%m-%d")})
    return 0
