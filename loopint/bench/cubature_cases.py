"""Generic benchmark: seed 001's f1–f7 with the ``pagani`` and ``cubature`` engines (the latter
with ``error_estimate="auto"``, its global estimate, every sweep taken when due,
``defer_sweeps=False``: the digits the estimate reaches, whatever the points cost).

For every case of :func:`loopint.testfunctions.genz_suite` and ``rtol`` = 1e-3 … 1e-10
(seed 001 section 4 sweeps the same range), each engine runs twice: a warm-up that compiles
every shape the run needs (its wall time is ``compile_seconds``) and the timed run
(``seconds``).  As in seed 001, a case stops at the first ``rtol`` that an engine fails
to reach within its budget; smaller tolerances would fail too.  The cases of
:data:`TARGETS` (f3–f7 in the dimensions of seed 001's figures) always get a row at
:data:`TARGET_RTOL` (10 digits, the precision seed 001 reports PAGANI reaching on a V100),
with the seed's figure in the ``seed`` column where the text gives one.  Where
``scipy.integrate.cubature`` exists and the case is cheap for it (d <= 5, rtol >= 1e-6), a
``scipy.cubature`` row (CPU, numpy integrand, same Genz–Malik rule) gives the ratio.

``quick`` runs on a CPU in about a minute: f3 in 3-D to 1e-9, f3 in 5-D to 1e-8 and f4
(Gaussian) in 5-D to 1e-7 with both engines, within :data:`QUICK_BUDGET` evaluations.
"""

from __future__ import annotations

import time

import jax
import numpy as np

from ..engines.cubature import Cubature
from ..engines.pagani import Pagani
from ..engines.rules.genz_malik import n_points
from ..testfunctions import genz_suite

RTOLS = tuple(10.0**-k for k in range(3, 11))
TARGET_RTOL = 1e-9
# case -> what seed 001 reports for PAGANI on a V100 (section 4.2-4.3, figures 4-5)
TARGETS = {"f3_3d": None, "f3_8d": "about 10 digits", "f4_5d": "about 10 digits",
           "f4_8d": None, "f5_8d": None, "f6_6d": "10 digits", "f7_8d": "about 10 digits"}
QUICK = {"f3_3d": (1e-9,), "f3_5d": (1e-8,), "f4_5d": (1e-7,)}
QUICK_BUDGET = 3 * 10**8


def _budget(quick: bool, max_evals: int | float | None = None) -> int:
    """Evaluation budget per run: ``max_evals`` if given, else large on an accelerator and
    modest on a CPU (:data:`QUICK_BUDGET` for a quick run)."""
    if max_evals is not None:
        return int(float(max_evals))
    if quick:
        return QUICK_BUDGET
    return 2 * 10**9 if jax.devices()[0].platform != "cpu" else 10**8


def _numpy_version(name: str):
    """The test function in numpy (for scipy, which calls it with numpy arrays)."""
    def f1(x):
        return np.cos(x @ np.arange(1.0, x.shape[1] + 1))

    def f2(x):
        return np.prod(1.0 / (1.0 / 50.0**2 + (x - 0.5) ** 2), axis=1)

    def f3(x):
        return (1.0 + x @ np.arange(1.0, x.shape[1] + 1)) ** (-(x.shape[1] + 1))

    def f4(x):
        return np.exp(-625.0 * np.sum((x - 0.5) ** 2, axis=1))

    def f5(x):
        return np.exp(-10.0 * np.sum(np.abs(x - 0.5), axis=1))

    def f6(x):
        i = np.arange(1.0, x.shape[1] + 1)
        return np.where(np.all(x < (3.0 + i) / 10.0, axis=1), np.exp(x @ (i + 4.0)), 0.0)

    def f7(x):
        return np.sum(x * x, axis=1) ** 11

    return {"f1": f1, "f2": f2, "f3": f3, "f4": f4, "f5": f5, "f6": f6, "f7": f7}[name[:2]]


def _row(case, method, rtol, value, error, evaluations, seconds, compile_seconds, device,
         converged, status, error_estimate=None):
    row = {
        "case": case.name, "method": method, "rtol": rtol, "value": float(value),
        "error": float(error), "true_error": abs(float(value) - case.exact),
        "evaluations": int(evaluations), "seconds": seconds,
        "compile_seconds": compile_seconds,
        "evals_per_s": evaluations / max(seconds, 1e-12), "device": device,
        "converged": bool(converged), "status": status,
    }
    if error_estimate is not None:
        row["error_estimate"] = error_estimate
    if rtol == TARGET_RTOL and TARGETS.get(case.name):
        row["seed"] = TARGETS[case.name]
    return row


def _engine_rows(case, rtols, max_evals, device):
    """Rows of both engines over ``rtols`` until the first failure; a case of
    :data:`TARGETS` still gets its :data:`TARGET_RTOL` row after one."""
    rows = []
    keep = (TARGET_RTOL,) if case.name in TARGETS else ()
    pagani = Pagani(relerr_filtering=False) if case.sign_changing else Pagani()
    args = (case.f, np.zeros(case.ndim), np.ones(case.ndim))
    for name, engine in (("pagani", pagani), ("cubature", Cubature(error_estimate="auto",
                                                                        defer_sweeps=False))):
        todo = list(rtols)
        while todo:
            rtol = todo.pop(0)
            warm = engine.integrate_box(*args, rtol=rtol, max_evals=max_evals)
            r = engine.integrate_box(*args, rtol=rtol, max_evals=max_evals)
            rows.append(_row(case, name, rtol, r.value, r.error, r.evaluations, r.seconds,
                             warm.seconds, device, r.converged, r.status,
                             r.info.get("error_estimate")))
            if not r.converged:
                todo = [t for t in todo if t in keep]
    return rows


def _scipy_row(case, rtol, max_subdivisions=20_000):
    try:
        from scipy.integrate import cubature as scipy_cubature
    except ImportError:
        return None
    f = _numpy_version(case.name)
    t0 = time.perf_counter()
    r = scipy_cubature(f, np.zeros(case.ndim), np.ones(case.ndim), rule="genz-malik",
                       rtol=rtol, atol=0, max_subdivisions=max_subdivisions)
    seconds = time.perf_counter() - t0
    # scipy splits a region into 2^d children per subdivision
    evaluations = n_points(case.ndim) * (1 + 2**case.ndim * int(r.subdivisions))
    return _row(case, "scipy.cubature", rtol, r.estimate, r.error, evaluations, seconds, 0.0,
                "cpu", r.status == "converged", r.status)


def run(quick: bool = False, max_evals: int | float | None = None,
        stream: bool = False, targets: bool = False) -> list[dict]:
    """Rows: case, method, rtol, value, error, true_error, evaluations, seconds,
    compile_seconds, evals_per_s, device, converged, status, error_estimate (the engine's
    estimate: "local", "global" or "mixed") and, at the targets, seed.

    ``max_evals``: evaluation budget per run (default: 2·10^9 on an accelerator, 10^8 on a
    CPU; a quick run uses :data:`QUICK_BUDGET`).  ``stream``: print each case's engine rows
    as they finish.  ``targets``: only the cases of :data:`TARGETS` at :data:`TARGET_RTOL`
    (no sweep, no scipy rows).
    """
    device = jax.devices()[0].platform
    max_evals = _budget(quick, max_evals)
    rows = []
    for case in genz_suite():
        if (quick and case.name not in QUICK) or (targets and case.name not in TARGETS):
            continue
        rtols = (TARGET_RTOL,) if targets else QUICK[case.name] if quick else RTOLS
        new = _engine_rows(case, rtols, max_evals, device)
        if stream:
            for r_ in new:
                print({k: r_.get(k) for k in ("case", "method", "rtol", "true_error", "evaluations",
                                               "seconds", "converged")}, flush=True)
        rows += new
        for rtol in () if targets else rtols:
            if case.ndim > 5 or rtol < 1e-6 or (quick and rtol < 1e-3):
                continue
            row = _scipy_row(case, rtol)
            if row is None:
                break
            rows.append(row)
            if not row["converged"]:
                break
    return rows
