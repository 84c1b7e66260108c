"""Benchmark of several devices: the same computations on 1, 2, 4, ... local devices.

Strong scaling (one integral; the engines shard their integrand calls,
:mod:`loopint.engines.sharding`) and throughput scaling (a scan shared out over the devices,
:mod:`loopint.parallel`), each case on every device count ``1, 2, 4, ...`` up to the devices
present, warm (a first run compiles; ``seconds`` is the second):

* ``ladder k5 delta``: the two-loop ladder vertex at k^2/m_t^2 = 5 by the delta sequence
  (``contour = "none"``), rtol 1e-5, with the budget of the seeds benchmark (16 deltas, 10^11
  evaluations);
* ``table51 qmc`` / ``table51 cubature``: the Table 5.1 integral (6-D) by QMC to rtol 1e-10
  and by cubature to rtol 1e-9 with its local error estimate (a full region store, the
  region engine's work at its largest; the global estimate needs 20 times fewer points);
* ``ladder scan``: the two-loop ladder vertex over k^2/m_t^2 in [0.5, 8] (``points`` points)
  at rtol 1e-4, in points per second.

``speedup`` is the one-device time over this one; ``same`` says whether the value equals the
one-device value to round-off (relative 1e-12; a scan: every point within the two runs'
combined errors, and the same points converged).

    python -m loopint.bench.device_cases [--quick] [--points N]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ..compute import compute, device_name
from ..engines import cubature, qmc
from ..engines.base import Box
from ..problem import load
from ..testfunctions import TABLE51_REFERENCE, table51

HERE = os.path.dirname(__file__)
DIAGRAMS = os.path.normpath(os.path.join(HERE, "..", "..", "diagrams"))


def device_counts() -> list[int]:
    """1, 2, 4, ... up to the local devices (and the device count itself)."""
    import jax
    n = jax.local_device_count()
    counts = [1 << k for k in range(n.bit_length()) if 1 << k <= n]
    return counts + ([n] if counts[-1] != n else [])


def _cases(quick: bool, points: int) -> list:
    """(name, run(devices) -> (value, error, evaluations, status, per-point ok), reference)."""
    k5 = load(os.path.join(DIAGRAMS, "ladder_vertex_2L_k5.toml"))
    k1 = load(os.path.join(DIAGRAMS, "ladder_vertex_2L_k1.toml"))
    tol = (1e-3, 1e-6, 1e-6, 1e-3) if quick else (1e-5, 1e-10, 1e-9, 1e-4)
    scan_kin = {"mt": 1.0, "mZ": k1.kinematics["mZ"],
                "k2": np.linspace(0.5, 8.0, 8 if quick else points)}

    def ladder(n):
        r = compute(k5, contour="none", rtol=tol[0], delta_terms=16, max_evals=10**11,
                    devices=n)
        return r.value, r.error, r.evaluations, r.status, None

    def engine(make, rtol):
        def run(n):
            r = make(n).integrate(table51, Box.cube(6), rtol=rtol, max_evals=10**11)
            return r.value, r.error, r.evaluations, r.status, None
        return run

    def scan(n):
        r = compute(k1, scan_kin, rtol=tol[3], devices=n)
        return r.value, r.error, r.evaluations, r.status, r.info["point_converged"]

    return [("ladder k5 delta sequence", ladder, None),
            ("table51 qmc", engine(lambda n: qmc.QuasiMonteCarlo(devices=n), tol[1]),
             TABLE51_REFERENCE),
            ("table51 cubature",
             engine(lambda n: cubature.Cubature(devices=n, error_estimate="local"), tol[2]),
             TABLE51_REFERENCE),
            (f"ladder scan ({len(scan_kin['k2'])} points)", scan, None)]


def _same(one: tuple, other: tuple) -> bool:
    v1, e1, v2, e2 = (np.atleast_1d(np.asarray(x, complex)) for x in
                      (one[0], one[1], other[0], other[1]))
    if one[4] is None:
        return bool(np.allclose(v2, v1, rtol=1e-12, atol=0))
    d = v2 - v1
    within = (np.all(np.abs(d.real) <= np.abs(e1.real) + np.abs(e2.real) + 1e-15)
              and np.all(np.abs(d.imag) <= np.abs(e1.imag) + np.abs(e2.imag) + 1e-15))
    return bool(within and list(one[4]) == list(other[4]))


def run(quick: bool = False, points: int = 100) -> list[dict]:
    rows = []
    for name, fn, reference in _cases(quick, points):
        base = None
        for n in device_counts():
            fn(n)
            t0 = time.perf_counter()
            out = fn(n)
            seconds = time.perf_counter() - t0
            if base is None:
                base = (out, seconds)
            value = complex(np.atleast_1d(out[0])[0]) if out[4] is None else None
            npts = len(out[4]) if out[4] is not None else None
            rows.append({
                "case": name, "devices": n, "seconds": round(seconds, 4),
                "speedup": round(base[1] / seconds, 3),
                "points_per_s": round(npts / seconds, 2) if npts else None,
                "value": value, "error": complex(np.atleast_1d(out[1])[0]) if value else None,
                "true_error": abs(value - reference) if reference is not None else None,
                "evaluations": int(out[2]), "status": str(out[3])[:60],
                "same": _same(base[0], out), "device": device_name()})
    return rows


def main(argv=None) -> int:
    from . import format_table
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="loose tolerances, an 8-point scan")
    p.add_argument("--points", type=int, default=100, help="points of the ladder scan")
    a = p.parse_args(argv)
    print(format_table(run(a.quick, a.points)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
